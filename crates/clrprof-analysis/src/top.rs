//! The top table: self and inclusive weight per function.

use std::collections::HashMap;

use crate::counts::CallCounts;
use crate::model::Profile;
use crate::query::Metric;
use crate::tree::{Label, MergedTree};

/// One function's row of the top table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionRow {
    /// The function ([`Label::Frame`] or [`Label::NoStack`]).
    pub label: Label,
    /// Weight with the function innermost.
    pub self_weight: u64,
    /// Weight of every stack containing the function, each stack counted once however
    /// often the function recurses in it.
    pub total_weight: u64,
    /// Exact calls of the function: the sum over its call-tree nodes (trace mode), its
    /// counted entries (count mode). `None` unless the table was made with call counts.
    pub calls: Option<u64>,
    /// The part of the function's self CPU time spent in the kernel (0 unless the samples
    /// say).
    pub self_sys_ns: u64,
    /// The part of its total CPU time spent in the kernel.
    pub total_sys_ns: u64,
    /// The part of its self CPU time whose samples tell whether it was in the kernel: what
    /// `self_sys_ns` is a part of.
    pub self_mode_known_ns: u64,
}

/// Functions sorted by self weight, heaviest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopTable {
    /// The metric of every weight.
    pub metric: Metric,
    /// The weight of everything selected: the denominator of the percentages.
    pub grand_total: u64,
    /// The rows, at most the `top` asked for.
    pub rows: Vec<FunctionRow>,
    /// How many functions were left out by `top`.
    pub omitted: usize,
}

impl TopTable {
    /// Computes the table from a merged tree (split per thread or not). With `with_calls`,
    /// rows carry exact call counts and a function with calls but no weight is listed too.
    pub fn from_tree(
        profile: &Profile,
        tree: &MergedTree,
        with_calls: bool,
        top: Option<usize>,
    ) -> TopTable {
        let metric = tree.metric;
        let mut rows: HashMap<Label, FunctionRow> = HashMap::new();
        // How many times each function is on the path from the root to the current node.
        let mut on_path: HashMap<Label, u32> = HashMap::new();
        // Depth-first walk with explicit enter/leave steps; `true` = leaving.
        let mut stack: Vec<(usize, bool)> = vec![(MergedTree::ROOT, false)];
        while let Some((n, leaving)) = stack.pop() {
            let node = &tree.nodes[n];
            let label = node.label;
            if !label.is_function() {
                if !leaving {
                    stack.extend(node.children.iter().map(|&c| (c, false)));
                }
                continue;
            }
            let count = on_path.entry(label).or_insert(0);
            if leaving {
                *count -= 1;
                continue;
            }
            let outermost = *count == 0;
            *count += 1;
            let row = rows.entry(label).or_insert(FunctionRow {
                label,
                self_weight: 0,
                total_weight: 0,
                calls: with_calls.then_some(0),
                self_sys_ns: 0,
                total_sys_ns: 0,
                self_mode_known_ns: 0,
            });
            row.self_weight = row.self_weight.saturating_add(node.self_values.get(metric));
            row.self_sys_ns = row.self_sys_ns.saturating_add(node.self_values.sys_ns);
            row.self_mode_known_ns = row
                .self_mode_known_ns
                .saturating_add(node.self_values.mode_known_cpu_ns);
            if outermost {
                row.total_weight = row
                    .total_weight
                    .saturating_add(node.total_values.get(metric));
                row.total_sys_ns = row.total_sys_ns.saturating_add(node.total_values.sys_ns);
            }
            if let Some(c) = row.calls.as_mut() {
                *c = c.saturating_add(node.calls);
            }
            stack.push((n, true));
            stack.extend(node.children.iter().map(|&c| (c, false)));
        }

        TopTable::of_rows(profile, rows, metric, tree.total().get(metric), top)
    }

    /// The top table of a count-mode profile: weights from the merged tree as
    /// [`TopTable::from_tree`] gives them, and every counted function of `counts` whose name
    /// contains `filter` with its exact calls (entries), listed even if no sample saw it.
    /// With the `calls` metric, a function's self and total weight are its calls.
    pub fn from_tree_and_counts(
        profile: &Profile,
        tree: &MergedTree,
        counts: &CallCounts,
        filter: Option<&str>,
        top: Option<usize>,
    ) -> TopTable {
        let mut table = TopTable::from_tree(profile, tree, true, None);
        let mut rows: HashMap<Label, FunctionRow> =
            table.rows.drain(..).map(|r| (r.label, r)).collect();
        for r in rows.values_mut() {
            r.calls = Some(0);
        }
        for (&f, &calls) in &counts.functions {
            if filter.is_some_and(|t| !profile.frame(f).name.contains(t)) {
                continue;
            }
            let label = Label::Frame(f);
            let row = rows.entry(label).or_insert(FunctionRow {
                label,
                self_weight: 0,
                total_weight: 0,
                calls: Some(0),
                self_sys_ns: 0,
                total_sys_ns: 0,
                self_mode_known_ns: 0,
            });
            row.calls = Some(calls);
        }
        let metric = tree.metric;
        let mut grand_total = table.grand_total;
        if metric == Metric::Calls {
            grand_total = 0;
            for r in rows.values_mut() {
                let calls = r.calls.unwrap_or(0);
                r.self_weight = calls;
                r.total_weight = calls;
                grand_total = grand_total.saturating_add(calls);
            }
        }
        TopTable::of_rows(profile, rows, metric, grand_total, top)
    }

    /// The table of `rows` that have a weight or calls, sorted, the first `top` kept.
    fn of_rows(
        profile: &Profile,
        rows: HashMap<Label, FunctionRow>,
        metric: Metric,
        grand_total: u64,
        top: Option<usize>,
    ) -> TopTable {
        let mut rows: Vec<FunctionRow> = rows
            .into_values()
            .filter(|r| r.total_weight > 0 || r.calls.is_some_and(|c| c > 0))
            .collect();
        sort_rows(profile, &mut rows);
        let omitted = truncate(&mut rows, top);
        TopTable {
            metric,
            grand_total,
            rows,
            omitted,
        }
    }

    /// `part` as a percentage of the grand total (0 when the total is 0).
    pub fn percent(&self, part: u64) -> f64 {
        percent(part, self.grand_total)
    }
}

/// Heaviest self weight first, then total, calls and name.
fn sort_rows(profile: &Profile, rows: &mut [FunctionRow]) {
    rows.sort_by(|a, b| {
        b.self_weight
            .cmp(&a.self_weight)
            .then(b.total_weight.cmp(&a.total_weight))
            .then(b.calls.cmp(&a.calls))
            .then_with(|| a.label.name(profile).cmp(&b.label.name(profile)))
            .then(a.label.cmp(&b.label))
    });
}

/// Keeps the first `top` rows (`Some(0)` keeps every row, as `None` does); returns how many
/// were left out.
fn truncate(rows: &mut Vec<FunctionRow>, top: Option<usize>) -> usize {
    match top {
        Some(n) if n > 0 && rows.len() > n => {
            let omitted = rows.len() - n;
            rows.truncate(n);
            omitted
        }
        _ => 0,
    }
}

/// `part / whole` in percent, 0 when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
