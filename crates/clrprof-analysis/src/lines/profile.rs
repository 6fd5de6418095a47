//! The lines of a trace weighed by one measure: CPU samples, allocations, lock waits or throws.
//! A line's self value is that of the stacks whose innermost managed frame was on it (native
//! frames below it count for the managed line that called them, as a call's cost counts for
//! its caller's line); its total that of the stacks with the line anywhere, once per stack.

use clrprof_trace::counters::CounterName;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use clrprof_trace::{FrameKind, IlPosition, StackDef, ThreadState};
use serde::Serialize;

use super::{Place, SourceLines};
use crate::trace::LoadedTrace;

/// What a line profile weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineMeasure {
    /// CPU time of the samples, in nanoseconds.
    #[default]
    Cpu,
    /// Bytes allocated (estimated from the sampled allocations or the runtime's ticks).
    AllocatedBytes,
    /// Time waited for locks, in nanoseconds.
    LockWait,
    /// Exceptions thrown, counted.
    Throws,
}

impl LineMeasure {
    /// The unit of its values, as the JSON report says it.
    pub fn unit(self) -> &'static str {
        match self {
            LineMeasure::Cpu | LineMeasure::LockWait => "nanoseconds",
            LineMeasure::AllocatedBytes => "bytes",
            LineMeasure::Throws => "count",
        }
    }

    /// What it is, for a heading: `CPU`, `allocated bytes`.
    pub fn describe(self) -> &'static str {
        match self {
            LineMeasure::Cpu => "CPU",
            LineMeasure::AllocatedBytes => "allocated bytes",
            LineMeasure::LockWait => "lock wait",
            LineMeasure::Throws => "exceptions thrown",
        }
    }

    /// A value of it for people: `1.20 s`, `3.4 MiB`, `7`.
    pub fn format(self, value: u64) -> String {
        match self {
            LineMeasure::Cpu | LineMeasure::LockWait => crate::units::duration(value),
            LineMeasure::AllocatedBytes => crate::memory::text::bytes(value),
            LineMeasure::Throws => value.to_string(),
        }
    }
}

/// One line of one method, and its value.
#[derive(Debug, Clone, Serialize)]
pub struct LineRow {
    /// The method's function id in the trace.
    #[serde(skip)]
    pub function: u64,
    /// The method (`Type.Method(args)`).
    pub method: String,
    /// Its module's file name.
    pub module: String,
    /// Where in it.
    pub place: Place,
    /// The line's text, when the source file was found.
    pub text: Option<String>,
    /// The value of the stacks whose innermost managed frame was here.
    #[serde(rename = "self")]
    pub self_value: u64,
    /// The value of the stacks with this line on them (once per stack).
    #[serde(rename = "total")]
    pub total_value: u64,
}

/// A trace's lines by one measure.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LineProfile {
    /// What the values are.
    pub measure: LineMeasure,
    /// Every line with a value, largest (self, then total) first.
    pub rows: Vec<LineRow>,
    /// The value of every stack with a managed frame: what the shares are of.
    pub total: u64,
    /// The value of stacks without any managed frame (native threads, the runtime's own work).
    pub unattributed: u64,
    /// Modules with a value whose frames have no lines, and why (`no symbols: ...`).
    pub without_lines: Vec<(String, String)>,
    /// Whether the stacks weighed carry IL positions.
    pub positions_recorded: bool,
    /// Why they do not, when they do not.
    #[serde(skip)]
    pub unpositioned: Option<String>,
    /// Per method (function id): the value of the stacks with it on them, once per stack
    /// whatever its lines and recursion.
    #[serde(skip)]
    pub method_totals: HashMap<u64, u64>,
}

impl LineProfile {
    /// The value of the stacks with `function` on them.
    pub fn method_total(&self, function: u64) -> u64 {
        self.method_totals.get(&function).copied().unwrap_or(0)
    }
}

/// A stack's managed frames, innermost first: function and IL position.
type ManagedPath = Vec<(u64, IlPosition)>;

/// The managed frames of trace stack `id`, innermost first.
fn managed_path(defs: &HashMap<u32, StackDef>, id: u32) -> ManagedPath {
    let mut out = Vec::new();
    let mut cur = id;
    let mut steps = 0;
    while cur != 0 && steps <= defs.len() {
        let Some(def) = defs.get(&cur) else {
            break;
        };
        if def.frame_kind == FrameKind::Managed {
            out.push((def.frame, def.il));
        }
        cur = def.parent;
        steps += 1;
    }
    out
}

/// Sums `weights` per trace stack, in stack order (a stack's frames are resolved once).
fn by_stack(weights: impl Iterator<Item = (u32, u64)>) -> Vec<(u32, u64)> {
    let mut sums: HashMap<u32, u64> = HashMap::new();
    for (stack, w) in weights.filter(|&(_, w)| w > 0) {
        *sums.entry(stack).or_default() += w;
    }
    let mut out: Vec<(u32, u64)> = sums.into_iter().collect();
    out.sort_unstable();
    out
}

/// The lines of the stacks `weights` weighs (trace stack ids).
fn stack_lines(
    trace: &LoadedTrace,
    measure: LineMeasure,
    weights: impl Iterator<Item = (u32, u64)>,
    lines: &mut SourceLines,
) -> LineProfile {
    let paths = by_stack(weights)
        .into_iter()
        .map(|(stack, w)| (managed_path(&trace.stacks, stack), w));
    line_profile(trace, measure, paths, lines)
}

/// The CPU of every line of `trace`'s CPU samples, of the threads `tids` only if given.
pub fn cpu_lines(
    trace: &LoadedTrace,
    tids: Option<&[u32]>,
    lines: &mut SourceLines,
) -> LineProfile {
    let weights = trace
        .sample_weights()
        .filter(|&(tid, _, state, _)| {
            state == ThreadState::Cpu && tids.is_none_or(|t| t.contains(&tid))
        })
        .map(|(_, stack, _, cpu_ns)| (stack, cpu_ns));
    stack_lines(trace, LineMeasure::Cpu, weights, lines)
}

/// The bytes allocated on every line (the program's allocations: the profiler's own are
/// left out, as in the allocation report), of the threads `tids` only if given.
pub fn alloc_lines(
    trace: &LoadedTrace,
    tids: Option<&[u32]>,
    lines: &mut SourceLines,
) -> LineProfile {
    let weights = trace
        .memory
        .allocations
        .iter()
        .filter(|a| tids.is_none_or(|t| t.contains(&a.tid)) && !trace.induced.contains(&a.stack))
        .map(|a| (a.stack, crate::memory::alloc::weight(a).1.round() as u64));
    stack_lines(trace, LineMeasure::AllocatedBytes, weights, lines)
}

/// The time waited for locks on every line, of the threads `tids` only if given.
pub fn contention_lines(
    trace: &LoadedTrace,
    tids: Option<&[u32]>,
    lines: &mut SourceLines,
) -> LineProfile {
    let weights = trace
        .contention
        .iter()
        .filter(|c| tids.is_none_or(|t| t.contains(&c.tid)))
        .map(|c| (c.stack, c.duration_ns));
    stack_lines(trace, LineMeasure::LockWait, weights, lines)
}

/// The exceptions thrown on every line (the throw, and each caller's call on the way).
pub fn throw_lines(trace: &LoadedTrace, lines: &mut SourceLines) -> LineProfile {
    let mut sites: Vec<(ManagedPath, u64)> = trace
        .throw_sites
        .iter()
        .map(|(path, &n)| (path.clone(), n))
        .collect();
    sites.sort_unstable_by_key(|(path, _)| {
        path.iter()
            .map(|&(f, il)| (f, il.to_u32()))
            .collect::<Vec<_>>()
    });
    line_profile(trace, LineMeasure::Throws, sites.into_iter(), lines)
}

/// The lines of weighed managed paths.
fn line_profile(
    trace: &LoadedTrace,
    measure: LineMeasure,
    paths: impl Iterator<Item = (ManagedPath, u64)>,
    lines: &mut SourceLines,
) -> LineProfile {
    let mut rows: HashMap<(u64, Place), (u64, u64)> = HashMap::new();
    let mut total = 0u64;
    let mut unattributed = 0u64;
    let mut seen = HashSet::new();
    let mut seen_methods = HashSet::new();
    let mut method_totals: HashMap<u64, u64> = HashMap::new();
    let mut positions_recorded = false;
    for (path, w) in paths {
        if path.is_empty() {
            unattributed += w;
            continue;
        }
        total += w;
        seen.clear();
        seen_methods.clear();
        for (k, &(function, il)) in path.iter().enumerate() {
            if seen_methods.insert(function) {
                *method_totals.entry(function).or_default() += w;
            }
            positions_recorded |= il != IlPosition::Unknown;
            let place = lines.place(&trace.names, function, il);
            let row = rows.entry((function, place.clone())).or_default();
            if k == 0 {
                row.0 += w;
            }
            if seen.insert((function, place)) {
                row.1 += w;
            }
        }
    }
    let mut without_lines: Vec<(String, String)> = Vec::new();
    let mut out: Vec<LineRow> = rows
        .into_iter()
        .map(|((function, place), (self_value, total_value))| {
            if !matches!(place, Place::Line { .. })
                && let Some(status) = lines.status(&trace.names, function)
                && !status.has_lines()
            {
                let module = trace.names.function_module(function);
                if !without_lines.iter().any(|(m, _)| *m == module) {
                    let path = trace
                        .names
                        .functions
                        .get(&function)
                        .and_then(|f| trace.names.modules.get(&f.module))
                        .map(|m| m.path.clone())
                        .unwrap_or_default();
                    without_lines.push((module, status.describe(Path::new(&path))));
                }
            }
            let text = match &place {
                Place::Line { file, line } => lines.text(file, *line),
                _ => None,
            };
            LineRow {
                function,
                method: trace.names.function(function),
                module: trace.names.function_module(function),
                place,
                text,
                self_value,
                total_value,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (b.self_value, b.total_value)
            .cmp(&(a.self_value, a.total_value))
            .then_with(|| (&a.method, &a.place).cmp(&(&b.method, &b.place)))
    });
    without_lines.sort();
    LineProfile {
        measure,
        rows: out,
        total,
        unattributed,
        without_lines,
        positions_recorded,
        unpositioned: (!positions_recorded && total > 0).then(|| why_unpositioned(trace, measure)),
        method_totals,
    }
}

/// Why no stack of `measure` carries an IL position.
fn why_unpositioned(trace: &LoadedTrace, measure: LineMeasure) -> String {
    let read_by_cli = |reader: &str, what: &str| {
        format!(
            "the {what} were read over the program's diagnostics socket (CoreCLR 3.1 has no \
             in-process event sessions): their stacks come from the runtime's events and their \
             places from the native-to-IL maps of the session's rundown, and none arrived (a \
             stream cut before its rundown, or a trace recorded by an older clrprof, which \
             did not read them), so every frame's place is unknown"
        ) + if reader == "allocation_ticks_reader" {
            "; `record --alloc sampled` takes allocation stacks in the agent, with lines"
        } else {
            ""
        }
    };
    if trace.header.minor < 9 {
        return "this trace records no IL positions (a trace before format 1.9): every frame's \
                place is unknown; record it again with this clrprof"
            .to_string();
    }
    match measure {
        LineMeasure::AllocatedBytes
            if trace
                .counters
                .get(CounterName::AllocationTicksReader.as_str())
                == Some(&0) =>
        {
            read_by_cli("allocation_ticks_reader", "allocation ticks")
        }
        LineMeasure::LockWait
            if trace.counters.get(CounterName::ContentionReader.as_str()) == Some(&0) =>
        {
            read_by_cli("contention_reader", "contention events")
        }
        _ => "no frame of these stacks has an IL position: every frame's place is unknown"
            .to_string(),
    }
}
