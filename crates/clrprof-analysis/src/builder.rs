//! Building a [`Profile`] while interning frames and stacks.

use std::collections::HashMap;

use crate::model::{
    CallNode, CallTree, Frame, FrameIndex, FrameKind, LineIndex, Profile, ProfileKind, Sample,
    SampleKind, SourceLine, StackIndex, StackNode, ThreadProfile,
};

/// Builds a [`Profile`] whose frames and stacks are each stored once.
///
/// Metadata (`name`, `pid`, `duration_ns`, ...) is set on the built profile: its fields are
/// public.
///
/// ```
/// use clrprof_analysis::{FrameKind, ProfileKind, ProfileBuilder, Sample, SampleKind};
///
/// let mut b = ProfileBuilder::new(ProfileKind::Sample);
/// let main = b.intern_frame("App.Main()", "App.dll", FrameKind::Managed);
/// let work = b.intern_frame("App.Work()", "App.dll", FrameKind::Managed);
/// let stack = b.intern_stack_path(&[main, work]);
/// let t = b.thread(42, "main");
/// b.add_sample(t, Sample { time_ns: 1_000_000, stack, cpu_ns: 900_000, wall_ns: 1_000_000, kind: SampleKind::Tick, ..Sample::default() });
/// let profile = b.build();
/// assert_eq!(profile.threads[0].samples.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct ProfileBuilder {
    profile: Profile,
    frame_ids: HashMap<Frame, FrameIndex>,
    stack_ids: HashMap<(Option<StackIndex>, FrameIndex, Option<LineIndex>), StackIndex>,
    line_ids: HashMap<SourceLine, LineIndex>,
    thread_ids: HashMap<u32, usize>,
    /// Per thread: (parent node, frame) -> node, for [`ProfileBuilder::add_call_path`].
    call_ids: Vec<HashMap<(Option<usize>, FrameIndex), usize>>,
}

/// The measured values of one call path, for [`ProfileBuilder::add_call_path`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallValues {
    /// Calls along this path.
    pub calls: u64,
    /// Samples with this path's function innermost.
    pub self_samples: u64,
    /// CPU time sampled with this path's function innermost.
    pub self_cpu_ns: u64,
    /// Wall time sampled with this path's function innermost.
    pub self_wall_ns: u64,
}

impl ProfileBuilder {
    /// Starts an empty profile of the given kind.
    pub fn new(kind: ProfileKind) -> ProfileBuilder {
        ProfileBuilder {
            profile: Profile::new(kind),
            frame_ids: HashMap::new(),
            stack_ids: HashMap::new(),
            line_ids: HashMap::new(),
            thread_ids: HashMap::new(),
            call_ids: Vec::new(),
        }
    }

    /// The index of the frame with this name, module and kind, adding it if new.
    pub fn intern_frame(&mut self, name: &str, module: &str, kind: FrameKind) -> FrameIndex {
        let frame = Frame {
            name: name.to_owned(),
            module: module.to_owned(),
            kind,
        };
        intern(
            &mut self.frame_ids,
            &mut self.profile.frames,
            frame,
            FrameIndex,
        )
    }

    /// The stack made of `parent` with `frame` called from it, adding it if new.
    pub fn intern_stack(&mut self, parent: Option<StackIndex>, frame: FrameIndex) -> StackIndex {
        self.intern_stack_at(parent, frame, None)
    }

    /// The stack made of `parent` with `frame` called from it, at source line `line`, adding
    /// it if new.
    pub fn intern_stack_at(
        &mut self,
        parent: Option<StackIndex>,
        frame: FrameIndex,
        line: Option<LineIndex>,
    ) -> StackIndex {
        *self
            .stack_ids
            .entry((parent, frame, line))
            .or_insert_with(|| {
                let id = StackIndex(self.profile.stacks.len() as u32);
                self.profile.stacks.push(StackNode {
                    parent,
                    frame,
                    line,
                });
                id
            })
    }

    /// The index of line `line` of `file`, adding it if new.
    pub fn intern_line(&mut self, file: &str, line: u32) -> LineIndex {
        let key = SourceLine {
            file: file.to_owned(),
            line,
        };
        intern(
            &mut self.line_ids,
            &mut self.profile.source_lines,
            key,
            LineIndex,
        )
    }

    /// The stack of `frames` (root first); `None` for an empty slice.
    pub fn intern_stack_path(&mut self, frames: &[FrameIndex]) -> Option<StackIndex> {
        frames
            .iter()
            .fold(None, |parent, &f| Some(self.intern_stack(parent, f)))
    }

    /// The index (in [`Profile::threads`]) of thread `tid`, adding it if new. A non-empty
    /// `name` replaces the thread's earlier name.
    pub fn thread(&mut self, tid: u32, name: &str) -> usize {
        let index = *self.thread_ids.entry(tid).or_insert_with(|| {
            self.profile.threads.push(ThreadProfile {
                tid,
                ..ThreadProfile::default()
            });
            self.call_ids.push(HashMap::new());
            self.profile.threads.len() - 1
        });
        if !name.is_empty() {
            self.profile.threads[index].name = name.to_owned();
        }
        index
    }

    /// The frames interned so far.
    pub fn frames(&self) -> &[Frame] {
        &self.profile.frames
    }

    /// Sets the exact counts (count mode) of thread `thread`.
    pub fn add_counts(&mut self, thread: usize, counts: crate::model::ThreadCounts) {
        self.profile.threads[thread].counts = Some(counts);
    }

    /// Appends a sample to thread `thread` (an index returned by [`ProfileBuilder::thread`]).
    pub fn add_sample(&mut self, thread: usize, sample: Sample) {
        self.profile.threads[thread].samples.push(sample);
    }

    /// Adds `values` to the call-tree node for `path` (root first) of thread `thread`,
    /// creating the nodes along the path with zero values where missing.
    pub fn add_call_path(&mut self, thread: usize, path: &[FrameIndex], values: CallValues) {
        let tree = self.profile.threads[thread]
            .call_tree
            .get_or_insert_with(CallTree::default);
        let ids = &mut self.call_ids[thread];
        let mut parent = None;
        for &frame in path {
            let node = *ids.entry((parent, frame)).or_insert_with(|| {
                tree.nodes.push(CallNode {
                    parent,
                    frame,
                    calls: 0,
                    self_samples: 0,
                    self_cpu_ns: 0,
                    self_wall_ns: 0,
                });
                tree.nodes.len() - 1
            });
            parent = Some(node);
        }
        if let Some(n) = parent {
            let node = &mut tree.nodes[n];
            node.calls = node.calls.saturating_add(values.calls);
            node.self_samples = node.self_samples.saturating_add(values.self_samples);
            node.self_cpu_ns = node.self_cpu_ns.saturating_add(values.self_cpu_ns);
            node.self_wall_ns = node.self_wall_ns.saturating_add(values.self_wall_ns);
        }
    }

    /// Replaces the call tree of thread `thread`.
    pub fn set_call_tree(&mut self, thread: usize, tree: CallTree) {
        self.call_ids[thread].clear();
        self.profile.threads[thread].call_tree = Some(tree);
    }

    /// Adds a note shown to the reader.
    pub fn note(&mut self, note: impl Into<String>) {
        self.profile.notes.push(note.into());
    }

    /// The profile built so far.
    pub fn build(self) -> Profile {
        self.profile
    }
}

/// Splits `Module!Function` into its parts; a name without `!` has no module.
fn split_module(spec: &str) -> (&str, &str) {
    match spec.split_once('!') {
        Some((module, name)) => (name, module),
        None => (spec, ""),
    }
}

/// Interns frames written `Module!Function` (see [`split_module`]) as managed frames.
fn intern_managed_frames(b: &mut ProfileBuilder, frames: &[&str]) -> Vec<FrameIndex> {
    frames
        .iter()
        .map(|f| {
            let (name, module) = split_module(f);
            b.intern_frame(name, module, FrameKind::Managed)
        })
        .collect()
}

impl Profile {
    /// A sampling profile from `(thread name, frames root first, cpu_ns, wall_ns)` rows,
    /// one sample per row: handy in tests and examples.
    ///
    /// A frame written `Module!Function` gets that module. Threads get ids 1, 2, ... in
    /// order of first appearance; each thread's samples are spaced by their wall time; the
    /// sample interval is 1 ms and the duration is the longest thread's time. An empty frame
    /// list makes a sample without a managed stack.
    pub fn from_stacks(rows: &[(&str, Vec<&str>, u64, u64)]) -> Profile {
        let mut b = ProfileBuilder::new(ProfileKind::Sample);
        let mut clock: Vec<u64> = Vec::new();
        for (thread, frames, cpu_ns, wall_ns) in rows {
            let t = thread_by_name(&mut b, thread);
            if clock.len() <= t {
                clock.resize(t + 1, 0);
            }
            let ids = intern_managed_frames(&mut b, frames);
            let stack = b.intern_stack_path(&ids);
            clock[t] = clock[t].saturating_add(*wall_ns);
            b.add_sample(
                t,
                Sample {
                    time_ns: clock[t],
                    stack,
                    cpu_ns: *cpu_ns,
                    wall_ns: *wall_ns,
                    kind: SampleKind::Tick,
                    ..Sample::default()
                },
            );
        }
        let mut p = b.build();
        p.duration_ns = clock.iter().copied().max().unwrap_or(0);
        p
    }

    /// A trace-mode profile from `(thread name, frames root first, values)` rows, each
    /// adding `values` to the node of that call path (see [`ProfileBuilder::add_call_path`]).
    /// Frames and threads are named as in [`Profile::from_stacks`]; the duration is the
    /// largest per-thread sum of self wall time.
    pub fn from_call_paths(rows: &[(&str, Vec<&str>, CallValues)]) -> Profile {
        let mut b = ProfileBuilder::new(ProfileKind::Trace);
        let mut wall: Vec<u64> = Vec::new();
        for (thread, frames, values) in rows {
            let t = thread_by_name(&mut b, thread);
            if wall.len() <= t {
                wall.resize(t + 1, 0);
            }
            wall[t] = wall[t].saturating_add(values.self_wall_ns);
            let ids = intern_managed_frames(&mut b, frames);
            b.add_call_path(t, &ids, *values);
        }
        let mut p = b.build();
        p.duration_ns = wall.iter().copied().max().unwrap_or(0);
        p
    }
}

/// The thread named `name`, numbering new threads 1, 2, ... in order of appearance.
fn thread_by_name(b: &mut ProfileBuilder, name: &str) -> usize {
    if let Some(i) = b.profile.threads.iter().position(|t| t.name == name) {
        return i;
    }
    let tid = b.profile.threads.len() as u32 + 1;
    b.thread(tid, name)
}

/// The index of `value` in `list`, adding it (and its index to `ids`) if new.
fn intern<T: Clone + Eq + std::hash::Hash, I: Copy>(
    ids: &mut HashMap<T, I>,
    list: &mut Vec<T>,
    value: T,
    index: fn(u32) -> I,
) -> I {
    if let Some(&id) = ids.get(&value) {
        return id;
    }
    let id = index(list.len() as u32);
    list.push(value.clone());
    ids.insert(value, id);
    id
}
