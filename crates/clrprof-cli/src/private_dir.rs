//! The private temporary directories of `record`, `attach` and `coverage` (the agent's socket,
//! coverage's trace), and the ones a `clrprof` that was killed left behind.
//!
//! Each is named `clrprof-PID-XXXXXX` (`clrprof-coverage-PID-XXXXXX`) after the process that
//! made it, and removed when the command ends, however it ends, unless `clrprof` itself is
//! killed (SIGKILL, a crash). So every command that makes one first removes those of this
//! user whose process is gone.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The name prefixes of the directories, before the process id.
const PREFIXES: [&str; 2] = ["clrprof-coverage-", "clrprof-"];

/// Creates a private directory `PREFIX-PID-XXXXXX` in the temporary directory, after
/// removing the ones earlier `clrprof`s that are gone left there.
pub(crate) fn create(prefix: &str) -> Result<tempfile::TempDir> {
    let base = std::env::temp_dir();
    remove_stale(&base);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir_in(&base)
        .with_context(|| {
            format!(
                "cannot create a private temporary directory in {}",
                base.display()
            )
        })
}

/// The process that made directory `name`, if it is one of clrprof's.
fn owner(name: &str) -> Option<u32> {
    let rest = PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` is running: it exists and has not ended (a process that ended but
/// was not reaped yet, a zombie, still has its `/proc` entry).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_none_or(|state| state != "Z" && state != "X"),
        Err(_) => clrprof_ipc::discovery::is_alive(pid),
    }
}

/// Removes the directories in `base` of this user's `clrprof`s whose process is gone.
pub(crate) fn remove_stale(base: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner) else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || running(pid) {
            continue;
        }
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_of_processes_that_are_gone_are_removed() {
        assert_eq!(owner("clrprof-123-abcDEF"), Some(123));
        assert_eq!(owner("clrprof-coverage-77-x1"), Some(77));
        assert_eq!(
            owner("clrprof-abc"),
            None,
            "a name of the old kind is left alone"
        );
        assert_eq!(owner("clrprof-12-"), None);
        assert_eq!(owner("other-12-ab"), None);

        let base = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum cannot be alive.
        let gone = base.path().join("clrprof-4194305-abc");
        let alive = base
            .path()
            .join(format!("clrprof-{}-abc", std::process::id()));
        let foreign = base.path().join("clrprof-notes");
        for d in [&gone, &alive, &foreign] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("agent.sock"), "").unwrap();
        }
        assert_eq!(remove_stale(base.path()), std::slice::from_ref(&gone));
        assert!(!gone.exists());
        assert!(alive.exists() && foreign.exists());
    }
}
