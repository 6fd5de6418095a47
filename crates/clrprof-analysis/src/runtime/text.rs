//! The runtime views as text.

use std::io::{self, Write};

use clrprof_trace::{EventCategory, EventKind};

use super::{RuntimeViews, View};
use crate::units::{count, duration as ms};

/// Writes one view. `rows` limits long tables (the full report shows the first rows of each
/// view; `report --<view>` shows all).
pub fn write_view(
    v: &RuntimeViews,
    view: View,
    rows: Option<usize>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let rows = rows.unwrap_or(usize::MAX);
    match view {
        View::Exceptions => exceptions(v, rows, out),
        View::Jit => jit(v, rows, out),
        View::Loads => loads(v, rows, out),
        View::Threads => threads(v, rows, out),
        View::Native => native(v, rows, out),
        View::Suspensions => suspensions(v, out),
    }?;
    lost_events(v, view, out)
}

/// Which event categories a view is made of.
fn categories(view: View) -> &'static [EventCategory] {
    match view {
        View::Exceptions => &[EventCategory::Exception],
        View::Jit => &[EventCategory::Jit],
        View::Loads => &[
            EventCategory::AppDomain,
            EventCategory::Assembly,
            EventCategory::Module,
            EventCategory::Class,
        ],
        View::Threads => &[EventCategory::Thread],
        View::Native => &[EventCategory::Transition],
        View::Suspensions => &[EventCategory::Suspension],
    }
}

/// Under a view, the events of its kinds that the agent dropped: its figures miss them.
fn lost_events(v: &RuntimeViews, view: View, out: &mut dyn Write) -> io::Result<()> {
    let lost: Vec<String> = v
        .events_lost
        .iter()
        .filter(|(name, _)| {
            EventKind::from_name(name).is_some_and(|k| categories(view).contains(&k.category()))
        })
        .map(|(name, n)| format!("{} {name}", count(*n)))
        .collect();
    if !lost.is_empty() {
        writeln!(
            out,
            "  LOST      {} events (the agent's buffer was full): the figures above miss them",
            lost.join(", ")
        )?;
    }
    Ok(())
}

/// Whether a view has anything to show.
pub fn has_data(v: &RuntimeViews, view: View) -> bool {
    match view {
        View::Exceptions => !v.exceptions.is_empty(),
        View::Jit => !v.jit.is_empty() || !v.jit_modules.is_empty(),
        View::Loads => !v.loads.is_empty(),
        View::Threads => !v.threads.is_empty(),
        View::Native => !v.native.is_empty(),
        View::Suspensions => !v.suspensions.is_empty(),
    }
}

fn more(out: &mut dyn Write, shown: usize, total: usize, flag: &str) -> io::Result<()> {
    if total > shown {
        writeln!(out, "  ... {} more (clrprof report {flag})", total - shown)?;
    }
    Ok(())
}

/// One load: when it started, how long it took, what kind of thing and its name.
fn load_row(out: &mut dyn Write, l: &super::Load) -> io::Result<()> {
    writeln!(
        out,
        "  {:>10}  {:>10}  {:<9}  {}",
        ms(l.start_ns),
        ms(l.duration_ns),
        l.kind,
        l.name
    )
}

fn exceptions(v: &RuntimeViews, rows: usize, out: &mut dyn Write) -> io::Result<()> {
    let total: u64 = v.exceptions.iter().map(|x| x.count).sum();
    let rethrows: u64 = v.exceptions.iter().map(|x| x.rethrows).sum();
    let lost_any = v.events_lost.keys().any(|name| {
        EventKind::from_name(name).is_some_and(|k| k.category() == EventCategory::Exception)
    });
    match v.events_lost.get("ExceptionThrown") {
        // Without every callback of each exception, throws, rethrows and catches cannot be
        // paired exactly: an exception whose catch was lost still looks in flight.
        _ if lost_any => writeln!(
            out,
            "\nExceptions ({} seen thrown, {} more lost; throws, rethrows and catches below are paired from incomplete events)",
            count(total + rethrows),
            count(v.events_lost.get("ExceptionThrown").copied().unwrap_or(0)),
        )?,
        _ => writeln!(
            out,
            "\nExceptions ({} thrown, {} rethrown)",
            count(total),
            count(rethrows)
        )?,
    }
    for x in v.exceptions.iter().take(rows) {
        writeln!(out, "  {:>7} x {}", count(x.count), x.exception_type)?;
        if !x.message.is_empty() {
            let others = x.messages.len().saturating_sub(1);
            if others > 0 {
                writeln!(
                    out,
                    "            message   {:?} (+{others} other)",
                    x.message
                )?;
            } else {
                writeln!(out, "            message   {:?}", x.message)?;
            }
        }
        writeln!(out, "            thrown in {}", x.throw_function)?;
        match &x.catch_function {
            Some(c) => writeln!(
                out,
                "            caught in {c}, {} after the throw on average (max {})",
                ms(x.throw_to_catch_ns / x.count.max(1)),
                ms(x.max_throw_to_catch_ns)
            )?,
            None => writeln!(out, "            NOT CAUGHT while recording")?,
        }
        for r in &x.rethrow_functions {
            writeln!(
                out,
                "            rethrown  {} x in {}",
                count(r.count),
                r.function
            )?;
        }
        for f in &x.finally_blocks {
            writeln!(
                out,
                "            finally   {} x in {}",
                count(f.count),
                f.function
            )?;
        }
        if x.filters_run > 0 {
            writeln!(out, "            filters   {} run", count(x.filters_run))?;
        }
        writeln!(
            out,
            "            unwound   {} frame{}",
            count(x.frames_unwound),
            if x.frames_unwound == 1 { "" } else { "s" }
        )?;
        if let Some((first, rest)) = x.throw_stack.split_first() {
            writeln!(out, "            at {first}")?;
            for f in rest.iter().take(7) {
                writeln!(out, "               {f}")?;
            }
        }
    }
    more(out, rows, v.exceptions.len(), "--exceptions")
}

fn jit(v: &RuntimeViews, rows: usize, out: &mut dyn Write) -> io::Result<()> {
    let compilations: u64 = v.jit.iter().map(|j| j.count).sum();
    let time: u64 = v.jit.iter().map(|j| j.jit_ns).sum();
    let precompiled: u64 = v.jit_modules.iter().map(|m| m.precompiled).sum();
    let compiled = v.jit.iter().filter(|j| j.count > 0).count();
    writeln!(
        out,
        "\nJIT ({} methods, {} compilations, {} in the JIT; {} methods precompiled)",
        count(compiled as u64),
        count(compilations),
        ms(time),
        count(precompiled)
    )?;
    if precompiled == 0 && !v.native.is_empty() {
        writeln!(
            out,
            "  (the runtime uses no precompiled code while native transitions are recorded; \
             record --events jit alone for the program's real JIT cost)"
        )?;
    }
    writeln!(
        out,
        "  {:>10}  {:>7}  {:>8}  {:<7}  method",
        "jit time", "count", "IL bytes", "kind"
    )?;
    for j in v.jit.iter().take(rows) {
        writeln!(
            out,
            "  {:>10}  {:>7}  {:>8}  {:<7}  {}  [{}]",
            ms(j.jit_ns),
            count(j.count),
            count(j.il_bytes),
            format!("{:?}", j.kind).to_lowercase(),
            j.method,
            j.module
        )?;
    }
    more(out, rows, v.jit.len(), "--jit")?;
    writeln!(
        out,
        "\n  By module: {:>10}  {:>7}  {:>11}  module",
        "jit time", "methods", "precompiled"
    )?;
    for m in v.jit_modules.iter().take(rows) {
        writeln!(
            out,
            "             {:>10}  {:>7}  {:>11}  {}",
            ms(m.jit_ns),
            count(m.methods),
            count(m.precompiled),
            if m.module.is_empty() { "?" } else { &m.module }
        )?;
    }
    if let Some(s) = &v.startup {
        writeln!(
            out,
            "\nStartup: {} started running {} after the runtime loaded the profiler",
            s.main,
            ms(s.main_ns)
        )?;
        writeln!(
            out,
            "  before it: {} assemblies, {} modules, {} classes loaded; {} methods compiled in {}",
            count(s.assemblies.len() as u64),
            count(s.modules_loaded),
            count(s.classes_loaded),
            count(s.methods_compiled),
            ms(s.jit_ns)
        )?;
        for a in s.assemblies.iter().take(rows) {
            writeln!(
                out,
                "  {:>10}  {:>10}  {}",
                ms(a.loaded_ns),
                ms(a.duration_ns),
                a.name
            )?;
        }
    }
    Ok(())
}

fn loads(v: &RuntimeViews, rows: usize, out: &mut dyn Write) -> io::Result<()> {
    let of = |kind: &str| v.loads.iter().filter(|l| l.kind == kind).count() as u64;
    let failed: Vec<_> = v.loads.iter().filter(|l| l.failed).collect();
    writeln!(
        out,
        "\nLoads ({} app domains, {} assemblies, {} modules, {} classes; {} failed)",
        count(of("appdomain")),
        count(of("assembly")),
        count(of("module")),
        count(of("class")),
        count(failed.len() as u64)
    )?;
    for l in &failed {
        writeln!(
            out,
            "  FAILED {:<9} {}  (HRESULT {:#010x})",
            l.kind, l.name, l.status
        )?;
    }
    writeln!(
        out,
        "  {:>10}  {:>10}  {:<9}  name (in order; classes: slowest only)",
        "at", "took", "kind"
    )?;
    let mut shown = 0;
    for l in v.loads.iter().filter(|l| l.kind != "class").take(rows) {
        load_row(out, l)?;
        shown += 1;
    }
    let others = v.loads.iter().filter(|l| l.kind != "class").count();
    more(out, shown, others, "--loads --format json")?;
    let mut classes: Vec<_> = v.loads.iter().filter(|l| l.kind == "class").collect();
    classes.sort_by_key(|l| std::cmp::Reverse(l.duration_ns));
    for l in classes.iter().take(rows.min(10)) {
        load_row(out, l)?;
    }
    Ok(())
}

fn threads(v: &RuntimeViews, rows: usize, out: &mut dyn Write) -> io::Result<()> {
    let created = v.threads.iter().filter(|t| t.created_ns.is_some()).count();
    let destroyed = v
        .threads
        .iter()
        .filter(|t| t.destroyed_ns.is_some())
        .count();
    writeln!(out, "\nThreads ({created} created, {destroyed} destroyed)")?;
    writeln!(
        out,
        "  {:>8}  {:>10}  {:>10}  {:>10}  name",
        "tid", "created", "destroyed", "lifetime"
    )?;
    let at = |t: Option<u64>| t.map_or_else(|| "-".to_string(), ms);
    for t in v.threads.iter().take(rows) {
        writeln!(
            out,
            "  {:>8}  {:>10}  {:>10}  {:>10}  {}",
            t.tid,
            at(t.created_ns),
            at(t.destroyed_ns),
            at(t.lifetime_ns),
            t.name
        )?;
    }
    more(out, rows, v.threads.len(), "--threads")
}

fn native(v: &RuntimeViews, rows: usize, out: &mut dyn Write) -> io::Result<()> {
    let calls: u64 = v.native.iter().map(|n| n.calls).sum();
    writeln!(out, "\nNative calls ({} calls)", count(calls))?;
    writeln!(
        out,
        "  {:>9}  {:>10}  {:>10}  {:>10}  {:<15}  target (method)",
        "calls", "total", "average", "max", "direction"
    )?;
    for n in v.native.iter().take(rows) {
        writeln!(
            out,
            "  {:>9}  {:>10}  {:>10}  {:>10}  {:<15}  {} ({})",
            count(n.calls),
            ms(n.total_ns),
            ms(n.total_ns / n.calls.max(1)),
            ms(n.max_ns),
            n.direction,
            n.target,
            n.function
        )?;
    }
    more(out, rows, v.native.len(), "--native")
}

fn suspensions(v: &RuntimeViews, out: &mut dyn Write) -> io::Result<()> {
    let n: u64 = v.suspensions.iter().map(|s| s.count).sum();
    writeln!(out, "\nRuntime suspensions ({})", count(n))?;
    writeln!(
        out,
        "  {:>7}  {:<20} {:>3}  {:>10}  {:>10}  {:>10}",
        "count", "reason", "gc", "total", "max", "suspending"
    )?;
    for s in &v.suspensions {
        writeln!(
            out,
            "  {:>7}  {:<20} {:>3}  {:>10}  {:>10}  {:>10}",
            count(s.count),
            s.reason,
            if s.for_gc { "yes" } else { "no" },
            ms(s.total_ns),
            ms(s.max_ns),
            ms(s.suspending_ns)
        )?;
    }
    Ok(())
}
