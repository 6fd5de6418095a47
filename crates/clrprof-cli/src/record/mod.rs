//! `clrprof record`: run a program with the agent, receive its stream, write the trace.
//!
//! The CLI listens on a Unix socket in a private temporary directory and starts the program
//! with the runtime's profiler variables pointing at the agent. The agent connects during the
//! runtime's startup and streams records; the CLI checks each one and appends it to the trace
//! (`NAME.partial` in checksummed blocks, see [`crate::trace_file`]) as it arrives, so a
//! program that crashes still leaves a trace that is whole up to the agent's last flush, and a
//! `clrprof` that is killed leaves a readable partial trace. When the program ends, the CLI
//! appends a `RecordingEnd`, renames the trace to NAME and exits with the program's exit code.
//! If the agent never connected, it says why that probably happened and exits with
//! [`AGENT_FAILED`]. If the trace cannot be written (disk full, file-size limit), the program
//! runs on, the trace keeps what was written, and `clrprof` says what is missing and exits
//! with the program's exit code. SIGTERM, SIGHUP and SIGINT sent to `clrprof` are passed on
//! to the program ([`crate::signals`]): the recording ends when the program does, complete.
//! An output that is one of the program's files is refused before anything starts
//! ([`crate::overlap`]), and so is a second recording into a trace being written.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_analysis::ending::program_end;
use clrprof_trace::config::{AgentConfig, AllocMode, CpuClockChoice, HeapSnapshots, Mode};
use clrprof_trace::protocol::TickReader;
use clrprof_trace::{Record, RecordingEnd, StreamDecoder, protocol};

use crate::alloc_ticks::{TickSession, is_definition, tick_records};
use crate::status::StatusLine;
use crate::trace_file::{SEAL_EVERY, TraceFile};

/// Exit code when profiling itself failed (as `env` and container tools use 125).
pub const AGENT_FAILED: i32 = 125;

/// The exit code of the .NET host (`dotnet`, an app host) when it cannot create the runtime
/// (`Failed to create CoreCLR`), on 3.1 and 8 alike.
const HOST_FAILED: i32 = 137;

/// The soft limit on the address space (`ulimit -v`), in KiB, if one is set.
fn address_space_limit_kib() -> Option<u64> {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    let (soft, _) = getrlimit(Resource::RLIMIT_AS).ok()?;
    (soft != RLIM_INFINITY).then_some(soft / 1024)
}

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
    /// (the runtime's allocation ticks: read by the agent through an in-process EventPipe
    /// session where the runtime offers one, else by the CLI over the diagnostics socket; see
    /// `alloc_ticks.rs`).
    pub alloc: Option<&'static str>,
    /// Mean sampling interval of `--alloc sampled`, in bytes (`None`: the agent's default).
    pub alloc_interval: Option<u64>,
    /// Lock contention from the runtime's contention events.
    pub contention: bool,
    /// Heap snapshots: `at-exit`, `every-gc` or N.
    pub heap_snapshot: Option<String>,
    /// The size of each of the agent's two record buffers, in KiB (`None`: the agent's
    /// default).
    pub buffer_kib: Option<u32>,
    /// Trace file.
    pub output: PathBuf,
    /// The agent library.
    pub agent: PathBuf,
    /// Program and arguments.
    pub command: Vec<String>,
    /// The agent's settings that the fields above do not choose (coverage, count mode's
    /// assemblies).
    pub base: AgentConfig,
    /// Print the closing summary line.
    pub summary: bool,
    /// Which processes of the tree to record.
    pub processes: ProcessFilter,
}

/// Which .NET processes of the recorded tree `record` records: each one's agent connects and
/// says which process it is; the others run without the profiler.
#[derive(Debug, Clone, Default)]
pub struct ProcessFilter {
    /// Only the process `record` started (`--no-children`).
    pub no_children: bool,
    /// Only these process ids (`--pid-filter`; with `names`, either matches).
    pub pids: Vec<u32>,
    /// Only the processes whose command line contains one of these (`--name-filter`).
    pub names: Vec<String>,
}

impl ProcessFilter {
    /// Whether to record process `hello`, `root` being the pid of the process `record`
    /// started.
    pub fn records(&self, hello: &protocol::Hello, root: u32) -> bool {
        if self.no_children && hello.pid != root {
            return false;
        }
        if self.pids.is_empty() && self.names.is_empty() {
            return true;
        }
        self.pids.contains(&hello.pid)
            || self
                .names
                .iter()
                .any(|n| hello.command_line.contains(n.as_str()))
    }
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
            contention: false,
            heap_snapshot: None,
            buffer_kib: None,
            output,
            agent,
            command,
            base: AgentConfig::default(),
            summary: true,
            processes: ProcessFilter::default(),
        }
    }

    /// Whether allocations come from the runtime's allocation ticks rather than from
    /// `ObjectAllocated`.
    pub(crate) fn alloc_ticks(&self) -> bool {
        self.alloc == Some("ticks")
    }

    /// What the agent is asked to do: `base` with every choice above.
    pub(crate) fn agent_config(&self) -> AgentConfig {
        let mut c = self.base.clone();
        c.mode = Mode::from_name(self.mode).unwrap_or(c.mode);
        c.rate_hz = self.rate;
        c.inline = self.inline;
        c.max_nodes = self.max_nodes;
        c.wall_rate_hz = self.wall_rate.or(c.wall_rate_hz);
        if let Some(clock) = self.cpu_clock {
            c.cpu_clock = [CpuClockChoice::Perf, CpuClockChoice::Timer]
                .into_iter()
                .find(|k| k.name() == clock);
        }
        // `all` is every cheap category (see `expand_events`); the names were validated.
        for category in expand_events(&self.events)
            .iter()
            .filter_map(|e| clrprof_trace::EventCategory::parse(e))
        {
            if !c.events.contains(&category) {
                c.events.push(category);
            }
        }
        if let Some(alloc) = self.alloc.and_then(AllocMode::from_name) {
            c.alloc = alloc;
        }
        if let Some(bytes) = self.alloc_interval {
            c.alloc_interval = bytes;
        }
        if self.contention {
            c.contention = true;
        }
        if let Some(h) = self.heap_snapshot.as_deref().and_then(HeapSnapshots::parse) {
            c.heap_snapshots = h;
        }
        if let Some(kib) = self.buffer_kib {
            c.buffer_bytes = (kib as usize) << 10;
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
    /// What clrprof itself has to say while recording (a write that failed).
    notices: Mutex<Vec<String>>,
    pub(crate) problem: Mutex<Option<String>>,
    /// What the agent defined (for the allocation tick records).
    pub(crate) agent_ids: Mutex<crate::alloc_ticks::AgentIds>,
    /// Who reads the allocation ticks, once the agent said so.
    tick_reader: Mutex<Option<TickReader>>,
    /// Whether the CLI reads the contention events, once the agent said so.
    contention_cli: Mutex<Option<bool>>,
}

impl Progress {
    /// Events and samples the agent dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.events_dropped.load(Ordering::Relaxed) + self.samples_dropped.load(Ordering::Relaxed)
    }
}

/// Runs the recording; returns the exit code clrprof should exit with.
pub fn record(opts: &RecordOptions) -> Result<i32> {
    Ok(run(opts)?.code)
}

/// How a recording ended.
pub(crate) struct Outcome {
    /// The exit code clrprof should exit with.
    pub(crate) code: i32,
    /// Whether the trace is complete under its final name.
    pub(crate) complete: bool,
}

impl Outcome {
    fn failed(code: i32) -> Outcome {
        Outcome {
            code,
            complete: false,
        }
    }
}

/// Runs the recording.
pub(crate) fn run(opts: &RecordOptions) -> Result<Outcome> {
    validate_events(&opts.events)?;
    let expanded = RecordOptions {
        events: expand_events(&opts.events),
        ..opts.clone()
    };
    let opts = &expanded;
    for warning in costly_choices(opts) {
        say!("clrprof: warning: {warning}");
    }
    if opts.alloc_ticks() && opts.alloc_interval.is_some() {
        bail!(
            "--alloc-interval applies to --alloc sampled; the runtime chooses the ticks of --alloc ticks"
        );
    }
    let inputs = crate::overlap::command_inputs(&opts.command);
    let inputs: Vec<_> = inputs
        .iter()
        .map(|(what, path)| crate::overlap::Named::new(what.clone(), path))
        .collect();
    crate::overlap::refuse(&[crate::overlap::Named::new("-o", &opts.output)], &inputs)?;
    let (program, args) = resolve_program(&opts.command)?;
    let AgentSocket {
        dir: _dir,
        socket,
        listener,
        trace,
    } = AgentSocket::open(&opts.output)?;

    let mut cmd = Command::new(&program);
    cmd.args(&args)
        .env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", protocol::AGENT_CLSID)
        .env("CORECLR_PROFILER_PATH", &opts.agent)
        .env("CORECLR_PROFILER_PATH_64", &opts.agent)
        .env(protocol::ENV_SESSION, &socket)
        .env(protocol::ENV_CONFIG, opts.agent_config().encode())
        .env_remove(protocol::ENV_OUTPUT);

    // Ctrl-C goes to the whole terminal process group: the program decides what to do with
    // it, and clrprof keeps receiving until the program is gone, then finishes the trace. A
    // signal sent to clrprof alone (`kill`, `timeout`, `docker stop`, a service manager) is
    // passed on to the program, with the same outcome.
    let signals = crate::signals::Signals::install()?;
    let reaper = crate::descendants::Reaper::become_one();
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| explain_spawn(&program, e))?;

    let root = child.id();
    let progress = Arc::new(Progress::default());
    let stop = Arc::new(AtomicBool::new(false));
    let abandon = Arc::new(AtomicBool::new(false));
    let tree = Arc::new(Tree {
        trace: Mutex::new(trace),
        processes: Mutex::new(Vec::new()),
        root,
        filter: opts.processes.clone(),
    });
    let acceptor = {
        let (progress, stop, abandon, tree) = (
            Arc::clone(&progress),
            Arc::clone(&stop),
            Arc::clone(&abandon),
            Arc::clone(&tree),
        );
        std::thread::spawn(move || accept_all(&listener, &tree, &progress, &stop, &abandon))
    };
    let ticks = if opts.alloc_ticks() {
        let progress = Arc::clone(&progress);
        let reader = move || {
            *progress
                .tick_reader
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        Some(
            TickSession::start(root, Arc::clone(&stop), reader)
                .context("cannot start the EventPipe reader thread")?,
        )
    } else {
        None
    };
    let contention = if opts.contention {
        let progress = Arc::clone(&progress);
        let cli_reads = move || {
            *progress
                .contention_cli
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        Some(
            crate::contention::start(root, Arc::clone(&stop), cli_reads)
                .context("cannot start the EventPipe reader thread")?,
        )
    } else {
        None
    };
    // Wait for the program on a thread of its own, so that its end is seen at once while the
    // status line keeps ticking.
    let (exited_tx, exited) = std::sync::mpsc::channel();
    let pid = root;
    std::thread::spawn(move || {
        let _ = exited_tx.send(child.wait());
    });
    let bar = status_line();
    let mut status = None;
    let mut passed_on = false;
    // Since when the program has ended and no process of the tree was recording.
    let mut quiet_since: Option<Instant> = None;
    loop {
        while let Some(received) = signals.next() {
            pass_on(pid, received, &mut passed_on, &bar);
        }
        if status.is_none() {
            match exited.recv_timeout(Duration::from_millis(100)) {
                Ok(s) => {
                    status = Some(s.context("waiting for the program")?);
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    bail!("lost track of the program")
                }
            }
        } else {
            // The program is gone; processes it started may still be recording (or about to
            // connect): wait for them, then, while one of them lives, for a moment of quiet.
            std::thread::sleep(Duration::from_millis(50));
            if tree.running() > 0 {
                quiet_since = None;
            } else if !reaper.descendants_alive() {
                break;
            } else {
                let since = *quiet_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= LATE_CHILDREN {
                    break;
                }
            }
        }
        print_messages(&progress, &bar);
        bar.set_message(status_text_tree(&progress, &tree, started.elapsed()));
    }
    let Some(status) = status else {
        bail!("lost track of the program")
    };
    let duration = started.elapsed();
    stop.store(true, Ordering::Release);
    acceptor
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))?;
    bar.finish_and_clear();
    print_messages(&progress, &bar);
    let (exit_code, signal) = exit_of(status);
    let ended = program_end(exit_code, signal);
    let (mut trace, processes) = tree.into_parts()?;
    let root_section = processes
        .iter()
        .find(|p| p.hello.pid == root && !p.left_out)
        .map(|p| p.section);
    if let (Some(ticks), Some(section)) = (ticks, root_section) {
        trace.section(section);
        write_ticks(ticks, &mut trace, &progress);
    }
    if let (Some(contention), Some(section)) = (contention, root_section) {
        // The root process's events, in its section, after its agent's records.
        trace.section(section);
        write_contention(contention, &mut trace, &progress);
    }

    let connected = processes.iter().any(|p| !p.left_out);
    let clean = processes
        .iter()
        .find(|p| p.hello.pid == root && !p.left_out)
        .is_some_and(|p| p.clean);
    let code = if signal != 0 { 128 + signal } else { exit_code };
    let disabled = ["DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics"]
        .into_iter()
        .find(|v| std::env::var(v).is_ok_and(|v| v.trim() == "0"));
    let from_agent = progress.records.load(Ordering::Relaxed);
    if !connected && !processes.is_empty() {
        trace.discard();
        say!(
            "clrprof: error: the process filter left out every .NET process ({}), so nothing was recorded.",
            processes
                .iter()
                .map(|p| format!("pid {} `{}`", p.hello.pid, p.hello.command_line))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Outcome::failed(AGENT_FAILED));
    }
    if !connected && let Some(var) = disabled {
        trace.discard();
        say!(
            "clrprof: error: the agent never started, so nothing was recorded: diagnostics are \
             disabled for the program ({var}=0 in its environment)."
        );
        say!(
            "clrprof:   EnableDiagnostics=0 is set: .NET 8 then loads no profiler \
             (DOTNET_EnableDiagnostics_IPC=0 closes only the diagnostics socket)."
        );
        say!("clrprof:   Unset {var} to record the program (the file at -o was not touched).");
        return Ok(Outcome::failed(AGENT_FAILED));
    }
    // Nothing of the program ran: no event and no sample came (an agent that started may
    // have sent its session's start and its sampler's settings before the runtime gave up).
    let program_ran =
        progress.events.load(Ordering::Relaxed) > 0 || progress.samples.load(Ordering::Relaxed) > 0;
    if (!connected || from_agent == 0 || !program_ran) && !clean && exit_code == HOST_FAILED {
        // The runtime itself could not start (the host prints why, e.g. `Failed to create
        // CoreCLR, HRESULT: 0x8007000E`, out of memory): not the agent's failure.
        trace.discard();
        say!(
            "clrprof: error: the .NET runtime could not start (exit {HOST_FAILED}, the status \
             the .NET host gives when it cannot create the runtime; its message above says \
             why), so nothing was recorded; the file at -o was not touched."
        );
        if let Some(kib) = address_space_limit_kib() {
            say!(
                "clrprof:   the address space is limited (ulimit -v {kib}): .NET reserves much \
                 more address space than it uses when it starts, and cannot start under such \
                 a limit (0x8007000E is out of memory); raise it (`ulimit -v unlimited`), or \
                 limit the memory it uses instead (a cgroup limit such as `docker run --memory`)."
            );
        }
        return Ok(Outcome::failed(code));
    }
    if !connected {
        trace.discard();
        say!("clrprof: error: the agent never started, so nothing was recorded.");
        say!(
            "clrprof:   the runtime did not load {} or the agent refused to start.",
            opts.agent.display()
        );
        say!(
            "clrprof:   Is `{}` a .NET (Core 3.1 or later) program, or does it start one? Other programs ignore the profiler variables.",
            opts.command.join(" ")
        );
        say!(
            "clrprof:   Is the agent built for this platform, and readable? (`file {}`)",
            opts.agent.display()
        );
        return Ok(Outcome::failed(AGENT_FAILED));
    }
    for p in &processes {
        trace.section(p.section);
        let (code, sig) = if p.hello.pid == root {
            (if signal == 0 { exit_code } else { -1 }, signal)
        } else {
            (p.exit_code.unwrap_or(-1), 0)
        };
        let lasted = p.ended.unwrap_or(duration).saturating_sub(p.started);
        trace.write(&Record::RecordingEnd(RecordingEnd {
            duration_ns: if p.hello.pid == root {
                duration.as_nanos() as u64
            } else {
                lasted.as_nanos() as u64
            },
            exit_code: code,
            signal: sig,
            agent_connected: !p.left_out,
            clean: p.clean,
        }));
    }
    warn_problem(&progress);
    let recorded: Vec<&ProcessState> = processes.iter().filter(|p| !p.left_out).collect();
    for p in &recorded {
        if !p.clean {
            say!(
                "clrprof: warning: process {} ({}) ended without shutting the profiler down (crash or kill); the trace holds everything up to its agent's last flush",
                p.hello.pid,
                short_command(&p.hello.command_line)
            );
        }
    }
    if processes.len() > 1 {
        say!(
            "clrprof: recorded {} of {} .NET processes (`clrprof report --processes`):",
            recorded.len(),
            processes.len()
        );
        for p in &processes {
            let how = if p.left_out {
                "left out by the process filter".to_string()
            } else if p.hello.pid == root {
                ended.clone()
            } else {
                match p.exit_code {
                    Some(c) => format!("exit code {c}"),
                    None => "ended without an exit status (crashed or killed)".into(),
                }
            };
            say!(
                "clrprof:   pid {} {}: {how}",
                p.hello.pid,
                short_command(&p.hello.command_line)
            );
        }
    }
    let complete = finish_trace(
        trace,
        &progress,
        opts.summary,
        &format!("; the program ended: {ended}"),
    );
    Ok(Outcome { code, complete })
}

/// After the program ended and no process of the tree is recording, how long `record` waits
/// for a process it started to connect before it ends the recording, while one is alive (with
/// no descendant left, it ends at once: see [`crate::descendants`]).
const LATE_CHILDREN: Duration = Duration::from_millis(1000);

/// A command line cut for one line of output.
fn short_command(cmd: &str) -> String {
    if cmd.chars().count() <= 60 {
        return format!("`{cmd}`");
    }
    format!("`{}…`", cmd.chars().take(59).collect::<String>())
}

/// What `record` knows of one .NET process of the tree.
#[derive(Debug, Clone)]
pub(crate) struct ProcessState {
    /// Its section in the trace.
    pub(crate) section: u32,
    /// What its agent said.
    pub(crate) hello: protocol::Hello,
    /// Left out by the process filter.
    pub(crate) left_out: bool,
    /// Since the recording's start.
    pub(crate) started: Duration,
    /// When its stream ended, since the recording's start.
    pub(crate) ended: Option<Duration>,
    /// The exit status its agent sent.
    pub(crate) exit_code: Option<i32>,
    /// Whether its agent's `SessionEnd` arrived.
    pub(crate) clean: bool,
}

/// The recording of a process tree: the trace every connection writes its section of, and
/// the processes.
pub(crate) struct Tree {
    trace: Mutex<TraceFile>,
    processes: Mutex<Vec<ProcessState>>,
    /// The pid of the process `record` started.
    root: u32,
    filter: ProcessFilter,
}

impl Tree {
    fn lock_trace(&self) -> std::sync::MutexGuard<'_, TraceFile> {
        self.trace.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_processes(&self) -> std::sync::MutexGuard<'_, Vec<ProcessState>> {
        self.processes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Processes being recorded now.
    fn running(&self) -> usize {
        self.lock_processes()
            .iter()
            .filter(|p| !p.left_out && p.ended.is_none())
            .count()
    }

    /// The trace and the processes, once every connection is done (its thread joined).
    fn into_parts(self: Arc<Tree>) -> Result<(TraceFile, Vec<ProcessState>)> {
        let tree = Arc::into_inner(self).context("a connection outlived the recording")?;
        Ok((
            tree.trace.into_inner().unwrap_or_else(|e| e.into_inner()),
            tree.processes
                .into_inner()
                .unwrap_or_else(|e| e.into_inner()),
        ))
    }

    /// Registers a process that said hello; returns its section.
    fn register(&self, hello: protocol::Hello, left_out: bool, started: Duration) -> u32 {
        let mut ps = self.lock_processes();
        let section = ps.len() as u32 + 1;
        ps.push(ProcessState {
            section,
            hello,
            left_out,
            started,
            ended: left_out.then_some(started),
            exit_code: None,
            clean: false,
        });
        section
    }

    fn update(&self, section: u32, f: impl FnOnce(&mut ProcessState)) {
        if let Some(p) = self
            .lock_processes()
            .iter_mut()
            .find(|p| p.section == section)
        {
            f(p);
        }
    }
}

/// Accepts the agents of the tree's processes until `stop`, each on a thread of its own, and
/// waits for those threads.
fn accept_all(
    listener: &UnixListener,
    tree: &Arc<Tree>,
    progress: &Arc<Progress>,
    stop: &AtomicBool,
    abandon: &Arc<AtomicBool>,
) {
    let started = Instant::now();
    let mut connections = Vec::new();
    loop {
        let stream = match accept_agent(listener, || !stop.load(Ordering::Acquire)) {
            Ok(Some(stream)) => stream,
            Ok(None) => break,
            Err(e) => {
                set_problem(
                    progress,
                    format!("accepting an agent's connection failed: {e}"),
                );
                break;
            }
        };
        let (tree, progress, abandon) =
            (Arc::clone(tree), Arc::clone(progress), Arc::clone(abandon));
        connections.push(std::thread::spawn(move || {
            receive_process(stream, &tree, &progress, &abandon, started);
        }));
    }
    for c in connections {
        let _ = c.join();
    }
}

/// One process's connection: its hello, the verdict, then its stream into its section.
fn receive_process(
    stream: UnixStream,
    tree: &Tree,
    progress: &Progress,
    abandon: &AtomicBool,
    started: Instant,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let hello = match protocol::Hello::read(&mut &stream) {
        Ok(h) => h,
        Err(e) => {
            set_problem(
                progress,
                format!("a process's agent could not be recorded: {e}"),
            );
            return;
        }
    };
    let record = tree.filter.records(&hello, tree.root);
    let verdict = if record {
        protocol::Verdict::Record
    } else {
        protocol::Verdict::LeaveOut
    };
    let def = clrprof_trace::ProcessDef {
        process: 0,
        pid: hello.pid,
        parent_pid: hello.parent_pid,
        start_unix_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        command_line: hello.command_line.clone(),
        left_out: u8::from(!record),
    };
    let is_root = hello.pid == tree.root;
    let section = tree.register(hello, !record, started.elapsed());
    {
        let mut trace = tree.lock_trace();
        trace.start_sectioned(clrprof_trace::FORMAT_MINOR);
        trace.section(section);
        trace.write(&Record::ProcessDef(clrprof_trace::ProcessDef {
            process: section,
            ..def
        }));
    }
    if (&stream).write_all(&[verdict.to_byte()]).is_err() || !record {
        tree.update(section, |p| p.ended = Some(started.elapsed()));
        return;
    }
    progress.connected.store(true, Ordering::Release);
    let mut state = StreamState::default();
    copy_section(
        stream, tree, section, is_root, progress, abandon, &mut state,
    );
    tree.update(section, |p| {
        p.ended = Some(started.elapsed());
        p.exit_code = state.exit_code;
        p.clean = state.clean;
    });
    if is_root {
        progress.clean.store(state.clean, Ordering::Release);
    }
}

/// What one process's stream said about its end.
#[derive(Default)]
struct StreamState {
    clean: bool,
    exit_code: Option<i32>,
}

/// Copies one process's stream into its section of the trace until it ends (or `abandon`
/// is set). Like [`copy_stream`], a failed write does not stop the copy.
fn copy_section(
    stream: UnixStream,
    tree: &Tree,
    section: u32,
    is_root: bool,
    progress: &Progress,
    abandon: &AtomicBool,
    state: &mut StreamState,
) {
    let _ = stream.set_read_timeout(Some(SEAL_EVERY));
    let who = format!("the agent of process {section}");
    pump(
        stream,
        progress,
        abandon,
        &who,
        || {
            let mut trace = tree.lock_trace();
            trace.tick();
            trace.news()
        },
        |decoder| {
            // The trace is locked only while this piece of the stream is copied: another
            // process's connection waits at most that long, never for this process.
            let mut trace = tree.lock_trace();
            trace.section(section);
            while let Some(next) = decoder.next_record() {
                let raw = next.map_err(|e| format!("{e}; its section stops there"))?;
                trace.append(raw.bytes, &raw.record);
                match &raw.record {
                    Record::SessionEnd(_) => state.clean = true,
                    Record::ProcessExit(e) => state.exit_code = Some(e.exit_code),
                    _ => {}
                }
                note_from(progress, &raw.record, is_root);
            }
            trace.tick();
            Ok(trace.news())
        },
    );
}

/// Reads an agent's stream (`who` names it in messages) until it ends or `abandon` is set:
/// `idle` runs whenever nothing came for [`SEAL_EVERY`], `take` on every piece that came (it
/// reads the records the decoder then holds, and says why it stops if one cannot be read).
/// Both return what the trace file has to say. A failed write does not stop the reading: the
/// stream is read to its end, so that the program never waits on a full socket.
fn pump(
    mut stream: UnixStream,
    progress: &Progress,
    abandon: &AtomicBool,
    who: &str,
    mut idle: impl FnMut() -> Option<String>,
    mut take: impl FnMut(&mut StreamDecoder) -> Result<Option<String>, String>,
) {
    let mut decoder = StreamDecoder::new();
    let mut buf = vec![0u8; 256 << 10];
    let notice = |text: Option<String>| {
        if let Some(text) = text {
            progress
                .notices
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(text);
        }
    };
    loop {
        if abandon.load(Ordering::Acquire) {
            break;
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                notice(idle());
                continue;
            }
            Err(e) => {
                set_problem(progress, format!("reading from {who} failed: {e}"));
                break;
            }
        };
        progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
        decoder.push(&buf[..n]);
        match take(&mut decoder) {
            Ok(news) => notice(news),
            Err(why) => {
                set_problem(
                    progress,
                    format!("{who} sent data clrprof cannot read ({why})"),
                );
                return;
            }
        }
    }
    if decoder.finish().is_err() {
        set_problem(
            progress,
            format!(
                "{who}'s stream ended in the middle of a record (its process probably crashed); the partial record was left out"
            ),
        );
    }
}

/// Gives a complete trace its name, or says what a trace whose writing failed kept and lost.
/// Returns whether the trace is complete under its final name.
pub(crate) fn finish_trace(
    mut trace: TraceFile,
    progress: &Progress,
    summary: bool,
    tail: &str,
) -> bool {
    // Seal now, so that a failure to write the last block is told like the others.
    trace.seal();
    if let Some(text) = trace.news() {
        say!("clrprof: error: {text}");
    }
    if trace.failure().is_some() {
        let lost = trace.lost();
        let path = trace.partial_path().to_path_buf();
        let shown = trace.path().to_path_buf();
        let kept = trace.keep_partial();
        debug_assert_eq!(kept, path);
        let mut missing = format!(
            "{} records ({} samples, {} events)",
            lost.records, lost.samples, lost.events
        );
        if let Some(first) = lost.first_ts {
            missing.push_str(&format!(
                " from {:.2} s to {:.2} s",
                first as f64 / 1e9,
                lost.last_ts as f64 / 1e9
            ));
        }
        say!("clrprof:   missing: {missing}, and the end of the recording (how the program ended)");
        say!(
            "clrprof:   kept: everything before that, in {} (`clrprof report {}`); {} was not replaced",
            path.display(),
            path.display(),
            shown.display()
        );
        return false;
    }
    let partial = trace.partial_path().to_path_buf();
    match trace.commit() {
        Ok(path) => {
            if summary {
                print_wrote(&path, progress, tail);
            }
            true
        }
        Err(e) => {
            say!("clrprof: error: {e:#}");
            say!(
                "clrprof:   what was written is in {} (`clrprof report {}`)",
                partial.display(),
                partial.display()
            );
            false
        }
    }
}

/// The private directory, the socket the agent connects to, and the trace file.
pub(crate) struct AgentSocket {
    /// Removed (with the socket) when dropped.
    pub(crate) dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    /// Non-blocking: see [`accept_agent`].
    pub(crate) listener: UnixListener,
    pub(crate) trace: TraceFile,
}

impl AgentSocket {
    /// Creates the private directory, listens on its socket and creates the trace file (under
    /// its partial name).
    pub(crate) fn open(output: &Path) -> Result<Self> {
        let dir = crate::private_dir::create("clrprof-")?;
        let socket = dir.path().join("agent.sock");
        let listener = UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        listener.set_nonblocking(true)?;
        let trace = TraceFile::create(output)?;
        Ok(Self {
            dir,
            socket,
            listener,
            trace,
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
        say!("clrprof: warning: {problem}");
    }
}

/// The closing line: the trace file and its counts, then `tail` (how the recording ended).
pub(crate) fn print_wrote(output: &Path, progress: &Progress, tail: &str) {
    say!(
        "clrprof: wrote {} ({} records: {} events, {} samples, {} dropped){tail}",
        output.display(),
        progress.records.load(Ordering::Relaxed),
        progress.events.load(Ordering::Relaxed),
        progress.samples.load(Ordering::Relaxed),
        progress.dropped(),
    );
}

/// Appends the allocation samples of the program's EventPipe session to the trace.
fn write_ticks(ticks: TickSession, trace: &mut TraceFile, progress: &Progress) {
    let bytes = match ticks.finish() {
        // The agent read the ticks itself; they are among its records.
        Ok(None) => return,
        Ok(Some(bytes)) => bytes,
        // Without the agent there is no trace: that error is said instead.
        Err(_) if !trace.started() => return,
        Err(e) => {
            say!("clrprof: warning: no allocation samples: {e}");
            return;
        }
    };
    if !trace.started() {
        return;
    }
    let mut ids = progress.agent_ids.lock().unwrap_or_else(|e| e.into_inner());
    let (records, summary) = tick_records(&bytes, &ids);
    for r in &records {
        trace.write(r);
        // The contention records that follow number their stacks after these.
        ids.observe(r);
    }
    if let Some(why) = summary.incomplete {
        say!(
            "clrprof: warning: the runtime's event stream was cut short ({why}); the allocation samples before that point were kept"
        );
    }
    if summary.ticks == 0 {
        say!("clrprof: warning: the runtime sent no allocation ticks");
    }
}

/// Appends the contended lock acquisitions of the program's EventPipe session to the trace.
fn write_contention(session: TickSession, trace: &mut TraceFile, progress: &Progress) {
    let bytes = match session.finish() {
        // The agent read the events itself; its records are in the trace.
        Ok(None) => return,
        Ok(Some(bytes)) => bytes,
        Err(_) if !trace.started() => return,
        Err(e) => {
            say!("clrprof: warning: no lock contention: {e}");
            return;
        }
    };
    if !trace.started() {
        return;
    }
    let mut ids = progress.agent_ids.lock().unwrap_or_else(|e| e.into_inner());
    let (records, summary) = crate::contention::contention_records(&bytes, &ids);
    for r in &records {
        trace.write(r);
        ids.observe(r);
    }
    if let Some(why) = summary.incomplete {
        say!(
            "clrprof: warning: the runtime's contention event stream was cut short ({why}); the contended acquisitions before that point were kept"
        );
    }
}

/// The categories `--events all` means: every category that is cheap. Heap references (every
/// reference of every object at each collection) are recorded only when asked for by name.
pub(crate) fn all_cheap_categories() -> impl Iterator<Item = clrprof_trace::EventCategory> {
    clrprof_trace::EventCategory::all()
        .iter()
        .copied()
        .filter(|c| *c != clrprof_trace::EventCategory::HeapRefs)
}

/// Replaces `all` by the categories it means ([`all_cheap_categories`]), keeping any other
/// category named (`all,heap-refs`), each once, in the order of the format.
pub(crate) fn expand_events(events: &[String]) -> Vec<String> {
    if !events.iter().any(|e| e == "all") {
        return events.to_vec();
    }
    clrprof_trace::EventCategory::all()
        .iter()
        .filter(|c| {
            all_cheap_categories().any(|cheap| cheap == **c) || events.iter().any(|e| e == c.name())
        })
        .map(|c| c.name().to_string())
        .collect()
}

/// Warnings for choices that make a very large trace or a much slower program, said before
/// the program starts.
pub(crate) fn costly_choices(opts: &RecordOptions) -> Vec<String> {
    let mut out = Vec::new();
    if opts.events.iter().any(|e| e == "heap-refs") {
        out.push(
            "`heap-refs` events record every reference of every object at each garbage \
             collection: expect a very large trace (hundreds of MB for a small program) and a \
             much slower program; `--heap-snapshot at-exit` gives the object graph once"
                .to_string(),
        );
    }
    if opts.alloc == Some("all") {
        out.push(
            "`--alloc all` records every allocation with its stack: allocation-heavy code runs \
             15 to 80 times slower (see BENCHMARKS.md) and the trace grows with every object; \
             `--alloc` (ticks, the default) or `--alloc sampled` estimate at a fraction of that"
                .to_string(),
        );
    }
    if opts.heap_snapshot.as_deref() == Some("every-gc") {
        out.push(
            "`--heap-snapshot every-gc` walks and writes the whole heap at every collection, \
             gen0 ones included: expect a very large trace and long pauses; a number N takes \
             every N-th collection, `on-signal` costs nothing until a snapshot is asked for"
                .to_string(),
        );
    }
    out
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

/// Copies the agent's stream into the trace until it ends (or `abandon` is set), sealing a
/// block at least every [`SEAL_EVERY`]. A failed write does not stop the copy: the agent's
/// stream is read to its end, so that the program never waits on a full socket.
pub(crate) fn copy_stream(
    stream: UnixStream,
    trace: TraceFile,
    progress: &Progress,
    abandon: &AtomicBool,
) -> Result<TraceFile> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(SEAL_EVERY))?;
    let trace = std::cell::RefCell::new(trace);
    pump(
        stream,
        progress,
        abandon,
        "the agent",
        || {
            let mut trace = trace.borrow_mut();
            trace.tick();
            trace.news()
        },
        |decoder| {
            let mut trace = trace.borrow_mut();
            while let Some(next) = decoder.next_record() {
                let raw = next.map_err(|e| format!("{e}; the trace stops there"))?;
                trace.start(raw.header);
                trace.append(raw.bytes, &raw.record);
                note(progress, &raw.record);
            }
            trace.tick();
            Ok(trace.news())
        },
    );
    let mut trace = trace.into_inner();
    trace.seal();
    if let Some(text) = trace.news() {
        progress
            .notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }
    Ok(trace)
}

fn set_problem(progress: &Progress, text: String) {
    progress
        .problem
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(text);
}

fn note(progress: &Progress, record: &Record) {
    note_from(progress, record, true);
}

/// Counts a record of a process's stream; `is_root`: of the process `record` started (whose
/// definitions the allocation ticks read over its diagnostics socket refer to).
fn note_from(progress: &Progress, record: &Record, is_root: bool) {
    progress.records.fetch_add(1, Ordering::Relaxed);
    if is_root && is_definition(record) {
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
        Record::Counter(c) if c.name == protocol::CONTENTION_READER_COUNTER && is_root => {
            *progress
                .contention_cli
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(c.value == 0);
        }
        Record::Counter(c) if c.name == TickReader::COUNTER && is_root => {
            *progress
                .tick_reader
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = TickReader::from_counter(c);
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

/// The live status line (on a terminal only, on a row of its own; see [`crate::status`]).
pub(crate) fn status_line() -> StatusLine {
    StatusLine::new()
}

/// The status line of a process tree's recording: how many processes are recorded, then the
/// counts.
fn status_text_tree(p: &Progress, tree: &Tree, elapsed: Duration) -> String {
    let text = status_text(p, elapsed);
    let ps = tree.lock_processes();
    let recorded = ps.iter().filter(|p| !p.left_out).count();
    if recorded == 0 {
        return text;
    }
    let running = ps
        .iter()
        .filter(|p| !p.left_out && p.ended.is_none())
        .count();
    let noun = if recorded == 1 {
        "process"
    } else {
        "processes"
    };
    format!("{recorded} {noun} ({running} running) · {text}")
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

pub(crate) fn print_messages(p: &Progress, bar: &StatusLine) {
    let notices = std::mem::take(&mut *p.notices.lock().unwrap_or_else(|e| e.into_inner()));
    for text in notices {
        bar.suspend(|| say!("clrprof: error: {text}"));
    }
    let messages = std::mem::take(&mut *p.messages.lock().unwrap_or_else(|e| e.into_inner()));
    for (level, text) in messages {
        let kind = match level {
            0 => "note",
            1 => "warning",
            _ => "error",
        };
        bar.suspend(|| say!("clrprof: agent {kind}: {text}"));
    }
}

fn exit_of(status: ExitStatus) -> (i32, i32) {
    use std::os::unix::process::ExitStatusExt;
    (status.code().unwrap_or(-1), status.signal().unwrap_or(0))
}

/// Passes a signal clrprof received on to the program (pid `pid`), unless it came from the
/// terminal, which sent it to the program too. Says so the first time.
fn pass_on(pid: u32, received: crate::signals::Received, said: &mut bool, bar: &StatusLine) {
    let name = crate::signals::name(received.signal);
    if received.from_terminal {
        return;
    }
    let sent = crate::signals::send(pid, received.signal);
    // The program ended meanwhile: there is no one to pass it on to, and nothing to say.
    if sent
        .as_ref()
        .is_err_and(|e| e.raw_os_error() == Some(libc::ESRCH))
    {
        return;
    }
    if !*said || sent.is_err() {
        bar.suspend(|| match &sent {
            Ok(()) => say!(
                "clrprof: {name} received: passed on to the program (pid {pid}); the trace is \
                 finished when the program ends"
            ),
            Err(e) => say!("clrprof: {name} received; passing it on to pid {pid} failed: {e}"),
        });
        *said = true;
    }
}

/// Why the program could not be started, with what to do about it.
fn explain_spawn(program: &Path, e: std::io::Error) -> anyhow::Error {
    let shown = program.display();
    if program.is_dir() {
        return anyhow::anyhow!(
            "cannot start {shown}: it is a directory, not a program; give the program's \
             file (for a .NET app, its .dll: `clrprof record -- {}/APP.dll`)",
            shown
        );
    }
    if e.raw_os_error() == Some(libc::ENOEXEC) {
        let dll = program.with_extension("dll");
        let is_exe = program
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("exe"));
        if is_exe && dll.is_file() {
            return anyhow::anyhow!(
                "cannot start {shown}: it is a Windows executable (Exec format error); run the \
                 .NET app beside it with dotnet: `clrprof record -- {}`",
                dll.display()
            );
        }
        if is_exe {
            return anyhow::anyhow!(
                "cannot start {shown}: it is a Windows executable (Exec format error); if it is \
                 a .NET app, run its .dll with dotnet: `clrprof record -- APP.dll`"
            );
        }
        return anyhow::anyhow!(
            "cannot start {shown}: Linux cannot run this file (Exec format error); if it is a \
             .NET app, run its .dll with dotnet: `clrprof record -- APP.dll`"
        );
    }
    anyhow::Error::new(e).context(format!("cannot start {shown}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_process_filter_picks_by_root_pid_and_command_line() {
        let hello = |pid, cmd: &str| protocol::Hello {
            pid,
            parent_pid: 1,
            command_line: cmd.into(),
        };
        let all = ProcessFilter::default();
        assert!(all.records(&hello(7, "dotnet a.dll"), 5));
        let root_only = ProcessFilter {
            no_children: true,
            ..ProcessFilter::default()
        };
        assert!(root_only.records(&hello(5, "dotnet a.dll"), 5));
        assert!(!root_only.records(&hello(7, "dotnet a.dll"), 5));
        let some = ProcessFilter {
            no_children: false,
            pids: vec![9],
            names: vec!["testhost".into()],
        };
        assert!(some.records(&hello(9, "dotnet sdk.dll"), 5));
        assert!(some.records(&hello(8, "dotnet testhost.dll --port 1"), 5));
        assert!(!some.records(&hello(5, "dotnet sdk.dll"), 5));
    }

    #[test]
    fn all_is_every_cheap_category_and_heap_refs_only_by_name() {
        let all = expand_events(&names(&["all"]));
        assert_eq!(all.len(), clrprof_trace::EventCategory::all().len() - 1);
        assert!(!all.iter().any(|e| e == "heap-refs"));
        assert!(all.iter().any(|e| e == "transition"));
        let with = expand_events(&names(&["heap-refs", "all"]));
        assert_eq!(with.len(), clrprof_trace::EventCategory::all().len());
        assert_eq!(expand_events(&names(&["gc"])), names(&["gc"]));
        let opts = RecordOptions {
            events: with,
            ..RecordOptions::new("none", "t".into(), "a".into(), Vec::new())
        };
        assert_eq!(costly_choices(&opts).len(), 1);
        assert!(costly_choices(&opts)[0].starts_with("`heap-refs` events"));
    }
}
