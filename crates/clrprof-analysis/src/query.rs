//! What the user asks of a profile: which metric, which threads, which stacks.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::Error;
use crate::model::{CallTree, FrameIndex, Profile, ProfileKind, StackIndex};

/// What a stack's weight is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// CPU time in nanoseconds; samples in which the thread used no CPU weigh nothing.
    Cpu,
    /// The part of the CPU time spent in the kernel (system time), in nanoseconds: page
    /// faults, system calls (sample mode, format 1.8).
    Sys,
    /// Wall time in nanoseconds, running or not.
    Wall,
    /// Number of samples.
    Samples,
    /// Exact number of calls (trace and count modes only).
    Calls,
    /// Bytes allocated (allocation profiles only).
    Bytes,
    /// Objects allocated (allocation profiles only).
    Objects,
}

/// The metric as `report --metric` offers it: its name, with the help `--help` shows.
#[cfg(feature = "clap")]
impl clap::ValueEnum for Metric {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Metric::Cpu,
            Metric::Sys,
            Metric::Wall,
            Metric::Samples,
            Metric::Calls,
            Metric::Bytes,
            Metric::Objects,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            Metric::Cpu => "CPU time (threads that were not running weigh nothing)",
            Metric::Sys => {
                "The part of the CPU time spent in the kernel: page faults, system calls (sample \
                 mode)"
            }
            Metric::Wall => "Elapsed time, running or blocked",
            Metric::Samples => "Sample counts",
            Metric::Calls => "Exact call counts (trace mode)",
            Metric::Bytes => "Allocated bytes (with --alloc; the default there)",
            Metric::Objects => "Allocated objects (with --alloc)",
        };
        Some(clap::builder::PossibleValue::new(self.as_str()).help(help))
    }
}

impl Metric {
    /// The metric used when the user names none: CPU time in both CPU modes, bytes for
    /// allocations.
    pub fn default_for(kind: ProfileKind) -> Metric {
        match kind {
            ProfileKind::Sample | ProfileKind::Trace | ProfileKind::Count => Metric::Cpu,
            ProfileKind::Alloc => Metric::Bytes,
        }
    }

    /// Which profiles have the metric, for error messages.
    pub fn availability(self) -> &'static str {
        match self {
            Metric::Cpu | Metric::Wall | Metric::Samples => {
                "is not available for allocation profiles (use bytes or objects)"
            }
            Metric::Sys => "is only available for profiles recorded in sample or count mode",
            Metric::Calls => "is only available for profiles recorded in trace or count mode",
            Metric::Bytes | Metric::Objects => {
                "is only available for allocation profiles (record with --alloc)"
            }
        }
    }

    /// Whether profiles of `kind` have this metric.
    pub fn available_in(self, kind: ProfileKind) -> bool {
        match self {
            Metric::Cpu | Metric::Wall | Metric::Samples => kind != ProfileKind::Alloc,
            Metric::Sys => matches!(kind, ProfileKind::Sample | ProfileKind::Count),
            Metric::Calls => matches!(kind, ProfileKind::Trace | ProfileKind::Count),
            Metric::Bytes | Metric::Objects => kind == ProfileKind::Alloc,
        }
    }

    /// The lowercase name (`cpu`, `wall`, `samples`, `calls`).
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Cpu => "cpu",
            Metric::Sys => "sys",
            Metric::Wall => "wall",
            Metric::Samples => "samples",
            Metric::Calls => "calls",
            Metric::Bytes => "bytes",
            Metric::Objects => "objects",
        }
    }

    /// The unit of the metric's values: `ns`, `samples`, `calls`, `bytes` or `objects`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Cpu | Metric::Sys | Metric::Wall => "ns",
            Metric::Samples => "samples",
            Metric::Calls => "calls",
            Metric::Bytes => "bytes",
            Metric::Objects => "objects",
        }
    }

    /// The metric in a column heading: `Self CPU`, `Total wall`.
    pub fn column(self) -> &'static str {
        match self {
            Metric::Cpu => "CPU",
            other => other.as_str(),
        }
    }

    /// Whether values are nanoseconds (and shown as durations).
    pub fn is_time(self) -> bool {
        matches!(self, Metric::Cpu | Metric::Sys | Metric::Wall)
    }

    /// A phrase for titles: `CPU time`, `wall time`, `samples`, `calls`.
    pub fn description(self) -> &'static str {
        match self {
            Metric::Cpu => "CPU time",
            Metric::Sys => "system time",
            Metric::Wall => "wall time",
            Metric::Samples => "samples",
            Metric::Calls => "calls",
            Metric::Bytes => "allocated bytes",
            Metric::Objects => "allocated objects",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Metric {
    type Err = Error;

    fn from_str(s: &str) -> Result<Metric, Error> {
        match s.to_ascii_lowercase().as_str() {
            "cpu" => Ok(Metric::Cpu),
            "sys" => Ok(Metric::Sys),
            "wall" => Ok(Metric::Wall),
            "samples" => Ok(Metric::Samples),
            "calls" => Ok(Metric::Calls),
            "bytes" => Ok(Metric::Bytes),
            "objects" => Ok(Metric::Objects),
            _ => Err(Error::UnknownMetric(s.to_owned())),
        }
    }
}

/// The user's restrictions on a report. `Query::default()` is everything, default metric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// The metric; `None` for [`Metric::default_for`] the profile's mode.
    pub metric: Option<Metric>,
    /// Only this thread: a decimal tid or a thread name (every thread of that name); `all`
    /// for every thread. Without it every thread is selected, but for the `wall` metric,
    /// where the runtime's service threads are left out (they wait all along: their wall time
    /// would swamp the program's).
    pub thread: Option<String>,
    /// Only stacks with a frame whose name contains this text (case-sensitive). In a call
    /// tree, a node counts when it or a caller matches; its callers are kept as context with
    /// their exact calls but without their own time.
    pub filter: Option<String>,
    /// Only this many functions in the top table (text and JSON); `Some(0)`: all of them;
    /// `None`: the format's default (the text report's `TEXT_TOP` functions, every function
    /// in JSON).
    pub top: Option<usize>,
}

impl Query {
    /// The metric to use for `profile`, checking that the profile has it.
    pub fn resolve_metric(&self, profile: &Profile) -> Result<Metric, Error> {
        let metric = self.metric.unwrap_or(Metric::default_for(profile.kind));
        if !metric.available_in(profile.kind) {
            return Err(Error::MetricUnavailable { metric });
        }
        Ok(metric)
    }
}

/// The `--thread` that selects every thread.
pub const ALL_THREADS: &str = "all";

/// The threads and stacks a [`Query`] keeps, resolved against one profile.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Indices into [`Profile::threads`] of the selected threads, in profile order.
    pub threads: Vec<usize>,
    /// The runtime's service threads left out because no thread was asked for (the `wall`
    /// metric's default), in profile order.
    pub services_left_out: Vec<usize>,
    filter: Option<String>,
    /// With a filter: whether each stack (by index) contains a matching frame.
    stack_matches: Vec<bool>,
    /// With a filter: whether each frame (by index) matches.
    frame_matches: Vec<bool>,
}

impl Selection {
    /// Resolves `query`'s thread and filter against `profile` (which must be valid).
    pub fn new(profile: &Profile, query: &Query) -> Result<Selection, Error> {
        let all: Vec<usize> = (0..profile.threads.len()).collect();
        let wall = query.metric == Some(Metric::Wall);
        let (threads, services_left_out) = match &query.thread {
            None if wall && profile.threads.iter().any(|t| !t.service) => {
                all.into_iter().partition(|&t| !profile.threads[t].service)
            }
            None => (all, Vec::new()),
            Some(sel) if sel == ALL_THREADS => (all, Vec::new()),
            Some(sel) => (select_threads(profile, sel)?, Vec::new()),
        };
        let filter = query.filter.clone().filter(|f| !f.is_empty());
        let (frame_matches, stack_matches) = match &filter {
            None => (Vec::new(), Vec::new()),
            Some(pat) => {
                let frames: Vec<bool> = profile
                    .frames
                    .iter()
                    .map(|f| f.name.contains(pat.as_str()))
                    .collect();
                let mut stacks = Vec::with_capacity(profile.stacks.len());
                for node in &profile.stacks {
                    let parent = node.parent.is_some_and(|p| stacks[p.index()]);
                    stacks.push(parent || frames[node.frame.index()]);
                }
                (frames, stacks)
            }
        };
        Ok(Selection {
            threads,
            services_left_out,
            filter,
            stack_matches,
            frame_matches,
        })
    }

    /// The filter text, if any.
    pub fn filter(&self) -> Option<&str> {
        self.filter.as_deref()
    }

    /// Whether frame `frame` matches the filter (true without a filter).
    pub fn frame_matches(&self, frame: FrameIndex) -> bool {
        self.filter.is_none() || self.frame_matches[frame.index()]
    }

    /// Whether a sample with this stack is kept. Without a filter every sample is; with one,
    /// only those whose stack has a matching frame (so never a sample without a stack).
    pub fn keeps_stack(&self, stack: Option<StackIndex>) -> bool {
        match (&self.filter, stack) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(_), Some(s)) => self.stack_matches[s.index()],
        }
    }

    /// For each node of `tree`: whether its own values count (it or a caller matches the
    /// filter), and whether it is kept at all (it counts, or a callee counts).
    pub fn call_tree_marks(&self, tree: &CallTree) -> Vec<NodeMark> {
        if self.filter.is_none() {
            return vec![NodeMark::Counted; tree.nodes.len()];
        }
        let mut marks = Vec::with_capacity(tree.nodes.len());
        for node in &tree.nodes {
            let parent_counts = node.parent.is_some_and(|p| marks[p] == NodeMark::Counted);
            marks.push(if parent_counts || self.frame_matches(node.frame) {
                NodeMark::Counted
            } else {
                NodeMark::Dropped
            });
        }
        for i in (0..tree.nodes.len()).rev() {
            if marks[i] != NodeMark::Dropped
                && let Some(p) = tree.nodes[i].parent
                && marks[p] == NodeMark::Dropped
            {
                marks[p] = NodeMark::Context;
            }
        }
        marks
    }
}

/// How the filter treats a call-tree node; see [`Selection::call_tree_marks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeMark {
    /// The node's values count.
    Counted,
    /// The node is a caller of counted nodes: kept with its calls, its own time left out.
    Context,
    /// The node is left out.
    Dropped,
}

/// The OS ids of the threads `selector` (`--thread`: an id or a name) picks in `profile`.
pub fn thread_ids(profile: &Profile, selector: &str) -> Result<Vec<u32>, Error> {
    Ok(select_threads(profile, selector)?
        .into_iter()
        .map(|i| profile.threads[i].tid)
        .collect())
}

fn select_threads(profile: &Profile, selector: &str) -> Result<Vec<usize>, Error> {
    let tid: Option<u32> = selector.parse().ok();
    let found: Vec<usize> = profile
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| Some(t.tid) == tid || t.name == selector)
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() {
        let available = profile
            .threads
            .iter()
            .map(|t| t.label())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Error::NoSuchThread {
            selector: selector.to_owned(),
            available: if available.is_empty() {
                "none".to_owned()
            } else {
                available
            },
        });
    }
    Ok(found)
}
