//! `clrprof report`: read a trace and write the report or a viewer's format.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clrprof_analysis::output::{Format, Html, Json, Text};
use clrprof_analysis::runtime::View;
use clrprof_analysis::{Query, memory, report, trace};

/// What to report, independent of the command-line syntax.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The trace (optional when `diff` names two traces).
    pub file: Option<PathBuf>,
    /// Output format.
    pub format: Format,
    /// Output file (stdout if none).
    pub output: Option<PathBuf>,
    /// Only this runtime view (text or JSON).
    pub view: Option<View>,
    /// Text: print the call tree too.
    pub tree: bool,
    /// JSON: pretty-print.
    pub pretty: bool,
    /// Allocations: the text section, or allocation bytes in the profile formats.
    pub alloc: bool,
    /// The GC section of the text report.
    pub gc: bool,
    /// The heap section of the text report.
    pub heap: bool,
    /// The heap snapshot to analyse.
    pub snapshot: Option<u32>,
    /// Two snapshots to compare (empty: no diff).
    pub diff: Vec<String>,
    /// Thread, filter, top, metric.
    pub query: Query,
}

/// Writes the report.
pub fn report(opts: &ReportOptions) -> Result<()> {
    if opts.view.is_some() && !matches!(opts.format, Format::Text | Format::Json) {
        bail!(
            "--exceptions, --jit, --loads, --threads, --native and --suspensions are text or json \
             views; the Chrome timeline (--format chrome) shows all of them at once"
        );
    }
    let mut out = open_output(opts)?;
    if opts.diff.len() == 2 {
        diff(opts, &mut out)?;
    } else {
        let Some(file) = &opts.file else {
            bail!("which trace? give a trace file (or --diff A B between two traces)");
        };
        report_file(opts, file, &mut out)?;
    }
    out.flush().context("writing the report")?;
    if let Some(path) = &opts.output {
        eprintln!("clrprof: wrote {}", path.display());
    }
    Ok(())
}

fn open_output(opts: &ReportOptions) -> Result<Box<dyn Write>> {
    let binary = opts.format.is_binary();
    Ok(match &opts.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None if binary && std::io::stdout().is_terminal() => {
            bail!("pprof output is binary; write it to a file with -o FILE")
        }
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    })
}

/// A line showing what the heap analysis is doing on a terminal (it can take a while on big
/// heaps); cleared when dropped.
struct Status {
    tty: bool,
}

impl Status {
    fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, what: &str) {
        if self.tty && what.is_empty() {
            eprint!("\r\x1b[2K");
        } else if self.tty {
            eprint!("\r\x1b[2Kclrprof: {what}...");
        }
    }

    /// Runs `work`, which reports its progress to the status line, then clears the line.
    fn during<T>(work: impl FnOnce(&mut dyn FnMut(&str)) -> T) -> T {
        let mut status = Status::new();
        work(&mut |what| status.show(what))
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        self.show("");
    }
}

/// Loads one side of `--diff`: `N` (a snapshot of FILE), `TRACE` or `TRACE@N`. Each side
/// loads its trace keeping only its own snapshot, so two snapshots of one big trace are never
/// held together with the rest.
fn diff_side(opts: &ReportOptions, spec: &str) -> Result<(trace::LoadedTrace, Option<u32>)> {
    if let Ok(n) = spec.parse::<u32>() {
        let Some(file) = &opts.file else {
            bail!("--diff {spec}: a snapshot number needs a trace file");
        };
        return Ok((
            trace::load_with(file, memory::HeapKeep::Numbers(vec![n]))?,
            Some(n),
        ));
    }
    let (path, number) = match spec.rsplit_once('@') {
        Some((p, n)) if n.parse::<u32>().is_ok() => (p, n.parse::<u32>().ok()),
        _ => (spec, None),
    };
    let keep = number.map_or(memory::HeapKeep::Last, |n| {
        memory::HeapKeep::Numbers(vec![n])
    });
    Ok((trace::load_with(std::path::Path::new(path), keep)?, number))
}

fn diff(opts: &ReportOptions, out: &mut dyn Write) -> Result<()> {
    let (before, after) = Status::during(|show| -> Result<_> {
        let mut analyse = |spec: &str| -> Result<memory::HeapReport> {
            let (t, n) = diff_side(opts, spec)?;
            let s = t.snapshot(n).with_context(|| format!("--diff {spec}"))?;
            Ok(memory::heap::analyze(s, &t.names, 0, show))
        };
        Ok((analyse(&opts.diff[0])?, analyse(&opts.diff[1])?))
    })?;
    let rows = memory::heap::diff(&before, &after);
    match opts.format {
        Format::Json => memory::write_diff_json(&before, &after, &rows, opts.pretty, out)?,
        Format::Text => {
            let top = opts.query.top.unwrap_or(memory::TEXT_ROWS);
            memory::write_diff_text(&before, &after, &rows, top, out)?;
        }
        other => bail!("--diff writes text or json, not {other:?}"),
    }
    Ok(())
}

fn report_file(opts: &ReportOptions, file: &std::path::Path, out: &mut dyn Write) -> Result<()> {
    // Only a report that shows a heap snapshot loads its object graph; the others read the
    // snapshots' counts and pauses, in time and memory that do not grow with the heap.
    let shows_heap = opts.view.is_none()
        && match opts.format {
            Format::Text => opts.heap,
            Format::Json | Format::Html => true,
            _ => false,
        };
    let keep = match opts.snapshot {
        _ if !shows_heap => memory::HeapKeep::None,
        Some(n) => memory::HeapKeep::Numbers(vec![n]),
        None => memory::HeapKeep::Last,
    };
    let loaded = trace::load_with(file, keep)?;
    let q = &opts.query;
    if let Some(view) = opts.view {
        match opts.format {
            Format::Json => report::write_view_json(&loaded, view, opts.pretty, out)?,
            _ => report::write_view_text(&loaded, view, out)?,
        }
        return Ok(());
    }
    match opts.format {
        Format::Text if opts.alloc || opts.gc || opts.heap => {
            let top = q.top.unwrap_or(memory::TEXT_ROWS);
            if opts.alloc {
                memory::write_alloc_text(&loaded, top, out)?;
            }
            if opts.gc {
                memory::write_gc_text(&loaded, out)?;
            }
            if opts.heap {
                let h = Status::during(|show| loaded.heap_json(opts.snapshot, top.min(10), show))?;
                memory::write_heap_text(&h, top, out)?;
            }
        }
        Format::Folded | Format::Flamegraph | Format::Speedscope | Format::Pprof if opts.alloc => {
            if !loaded.has_allocations() {
                bail!("{} has no allocations; record with --alloc", file.display());
            }
            // The same renderers as for CPU profiles, weighted by bytes (or objects).
            opts.format
                .renderer()
                .render(&loaded.alloc_profile(), q, out)?;
        }
        Format::Text => {
            let text = Text {
                tree: opts.tree,
                ..Text::default()
            };
            report::write_text(&loaded, q, &text, out)?;
            memory::write_hints(&loaded, out)?;
        }
        Format::Json => {
            let options = Json {
                pretty: opts.pretty,
                ..Json::default()
            };
            let json = Status::during(|show| {
                report::json_with(&loaded, q, &options, opts.snapshot, show)
            })?;
            report::write_json_report(&json, &options, out)?;
        }
        Format::Chrome => report::write_chrome(&loaded, q, out)?,
        Format::Html => {
            if q.thread.is_some() || q.filter.is_some() || q.metric.is_some() || opts.alloc {
                bail!(
                    "the HTML report shows every thread and metric and has its own search; \
                     leave out --thread, --filter, --metric and --alloc"
                );
            }
            Html::default().render_trace(&loaded, out)?;
        }
        other => {
            if !loaded.has_cpu_data() {
                bail!(
                    "{} has no CPU samples or call trees (it was recorded with --mode none); only the text, json and chrome formats apply",
                    file.display()
                );
            }
            other.renderer().render(&loaded.profile(), q, out)?;
        }
    }
    Ok(())
}
