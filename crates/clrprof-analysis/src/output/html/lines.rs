//! The HTML report's source lines: per measure the trace has (CPU, allocated bytes, lock wait,
//! exceptions thrown), the hottest lines and the source of the hottest methods annotated line
//! by line (the page draws a heat bar per line), from the same line profiles and source view
//! as `report --lines` and `report --source`.

use std::collections::HashMap;

use serde::Serialize;

use crate::lines::{
    LineMeasure, LineProfile, LineRow, SourceLines, SourceRoots, SourceView, alloc_lines,
    contention_lines, cpu_lines, source_view, throw_lines,
};
use crate::trace::LoadedTrace;

/// Methods whose source the page carries, the most CPU on their own lines first.
const SOURCES_KEPT: usize = 20;

/// What the page's Source lines tab shows for one measure.
#[derive(Debug, Serialize)]
pub(super) struct LinesData {
    /// What the values weigh.
    measure: LineMeasure,
    /// It for a heading (`CPU`, `allocated bytes`).
    what: &'static str,
    /// Its unit (`nanoseconds`, `bytes`, `count`).
    unit: &'static str,
    /// The value of every stack with a managed frame: what the shares are of.
    total: u64,
    /// The hottest lines (self, then total), at most the report's rows.
    rows: Vec<LineRow>,
    /// Lines left out of `rows`.
    rows_left_out: usize,
    /// The hottest methods' sources.
    sources: Vec<SourceView>,
    /// Modules with CPU but no lines, and why.
    without_lines: Vec<String>,
}

/// The lines of each measure `t` has (CPU samples, allocations, lock waits, throws) whose
/// stacks carry IL positions.
pub(super) fn lines_data(t: &LoadedTrace, max_rows: usize) -> Vec<LinesData> {
    let mut source_lines = SourceLines::new(SourceRoots::default());
    let mut profiles = Vec::new();
    if t.has_cpu_data() {
        profiles.push(cpu_lines(t, None, &mut source_lines));
    }
    if crate::memory::alloc::has_allocations(t) {
        profiles.push(alloc_lines(t, None, &mut source_lines));
    }
    if crate::contention::has_contention(t) {
        profiles.push(contention_lines(t, None, &mut source_lines));
    }
    if !t.throw_sites.is_empty() {
        profiles.push(throw_lines(t, &mut source_lines));
    }
    profiles
        .into_iter()
        .filter(|p| p.positions_recorded && !p.rows.is_empty())
        .map(|p| measure_data(t, &p, max_rows, &mut source_lines))
        .collect()
}

fn measure_data(
    t: &LoadedTrace,
    p: &LineProfile,
    max_rows: usize,
    source_lines: &mut SourceLines,
) -> LinesData {
    // The methods whose own lines have the most of the measure first (where it is spent),
    // then those it is spent under (a lock wait's or an allocation's innermost managed frame
    // may be the framework's, without symbols), by their total.
    let mut methods: HashMap<u64, u64> = HashMap::new();
    for row in &p.rows {
        *methods.entry(row.function).or_default() += row.self_value;
    }
    let mut hottest: Vec<(u64, u64, u64)> = methods
        .into_iter()
        .map(|(function, own)| (function, own, p.method_total(function)))
        .collect();
    hottest.sort_unstable_by(|a, b| (b.1, b.2, a.0).cmp(&(a.1, a.2, b.0)));
    let sources = hottest
        .into_iter()
        .filter_map(|(function, _, _)| source_view(t, p, function, source_lines))
        .take(SOURCES_KEPT)
        .collect();
    LinesData {
        measure: p.measure,
        what: p.measure.describe(),
        unit: p.measure.unit(),
        total: p.total,
        rows_left_out: p.rows.len().saturating_sub(max_rows),
        rows: p.rows.iter().take(max_rows).cloned().collect(),
        sources,
        without_lines: p
            .without_lines
            .iter()
            .map(|(module, why)| format!("{module}: {why}"))
            .collect(),
    }
}
