//! How threads and the ends of stacks are named in reports.
//!
//! A thread is shown by the name the program gave it (`Thread.Name`), else by the name the
//! kernel knows it by when that is its own (the runtime names its threads there since .NET 6:
//! `.NET TP Worker`, `.NET Finalizer`, ...), else `main` for the process's first thread, else
//! by its role, read from the function it started in (the outermost frames of its stacks:
//! `ThreadpoolMgr::WorkerThreadStart` is a thread pool worker).

use clrprof_trace::StackCut;

use crate::model::{FrameKind, Profile};

/// Functions a thread of the runtime starts in, and the role they give the thread. Native
/// names come from libcoreclr's symbols (3.1 ships them; a stripped runtime names its threads
/// itself), managed ones from .NET 5+'s managed thread pool.
const ROLES: &[(&str, &str)] = &[
    ("ThreadpoolMgr::WorkerThreadStart", "thread pool worker"),
    (
        "PortableThreadPool.WorkerThread.WorkerThreadStart",
        "thread pool worker",
    ),
    ("ThreadpoolMgr::GateThreadStart", "thread pool gate"),
    (
        "PortableThreadPool.GateThread.GateThreadStart",
        "thread pool gate",
    ),
    ("ThreadpoolMgr::TimerThreadStart", "timer"),
    ("TimerQueue.TimerThread", "timer"),
    ("ThreadpoolMgr::WaitThreadStart", "thread pool wait"),
    ("FinalizerThread::FinalizerThreadStart", "finalizer"),
    ("gc_heap::bgc_thread_stub", "background GC"),
    ("gc_heap::gc_thread_stub", "server GC"),
    (
        "TieredCompilationManager::BackgroundWorker",
        "tiered compilation",
    ),
    ("DebuggerRCThread::ThreadProc", "debugger"),
    ("SignalHandlerWorkerLoop", "signal handler"),
    ("server_thread", "diagnostics server"),
    ("EventPipe", "EventPipe"),
    ("__libc_start_main", "main"),
];

/// How many outermost frames of a stack are looked at for the thread's start function.
const START_FRAMES: usize = 12;

/// Gives every unnamed thread of `profile` its kernel name or role (see the module doc).
/// `os_name` is the kernel's name of a thread, if it has one of its own; `pid` the process's.
pub fn name_threads(profile: &mut Profile, os_name: impl Fn(u32) -> Option<String>, pid: u32) {
    for t in 0..profile.threads.len() {
        if !profile.threads[t].name.is_empty() {
            continue;
        }
        let tid = profile.threads[t].tid;
        // The process's first thread is `main` whatever it runs: in trace mode its stacks start
        // at the first method it calls, which may be the runtime's own (an EventPipe provider's
        // start-up under `--events all`), not at its start function.
        let name = os_name(tid)
            .filter(|n| !n.is_empty())
            .or_else(|| (tid == pid && pid != 0).then(|| "main".to_owned()))
            .or_else(|| role(profile, t).map(str::to_owned));
        if let Some(name) = name {
            profile.threads[t].name = name;
        }
    }
}

/// The role thread `t` has by the function its stacks start in.
fn role(profile: &Profile, t: usize) -> Option<&'static str> {
    let thread = &profile.threads[t];
    let mut seen = std::collections::HashSet::new();
    for s in thread.samples.iter().filter_map(|s| s.stack) {
        if !seen.insert(s) {
            continue;
        }
        let frames = profile.stack_frames(s);
        for &f in frames.iter().take(START_FRAMES) {
            let frame = profile.frame(f);
            if frame.kind == FrameKind::Truncated {
                continue;
            }
            if let Some((_, role)) = ROLES.iter().find(|(start, _)| frame.name.contains(start)) {
                return Some(role);
            }
        }
    }
    None
}

/// The name of the marker frame at the root of a stack that ends early.
pub fn stack_cut_name(cut: StackCut) -> String {
    match cut {
        StackCut::Missed => "[CPU of missed samples: the sampler fell behind]".to_string(),
        StackCut::Unsampled => "[CPU after the last sample: no sample saw it]".to_string(),
        _ => format!("[stack ended early: {}]", cut.describe()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProfileBuilder, ProfileKind, Sample, SampleKind};

    #[test]
    fn names_threads_by_program_kernel_role_and_pid() {
        let mut b = ProfileBuilder::new(ProfileKind::Sample);
        let start = b.intern_frame(
            "ThreadpoolMgr::WorkerThreadStart",
            "libcoreclr.so",
            FrameKind::Native,
        );
        let work = b.intern_frame("App.Work()", "App.dll", FrameKind::Managed);
        let pool_stack = b.intern_stack_path(&[start, work]);
        let other = b.intern_stack_path(&[work]);
        for (tid, name, stack) in [
            (1, "", other),
            (2, "named", other),
            (3, "", other),
            (4, "", pool_stack),
            (5, "", other),
        ] {
            let t = b.thread(tid, name);
            b.add_sample(
                t,
                Sample {
                    time_ns: 1,
                    stack,
                    cpu_ns: 1,
                    wall_ns: 0,
                    kind: SampleKind::Cpu,
                    ..Sample::default()
                },
            );
        }
        let mut p = b.build();
        name_threads(
            &mut p,
            |tid| (tid == 3).then(|| ".NET Finalizer".to_owned()),
            1,
        );
        let names: Vec<&str> = p.threads.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["main", "named", ".NET Finalizer", "thread pool worker", ""]
        );
    }
}
