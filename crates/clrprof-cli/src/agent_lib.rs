//! Finding the agent library, and refusing one that other users could have replaced.
//!
//! The agent runs inside the profiled program with all of its rights (the profiling API's
//! own warning), so a library that another user can write to is a way in. We refuse a file
//! writable by group or others, owned by someone other than us or root, or in a directory
//! others can write to (unless the directory is sticky, like /tmp, where they cannot replace
//! our files).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The agent's file name on this platform.
pub const AGENT_FILE: &str = if cfg!(target_os = "windows") {
    "clrprof_agent.dll"
} else if cfg!(target_os = "macos") {
    "libclrprof_agent.dylib"
} else {
    "libclrprof_agent.so"
};

/// The agent to load: `explicit` if given, else the one installed beside the executable.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let exe = std::env::current_exe().context("cannot find where clrprof is installed")?;
            let dir = exe
                .parent()
                .context("clrprof's executable has no directory")?;
            let candidates = [
                dir.join(AGENT_FILE),
                dir.join("../lib/clrprof").join(AGENT_FILE),
            ];
            match candidates.iter().find(|c| c.is_file()) {
                Some(c) => c.clone(),
                None => bail!(
                    "cannot find the clrprof agent ({AGENT_FILE}) next to {}; build it with `cargo build --release` or pass --agent PATH",
                    exe.display()
                ),
            }
        }
    };
    if !path.is_file() {
        bail!("the agent library {} does not exist", path.display());
    }
    let path = path
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    check_not_writable_by_others(&path)?;
    Ok(path)
}

#[cfg(unix)]
fn check_not_writable_by_others(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;

    let me = current_uid();
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mode = meta.mode();
    if mode & 0o022 != 0 {
        bail!(
            "refusing to load the agent {}: it is writable by other users (mode {:o}), so anyone could change the code that would run inside your program; fix it with `chmod go-w {}`",
            path.display(),
            mode & 0o7777,
            path.display()
        );
    }
    if meta.uid() != me && meta.uid() != 0 {
        bail!(
            "refusing to load the agent {}: it belongs to another user (uid {}), who could change the code that would run inside your program",
            path.display(),
            meta.uid()
        );
    }
    if let Some(dir) = path.parent() {
        let d = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        let sticky = d.mode() & 0o1000 != 0;
        if d.mode() & 0o022 != 0 && !sticky {
            bail!(
                "refusing to load the agent {}: its directory {} is writable by other users, who could replace it; fix it with `chmod go-w {}`",
                path.display(),
                dir.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

#[cfg(unix)]
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // The owner of a file we just created is us; avoids an unsafe getuid call.
    tempfile::tempfile()
        .ok()
        .and_then(|f| f.metadata().ok())
        .map_or(u32::MAX, |m| m.uid())
}

#[cfg(not(unix))]
fn check_not_writable_by_others(_path: &Path) -> Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn refuses_a_library_others_can_write() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let lib = dir.path().join(AGENT_FILE);
        std::fs::write(&lib, b"not really a library").unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(locate(Some(&lib)).is_ok());
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = locate(Some(&lib)).unwrap_err().to_string();
        assert!(err.contains("writable by other users"), "{err}");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = locate(Some(&lib)).unwrap_err().to_string();
        assert!(err.contains("its directory"), "{err}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_missing_library_is_a_clear_error() {
        let err = locate(Some(Path::new("/nonexistent/libclrprof_agent.so")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
    }
}
