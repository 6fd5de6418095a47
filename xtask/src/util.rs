//! Helpers shared by the subcommands.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};
pub use clrprof_e2e::{describe_command, workspace_root};

/// The `cargo` that runs us (set by `cargo run`), falling back to `cargo` on PATH.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Finds an executable named `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a regular file the current user may execute.
pub fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// `path` relative to the workspace root (unchanged if it lies outside), for messages.
pub fn shown(path: &Path) -> String {
    let root = workspace_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Runs `cmd` with inherited stdio; fails if it cannot start or exits unsuccessfully.
pub fn run(mut cmd: Command) -> Result<()> {
    let shown = describe_command(&cmd);
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Runs `f`, turning a panic (how the test harness reports problems) into an error.
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // Nothing observes `f`'s captures after a panic: the error ends the bench.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        anyhow!("{what}: {msg}")
    })
}

/// Builds `packages` in release with the workspace's cargo and returns the release directory.
pub fn build_release(packages: &[&str]) -> Result<PathBuf> {
    let mut build = Command::new(cargo());
    build
        .args(["build", "--release"])
        .current_dir(workspace_root());
    for p in packages {
        build.args(["-p", p]);
    }
    run(build)?;
    Ok(clrprof_e2e::target_dir().join("release"))
}

/// A command started with its standard output and error in a log file (and nothing on its
/// standard input), killed if dropped before it was waited for.
pub struct Logged {
    child: Option<std::process::Child>,
    shown: String,
    log: PathBuf,
}

impl Logged {
    /// Starts `cmd` writing to `log` (created, with its directory).
    pub fn start(cmd: &mut Command, log: &Path) -> Result<Logged> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let shown = describe_command(cmd);
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("could not start `{shown}`"))?;
        Ok(Logged {
            child: Some(child),
            shown,
            log: log.to_path_buf(),
        })
    }

    /// Waits for the command; fails if it did.
    pub fn wait(&mut self) -> Result<()> {
        let status = self.child.take().context("waited for already")?.wait()?;
        if !status.success() {
            bail!("`{}` failed ({status})", self.shown);
        }
        Ok(())
    }

    /// What the command wrote so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
