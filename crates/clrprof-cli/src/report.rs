//! `clrprof report`: read a trace and write the report or a viewer's format.

use clrprof_trace::counters::CounterName;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clrprof_analysis::output::{Format, Html, Json, Text, write_json};
use clrprof_analysis::runtime::View;
use clrprof_analysis::{Query, memory, report, trace};
use clrprof_symbols::SymbolFiles;

use crate::progress_line::Status;
use crate::safe_file::SafeFile;
use crate::symbol_server::{ServerOptions, SymbolServers};

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
    /// Lock contention: the view (text, JSON), or wait time in the profile formats.
    pub contention: bool,
    /// The hottest source lines (text, JSON).
    pub lines: bool,
    /// The annotated source of the method whose name contains this.
    pub source: Option<String>,
    /// `FROM=TO` rules for where source files are.
    pub source_roots: Vec<String>,
    /// Physical stacks instead of async call chains.
    pub no_async: bool,
    /// The GC section of the text report.
    pub gc: bool,
    /// The heap section of the text report.
    pub heap: bool,
    /// The heap snapshot to analyse.
    pub snapshot: Option<u32>,
    /// Two snapshots to compare (empty: no diff).
    pub diff: Vec<String>,
    /// Symbol files (or directories of them) for the native frames recorded without names.
    pub symbols: Vec<PathBuf>,
    /// Symbol servers and their cache, for the native frames the symbol files do not name.
    pub servers: ServerOptions,
    /// Only this process of a process tree's trace.
    pub pid: Option<u32>,
    /// List the processes and stop.
    pub processes: bool,
    /// Every frame of every stack, from the thread's start (else stacks start at the
    /// thread's managed entry).
    pub all_frames: bool,
    /// Text: the columns every line fits in (`Some(0)`: no limit); `None`: the terminal's
    /// width when standard output is one (see [`text_width`]).
    pub width: Option<usize>,
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
    // Checked before anything is read or written: a bad path is the user's typo.
    let mut symbols = if opts.symbols.is_empty() && !opts.servers.used() {
        None
    } else {
        let mut files = SymbolFiles::open(&opts.symbols).context("--symbols")?;
        if opts.servers.used() {
            files.set_source(Box::new(SymbolServers::new(&opts.servers)));
        }
        Some(files)
    };
    if let Some(output) = &opts.output {
        use crate::overlap::Named;
        let mut inputs = Vec::new();
        if let Some(file) = &opts.file {
            inputs.push(Named::new(
                format!("the trace read, {}", file.display()),
                file.as_path(),
            ));
        }
        for d in &opts.diff {
            let path = std::path::Path::new(d);
            let path = match d.rsplit_once('@') {
                Some((trace, n)) if !path.exists() && n.parse::<u32>().is_ok() => {
                    std::path::Path::new(trace)
                }
                _ => path,
            };
            inputs.push(Named::new(
                format!("a trace compared by --diff, {}", path.display()),
                path,
            ));
        }
        for s in &opts.symbols {
            inputs.push(Named::new(
                format!("a --symbols file, {}", s.display()),
                s.as_path(),
            ));
        }
        crate::overlap::refuse(&[Named::new("-o", output)], &inputs)?;
    }
    let mut out = open_output(opts)?;
    if opts.diff.len() == 2 {
        diff(opts, &mut out)?;
    } else {
        let Some(file) = &opts.file else {
            bail!("which trace? give a trace file (or --diff A B between two traces)");
        };
        report_file(opts, file, symbols.as_mut(), &mut out)?;
    }
    out.flush().context("writing the report")?;
    if let Some(path) = &opts.output {
        // Only a complete report replaces the file that was there.
        out.into_file()?.commit()?;
        say!("clrprof: wrote {}", path.display());
    }
    Ok(())
}

/// Where the report goes: a file written beside its name, or standard output.
enum Output {
    File(std::io::BufWriter<SafeFile>),
    Stdout(std::io::BufWriter<std::io::StdoutLock<'static>>),
}

impl Output {
    fn into_file(self) -> Result<SafeFile> {
        match self {
            Output::File(w) => w
                .into_inner()
                .map_err(|e| e.into_error())
                .context("writing the report"),
            Output::Stdout(_) => bail!("the report went to standard output"),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::File(w) => w.write(buf),
            Output::Stdout(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::File(w) => w.flush(),
            Output::Stdout(w) => w.flush(),
        }
    }
}

fn open_output(opts: &ReportOptions) -> Result<Output> {
    let binary = opts.format.is_binary();
    Ok(match &opts.output {
        Some(path) => Output::File(std::io::BufWriter::new(SafeFile::create(path)?)),
        None if binary && std::io::stdout().is_terminal() => {
            bail!("pprof output is binary; write it to a file with -o FILE")
        }
        None => Output::Stdout(std::io::BufWriter::new(std::io::stdout().lock())),
    })
}

/// Narrowest width the text report is fitted in: below it, lines are not cut.
const NARROWEST: usize = 40;

/// The columns the text report fits in: `--width N` (`0`: no limit); else, when it goes to a
/// terminal, `COLUMNS` if set, else the terminal's width; else (a file, a pipe) no limit, as
/// `perf report` and `ps` keep whole lines for other programs.
fn text_width(opts: &ReportOptions) -> Option<usize> {
    let width = match opts.width {
        Some(0) => return None,
        Some(n) => n,
        None if opts.output.is_some() || !std::io::stdout().is_terminal() => return None,
        None => match std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
        {
            Some(n) if n > 0 => n,
            _ => usize::from(console::Term::stdout().size_checked()?.1),
        },
    };
    Some(width.max(NARROWEST))
}

/// The rows a table shows: `--top N`, all of them for `--top 0`, else `default`.
fn table_rows(top: Option<usize>, default: usize) -> usize {
    match top {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => default,
    }
}

/// Whether the text output is one of the sections that replace the full report.
fn text_sections(opts: &ReportOptions) -> bool {
    opts.alloc || opts.gc || opts.heap || opts.view.is_some()
}

/// Traces at least this large get a progress bar while they load (on a terminal).
const PROGRESS_FROM_BYTES: u64 = 32 << 20;

/// How the samples of a trace are kept for `format`: summed (bounded memory) for everything
/// but the outputs with a timeline (the HTML report draws each thread's activity over time).
fn sample_detail(format: Format) -> trace::SampleDetail {
    match format {
        Format::Chrome | Format::Speedscope | Format::Html => trace::SampleDetail::Each,
        _ => trace::SampleDetail::Summed,
    }
}

/// Loads a trace, with a progress bar on a terminal for a large one.
fn load(
    file: &std::path::Path,
    keep: memory::HeapKeep,
    detail: trace::SampleDetail,
) -> Result<trace::LoadedTrace> {
    let size = std::fs::metadata(file).map_or(0, |m| m.len());
    if size < PROGRESS_FROM_BYTES || !std::io::stderr().is_terminal() {
        return Ok(trace::load_with_progress(
            file,
            keep,
            detail,
            &mut |_, _| {},
        )?);
    }
    let bar = indicatif::ProgressBar::new(size);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "reading {msg} {wide_bar} {binary_bytes}/{binary_total_bytes} ({eta} left)",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let loaded =
        trace::load_with_progress(file, keep, detail, &mut |done, _| bar.set_position(done));
    bar.finish_and_clear();
    Ok(loaded?)
}

/// Loads every process of a trace, with a progress bar on a terminal for a large one.
fn load_all(
    file: &std::path::Path,
    keep: memory::HeapKeep,
    detail: trace::SampleDetail,
) -> Result<Vec<trace::ProcessTrace>> {
    let size = std::fs::metadata(file).map_or(0, |m| m.len());
    if size < PROGRESS_FROM_BYTES || !std::io::stderr().is_terminal() {
        return Ok(trace::load_processes(file, keep, detail, &mut |_, _| {})?);
    }
    let bar = indicatif::ProgressBar::new(size);
    let loaded = trace::load_processes(file, keep, detail, &mut |done, _| bar.set_position(done));
    bar.finish_and_clear();
    Ok(loaded?)
}

/// The label of a process in reports: `[process 4242: dotnet app.dll]`.
fn process_label(p: &trace::ProcessTrace) -> String {
    let cmd = p.command_line();
    let short: String = cmd.chars().take(80).collect();
    let more = if cmd.chars().count() > 80 { "…" } else { "" };
    format!("[process {}: {short}{more}]", p.pid())
}

/// The processes of a trace, as a table.
fn write_process_table(processes: &[trace::ProcessTrace], out: &mut dyn Write) -> Result<()> {
    writeln!(out, "Processes: {}", processes.len())?;
    writeln!(
        out,
        "  {:>8} {:>8} {:>10} {:>9}  {:<48} command line",
        "pid", "parent", "duration", "samples", "how it ended"
    )?;
    for p in processes {
        let t = &p.trace;
        let how = if p.left_out() {
            "left out by the process filter".to_string()
        } else {
            p.ending()
        };
        let samples = t.counter(CounterName::SamplesWritten);
        writeln!(
            out,
            "  {:>8} {:>8} {:>9.2}s {:>9}  {:<48} {}",
            p.pid(),
            p.process.as_ref().map_or(0, |d| d.parent_pid),
            t.duration_ns() as f64 / 1e9,
            samples,
            how,
            p.command_line()
        )?;
    }
    Ok(())
}

/// The processes of a trace, as JSON.
fn process_json(p: &trace::ProcessTrace) -> serde_json::Value {
    let t = &p.trace;
    serde_json::json!({
        "pid": p.pid(),
        "parent_pid": p.process.as_ref().map_or(0, |d| d.parent_pid),
        "command_line": p.command_line(),
        "left_out": p.left_out(),
        "ended": p.ending(),
        "exit_code": t.process_exit.map(|e| e.exit_code).or_else(|| t.recording_end.and_then(|r| (r.signal == 0 && r.exit_code >= 0).then_some(r.exit_code))),
        "signal": t.recording_end.map_or(0, |r| r.signal),
        "clean": t.session_end.is_some(),
        "duration_ns": t.duration_ns(),
    })
}

/// Loads one side of `--diff`: `N` (a snapshot of FILE), `TRACE` or `TRACE@N`. Each side
/// loads its trace keeping only its own snapshot, so two snapshots of one big trace are never
/// held together with the rest.
fn diff_side(opts: &ReportOptions, spec: &str) -> Result<(trace::LoadedTrace, Option<u32>)> {
    if let Ok(n) = spec.parse::<u32>() {
        let Some(file) = &opts.file else {
            bail!("--diff {spec}: a snapshot number needs a trace file");
        };
        let t = load(
            file,
            memory::HeapKeep::Numbers(vec![n]),
            trace::SampleDetail::Summed,
        )?;
        return Ok((t, Some(n)));
    }
    let (path, number) = match spec.rsplit_once('@') {
        Some((p, n)) if n.parse::<u32>().is_ok() => (p, n.parse::<u32>().ok()),
        _ => (spec, None),
    };
    let keep = number.map_or(memory::HeapKeep::Last, |n| {
        memory::HeapKeep::Numbers(vec![n])
    });
    Ok((
        load(
            std::path::Path::new(path),
            keep,
            trace::SampleDetail::Summed,
        )?,
        number,
    ))
}

fn diff(opts: &ReportOptions, out: &mut dyn Write) -> Result<()> {
    let (before, after) = Status::during(|show| -> Result<_> {
        let mut analyse = |spec: &str| -> Result<memory::HeapReport> {
            let (t, n) = diff_side(opts, spec)?;
            let s = clrprof_analysis::memory::snapshot(&t, n)
                .with_context(|| format!("--diff {spec}"))?;
            Ok(memory::heap::analyze(s, &t.names, 0, show))
        };
        Ok((analyse(&opts.diff[0])?, analyse(&opts.diff[1])?))
    })?;
    let rows = memory::heap::diff(&before, &after);
    match opts.format {
        Format::Json => memory::write_diff_json(&before, &after, &rows, opts.pretty, out)?,
        Format::Text => {
            let top = table_rows(opts.query.top, memory::TEXT_ROWS);
            memory::write_diff_text(&before, &after, &rows, top, out)?;
        }
        other => bail!("--diff writes text or json, not {other:?}"),
    }
    Ok(())
}

/// `report --contention`: the view as text or JSON, the wait time by stack in the profile
/// formats (the same renderers as for CPU, weighed with the `wall` metric).
fn contention(
    opts: &ReportOptions,
    loaded: &trace::LoadedTrace,
    file: &std::path::Path,
    out: &mut dyn Write,
) -> Result<()> {
    use clrprof_analysis::contention::{write_contention_json, write_contention_text};
    match opts.format {
        Format::Text => {
            let top = table_rows(opts.query.top, memory::TEXT_ROWS);
            write_contention_text(loaded, top, out)?;
        }
        Format::Json => write_contention_json(loaded, opts.pretty, out)?,
        Format::Folded | Format::Flamegraph | Format::Speedscope | Format::Pprof => {
            if !clrprof_analysis::contention::has_contention(loaded) {
                bail!(
                    "{} has no lock contention; record with --contention",
                    file.display()
                );
            }
            let q = Query {
                metric: Some(clrprof_analysis::query::Metric::Wall),
                ..opts.query.clone()
            };
            opts.format.renderer().render(
                &clrprof_analysis::contention::profile(loaded),
                &q,
                out,
            )?;
        }
        other => bail!(
            "--contention writes text, json, folded, flamegraph, speedscope or pprof, not {other:?}"
        ),
    }
    Ok(())
}

/// The `--source-root` rules.
fn source_roots(opts: &ReportOptions) -> Result<clrprof_analysis::lines::SourceRoots> {
    clrprof_analysis::lines::SourceRoots::parse(&opts.source_roots)
        .map_err(|e| anyhow::anyhow!("--source-root {e}"))
}

/// `report --lines` and `report --source METHOD`.
fn source_lines(
    opts: &ReportOptions,
    loaded: &trace::LoadedTrace,
    out: &mut dyn Write,
) -> Result<()> {
    use clrprof_analysis::lines::{self, SourceLines};
    let roots = source_roots(opts)?;
    let mut source = SourceLines::new(roots);
    let tids = match &opts.query.thread {
        Some(selector) => Some(clrprof_analysis::query::thread_ids(
            &clrprof_analysis::profile::of(loaded),
            selector,
        )?),
        None => None,
    };
    let profile = if opts.alloc {
        if !clrprof_analysis::memory::alloc::has_allocations(loaded) {
            bail!("the trace has no allocations; record with --alloc");
        }
        lines::alloc_lines(loaded, tids.as_deref(), &mut source)
    } else if opts.contention {
        if !clrprof_analysis::contention::has_contention(loaded) {
            bail!("the trace has no lock contention; record with --contention");
        }
        lines::contention_lines(loaded, tids.as_deref(), &mut source)
    } else if opts.view == Some(View::Exceptions) {
        lines::throw_lines(loaded, &mut source)
    } else {
        lines::cpu_lines(loaded, tids.as_deref(), &mut source)
    };
    match (opts.format, &opts.source) {
        (Format::Text, Some(method)) => {
            lines::write_source_text(loaded, &profile, method, &mut source, out)?
        }
        (Format::Text, None) => {
            let top = table_rows(opts.query.top, memory::TEXT_ROWS);
            lines::write_lines_text(&profile, top, out)?
        }
        (Format::Json, _) => lines::write_lines_json(&profile, opts.pretty, out)?,
        (other, _) => bail!(
            "--lines and --source write text or json, not {other:?}; the pprof output carries \
             lines (`go tool pprof -lines`, `-list`)"
        ),
    }
    Ok(())
}

fn report_file(
    opts: &ReportOptions,
    file: &std::path::Path,
    symbols: Option<&mut SymbolFiles>,
    out: &mut dyn Write,
) -> Result<()> {
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
    let mut all = load_all(file, keep, sample_detail(opts.format))?;
    let being_written = crate::safe_file::being_written(file);
    for p in &mut all {
        p.trace.integrity.being_written = being_written;
        if opts.no_async {
            p.trace.stack_view = clrprof_analysis::StackView::Physical;
        }
        // pprof carries source lines (`go tool pprof -lines`, `-list`), speedscope each
        // function's source file and first line.
        if matches!(opts.format, Format::Pprof | Format::Speedscope) {
            p.trace.source_lines = Some(source_roots(opts)?);
        }
        if !opts.all_frames {
            p.trace.stack_start = clrprof_analysis::StackStart::ManagedEntry;
        }
    }
    if opts.processes {
        return match opts.format {
            Format::Json => {
                let list: Vec<_> = all.iter().map(process_json).collect();
                let v = serde_json::json!({ "processes": list });
                Ok(write_json(&v, opts.pretty, out)?)
            }
            Format::Text => write_process_table(&all, out),
            other => bail!("--processes writes text or json, not {other:?}"),
        };
    }
    if let Some(pid) = opts.pid {
        let Some(i) = all.iter().position(|p| p.pid() == pid) else {
            let pids: Vec<String> = all.iter().map(|p| p.pid().to_string()).collect();
            bail!(
                "{} has no process {pid}; its processes are {} (`clrprof report --processes {}`)",
                file.display(),
                pids.join(", "),
                file.display()
            );
        };
        let one = all.swap_remove(i);
        if one.left_out() {
            bail!(
                "process {pid} was left out by the process filter of `record`: nothing of it was recorded"
            );
        }
        return report_one(opts, file, one.trace, symbols, out);
    }
    all.retain(|p| !p.left_out());
    if all.len() <= 1 {
        let Some(one) = all.pop() else {
            bail!(
                "{}: every process was left out by the process filter of `record`",
                file.display()
            );
        };
        return report_one(opts, file, one.trace, symbols, out);
    }
    report_tree(opts, file, all, symbols, out)
}

/// A trace of several processes: every process, merged where the format draws one profile.
fn report_tree(
    opts: &ReportOptions,
    file: &std::path::Path,
    mut all: Vec<trace::ProcessTrace>,
    symbols: Option<&mut SymbolFiles>,
    out: &mut dyn Write,
) -> Result<()> {
    if let Some(files) = symbols {
        for p in &mut all {
            let label = process_label(p);
            let naming = clrprof_analysis::native::name_frames(&mut p.trace, files);
            say!("clrprof: {label}: {}", naming.summary());
        }
        say_source_notes(files);
    }
    if let Some(first) = all.first()
        && !first.trace.integrity.is_whole()
    {
        for note in first.trace.integrity.notes() {
            say!("clrprof: warning: {}: {note}", file.display());
        }
    }
    let q = &opts.query;
    match opts.format {
        Format::Folded | Format::Flamegraph | Format::Speedscope | Format::Pprof => {
            let parts: Vec<(String, clrprof_analysis::Profile)> = all
                .iter()
                .filter(|p| {
                    if opts.alloc {
                        clrprof_analysis::memory::alloc::has_allocations(&p.trace)
                    } else {
                        p.trace.has_cpu_data()
                    }
                })
                .map(|p| {
                    let profile = if opts.alloc {
                        clrprof_analysis::memory::alloc::profile(&p.trace)
                    } else {
                        clrprof_analysis::profile::of(&p.trace)
                    };
                    (process_label(p), profile)
                })
                .collect();
            if parts.is_empty() {
                bail!(
                    "no process of {} has {}",
                    file.display(),
                    if opts.alloc {
                        "allocations; record with --alloc"
                    } else {
                        "CPU samples or call trees (recorded with --mode none)"
                    }
                );
            }
            let merged = clrprof_analysis::Profile::merge_processes(parts);
            opts.format.renderer().render(&merged, q, out)?;
        }
        Format::Json => {
            let options = Json {
                pretty: opts.pretty,
                ..Json::default()
            };
            let mut list = Vec::new();
            for p in &all {
                let mut v = process_json(p);
                let mut buf = Vec::new();
                if let Some(view) = opts.view {
                    report::write_view_json(&p.trace, view, false, &mut buf)?;
                } else {
                    let json = Status::during(|show| {
                        report::json_with(&p.trace, q, &options, opts.snapshot, show)
                    })?;
                    report::write_json_report(
                        &json,
                        &Json {
                            pretty: false,
                            ..Json::default()
                        },
                        &mut buf,
                    )?;
                }
                v["report"] = serde_json::from_slice(&buf).context("a process's JSON report")?;
                list.push(v);
            }
            write_json(&serde_json::json!({ "processes": list }), opts.pretty, out)?;
        }
        Format::Text => {
            write_process_table(&all, out)?;
            for p in all {
                writeln!(out)?;
                writeln!(out, "===== {} =====", process_label(&p))?;
                report_one(opts, file, p.trace, None, out)?;
            }
        }
        Format::Chrome => {
            // One timeline: each process's events under its own pid, moved to the time its
            // session started after the earliest one's.
            let start =
                |p: &trace::ProcessTrace| p.trace.session.as_ref().map_or(0, |s| s.start_unix_ns);
            let first = all.iter().map(start).filter(|&t| t != 0).min().unwrap_or(0);
            let mut events = Vec::new();
            let mut other = Vec::new();
            for p in &all {
                let mut buf = Vec::new();
                report::write_chrome(&p.trace, q, &mut buf)?;
                let mut v: serde_json::Value =
                    serde_json::from_slice(&buf).context("a process's Chrome timeline")?;
                let shift_us = start(p).saturating_sub(first) as f64 / 1000.0;
                if let Some(list) = v["traceEvents"].as_array_mut() {
                    for e in list.iter_mut() {
                        if let Some(ts) = e["ts"].as_f64() {
                            e["ts"] = serde_json::json!(ts + shift_us);
                        }
                    }
                    events.append(list);
                }
                let mut data = process_json(p);
                data["timeline"] = v["otherData"].take();
                other.push(data);
            }
            let v = serde_json::json!({
                "traceEvents": events,
                "displayTimeUnit": "ms",
                "otherData": { "processes": other },
            });
            serde_json::to_writer(&mut *out, &v)?;
            writeln!(out)?;
        }
        Format::Html => {
            bail!(
                "{} holds {} processes; the {} output shows one: pick it with --pid ({})",
                file.display(),
                all.len(),
                "HTML",
                all.iter()
                    .map(|p| p.pid().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(())
}

/// What the symbol servers did (one line per server), on stderr.
fn say_source_notes(files: &mut SymbolFiles) {
    for note in files
        .source_mut()
        .map(|s| s.take_notes())
        .unwrap_or_default()
    {
        say!("clrprof: {note}");
    }
}

/// The report of one process's trace.
fn report_one(
    opts: &ReportOptions,
    file: &std::path::Path,
    mut loaded: trace::LoadedTrace,
    symbols: Option<&mut SymbolFiles>,
    out: &mut dyn Write,
) -> Result<()> {
    // The full text report says it at the top; every other output gets it on stderr.
    let in_report = opts.format == Format::Text && !text_sections(opts);
    if !loaded.integrity.is_whole() && !in_report {
        for note in loaded.integrity.notes() {
            say!("clrprof: warning: {}: {note}", file.display());
        }
    }
    if let Some(files) = symbols {
        let naming = clrprof_analysis::native::name_frames(&mut loaded, files);
        say_source_notes(files);
        // The whole text and JSON reports say it in their header; other outputs have none.
        let header = opts.view.is_none()
            && match opts.format {
                Format::Text => !(opts.alloc || opts.gc || opts.heap),
                Format::Json => true,
                _ => false,
            };
        if !header {
            say!("clrprof: {}", naming.summary());
        }
    }
    let loaded = loaded;
    let q = &opts.query;
    // Every line of the text report within the width: the tables shorten their names
    // themselves, other long lines (paths, command lines) are cut at the end.
    let mut fitted;
    let out: &mut dyn Write = match text_width(opts).filter(|_| opts.format == Format::Text) {
        Some(w) => {
            fitted = clrprof_analysis::output::fit::FitLines::new(out, w);
            &mut fitted
        }
        None => out,
    };
    if opts.lines || opts.source.is_some() {
        return source_lines(opts, &loaded, out);
    }
    if opts.contention {
        return contention(opts, &loaded, file, out);
    }
    if let Some(view) = opts.view {
        match opts.format {
            Format::Json => report::write_view_json(&loaded, view, opts.pretty, out)?,
            _ => report::write_view_text(&loaded, view, out)?,
        }
        return Ok(());
    }
    match opts.format {
        Format::Text if text_sections(opts) => {
            let top = table_rows(q.top, memory::TEXT_ROWS);
            if opts.alloc {
                memory::write_alloc_text(&loaded, top, out)?;
            }
            if opts.gc {
                memory::write_gc_text(&loaded, out)?;
            }
            if opts.heap {
                let h = Status::during(|show| {
                    clrprof_analysis::memory::heap_json(&loaded, opts.snapshot, top.min(10), show)
                })?;
                memory::write_heap_text(&h, top, out)?;
            }
        }
        Format::Folded | Format::Flamegraph | Format::Speedscope | Format::Pprof if opts.alloc => {
            if !clrprof_analysis::memory::alloc::has_allocations(&loaded) {
                bail!("{} has no allocations; record with --alloc", file.display());
            }
            // The same renderers as for CPU profiles, weighted by bytes (or objects).
            opts.format.renderer().render(
                &clrprof_analysis::memory::alloc::profile(&loaded),
                q,
                out,
            )?;
        }
        Format::Text => {
            let text = Text {
                tree: opts.tree,
                width: text_width(opts),
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
            other
                .renderer()
                .render(&clrprof_analysis::profile::of(&loaded), q, out)?;
        }
    }
    Ok(())
}
