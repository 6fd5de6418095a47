//! Native libraries of the tests: a C file of `tests/programs/` built with `cc` into a shared
//! library, with its debug information split off (`objcopy --only-keep-debug`) and a stripped
//! copy (`strip --strip-all`), as .NET 8 ships `libcoreclr.so` and publishes its debug file on
//! a symbol server. Built once, under `<target dir>/e2e-native/<Name>-<hash>/` (the hash
//! covers the source and the flags).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::compile::{Fnv64, in_place};
use crate::paths::layout;
use crate::process::{OutputExt, run_command};
use crate::programs_dir;

/// How the libraries are compiled: local functions stay functions of their own (no inlining
/// of `noinline` ones, no clones at `-O1`), with frame pointers and a GNU build id.
const CFLAGS: &[&str] = &[
    "-O1",
    "-g",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-fno-omit-frame-pointer",
    "-Wl,--build-id",
];

/// A native library built from `tests/programs/<Name>.c`.
#[derive(Debug)]
pub struct NativeLib {
    /// Its file name, `lib<name>.so` (the C file's name in lowercase).
    pub file_name: String,
    /// The library as built, with its `.symtab`.
    pub unstripped: PathBuf,
    /// Its debug file (`objcopy --only-keep-debug`: the `.symtab` and DWARF, no code).
    pub debug_file: PathBuf,
    /// The directory of the stripped library (exports and unwind information only), for
    /// `LD_LIBRARY_PATH`.
    pub stripped_dir: PathBuf,
}

impl NativeLib {
    /// The stripped library.
    pub fn stripped(&self) -> PathBuf {
        self.stripped_dir.join(&self.file_name)
    }
}

/// Builds `tests/programs/<name>.c` (once per test process and source).
///
/// # Panics
/// If `cc`, `objcopy` or `strip` is missing or fails.
#[track_caller]
pub fn native_lib(name: &str) -> &'static NativeLib {
    static BUILT: Mutex<Vec<(String, &'static NativeLib)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, lib)) = built.iter().find(|(n, _)| n == name) {
        return lib;
    }
    let source_path = programs_dir().join(format!("{name}.c"));
    let source = std::fs::read_to_string(&source_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", source_path.display()));
    let mut hash = Fnv64::new();
    hash.write_str(&source);
    for flag in CFLAGS {
        hash.write_str(flag);
    }
    let dir = layout()
        .target_root
        .join("e2e-native")
        .join(format!("{name}-{:016x}", hash.finish()));
    let file_name = format!("lib{}.so", name.to_lowercase());
    let marker = dir.join("stripped").join(&file_name);
    if !marker.is_file() {
        std::fs::create_dir_all(dir.parent().expect("a parent"))
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        in_place(&dir, &marker, |tmp| build(&source_path, tmp, &file_name));
    }
    let lib: &'static NativeLib = Box::leak(Box::new(NativeLib {
        unstripped: dir.join(&file_name),
        debug_file: dir.join(format!("{file_name}.dbg")),
        stripped_dir: dir.join("stripped"),
        file_name,
    }));
    built.push((name.to_string(), lib));
    lib
}

fn build(source: &Path, dir: &Path, file_name: &str) -> Result<(), String> {
    let lib = dir.join(file_name);
    let stripped = dir.join("stripped");
    std::fs::create_dir_all(&stripped)
        .map_err(|e| format!("cannot create {}: {e}", stripped.display()))?;
    let mut cc = Command::new("cc");
    cc.args(CFLAGS).arg("-o").arg(&lib).arg(source);
    let mut objcopy = Command::new("objcopy");
    objcopy
        .arg("--only-keep-debug")
        .arg(&lib)
        .arg(dir.join(format!("{file_name}.dbg")));
    let mut strip = Command::new("strip");
    strip
        .arg("--strip-all")
        .arg("-o")
        .arg(stripped.join(file_name))
        .arg(&lib);
    for (cmd, what) in [
        (&mut cc, "`cc` (the C compiler Rust links with)"),
        (
            &mut objcopy,
            "`objcopy` (GNU binutils; `cargo xtask setup` installs it)",
        ),
        (
            &mut strip,
            "`strip` (GNU binutils; `cargo xtask setup` installs it)",
        ),
    ] {
        let out = run_command(cmd);
        if !out.status.success() {
            return Err(format!("{what} failed\n{}", out.describe()));
        }
    }
    Ok(())
}
