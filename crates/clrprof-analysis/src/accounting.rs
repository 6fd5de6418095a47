//! Where every sample of a trace went: shown in this view, or left out and why.
//!
//! `record` says how many samples it wrote; a report's header must add up to that number.
//! [`SampleAccounting`] puts each sample record of the profile in exactly one place: the view
//! (the samples its figures are made of) or one reason it is not in it (another thread,
//! the filter, a metric that does not weigh it, no method of trace mode's call tree), beside
//! the samples the agent dropped before they reached the trace.

use serde::Serialize;

use crate::model::{ProfileKind, SampleKind};
use crate::{Analysis, Metric};

/// Where the samples of a profile went, for one analysis of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SampleAccounting {
    /// Sample records in the trace: what `record` says it wrote.
    pub recorded: u64,
    /// Trace mode: samples the call trees counted whose record the agent could not write
    /// (they are among `dropped`, and in the figures).
    pub counted_unwritten: u64,
    /// Those the figures of this view are made of.
    pub shown: u64,
    /// The others, each group with its count and why it is not shown; the counts and
    /// `shown` add up to `recorded` + `counted_unwritten`.
    pub left_out: Vec<LeftOut>,
    /// Samples the agent dropped before they reached the trace (its buffer was full or a
    /// thread did not answer in time): in no figure.
    pub dropped: u64,
}

/// Samples left out of a view for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// How many.
    pub samples: u64,
    /// Why, in words.
    pub reason: &'static str,
}

/// Whether a sample of `kind` has no weight in `metric`: sample mode takes CPU samples (CPU
/// time, no wall time) and wall-clock samples (wall time, no CPU) apart.
fn weighs_nothing(kind: SampleKind, metric: Metric) -> bool {
    match metric {
        Metric::Wall => kind == SampleKind::Cpu,
        _ => kind == SampleKind::Wall,
    }
}

/// Why samples are left out, indexed by the constants below.
const REASONS: [&str; 5] = [
    "of threads not selected (--thread)",
    "without a frame matching the filter",
    "wall-clock samples, which carry no CPU (--metric wall weighs them)",
    "outside every method trace mode's hooks saw (before Main, in native code, or waiting there)",
    "of the runtime's service threads (--thread all shows them)",
];
const OTHER_THREADS: usize = 0;
const FILTERED: usize = 1;
const NOT_WEIGHED: usize = 2;
const NO_METHOD: usize = 3;
const SERVICES: usize = 4;

impl SampleAccounting {
    /// Accounts for every sample of the analysed profile; `None` for an allocation profile,
    /// whose samples are allocations.
    pub fn of(a: &Analysis<'_>) -> Option<SampleAccounting> {
        let p = a.profile;
        if p.kind == ProfileKind::Alloc {
            return None;
        }
        let mut recorded = 0u64;
        let mut counted_unwritten = 0u64;
        // Where each sample went, by reason (see `REASONS`); what is shown is the rest.
        let mut left = [0u64; 5];
        let mut selected_in_trees = 0u64;
        let mut shown_records = 0u64;
        for (t, thread) in p.threads.iter().enumerate() {
            let selected = a.selection.threads.contains(&t);
            let not_selected = if a.selection.services_left_out.contains(&t) {
                SERVICES
            } else {
                OTHER_THREADS
            };
            recorded = thread
                .samples
                .iter()
                .fold(recorded, |n, s| n.saturating_add(s.count));
            if let Some(tree) = thread
                .call_tree
                .as_ref()
                .filter(|_| p.kind == ProfileKind::Trace)
            {
                // Trace mode: the call tree counts every tick inside a method, even one whose
                // sample record was not written; a sample without a stack is one outside.
                let in_tree: u64 = tree
                    .nodes
                    .iter()
                    .fold(0u64, |n, node| n.saturating_add(node.self_samples));
                let (inside, outside) = thread.samples.iter().fold((0u64, 0u64), |(i, o), s| {
                    if s.stack.is_some() {
                        (i.saturating_add(s.count), o)
                    } else {
                        (i, o.saturating_add(s.count))
                    }
                });
                counted_unwritten =
                    counted_unwritten.saturating_add(in_tree.saturating_sub(inside));
                if selected {
                    selected_in_trees = selected_in_trees.saturating_add(in_tree);
                    left[NO_METHOD] = left[NO_METHOD].saturating_add(outside);
                } else {
                    left[not_selected] = left[not_selected]
                        .saturating_add(in_tree.max(inside).saturating_add(outside));
                }
                continue;
            }
            for s in &thread.samples {
                let place = if !selected {
                    Some(not_selected)
                } else if !a.selection.keeps_stack(s.stack) {
                    Some(FILTERED)
                } else if weighs_nothing(s.kind, a.metric) {
                    Some(NOT_WEIGHED)
                } else {
                    None
                };
                match place {
                    Some(i) => left[i] = left[i].saturating_add(s.count),
                    None => shown_records = shown_records.saturating_add(s.count),
                }
            }
        }
        let shown = if p.kind == ProfileKind::Trace {
            let shown = a.tree.total().samples;
            left[FILTERED] = left[FILTERED].saturating_add(
                selected_in_trees
                    .saturating_add(shown_records)
                    .saturating_sub(shown),
            );
            shown
        } else {
            shown_records
        };
        let mut reasons = REASONS;
        if a.metric == Metric::Wall {
            reasons[NOT_WEIGHED] =
                "CPU samples, which carry no wall time (--metric cpu weighs them)";
        }
        Some(SampleAccounting {
            recorded,
            counted_unwritten,
            shown,
            left_out: reasons
                .into_iter()
                .zip(left)
                .filter(|(_, n)| *n > 0)
                .map(|(reason, samples)| LeftOut { samples, reason })
                .collect(),
            dropped: p.samples_dropped,
        })
    }

    /// Whether the view shows every sample the agent took.
    pub fn is_whole(&self) -> bool {
        self.left_out.is_empty() && self.dropped == 0
    }

    /// One sentence: `4,473 samples recorded: 2,394 shown, 2,079 outside ...; 12 dropped by
    /// the agent`.
    pub fn sentence(&self) -> String {
        use crate::units::count;
        let mut s = format!("{} samples recorded", count(self.recorded));
        if self.counted_unwritten > 0 {
            s.push_str(&format!(
                " and {} counted in the call trees but not written",
                count(self.counted_unwritten)
            ));
        }
        s.push_str(&format!(": {} shown", count(self.shown)));
        for l in &self.left_out {
            s.push_str(&format!(", {} {}", count(l.samples), l.reason));
        }
        let unwritten = self.dropped.saturating_sub(self.counted_unwritten);
        if unwritten > 0 {
            s.push_str(&format!(
                "; {} more not written (the agent's buffer was full or its sampler fell behind)",
                count(unwritten)
            ));
        }
        s
    }
}
