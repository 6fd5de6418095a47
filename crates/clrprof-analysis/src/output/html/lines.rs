//! The HTML report's source lines: the hottest lines of the CPU profile, and the source of the
//! hottest methods annotated line by line (the page draws a heat bar per line), from the same
//! line profile and source view as `report --lines` and `report --source`.

use std::collections::HashMap;

use serde::Serialize;

use crate::lines::{LineRow, SourceLines, SourceRoots, SourceView, cpu_lines, source_view};
use crate::trace::LoadedTrace;

/// Methods whose source the page carries, the most CPU on their own lines first.
const SOURCES_KEPT: usize = 20;

/// What the page's Source lines tab shows.
#[derive(Debug, Serialize)]
pub(super) struct LinesData {
    /// CPU time of every stack with a managed frame: what the shares are of.
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

/// The lines of `t`'s CPU samples, if its stacks carry IL positions and some are managed.
pub(super) fn lines_data(t: &LoadedTrace, max_rows: usize) -> Option<LinesData> {
    let mut source_lines = SourceLines::new(SourceRoots::default());
    let p = cpu_lines(t, None, &mut source_lines);
    if !p.positions_recorded || p.rows.is_empty() {
        return None;
    }
    // The methods whose own lines have the most CPU first: where it burns.
    let mut methods: HashMap<u64, u64> = HashMap::new();
    for row in &p.rows {
        *methods.entry(row.function).or_default() += row.self_value;
    }
    let mut hottest: Vec<(u64, u64)> = methods.into_iter().filter(|&(_, v)| v > 0).collect();
    hottest.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let sources = hottest
        .into_iter()
        .filter_map(|(function, _)| source_view(t, &p, function, &mut source_lines))
        .take(SOURCES_KEPT)
        .collect();
    Some(LinesData {
        total: p.total,
        rows_left_out: p.rows.len().saturating_sub(max_rows),
        rows: p.rows.iter().take(max_rows).cloned().collect(),
        sources,
        without_lines: p
            .without_lines
            .iter()
            .map(|(module, why)| format!("{module}: {why}"))
            .collect(),
    })
}
