//! `clrprof record`: run a program with the agent, receive its stream, write the trace.
//!
//! The CLI listens on a Unix socket in a private temporary directory and starts the program
//! with the runtime's profiler variables pointing at the agent. The agent connects during the
//! runtime's startup and streams records; the CLI checks each one and appends it to the trace
//! file as it arrives, so a program that crashes still leaves a trace that is whole up to the
//! agent's last flush. When the program ends, the CLI appends a `RecordingEnd` and exits with
//! the program's exit code. If the agent never connected, it says why that probably happened
//! and exits with [`AGENT_FAILED`].

use std::io::{BufWriter, Read};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_trace::{Record, RecordingEnd, StreamDecoder, Writer, protocol};
use indicatif::{ProgressBar, ProgressStyle};

use crate::alloc_ticks::{TickSession, is_definition, tick_records};

/// Exit code when profiling itself failed (as `env` and container tools use 125).
pub const AGENT_FAILED: i32 = 125;

/// What to record, independent of the command-line syntax.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// `sample`, `trace` or `none`.
    pub mode: &'static str,
    /// Event categories.
    pub events: Vec<String>,
    /// Sampling rate.
    pub rate: u32,
    /// Sample mode's wall-clock rate (`None`: the agent's default).
    pub wall_rate: Option<u32>,
    /// Sample mode's per-thread CPU clock, `perf` or `timer` (`None`: the agent's choice).
    pub cpu_clock: Option<&'static str>,
    /// Keep JIT inlining.
    pub inline: bool,
    /// Call tree node budget.
    pub max_nodes: u64,
    /// Allocations with stacks: `None`, `Some("sampled")`, `Some("all")` or `Some("ticks")`
    /// (read by the CLI from the runtime's events, see `alloc_ticks.rs`, not by the agent).
    pub alloc: Option<&'static str>,
    /// Mean sampling interval of `--alloc sampled`, in bytes (`None`: the agent's default).
    pub alloc_interval: Option<u64>,
    /// Heap snapshots: `at-exit`, `every-gc` or N.
    pub heap_snapshot: Option<String>,
    /// Trace file.
    pub output: PathBuf,
    /// The agent library.
    pub agent: PathBuf,
    /// Program and arguments.
    pub command: Vec<String>,
    /// More agent settings (`key=value;...`), e.g. coverage's.
    pub extra_config: String,
    /// Print the closing summary line.
    pub summary: bool,
}

impl RecordOptions {
    /// Records `command` in `mode` with `agent` into `output`: no events, 1000 Hz, inlining
    /// kept, a one-node call tree budget, no allocations or heap snapshots, no extra agent
    /// settings, and the closing summary line. Callers override what differs.
    pub(crate) fn new(
        mode: &'static str,
        output: PathBuf,
        agent: PathBuf,
        command: Vec<String>,
    ) -> Self {
        Self {
            mode,
            events: Vec::new(),
            rate: 1000,
            wall_rate: None,
            cpu_clock: None,
            inline: true,
            max_nodes: 1,
            alloc: None,
            alloc_interval: None,
            heap_snapshot: None,
            output,
            agent,
            command,
            extra_config: String::new(),
            summary: true,
        }
    }

    /// Whether allocations come from the runtime's allocation ticks rather than the agent.
    pub(crate) fn alloc_ticks(&self) -> bool {
        self.alloc == Some("ticks")
    }

    pub(crate) fn agent_config(&self) -> String {
        let mut c = format!(
            "mode={};rate={};inline={};max_nodes={}",
            self.mode,
            self.rate,
            u8::from(self.inline),
            self.max_nodes
        );
        if let Some(hz) = self.wall_rate {
            c.push_str(&format!(";wall_rate={hz}"));
        }
        if let Some(clock) = self.cpu_clock {
            c.push_str(&format!(";cpu_clock={clock}"));
        }
        if !self.events.is_empty() {
            c.push_str(";events=");
            c.push_str(&self.events.join(","));
        }
        if let Some(alloc) = self.alloc.filter(|_| !self.alloc_ticks()) {
            c.push_str(&format!(";alloc={alloc}"));
        }
        if let Some(bytes) = self.alloc_interval {
            c.push_str(&format!(";alloc_interval={bytes}"));
        }
        if let Some(when) = &self.heap_snapshot {
            c.push_str(&format!(";heap_snapshot={when}"));
        }
        if !self.extra_config.is_empty() {
            c.push(';');
            c.push_str(&self.extra_config);
        }
        c
    }
}

/// Live counts shared between the receiving thread and the status line.
#[derive(Default)]
pub(crate) struct Progress {
    pub(crate) connected: AtomicBool,
    pub(crate) clean: AtomicBool,
    pub(crate) records: AtomicU64,
    pub(crate) events: AtomicU64,
    pub(crate) samples: AtomicU64,
    /// The latest value of the agent's cumulative `events_dropped` counter.
    events_dropped: AtomicU64,
    /// The latest value of the agent's cumulative `samples_dropped` counter.
    samples_dropped: AtomicU64,
    bytes: AtomicU64,
    messages: Mutex<Vec<(u8, String)>>,
    pub(crate) problem: Mutex<Option<String>>,
    /// What the agent defined (for the allocation tick records).
    pub(crate) agent_ids: Mutex<crate::alloc_ticks::AgentIds>,
}

impl Progress {
    /// Events and samples the agent dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.events_dropped.load(Ordering::Relaxed) + self.samples_dropped.load(Ordering::Relaxed)
    }
}

/// Runs the recording; returns the exit code clrprof should exit with.
pub fn record(opts: &RecordOptions) -> Result<i32> {
    validate_events(&opts.events)?;
    if opts.alloc_ticks() && opts.alloc_interval.is_some() {
        bail!(
            "--alloc-interval applies to --alloc sampled; the runtime chooses the ticks of --alloc ticks"
        );
    }
    if opts.alloc == Some("all") {
        // Said before the program starts, so that nobody waits without knowing why.
        eprintln!(
            "clrprof: --alloc all records every allocation with its stack: allocation-heavy code \
             runs 15 to 50 times slower (see BENCHMARKS.md); --alloc (ticks) or --alloc sampled \
             estimate at a fraction of that"
        );
    }
    let (program, args) = resolve_program(&opts.command)?;
    let AgentSocket {
        dir: _dir,
        socket,
        listener,
        file,
    } = AgentSocket::open(&opts.output)?;

    let mut cmd = Command::new(&program);
    cmd.args(&args)
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", protocol::AGENT_CLSID)
        .env("CORECLR_PROFILER_PATH", &opts.agent)
        .env("CORECLR_PROFILER_PATH_64", &opts.agent)
        .env(protocol::ENV_SESSION, &socket)
        .env(protocol::ENV_CONFIG, opts.agent_config())
        .env_remove(protocol::ENV_OUTPUT);

    let progress = Arc::new(Progress::default());
    let stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (progress, stop, socket) = (Arc::clone(&progress), Arc::clone(&stop), socket.clone());
        std::thread::spawn(move || receive(listener, &socket, file, &progress, &stop))
    };

    // Ctrl-C goes to the whole terminal process group: the program decides what to do with
    // it; clrprof keeps receiving until the program is gone, then finishes the trace.
    ignore_interrupts();
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let ticks = if opts.alloc_ticks() {
        Some(
            TickSession::start(child.id(), Arc::clone(&stop))
                .context("cannot start the EventPipe reader thread")?,
        )
    } else {
        None
    };
    // Wait for the program on a thread of its own, so that its end is seen at once while the
    // status line keeps ticking.
    let (exited_tx, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = exited_tx.send(child.wait());
    });
    let bar = status_line();
    let status = loop {
        match exited.recv_timeout(Duration::from_millis(100)) {
            Ok(status) => break status.context("waiting for the program")?,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                print_messages(&progress, &bar);
                bar.set_message(status_text(&progress, started.elapsed()));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                bail!("lost track of the program")
            }
        }
    };
    let duration = started.elapsed();
    // The program is gone, so the agent's socket is closed: the receiver drains what is left.
    stop.store(true, Ordering::Release);
    let mut writer = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))??;
    bar.finish_and_clear();
    print_messages(&progress, &bar);
    if let Some(ticks) = ticks {
        write_ticks(ticks, writer.as_mut(), &progress)?;
    }

    let (exit_code, signal) = exit_of(status);
    let connected = progress.connected.load(Ordering::Acquire);
    let clean = progress.clean.load(Ordering::Acquire);
    if let Some(mut w) = writer {
        w.write(&Record::RecordingEnd(RecordingEnd {
            duration_ns: duration.as_nanos() as u64,
            exit_code: if signal == 0 { exit_code } else { -1 },
            signal,
            agent_connected: connected,
            clean,
        }))?;
        w.flush()?;
    }
    if !connected {
        let _ = std::fs::remove_file(&opts.output);
        eprintln!("clrprof: error: the agent never started, so nothing was recorded.");
        eprintln!(
            "clrprof:   the runtime did not load {} or the agent refused to start.",
            opts.agent.display()
        );
        eprintln!(
            "clrprof:   Is `{}` a .NET (Core 3.1 or later) program? Other programs ignore the profiler variables.",
            opts.command.join(" ")
        );
        eprintln!(
            "clrprof:   Is the agent built for this platform, and readable? (`file {}`)",
            opts.agent.display()
        );
        return Ok(AGENT_FAILED);
    }
    warn_problem(&progress);
    if !clean {
        eprintln!(
            "clrprof: warning: the program ended without shutting the profiler down (crash or kill); the trace holds everything up to the agent's last flush"
        );
    }
    let code = if signal != 0 { 128 + signal } else { exit_code };
    if !opts.summary {
        return Ok(code);
    }
    let ended = if signal != 0 {
        format!("signal {signal}")
    } else {
        format!("code {exit_code}")
    };
    print_wrote(
        &opts.output,
        &progress,
        &format!("; the program exited with {ended}"),
    );
    Ok(code)
}

/// The private directory, the socket the agent connects to, and the trace file.
pub(crate) struct AgentSocket {
    /// Removed (with the socket) when dropped.
    pub(crate) dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    /// Non-blocking: see [`accept_agent`].
    pub(crate) listener: UnixListener,
    pub(crate) file: std::fs::File,
}

impl AgentSocket {
    /// Creates the private directory, listens on its socket and creates the trace file.
    pub(crate) fn open(output: &Path) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("clrprof-")
            .tempdir()
            .context("cannot create a private temporary directory")?;
        let socket = dir.path().join("agent.sock");
        let listener = UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        listener.set_nonblocking(true)?;
        let file = std::fs::File::create(output)
            .with_context(|| format!("cannot create the trace file {}", output.display()))?;
        Ok(Self {
            dir,
            socket,
            listener,
            file,
        })
    }
}

/// Waits for the agent's connection on the non-blocking `listener`, polling while `waiting()`
/// says to go on; `None` once it says to stop.
pub(crate) fn accept_agent(
    listener: &UnixListener,
    mut waiting: impl FnMut() -> bool,
) -> std::io::Result<Option<UnixStream>> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => return Ok(Some(stream)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !waiting() {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Prints the first problem the receiver met, if any.
pub(crate) fn warn_problem(progress: &Progress) {
    if let Some(problem) = progress
        .problem
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        eprintln!("clrprof: warning: {problem}");
    }
}

/// The closing line: the trace file and its counts, then `tail` (how the recording ended).
pub(crate) fn print_wrote(output: &Path, progress: &Progress, tail: &str) {
    eprintln!(
        "clrprof: wrote {} ({} records: {} events, {} samples, {} dropped){tail}",
        output.display(),
        progress.records.load(Ordering::Relaxed),
        progress.events.load(Ordering::Relaxed),
        progress.samples.load(Ordering::Relaxed),
        progress.dropped(),
    );
}

/// Appends the allocation samples of the program's EventPipe session to the trace.
fn write_ticks(
    ticks: TickSession,
    writer: Option<&mut Writer<BufWriter<std::fs::File>>>,
    progress: &Progress,
) -> Result<()> {
    let bytes = match ticks.finish() {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("clrprof: warning: no allocation samples: {e}");
            return Ok(());
        }
    };
    let Some(w) = writer else {
        return Ok(());
    };
    let ids = progress.agent_ids.lock().unwrap_or_else(|e| e.into_inner());
    let (records, summary) = tick_records(&bytes, &ids);
    for r in &records {
        w.write(r)?;
    }
    if let Some(why) = summary.incomplete {
        eprintln!(
            "clrprof: warning: the runtime's event stream was cut short ({why}); the allocation samples before that point were kept"
        );
    }
    if summary.ticks == 0 {
        eprintln!("clrprof: warning: the runtime sent no allocation ticks");
    }
    Ok(())
}

pub(crate) fn validate_events(events: &[String]) -> Result<()> {
    for e in events {
        if e != "all" && clrprof_trace::EventCategory::parse(e).is_none() {
            let known: Vec<&str> = clrprof_trace::EventCategory::all()
                .iter()
                .map(|c| c.name())
                .collect();
            bail!(
                "unknown event category `{e}`; choose from {}, or all",
                known.join(", ")
            );
        }
    }
    Ok(())
}

/// The program to start: a `.dll` runs under the `dotnet` host.
fn resolve_program(command: &[String]) -> Result<(PathBuf, Vec<String>)> {
    let (first, rest) = command.split_first().context("no program to run")?;
    if first.ends_with(".dll") {
        if !Path::new(first).is_file() {
            bail!("{first} does not exist");
        }
        let dotnet = find_dotnet().context(
            "cannot find the `dotnet` host to run the .dll: put it on PATH or set DOTNET_ROOT",
        )?;
        let mut args = vec![first.clone()];
        args.extend(rest.iter().cloned());
        return Ok((dotnet, args));
    }
    Ok((PathBuf::from(first), rest.to_vec()))
}

fn find_dotnet() -> Option<PathBuf> {
    if let Some(root) = std::env::var_os("DOTNET_ROOT") {
        let p = PathBuf::from(root).join("dotnet");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("dotnet"))
            .find(|p| p.is_file())
    })
}

/// Accepts the agent's connection and copies its stream into the trace file.
fn receive(
    listener: UnixListener,
    socket: &Path,
    file: std::fs::File,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<Option<Writer<BufWriter<std::fs::File>>>> {
    let Some(stream) = accept_agent(&listener, || !stop.load(Ordering::Acquire))
        .context("accepting the agent's connection")?
    else {
        return Ok(None);
    };
    // One agent per recording: child processes that inherit the variables cannot connect.
    let _ = std::fs::remove_file(socket);
    drop(listener);
    progress.connected.store(true, Ordering::Release);
    copy_stream(stream, file, progress)
}

pub(crate) fn copy_stream(
    mut stream: UnixStream,
    file: std::fs::File,
    progress: &Progress,
) -> Result<Option<Writer<BufWriter<std::fs::File>>>> {
    stream.set_nonblocking(false)?;
    let mut decoder = StreamDecoder::new();
    let mut writer: Option<Writer<BufWriter<std::fs::File>>> = None;
    let mut file = Some(file);
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                set_problem(progress, format!("reading from the agent failed: {e}"));
                break;
            }
        };
        progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
        decoder.push(&buf[..n]);
        while let Some(next) = decoder.next_record() {
            let raw = match next {
                Ok(raw) => raw,
                Err(e) => {
                    set_problem(
                        progress,
                        format!(
                            "the agent sent data clrprof cannot read ({e}); the trace stops there"
                        ),
                    );
                    return Ok(writer);
                }
            };
            if writer.is_none() {
                let f = file.take().context("trace file already used")?;
                writer = Some(Writer::with_header(
                    BufWriter::with_capacity(1 << 20, f),
                    raw.header,
                )?);
            }
            if let Some(w) = writer.as_mut() {
                w.write_raw(raw.bytes)?;
            }
            note(progress, &raw.record);
        }
        if let Some(w) = writer.as_mut() {
            w.flush()?;
        }
    }
    if decoder.finish().is_err() {
        set_problem(progress, "the agent's stream ended in the middle of a record (the program probably crashed); the partial record was left out".into());
    }
    Ok(writer)
}

fn set_problem(progress: &Progress, text: String) {
    progress
        .problem
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(text);
}

fn note(progress: &Progress, record: &Record) {
    progress.records.fetch_add(1, Ordering::Relaxed);
    if is_definition(record) {
        progress
            .agent_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(record);
    }
    match record {
        Record::Event(_) => {
            progress.events.fetch_add(1, Ordering::Relaxed);
        }
        Record::Sample(_) => {
            progress.samples.fetch_add(1, Ordering::Relaxed);
        }
        // Cumulative per counter: keep the latest values.
        Record::Counter(c) if c.name == "events_dropped" => {
            progress.events_dropped.store(c.value, Ordering::Relaxed);
        }
        Record::Counter(c) if c.name == "samples_dropped" => {
            progress.samples_dropped.store(c.value, Ordering::Relaxed);
        }
        Record::SessionEnd(_) => progress.clean.store(true, Ordering::Release),
        Record::Message(m) => progress
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((m.level, m.text.clone())),
        _ => {}
    }
}

pub(crate) fn status_line() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} recording {elapsed_precise} · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

pub(crate) fn status_text(p: &Progress, elapsed: Duration) -> String {
    if !p.connected.load(Ordering::Acquire) {
        return if elapsed > Duration::from_secs(2) {
            "waiting for the agent to start...".into()
        } else {
            "starting".into()
        };
    }
    format!(
        "{} events · {} samples · {} dropped · {:.1} MB",
        p.events.load(Ordering::Relaxed),
        p.samples.load(Ordering::Relaxed),
        p.dropped(),
        p.bytes.load(Ordering::Relaxed) as f64 / 1e6
    )
}

pub(crate) fn print_messages(p: &Progress, bar: &ProgressBar) {
    let messages = std::mem::take(&mut *p.messages.lock().unwrap_or_else(|e| e.into_inner()));
    for (level, text) in messages {
        let kind = match level {
            0 => "note",
            1 => "warning",
            _ => "error",
        };
        bar.suspend(|| eprintln!("clrprof: agent {kind}: {text}"));
    }
}

fn exit_of(status: ExitStatus) -> (i32, i32) {
    use std::os::unix::process::ExitStatusExt;
    (status.code().unwrap_or(-1), status.signal().unwrap_or(0))
}

fn ignore_interrupts() {
    // A handler that does nothing: clrprof outlives the program it records.
    let _ = ctrlc::set_handler(|| {});
}
