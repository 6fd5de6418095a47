//! The profile model of clrprof, the computations on it, and its output formats.
//!
//! - [`model`]: [`Profile`] — frames, a stack prefix tree, per-thread samples and (trace
//!   mode) exact call trees; [`ProfileBuilder`] builds one while interning frames and stacks.
//! - [`query`]: what the user asks for — [`Metric`], thread, filter, top N ([`Query`]) —
//!   resolved against a profile into a [`Selection`].
//! - [`tree`]: the [`MergedTree`] of the selected stacks or call paths; [`top`]: the
//!   [`TopTable`] of functions (self and inclusive weight, exact calls in trace and count
//!   modes); [`counts`]: count mode's exact calls per function and call site.
//! - [`output`]: one [`Render`] implementation per format: text, JSON, folded stacks, flame
//!   graph SVG, speedscope, Chrome trace events, pprof.
//!
//! - [`memory`]: allocations by type and stack, garbage collections and their pauses.
//! - [`native`]: names for the native frames of stripped libraries, from symbol files given
//!   after the recording (`clrprof report --symbols`).
//! - [`trace`]: reads a trace file into names, an [`events::EventSummary`], the
//!   [`runtime::RuntimeViews`] (exceptions, JIT, loads, threads, native calls, suspensions,
//!   their timeline) and a [`Profile`]; the rest of the crate works on the model and knows
//!   nothing of the format.
//!
//! ```
//! use clrprof_analysis::{Profile, Query, output::{Render, Text}};
//!
//! let profile = Profile::from_stacks(&[
//!     ("main", vec!["App!Main()", "App!Parse()"], 3_000_000, 3_000_000),
//!     ("main", vec!["App!Main()"], 1_000_000, 1_000_000),
//! ]);
//! let mut out = Vec::new();
//! Text::default().render(&profile, &Query::default(), &mut out).unwrap();
//! assert!(String::from_utf8(out).unwrap().contains("Parse()"));
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod accounting;
pub mod blocked;
pub mod builder;
pub mod contention;
pub mod counts;
pub mod coverage;
pub mod ending;
mod error;
pub mod events;
pub mod file_names;
mod induced;
pub mod integrity;
pub mod lines;
pub mod memory;
pub mod model;
mod names;
pub mod native;
pub mod native_naming;
pub mod output;
pub mod profile;
pub use clrprof_symbols::managed::pe;
pub mod query;
pub mod report;
pub mod runtime;
pub mod runtime_names;
pub mod sampling;
mod session;
mod stack_frames;
pub mod stack_start;
pub mod threads;
pub mod top;
pub mod trace;
pub mod tree;
mod units;

pub use builder::{CallValues, ProfileBuilder};
pub use error::Error;
pub use model::{
    CallNode, CallNodeRecord, CallTree, Frame, FrameIndex, FrameKind, LineIndex, Profile,
    ProfileKind, Sample, SampleKind, SourceLine, StackIndex, StackNode, ThreadProfile,
};
pub use output::{Format, Render};
pub use query::{Metric, Query, Selection};
pub use stack_frames::{AWAIT_FRAME, StackView};
pub use stack_start::StackStart;
pub use top::{FunctionRow, TopTable};
pub use tree::{Label, MergedTree, TreeNode, Values};

/// A profile with a query applied: the resolved metric, the selection and the merged tree.
///
/// This is what the text and JSON outputs are made from; other front ends can use it too.
#[derive(Debug, Clone)]
pub struct Analysis<'p> {
    /// The profile analysed.
    pub profile: &'p Profile,
    /// The metric in force.
    pub metric: Metric,
    /// The threads and stacks kept.
    pub selection: Selection,
    /// The merged tree of what is kept.
    pub tree: MergedTree,
    /// Count mode: the exact counts of the selected threads.
    counts: Option<counts::CallCounts>,
}

impl<'p> Analysis<'p> {
    /// Validates `profile`, resolves `query` and merges the selected stacks, with a node per
    /// thread below the root when `per_thread`.
    pub fn new(profile: &'p Profile, query: &Query, per_thread: bool) -> Result<Self, Error> {
        profile.validate()?;
        let metric = query.resolve_metric(profile)?;
        let selection = Selection::new(profile, query)?;
        let tree = MergedTree::build(profile, &selection, metric, per_thread);
        let counts = counts::CallCounts::of_threads(profile, &selection.threads);
        Ok(Analysis {
            profile,
            metric,
            selection,
            tree,
            counts,
        })
    }

    /// Whether call counts are shown: the profile was recorded in trace or count mode.
    pub fn has_calls(&self) -> bool {
        matches!(self.profile.kind, ProfileKind::Trace | ProfileKind::Count)
    }

    /// Count mode's exact counts of the selected threads (`None` in the other modes).
    pub fn call_counts(&self) -> Option<&counts::CallCounts> {
        self.counts.as_ref()
    }

    /// The top table, at most `top` rows.
    pub fn top(&self, top: Option<usize>) -> TopTable {
        match self.call_counts() {
            Some(c) if self.profile.kind == ProfileKind::Count => TopTable::from_tree_and_counts(
                self.profile,
                &self.tree,
                c,
                self.selection.filter(),
                top,
            ),
            _ => TopTable::from_tree(self.profile, &self.tree, self.has_calls(), top),
        }
    }

    /// Every exact call of what is selected: in trace mode the calls of every call path
    /// kept, in count mode the entries of every counted function the filter keeps (0 in the
    /// other modes).
    pub fn total_calls(&self) -> u64 {
        match (self.profile.kind, self.call_counts()) {
            (ProfileKind::Count, Some(c)) => c
                .functions
                .iter()
                .filter(|(f, _)| self.selection.frame_matches(**f))
                .fold(0u64, |acc, (_, &n)| acc.saturating_add(n)),
            (ProfileKind::Count, None) => 0,
            _ if self.has_calls() => self
                .tree
                .nodes
                .iter()
                .fold(0u64, |acc, n| acc.saturating_add(n.calls)),
            _ => 0,
        }
    }

    /// The exact calls of tree node `n`, where they are known: every node of a trace-mode
    /// call tree; in count mode a node below a counted function (the calls that function
    /// made to it) or a counted function at the top of its stacks (its entries). `None` in
    /// sample mode and for count mode's other nodes (a function called from code that was
    /// not counted: native code, other assemblies).
    pub fn node_calls(&self, n: usize) -> Option<u64> {
        let node = &self.tree.nodes[n];
        match self.profile.kind {
            ProfileKind::Trace => Some(node.calls),
            ProfileKind::Count => {
                let c = self.call_counts()?;
                let Label::Frame(callee) = node.label else {
                    return None;
                };
                let parent = node.parent.map(|p| self.tree.nodes[p].label);
                let counted = |f| c.functions.contains_key(&f);
                match parent {
                    Some(Label::Frame(caller)) => counted(caller).then_some(node.calls),
                    _ => counted(callee).then_some(node.calls),
                }
            }
            _ => None,
        }
    }

    /// Where every sample went: shown, or left out and why (`None` for allocations).
    pub fn sample_accounting(&self) -> Option<accounting::SampleAccounting> {
        accounting::SampleAccounting::of(self)
    }

    /// The weight of everything selected, in the metric in force: in count mode, calls are
    /// the counted functions' entries ([`Analysis::total_calls`]).
    pub fn grand_total(&self) -> u64 {
        if self.metric == Metric::Calls && self.profile.kind == ProfileKind::Count {
            self.total_calls()
        } else {
            self.tree.total().get(self.metric)
        }
    }

    /// Notes for the reader: the profile's own, then remarks about this analysis.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.profile.notes.clone();
        if self.profile.kind == ProfileKind::Trace {
            for t in self.tree.threads.iter().filter(|t| !t.from_call_tree) {
                if self.profile.threads[t.thread].samples.is_empty() {
                    continue;
                }
                notes.push(format!(
                    "{} has no call tree; its samples are shown, without call counts",
                    self.profile.threads[t.thread].label()
                ));
            }
        }
        notes
    }
}
