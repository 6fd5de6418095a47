//! Compiling the C# test programs with Mono's `mcs`, once, against the reference runtime's
//! framework, and giving each runtime its own `runtimeconfig.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dotnet::Dotnet;
use crate::paths::{layout, workspace_root};
use crate::process::{OutputExt, run_command};

/// Framework assemblies every program is compiled against (those the framework lacks are
/// skipped). A program can add more with a line `// @reference System.Text.Json`.
const REFERENCES: &[&str] = &[
    "System.Private.CoreLib",
    "System.Runtime",
    "System.Runtime.Extensions",
    "System.Runtime.InteropServices",
    "System.Runtime.Numerics",
    "System.Console",
    "System.Collections",
    "System.Collections.Concurrent",
    "System.Collections.NonGeneric",
    "System.Linq",
    "System.Memory",
    "System.ObjectModel",
    "System.Threading",
    "System.Threading.Thread",
    "System.Threading.ThreadPool",
    "System.Threading.Tasks",
    "System.Threading.Tasks.Parallel",
    "System.Text.RegularExpressions",
    "System.Text.Encoding.Extensions",
    "System.Reflection.Emit",
    "System.Reflection.Emit.ILGeneration",
    "System.Reflection.Emit.Lightweight",
    "System.Reflection.Primitives",
    "System.Diagnostics.Debug",
    "System.Diagnostics.Process",
    "System.ComponentModel.Primitives",
    "System.IO",
    "System.IO.FileSystem",
    "System.ValueTuple",
    "netstandard",
    "mscorlib",
];

/// Compiler flags; part of the cache key.
const MCS_FLAGS: &[&str] = &[
    "-nostdlib",
    "-noconfig",
    "-target:exe",
    "-unsafe",
    "-optimize+",
];

/// Bump to invalidate every cached program.
const CACHE_VERSION: u32 = 2;

/// Where the test programs live: `tests/programs/`.
pub fn programs_dir() -> PathBuf {
    workspace_root().join("tests").join("programs")
}

/// A compiled C# program, ready to run on its runtime.
#[derive(Debug, Clone)]
pub struct Program {
    /// Program name (the source file's stem), e.g. `Events`.
    pub name: String,
    /// The compiled assembly; `<name>.runtimeconfig.json` is next to it.
    pub dll: PathBuf,
    /// The runtime it runs on.
    pub dotnet: &'static Dotnet,
}

impl Program {
    /// `dotnet <dll>` with `DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1` and
    /// `DOTNET_CLI_TELEMETRY_OPTOUT=1`, and with any inherited `CORECLR_*` profiler variables
    /// removed. Add arguments with `.args(...)`.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.dotnet.muxer);
        cmd.arg(&self.dll);
        apply_env(&mut cmd);
        cmd
    }

    /// Runs the program with `args` to completion (stdout/stderr captured, default timeout).
    /// Does not check the exit status.
    #[track_caller]
    pub fn run(&self, args: &[&str]) -> Output {
        run_command(self.command().args(args))
    }
}

/// The environment every .NET process and clrprof command started by the tests gets: no
/// profiler and no symbol server inherited from the developer's environment.
pub fn apply_env(cmd: &mut Command) {
    cmd.env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1");
    for var in [
        "CORECLR_ENABLE_PROFILING",
        "CORECLR_PROFILER",
        "CORECLR_PROFILER_PATH",
        "CORECLR_PROFILER_PATH_64",
        "CLRPROF_SYMBOL_SERVER",
        "CLRPROF_SYMBOL_CACHE",
    ] {
        cmd.env_remove(var);
    }
}

/// Compiles `tests/programs/<name>.cs` to run on the runtime of [`Dotnet::get`].
///
/// # Panics
/// If the source is missing, `mcs` is not installed, or compilation fails (with mcs's output).
#[track_caller]
pub fn compile(name: &str) -> Program {
    Dotnet::get().compile(name)
}

/// Compiles an arbitrary C# file (e.g. `examples/demo/Demo.cs`) to run on [`Dotnet::get`].
#[track_caller]
pub fn compile_file(path: &Path) -> Program {
    Dotnet::get().compile_file(path)
}

/// The whole source of the C# program at `path`: the file, then each C# file that a line
/// `// @include FILE` in it names (FILE beside `path`): code shared by several programs.
///
/// # Panics
/// If a file cannot be read.
#[track_caller]
pub fn program_source(path: &Path) -> String {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read C# program {}: {e}", path.display()))
    };
    let mut source = read(path);
    let includes: Vec<String> = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("// @include "))
        .map(|name| name.trim().to_string())
        .collect();
    for name in includes {
        let included = path.with_file_name(&name);
        source.push_str(&format!("\n// ---- {name}\n"));
        source.push_str(&read(&included));
    }
    source
}

/// Compiles C# source text given inline, as program `name`, to run on [`Dotnet::get`].
#[track_caller]
pub fn compile_source(name: &str, source: &str) -> Program {
    Dotnet::get().compile_source(name, source)
}

impl Dotnet {
    /// Compiles `tests/programs/<name>.cs` to run on this runtime.
    #[track_caller]
    pub fn compile(&'static self, name: &str) -> Program {
        self.compile_file(&programs_dir().join(format!("{name}.cs")))
    }

    /// Compiles the C# file at `path` to run on this runtime, with the files it includes
    /// (see [`program_source`]).
    #[track_caller]
    pub fn compile_file(&'static self, path: &Path) -> Program {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_else(|| panic!("bad program file name {}", path.display()));
        self.compile_source(name, &program_source(path))
    }

    /// Compiles C# `source` as program `name` to run on this runtime.
    ///
    /// The program is compiled once, against the framework of [`Dotnet::reference`], into
    /// `<target dir>/e2e-programs/<name>-<hash>/`, where the hash covers the source, compiler
    /// flags and references (not the runtime it runs on); an existing output is reused. Each
    /// runtime then gets its own directory `<name>-<hash>/<version>/` with the same files
    /// (hard links) and a `<name>.runtimeconfig.json` asking for that runtime. Concurrent
    /// compilations of the same program (threads or processes) are safe: each compiles into its
    /// own temporary directory, renamed into place when complete.
    #[track_caller]
    pub fn compile_source(&'static self, name: &str, source: &str) -> Program {
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'),
            "program name {name:?} must be a plain file name"
        );
        let build_dir = build(name, source);
        let run_dir = build_dir.join(&self.version);
        let dll = run_dir.join(format!("{name}.dll"));
        if !dll.is_file() {
            in_place(&run_dir, &dll, |tmp| {
                self.make_run_dir(&build_dir, tmp, name)
            });
        }
        Program {
            name: name.to_string(),
            dll,
            dotnet: self,
        }
    }

    /// Fills `dir` with the compiled program's files and this runtime's `runtimeconfig.json`.
    fn make_run_dir(&self, build_dir: &Path, dir: &Path, name: &str) -> Result<(), String> {
        let entries = std::fs::read_dir(build_dir)
            .map_err(|e| format!("cannot read {}: {e}", build_dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", build_dir.display()))?;
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let to = dir.join(entry.file_name());
            if std::fs::hard_link(&path, &to).is_err() {
                std::fs::copy(&path, &to).map_err(|e| {
                    format!("cannot copy {} to {}: {e}", path.display(), to.display())
                })?;
            }
        }
        let config = dir.join(format!("{name}.runtimeconfig.json"));
        let json = format!(
            "{{\n  \"runtimeOptions\": {{\n    \"tfm\": \"{}\",\n    \"framework\": {{\n      \
             \"name\": \"Microsoft.NETCore.App\",\n      \"version\": \"{}\"\n    }}\n  }}\n}}\n",
            self.tfm(),
            self.framework_reference()
        );
        std::fs::write(&config, json).map_err(|e| format!("cannot write {}: {e}", config.display()))
    }
}

/// Compiles `source` as program `name` against the reference framework (once: the output is
/// cached) and returns the directory with `<name>.dll`.
#[track_caller]
fn build(name: &str, source: &str) -> PathBuf {
    let reference = Dotnet::reference();
    let mcs = find_mcs();
    let references = references(reference, source);

    let mut hash = Fnv64::new();
    hash.write_str(&CACHE_VERSION.to_string());
    hash.write_str(name);
    hash.write_str(source);
    hash.write_str(&mcs.to_string_lossy());
    for flag in MCS_FLAGS {
        hash.write_str(flag);
    }
    for reference in &references {
        hash.write_str(&reference.to_string_lossy());
    }
    let key = format!("{name}-{:016x}", hash.finish());

    let out_dir = layout().target_root.join("e2e-programs").join(&key);
    let dll = out_dir.join(format!("{name}.dll"));
    if !dll.is_file() {
        in_place(&out_dir, &dll, |tmp| {
            build_into(tmp, name, source, &mcs, &references)
        });
    }
    out_dir
}

/// Makes directory `dir` (which holds `marker` when complete) with `fill`, in a temporary
/// directory beside it renamed into place, so that nobody ever sees it half made. If another
/// thread or process made it first, theirs is kept.
///
/// # Panics
/// With `fill`'s message if it fails.
#[track_caller]
pub(crate) fn in_place(dir: &Path, marker: &Path, fill: impl FnOnce(&Path) -> Result<(), String>) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let parent = dir.parent().expect("a cache directory has a parent");
    let tmp = parent.join(format!(
        ".tmp-{}-{}-{}",
        dir.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&tmp)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", tmp.display()));
    if let Err(msg) = fill(&tmp) {
        let _ = std::fs::remove_dir_all(&tmp);
        panic!("{msg}");
    }
    match std::fs::rename(&tmp, dir) {
        Ok(()) => {}
        // Another test finished the same directory first; use theirs.
        Err(_) if marker.is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            panic!("cannot move {} to {}: {e}", tmp.display(), dir.display());
        }
    }
}

/// The framework assemblies of `reference` a program is compiled against: [`REFERENCES`] and
/// those its `// @reference` lines name.
fn references(reference: &Dotnet, source: &str) -> Vec<PathBuf> {
    let extra = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("// @reference "))
        .map(str::trim);
    let mut refs: Vec<PathBuf> = REFERENCES
        .iter()
        .map(|name| reference.framework_dir.join(format!("{name}.dll")))
        .filter(|path| path.is_file())
        .collect();
    for name in extra {
        let path = reference.framework_dir.join(format!("{name}.dll"));
        assert!(
            path.is_file(),
            "`// @reference {name}`: no {} in the framework",
            path.display()
        );
        if !refs.contains(&path) {
            refs.push(path);
        }
    }
    refs
}

/// Runs `mcs` on `source` in `dir`.
fn build_into(
    dir: &Path,
    name: &str,
    source: &str,
    mcs: &Path,
    references: &[PathBuf],
) -> Result<(), String> {
    let src = dir.join(format!("{name}.cs"));
    std::fs::write(&src, source).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let mut cmd = Command::new(mcs);
    // More compiler flags from `// @mcs -debug` lines (the source is part of the cache key).
    let extra_flags = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("// @mcs "))
        .map(str::trim);
    cmd.args(MCS_FLAGS)
        .args(extra_flags)
        .arg(format!(
            "-out:{}",
            dir.join(format!("{name}.dll")).display()
        ))
        .current_dir(dir);
    for reference in references {
        cmd.arg(format!("-r:{}", reference.display()));
    }
    cmd.arg(format!("{name}.cs"));
    let out = run_command(&mut cmd);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "mcs could not compile program `{name}`:\n{}{}",
            out.stdout_str(),
            out.stderr_str()
        ))
    }
}

fn find_mcs() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(format!("mcs{}", std::env::consts::EXE_SUFFIX)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the Mono C# compiler `mcs` is not on PATH; run `cargo xtask setup` \
                 (it installs Debian's mono-mcs)"
            )
        })
}

/// 64-bit FNV-1a: a stable hash for cache keys (unlike `std::hash`, it never changes).
pub(crate) struct Fnv64(u64);

impl Fnv64 {
    pub(crate) fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Writes a length-prefixed string, so that ("ab", "c") and ("a", "bc") differ.
    pub(crate) fn write_str(&mut self, s: &str) {
        self.write(&(s.len() as u64).to_le_bytes());
        self.write(s.as_bytes());
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Fnv64;

    #[test]
    fn fnv_is_stable() {
        let mut h = Fnv64::new();
        h.write(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
    }
}
