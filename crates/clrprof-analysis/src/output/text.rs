//! The text report: a header, the top table and optionally an indented call tree.
//!
//! With a width ([`Text::width`]: the terminal's, for a report shown on one) every line fits
//! it: function names are shortened as [`super::fit`] says, the module column narrows or goes,
//! a tree deeper than the width allows is drawn at the deepest indentation with its depth,
//! and sentences are wrapped. Without one, nothing is cut.

use std::io::Write;

use crate::model::{Profile, ProfileKind};
use crate::query::{Metric, Query};
use crate::top::percent;
use crate::tree::{Label, MergedTree};
use crate::{Analysis, Error, Render, units};

use super::fit::{self, shorten_module, shorten_name, write_wrapped};

/// How many functions the text report lists unless `--top` says otherwise.
pub const TEXT_TOP: usize = 25;

/// The human-readable report.
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    /// Also print the merged call tree.
    pub tree: bool,
    /// In the tree, leave out nodes whose total is below this percentage of the grand total.
    pub tree_threshold_percent: f64,
    /// Split the tree per thread (a node per thread at the top). The tree of wall time is
    /// always split per thread: each thread's time is its own.
    pub per_thread: bool,
    /// Longest function name before the module column is pushed right (longer names are
    /// printed whole), when no width is given.
    pub name_width: usize,
    /// The columns every line must fit in (`None`: no limit, nothing is cut).
    pub width: Option<usize>,
}

impl Default for Text {
    fn default() -> Self {
        Text {
            tree: false,
            tree_threshold_percent: 0.5,
            per_thread: false,
            name_width: 80,
            width: None,
        }
    }
}

impl Render for Text {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let metric = query.resolve_metric(profile)?;
        let per_thread = self.per_thread || metric == Metric::Wall;
        let a = Analysis::new(profile, query, per_thread)?;
        write_header(&a, self.width, out)?;
        write_top(&a, Some(query.top.unwrap_or(TEXT_TOP)), self, out)?;
        if self.tree {
            writeln!(out)?;
            write_tree(&a, self.tree_threshold_percent, self.width, out)?;
        }
        if let Some(counts) = a.call_counts() {
            write_call_sites(&a, counts, query.top, self.width, out)?;
        }
        let notes = a.notes();
        if !notes.is_empty() {
            writeln!(out)?;
            for n in notes {
                write_wrapped(out, self.width, "Note: ", "  ", &n)?;
            }
        }
        Ok(())
    }
}

fn write_header(a: &Analysis<'_>, width: Option<usize>, out: &mut dyn Write) -> Result<(), Error> {
    let p = a.profile;
    let accounting = a.sample_accounting();
    // The samples the figures are made of (in sample mode, those that weigh in the metric).
    let samples = accounting
        .as_ref()
        .map_or(a.tree.total().samples, |acc| acc.shown);
    write_wrapped(
        out,
        width,
        "",
        "  ",
        &format!(
            "{} mode, metric {} ({}), {} samples, {} of {} threads, duration {}",
            p.kind,
            a.metric,
            a.metric.unit(),
            samples,
            a.selection.threads.len(),
            p.threads.len(),
            units::duration(p.duration_ns),
        ),
    )?;
    if let Some(s) = &p.sampling {
        write_sampling(s, width, out)?;
    }
    if let Some(acc) = accounting.filter(|acc| !acc.is_whole()) {
        write_wrapped(out, width, "Samples: ", "  ", &acc.sentence())?;
    }
    if a.selection.threads.len() != p.threads.len() {
        let names: Vec<String> = a
            .selection
            .threads
            .iter()
            .map(|&t| p.threads[t].label())
            .collect();
        let mut line = names.join(", ");
        let services = a.selection.services_left_out.len();
        if services > 0 {
            let (s, are) = if services == 1 {
                ("", "is")
            } else {
                ("s", "are")
            };
            line.push_str(&format!(
                "; the runtime's {services} service thread{s} {are} left out, as they wait all \
                 along (--thread all shows them)"
            ));
        }
        write_wrapped(out, width, "Threads: ", "  ", &line)?;
    }
    if let Some(f) = a.selection.filter() {
        writeln!(out, "Filter: stacks with a frame containing \"{f}\"")?;
    }
    write_wrapped(out, width, "", "  ", &total_line(a))?;
    Ok(())
}

/// `Total CPU time: 1.234 s`, with what the total is made of where it needs saying: the
/// counted calls, or the threads whose wall time is summed.
fn total_line(a: &Analysis<'_>) -> String {
    let total = units::value(a.metric, a.grand_total());
    let mut line = format!("Total {}: {total}", a.metric.description());
    match a.metric {
        Metric::Calls if a.profile.kind == ProfileKind::Count => {
            let functions = a.call_counts().map_or(0, |c| {
                c.functions
                    .keys()
                    .filter(|&&f| a.selection.frame_matches(f))
                    .count()
            });
            let s = if functions == 1 { "" } else { "s" };
            line.push_str(&format!(
                " (the entries of the {functions} counted function{s})"
            ));
        }
        Metric::Calls => {}
        Metric::Wall => {
            // Wall time is each thread's: two threads waiting for a second make two seconds.
            let mut threads: Vec<(u64, String)> = a
                .tree
                .threads
                .iter()
                .filter(|t| t.values.wall_ns > 0)
                .map(|t| {
                    let thread = &a.profile.threads[t.thread];
                    let name = if thread.name.is_empty() {
                        format!("thread {}", thread.tid)
                    } else {
                        thread.name.clone()
                    };
                    (t.values.wall_ns, name)
                })
                .collect();
            threads.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
            const NAMED: usize = 4;
            let mut each: Vec<String> = threads
                .iter()
                .take(NAMED)
                .map(|(ns, name)| format!("{name} {}", units::duration(*ns)))
                .collect();
            if threads.len() > NAMED {
                each.push(format!("{} more", threads.len() - NAMED));
            }
            let n = threads.len();
            let of = if n == 1 {
                "the wall time of 1 thread".to_string()
            } else {
                format!("the wall time of {n} threads summed")
            };
            line.push_str(&format!(
                ", {of} ({}) in a recording of {}",
                each.join(", "),
                units::duration(a.profile.duration_ns)
            ));
        }
        _ if a.has_calls() => {
            line.push_str(&format!("; {} calls counted", a.total_calls()));
        }
        _ => {}
    }
    line
}

/// A table's numeric cell: `-` where the value is unknown.
fn calls_cell(calls: Option<u64>) -> String {
    calls.map_or_else(|| "-".to_string(), |c| c.to_string())
}

/// How a row's name and module share the columns left after the numbers: the name's width
/// and the module's (0: no module column).
fn name_and_module_widths(
    names: &[String],
    modules: &[String],
    prefix: usize,
    options: &Text,
) -> (usize, usize) {
    let longest = |v: &[String]| v.iter().map(|n| fit::width(n)).max().unwrap_or(0);
    let name = longest(names).max("Function".len());
    let module = longest(modules).max("Module".len());
    let Some(width) = options.width else {
        return (name.min(options.name_width.max("Function".len())), module);
    };
    let available = width.saturating_sub(prefix);
    if name + 2 + module <= available {
        return (name, module);
    }
    // The module column takes at most a third of the room, and goes when that is too narrow
    // to read; the names have the rest.
    let module = module.min(available / 3);
    if module < 10 {
        return (available.max("Function".len()), 0);
    }
    (
        available.saturating_sub(module + 2).max("Function".len()),
        module,
    )
}

fn write_top(
    a: &Analysis<'_>,
    top: Option<usize>,
    options: &Text,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let table = a.top(top);
    writeln!(out)?;
    if table.rows.is_empty() {
        writeln!(out, "No samples match.")?;
        return Ok(());
    }
    // Count mode's calls are per function only: with the `calls` metric a function's self and
    // total are its calls, so one column says it.
    let calls_only = a.metric == Metric::Calls && a.profile.kind == ProfileKind::Count;
    // With the `calls` metric (trace mode) the self column is the calls column.
    let calls_column = a.has_calls() && a.metric != Metric::Calls;
    // Where the samples tell the kernel's share of the CPU, the share of each function's own
    // CPU spent there (page faults, system calls), as `top` splits user and system time.
    let sys = a.metric == Metric::Cpu && a.tree.total().mode_known_cpu_ns > 0;

    // The numeric columns: heading, right-aligned width, each row's cell.
    let mut columns: Vec<(String, usize, Vec<String>)> = Vec::new();
    let pct = |v: u64| format!("{:.2}%", table.percent(v));
    let value = |v: u64| units::value(a.metric, v);
    if calls_only {
        columns.push((
            "Calls%".into(),
            7,
            table.rows.iter().map(|r| pct(r.self_weight)).collect(),
        ));
        columns.push((
            "Calls".into(),
            10,
            table.rows.iter().map(|r| calls_cell(r.calls)).collect(),
        ));
    } else {
        let (self_head, total_head) = (
            format!("Self {}", a.metric.column()),
            format!("Total {}", a.metric.column()),
        );
        let w = total_head.len().max(10);
        columns.push((
            "Self%".into(),
            7,
            table.rows.iter().map(|r| pct(r.self_weight)).collect(),
        ));
        columns.push((
            self_head,
            w,
            table.rows.iter().map(|r| value(r.self_weight)).collect(),
        ));
        columns.push((
            "Total%".into(),
            7,
            table.rows.iter().map(|r| pct(r.total_weight)).collect(),
        ));
        columns.push((
            total_head,
            w,
            table.rows.iter().map(|r| value(r.total_weight)).collect(),
        ));
        if sys {
            let cells = table
                .rows
                .iter()
                .map(|r| {
                    if r.self_mode_known_ns > 0 {
                        format!("{:.0}%", percent(r.self_sys_ns, r.self_mode_known_ns))
                    } else {
                        "-".into()
                    }
                })
                .collect();
            columns.push(("Sys%".into(), 5, cells));
        }
        if calls_column {
            columns.push((
                "Calls".into(),
                10,
                table.rows.iter().map(|r| calls_cell(r.calls)).collect(),
            ));
        }
    }
    let prefix: usize = columns.iter().map(|(_, w, _)| w + 2).sum();

    let names: Vec<String> = table
        .rows
        .iter()
        .map(|r| r.label.name(a.profile).into_owned())
        .collect();
    let modules: Vec<String> = table
        .rows
        .iter()
        .map(|r| r.label.module_shown(a.profile).into_owned())
        .collect();
    let (name_w, module_w) = name_and_module_widths(&names, &modules, prefix, options);

    for (heading, w, _) in &columns {
        write!(out, "{heading:>w$}  ")?;
    }
    if module_w > 0 {
        writeln!(out, "{:<name_w$}  Module", "Function")?;
    } else {
        writeln!(out, "Function")?;
    }
    for (i, (name, module)) in names.iter().zip(&modules).enumerate() {
        for (_, w, cells) in &columns {
            write!(out, "{:>w$}  ", cells[i])?;
        }
        let name = match options.width {
            Some(_) => shorten_name(name, name_w),
            None => name.into(),
        };
        if module.is_empty() || module_w == 0 {
            writeln!(out, "{name}")?;
        } else {
            let module = match options.width {
                Some(_) => shorten_module(module, module_w),
                None => module.into(),
            };
            // Padded by characters: a shortened name may hold an ellipsis.
            let pad = name_w.saturating_sub(fit::width(&name));
            writeln!(out, "{name}{:pad$}  {module}", "")?;
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

/// Narrowest a name is made in the tree before the indentation stops growing.
const TREE_MIN_NAME: usize = 24;

fn write_tree(
    a: &Analysis<'_>,
    threshold: f64,
    width: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    if a.metric == Metric::Calls && a.profile.kind == ProfileKind::Count {
        write_wrapped(
            out,
            width,
            "",
            "  ",
            "Call tree: count mode counts the calls of each function and of each call site, \
             not of each call path; its call tree is that of the samples (--metric cpu --tree), \
             with the calls each function made to its callees",
        )?;
        return Ok(());
    }
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
    let prefix = 7 + 2 + 7 + 2 + w + 2 + if calls { 12 } else { 0 };

    let zero_weight = |n: usize| {
        let node = &tree.nodes[n];
        node.total_values.get(a.metric) == 0 && !(calls && node.calls > 0)
    };
    // Children are visited only below shown nodes, so each hidden node met here is the top
    // of a hidden subtree.
    let mut elided = 0usize;
    for (n, depth) in tree.preorder(shown) {
        if shown(n) {
            write_tree_line(
                a,
                tree,
                n,
                depth,
                grand,
                w,
                width.map(|w| w.saturating_sub(prefix)),
                out,
            )?;
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
    width: Option<usize>,
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
    let shown = match top {
        Some(0) => sites.len(),
        Some(n) => n.min(sites.len()),
        None => TEXT_TOP.min(sites.len()),
    };
    writeln!(out)?;
    writeln!(out, "Call sites (exact calls, caller -> callee):")?;
    writeln!(out, "{:>10}  Caller (IL offset) -> callee", "Calls")?;
    for s in &sites[..shown] {
        let (caller, callee) = (&p.frame(s.caller).name, &p.frame(s.callee).name);
        let (caller, callee) = match width {
            // 10 + 2 for the count, 14 for ` (IL_0000) -> `: the rest for the names, shared.
            Some(w) => {
                let room = w.saturating_sub(26);
                let half = room / 2;
                let callee_w = room - half.min(fit::width(caller));
                let caller_w = room - fit::width(callee).min(callee_w);
                (
                    shorten_name(caller, caller_w),
                    shorten_name(callee, callee_w),
                )
            }
            None => (caller.into(), callee.into()),
        };
        writeln!(
            out,
            "{:>10}  {caller} (IL_{:04x}) -> {callee}",
            s.calls, s.il_offset,
        )?;
    }
    if shown < sites.len() {
        writeln!(
            out,
            "... {} more call sites not shown (--top 0 shows all)",
            sites.len() - shown
        )?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn write_tree_line(
    a: &Analysis<'_>,
    tree: &MergedTree,
    n: usize,
    depth: usize,
    grand: u64,
    w: usize,
    room: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let node = &tree.nodes[n];
    write!(
        out,
        "{:>6.2}%  {:>6.2}%  {:>w$}  ",
        percent(node.total_values.get(a.metric), grand),
        percent(node.self_values.get(a.metric), grand),
        units::value(a.metric, node.total_values.get(a.metric)),
    )?;
    if a.has_calls() {
        write!(out, "{:>10}  ", calls_cell(a.node_calls(n)))?;
    }
    let name = node.label.name(a.profile);
    let module = node.label.module_shown(a.profile);
    let Some(room) = room else {
        let indent = depth * 2;
        if module.is_empty() {
            writeln!(out, "{:indent$}{name}", "")?;
        } else {
            writeln!(out, "{:indent$}{name}  [{module}]", "")?;
        }
        return Ok(());
    };
    // The indentation stops where a name would have less than TREE_MIN_NAME columns; a
    // deeper node says its depth there (`+31`).
    let deepest = room.saturating_sub(TREE_MIN_NAME);
    let (indent, marker) = if depth * 2 <= deepest {
        (depth * 2, String::new())
    } else {
        let marker = format!("+{depth} ");
        (deepest.saturating_sub(marker.len()), marker)
    };
    let room = room.saturating_sub(indent + marker.len());
    let module_part = if module.is_empty() {
        String::new()
    } else {
        format!("  [{module}]")
    };
    let line = if fit::width(&name) + fit::width(&module_part) <= room {
        format!("{name}{module_part}")
    } else if matches!(node.label, Label::Frame(_))
        && !module_part.is_empty()
        && room > fit::width(&module_part) + TREE_MIN_NAME
    {
        format!(
            "{}{module_part}",
            shorten_name(&name, room - fit::width(&module_part))
        )
    } else {
        shorten_name(&name, room).into_owned()
    };
    writeln!(out, "{:indent$}{marker}{line}", "")?;
    Ok(())
}

/// The sampling facts of a sample-mode profile: clock and rates, the profiler's cost, stacks
/// that ended early.
fn write_sampling(
    s: &crate::sampling::SamplingInfo,
    width: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let rate = |hz: f64| format!("{hz:.0}/s");
    if s.cpu_clock.is_empty() {
        write_wrapped(
            out,
            width,
            "",
            "  ",
            "CPU samples: none (no per-thread CPU clock was available)",
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
        let text = format!(
            "CPU samples: {}, {}/s of CPU time asked, {} reached{}",
            units::count(s.cpu_samples),
            s.cpu_rate_hz,
            rate(s.cpu_rate_reached_hz),
            if busiest.is_empty() {
                String::new()
            } else {
                format!(" (busiest threads: {})", busiest.join(", "))
            }
        );
        write_wrapped(out, width, "", "  ", &text)?;
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
        let text = format!("clock: {}{by}{tick}", s.cpu_clock);
        write_wrapped(out, width, "  ", "    ", &text)?;
        if s.timer_blind_stretches > 0 {
            let text = format!(
                "warning: {} times a thread used 40 ms of CPU that its CPU-time timer did not \
                 sample (the thread ran only between the kernel's scheduler ticks, on a machine \
                 with more runnable threads than cores); that CPU went to the stack of the \
                 sample that came next{}",
                units::count(s.timer_blind_stretches),
                if s.cpu_clock.contains("perf") {
                    "; such a thread was moved to a perf event"
                } else {
                    "; --cpu-clock perf samples such threads exactly"
                }
            );
            write_wrapped(out, width, "  ", "    ", &text)?;
        }
    }
    let text = format!(
        "Wall-clock samples: {} at {}/s per thread; {} signals to blocked threads to learn where they wait",
        units::count(s.wall_samples),
        s.wall_rate_hz,
        units::count(s.questions)
    );
    write_wrapped(out, width, "", "  ", &text)?;
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
    let text = format!(
        "Profiler CPU: {:.2}% of the program's (signal handlers {}, sampler {}{per_sample}, symbol reading {}, writer {}, callbacks {}{induced}), not counted as the program's; {missed}",
        100.0 * s.overhead_share(),
        units::duration(s.handler_cpu_ns),
        units::duration(s.sampler_cpu_ns.saturating_sub(s.symbols_cpu_ns)),
        units::duration(s.symbols_cpu_ns),
        units::duration(s.writer_cpu_ns),
        units::duration(s.agent_cpu_ns),
    );
    write_wrapped(out, width, "", "  ", &text)?;
    if s.ended_early == 0 {
        writeln!(out, "Stacks: every stack reaches its thread's start")?;
    } else {
        let reasons: Vec<String> = s
            .ended_early_by_reason
            .iter()
            .map(|r| format!("{} {}", units::count(r.samples), r.reason))
            .collect();
        let text = format!(
            "Stacks: {} of {} samples ({:.2}%) end before their thread's start: {}",
            units::count(s.ended_early),
            units::count(s.samples),
            100.0 * s.ended_early as f64 / s.samples.max(1) as f64,
            reasons.join(", ")
        );
        write_wrapped(out, width, "", "  ", &text)?;
    }
    Ok(())
}
