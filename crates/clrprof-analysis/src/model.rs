//! The in-memory profile: what the agent measured, with ids resolved to names.
//!
//! A [`Profile`] owns a table of [`Frame`]s (functions), a prefix tree of stacks
//! ([`StackNode`]; a stack is named by its leaf node) and one [`ThreadProfile`] per thread.
//! A thread carries time-ordered [`Sample`]s (sampling mode) and, in trace mode, an exact
//! calling context tree ([`CallTree`]).
//!
//! The model is the same for every kind of profile: a sample is a stack with weights (CPU
//! time, wall time, a sample count, allocated bytes and objects), and a [`Metric`] picks the
//! weight a view shows. An allocation profile ([`ProfileKind::Alloc`]) has one sample per
//! allocating stack and type, the type being a [`FrameKind::Type`] frame at the leaf.
//!
//! [`Metric`]: crate::Metric
//!
//! Every index in the model points backwards: a stack node's parent and a call-tree node's
//! parent have smaller indices than the node itself. [`Profile::validate`] checks this (and
//! that every index is in range); the computations in this crate rely on it and call it
//! first, so a malformed profile gives an [`Error::InvalidProfile`] rather than a panic.
//! [`ProfileBuilder`](crate::ProfileBuilder) builds profiles that are valid by construction.

use std::fmt;

use serde::Serialize;

use crate::Error;
use crate::sampling::SamplingInfo;

/// What a profile holds: CPU samples, exact call trees, calls counted in the IL, or
/// allocations (the recording's mode, `clrprof_trace::config::Mode`, is another concept: a
/// recording in sample mode also gives an allocation profile). Named `mode` in every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileKind {
    /// Periodic stack samples; all numbers are estimates from sampling.
    Sample,
    /// An exact calling context tree per thread (exact call counts, sampled time).
    Trace,
    /// Periodic stack samples, plus exact calls per function and per call site from
    /// counters in the IL ([`ThreadProfile::counts`]).
    Count,
    /// Allocations: samples weighed by the bytes and objects allocated at a stack, the
    /// allocated type as the leaf frame.
    Alloc,
}

impl ProfileKind {
    /// The lowercase name used in reports (`sample`, `trace`, `count`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileKind::Sample => "sample",
            ProfileKind::Trace => "trace",
            ProfileKind::Count => "count",
            ProfileKind::Alloc => "alloc",
        }
    }
}

impl fmt::Display for ProfileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Index of a [`Frame`] in [`Profile::frames`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameIndex(pub u32);

impl FrameIndex {
    /// The index as a `usize`, for indexing [`Profile::frames`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a [`StackNode`] in [`Profile::stacks`]; it names the stack ending at that node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackIndex(pub u32);

impl StackIndex {
    /// The index as a `usize`, for indexing [`Profile::stacks`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What kind of code a frame stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameKind {
    /// A managed (.NET) method.
    Managed,
    /// Managed code generated at run time, without metadata: a `DynamicMethod` (compiled
    /// expressions and regular expressions, serializers) or a runtime IL stub, named as the
    /// runtime's stack traces do (`DynamicClass.dyn_17(long)`, `ILStubClass.IL_STUB_PInvoke(...)`).
    Generated,
    /// A native function (runtime, libraries, the OS).
    Native,
    /// A marker at the root of a stack that ends early: the frames the unwinder could not
    /// reach (the name says why).
    Truncated,
    /// The type allocated, at the leaf of an allocation stack (`[byte[]]`).
    Type,
    /// `[await]`: between an async method and the continuation of what it awaits (async call
    /// chains: the frame above it is a logical caller, not a frame of the thread's stack).
    Await,
}

/// How a frame is coloured in flame graphs: what kind of code it is, with the runtime's own
/// native code (the VM, its garbage collector and its JIT compiler) told apart from other
/// native code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameCategory {
    /// A managed method.
    Managed,
    /// Native code of the program, its libraries or the OS.
    Native,
    /// The runtime's native code (`libcoreclr.so`, `libclrgc.so`): the VM and the GC.
    Runtime,
    /// The JIT compiler (`libclrjit.so`).
    Jit,
    /// A type allocated (allocation profiles).
    Type,
    /// Not code: where a stack ended early, a thread, samples without a stack.
    Marker,
    /// Managed code generated at run time (dynamic methods, IL stubs).
    Generated,
}

impl FrameCategory {
    /// Every category, in legend order.
    pub const ALL: [FrameCategory; 7] = [
        FrameCategory::Managed,
        FrameCategory::Generated,
        FrameCategory::Native,
        FrameCategory::Runtime,
        FrameCategory::Jit,
        FrameCategory::Type,
        FrameCategory::Marker,
    ];

    /// The category's name, as in legends (`managed`, `native`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FrameCategory::Managed => "managed",
            FrameCategory::Native => "native",
            FrameCategory::Runtime => "runtime",
            FrameCategory::Jit => "jit",
            FrameCategory::Type => "type",
            FrameCategory::Marker => "marker",
            FrameCategory::Generated => "generated",
        }
    }

    /// The base colour of the category's frames (`#rrggbb`); frames vary around it.
    pub fn colour(self) -> [u8; 3] {
        match self {
            FrameCategory::Managed => [0x4f, 0x9d, 0xd9],
            FrameCategory::Native => [0xe8, 0x9a, 0x3c],
            FrameCategory::Runtime => [0xd9, 0x5c, 0x5c],
            FrameCategory::Jit => [0xa0, 0x6c, 0xd5],
            FrameCategory::Type => [0x5c, 0xb8, 0x6a],
            FrameCategory::Marker => [0xa8, 0xa8, 0xa8],
            FrameCategory::Generated => [0x3c, 0xb8, 0xb0],
        }
    }

    /// A frame's colour: the category's, varied by a hash of the name so that neighbours
    /// stay apart and a function keeps its colour from one report to the next.
    pub fn colour_for(self, name: &str) -> [u8; 3] {
        // FNV-1a: small and stable across releases.
        let mut h: u32 = 0x811c_9dc5;
        for b in name.bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        let shift = (h % 41) as i32 - 20;
        self.colour()
            .map(|c| (i32::from(c) + shift).clamp(0, 255) as u8)
    }
}

/// Libraries whose native code is the runtime's own: the VM and its garbage collectors.
const RUNTIME_LIBRARIES: [&str; 4] = [
    "libcoreclr.so",
    "libclrgc.so",
    "libclrgcexp.so",
    "coreclr.dll",
];
/// Libraries of the JIT compiler.
const JIT_LIBRARIES: [&str; 2] = ["libclrjit.so", "clrjit.dll"];

/// A function as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Display name, e.g. `MyApp.Parser.ParseLine(string, int)`.
    pub name: String,
    /// The module it lives in, e.g. `MyApp.dll`; empty when unknown.
    pub module: String,
    /// Managed, native or a truncation marker.
    pub kind: FrameKind,
}

impl Frame {
    /// How the frame is coloured: its kind, and for native code whether it is the runtime's.
    pub fn category(&self) -> FrameCategory {
        match self.kind {
            FrameKind::Managed => FrameCategory::Managed,
            FrameKind::Generated => FrameCategory::Generated,
            FrameKind::Native if RUNTIME_LIBRARIES.contains(&self.module.as_str()) => {
                FrameCategory::Runtime
            }
            FrameKind::Native if JIT_LIBRARIES.contains(&self.module.as_str()) => {
                FrameCategory::Jit
            }
            FrameKind::Native => FrameCategory::Native,
            FrameKind::Type => FrameCategory::Type,
            FrameKind::Truncated | FrameKind::Await => FrameCategory::Marker,
        }
    }
}

/// One node of the stack prefix tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StackNode {
    /// The caller's node; `None` for a stack's root (outermost) frame.
    pub parent: Option<StackIndex>,
    /// The function at this depth.
    pub frame: FrameIndex,
    /// The source line the function was at (the sampled instruction's for the innermost
    /// frame, the call's for a caller), where the profile was built with lines and the
    /// module's symbols tell it.
    pub line: Option<LineIndex>,
}

/// Index into [`Profile::source_lines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineIndex(pub u32);

impl LineIndex {
    /// As a `usize` index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A line of a source file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceLine {
    /// The file, as the symbols name it (after any `--source-root` remapping).
    pub file: String,
    /// 1-based.
    pub line: u32,
}

/// What a [`Sample`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SampleKind {
    /// A tick standing for both CPU and wall time (trace mode, and sample mode before format
    /// 1.2).
    #[default]
    Tick,
    /// A CPU sample: taken where the CPU was spent, weighed with CPU time only.
    Cpu,
    /// A wall-clock sample: where the thread was (running or waiting), weighed with wall
    /// time only.
    Wall,
    /// Allocations at one stack: weighed with the bytes and objects allocated there.
    Alloc,
}

impl SampleKind {
    /// How many samples it counts as for the `samples` metric: wall-clock samples count for
    /// time only.
    pub fn count(self) -> u64 {
        match self {
            SampleKind::Tick | SampleKind::Cpu => 1,
            SampleKind::Wall | SampleKind::Alloc => 0,
        }
    }
}

/// One sample of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When the sample was taken, in nanoseconds since the session started.
    pub time_ns: u64,
    /// The stack at that moment; `None` when none is known.
    pub stack: Option<StackIndex>,
    /// CPU time this sample stands for.
    pub cpu_ns: u64,
    /// The part of `cpu_ns` the thread spent in the kernel, as far as the samples tell.
    pub sys_ns: u64,
    /// The part of `cpu_ns` whose samples tell whether the thread was in the kernel (a perf
    /// event's; a CPU-time timer's do not): what `sys_ns` is a part of.
    pub mode_known_cpu_ns: u64,
    /// Wall time this sample stands for (it covers `[time_ns - wall_ns, time_ns]`).
    pub wall_ns: u64,
    /// Bytes allocated this sample stands for (allocation samples).
    pub bytes: u64,
    /// Objects allocated this sample stands for (allocation samples; 0 when unknown).
    pub objects: u64,
    /// What kind of sample it is.
    pub kind: SampleKind,
    /// How many samples it stands for: 1, or more when the samples of a thread with the same
    /// stack and kind were summed as a large trace was read (then `time_ns` is the latest
    /// one's and `cpu_ns`, `wall_ns` are their sums).
    pub count: u64,
}

impl Default for Sample {
    /// One sample of nothing: a start for struct update syntax (`count` is 1, as for every
    /// sample taken once).
    fn default() -> Self {
        Sample {
            time_ns: 0,
            stack: None,
            cpu_ns: 0,
            sys_ns: 0,
            mode_known_cpu_ns: 0,
            wall_ns: 0,
            bytes: 0,
            objects: 0,
            kind: SampleKind::default(),
            count: 1,
        }
    }
}

/// One node of a thread's calling context tree (trace mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallNode {
    /// Index of the caller's node in [`CallTree::nodes`]; `None` for a root.
    pub parent: Option<usize>,
    /// The function called.
    pub frame: FrameIndex,
    /// Exact number of calls along this call path.
    pub calls: u64,
    /// Samples whose innermost frame was this node.
    pub self_samples: u64,
    /// CPU time sampled with this node innermost.
    pub self_cpu_ns: u64,
    /// Wall time sampled with this node innermost.
    pub self_wall_ns: u64,
}

/// A thread's calling context tree: one node per distinct call path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTree {
    /// The nodes; a node's parent always comes before it.
    pub nodes: Vec<CallNode>,
}

/// A call-tree node as found in a recording, with ids instead of indices; see
/// [`CallTree::from_records`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallNodeRecord {
    /// The node's id, unique within its thread.
    pub id: u64,
    /// The parent's id; `None` for a root.
    pub parent: Option<u64>,
    /// The function called.
    pub frame: FrameIndex,
    /// Exact number of calls along this call path.
    pub calls: u64,
    /// Samples whose innermost frame was this node.
    pub self_samples: u64,
    /// CPU time sampled with this node innermost.
    pub self_cpu_ns: u64,
    /// Wall time sampled with this node innermost.
    pub self_wall_ns: u64,
}

impl CallTree {
    /// Builds a tree from records in any order, placing every parent before its children.
    ///
    /// A record whose parent id never appears (for example because the recording was cut
    /// short) becomes a root; so does each record on a parent cycle, which a valid recording
    /// never has. A duplicated id keeps its first record and counts the others in the
    /// returned number of dropped records.
    pub fn from_records(records: &[CallNodeRecord]) -> (CallTree, usize) {
        use std::collections::HashMap;
        use std::collections::hash_map::Entry;

        let mut by_id: HashMap<u64, usize> = HashMap::with_capacity(records.len());
        let mut dropped = 0;
        for (i, r) in records.iter().enumerate() {
            match by_id.entry(r.id) {
                Entry::Occupied(_) => dropped += 1,
                Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }

        // The records kept, in input order.
        let kept: Vec<usize> = {
            let mut v: Vec<usize> = by_id.values().copied().collect();
            v.sort_unstable();
            v
        };
        // The record index of a record's parent, if that parent exists.
        let parent_of = |i: usize| -> Option<usize> {
            records[i]
                .parent
                .and_then(|p| by_id.get(&p).copied())
                .filter(|&p| p != i)
        };

        // Depth-first placement with explicit state: 0 unvisited, 1 in progress, 2 placed.
        let mut state = vec![0u8; records.len()];
        let mut new_index = vec![usize::MAX; records.len()];
        let mut nodes = Vec::with_capacity(kept.len());
        for &start in &kept {
            if state[start] == 2 {
                continue;
            }
            // Walk up to the first placed (or missing) ancestor, remembering the chain.
            let mut chain = vec![start];
            state[start] = 1;
            let mut cur = start;
            while let Some(p) = parent_of(cur) {
                match state[p] {
                    0 => {
                        state[p] = 1;
                        chain.push(p);
                        cur = p;
                    }
                    // Placed: attach below it. In progress: a cycle; cut it here.
                    _ => break,
                }
            }
            for &i in chain.iter().rev() {
                let r = &records[i];
                let parent = parent_of(i)
                    .filter(|&p| state[p] == 2)
                    .map(|p| new_index[p]);
                new_index[i] = nodes.len();
                state[i] = 2;
                nodes.push(CallNode {
                    parent,
                    frame: r.frame,
                    calls: r.calls,
                    self_samples: r.self_samples,
                    self_cpu_ns: r.self_cpu_ns,
                    self_wall_ns: r.self_wall_ns,
                });
            }
        }
        (CallTree { nodes }, dropped)
    }
}

/// Everything recorded for one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadProfile {
    /// OS thread id.
    pub tid: u32,
    /// Thread name; empty when the thread had none.
    pub name: String,
    /// Samples in the order they were taken.
    pub samples: Vec<Sample>,
    /// The exact calling context tree (trace mode), when the agent wrote one.
    pub call_tree: Option<CallTree>,
    /// Exact calls per function and call site (count mode), when the thread counted any.
    pub counts: Option<ThreadCounts>,
    /// One of the runtime's service threads (finalizer, tiered compilation, GC, debugger,
    /// signal handler, diagnostics, ...), rather than a thread of the program: see
    /// `threads::mark_service_threads`.
    pub service: bool,
}

impl ThreadProfile {
    /// `name (tid)`, or `thread tid` for an unnamed thread.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("thread {}", self.tid)
        } else {
            format!("{} ({})", self.name, self.tid)
        }
    }
}

/// A whole profile: frames, stacks and threads, plus facts about the recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// What the profile holds.
    pub kind: ProfileKind,
    /// A name for viewers' title bars (typically the profiled program); may be empty.
    pub name: String,
    /// Process id of the profiled program; 0 when unknown.
    pub pid: u32,
    /// The sampling period in nanoseconds.
    pub sample_interval_ns: u64,
    /// Wall-clock time of the session's start, in nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// How long the recording lasted.
    pub duration_ns: u64,
    /// The function table.
    pub frames: Vec<Frame>,
    /// The stack prefix tree.
    pub stacks: Vec<StackNode>,
    /// The source lines stack nodes name (empty unless the profile was built with lines).
    pub source_lines: Vec<SourceLine>,
    /// One entry per thread.
    pub threads: Vec<ThreadProfile>,
    /// Remarks for the reader (dropped samples, truncated stacks, ...), shown in reports.
    pub notes: Vec<String>,
    /// How sample mode sampled (traces of format 1.2 and later).
    pub sampling: Option<SamplingInfo>,
    /// How the program ended, as `record` says it (`exit 3`, `killed by signal 6 (SIGABRT)`;
    /// see [`crate::ending::program_end`]), when the trace says.
    pub ended: Option<String>,
    /// Samples the recorder dropped before they were written (in no thread's samples).
    pub samples_dropped: u64,
}

impl Profile {
    /// The profiles of several processes as one, each process a frame at the root of its
    /// stacks and call trees (`label`, e.g. `[process 4242: dotnet app.dll]`), so that a
    /// flame graph of a process tree shows each process as a tower of its own. Threads stay
    /// apart (each keeps its process's label in its name); the kind is the first profile's.
    pub fn merge_processes(parts: Vec<(String, Profile)>) -> Profile {
        let kind = parts.first().map_or(ProfileKind::Sample, |(_, p)| p.kind);
        let mut merged = Profile::new(kind);
        merged.name = "process tree".into();
        for (label, p) in parts {
            let frame_base = merged.frames.len() as u32;
            merged.frames.extend(p.frames.iter().cloned());
            let process_frame = FrameIndex(merged.frames.len() as u32);
            merged.frames.push(Frame {
                name: label.clone(),
                module: String::new(),
                kind: FrameKind::Truncated,
            });
            let root = StackIndex(merged.stacks.len() as u32);
            merged.stacks.push(StackNode {
                parent: None,
                frame: process_frame,
                line: None,
            });
            // Every stack of the part, one index further for each node before it.
            let stack_base = merged.stacks.len() as u32;
            let line_base = merged.source_lines.len() as u32;
            merged.source_lines.extend(p.source_lines.iter().cloned());
            for node in &p.stacks {
                merged.stacks.push(StackNode {
                    parent: Some(node.parent.map_or(root, |s| StackIndex(s.0 + stack_base))),
                    frame: FrameIndex(node.frame.0 + frame_base),
                    line: node.line.map(|l| LineIndex(l.0 + line_base)),
                });
            }
            let frame = |f: FrameIndex| FrameIndex(f.0 + frame_base);
            for t in p.threads {
                let samples = t
                    .samples
                    .into_iter()
                    .map(|s| Sample {
                        stack: Some(s.stack.map_or(root, |s| StackIndex(s.0 + stack_base))),
                        ..s
                    })
                    .collect();
                let call_tree = t.call_tree.map(|tree| {
                    let mut nodes = Vec::with_capacity(tree.nodes.len() + 1);
                    nodes.push(CallNode {
                        parent: None,
                        frame: process_frame,
                        calls: 0,
                        self_samples: 0,
                        self_cpu_ns: 0,
                        self_wall_ns: 0,
                    });
                    nodes.extend(tree.nodes.into_iter().map(|n| CallNode {
                        parent: Some(n.parent.map_or(0, |p| p + 1)),
                        frame: frame(n.frame),
                        ..n
                    }));
                    CallTree { nodes }
                });
                let counts = t.counts.map(|c| ThreadCounts {
                    functions: c
                        .functions
                        .into_iter()
                        .map(|(f, n)| (frame(f), n))
                        .collect(),
                    sites: c
                        .sites
                        .into_iter()
                        .map(|s| SiteCalls {
                            caller: frame(s.caller),
                            callee: frame(s.callee),
                            ..s
                        })
                        .collect(),
                });
                merged.threads.push(ThreadProfile {
                    tid: t.tid,
                    name: format!("{label} {}", t.name).trim_end().to_string(),
                    samples,
                    call_tree,
                    counts,
                    service: t.service,
                });
            }
            merged
                .notes
                .extend(p.notes.into_iter().map(|n| format!("{label}: {n}")));
            merged.samples_dropped += p.samples_dropped;
            merged.duration_ns = merged.duration_ns.max(p.duration_ns);
            if merged.start_unix_ns == 0
                || (p.start_unix_ns != 0 && p.start_unix_ns < merged.start_unix_ns)
            {
                merged.start_unix_ns = p.start_unix_ns;
            }
            merged.sample_interval_ns = p.sample_interval_ns;
        }
        merged
    }
}

impl Profile {
    /// An empty profile of the given kind with a 1 ms sample interval.
    pub fn new(kind: ProfileKind) -> Profile {
        Profile {
            kind,
            name: String::new(),
            pid: 0,
            sample_interval_ns: 1_000_000,
            start_unix_ns: 0,
            duration_ns: 0,
            frames: Vec::new(),
            stacks: Vec::new(),
            source_lines: Vec::new(),
            threads: Vec::new(),
            notes: Vec::new(),
            sampling: None,
            ended: None,
            samples_dropped: 0,
        }
    }

    /// The frame at `index`. Panics if it is out of range (see [`Profile::validate`]).
    pub fn frame(&self, index: FrameIndex) -> &Frame {
        &self.frames[index.index()]
    }

    /// The frames of a stack from root (outermost) to leaf (innermost).
    pub fn stack_frames(&self, stack: StackIndex) -> Vec<FrameIndex> {
        let mut frames = Vec::new();
        let mut cur = Some(stack);
        while let Some(s) = cur {
            let node = &self.stacks[s.index()];
            frames.push(node.frame);
            cur = node.parent;
        }
        frames.reverse();
        frames
    }

    /// The frames of a stack from root to leaf, each with the line it was at (if known).
    pub fn stack_places(&self, stack: StackIndex) -> Vec<(FrameIndex, Option<LineIndex>)> {
        let mut places = Vec::new();
        let mut cur = Some(stack);
        while let Some(s) = cur {
            let node = &self.stacks[s.index()];
            places.push((node.frame, node.line));
            cur = node.parent;
        }
        places.reverse();
        places
    }

    /// The source line at `index`. Panics if it is out of range (see [`Profile::validate`]).
    pub fn source_line(&self, index: LineIndex) -> &SourceLine {
        &self.source_lines[index.index()]
    }

    /// The frames of the path to call-tree node `node`, root first.
    pub fn call_path(&self, tree: &CallTree, node: usize) -> Vec<FrameIndex> {
        let mut frames = Vec::new();
        let mut cur = Some(node);
        while let Some(n) = cur {
            frames.push(tree.nodes[n].frame);
            cur = tree.nodes[n].parent;
        }
        frames.reverse();
        frames
    }

    /// Checks that every index is in range and every parent precedes its child.
    pub fn validate(&self) -> Result<(), Error> {
        let frames = self.frames.len();
        let bad = |what: String| Err(Error::InvalidProfile(what));
        if frames > u32::MAX as usize || self.stacks.len() > u32::MAX as usize {
            return bad("more than 2^32 frames or stacks".into());
        }
        for (i, s) in self.stacks.iter().enumerate() {
            if s.frame.index() >= frames {
                return bad(format!("stack {i} names frame {} of {frames}", s.frame.0));
            }
            if let Some(l) = s.line
                && l.index() >= self.source_lines.len()
            {
                return bad(format!("stack {i} names source line {}", l.0));
            }
            if let Some(p) = s.parent
                && p.index() >= i
            {
                return bad(format!("stack {i} has parent {} (not before it)", p.0));
            }
        }
        for t in &self.threads {
            for s in &t.samples {
                if let Some(st) = s.stack
                    && st.index() >= self.stacks.len()
                {
                    return bad(format!("a sample of thread {} names stack {}", t.tid, st.0));
                }
            }
            if let Some(c) = &t.counts {
                let frames_of_sites = c.sites.iter().flat_map(|s| [s.caller, s.callee]);
                let named = c.functions.iter().map(|f| f.0).chain(frames_of_sites);
                if let Some(f) = named.into_iter().find(|f| f.index() >= frames) {
                    return bad(format!("the counts of thread {} name frame {}", t.tid, f.0));
                }
            }
            if let Some(tree) = &t.call_tree {
                for (i, n) in tree.nodes.iter().enumerate() {
                    if n.frame.index() >= frames {
                        return bad(format!(
                            "call-tree node {i} of thread {} names frame {}",
                            t.tid, n.frame.0
                        ));
                    }
                    if let Some(p) = n.parent
                        && p >= i
                    {
                        return bad(format!(
                            "call-tree node {i} of thread {} has parent {p} (not before it)",
                            t.tid
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The calls one call site made (count mode, see `counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SiteCalls {
    /// The function the call site is in.
    pub caller: FrameIndex,
    /// The method the call instruction names.
    pub callee: FrameIndex,
    /// IL offset of the call instruction in the caller's original body.
    pub il_offset: u32,
    /// Calls made there.
    pub calls: u64,
}

/// What count mode counted on one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadCounts {
    /// Entries of each counted function, in frame order.
    pub functions: Vec<(FrameIndex, u64)>,
    /// Calls of each call site, by caller and IL offset.
    pub sites: Vec<SiteCalls>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_processes_each_get_a_frame_at_the_root() {
        let a = Profile::from_stacks(&[("main", vec!["A.Main()", "A.Work()"], 3, 3)]);
        let b = Profile::from_stacks(&[
            ("main", vec!["B.Main()"], 2, 2),
            ("worker", vec!["B.Main()", "B.Loop()"], 5, 5),
        ]);
        let m = Profile::merge_processes(vec![
            ("[process 1: a]".into(), a),
            ("[process 2: b]".into(), b),
        ]);
        m.validate().unwrap();
        assert_eq!(m.threads.len(), 3);
        let mut paths: Vec<Vec<String>> = m
            .threads
            .iter()
            .flat_map(|t| t.samples.iter())
            .map(|s| {
                m.stack_frames(s.stack.unwrap())
                    .into_iter()
                    .map(|f| m.frame(f).name.clone())
                    .collect()
            })
            .collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                vec!["[process 1: a]", "A.Main()", "A.Work()"],
                vec!["[process 2: b]", "B.Main()"],
                vec!["[process 2: b]", "B.Main()", "B.Loop()"],
            ]
        );
        assert_eq!(m.threads[1].name, "[process 2: b] main");
        assert_eq!(m.threads[2].name, "[process 2: b] worker");
    }
}
