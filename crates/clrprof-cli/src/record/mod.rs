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
//!
//! This file is the recording's flow; what to record is in [`options`], the live counts,
//! messages and status line in [`progress`], and the agents' connections and their streams
//! into the trace in [`connections`].

mod connections;
pub(crate) mod export;
mod native_names;
mod options;
mod perf_map;
mod progress;

pub(crate) use connections::{AgentSocket, accept_agent, copy_stream};
pub use options::{EventChoice, ProcessFilter, RecordOptions};
pub(crate) use options::{costly_choices, is_cheap};
pub(crate) use progress::{Progress, print_messages, status_line, status_text, warn_problem};

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_analysis::ending::program_end;
use clrprof_trace::{Record, RecordingEnd, protocol};

use self::connections::{ProcessState, Tree, accept_all};
use self::progress::print_wrote;
use crate::alloc_ticks::tick_records;
use crate::event_session::EventSession;
use crate::status::StatusLine;
use crate::trace_file::TraceFile;

/// Where `record` writes the trace unless told.
pub const DEFAULT_OUTPUT: &str = "trace.clrprof";

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
        dir,
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
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .env_remove(protocol::ENV_OUTPUT);
    let perf_maps = perf_map::PerfMaps::ask(&mut cmd, dir.path());

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
        event_session_kinds: u32::from(opts.alloc_ticks()) + u32::from(opts.contention),
    });
    // Written to once `stop` is set: the acceptor sleeps until a connection or this comes.
    let (wake_acceptor, acceptor_woken) =
        UnixStream::pair().context("cannot create the acceptor's wake-up socket")?;
    let acceptor = {
        let (progress, stop, abandon, tree) = (
            Arc::clone(&progress),
            Arc::clone(&stop),
            Arc::clone(&abandon),
            Arc::clone(&tree),
        );
        std::thread::spawn(move || {
            accept_all(
                &listener,
                &tree,
                &progress,
                &stop,
                &acceptor_woken,
                &abandon,
            )
        })
    };
    let (ticks, contention) = start_event_sessions(opts, root, &progress, &stop)?;
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
            // Looked at often (a few reads of /proc), so that a recording ends when its last
            // stream does, not up to a poll later.
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
            std::thread::sleep(Duration::from_millis(5));
        }
        print_messages(&progress, &bar);
        bar.set_message(status_text_tree(&progress, &tree, started.elapsed()));
    }
    let Some(status) = status else {
        bail!("lost track of the program")
    };
    let duration = started.elapsed();
    stop.store(true, Ordering::Release);
    // If this write fails the acceptor still sees `stop` at its next look, half a second on.
    let _ = (&wake_acceptor).write_all(&[1]);
    acceptor
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))?;
    bar.finish_and_clear();
    print_messages(&progress, &bar);
    let (exit_code, signal) = exit_of(status);
    let ended = program_end(exit_code, signal);
    let (mut trace, processes) = tree.into_parts()?;
    perf_maps.remove(processes.iter().map(|p| p.hello.pid));
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
    if !connected && (signal != 0 || exit_code != 0) {
        // The program failed before a runtime loaded the agent (`dotnet Nope.dll`, a file
        // that is no assembly): its own message says why, and its status is the answer.
        trace.discard();
        let how = clrprof_analysis::ending::program_end(exit_code, signal);
        say!(
            "clrprof: error: nothing was recorded: `{}` ended ({how}) before a .NET runtime \
             loaded the agent (its own message above says why); the file at -o was not touched.",
            opts.command.join(" ")
        );
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

/// The events the CLI's EventPipe session read, to append to the trace: `None` when the agent
/// read them itself (they are among its records), or when there is no trace (without the
/// agent: that error is said instead), or the session failed (`lost` says what is missing).
fn session_events(session: EventSession, trace: &TraceFile, lost: &str) -> Option<Vec<u8>> {
    match session.finish() {
        Ok(bytes) => bytes.filter(|_| trace.started()),
        Err(_) if !trace.started() => None,
        Err(e) => {
            say!("clrprof: warning: {lost}: {e}");
            None
        }
    }
}

/// Starts the sessions that read the runtime's allocation ticks and contention events of
/// process `pid` over its diagnostics socket, where the agent cannot (CoreCLR 3.1): a thread
/// for each kind `opts` asks for, which learns from the agent's first records (through
/// `progress`) who reads those events, and tells a launched agent once its session runs (the
/// agent holds the program's start until then). `stop` tells them to stop waiting.
pub(crate) fn start_event_sessions(
    opts: &RecordOptions,
    pid: u32,
    progress: &Arc<Progress>,
    stop: &Arc<AtomicBool>,
) -> Result<(Option<EventSession>, Option<EventSession>)> {
    let tell_agent = |progress: &Arc<Progress>| {
        let progress = Arc::clone(progress);
        move |news| progress.tell_root_agent(news)
    };
    let ticks = if opts.alloc_ticks() {
        let tell_agent = tell_agent(progress);
        let progress = Arc::clone(progress);
        let reader = move || progress.tick_reader();
        Some(
            crate::alloc_ticks::start(pid, Arc::clone(stop), reader, tell_agent)
                .context("cannot start the EventPipe reader thread")?,
        )
    } else {
        None
    };
    let contention = if opts.contention {
        let tell_agent = tell_agent(progress);
        let progress = Arc::clone(progress);
        let cli_reads = move || progress.contention_cli();
        Some(
            crate::contention::start(pid, Arc::clone(stop), cli_reads, tell_agent)
                .context("cannot start the EventPipe reader thread")?,
        )
    } else {
        None
    };
    Ok((ticks, contention))
}

/// Appends the allocation samples of the program's EventPipe session to the trace.
pub(crate) fn write_ticks(ticks: EventSession, trace: &mut TraceFile, progress: &Progress) {
    let Some(bytes) = session_events(ticks, trace, "no allocation samples") else {
        return;
    };
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
pub(crate) fn write_contention(session: EventSession, trace: &mut TraceFile, progress: &Progress) {
    let Some(bytes) = session_events(session, trace, "no lock contention") else {
        return;
    };
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

/// The program to start: a `.dll` runs under the `dotnet` host.
pub(crate) fn resolve_program(command: &[String]) -> Result<(PathBuf, Vec<String>)> {
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

/// A command line cut for one line of output.
fn short_command(cmd: &str) -> String {
    if cmd.chars().count() <= 60 {
        return format!("`{cmd}`");
    }
    format!("`{}…`", cmd.chars().take(59).collect::<String>())
}

/// The exit code clrprof returns for the program's `status`: its own, or 128 + the signal
/// that ended it, as a shell says.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    match exit_of(status) {
        (_, signal) if signal != 0 => 128 + signal,
        (code, _) => code,
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
pub(crate) fn explain_spawn(program: &Path, e: std::io::Error) -> anyhow::Error {
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
