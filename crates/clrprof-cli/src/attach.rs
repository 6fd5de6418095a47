//! `clrprof attach PID`: load the agent into a running .NET program, record for a while, then
//! detach it so that the program goes on as if nothing happened.
//!
//! 1. The CLI listens on a Unix socket in a private temporary directory and sends the runtime
//!    the diagnostics IPC command `AttachProfiler` (`clrprof-ipc`), with the socket and the
//!    agent's configuration as client data (`clrprof_trace::protocol::attach_client_data`).
//! 2. The runtime loads the agent and calls `InitializeForAttach`; the agent connects and
//!    streams records as in `record`, which the CLI checks and appends to the trace file.
//! 3. At the end of `--duration`, on Ctrl-C, or when the program ends, the CLI shuts down its
//!    writing half of the connection: that is the agent's signal to stop collecting and ask
//!    the runtime for a detach. The agent closes the connection when the runtime confirmed
//!    it (`ProfilerDetachSucceeded`), the runtime's last call into it before it releases it.
//!
//! What the runtime refuses to a profiler that attached (enter/leave hooks, so trace mode;
//! code transitions; every allocation) is refused here first, with the reason.

use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clrprof_ipc::{Error as IpcError, client, discovery, message};
use clrprof_trace::config::{AllocMode, Mode};
use clrprof_trace::{EventCategory, protocol};

pub(crate) mod export;

use crate::event_session::EventSession;
use crate::record::{self, AgentSocket, EventChoice, Progress, RecordOptions};

/// How long the runtime may take to load and initialize the agent.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the detach may take, from the request to the agent's last record.
const DETACH_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to retry an attach that finds a profiler still loaded (a previous detach may be
/// finishing).
const BUSY_RETRY: Duration = Duration::from_secs(3);

/// What to attach to and what to record.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// The process.
    pub pid: u32,
    /// How long to record; until Ctrl-C if none.
    pub duration: Option<Duration>,
    /// What to collect and where to write it (its `command` is unused).
    pub record: RecordOptions,
}

/// Whether `all` means `category` for an attached agent: the cheap categories it can record.
fn attachable(category: EventCategory) -> bool {
    record::is_cheap(category) && category != EventCategory::Transition
}

/// Refuses what the runtime does not allow after attach, naming the reason; expands `all`.
fn check_attachable(opts: &mut RecordOptions) -> Result<()> {
    const REASON: &str = "the runtime refuses it to a profiler that attaches to a running \
                          process (CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER); record the \
                          program from its start with `clrprof record` instead";
    match opts.mode {
        Mode::Sample | Mode::None => {}
        Mode::Trace => bail!(
            "--mode trace cannot be used with attach: it needs enter/leave hooks, and {REASON}"
        ),
        Mode::Count => bail!(
            "--mode count cannot be used with attach: it adds counters to methods as they are \
             compiled, and the methods compiled before the attach would not count; record the \
             program from its start with `clrprof record --mode count` instead"
        ),
    }
    match opts.alloc {
        None | Some(AllocMode::Off) | Some(AllocMode::Ticks) => {}
        Some(method @ (AllocMode::Sampled | AllocMode::All)) => bail!(
            "--alloc {method} cannot be used with attach: it needs the runtime's allocation \
             callback, and {REASON}; `--alloc` alone (the runtime's allocation ticks) works \
             after attach"
        ),
    }
    if opts.events.named.contains(&EventCategory::Transition) {
        bail!(
            "`transition` events cannot be recorded with attach: they need code transition \
             callbacks, and {REASON}"
        );
    }
    opts.events = EventChoice {
        named: opts.events.categories(attachable),
        all: false,
    };
    for warning in record::costly_choices(opts) {
        say!("clrprof: warning: {warning}");
    }
    Ok(())
}

/// Attaches, records, detaches. Returns clrprof's exit code.
pub fn attach(opts: &AttachOptions) -> Result<i32> {
    let mut rec = opts.record.clone();
    check_attachable(&mut rec)?;
    let pid = opts.pid;
    // Ctrl-C, SIGTERM and SIGHUP detach cleanly from here on, whenever they come.
    let signals = crate::signals::Signals::install()?;
    // Clear errors before anything else: no such process, not .NET, not ours, diagnostics
    // disabled, a profiler already loaded.
    if let Some(why) = crate::ps::cannot_attach(pid) {
        bail!("cannot attach to process {pid}: {why}");
    }
    discovery::socket_path(pid).map_err(explain)?;
    let files = process_files(pid);
    let inputs: Vec<_> = files
        .iter()
        .map(|(what, path)| crate::overlap::Named::new(what.clone(), path))
        .collect();
    crate::overlap::refuse(&[crate::overlap::Named::new("-o", &rec.output)], &inputs)?;

    let AgentSocket {
        dir: _dir,
        socket,
        listener,
        trace,
    } = AgentSocket::open(&rec.output)?;

    let socket_text = socket
        .to_str()
        .context("the temporary directory's path is not UTF-8")?;
    let agent_text = rec
        .agent
        .to_str()
        .context("the agent's path is not UTF-8")?;
    let client_data = protocol::attach_client_data(socket_text, &rec.agent_config().encode());
    if let Err(e) = load_agent(pid, agent_text, &client_data) {
        trace.discard();
        return Err(explain(e)).context(format!("cannot attach to process {pid}"));
    }

    // The runtime replied once InitializeForAttach returned: the agent has connected.
    let stream = match accept(&listener, ATTACH_TIMEOUT) {
        Some(stream) => stream,
        None => {
            trace.discard();
            bail!(
                "the runtime loaded the agent into process {pid} but it never connected back \
                 (is the process in another container? it must reach {})",
                socket.display()
            );
        }
    };
    drop(listener);
    let _ = std::fs::remove_file(&socket);

    let progress = Arc::new(Progress::default());
    progress.connected.store(true, Ordering::Release);
    let abandon = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (progress, abandon, reading) = (
            Arc::clone(&progress),
            Arc::clone(&abandon),
            stream.try_clone()?,
        );
        std::thread::spawn(move || record::copy_stream(reading, pid, trace, &progress, &abandon))
    };
    // The runtime's events the agent leaves to clrprof (CoreCLR 3.1): their sessions start
    // before the recording is said to.
    let given_up = Arc::new(AtomicBool::new(false));
    let sessions = RuntimeEvents::start(&rec, pid, &progress, &given_up)?;
    sessions.wait_until_reading();
    say!(
        "clrprof: attached to process {pid}; recording {}",
        match opts.duration {
            Some(d) => format!("for {:.1} s", d.as_secs_f64()),
            None => "until Ctrl-C".into(),
        }
    );
    let started = Instant::now();
    let bar = record::status_line();
    let ended_by_program = loop {
        if receiver.is_finished() {
            break true;
        }
        if let Some(received) = signals.next() {
            bar.suspend(|| {
                say!(
                    "clrprof: {} received: detaching from process {pid}",
                    crate::signals::name(received.signal)
                )
            });
            break false;
        }
        if opts.duration.is_some_and(|d| started.elapsed() >= d) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
        record::print_messages(&progress, &bar);
        bar.set_message(record::status_text(&progress, started.elapsed()));
    };
    let recorded = started.elapsed();

    // Ask the agent to detach, then wait for it to close the stream; end clrprof's own
    // sessions at the same moment.
    let _ = stream.shutdown(Shutdown::Write);
    sessions.stop();
    given_up.store(true, Ordering::Release);
    bar.set_message("detaching");
    let deadline = Instant::now() + DETACH_TIMEOUT;
    while !receiver.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !receiver.is_finished() {
        // Unblock the receiver: the trace keeps what arrived.
        let _ = stream.shutdown(Shutdown::Both);
    }
    let mut trace = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))??;
    sessions.write(&mut trace, &progress);
    bar.finish_and_clear();
    record::print_messages(&progress, &bar);
    record::warn_problem(&progress);

    let alive = discovery::is_alive(pid);
    let clean = progress.clean.load(Ordering::Acquire);
    record::finish_trace(
        trace,
        &progress,
        true,
        &format!(" over {:.1} s", recorded.as_secs_f64()),
    );
    if ended_by_program || !alive {
        say!("clrprof: process {pid} ended while attached");
        return Ok(0);
    }
    if !clean {
        bail!(
            "the agent did not confirm the detach within {} s; it may still be loaded in process {pid}",
            DETACH_TIMEOUT.as_secs()
        );
    }
    say!("clrprof: detached from process {pid}; it goes on without the agent");
    Ok(0)
}

/// How long the runtime may take to end a stopped session's stream (its method rundown).
const RUNDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The sessions that read the runtime's allocation ticks and contention events over the
/// diagnostics socket where the agent cannot (CoreCLR 3.1), as `record` does, for the
/// attach's window.
struct RuntimeEvents {
    ticks: Option<EventSession>,
    contention: Option<EventSession>,
}

impl RuntimeEvents {
    /// Starts a thread for each kind asked for, which learns from the agent's first records
    /// (through `progress`) who reads those events. `given_up` tells them to stop waiting.
    fn start(
        rec: &RecordOptions,
        pid: u32,
        progress: &Arc<Progress>,
        given_up: &Arc<AtomicBool>,
    ) -> Result<RuntimeEvents> {
        let (ticks, contention) = record::start_event_sessions(rec, pid, progress, given_up)?;
        Ok(RuntimeEvents { ticks, contention })
    }

    fn each(&self) -> impl Iterator<Item = &EventSession> {
        self.ticks.iter().chain(self.contention.iter())
    }

    /// Waits until the agent reads the events or clrprof's sessions run.
    fn wait_until_reading(&self) {
        for session in self.each() {
            session.wait_until_reading(ATTACH_TIMEOUT);
        }
    }

    /// Ends clrprof's sessions (the detach).
    fn stop(&self) {
        for session in self.each() {
            session.stop();
        }
    }

    /// Appends the events clrprof's sessions read to the trace, after the agent's records.
    fn write(self, trace: &mut crate::trace_file::TraceFile, progress: &Progress) {
        if let Some(ticks) = self.ticks {
            record::write_ticks(ticks.within(RUNDOWN_TIMEOUT), trace, progress);
        }
        if let Some(contention) = self.contention {
            record::write_contention(contention.within(RUNDOWN_TIMEOUT), trace, progress);
        }
    }
}

/// The files process `pid` runs: its executable and the arguments of its command line that
/// are files (a .NET program's `.dll`). Reached through `/proc/PID/exe` and `/proc/PID/cwd`,
/// which lead to the files themselves also from another mount namespace (a container).
/// Asks the runtime of process `pid` to load the agent at `agent` with `client_data`.
/// Right after a detach the runtime still counts the old profiler as loaded for a moment (it
/// releases it after ProfilerDetachSucceeded): a refusal then is retried briefly.
pub(crate) fn load_agent(pid: u32, agent: &str, client_data: &[u8]) -> Result<(), IpcError> {
    let busy_until = Instant::now() + BUSY_RETRY;
    loop {
        match client::attach_profiler(
            pid,
            ATTACH_TIMEOUT,
            protocol::AGENT_CLSID,
            agent,
            client_data,
        ) {
            Err(IpcError::Refused { hresult })
                if hresult == message::CORPROF_E_PROFILER_ALREADY_ACTIVE
                    && Instant::now() < busy_until =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn process_files(pid: u32) -> Vec<(String, std::path::PathBuf)> {
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let mut out = Vec::new();
    if let Ok(exe) = std::fs::read_link(proc.join("exe")) {
        out.push((
            format!("the executable of process {pid}, {}", exe.display()),
            proc.join("exe"),
        ));
    }
    let args = std::fs::read(proc.join("cmdline")).unwrap_or_default();
    for arg in args.split(|&b| b == 0).skip(1).filter(|a| !a.is_empty()) {
        let arg = String::from_utf8_lossy(arg).into_owned();
        let path = proc.join("cwd").join(&arg);
        if path.is_file() {
            out.push((format!("a file process {pid} runs, {arg}"), path));
        }
    }
    out
}

/// Waits for the agent's connection.
fn accept(listener: &UnixListener, timeout: Duration) -> Option<UnixStream> {
    let deadline = Instant::now() + timeout;
    let stream = record::accept_agent(listener, None, || Instant::now() < deadline).ok()??;
    stream.set_nonblocking(false).ok()?;
    Some(stream)
}

/// Turns an IPC error into what the user should know.
pub(crate) fn explain(e: IpcError) -> anyhow::Error {
    match e {
        IpcError::Refused { hresult } if hresult == message::CORPROF_E_PROFILER_ALREADY_ACTIVE => {
            anyhow::anyhow!(
                "a profiler is already loaded in this process (only one can be; a previous \
                 clrprof attach may still be detaching): HRESULT {hresult:#010x}"
            )
        }
        IpcError::Refused { hresult } if hresult == message::DS_IPC_E_UNKNOWN_COMMAND => {
            anyhow::anyhow!(
                "this runtime is too old to attach a profiler (attach needs .NET Core 3.1 or \
                 later): HRESULT {hresult:#010x}"
            )
        }
        IpcError::Closed => anyhow::anyhow!(
            "the process closed the diagnostics connection without answering (did it exit \
             during the attach?)"
        ),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn options(mode: Mode, events: &[&str]) -> RecordOptions {
        let names: Vec<String> = events.iter().map(|e| e.to_string()).collect();
        RecordOptions {
            events: EventChoice::parse(&names).unwrap(),
            ..RecordOptions::new(mode, PathBuf::from("x"), PathBuf::from("a"), Vec::new())
        }
    }

    #[test]
    fn refuses_what_the_runtime_refuses_after_attach() {
        let err = check_attachable(&mut options(Mode::Trace, &[])).unwrap_err();
        assert!(err.to_string().contains("enter/leave hooks"), "{err}");
        let err = check_attachable(&mut options(Mode::Count, &[])).unwrap_err();
        assert!(err.to_string().contains("--mode count cannot"), "{err}");
        let err = check_attachable(&mut options(Mode::None, &["gc", "transition"])).unwrap_err();
        assert!(err.to_string().contains("code transition"), "{err}");
        for method in [AllocMode::Sampled, AllocMode::All] {
            let mut every = options(Mode::Sample, &[]);
            every.alloc = Some(method);
            let err = check_attachable(&mut every).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("--alloc {method} cannot be used with attach")),
                "{err}"
            );
            assert!(err.contains("allocation callback"), "{err}");
        }
        // The ticks and the contention events come from EventPipe sessions, which a profiler
        // may start after attach.
        let mut events = options(Mode::Sample, &[]);
        events.alloc = Some(AllocMode::Ticks);
        events.contention = true;
        check_attachable(&mut events).unwrap();
        let config = events.agent_config();
        assert_eq!(config.alloc, AllocMode::Ticks);
        assert!(config.contention);
        let mut all = options(Mode::Sample, &["all"]);
        check_attachable(&mut all).unwrap();
        let all = all.events.categories(|_| true);
        assert_eq!(all.len(), EventCategory::all().len() - 2);
        assert!(!all.contains(&EventCategory::Transition));
        assert!(!all.contains(&EventCategory::HeapRefs));
        assert!(all.contains(&EventCategory::Gc));
        let mut by_name = options(Mode::Sample, &["all", "heap-refs"]);
        check_attachable(&mut by_name).unwrap();
        let by_name = by_name.agent_config().events;
        assert_eq!(by_name.len(), EventCategory::all().len() - 1);
        assert!(by_name.contains(&EventCategory::HeapRefs));
    }
}
