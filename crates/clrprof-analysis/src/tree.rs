//! The merged call tree: every selected stack (or call path) merged into one tree.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::AddAssign;

use serde::Serialize;

use crate::counts::CallCounts;
use crate::model::{CallNode, FrameIndex, FrameKind, Profile, ProfileKind, Sample, StackIndex};
use crate::query::{Metric, NodeMark, Selection};

/// Name shown for samples taken while a thread had no managed frames.
pub const NO_STACK_NAME: &str = "[no managed frames]";

/// Name of the merged tree's root.
pub const ROOT_NAME: &str = "[all]";

/// The measured values of a stack, a node or a function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Values {
    /// Number of samples.
    pub samples: u64,
    /// CPU time in nanoseconds.
    pub cpu_ns: u64,
    /// The part of it spent in the kernel, among the samples that tell.
    pub sys_ns: u64,
    /// The CPU time of the samples that tell whether they were in the kernel (perf events'):
    /// what `sys_ns` is a part of.
    pub mode_known_cpu_ns: u64,
    /// Wall time in nanoseconds.
    pub wall_ns: u64,
    /// Calls counted as weight (trace mode; see [`TreeNode::calls`] for the exact count).
    pub calls: u64,
    /// Bytes allocated (allocation profiles).
    pub bytes: u64,
    /// Objects allocated (allocation profiles).
    pub objects: u64,
}

impl Values {
    /// The value of `metric`.
    pub fn get(&self, metric: Metric) -> u64 {
        match metric {
            Metric::Cpu => self.cpu_ns,
            Metric::Sys => self.sys_ns,
            Metric::Wall => self.wall_ns,
            Metric::Samples => self.samples,
            Metric::Calls => self.calls,
            Metric::Bytes => self.bytes,
            Metric::Objects => self.objects,
        }
    }

    /// The values a sample stands for.
    pub fn of_sample(s: &Sample) -> Values {
        Values {
            samples: s.kind.count().saturating_mul(s.count),
            cpu_ns: s.cpu_ns,
            sys_ns: s.sys_ns,
            mode_known_cpu_ns: s.mode_known_cpu_ns,
            wall_ns: s.wall_ns,
            calls: 0,
            bytes: s.bytes,
            objects: s.objects,
        }
    }

    /// The values of a call-tree node itself (its self time and its calls).
    pub fn of_call_node(n: &CallNode) -> Values {
        Values {
            samples: n.self_samples,
            cpu_ns: n.self_cpu_ns,
            wall_ns: n.self_wall_ns,
            calls: n.calls,
            ..Values::default()
        }
    }

    /// Whether every value is zero.
    pub fn is_zero(&self) -> bool {
        *self == Values::default()
    }
}

impl AddAssign for Values {
    fn add_assign(&mut self, rhs: Values) {
        // Saturating: a corrupt recording must not make the report panic or wrap.
        self.samples = self.samples.saturating_add(rhs.samples);
        self.cpu_ns = self.cpu_ns.saturating_add(rhs.cpu_ns);
        self.sys_ns = self.sys_ns.saturating_add(rhs.sys_ns);
        self.mode_known_cpu_ns = self.mode_known_cpu_ns.saturating_add(rhs.mode_known_cpu_ns);
        self.wall_ns = self.wall_ns.saturating_add(rhs.wall_ns);
        self.calls = self.calls.saturating_add(rhs.calls);
        self.bytes = self.bytes.saturating_add(rhs.bytes);
        self.objects = self.objects.saturating_add(rhs.objects);
    }
}

/// What a merged-tree node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Label {
    /// The tree's root, above every stack.
    Root,
    /// A thread (index into [`Profile::threads`]), when the tree is split per thread.
    Thread(usize),
    /// A function.
    Frame(FrameIndex),
    /// Samples taken while the thread had no managed frames.
    NoStack,
}

impl Label {
    /// The name to show for this label.
    pub fn name<'p>(&self, profile: &'p Profile) -> Cow<'p, str> {
        match *self {
            Label::Root => Cow::Borrowed(ROOT_NAME),
            Label::Thread(t) => Cow::Owned(profile.threads[t].label()),
            Label::Frame(f) => Cow::Borrowed(profile.frame(f).name.as_str()),
            Label::NoStack => Cow::Borrowed(NO_STACK_NAME),
        }
    }

    /// The module of a function label; empty for the others.
    pub fn module<'p>(&self, profile: &'p Profile) -> &'p str {
        match *self {
            Label::Frame(f) => profile.frame(f).module.as_str(),
            _ => "",
        }
    }

    /// The module as a reader sees it: marked `(generated)` for code generated at run time.
    pub fn module_shown<'p>(&self, profile: &'p Profile) -> Cow<'p, str> {
        match *self {
            Label::Frame(f) if profile.frame(f).kind == FrameKind::Generated => {
                Cow::Owned(format!("{} (generated)", profile.frame(f).module))
            }
            _ => Cow::Borrowed(self.module(profile)),
        }
    }

    /// Whether this label is a function (a frame or [`Label::NoStack`]), as opposed to the
    /// root or a thread.
    pub fn is_function(&self) -> bool {
        matches!(self, Label::Frame(_) | Label::NoStack)
    }
}

/// One node of a [`MergedTree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// What the node stands for.
    pub label: Label,
    /// The parent node; `None` only for the root.
    pub parent: Option<usize>,
    /// Child nodes, heaviest first (by the metric the tree was built for).
    pub children: Vec<usize>,
    /// Values with this node innermost.
    pub self_values: Values,
    /// Values of this node and everything below it.
    pub total_values: Values,
    /// Exact calls along this path (from call trees; 0 for paths only seen in samples). In
    /// count mode: the calls the parent function made to this one (every node with the same
    /// caller and callee shows the same count), or for a function at the top of a stack its
    /// calls from anywhere.
    pub calls: u64,
}

/// Per-thread sums, in [`MergedTree::threads`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadTotal {
    /// Index into [`Profile::threads`].
    pub thread: usize,
    /// Everything the thread contributed.
    pub values: Values,
    /// Whether the thread's data came from its exact call tree (rather than its samples).
    pub from_call_tree: bool,
}

/// The selected stacks of a profile merged into one tree rooted at `nodes[0]`.
///
/// A thread with a call tree contributes its call tree (exact calls, sampled self time);
/// a thread without one contributes its samples. A node's parent always has a smaller
/// index than the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedTree {
    /// The nodes; `nodes[MergedTree::ROOT]` is the root.
    pub nodes: Vec<TreeNode>,
    /// One entry per selected thread, in profile order.
    pub threads: Vec<ThreadTotal>,
    /// The metric the children are ordered by.
    pub metric: Metric,
}

impl MergedTree {
    /// Index of the root node.
    pub const ROOT: usize = 0;

    /// Merges the threads and stacks that `selection` keeps. With `per_thread`, each thread
    /// gets its own [`Label::Thread`] node below the root. Children are ordered by `metric`,
    /// heaviest first, then by name.
    pub fn build(
        profile: &Profile,
        selection: &Selection,
        metric: Metric,
        per_thread: bool,
    ) -> MergedTree {
        let mut b = TreeBuild {
            nodes: vec![TreeNode {
                label: Label::Root,
                parent: None,
                children: Vec::new(),
                self_values: Values::default(),
                total_values: Values::default(),
                calls: 0,
            }],
            index: HashMap::new(),
        };
        let mut threads = Vec::with_capacity(selection.threads.len());
        let mut stack_memo: HashMap<StackIndex, usize> = HashMap::new();

        for &t in &selection.threads {
            let thread = &profile.threads[t];
            let base = if per_thread {
                stack_memo.clear();
                b.child(MergedTree::ROOT, Label::Thread(t))
            } else {
                MergedTree::ROOT
            };
            let mut sum = Values::default();
            if let Some(tree) = &thread.call_tree {
                let marks = selection.call_tree_marks(tree);
                let mut map = vec![usize::MAX; tree.nodes.len()];
                for (i, node) in tree.nodes.iter().enumerate() {
                    if marks[i] == NodeMark::Dropped {
                        continue;
                    }
                    let parent = node.parent.map_or(base, |p| map[p]);
                    let m = b.child(parent, Label::Frame(node.frame));
                    map[i] = m;
                    b.nodes[m].calls = b.nodes[m].calls.saturating_add(node.calls);
                    if marks[i] == NodeMark::Counted {
                        let v = Values::of_call_node(node);
                        b.nodes[m].self_values += v;
                        sum += v;
                    }
                }
            } else {
                // Sum the samples per stack first: far fewer stacks than samples.
                let stacks = selected_samples_by_stack(thread, selection);
                for (stack, v) in stacks {
                    let node = match stack {
                        None => b.child(base, Label::NoStack),
                        Some(s) => b.stack_node(profile, &mut stack_memo, base, s),
                    };
                    b.nodes[node].self_values += v;
                    sum += v;
                }
            }
            threads.push(ThreadTotal {
                thread: t,
                values: sum,
                from_call_tree: thread.call_tree.is_some(),
            });
        }

        let mut nodes = b.nodes;
        if profile.kind == ProfileKind::Count {
            set_counted_calls(profile, &mut nodes, &threads, per_thread);
        }
        for n in nodes.iter_mut() {
            n.total_values = n.self_values;
        }
        for i in (1..nodes.len()).rev() {
            let total = nodes[i].total_values;
            if let Some(p) = nodes[i].parent {
                nodes[p].total_values += total;
            }
        }
        for i in 0..nodes.len() {
            let mut children = std::mem::take(&mut nodes[i].children);
            children.sort_by(|&a, &b| {
                let (na, nb) = (&nodes[a], &nodes[b]);
                nb.total_values
                    .get(metric)
                    .cmp(&na.total_values.get(metric))
                    .then_with(|| na.label.name(profile).cmp(&nb.label.name(profile)))
                    .then_with(|| na.label.cmp(&nb.label))
            });
            nodes[i].children = children;
        }
        MergedTree {
            nodes,
            threads,
            metric,
        }
    }

    /// The root's totals: everything selected.
    pub fn total(&self) -> Values {
        self.nodes[MergedTree::ROOT].total_values
    }

    /// The nodes from the root's child down to `node` (the root itself left out).
    pub fn path(&self, node: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut cur = node;
        while let Some(p) = self.nodes[cur].parent {
            path.push(cur);
            cur = p;
        }
        path.reverse();
        path
    }

    /// Nodes in depth-first order, children heaviest first, as `(node, depth)` with the
    /// root's children at depth 0; the root itself is left out. `descend` decides whether
    /// a node's children are visited.
    pub fn preorder(&self, mut descend: impl FnMut(usize) -> bool) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut stack: Vec<(usize, usize)> = self.nodes[MergedTree::ROOT]
            .children
            .iter()
            .rev()
            .map(|&c| (c, 0))
            .collect();
        while let Some((n, depth)) = stack.pop() {
            out.push((n, depth));
            if descend(n) {
                stack.extend(self.nodes[n].children.iter().rev().map(|&c| (c, depth + 1)));
            }
        }
        out
    }
}

struct TreeBuild {
    nodes: Vec<TreeNode>,
    index: HashMap<(usize, Label), usize>,
}

impl TreeBuild {
    /// The child of `parent` with `label`, created if missing.
    fn child(&mut self, parent: usize, label: Label) -> usize {
        if let Some(&c) = self.index.get(&(parent, label)) {
            return c;
        }
        let c = self.nodes.len();
        self.nodes.push(TreeNode {
            label,
            parent: Some(parent),
            children: Vec::new(),
            self_values: Values::default(),
            total_values: Values::default(),
            calls: 0,
        });
        self.nodes[parent].children.push(c);
        self.index.insert((parent, label), c);
        c
    }

    /// The node for `stack` below `base`, creating the path as needed.
    fn stack_node(
        &mut self,
        profile: &Profile,
        memo: &mut HashMap<StackIndex, usize>,
        base: usize,
        stack: StackIndex,
    ) -> usize {
        // Walk up to the nearest stack already placed, then come back down.
        let mut chain = Vec::new();
        let mut cur = Some(stack);
        let mut node = base;
        while let Some(s) = cur {
            if let Some(&n) = memo.get(&s) {
                node = n;
                break;
            }
            chain.push(s);
            cur = profile.stacks[s.index()].parent;
        }
        for &s in chain.iter().rev() {
            node = self.child(node, Label::Frame(profile.stacks[s.index()].frame));
            memo.insert(s, node);
        }
        node
    }
}

/// The selected samples of `thread`, summed per stack (far fewer stacks than samples), in
/// stack order.
pub(crate) fn selected_samples_by_stack(
    thread: &crate::model::ThreadProfile,
    selection: &Selection,
) -> Vec<(Option<StackIndex>, Values)> {
    let mut per_stack: HashMap<Option<StackIndex>, Values> = HashMap::new();
    for s in &thread.samples {
        if selection.keeps_stack(s.stack) {
            *per_stack.entry(s.stack).or_default() += Values::of_sample(s);
        }
    }
    let mut stacks: Vec<_> = per_stack.into_iter().collect();
    stacks.sort_unstable_by_key(|(s, _)| *s);
    stacks
}

/// Count mode: gives each function node the calls its parent function made to it, from the
/// counts of the threads the node stands for (its thread in a tree split per thread, all
/// selected threads otherwise); a function right below the root or a thread node gets its
/// entries.
fn set_counted_calls(
    profile: &Profile,
    nodes: &mut [TreeNode],
    threads: &[ThreadTotal],
    per_thread: bool,
) {
    let all: Vec<usize> = threads.iter().map(|t| t.thread).collect();
    let mut counts: HashMap<Option<usize>, Option<CallCounts>> = HashMap::new();
    counts.insert(None, CallCounts::of_threads(profile, &all));
    // The thread node above each node, when split per thread (parents come first).
    let mut thread_of: Vec<Option<usize>> = vec![None; nodes.len()];
    for i in 1..nodes.len() {
        let parent = nodes[i].parent.unwrap_or(MergedTree::ROOT);
        thread_of[i] = match nodes[i].label {
            Label::Thread(t) => Some(t),
            _ => thread_of[parent],
        };
        let Label::Frame(callee) = nodes[i].label else {
            continue;
        };
        let key = thread_of[i].filter(|_| per_thread);
        let c = counts
            .entry(key)
            .or_insert_with(|| key.and_then(|t| CallCounts::of_threads(profile, &[t])));
        let Some(c) = c else {
            continue;
        };
        nodes[i].calls = match nodes[parent].label {
            Label::Frame(caller) => c.edge(caller, callee),
            _ => c.calls(callee),
        };
    }
}
