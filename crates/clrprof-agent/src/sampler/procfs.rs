//! What `/proc` tells the sampler about the process's threads, without disturbing them: where a
//! blocked thread waits (`/proc/self/task/TID/syscall`), what the kernel calls a thread
//! (`comm`), and which threads exist (`/proc/self/task`).
//!
//! A process may read these files of its own threads whatever the system's ptrace policy
//! (the kernel allows access within a thread group). Opening one costs several microseconds
//! (a path walk through /proc); a thread's `syscall` file, which the sampler reads whenever the
//! thread ran since its previous look, stays open and is read again from its start.

use std::fs::File;
use std::io::Read;

/// Where a blocked thread waits: its system call, first argument, and user-space stack
/// pointer and instruction pointer at the call. A thread that blocks again in the same call,
/// at the same stack depth, from the same instruction, waits where it waited before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WaitKey {
    /// System call number.
    pub nr: u64,
    /// Its first argument (the futex word, the descriptor, ...).
    pub arg0: u64,
    /// Stack pointer.
    pub sp: usize,
    /// Instruction pointer (just after the `syscall` instruction).
    pub pc: usize,
}

impl WaitKey {
    /// True if a signal handler that interrupted the thread at `rip`/`rsp` found it in this
    /// wait: the kernel moves the instruction pointer back onto the 2-byte `syscall`
    /// instruction when the call is to be restarted, and leaves it after the instruction when
    /// the call returns `EINTR`.
    pub fn matches(&self, rip: usize, rsp: usize) -> bool {
        rsp == self.sp && (rip == self.pc || rip.wrapping_add(2) == self.pc)
    }

    /// True if `other` is a wait in the same call at the same stack depth, whatever its first
    /// argument: a thread that waits on a condition variable again and again waits on one of
    /// its two futex words, then the other (glibc's condition variables take turns between
    /// two groups of waiters, 4 bytes apart).
    pub fn same_place(&self, other: &WaitKey) -> bool {
        self.nr == other.nr && self.sp == other.sp && self.pc == other.pc
    }
}

/// What a thread is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whereabouts {
    /// Blocked in a system call.
    Blocked(WaitKey),
    /// Running or ready to run (or stopped outside a system call).
    Running,
}

/// Reads `/proc/self/task/TID/<name>` into `buf`; `None` if the thread is gone or the file
/// cannot be read.
fn read_task_file<'b>(tid: u32, name: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let mut file = File::open(format!("/proc/self/task/{tid}/{name}")).ok()?;
    let mut len = 0;
    while len < buf.len() {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(_) => return None,
        }
    }
    Some(&buf[..len])
}

/// The `/proc` files of one thread the sampler reads again and again, kept open (opening one
/// costs more than reading it).
#[derive(Debug, Default)]
pub struct TaskFiles {
    syscall: Option<File>,
    schedstat: Option<File>,
}

/// How many times thread `tid` was switched in so far (the third field of its `schedstat`:
/// after every wait, preemption or yield): `None` if that cannot be read. `files` keeps the
/// thread's `schedstat` file open between calls.
pub fn switches_in(tid: u32, files: &mut TaskFiles) -> Option<u64> {
    if files.schedstat.is_none() {
        files.schedstat = File::open(format!("/proc/self/task/{tid}/schedstat")).ok();
    }
    let mut buf = [0u8; 96];
    let n = read_from_start(files.schedstat.as_ref()?, &mut buf)?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .split_ascii_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// Where thread `tid` is: `None` if that cannot be read (the thread is gone, or `/proc` is not
/// mounted). `files` keeps the thread's `syscall` file open between calls.
pub fn whereabouts(tid: u32, files: &mut TaskFiles) -> Option<Whereabouts> {
    if files.syscall.is_none() {
        files.syscall = File::open(format!("/proc/self/task/{tid}/syscall")).ok();
    }
    let mut buf = [0u8; 256];
    let n = read_from_start(files.syscall.as_ref()?, &mut buf)?;
    parse_syscall(&buf[..n])
}

/// Reads a file from its start again (a `/proc` file shows what is true now).
#[cfg(unix)]
fn read_from_start(file: &File, buf: &mut [u8]) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, 0).ok()
}

/// Reads a file from its start again (no `/proc` here: for the type check of other targets).
#[cfg(not(unix))]
fn read_from_start(mut file: &File, buf: &mut [u8]) -> Option<usize> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read(buf).ok()
}

/// Parses a `syscall` file: `running`, `-1 sp pc` (not in a system call), or `nr a0 .. a5 sp
/// pc` in hexadecimal but for `nr`.
fn parse_syscall(text: &[u8]) -> Option<Whereabouts> {
    let text = std::str::from_utf8(text).ok()?.trim();
    if text == "running" {
        return Some(Whereabouts::Running);
    }
    let mut fields = text.split_ascii_whitespace();
    let nr = fields.next()?;
    if nr.starts_with('-') {
        return Some(Whereabouts::Running);
    }
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let nr: u64 = nr.parse().ok()?;
    // Six arguments, the stack pointer and the instruction pointer, and nothing after.
    let mut rest = [0u64; 8];
    for value in &mut rest {
        *value = hex(fields.next()?)?;
    }
    if fields.next().is_some() {
        return None;
    }
    let [arg0, _, _, _, _, _, sp, pc] = rest;
    Some(Whereabouts::Blocked(WaitKey {
        nr,
        arg0,
        sp: usize::try_from(sp).ok()?,
        pc: usize::try_from(pc).ok()?,
    }))
}

/// What the kernel calls thread `tid` (`comm`, at most 15 bytes).
pub fn thread_name(tid: u32) -> Option<String> {
    let mut buf = [0u8; 64];
    let text = read_task_file(tid, "comm", &mut buf)?;
    Some(String::from_utf8_lossy(text).trim_end().to_owned())
}

/// The ids of every thread of this process, appended to `out`.
pub fn task_ids(out: &mut Vec<u32>) {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    out.extend(
        dir.filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_syscall_file() {
        assert_eq!(parse_syscall(b"running\n"), Some(Whereabouts::Running));
        assert_eq!(
            parse_syscall(b"-1 0x7ffd1000 0x401000\n"),
            Some(Whereabouts::Running)
        );
        let blocked = parse_syscall(
            b"202 0x563923b710e8 0x189 0x0 0x0 0x0 0xffffffff 0x7fed29686dd0 0x7fed29710f16\n",
        );
        assert_eq!(
            blocked,
            Some(Whereabouts::Blocked(WaitKey {
                nr: 202,
                arg0: 0x5639_23b7_10e8,
                sp: 0x7fed_2968_6dd0,
                pc: 0x7fed_2971_0f16,
            }))
        );
        assert_eq!(parse_syscall(b"202 0x1 0x2\n"), None);
        assert_eq!(parse_syscall(b"garbage"), None);
    }

    #[test]
    fn a_thread_is_switched_in_after_each_wait() {
        let tid = crate::recorder::sys::gettid();
        let mut files = TaskFiles::default();
        let before = switches_in(tid, &mut files).expect("schedstat");
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let after = switches_in(tid, &mut files).expect("schedstat");
        assert!(after >= before + 5, "{before} then {after}");
        assert_eq!(switches_in(0x7fff_fff0, &mut TaskFiles::default()), None);
    }

    #[test]
    fn a_waiting_thread_is_seen_blocked_where_it_waits() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            tid_tx.send(crate::recorder::sys::gettid()).unwrap();
            rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        // Wait until it blocks in its receive.
        let mut seen = None;
        let mut file = TaskFiles::default();
        for _ in 0..1000 {
            if let Some(Whereabouts::Blocked(key)) = whereabouts(tid, &mut file) {
                seen = Some(key);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let key = seen.expect("the thread blocks");
        assert!(key.sp != 0 && key.pc != 0);
        assert!(key.matches(key.pc, key.sp) && key.matches(key.pc - 2, key.sp));
        assert!(!key.matches(key.pc, key.sp + 8));
        let mut ids = Vec::new();
        task_ids(&mut ids);
        assert!(ids.contains(&tid));
        assert!(thread_name(tid).is_some());
        tx.send(()).unwrap();
        t.join().unwrap();
    }
}
