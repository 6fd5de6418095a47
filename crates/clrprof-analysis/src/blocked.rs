//! Wall time by reason: each thread's wall-clock samples split into running and the reasons a
//! blocked thread waits for (`report --metric wall`, and `wall_by_reason` in JSON).
//!
//! A blocked sample's reason comes from its stack, innermost frame first: the first frame that
//! names a reason decides it (a lock taken while compiling a method is JIT time, a `read`
//! called by `Thread.Sleep` cannot happen). Where the frames say nothing (the innermost
//! native frames of a stripped runtime, .NET 8's `libcoreclr.so!+0x…`) a thread that waited
//! for a lock in the method where the sample waits (a `Contention` record of the same thread
//! whose innermost managed frame is the sample's: `record --contention`) is waiting for that
//! lock. Everything else blocked is `wait`: an event, a semaphore, a condition, a thread pool
//! with no work. See docs/cpu-profiling.md, *Blocked time by reason*.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

use clrprof_trace::{FrameKind, ThreadState};
use serde::Serialize;

use crate::Error;
use crate::trace::LoadedTrace;

/// Why a thread's wall time passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// On a CPU, or ready to run.
    Running,
    /// Waiting to enter a `Monitor` (`lock`).
    Lock,
    /// In `Thread.Sleep`.
    Sleep,
    /// Waiting for a file, pipe or socket (`read`, `poll`, `accept`, ...).
    Io,
    /// Waiting for a garbage collection (the runtime suspended for it).
    Gc,
    /// Compiling a method (or waiting for another thread's compilation of it).
    Jit,
    /// In `Thread.Join`.
    Join,
    /// Blocked for another reason (an event, a semaphore, a condition, an idle pool thread).
    Wait,
}

impl Reason {
    /// Every reason, in report order.
    pub const ALL: [Reason; 8] = [
        Reason::Running,
        Reason::Lock,
        Reason::Sleep,
        Reason::Io,
        Reason::Gc,
        Reason::Jit,
        Reason::Join,
        Reason::Wait,
    ];

    /// The reason's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Running => "running",
            Reason::Lock => "lock",
            Reason::Sleep => "sleep",
            Reason::Io => "io",
            Reason::Gc => "gc",
            Reason::Jit => "jit",
            Reason::Join => "join",
            Reason::Wait => "wait",
        }
    }
}

/// System calls that wait for a file, pipe or socket, as the innermost frame of a blocked stack.
const IO_CALLS: &[&str] = &[
    "read",
    "__read",
    "__libc_read",
    "readv",
    "pread64",
    "recv",
    "__libc_recv",
    "recvfrom",
    "__libc_recvfrom",
    "recvmsg",
    "__libc_recvmsg",
    "write",
    "__libc_write",
    "writev",
    "send",
    "__libc_send",
    "sendto",
    "sendmsg",
    "poll",
    "__poll",
    "ppoll",
    "epoll_wait",
    "epoll_pwait",
    "select",
    "pselect6",
    "accept",
    "accept4",
    "connect",
    "__libc_connect",
    "open",
    "open64",
    "__open64",
    "__libc_open64",
    "openat",
    "openat64",
];

/// The reason a frame names, if any. `innermost`: the frame is the stack's innermost.
pub fn frame_reason(name: &str, innermost: bool) -> Option<Reason> {
    let has = |s: &str| name.contains(s);
    if has("Monitor.Enter")
        || has("Monitor.ReliableEnter")
        || has("Monitor.TryEnter")
        || (name.starts_with("JIT_Mon") && has("Enter"))
        || name.starts_with("AwareLock::Enter")
    {
        return Some(Reason::Lock);
    }
    if name.starts_with("System.Threading.Thread.Sleep")
        || name.starts_with("ThreadNative::Sleep")
        || name.starts_with("Thread::UserSleep")
    {
        return Some(Reason::Sleep);
    }
    if name.starts_with("System.Threading.Thread.Join")
        || name.starts_with("ThreadNative::Join")
        || name.starts_with("Thread::JoinEx")
    {
        return Some(Reason::Join);
    }
    if has("WaitUntilGCComplete")
        || has("RareDisablePreemptiveGC")
        || has("wait_for_gc_done")
        || has("WaitSuspendEvents")
    {
        return Some(Reason::Gc);
    }
    if has("UnsafeJitFunction")
        || has("jitNativeCode")
        || name.starts_with("CILJit::")
        || name.starts_with("libclrjit.so!")
        || name == "[libclrjit.so]"
    {
        return Some(Reason::Jit);
    }
    if (innermost && IO_CALLS.contains(&name))
        || name.starts_with("System.Net.Sockets.")
        || name.starts_with("Interop+Sys.Read")
        || name.starts_with("Interop+Sys.Poll")
        || name.starts_with("Interop+Sys.Accept")
        || name.starts_with("Interop+Sys.Receive")
    {
        return Some(Reason::Io);
    }
    None
}

/// One thread's wall time, running and blocked by reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadWall {
    /// OS thread id.
    pub tid: u32,
    /// The thread's name (empty if it has none).
    pub name: String,
    /// One of the runtime's service threads (finalizer, tiered compilation, debugger, ...),
    /// as the CPU profile's threads say.
    pub service: bool,
    /// Wall time of its wall-clock samples, in nanoseconds.
    pub wall_ns: u64,
    /// Per reason (`running`, `lock`, `sleep`, `io`, `gc`, `jit`, `join`, `wait`), the wall
    /// time in nanoseconds; every reason is present.
    pub reasons: BTreeMap<&'static str, u64>,
}

/// Whether the trace has wall-clock samples (sample and count modes since format 1.2).
pub fn has_wall_samples(t: &LoadedTrace) -> bool {
    t.sampler.is_some()
        && (t
            .samples
            .iter()
            .any(|s| s.state != ThreadState::Cpu && s.wall_ns > 0)
            || t.summed_wall().next().is_some())
}

/// The reason of a blocked sample of thread `tid` at `stack`.
fn blocked_reason(
    t: &LoadedTrace,
    tid: u32,
    stack: u32,
    lock_sites: &HashSet<(u32, u64)>,
    names: &mut HashMap<(FrameKind, u64), String>,
) -> Reason {
    let path = t.stack_path(stack);
    for (i, &f) in path.iter().enumerate() {
        if !matches!(f.0, FrameKind::Managed | FrameKind::Native) {
            continue;
        }
        let name = names.entry(f).or_insert_with(|| t.frame_name(f));
        if let Some(r) = frame_reason(name, i == 0) {
            return r;
        }
    }
    let innermost_managed = path.iter().find(|f| f.0 == FrameKind::Managed);
    match innermost_managed {
        Some(&(_, function)) if lock_sites.contains(&(tid, function)) => Reason::Lock,
        _ => Reason::Wait,
    }
}

/// A thread's name: the program's, else the kernel's, else `main` for the first thread.
fn thread_label(t: &LoadedTrace, tid: u32) -> String {
    let name = t.names.name_of_tid(tid);
    if !name.is_empty() {
        return name;
    }
    if let Some(os) = t.names.thread_os_names.get(&tid) {
        return os.clone();
    }
    match &t.session {
        Some(s) if s.pid == tid => "main".into(),
        _ => String::new(),
    }
}

/// Per thread: its wall time, running and blocked by reason; threads by wall time
/// (largest first), then by id.
pub fn wall_by_reason(t: &LoadedTrace) -> Vec<ThreadWall> {
    // (thread, innermost managed frame outside Monitor) of every contended wait.
    let mut lock_sites = HashSet::new();
    for c in &t.contention {
        let site = t.stack_path(c.stack).into_iter().find(|&f| {
            f.0 == FrameKind::Managed && !t.frame_name(f).starts_with("System.Threading.Monitor.")
        });
        if let Some((_, function)) = site {
            lock_sites.insert((c.tid, function));
        }
    }
    let mut names = HashMap::new();
    let mut reasons: HashMap<(u32, u32), Reason> = HashMap::new();
    let mut threads: BTreeMap<u32, BTreeMap<&'static str, u64>> = BTreeMap::new();
    let each = t
        .samples
        .iter()
        .filter(|s| s.state != ThreadState::Cpu && s.wall_ns > 0)
        .map(|s| (s.tid, s.stack, s.state, s.wall_ns));
    for (tid, stack, state, wall_ns) in each.chain(t.summed_wall()) {
        let reason = if state == ThreadState::Running {
            Reason::Running
        } else {
            *reasons
                .entry((tid, stack))
                .or_insert_with(|| blocked_reason(t, tid, stack, &lock_sites, &mut names))
        };
        let row = threads
            .entry(tid)
            .or_insert_with(|| Reason::ALL.iter().map(|r| (r.as_str(), 0)).collect());
        let slot = row.entry(reason.as_str()).or_default();
        *slot = slot.saturating_add(wall_ns);
    }
    let mut rows: Vec<ThreadWall> = threads
        .into_iter()
        .map(|(tid, reasons)| ThreadWall {
            tid,
            name: thread_label(t, tid),
            service: false,
            wall_ns: reasons.values().fold(0u64, |n, v| n.saturating_add(*v)),
            reasons,
        })
        .collect();
    rows.sort_by(|a, b| b.wall_ns.cmp(&a.wall_ns).then(a.tid.cmp(&b.tid)));
    rows
}

fn ms(ns: u64) -> String {
    if ns == 0 {
        "-".into()
    } else {
        format!("{:.1}", ns as f64 / 1e6)
    }
}

/// Marks the rows of the runtime's service threads, as `profile`'s threads say
/// ([`crate::threads::mark_service_threads`]).
pub fn mark_services(rows: &mut [ThreadWall], profile: &crate::model::Profile) {
    let services: HashSet<u32> = profile
        .threads
        .iter()
        .filter(|t| t.service)
        .map(|t| t.tid)
        .collect();
    for row in rows {
        row.service = services.contains(&row.tid);
    }
}

/// Which threads the text table shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WallRows {
    /// Every thread of the program, at most this many (largest first), then the runtime's
    /// service threads summed in one row.
    Program(usize),
    /// These threads (by tid), each in its row, whatever their number.
    Threads(Vec<u32>),
}

/// Writes the split as text: one row per thread (the runtime's service threads in one row
/// unless asked for), milliseconds per reason; within a width, reasons no row has are left
/// out.
pub fn write_wall_by_reason(
    rows: &[ThreadWall],
    which: &WallRows,
    width: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let label = |name: &str, tid: u32| {
        if name.is_empty() || name == tid.to_string() {
            tid.to_string()
        } else {
            format!("{name} ({tid})")
        }
    };
    // (label, wall, per reason)
    let mut shown: Vec<(String, u64, BTreeMap<&'static str, u64>)> = Vec::new();
    let mut services: Vec<&ThreadWall> = Vec::new();
    let mut more = 0;
    match which {
        WallRows::Threads(tids) => {
            for row in rows.iter().filter(|r| tids.contains(&r.tid)) {
                shown.push((label(&row.name, row.tid), row.wall_ns, row.reasons.clone()));
            }
        }
        WallRows::Program(top) => {
            let program: Vec<&ThreadWall> = rows.iter().filter(|r| !r.service).collect();
            services = rows.iter().filter(|r| r.service).collect();
            for row in program.iter().take(*top) {
                shown.push((label(&row.name, row.tid), row.wall_ns, row.reasons.clone()));
            }
            more = program.len().saturating_sub(*top);
            if !services.is_empty() {
                let mut sum: BTreeMap<&'static str, u64> = BTreeMap::new();
                let mut wall = 0u64;
                for row in &services {
                    wall = wall.saturating_add(row.wall_ns);
                    for (&r, &ns) in &row.reasons {
                        let slot = sum.entry(r).or_default();
                        *slot = slot.saturating_add(ns);
                    }
                }
                shown.push((
                    format!("runtime service threads ({})", services.len()),
                    wall,
                    sum,
                ));
            }
        }
    }
    if shown.is_empty() {
        return Ok(());
    }
    // Within a width (a terminal), the reasons no row has are left out; otherwise every
    // reason has its column, as programs reading the table expect.
    let reasons: Vec<Reason> = Reason::ALL
        .into_iter()
        .filter(|r| {
            width.is_none()
                || shown
                    .iter()
                    .any(|(_, _, by)| by.get(r.as_str()).is_some_and(|&n| n > 0))
        })
        .collect();
    writeln!(out)?;
    crate::output::fit::write_wrapped(
        out,
        width,
        "",
        "  ",
        "Wall time by thread, running and blocked by reason (ms; each thread's own time: \
         docs/cpu-profiling.md)",
    )?;
    let label_w = shown
        .iter()
        .map(|(l, _, _)| crate::output::fit::width(l))
        .max()
        .unwrap_or(0)
        .clamp("thread".len(), 32);
    let numbers = 10 + reasons.len() * 9;
    let label_w = match width {
        Some(w) => label_w.min(w.saturating_sub(2 + numbers).max(12)),
        None => label_w,
    };
    write!(out, "  {:<label_w$} {:>9}", "thread", "wall")?;
    for r in &reasons {
        write!(out, " {:>8}", r.as_str())?;
    }
    writeln!(out)?;
    for (l, wall, by) in &shown {
        let l = crate::output::fit::cut_end(l, label_w);
        let pad = label_w.saturating_sub(crate::output::fit::width(&l));
        write!(out, "  {l}{:pad$} {:>9}", "", ms(*wall))?;
        for r in &reasons {
            write!(out, " {:>8}", ms(by.get(r.as_str()).copied().unwrap_or(0)))?;
        }
        writeln!(out)?;
    }
    if more > 0 {
        writeln!(out, "  ... {more} more threads (--top 0 shows all)")?;
    }
    if !services.is_empty() {
        let names: Vec<String> = services.iter().map(|r| label(&r.name, r.tid)).collect();
        crate::output::fit::write_wrapped(
            out,
            width,
            "  runtime service threads: ",
            "    ",
            &format!("{} (--thread all shows each)", names.join(", ")),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_name_their_reasons() {
        let cases = [
            (
                "System.Threading.Monitor.Enter(object, ref bool)",
                false,
                Some(Reason::Lock),
            ),
            ("JIT_MonReliableEnter_Portable", false, Some(Reason::Lock)),
            ("AwareLock::EnterEpilog", false, Some(Reason::Lock)),
            (
                "System.Threading.Thread.Sleep(int)",
                false,
                Some(Reason::Sleep),
            ),
            ("ThreadNative::Sleep", false, Some(Reason::Sleep)),
            ("System.Threading.Thread.Join()", false, Some(Reason::Join)),
            ("ThreadNative::Join", false, Some(Reason::Join)),
            ("Thread::RareDisablePreemptiveGC", false, Some(Reason::Gc)),
            ("WKS::GCHeap::WaitUntilGCComplete", false, Some(Reason::Gc)),
            ("UnsafeJitFunction", false, Some(Reason::Jit)),
            ("libclrjit.so!+0x1234", false, Some(Reason::Jit)),
            ("poll", true, Some(Reason::Io)),
            ("accept", true, Some(Reason::Io)),
            // A system call's name is I/O only as the innermost frame.
            ("poll", false, None),
            (
                "System.Net.Sockets.Socket.Receive(byte[])",
                false,
                Some(Reason::Io),
            ),
            ("System.Threading.Monitor.Wait(object, int)", false, None),
            ("pthread_cond_wait", true, None),
            (
                "System.Threading.WaitHandle.WaitOneNoCheck(int)",
                false,
                None,
            ),
        ];
        for (name, innermost, reason) in cases {
            assert_eq!(frame_reason(name, innermost), reason, "{name}");
        }
    }
}
