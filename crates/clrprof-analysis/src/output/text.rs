//! The text report: a header, the top table and optionally an indented call tree.

use std::io::Write;

use crate::model::Profile;
use crate::query::{Metric, Query};
use crate::top::percent;
use crate::tree::MergedTree;
use crate::{Analysis, Error, Render, units};

/// How many functions the text report lists unless `--top` says otherwise.
pub const TEXT_TOP: usize = 25;

/// The human-readable report.
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    /// Also print the merged call tree.
    pub tree: bool,
    /// In the tree, leave out nodes whose total is below this percentage of the grand total.
    pub tree_threshold_percent: f64,
    /// Split the tree per thread (a node per thread at the top).
    pub per_thread: bool,
    /// Longest function name before the module column is pushed right (longer names are
    /// printed whole).
    pub name_width: usize,
}

impl Default for Text {
    fn default() -> Self {
        Text {
            tree: false,
            tree_threshold_percent: 0.5,
            per_thread: false,
            name_width: 80,
        }
    }
}

impl Render for Text {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let a = Analysis::new(profile, query, self.per_thread)?;
        write_header(&a, out)?;
        write_top(
            &a,
            Some(query.top.unwrap_or(TEXT_TOP)),
            self.name_width,
            out,
        )?;
        if self.tree {
            writeln!(out)?;
            write_tree(&a, self.tree_threshold_percent, out)?;
        }
        if let Some(counts) = a.call_counts() {
            write_call_sites(&a, &counts, query.top, out)?;
        }
        let notes = a.notes();
        if !notes.is_empty() {
            writeln!(out)?;
            for n in notes {
                writeln!(out, "Note: {n}")?;
            }
        }
        Ok(())
    }
}

fn write_header(a: &Analysis<'_>, out: &mut dyn Write) -> Result<(), Error> {
    let p = a.profile;
    let accounting = a.sample_accounting();
    // The samples the figures are made of (in sample mode, those that weigh in the metric).
    let samples = accounting
        .as_ref()
        .map_or(a.tree.total().samples, |acc| acc.shown);
    writeln!(
        out,
        "{} mode, metric {} ({}), {} samples, {} of {} threads, duration {}",
        p.kind,
        a.metric,
        a.metric.unit(),
        samples,
        a.selection.threads.len(),
        p.threads.len(),
        units::duration(p.duration_ns),
    )?;
    if let Some(s) = &p.sampling {
        write_sampling(s, out)?;
    }
    if let Some(acc) = accounting.filter(|acc| !acc.is_whole()) {
        writeln!(out, "Samples: {}", acc.sentence())?;
    }
    if a.selection.threads.len() != p.threads.len() {
        let names: Vec<String> = a
            .selection
            .threads
            .iter()
            .map(|&t| p.threads[t].label())
            .collect();
        writeln!(out, "Threads: {}", names.join(", "))?;
    }
    if let Some(f) = a.selection.filter() {
        writeln!(out, "Filter: stacks with a frame containing \"{f}\"")?;
    }
    write!(
        out,
        "Total {}: {}",
        a.metric.description(),
        units::value(a.metric, a.grand_total())
    )?;
    if a.has_calls() && a.metric != Metric::Calls {
        write!(
            out,
            ", {} calls",
            a.tree
                .nodes
                .iter()
                .fold(0u64, |acc, n| acc.saturating_add(n.calls))
        )?;
    }
    writeln!(out)?;
    Ok(())
}

fn write_top(
    a: &Analysis<'_>,
    top: Option<usize>,
    name_width: usize,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let table = a.top(top);
    writeln!(out)?;
    if table.rows.is_empty() {
        writeln!(out, "No samples match.")?;
        return Ok(());
    }
    let names: Vec<_> = table.rows.iter().map(|r| r.label.name(a.profile)).collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .clamp("Function".len(), name_width.max("Function".len()));
    let calls = a.has_calls();

    // The columns say what they measure.
    let (self_head, total_head) = (
        format!("Self {}", a.metric.column()),
        format!("Total {}", a.metric.column()),
    );
    let w = total_head.len().max(10);
    // Where the samples tell the kernel's share of the CPU, the share of each function's own
    // CPU spent there (page faults, system calls), as `top` splits user and system time.
    let sys = a.metric == Metric::Cpu && a.tree.total().mode_known_cpu_ns > 0;
    write!(
        out,
        "{:>7}  {:>w$}  {:>7}  {:>w$}  ",
        "Self%", self_head, "Total%", total_head
    )?;
    if sys {
        write!(out, "{:>5}  ", "Sys%")?;
    }
    if calls {
        write!(out, "{:>10}  ", "Calls")?;
    }
    writeln!(out, "{:<width$}  Module", "Function")?;
    for (row, name) in table.rows.iter().zip(&names) {
        write!(
            out,
            "{:>6.2}%  {:>w$}  {:>6.2}%  {:>w$}  ",
            table.percent(row.self_weight),
            units::value(a.metric, row.self_weight),
            table.percent(row.total_weight),
            units::value(a.metric, row.total_weight),
        )?;
        if sys && row.self_mode_known_ns > 0 {
            let share = percent(row.self_sys_ns, row.self_mode_known_ns);
            write!(out, "{share:>4.0}%  ")?;
        } else if sys {
            write!(out, "{:>5}  ", "-")?;
        }
        if let Some(c) = row.calls {
            write!(out, "{c:>10}  ")?;
        }
        let module = row.label.module_shown(a.profile);
        if module.is_empty() {
            writeln!(out, "{name}")?;
        } else {
            writeln!(out, "{name:<width$}  {module}")?;
        }
    }
    if table.omitted > 0 {
        let s = if table.omitted == 1 { "" } else { "s" };
        writeln!(
            out,
            "... {} more function{s} not shown (--top 0 shows all)",
            table.omitted
        )?;
    }
    Ok(())
}

fn write_tree(a: &Analysis<'_>, threshold: f64, out: &mut dyn Write) -> Result<(), Error> {
    let tree = &a.tree;
    let grand = a.grand_total();
    let calls = a.has_calls();
    let shown = |n: usize| {
        let node = &tree.nodes[n];
        let w = node.total_values.get(a.metric);
        let visible = w > 0 || (calls && node.calls > 0);
        visible && percent(w, grand) >= threshold
    };
    writeln!(
        out,
        "Call tree ({}; paths under {threshold:.2}% of the total are left out):",
        a.metric.description()
    )?;
    let total_head = format!("Total {}", a.metric.column());
    let w = total_head.len().max(10);
    write!(out, "{:>7}  {:>7}  {:>w$}  ", "Total%", "Self%", total_head)?;
    if calls {
        write!(out, "{:>10}  ", "Calls")?;
    }
    writeln!(out, "Function")?;

    let zero_weight = |n: usize| {
        let node = &tree.nodes[n];
        node.total_values.get(a.metric) == 0 && !(calls && node.calls > 0)
    };
    // Children are visited only below shown nodes, so each hidden node met here is the top
    // of a hidden subtree.
    let mut elided = 0usize;
    for (n, depth) in tree.preorder(shown) {
        if shown(n) {
            write_tree_line(a, tree, n, depth, grand, calls, out)?;
        } else if !zero_weight(n) {
            elided += 1;
        }
    }
    if elided > 0 {
        let s = if elided == 1 { "" } else { "s" };
        writeln!(
            out,
            "({elided} call path{s} under {threshold:.2}% of the total not shown)"
        )?;
    }
    Ok(())
}

/// Count mode: the call sites with the most calls, `caller -> callee`.
fn write_call_sites(
    a: &Analysis<'_>,
    counts: &crate::counts::CallCounts,
    top: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let p = a.profile;
    let mut sites: Vec<_> = counts
        .sites
        .iter()
        .filter(|s| {
            a.selection.filter().is_none_or(|t| {
                p.frame(s.caller).name.contains(t) || p.frame(s.callee).name.contains(t)
            })
        })
        .collect();
    sites.sort_by(|x, y| {
        y.calls
            .cmp(&x.calls)
            .then_with(|| p.frame(x.caller).name.cmp(&p.frame(y.caller).name))
            .then(x.il_offset.cmp(&y.il_offset))
    });
    let shown = top
        .filter(|&n| n > 0)
        .unwrap_or(usize::MAX)
        .min(sites.len());
    writeln!(out)?;
    writeln!(out, "Call sites (exact calls, caller -> callee):")?;
    writeln!(out, "{:>10}  Caller (IL offset) -> callee", "Calls")?;
    for s in &sites[..shown] {
        writeln!(
            out,
            "{:>10}  {} (IL_{:04x}) -> {}",
            s.calls,
            p.frame(s.caller).name,
            s.il_offset,
            p.frame(s.callee).name
        )?;
    }
    if shown < sites.len() {
        writeln!(out, "... {} more call sites not shown", sites.len() - shown)?;
    }
    Ok(())
}

fn write_tree_line(
    a: &Analysis<'_>,
    tree: &MergedTree,
    n: usize,
    depth: usize,
    grand: u64,
    calls: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let w = format!("Total {}", a.metric.column()).len().max(10);
    let node = &tree.nodes[n];
    write!(
        out,
        "{:>6.2}%  {:>6.2}%  {:>w$}  ",
        percent(node.total_values.get(a.metric), grand),
        percent(node.self_values.get(a.metric), grand),
        units::value(a.metric, node.total_values.get(a.metric)),
    )?;
    if calls {
        write!(out, "{:>10}  ", node.calls)?;
    }
    let name = node.label.name(a.profile);
    let module = node.label.module_shown(a.profile);
    let indent = depth * 2;
    if module.is_empty() {
        writeln!(out, "{:indent$}{name}", "")?;
    } else {
        writeln!(out, "{:indent$}{name}  [{module}]", "")?;
    }
    Ok(())
}

/// The sampling facts of a sample-mode profile: clock and rates, the profiler's cost, stacks
/// that ended early.
fn write_sampling(s: &crate::sampling::SamplingInfo, out: &mut dyn Write) -> Result<(), Error> {
    let rate = |hz: f64| format!("{hz:.0}/s");
    if s.cpu_clock.is_empty() {
        writeln!(
            out,
            "CPU samples: none (no per-thread CPU clock was available)"
        )?;
    } else {
        let busiest: Vec<String> = s
            .busiest_threads
            .iter()
            .map(|t| {
                let name = if t.name.is_empty() {
                    format!("thread {}", t.tid)
                } else {
                    t.name.clone()
                };
                match t.perf_cpu_share {
                    // Adaptive clocks: how much of the thread's CPU the precise clock saw.
                    Some(share) if share > 0.0 && s.by_clock.timer_samples > 0 => format!(
                        "{name} {} ({:.0}% of its CPU by perf)",
                        rate(t.rate_hz),
                        share * 100.0
                    ),
                    _ => format!("{name} {}", rate(t.rate_hz)),
                }
            })
            .collect();
        writeln!(
            out,
            "CPU samples: {}, {}/s of CPU time asked, {} reached{}",
            units::count(s.cpu_samples),
            s.cpu_rate_hz,
            rate(s.cpu_rate_reached_hz),
            if busiest.is_empty() {
                String::new()
            } else {
                format!(" (busiest threads: {})", busiest.join(", "))
            }
        )?;
        let c = &s.by_clock;
        let by = if c.perf_samples > 0 && c.timer_samples > 0 {
            format!(
                ": {} samples by perf events, {} by timers",
                units::count(c.perf_samples),
                units::count(c.timer_samples)
            )
        } else {
            String::new()
        };
        let tick = if c.timer_samples > 0 {
            "; a CPU-time timer fires at most once per scheduler tick"
        } else {
            ""
        };
        writeln!(out, "  clock: {}{by}{tick}", s.cpu_clock)?;
    }
    writeln!(
        out,
        "Wall-clock samples: {} at {}/s per thread; {} signals to blocked threads to learn where they wait",
        units::count(s.wall_samples),
        s.wall_rate_hz,
        units::count(s.questions)
    )?;
    let missed = if s.cpu_missed_ns > 0 {
        let shown = if s.missed_carriers > 0 {
            "is split between each thread's samples on either side of the gap"
        } else {
            "is shown as [CPU of missed samples]"
        };
        format!(
            "{} CPU samples missed (the sampler fell behind; their {} of CPU {shown})",
            units::count(s.samples_missed),
            units::duration(s.cpu_missed_ns)
        )
    } else {
        format!("{} CPU samples missed", units::count(s.samples_missed))
    };
    let missed = if s.cpu_unsampled_ns > 0 {
        format!(
            "{missed}; {} of CPU after threads' last samples is shown as [CPU after the last sample]",
            units::duration(s.cpu_unsampled_ns)
        )
    } else {
        missed
    };
    let induced = if s.induced_cpu_ns > 0 {
        format!(
            ", the runtime's event source set-up for its event session {}",
            units::duration(s.induced_cpu_ns)
        )
    } else {
        String::new()
    };
    let per_sample = s
        .sampler_ns_per_sample()
        .map(|ns| format!(" ({} a sample)", units::duration(ns)))
        .unwrap_or_default();
    writeln!(
        out,
        "Profiler CPU: {:.2}% of the program's (signal handlers {}, sampler {}{per_sample}, symbol reading {}, callbacks {}{induced}), not counted as the program's; {missed}",
        100.0 * s.overhead_share(),
        units::duration(s.handler_cpu_ns),
        units::duration(s.sampler_cpu_ns.saturating_sub(s.symbols_cpu_ns)),
        units::duration(s.symbols_cpu_ns),
        units::duration(s.agent_cpu_ns),
    )?;
    if s.ended_early == 0 {
        writeln!(out, "Stacks: every stack reaches its thread's start")?;
    } else {
        let reasons: Vec<String> = s
            .ended_early_by_reason
            .iter()
            .map(|r| format!("{} {}", units::count(r.samples), r.reason))
            .collect();
        writeln!(
            out,
            "Stacks: {} of {} samples ({:.2}%) end before their thread's start: {}",
            units::count(s.ended_early),
            units::count(s.samples),
            100.0 * s.ended_early as f64 / s.samples.max(1) as f64,
            reasons.join(", ")
        )?;
    }
    Ok(())
}
