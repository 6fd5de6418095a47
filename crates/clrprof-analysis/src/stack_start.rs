//! Where a report's stacks start: at the thread's start, as recorded, or at the code the
//! reader wrote (`report` shows the latter unless asked for every frame).
//!
//! A thread's stack starts in the process's or the thread's start (`_start`,
//! `__libc_start_main`, `clone3`, `start_thread`), goes through the .NET host (`dotnet`,
//! `libhostfxr.so`, `libhostpolicy.so`) and the runtime's call into managed code
//! (`RunMain`, `CallDescrWorkerInternal`, `ThreadNative::KickOffThread`), and only then
//! reaches `Main` or the delegate the thread was started with: 15 to 20 frames above every
//! stack of the program, the same in every profile. Starting at the managed entry, as
//! dotTrace and py-spy show stacks, the call tree and the flame graph begin where the
//! program does.

use std::collections::HashMap;

use crate::model::{
    FrameCategory, FrameIndex, FrameKind, LineIndex, Profile, StackIndex, StackNode,
};

/// Where the stacks of a profile start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StackStart {
    /// Every frame, from the thread's start (as recorded).
    #[default]
    Thread,
    /// At the thread's managed entry: a stack with managed code starts at its outermost
    /// managed frame (`Main`, the thread's start delegate), past the runtime's own managed
    /// frames that start a thread (`Thread.StartCallback`, `ThreadHelper.ThreadStart`,
    /// `ExecutionContext.RunInternal` above the delegate); a stack without managed code (the
    /// runtime's own threads, the main thread before `Main`) starts at its outermost frame of
    /// the runtime or its JIT compiler. A stack that ends early (its root says why) keeps its
    /// frames.
    ManagedEntry,
}

/// The runtime's managed frames that start a thread and call its delegate.
const THREAD_START_FRAMES: &[&str] = &[
    "System.Threading.Thread.StartCallback(",
    "System.Threading.Thread.StartHelper.Run(",
    "System.Threading.Thread.StartHelper.RunWorker(",
    "System.Threading.ThreadHelper.ThreadStart(",
    "System.Threading.ThreadHelper.ThreadStart_Context(",
    "System.Threading.ExecutionContext.RunInternal(",
    "System.Threading.ExecutionContext.Run(",
];

fn is_managed(kind: FrameKind) -> bool {
    matches!(kind, FrameKind::Managed | FrameKind::Generated)
}

/// Where the stack of `frames` (root first) starts, by [`StackStart::ManagedEntry`].
fn entry(profile: &Profile, frames: &[FrameIndex]) -> usize {
    let frame = |i: usize| profile.frame(frames[i]);
    if frames.is_empty() || frame(0).kind == FrameKind::Truncated {
        return 0;
    }
    if let Some(mut at) = (0..frames.len()).find(|&i| is_managed(frame(i).kind)) {
        while at + 1 < frames.len()
            && is_managed(frame(at + 1).kind)
            && THREAD_START_FRAMES
                .iter()
                .any(|s| frame(at).name.starts_with(s))
        {
            at += 1;
        }
        return at;
    }
    (0..frames.len())
        .find(|&i| {
            matches!(
                frame(i).category(),
                FrameCategory::Runtime | FrameCategory::Jit
            )
        })
        .unwrap_or(0)
}

/// Makes every stack of `profile` (samples' stacks; call trees start at managed code
/// already) start at its managed entry ([`StackStart::ManagedEntry`]).
pub fn start_at_managed_entry(profile: &mut Profile) {
    let mut stacks: Vec<StackNode> = Vec::new();
    let mut interned: HashMap<(Option<StackIndex>, FrameIndex, Option<LineIndex>), StackIndex> =
        HashMap::new();
    let mut memo: HashMap<StackIndex, Option<StackIndex>> = HashMap::new();
    let mut mapped = |profile: &Profile, s: StackIndex| -> Option<StackIndex> {
        if let Some(&m) = memo.get(&s) {
            return m;
        }
        let places = profile.stack_places(s);
        let frames: Vec<FrameIndex> = places.iter().map(|&(f, _)| f).collect();
        let at = entry(profile, &frames);
        let mut parent = None;
        for &(f, line) in &places[at..] {
            let next = StackIndex(stacks.len() as u32);
            let node = *interned.entry((parent, f, line)).or_insert_with(|| {
                stacks.push(StackNode {
                    parent,
                    frame: f,
                    line,
                });
                next
            });
            parent = Some(node);
        }
        memo.insert(s, parent);
        parent
    };
    let mut threads = std::mem::take(&mut profile.threads);
    for t in &mut threads {
        for sample in &mut t.samples {
            if let Some(s) = sample.stack {
                sample.stack = mapped(profile, s);
            }
        }
    }
    profile.threads = threads;
    profile.stacks = stacks;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProfileBuilder, ProfileKind, Sample, SampleKind};

    fn stacks_of(p: &Profile) -> Vec<Vec<String>> {
        p.threads
            .iter()
            .flat_map(|t| &t.samples)
            .map(|s| {
                p.stack_frames(s.stack.unwrap())
                    .into_iter()
                    .map(|f| p.frame(f).name.clone())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn stacks_start_at_main_at_the_thread_s_delegate_or_in_the_runtime() {
        let mut b = ProfileBuilder::new(ProfileKind::Sample);
        let native = |b: &mut ProfileBuilder, name: &str, module: &str| {
            b.intern_frame(name, module, FrameKind::Native)
        };
        let managed = |b: &mut ProfileBuilder, name: &str| {
            b.intern_frame(name, "App.dll", FrameKind::Managed)
        };
        let start = native(&mut b, "_start", "dotnet");
        let host = native(&mut b, "corehost_main", "libhostpolicy.so");
        let run_main = native(&mut b, "RunMain", "libcoreclr.so");
        let main = managed(&mut b, "App.Main(string[])");
        let work = managed(&mut b, "App.Work()");
        let clone = native(&mut b, "clone3", "libc.so.6");
        let kick = native(&mut b, "ThreadNative::KickOffThread", "libcoreclr.so");
        let thread_start = managed(&mut b, "System.Threading.ThreadHelper.ThreadStart()");
        let run = managed(
            &mut b,
            "System.Threading.ExecutionContext.RunInternal(System.Threading.ExecutionContext, System.Threading.ContextCallback, object)",
        );
        let delegate = managed(&mut b, "App.<Main>b__0_0()");
        let wait = native(&mut b, "pthread_cond_wait", "libc.so.6");
        let finalizer = native(
            &mut b,
            "FinalizerThread::FinalizerThreadStart",
            "libcoreclr.so",
        );
        let cut = b.intern_frame("[stack ended early: x]", "", FrameKind::Truncated);
        let t = b.thread(1, "main");
        for path in [
            vec![start, host, run_main, main, work],
            vec![clone, kick, thread_start, run, delegate, work],
            vec![clone, finalizer, wait],
            vec![clone, wait],
            vec![cut, run_main, main],
            vec![clone, kick, thread_start],
        ] {
            let stack = b.intern_stack_path(&path);
            b.add_sample(
                t,
                Sample {
                    stack,
                    cpu_ns: 1,
                    kind: SampleKind::Cpu,
                    ..Sample::default()
                },
            );
        }
        let mut p = b.build();
        start_at_managed_entry(&mut p);
        p.validate().unwrap();
        assert_eq!(
            stacks_of(&p),
            [
                vec!["App.Main(string[])", "App.Work()"],
                vec!["App.<Main>b__0_0()", "App.Work()"],
                vec!["FinalizerThread::FinalizerThreadStart", "pthread_cond_wait"],
                vec!["clone3", "pthread_cond_wait"],
                vec!["[stack ended early: x]", "RunMain", "App.Main(string[])"],
                vec!["System.Threading.ThreadHelper.ThreadStart()"],
            ]
        );
    }
}
