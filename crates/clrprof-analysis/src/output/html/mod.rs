//! The HTML report: one self-contained file (`docs/html-report.md`).
//!
//! The page is a template of this directory (`report.html`, with `report.css` and
//! `report.js` put inline) and one JSON document with everything it draws: the session, a
//! flame graph per metric ([`flame`]), the timeline ([`timeline`]), and the tables of the
//! runtime views, memory and coverage. Nothing is fetched: no script, style, font or image
//! comes from anywhere but the file itself, and the page's Content-Security-Policy forbids
//! any connection.

mod flame;
mod timeline;

use clrprof_trace::counters::CounterName;
use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use crate::coverage::CoverageReport;
use crate::memory::{AllocReport, GcReport, HeapJson};
use crate::model::{FrameCategory, Profile, ProfileKind};
use crate::query::{Metric, Query};
use crate::runtime::{
    ExceptionGroup, JitMethod, JitModule, NativeCalls, RuntimeViews, Startup, Suspensions,
};
use crate::trace::LoadedTrace;
use crate::{Error, Render};

use flame::{FlameTree, FrameTable, flame_tree};

mod lines;
use timeline::{TimelineData, timeline};

const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// The HTML report, and how much of a big trace it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Html {
    /// Nodes per flame graph (per metric); past it the lightest are summed up.
    pub max_nodes: usize,
    /// Runtime marks on the timeline; past it the longest are kept.
    pub max_marks: usize,
    /// Time bins of the timeline's CPU activity.
    pub bins: usize,
    /// Rows of each table (methods compiled, types allocated, heap types, ...).
    pub max_rows: usize,
}

impl Default for Html {
    fn default() -> Self {
        Html {
            max_nodes: 40_000,
            max_marks: 20_000,
            bins: 800,
            max_rows: 500,
        }
    }
}

/// Session facts at the top of the page.
#[derive(Debug, Default, Serialize)]
struct Session {
    program: String,
    pid: u32,
    runtime: String,
    agent_version: String,
    mode: String,
    duration_ns: u64,
    exit_code: Option<i32>,
    ended_cleanly: bool,
    detached: bool,
    records: u64,
    events_dropped: u64,
    samples_dropped: u64,
    allocations_dropped: u64,
    format_version: String,
    start_unix_ns: u64,
}

/// A thread of the flame graphs.
#[derive(Debug, Serialize)]
struct ThreadInfo {
    tid: u32,
    label: String,
}

/// A legend entry.
#[derive(Debug, Serialize)]
struct Category {
    name: &'static str,
    colour: String,
}

/// Coverage of one source file (or assembly, without symbols).
#[derive(Debug, Default, Serialize)]
struct CoverageFile {
    file: String,
    methods: usize,
    blocks: usize,
    blocks_covered: usize,
    lines: usize,
    lines_covered: usize,
}

/// Everything the page shows.
#[derive(Debug, Default, Serialize)]
struct Document {
    title: String,
    generator: String,
    session: Option<Session>,
    messages: Vec<String>,
    notes: Vec<String>,
    /// What a big trace had summarized or cut, said on the page.
    limits: Vec<String>,
    categories: Vec<Category>,
    frames: FrameTable,
    threads: Vec<ThreadInfo>,
    flames: Vec<FlameTree>,
    timeline: Option<TimelineData>,
    exceptions: Vec<ExceptionGroup>,
    jit: Vec<JitMethod>,
    jit_methods: usize,
    jit_modules: Vec<JitModule>,
    startup: Option<Startup>,
    native: Vec<NativeCalls>,
    suspensions: Vec<Suspensions>,
    events: BTreeMap<String, u64>,
    gc: Option<GcReport>,
    alloc: Option<AllocReport>,
    heap: Option<HeapJson>,
    coverage: Vec<CoverageFile>,
    lines: Vec<lines::LinesData>,
}

impl Render for Html {
    /// A page of the profile alone: its flame graphs, functions and timeline.
    fn render(&self, profile: &Profile, _query: &Query, out: &mut dyn Write) -> Result<(), Error> {
        let mut doc = Document {
            title: title(&profile.name),
            notes: profile.notes.clone(),
            ..Document::default()
        };
        self.flames(&mut doc, profile)?;
        if profile.kind != ProfileKind::Alloc {
            doc.timeline = Some(timeline(
                Some(profile),
                &RuntimeViews::default(),
                &crate::trace::Names::default(),
                &mut doc.frames,
                profile.duration_ns,
                self.bins,
                self.max_marks,
            ));
        }
        write_page(doc, out)
    }
}

fn title(program: &str) -> String {
    if program.is_empty() {
        "clrprof report".into()
    } else {
        format!("{program}: clrprof report")
    }
}

impl Html {
    /// The whole report of a trace: everything the trace holds. `query`'s thread and filter
    /// are not applied (the page selects threads and searches itself).
    pub fn render_trace(&self, t: &LoadedTrace, out: &mut dyn Write) -> Result<(), Error> {
        let profile = t.has_cpu_data().then(|| crate::profile::of(t));
        let program = t
            .session
            .as_ref()
            .map(|s| crate::file_names::program_name(&s.command_line))
            .unwrap_or_default();
        let mut doc = Document {
            title: title(&program),
            session: Some(session(t)),
            messages: t
                .messages
                .iter()
                .map(|m| format!("{}: {}", m.level.name(), m.text))
                .collect(),
            events: t.events.events.clone(),
            ..Document::default()
        };
        if let Some(p) = &profile {
            doc.notes = p.notes.clone();
            self.flames(&mut doc, p)?;
        }
        if crate::memory::alloc::has_allocations(t) {
            let alloc = crate::memory::alloc::profile(t);
            self.flames(&mut doc, &alloc)?;
            let mut r = crate::memory::alloc::report(t, 50);
            self.cut(&mut r.types, "allocated types", &mut doc.limits);
            doc.alloc = Some(r);
        }
        doc.timeline = Some(timeline(
            profile.as_ref(),
            &t.runtime,
            &t.names,
            &mut doc.frames,
            t.duration_ns(),
            self.bins,
            self.max_marks,
        ));
        let r = &t.runtime;
        doc.exceptions = r.exceptions.clone();
        doc.jit_methods = r.jit.len();
        doc.jit = r.jit.iter().take(self.max_rows).cloned().collect();
        if r.jit.len() > self.max_rows {
            doc.limits.push(format!(
                "JIT: the {} methods with the most JIT time of {}",
                self.max_rows,
                r.jit.len()
            ));
        }
        doc.jit_modules = r.jit_modules.clone();
        doc.startup = r.startup.clone();
        doc.native = r.native.clone();
        doc.suspensions = r.suspensions.clone();
        if !t.memory.gcs.is_empty() {
            doc.gc = Some(crate::memory::gc::report(t));
        }
        if t.memory.snapshots.iter().any(|s| s.complete) {
            let mut h = crate::memory::heap_json(t, None, 20, &mut |_| {})?;
            self.cut(&mut h.report.types, "heap types", &mut doc.limits);
            doc.heap = Some(h);
        }
        if !t.coverage.is_empty() {
            doc.coverage = coverage_files(&CoverageReport::from_trace(t));
        }
        doc.lines = lines::lines_data(t, self.max_rows);
        if let Some(tl) = &doc.timeline
            && tl.marks_left_out > 0
        {
            doc.limits.push(format!(
                "timeline: {} runtime marks left out (the longest {} are drawn)",
                tl.marks_left_out, self.max_marks
            ));
        }
        write_page(doc, out)
    }

    fn cut<T>(&self, rows: &mut Vec<T>, what: &str, limits: &mut Vec<String>) {
        if rows.len() > self.max_rows {
            limits.push(format!(
                "{what}: the first {} of {}",
                self.max_rows,
                rows.len()
            ));
            rows.truncate(self.max_rows);
        }
    }

    /// Adds the flame graphs of every metric `profile` has.
    fn flames(&self, doc: &mut Document, profile: &Profile) -> Result<(), Error> {
        let threads: Vec<usize> = profile
            .threads
            .iter()
            .map(|t| {
                doc.threads
                    .iter()
                    .position(|x| x.tid == t.tid)
                    .unwrap_or_else(|| {
                        doc.threads.push(ThreadInfo {
                            tid: t.tid,
                            label: t.label(),
                        });
                        doc.threads.len() - 1
                    })
            })
            .collect();
        let metrics: &[Metric] = match profile.kind {
            ProfileKind::Sample | ProfileKind::Count => &[Metric::Cpu, Metric::Wall],
            ProfileKind::Trace => &[Metric::Cpu, Metric::Wall, Metric::Calls],
            ProfileKind::Alloc => &[Metric::Bytes, Metric::Objects],
        };
        for &metric in metrics {
            let tree = flame_tree(profile, metric, &mut doc.frames, &threads, self.max_nodes)?;
            if tree.f.is_empty() {
                continue;
            }
            if tree.left_out > 0 {
                doc.limits.push(format!(
                    "flame graph of {}: {} of {} call paths shown, the lightest {} summed up as {}",
                    metric.description(),
                    tree.nodes - tree.left_out,
                    tree.nodes,
                    tree.left_out,
                    flame::SMALLER_STACKS
                ));
            }
            doc.flames.push(tree);
        }
        Ok(())
    }
}

fn session(t: &LoadedTrace) -> Session {
    let s = t.session.as_ref();
    Session {
        program: s.map(|s| s.command_line.clone()).unwrap_or_default(),
        pid: s.map_or(0, |s| s.pid),
        runtime: s.map(|s| s.runtime.clone()).unwrap_or_default(),
        agent_version: s.map(|s| s.agent_version.clone()).unwrap_or_default(),
        mode: t.mode().name().to_string(),
        duration_ns: t.duration_ns(),
        exit_code: t.recording_end.as_ref().map(|r| r.exit_code),
        ended_cleanly: t.ended_cleanly(),
        detached: t.session_end.as_ref().is_some_and(|e| e.reason == "detach"),
        records: t.records,
        events_dropped: t.counter(CounterName::EventsDropped),
        samples_dropped: t.counter(CounterName::SamplesDropped),
        allocations_dropped: t.counter(CounterName::AllocationsDropped),
        format_version: format!("{}.{}", t.header.major, t.header.minor),
        start_unix_ns: s.map_or(0, |s| s.start_unix_ns),
    }
}

fn coverage_files(r: &CoverageReport) -> Vec<CoverageFile> {
    let mut files: BTreeMap<String, CoverageFile> = BTreeMap::new();
    for m in &r.methods {
        let name = m
            .source
            .clone()
            .unwrap_or_else(|| format!("{} (no symbols)", m.assembly));
        let f = files.entry(name.clone()).or_default();
        f.file = name;
        f.methods += 1;
        f.blocks += m.blocks.len();
        f.blocks_covered += m.covered_blocks();
        f.lines += m.lines.len();
        f.lines_covered += m.lines.values().filter(|&&h| h > 0).count();
    }
    files.into_values().collect()
}

/// The page: the template with the style, the script and the data put in.
fn write_page(mut doc: Document, out: &mut dyn Write) -> Result<(), Error> {
    doc.categories = FrameCategory::ALL
        .iter()
        .map(|c| {
            let [r, g, b] = c.colour();
            Category {
                name: c.as_str(),
                colour: format!("#{r:02x}{g:02x}{b:02x}"),
            }
        })
        .collect();
    let mut data = serde_json::to_string(&doc)?;
    // Inside <script>, `</` could end the element: JSON allows `<\/` for it.
    if data.contains("</") {
        data = data.replace("</", "<\\/");
    }
    let page = TEMPLATE
        .replace("{{TITLE}}", &escape_html(&doc.title))
        .replace("/*{{STYLE}}*/", STYLE)
        .replace("/*{{SCRIPT}}*/", SCRIPT);
    // The data goes in last, so nothing in it is taken for a placeholder.
    let (before, after) = page
        .split_once("{{DATA}}")
        .expect("the template has a data placeholder");
    out.write_all(before.as_bytes())?;
    out.write_all(data.as_bytes())?;
    out.write_all(after.as_bytes())?;
    Ok(())
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON a page carries in its data script.
    fn page_data(page: &str) -> serde_json::Value {
        let data = page
            .split_once(r#"<script type="application/json" id="data">"#)
            .unwrap()
            .1
            .split_once("</script>")
            .unwrap()
            .0;
        serde_json::from_str(data).unwrap()
    }

    #[test]
    fn a_page_is_self_contained_and_its_data_cannot_close_the_script() {
        let p = Profile::from_stacks(&[
            (
                "main",
                vec!["App!Main()", "App!Parse(</script><b>)"],
                3_000,
                3_000,
            ),
            ("main", vec!["App!Main()"], 1_000, 1_000),
        ]);
        let mut out = Vec::new();
        Html::default()
            .render(&p, &Query::default(), &mut out)
            .unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "the script and the data"
        );
        assert!(page.contains(r#"Parse(<\/script><b>)"#));
        for outside in ["src=\"http", "href=\"http", "@import", "url(http"] {
            assert!(!page.contains(outside), "{outside}");
        }
        assert!(page.contains("connect-src 'none'"));
        let doc = page_data(&page);
        assert_eq!(doc["flames"][0]["metric"], "cpu");
        assert_eq!(doc["flames"][0]["v"].as_array().unwrap().len(), 3);
        assert_eq!(doc["categories"][0]["name"], "managed");
    }

    #[test]
    fn a_profile_of_many_call_paths_is_summed_up_within_the_budget() {
        use crate::builder::ProfileBuilder;
        use crate::model::{FrameKind, Sample, SampleKind};
        // 50,000 distinct stacks of 4 frames (1 + 20 + 2,000 + 50,000 nodes), weights 1..97.
        let mut b = ProfileBuilder::new(ProfileKind::Sample);
        let main = b.intern_frame("Main", "App.dll", FrameKind::Managed);
        let t = b.thread(1, "main");
        for i in 0..50_000u64 {
            let a = b.intern_frame(&format!("A{}", i % 20), "App.dll", FrameKind::Managed);
            let c = b.intern_frame(&format!("B{}", i % 2000), "App.dll", FrameKind::Managed);
            let d = b.intern_frame(&format!("C{i}"), "App.dll", FrameKind::Managed);
            let stack = b.intern_stack_path(&[main, a, c, d]);
            let w = 1 + i % 97;
            b.add_sample(
                t,
                Sample {
                    time_ns: i * 1000,
                    stack,
                    cpu_ns: w,
                    wall_ns: w,
                    kind: SampleKind::Tick,
                    ..Sample::default()
                },
            );
        }
        let p = b.build();
        let html = Html {
            max_nodes: 5_000,
            ..Html::default()
        };
        let mut out = Vec::new();
        html.render(&p, &Query::default(), &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        let doc = page_data(&page);
        let cpu = &doc["flames"][0];
        let kept = cpu["f"].as_array().unwrap().len();
        assert_eq!(cpu["nodes"], 52_022);
        // The heaviest nodes, plus one [smaller stacks] per node that lost callees.
        assert!(kept <= html.max_nodes + 2_022, "{kept}");
        let total: u64 = cpu["v"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let expected: u64 = (0..50_000u64).map(|i| 1 + i % 97).sum();
        assert_eq!(total, expected, "widths stay exact");
        // Only the frames drawn are named: the page stays small.
        assert!(page.len() < 400_000, "{} bytes", page.len());
        assert!(
            doc["limits"][0]
                .as_str()
                .unwrap()
                .contains("[smaller stacks]"),
            "{}",
            doc["limits"]
        );
    }

    #[test]
    fn coverage_is_summed_per_source_file() {
        use crate::coverage::{BlockCoverage, MethodCoverage};
        let block = |hits| BlockCoverage {
            il_start: 0,
            il_end: 1,
            hits,
            line: None,
        };
        let method = |source: Option<&str>, blocks: Vec<BlockCoverage>, lines: &[(u32, u64)]| {
            MethodCoverage {
                assembly: "App".into(),
                module_path: String::new(),
                type_name: "T".into(),
                method_name: "M".into(),
                signature: "()".into(),
                token: 1,
                blocks,
                source: source.map(str::to_owned),
                lines: lines.iter().copied().collect(),
            }
        };
        let r = CoverageReport {
            methods: vec![
                method(Some("a.cs"), vec![block(1), block(0)], &[(1, 1), (2, 0)]),
                method(Some("a.cs"), vec![block(3)], &[(5, 3)]),
                method(None, vec![block(0)], &[]),
            ],
            symbols: Vec::new(),
        };
        let files = coverage_files(&r);
        let row = |f: &CoverageFile| {
            (
                f.file.clone(),
                f.methods,
                f.blocks,
                f.blocks_covered,
                f.lines,
                f.lines_covered,
            )
        };
        assert_eq!(
            files.iter().map(row).collect::<Vec<_>>(),
            [
                ("App (no symbols)".to_string(), 1, 1, 0, 0, 0),
                ("a.cs".to_string(), 2, 3, 2, 3, 2)
            ]
        );
    }
}
