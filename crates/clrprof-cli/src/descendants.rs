//! Knowing when every process the program started has ended.
//!
//! A program's children may outlive it (`dotnet run` ends while its app still writes its data;
//! a script starts a worker in the background), and a child that outlives its parent is
//! handed to the process that reaps orphans. `record` makes itself that process for its own
//! tree (Linux's "child subreaper"), so that once the program has ended it can tell whether any
//! process of the tree is still alive (its children, orphans included, as `/proc` lists them),
//! and end the recording as soon as none is, instead of waiting a fixed moment for late
//! children to connect.

use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// Whether `record` reaps the orphans of its tree.
pub struct Reaper {
    subreaper: bool,
}

impl Reaper {
    /// Makes this process the reaper of its descendants' orphans, where the system allows it
    /// (Linux); elsewhere, whether descendants live cannot be told.
    pub fn become_one() -> Reaper {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let subreaper = nix::sys::prctl::set_child_subreaper(true).is_ok();
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let subreaper = false;
        Reaper { subreaper }
    }

    /// Whether a process of the tree is still alive, once the program itself was waited for.
    /// Those that ended are reaped. True when it cannot be told.
    pub fn descendants_alive(&self) -> bool {
        if !self.subreaper {
            return true;
        }
        let Some(children) = children() else {
            return true;
        };
        let mut alive = false;
        for (pid, zombie) in children {
            if zombie {
                let _ = waitpid(Pid::from_raw(pid as i32), Some(WaitPidFlag::WNOHANG));
            } else {
                alive = true;
            }
        }
        alive
    }
}

/// This process's children (its threads' children, as `/proc` lists them), each with whether
/// it has ended and waits to be reaped; `None` if `/proc` does not tell.
fn children() -> Option<Vec<(u32, bool)>> {
    let mut found = Vec::new();
    let mut read_any = false;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        // A thread that ended meanwhile has no file any more (its children are the
        // process's other threads' now); a kernel without the file has it for none.
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        read_any = true;
        for pid in text
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            found.push((pid, is_zombie(pid)));
        }
    }
    read_any.then_some(found)
}

/// Whether process `pid` has ended and waits to be reaped (or is gone already).
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // `pid (comm) state ...`: the command may hold spaces and parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_none_or(|state| state == "Z" || state == "X")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn live_child(pid: u32) -> bool {
        children()
            .expect("/proc lists children")
            .contains(&(pid, false))
    }

    #[test]
    fn sees_the_orphans_of_the_tree_until_they_end() {
        let reaper = Reaper::become_one();
        assert!(
            reaper.subreaper,
            "Linux lets a process reap its descendants' orphans"
        );
        // The shell ends at once; its background child lives on, as an orphan of this process.
        let shell = Command::new("sh")
            .args(["-c", "sleep 0.5 >/dev/null 2>&1 & echo $!"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        assert!(shell.status.success());
        let orphan: u32 = String::from_utf8_lossy(&shell.stdout)
            .trim()
            .parse()
            .unwrap();
        assert!(
            live_child(orphan),
            "the background sleep is this process's child now"
        );
        let started = Instant::now();
        while live_child(orphan) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the sleep never ended"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Ended: a zombie of this process until reaped (not by this test: other tests' children
        // are this process's too).
        assert!(is_zombie(orphan));
    }
}
