//! The JSON report, documented in `docs/report-json.md`.

use std::io::Write;

use serde::Serialize;

use crate::model::{FrameKind, Profile, ProfileKind};
use crate::query::{Metric, Query};
use crate::top::percent;
use crate::tree::{Label, MergedTree};
use crate::{Analysis, Error, Render};

/// The JSON report.
#[derive(Debug, Clone, PartialEq)]
pub struct Json {
    /// Leave out call-tree nodes whose total is below this percentage of the grand total
    /// (0 keeps every node with a non-zero weight or, in trace mode, calls).
    pub tree_threshold_percent: f64,
    /// Split the call tree per thread (a `thread` node per thread below the root).
    pub per_thread: bool,
    /// Indent the output.
    pub pretty: bool,
}

impl Default for Json {
    fn default() -> Self {
        Json {
            tree_threshold_percent: 0.0,
            per_thread: false,
            pretty: true,
        }
    }
}

impl Render for Json {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        super::write_json(&report(profile, query, self)?, self.pretty, out)
    }
}

/// The CPU part of the JSON report: top-level keys of the report object. Other parts of
/// clrprof add their own keys next to these (for example with `#[serde(flatten)]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuReport {
    /// `sample` or `trace`.
    pub mode: ProfileKind,
    /// The metric of `total`, `self` and `total` values.
    pub metric: Metric,
    /// `ns`, `samples` or `calls`.
    pub unit: &'static str,
    /// The weight of everything selected.
    pub total: u64,
    /// Number of samples selected.
    pub samples: u64,
    /// Sampling period.
    pub sample_interval_ns: u64,
    /// Session start, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// Recording length.
    pub duration_ns: u64,
    /// The filter text, when one was given.
    pub filter: Option<String>,
    /// The selected threads that weigh something in the metric (`cpu_threads` in JSON, beside
    /// the report's list of all threads).
    #[serde(rename = "cpu_threads")]
    pub threads: Vec<ThreadJson>,
    /// Functions by self weight, heaviest first.
    pub functions: Vec<FunctionJson>,
    /// Functions left out by `top`.
    pub functions_omitted: usize,
    /// The merged call tree.
    pub call_tree: CallTreeJson,
    /// Count mode: the calls of every counted call site of the selected threads, by caller
    /// and IL offset (absent in the other modes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_sites: Option<Vec<CallSiteJson>>,
    /// Remarks for the reader.
    pub notes: Vec<String>,
    /// How sample mode sampled: clock, rates, what was missed, the profiler's cost, stacks
    /// that ended early (traces of format 1.2 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<crate::sampling::SamplingInfo>,
    /// Where every sample of the trace went: shown here, or left out and why, and how many
    /// the agent dropped (absent for allocation profiles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_accounting: Option<crate::accounting::SampleAccounting>,
}

/// One selected thread in [`CpuReport::threads`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadJson {
    /// OS thread id.
    pub tid: u32,
    /// Thread name; empty when unnamed.
    pub name: String,
    /// Samples of the thread that were selected.
    pub samples: u64,
    /// Their CPU time.
    pub cpu_ns: u64,
    /// Their wall time.
    pub wall_ns: u64,
    /// Their weight in the report's metric.
    pub total: u64,
}

/// What a function or call-tree node is: a frame's kind (`managed`, `generated`, `native`,
/// `truncated`, `type`, `await`) or one of the tree's own nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// The call tree's root.
    Root,
    /// A thread (trees split per thread).
    Thread,
    /// Samples taken while the thread had no managed frames.
    NoStack,
    /// A frame, of this kind.
    #[serde(untagged)]
    Frame(FrameKind),
}

impl NodeKind {
    fn of(profile: &Profile, label: Label) -> NodeKind {
        match label {
            Label::Root => NodeKind::Root,
            Label::Thread(_) => NodeKind::Thread,
            Label::NoStack => NodeKind::NoStack,
            Label::Frame(f) => NodeKind::Frame(profile.frame(f).kind),
        }
    }
}

/// A frame with its weights: what a row of [`CpuReport::functions`] and a node of
/// [`CallTreeJson::nodes`] both say (flattened into each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WeighedFrameJson {
    /// Display name (a node's: the function's, or the thread's).
    pub name: String,
    /// Module; empty when unknown.
    pub module: String,
    /// What it is.
    pub kind: NodeKind,
    /// Weight with it innermost.
    #[serde(rename = "self")]
    pub self_weight: u64,
    /// Weight of the stacks containing the function (recursion counted once), or of the node
    /// and its callees.
    pub total: u64,
    /// Exact calls, `null` in sample mode: of the function (trace mode; count mode: its counted
    /// entries), or along the node's path (trace mode; count mode: the calls the parent
    /// function made to this one).
    pub calls: Option<u64>,
}

impl WeighedFrameJson {
    fn new(
        profile: &Profile,
        label: Label,
        self_weight: u64,
        total: u64,
        calls: Option<u64>,
    ) -> Self {
        WeighedFrameJson {
            name: label.name(profile).into_owned(),
            module: label.module(profile).to_owned(),
            kind: NodeKind::of(profile, label),
            self_weight,
            total,
            calls,
        }
    }
}

/// One row of [`CpuReport::functions`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionJson {
    /// The function and its weights.
    #[serde(flatten)]
    pub frame: WeighedFrameJson,
    /// The part of its self CPU time spent in the kernel (system time), in nanoseconds.
    pub self_sys_ns: u64,
    /// The part of its total CPU time spent in the kernel.
    pub total_sys_ns: u64,
}

/// One row of [`CpuReport::call_sites`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallSiteJson {
    /// The function the call site is in.
    pub caller: String,
    /// The method the call instruction names (before any virtual dispatch).
    pub callee: String,
    /// IL offset of the call instruction in the caller's original body.
    pub il_offset: u32,
    /// Exact calls made there.
    pub calls: u64,
}

/// [`CpuReport::call_tree`]: the tree as a flat list in depth-first order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallTreeJson {
    /// Nodes in depth-first order, heaviest child first; `nodes[0]` is the root.
    pub nodes: Vec<NodeJson>,
    /// The threshold applied, in percent of the total.
    pub threshold_percent: f64,
    /// Subtrees left out by the threshold.
    pub omitted: usize,
}

/// One node of [`CallTreeJson::nodes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeJson {
    /// Position in `nodes`.
    pub id: usize,
    /// The parent's `id`; `null` for the root.
    pub parent: Option<usize>,
    /// Distance from the root (the root is 0).
    pub depth: usize,
    /// The node's frame (or thread) and its weights.
    #[serde(flatten)]
    pub frame: WeighedFrameJson,
}

/// Computes the CPU part of the JSON report.
pub fn report(profile: &Profile, query: &Query, options: &Json) -> Result<CpuReport, Error> {
    let a = Analysis::new(profile, query, options.per_thread)?;
    let metric = a.metric;
    let with_calls = a.has_calls();
    let table = a.top(query.top);

    // A thread that weighs nothing in this metric (one that slept throughout, in CPU terms)
    // is not part of this view.
    let threads = a
        .tree
        .threads
        .iter()
        .filter(|t| t.values.get(metric) > 0)
        .map(|t| {
            let thread = &profile.threads[t.thread];
            ThreadJson {
                tid: thread.tid,
                name: thread.name.clone(),
                samples: t.values.samples,
                cpu_ns: t.values.cpu_ns,
                wall_ns: t.values.wall_ns,
                total: t.values.get(metric),
            }
        })
        .collect();

    let functions = table
        .rows
        .iter()
        .map(|r| FunctionJson {
            frame: WeighedFrameJson::new(profile, r.label, r.self_weight, r.total_weight, r.calls),
            self_sys_ns: r.self_sys_ns,
            total_sys_ns: r.total_sys_ns,
        })
        .collect();

    let accounting = a.sample_accounting();
    Ok(CpuReport {
        mode: profile.kind,
        metric,
        unit: metric.unit(),
        total: a.grand_total(),
        samples: accounting
            .as_ref()
            .map_or(a.tree.total().samples, |acc| acc.shown),
        sample_interval_ns: profile.sample_interval_ns,
        start_unix_ns: profile.start_unix_ns,
        duration_ns: profile.duration_ns,
        filter: a.selection.filter().map(str::to_owned),
        threads,
        functions,
        functions_omitted: table.omitted,
        call_tree: call_tree(&a, options.tree_threshold_percent, with_calls),
        call_sites: a.call_counts().map(|c| {
            let name = |f: crate::model::FrameIndex| profile.frame(f).name.clone();
            c.sites
                .iter()
                .filter(|s| {
                    a.selection.filter().is_none_or(|t| {
                        profile.frame(s.caller).name.contains(t)
                            || profile.frame(s.callee).name.contains(t)
                    })
                })
                .map(|s| CallSiteJson {
                    caller: name(s.caller),
                    callee: name(s.callee),
                    il_offset: s.il_offset,
                    calls: s.calls,
                })
                .collect()
        }),
        notes: a.notes(),
        sampling: profile.sampling.clone(),
        sample_accounting: accounting,
    })
}

fn call_tree(a: &Analysis<'_>, threshold: f64, with_calls: bool) -> CallTreeJson {
    let tree: &MergedTree = &a.tree;
    let grand = a.grand_total();
    let shown = |n: usize| {
        let node = &tree.nodes[n];
        let w = node.total_values.get(a.metric);
        (w > 0 && percent(w, grand) >= threshold)
            || (with_calls && node.calls > 0 && threshold <= 0.0)
    };
    let node_json = |n: usize, id: usize, parent: Option<usize>, depth: usize| {
        let node = &tree.nodes[n];
        NodeJson {
            id,
            parent,
            depth,
            frame: WeighedFrameJson::new(
                a.profile,
                node.label,
                node.self_values.get(a.metric),
                node.total_values.get(a.metric),
                with_calls.then_some(node.calls),
            ),
        }
    };

    let mut nodes = vec![node_json(MergedTree::ROOT, 0, None, 0)];
    let mut omitted = 0;
    // (tree node, parent's id, depth), children pushed in reverse to pop heaviest first.
    let mut stack: Vec<(usize, usize, usize)> = tree.nodes[MergedTree::ROOT]
        .children
        .iter()
        .rev()
        .map(|&c| (c, 0, 1))
        .collect();
    while let Some((n, parent, depth)) = stack.pop() {
        if !shown(n) {
            if tree.nodes[n].total_values.get(a.metric) > 0 {
                omitted += 1;
            }
            continue;
        }
        let id = nodes.len();
        nodes.push(node_json(n, id, Some(parent), depth));
        stack.extend(
            tree.nodes[n]
                .children
                .iter()
                .rev()
                .map(|&c| (c, id, depth + 1)),
        );
    }
    CallTreeJson {
        nodes,
        threshold_percent: threshold,
        omitted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_kinds_are_one_flat_name() {
        let names: Vec<String> = [
            NodeKind::Root,
            NodeKind::Thread,
            NodeKind::NoStack,
            NodeKind::Frame(FrameKind::Managed),
            NodeKind::Frame(FrameKind::Generated),
            NodeKind::Frame(FrameKind::Native),
            NodeKind::Frame(FrameKind::Truncated),
            NodeKind::Frame(FrameKind::Type),
            NodeKind::Frame(FrameKind::Await),
        ]
        .iter()
        .map(|k| serde_json::to_string(k).unwrap())
        .collect();
        assert_eq!(
            names,
            [
                "\"root\"",
                "\"thread\"",
                "\"no_stack\"",
                "\"managed\"",
                "\"generated\"",
                "\"native\"",
                "\"truncated\"",
                "\"type\"",
                "\"await\""
            ]
        );
    }
}
