//! The whole report of a trace: session facts, the events summary and the CPU profile, as
//! text for people and as JSON for programs (`docs/report-json.md`).

use std::io::Write;

use serde::Serialize;

use crate::blocked::WallRows;
use crate::events::EventSummary;
use crate::memory::TEXT_ROWS;
use crate::output::{CpuReport, Json, Render, Text, json_report};
use crate::runtime::{RuntimeViews, View, write_view};
pub use crate::session::SessionJson;
use crate::session::session_json;
use crate::trace::LoadedTrace;
use crate::units::{count, duration as ms};
use crate::{Error, Query};

/// The JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportJson {
    /// Session facts.
    pub session: SessionJson,
    /// The events summary (`events`, `exceptions`, `threads`, `gcs`, `modules`, `jit`, ...).
    #[serde(flatten)]
    pub events: EventSummary,
    /// The runtime views (`exceptions`, `jit`, `jit_modules`, `startup`, `loads`, `threads`,
    /// `native`, `suspensions`).
    #[serde(flatten)]
    pub runtime: RuntimeViews,
    /// The CPU part (`mode`, `metric`, `unit`, `functions`, `call_tree`, ...), when the trace
    /// has samples or call trees.
    #[serde(flatten)]
    pub cpu: Option<CpuReport>,
    /// Allocations (`allocations`, `allocation_stacks`, ...), when recorded with `--alloc`.
    #[serde(flatten)]
    pub alloc: Option<crate::memory::AllocReport>,
    /// Garbage collections with pauses and generation sizes, when GCs were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc: Option<crate::memory::GcReport>,
    /// The heap snapshots and the analysis of the last complete one, when recorded with
    /// `--heap-snapshot`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heap: Option<crate::memory::HeapJson>,
    /// Per thread, wall time running and blocked by reason, when the trace has wall-clock
    /// samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_by_reason: Option<Vec<crate::blocked::ThreadWall>>,
    /// Lock contention, when recorded with `--contention`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention: Option<crate::contention::ContentionReport>,
    /// Warnings and errors the agent reported.
    pub messages: Vec<String>,
    /// The agent's counters at the end of the recording (`events_dropped`,
    /// `shadow_stack_mismatches`, `call_tree_nodes`, ...).
    pub counters: std::collections::BTreeMap<String, u64>,
}

fn messages(t: &LoadedTrace) -> Vec<String> {
    t.messages
        .iter()
        .map(|m| format!("{}: {}", m.level.name(), m.text))
        .collect()
}

/// Allocation stacks the JSON report lists unless `--top` says otherwise.
const ALLOC_STACKS: usize = 100;

/// Top retainers the JSON report lists.
const HEAP_RETAINERS: usize = 20;

/// Builds the JSON report.
pub fn json(t: &LoadedTrace, query: &Query, options: &Json) -> Result<ReportJson, Error> {
    json_with(t, query, options, None, &mut |_| {})
}

/// Builds the JSON report, analysing heap snapshot `snapshot` (default: the last complete
/// one, if any) and telling `progress` what the heap analysis is doing.
pub fn json_with(
    t: &LoadedTrace,
    query: &Query,
    options: &Json,
    snapshot: Option<u32>,
    progress: &mut dyn FnMut(&str),
) -> Result<ReportJson, Error> {
    let profile = t.has_cpu_data().then(|| crate::profile::of(t));
    let cpu = match &profile {
        Some(p) => Some(json_report(p, query, options)?),
        None => None,
    };
    let wall_by_reason = crate::blocked::has_wall_samples(t).then(|| {
        let mut rows = crate::blocked::wall_by_reason(t);
        if let Some(p) = &profile {
            crate::blocked::mark_services(&mut rows, p);
        }
        rows
    });
    Ok(ReportJson {
        session: session_json(t),
        events: t.events.clone(),
        runtime: t.runtime.clone(),
        cpu,
        alloc: crate::memory::alloc::has_allocations(t).then(|| {
            // `--top 0`: every stack.
            crate::memory::alloc::report(
                t,
                match query.top {
                    Some(0) => usize::MAX,
                    top => top.unwrap_or(ALLOC_STACKS),
                },
            )
        }),
        gc: (!t.memory.gcs.is_empty()).then(|| crate::memory::gc::report(t)),
        heap: (snapshot.is_some() || t.memory.snapshots.iter().any(|s| s.complete))
            .then(|| crate::memory::heap_json(t, snapshot, HEAP_RETAINERS, progress))
            .transpose()?,
        wall_by_reason,
        contention: crate::contention::recorded(t).then(|| crate::contention::report(t)),
        messages: messages(t),
        counters: t.counters.clone(),
    })
}

/// Writes the JSON report.
pub fn write_json(
    t: &LoadedTrace,
    query: &Query,
    options: &Json,
    out: &mut dyn Write,
) -> Result<(), Error> {
    write_json_report(&json(t, query, options)?, options, out)
}

/// Writes a JSON report already built (possibly adjusted by the caller).
pub fn write_json_report(
    report: &ReportJson,
    options: &Json,
    out: &mut dyn Write,
) -> Result<(), Error> {
    crate::output::write_json(report, options.pretty, out)
}

/// How many rows of each runtime view the full text report shows.
const SUMMARY_ROWS: usize = 10;

/// Writes the text report: session, every events section that has data, then the CPU part.
pub fn write_text(
    t: &LoadedTrace,
    query: &Query,
    options: &Text,
    out: &mut dyn Write,
) -> Result<(), Error> {
    // A metric or thread the profile does not have is refused before anything is written.
    let profile = t.has_cpu_data().then(|| crate::profile::of(t));
    if let Some(p) = &profile {
        query.resolve_metric(p)?;
        crate::query::Selection::new(p, query)?;
    }
    let s = session_json(t);
    writeln!(out, "Session")?;
    if t.integrity.header_only {
        // Nothing to show: every field below would be a default, not a fact.
        writeln!(out, "  recorded  {}", ending(t, &s))?;
        for note in &s.integrity_notes {
            writeln!(out, "  WARNING   {note}")?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "  program   {} (pid {})",
        if s.command_line.is_empty() {
            "?"
        } else {
            &s.command_line
        },
        s.pid
    )?;
    writeln!(out, "  runtime   {}, agent {}", s.runtime, s.agent_version)?;
    writeln!(
        out,
        "  recorded  {}, mode {}, {}",
        ms(s.duration_ns),
        s.mode,
        ending(t, &s)
    )?;
    writeln!(
        out,
        "  data      {} records, {} events dropped, {} samples dropped",
        count(s.records),
        count(s.events_dropped),
        count(s.samples_dropped)
    )?;
    if let Some(naming) = &s.native_symbols {
        writeln!(out, "  symbols   {}", naming.summary())?;
    }
    for note in &s.integrity_notes {
        writeln!(out, "  WARNING   {note}")?;
    }
    for m in messages(t) {
        writeln!(out, "  agent     {m}")?;
    }

    let e = &t.events;
    if e.events.is_empty() && e.lost.is_empty() {
        writeln!(
            out,
            "\nEvents: none recorded (record --events gc,thread,exception,jit records \
             collections, threads, exceptions and compilations; --events all every cheap \
             category)"
        )?;
    } else {
        // One line: the count of each kind of callback is for programs (JSON); the views
        // below say what the events mean. Kinds the agent lost some of are listed.
        let total: u64 = e.events.values().sum();
        let lost: u64 = e.lost.values().sum();
        let kinds = e.events.len();
        let s = if kinds == 1 { "" } else { "s" };
        if lost > 0 {
            writeln!(
                out,
                "\nEvents: {} recorded of {kinds} kind{s}, {} lost (the agent's buffer was full); \
                 --format json counts each kind",
                count(total),
                count(lost)
            )?;
        } else {
            writeln!(
                out,
                "\nEvents: {} recorded of {kinds} kind{s} (--format json counts each kind)",
                count(total)
            )?;
        }
        let mut rows: Vec<(&String, u64, u64)> = e
            .lost
            .iter()
            .map(|(k, &l)| (k, e.events.get(k).copied().unwrap_or(0), l))
            .collect();
        rows.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        for (name, n, l) in rows {
            writeln!(out, "  {:>10}  {name} (and {} lost)", count(n), count(l))?;
        }
    }
    let r = &t.runtime;
    for view in [View::Exceptions, View::Threads] {
        if crate::runtime::text_has_data(r, view) {
            write_view(r, view, Some(SUMMARY_ROWS), out)?;
        }
    }
    if !e.gcs.is_empty() {
        match e.lost.get("GarbageCollectionStarted") {
            Some(lost) => writeln!(
                out,
                "\nGarbage collections ({} seen, {} more lost)",
                e.gcs.len(),
                count(*lost)
            )?,
            None => writeln!(out, "\nGarbage collections ({})", e.gcs.len())?,
        }
        crate::memory::write_unpaired_gc_ends(t, out)?;
        writeln!(
            out,
            "  {:>4}  {:>3}  {:<8} {:>12}  start",
            "#", "gen", "reason", "duration"
        )?;
        // The longest collections, in the order they ran: `--gc` lists every one.
        let mut shown: Vec<&crate::events::GcSummary> = e.gcs.iter().collect();
        if shown.len() > SUMMARY_ROWS {
            shown.sort_by(|a, b| {
                b.duration_ns
                    .cmp(&a.duration_ns)
                    .then(a.index.cmp(&b.index))
            });
            shown.truncate(SUMMARY_ROWS);
            shown.sort_by_key(|g| g.index);
        }
        for g in &shown {
            let d = match g.duration_ns {
                Some(d) => ms(d),
                None if g.end_lost => "end lost".to_string(),
                None => "?".to_string(),
            };
            writeln!(
                out,
                "  {:>4}  {:>3}  {:<8} {:>12}  {}",
                g.index,
                g.generation,
                g.reason,
                d,
                ms(g.start_ns)
            )?;
        }
        if shown.len() < e.gcs.len() {
            writeln!(
                out,
                "  ... the {} longest of {} shown (--gc lists every collection)",
                shown.len(),
                e.gcs.len()
            )?;
        }
    }
    if crate::runtime::text_has_data(r, View::Suspensions) {
        write_view(r, View::Suspensions, Some(SUMMARY_ROWS), out)?;
    }
    if !e.modules.is_empty() {
        writeln!(out, "\nModules ({} loaded)", e.modules.len())?;
        for m in e.modules.iter().take(TEXT_ROWS) {
            writeln!(out, "  {:<45} {}", m.name, m.path)?;
        }
        if e.modules.len() > TEXT_ROWS {
            writeln!(
                out,
                "  ... {} more (--format json lists all)",
                e.modules.len() - TEXT_ROWS
            )?;
        }
    }
    if !e.classes.is_empty() {
        writeln!(
            out,
            "\nClasses loaded: {} (--format json lists them)",
            count(e.classes.len() as u64)
        )?;
    }
    for view in [View::Jit, View::Native] {
        if crate::runtime::text_has_data(r, view) {
            write_view(r, view, Some(SUMMARY_ROWS), out)?;
        }
    }
    if let Some(profile) = profile {
        let metric = query.resolve_metric(&profile)?;
        writeln!(out, "\nProfile by {}", metric.description())?;
        options.render(&profile, query, out)?;
        if metric == crate::query::Metric::Wall && crate::blocked::has_wall_samples(t) {
            let top = match query.top {
                Some(0) => usize::MAX,
                top => top.unwrap_or(TEXT_ROWS),
            };
            let mut rows = crate::blocked::wall_by_reason(t);
            crate::blocked::mark_services(&mut rows, &profile);
            // The threads asked for, each in its row whatever `--top` says; else the
            // program's threads and the runtime's service threads in one row.
            let which = match &query.thread {
                None => WallRows::Program(top),
                Some(_) => WallRows::Threads(
                    crate::query::Selection::new(&profile, query)?
                        .threads
                        .iter()
                        .map(|&i| profile.threads[i].tid)
                        .collect(),
                ),
            };
            crate::blocked::write_wall_by_reason(&rows, &which, options.width, out)?;
        }
    } else if t.mode() != clrprof_trace::config::Mode::None {
        writeln!(out, "\nCPU: no samples were recorded")?;
    }
    Ok(())
}

/// How the recording ended: the program's end as `record` said it, and whether the profiler
/// was shut down.
fn ending(t: &LoadedTrace, s: &SessionJson) -> String {
    let detached = t.session_end.as_ref().is_some_and(|e| e.reason == "detach");
    match (&s.program_end, s.ended_cleanly) {
        _ if detached => "detached (the program went on running)".to_string(),
        (None, _) if t.integrity.being_written => {
            "still being recorded (the program has not ended yet)".to_string()
        }
        (None, _) if t.integrity.header_only => "nothing was recorded".to_string(),
        (Some(end), true) => format!("the program ended: {end}"),
        (Some(end), false) => {
            format!("the program ended: {end}, WITHOUT profiler shutdown (crash or kill)")
        }
        (None, true) => "the profiler shut down normally".to_string(),
        (None, false)
            if t.integrity.cut.is_some()
                || t.integrity.damaged_to_end
                || t.integrity.unfinished =>
        {
            "the end of the recording is missing (the trace is cut short)".to_string()
        }
        (None, false) => "ended WITHOUT profiler shutdown (crash or kill)".to_string(),
    }
}

/// Writes one runtime view as text, after the session line.
pub fn write_view_text(t: &LoadedTrace, view: View, out: &mut dyn Write) -> Result<(), Error> {
    let s = session_json(t);
    writeln!(
        out,
        "{} (pid {}), recorded {}",
        if s.command_line.is_empty() {
            "?"
        } else {
            &s.command_line
        },
        s.pid,
        ms(s.duration_ns)
    )?;
    for note in &s.integrity_notes {
        writeln!(out, "WARNING: {note}")?;
    }
    if crate::runtime::text_has_data(&t.runtime, view) {
        write_view(&t.runtime, view, None, out)?;
    } else {
        writeln!(
            out,
            "\nNothing to show: the trace has no {} (record with --events {})",
            view.noun(),
            view.event_categories()
        )?;
    }
    Ok(())
}

/// Writes one runtime view as JSON: `session` and the view's keys (see docs/report-json.md).
pub fn write_view_json(
    t: &LoadedTrace,
    view: View,
    pretty: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let r = &t.runtime;
    let mut doc = serde_json::Map::new();
    doc.insert("session".into(), serde_json::to_value(session_json(t))?);
    let mut put = |key: &str, value: serde_json::Value| {
        doc.insert(key.into(), value);
    };
    match view {
        View::Exceptions => put("exceptions", serde_json::to_value(&r.exceptions)?),
        View::Jit => {
            put("jit", serde_json::to_value(&r.jit)?);
            put("jit_modules", serde_json::to_value(&r.jit_modules)?);
            put("inlined", serde_json::to_value(&t.events.inlined)?);
            put("startup", serde_json::to_value(&r.startup)?);
        }
        View::Loads => put("loads", serde_json::to_value(&r.loads)?),
        View::Threads => put("threads", serde_json::to_value(&r.threads)?),
        View::Native => put("native", serde_json::to_value(&r.native)?),
        View::Suspensions => put("suspensions", serde_json::to_value(&r.suspensions)?),
    }
    crate::output::write_json(&serde_json::Value::Object(doc), pretty, out)
}

/// Writes the Chrome trace timeline: CPU slices (if any) and the runtime's activity.
pub fn write_chrome(t: &LoadedTrace, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
    let profile = t.has_cpu_data().then(|| crate::profile::of(t));
    crate::output::Chrome.render_trace(
        profile.as_ref(),
        &t.runtime,
        &t.names,
        t.session.as_ref().map_or(0, |s| s.pid),
        query,
        out,
    )
}
