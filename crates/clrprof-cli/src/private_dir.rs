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

/// The name of the socket the agent connects to, in the private directory.
pub(crate) const SOCKET_NAME: &str = "agent.sock";

/// The longest path of a Unix socket: `sun_path` holds 108 bytes, its NUL included.
const SOCKET_PATH_MAX: usize = 107;

/// The random part of a directory's name.
const RANDOM_LEN: usize = 6;

/// Creates a private directory `PREFIX-PID-XXXXXX` in the temporary directory, after
/// removing the ones earlier `clrprof`s that are gone left there. Its [`SOCKET_NAME`] must
/// make a socket path short enough: with a long `TMPDIR` the directory goes to the user's
/// runtime directory (`XDG_RUNTIME_DIR`) or `/tmp` instead.
pub(crate) fn create(prefix: &str) -> Result<tempfile::TempDir> {
    let prefix = format!("{prefix}{}-", std::process::id());
    let temp = std::env::temp_dir();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let base = base_for_socket(&prefix, &temp, runtime.as_deref())?;
    remove_stale(&base);
    tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(RANDOM_LEN)
        .tempdir_in(&base)
        .with_context(|| {
            format!(
                "cannot create a private temporary directory in {}",
                base.display()
            )
        })
}

/// The first of the temporary directory `temp`, the user's runtime directory and `/tmp` in
/// which a directory named `prefix` and the random part can hold the agent's socket.
fn base_for_socket(prefix: &str, temp: &Path, runtime: Option<&Path>) -> Result<PathBuf> {
    let inside = prefix.len() + RANDOM_LEN + 1 + SOCKET_NAME.len();
    let fits = |base: &Path| base.as_os_str().len() + 1 + inside <= SOCKET_PATH_MAX;
    let candidates = [Some(temp), runtime, Some(Path::new("/tmp"))];
    candidates
        .into_iter()
        .flatten()
        .find(|base| fits(base) && base.is_dir())
        .map(Path::to_path_buf)
        .with_context(|| {
            format!(
                "the temporary directory {} is too long a path for the socket the agent \
                 connects to (at most {SOCKET_PATH_MAX} bytes), and neither XDG_RUNTIME_DIR nor \
                 /tmp can be used instead: set TMPDIR to a shorter directory",
                temp.display()
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
    fn a_temporary_directory_too_long_for_the_socket_is_passed_over() {
        let short = tempfile::tempdir().unwrap();
        let long = short.path().join("d".repeat(120));
        std::fs::create_dir(&long).unwrap();
        let prefix = "clrprof-4242-";
        assert_eq!(
            base_for_socket(prefix, short.path(), None).unwrap(),
            short.path()
        );
        assert_eq!(
            base_for_socket(prefix, &long, Some(short.path())).unwrap(),
            short.path()
        );
        assert_eq!(
            base_for_socket(prefix, &long, None).unwrap(),
            Path::new("/tmp")
        );
        let dir = create("clrprof-").unwrap();
        let socket = dir.path().join(SOCKET_NAME);
        assert!(socket.as_os_str().len() <= SOCKET_PATH_MAX, "{socket:?}");
    }

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
