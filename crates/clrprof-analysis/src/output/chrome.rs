//! Chrome Trace Event Format (JSON object form): a timeline per thread, for Perfetto and
//! `chrome://tracing`.
//!
//! Each thread's samples, in time order, become nested slices: a sample taken at `t`
//! standing for `wall_ns` of time covers `[t - wall_ns, t]`; frames that consecutive samples
//! share (the common prefix of their stacks, root first) stay open across them, the others
//! end (`E`) and begin (`B`) at the boundary. A gap between samples closes every slice.
//!
//! A thread with a call tree but no samples (trace mode) has no timeline; its call tree is
//! laid out instead as complete (`X`) slices whose lengths are the sampled inclusive times,
//! callers enclosing callees, starting at 0. Such slices carry `"aggregated": true`.

use std::io::Write;

use serde::Serialize;
use serde_json::{Value, json};

use crate::model::{CallTree, FrameIndex, Profile, ThreadProfile};
use crate::names::Names;
use crate::query::{NodeMark, Query, Selection};
use crate::runtime::timeline::{Span, Subject, Timeline, Track};
use crate::runtime::{RuntimeViews, load_name};
use crate::runtime_names::{gc_reason_name, highest_generation, suspend_reason_name};
use crate::{Analysis, Error, Render};

/// Chrome trace event output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chrome;

#[derive(Serialize)]
struct TraceFile {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Event>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
    #[serde(rename = "otherData")]
    other_data: Value,
}

#[derive(Serialize)]
struct Event {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ph: &'static str,
    /// Microseconds.
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Value>,
}

fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl Render for Chrome {
    fn render(&self, profile: &Profile, query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let mut events = Vec::new();
        let other = cpu_events(profile, query, &mut events)?;
        write_file(events, other, out)
    }
}

impl Chrome {
    /// The whole timeline of a trace: the CPU profile's slices (when the trace has samples or
    /// call trees), and the runtime's activity: per thread a track of JIT compilations,
    /// loads, exceptions (throw to catcher) and native calls, and process-wide tracks of
    /// garbage collections and runtime suspensions.
    pub fn render_trace(
        &self,
        profile: Option<&Profile>,
        runtime: &RuntimeViews,
        names: &Names,
        pid: u32,
        query: &Query,
        out: &mut dyn Write,
    ) -> Result<(), Error> {
        let mut events = Vec::new();
        let mut other = match profile {
            Some(p) => cpu_events(p, query, &mut events)?,
            None => json!({ "exporter": super::exporter() }),
        };
        let pid = profile.map_or(pid, |p| p.pid);
        if profile.is_none() {
            events.push(metadata("process_name", pid, 0, &format!("pid {pid}")));
        }
        runtime_events(&runtime.timeline, names, pid, &mut events);
        other["runtime_spans_dropped"] = json!(runtime.timeline.dropped);
        write_file(events, other, out)
    }
}

fn write_file(
    trace_events: Vec<Event>,
    other_data: Value,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let file = TraceFile {
        trace_events,
        display_time_unit: "ms",
        other_data,
    };
    serde_json::to_writer(&mut *out, &file)?;
    writeln!(out)?;
    Ok(())
}

/// The CPU profile's slices; returns the file's `otherData`.
fn cpu_events(profile: &Profile, query: &Query, events: &mut Vec<Event>) -> Result<Value, Error> {
    let a = Analysis::new(profile, query, false)?;
    let pid = profile.pid;
    let process_name = if profile.name.is_empty() {
        format!("clrprof {} profile", profile.kind)
    } else {
        profile.name.clone()
    };
    events.push(metadata("process_name", pid, 0, &process_name));
    for &t in &a.selection.threads {
        let thread = &profile.threads[t];
        events.push(metadata("thread_name", pid, thread.tid, &thread.label()));
        if !thread.samples.is_empty() {
            sample_slices(profile, &a.selection, thread, pid, events);
        } else if let Some(tree) = &thread.call_tree {
            call_tree_slices(profile, &a.selection, tree, pid, thread.tid, events);
        }
    }
    if let Some(end) = &profile.ended {
        events.push(Event {
            args: Some(json!({ "labels": format!("the program ended: {end}") })),
            ..metadata("process_labels", pid, 0, "")
        });
    }
    Ok(json!({
        "exporter": super::exporter(),
        "program_end": profile.ended,
        "mode": profile.kind,
        "start_unix_ns": profile.start_unix_ns,
        "sample_interval_ns": profile.sample_interval_ns,
        "filter": a.selection.filter(),
    }))
}

/// Track ids of the runtime's tracks: a thread's runtime track is its OS thread id with the
/// top bit set (so it never collides with the thread's own CPU track); the process-wide
/// tracks come last.
const RUNTIME_TRACK: u32 = 0x8000_0000;
const GC_TRACK: u32 = 0xFFFF_FFF0;
const SUSPENSION_TRACK: u32 = 0xFFFF_FFF1;

/// The runtime's spans as complete (`X`) slices, and instants for exceptions never caught.
fn runtime_events(timeline: &Timeline, names: &Names, pid: u32, events: &mut Vec<Event>) {
    let mut tracks: Vec<Track> = timeline.spans.iter().map(|s| s.track).collect();
    tracks.sort_unstable();
    tracks.dedup();
    for track in tracks {
        let (tid, name, sort) = match track {
            Track::Thread(t) => {
                let label = match names.name_of_tid(t) {
                    n if !n.is_empty() => format!("{n} ({t})"),
                    _ if t == pid => format!("main ({t})"),
                    _ => format!("{t}"),
                };
                (t | RUNTIME_TRACK, format!("runtime: {label}"), 10)
            }
            Track::Gc => (GC_TRACK, "GC".to_string(), 0),
            Track::Suspensions => (SUSPENSION_TRACK, "Runtime suspensions".to_string(), 1),
        };
        events.push(metadata("thread_name", pid, tid, &name));
        let mut order = metadata("thread_sort_index", pid, tid, "");
        order.args = Some(json!({ "sort_index": sort }));
        events.push(order);
    }
    for span in &timeline.spans {
        let tid = match span.track {
            Track::Thread(t) => t | RUNTIME_TRACK,
            Track::Gc => GC_TRACK,
            Track::Suspensions => SUSPENSION_TRACK,
        };
        let (name, args) = span_name(span, names);
        let instant = span.duration_ns == 0 && span.category == "exception";
        events.push(Event {
            name: Some(name),
            cat: Some(span.category),
            ph: if instant { "i" } else { "X" },
            ts: micros(span.start_ns),
            dur: (!instant).then(|| micros(span.duration_ns)),
            pid,
            tid,
            args: Some(args),
        });
    }
}

/// A runtime span's name (`JIT Program.Main(string[])`, `libc!abs`, `GC gen 2`, ...) and its
/// details.
pub(crate) fn span_name(span: &Span, names: &Names) -> (String, Value) {
    match span.subject {
        Subject::Function(f) => {
            let method = names.function(f);
            let name = match span.category {
                "native" => names.native_target(f),
                _ => format!("JIT {method}"),
            };
            (
                name,
                json!({ "method": method, "module": names.function_module(f) }),
            )
        }
        Subject::Exception(class) => (
            names.class(class),
            json!({ "caught": span.duration_ns > 0 }),
        ),
        Subject::Load(kind, id) => (
            format!("load {kind} {}", load_name(names, kind, id)),
            json!({ "kind": kind }),
        ),
        Subject::Gc(generations, reason) => (
            format!("GC gen {}", highest_generation(generations)),
            json!({ "generations_mask": generations, "reason": gc_reason_name(reason) }),
        ),
        Subject::Thread(managed_id) => (
            match names.name_of_managed(managed_id) {
                n if n.is_empty() => "thread".to_string(),
                n => format!("thread {n}"),
            },
            json!({ "managed_id": managed_id }),
        ),
        Subject::Lock(class) => (
            match class {
                0 => "lock".to_string(),
                class => format!("lock {}", names.class(class)),
            },
            json!({ "class": class }),
        ),
        Subject::Suspension(reason) => (
            format!("suspended: {}", suspend_reason_name(reason)),
            json!({ "reason": suspend_reason_name(reason) }),
        ),
    }
}

fn metadata(kind: &str, pid: u32, tid: u32, name: &str) -> Event {
    Event {
        name: Some(kind.to_owned()),
        cat: None,
        ph: "M",
        ts: 0.0,
        dur: None,
        pid,
        tid,
        args: Some(json!({ "name": name })),
    }
}

/// Turns a thread's samples into nested B/E slices.
fn sample_slices(
    profile: &Profile,
    selection: &Selection,
    thread: &ThreadProfile,
    pid: u32,
    events: &mut Vec<Event>,
) {
    let tid = thread.tid;
    let begin = |frame: FrameIndex, at: u64| {
        let f = profile.frame(frame);
        Event {
            name: Some(f.name.clone()),
            cat: Some("sample"),
            ph: "B",
            ts: micros(at),
            dur: None,
            pid,
            tid,
            args: (!f.module.is_empty()).then(|| json!({ "module": f.module })),
        }
    };
    let end = |at: u64| Event {
        name: None,
        cat: None,
        ph: "E",
        ts: micros(at),
        dur: None,
        pid,
        tid,
        args: None,
    };

    let mut samples: Vec<_> = thread.samples.iter().collect();
    samples.sort_by_key(|s| s.time_ns);
    let mut open: Vec<FrameIndex> = Vec::new();
    let mut prev_end: Option<u64> = None;
    for s in samples {
        let span = if s.wall_ns > 0 {
            s.wall_ns
        } else {
            profile.sample_interval_ns
        };
        let mut start = s.time_ns.saturating_sub(span);
        if let Some(pe) = prev_end {
            if start > pe {
                // A gap: nothing is known to have been running in it.
                while open.pop().is_some() {
                    events.push(end(pe));
                }
            }
            start = start.max(pe);
        }
        let frames = match s.stack {
            Some(st) if selection.keeps_stack(Some(st)) => profile.stack_frames(st),
            _ => Vec::new(),
        };
        let common = open.iter().zip(&frames).take_while(|(a, b)| a == b).count();
        while open.len() > common {
            open.pop();
            events.push(end(start));
        }
        for &f in &frames[common..] {
            events.push(begin(f, start));
            open.push(f);
        }
        prev_end = Some(s.time_ns.max(start));
    }
    if let Some(pe) = prev_end {
        while open.pop().is_some() {
            events.push(end(pe));
        }
    }
}

/// Lays a call tree out as nested X slices (see the module documentation).
fn call_tree_slices(
    profile: &Profile,
    selection: &Selection,
    tree: &CallTree,
    pid: u32,
    tid: u32,
    events: &mut Vec<Event>,
) {
    let marks = selection.call_tree_marks(tree);
    let n = tree.nodes.len();
    // Use wall time when the tree has any, else CPU time.
    let use_wall = tree
        .nodes
        .iter()
        .zip(&marks)
        .any(|(node, m)| *m == NodeMark::Counted && node.self_wall_ns > 0);
    let mut total = vec![0u64; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, node) in tree.nodes.iter().enumerate() {
        if marks[i] == NodeMark::Counted {
            total[i] = if use_wall {
                node.self_wall_ns
            } else {
                node.self_cpu_ns
            };
        }
        if marks[i] != NodeMark::Dropped {
            match node.parent {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
    }
    for i in (0..n).rev() {
        if let Some(p) = tree.nodes[i].parent {
            total[p] = total[p].saturating_add(total[i]);
        }
    }
    // (node, start) with callees placed one after another inside their caller.
    let mut stack: Vec<(usize, u64)> = Vec::new();
    let mut at = 0u64;
    for &r in &roots {
        stack.push((r, at));
        at = at.saturating_add(total[r]);
    }
    stack.reverse();
    while let Some((i, start)) = stack.pop() {
        if total[i] == 0 {
            continue;
        }
        let node = &tree.nodes[i];
        let f = profile.frame(node.frame);
        events.push(Event {
            name: Some(f.name.clone()),
            cat: Some("call-tree"),
            ph: "X",
            ts: micros(start),
            dur: Some(micros(total[i])),
            pid,
            tid,
            args: Some(json!({
                "module": f.module,
                "calls": node.calls,
                "aggregated": true,
            })),
        });
        let mut child_start = start;
        let mut placed = Vec::with_capacity(children[i].len());
        for &c in &children[i] {
            placed.push((c, child_start));
            child_start = child_start.saturating_add(total[c]);
        }
        stack.extend(placed.into_iter().rev());
    }
}
