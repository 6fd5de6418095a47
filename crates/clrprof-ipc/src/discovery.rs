//! Where a process's diagnostics socket is.
//!
//! The runtime listens on `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket` (`/tmp` when `TMPDIR`
//! is unset), `pid` being its id in its own pid namespace and `key` its start time in clock
//! ticks since boot (field 22 of `/proc/PID/stat`). The socket is looked for through
//! `/proc/PID/root`, so a process in another mount namespace (a container) is found with its
//! own `/tmp` and its own pid; for others that path is just `/`.

use std::path::{Path, PathBuf};

use crate::Error;

/// A process with a diagnostics socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotnetProcess {
    /// Process id (in our pid namespace).
    pub pid: u32,
    /// Its diagnostics socket.
    pub socket: PathBuf,
}

fn proc_dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}"))
}

/// True while process `pid` exists.
pub fn is_alive(pid: u32) -> bool {
    proc_dir(pid).exists()
}

/// The process's id in its innermost pid namespace (`NSpid` in `/proc/PID/status`).
fn namespace_pid(pid: u32) -> u32 {
    std::fs::read_to_string(proc_dir(pid).join("status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|ids| ids.split_whitespace().last()?.parse().ok())
        })
        .unwrap_or(pid)
}

/// The process's start time in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(proc_dir(pid).join("stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The process's `TMPDIR`, if it set one and we may read its environment.
fn target_tmpdir(pid: u32) -> Option<PathBuf> {
    let env = std::fs::read(proc_dir(pid).join("environ")).ok()?;
    env.split(|&b| b == 0)
        .find_map(|var| var.strip_prefix(b"TMPDIR="))
        .filter(|v| !v.is_empty())
        .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
}

/// The directory holding `pid`'s diagnostics socket, seen from here.
fn socket_dir(pid: u32) -> PathBuf {
    let tmp = target_tmpdir(pid).unwrap_or_else(|| PathBuf::from("/tmp"));
    let root = proc_dir(pid).join("root");
    if std::fs::read_dir(&root).is_ok() {
        root.join(tmp.strip_prefix("/").unwrap_or(&tmp))
    } else {
        tmp
    }
}

/// The diagnostics socket of process `pid`.
pub fn socket_path(pid: u32) -> Result<PathBuf, Error> {
    if !is_alive(pid) {
        return Err(Error::NoSuchProcess { pid });
    }
    let nspid = namespace_pid(pid);
    let dir = socket_dir(pid);
    let started = start_time(pid);
    if let Some(key) = started {
        let exact = dir.join(format!("dotnet-diagnostic-{nspid}-{key}-socket"));
        if exact.exists() {
            return Ok(exact);
        }
    }
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(Error::Permission {
                pid,
                what: format!("cannot list {}", dir.display()),
            });
        }
        Err(e) => {
            return Err(Error::Io {
                context: format!("cannot list {}", dir.display()),
                source: e,
            });
        }
    };
    let names = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())));
    let best = newest_socket(names, nspid, started);
    match best {
        Some(path) => Ok(path),
        None if !is_alive(pid) => Err(Error::NoSuchProcess { pid }),
        None => Err(Error::NotDotnet { pid, nspid, dir }),
    }
}

/// Among a directory's entries (file name and path), the newest diagnostics socket of
/// namespace pid `nspid`, when none carries the process's start time `started` as its key
/// (the runtime may compute it differently). A socket whose key is older than the process is
/// another's: a process that had this pid before and ended without removing its socket (it
/// was killed); connecting to it is refused.
fn newest_socket(
    entries: impl Iterator<Item = (String, PathBuf)>,
    nspid: u32,
    started: Option<u64>,
) -> Option<PathBuf> {
    let prefix = format!("dotnet-diagnostic-{nspid}-");
    entries
        .filter_map(|(name, path)| {
            let key = name
                .strip_prefix(&prefix)?
                .strip_suffix("-socket")?
                .parse::<u64>()
                .ok()?;
            Some((key, path))
        })
        .filter(|&(key, _)| started.is_none_or(|started| key >= started))
        .max_by_key(|&(key, _)| key)
        .map(|(_, path)| path)
}

/// The .NET processes of the current user: every process we own that has a diagnostics
/// socket, by pid.
pub fn list() -> Vec<DotnetProcess> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<DotnetProcess> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(|&pid| std::fs::metadata(proc_dir(pid)).is_ok_and(|m| Some(m.uid()) == me))
        .filter_map(|pid| {
            Some(DotnetProcess {
                pid,
                socket: socket_path(pid).ok()?,
            })
        })
        .collect();
    found.sort_by_key(|p| p.pid);
    found
}

/// The directory of the runtime loaded in `pid` (the one holding `libcoreclr.so`, named after
/// the runtime's version in a standard install), from its memory map.
pub fn runtime_dir(pid: u32) -> Option<PathBuf> {
    let maps = std::fs::read_to_string(proc_dir(pid).join("maps")).ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libcoreclr.so"))
        .and_then(|p| Path::new(p).parent().map(Path::to_path_buf))
}

/// The process's command line from `/proc/PID/cmdline`, arguments joined by spaces.
pub fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(proc_dir(pid).join("cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_our_own_process_facts() {
        let me = std::process::id();
        assert_eq!(namespace_pid(me), me);
        assert!(start_time(me).is_some_and(|t| t > 0));
        assert!(runtime_dir(me).is_none(), "this test is not a .NET process");
    }

    #[test]
    fn a_socket_older_than_the_process_is_another_process_s() {
        let entries = |names: &[&str]| -> Vec<(String, PathBuf)> {
            names
                .iter()
                .map(|n| (n.to_string(), PathBuf::from("/tmp").join(n)))
                .collect()
        };
        // A process that had pid 42 before, killed at key 100; this one started at 500.
        let stale = entries(&["dotnet-diagnostic-42-100-socket", "other-file"]);
        assert_eq!(
            newest_socket(stale.clone().into_iter(), 42, Some(500)),
            None
        );
        // Without its start time, any socket of the pid is taken.
        assert_eq!(
            newest_socket(stale.into_iter(), 42, None),
            Some(PathBuf::from("/tmp/dotnet-diagnostic-42-100-socket"))
        );
        let both = entries(&[
            "dotnet-diagnostic-42-100-socket",
            "dotnet-diagnostic-42-700-socket",
            "dotnet-diagnostic-420-900-socket",
        ]);
        assert_eq!(
            newest_socket(both.into_iter(), 42, Some(500)),
            Some(PathBuf::from("/tmp/dotnet-diagnostic-42-700-socket"))
        );
    }

    #[test]
    fn missing_and_non_dotnet_processes_are_told_apart() {
        assert!(matches!(
            socket_path(u32::MAX - 1),
            Err(Error::NoSuchProcess { .. })
        ));
        let me = std::process::id();
        match socket_path(me) {
            Err(e @ Error::NotDotnet { .. }) => {
                assert!(e.to_string().contains("is not a .NET process"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }
}
