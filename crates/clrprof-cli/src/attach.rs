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
use clrprof_trace::{EventCategory, protocol};

use crate::record::{self, AgentSocket, Progress, RecordOptions};

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

/// The event categories `all` means for an attached agent: the cheap ones it can record.
fn attachable_categories() -> impl Iterator<Item = &'static str> {
    record::all_cheap_categories()
        .filter(|c| *c != EventCategory::Transition)
        .map(|c| c.name())
}

/// Refuses what the runtime does not allow after attach, naming the reason; expands `all`.
fn check_attachable(opts: &mut RecordOptions) -> Result<()> {
    const REASON: &str = "the runtime refuses it to a profiler that attaches to a running \
                          process (CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER); record the \
                          program from its start with `clrprof record` instead";
    if opts.mode == "trace" {
        bail!("--mode trace cannot be used with attach: it needs enter/leave hooks, and {REASON}");
    }
    if opts.alloc == Some("ticks") {
        bail!(
            "--alloc ticks cannot be used with attach: clrprof reads the ticks from an \
             EventPipe session it starts with the program (record it with \
             `clrprof record --alloc ticks`)"
        );
    }
    if let Some(alloc) = opts.alloc {
        bail!(
            "--alloc {alloc} cannot be used with attach: it needs the runtime's allocation \
             callback, and {REASON}"
        );
    }
    record::validate_events(&opts.events)?;
    if opts.events.iter().any(|e| e == "transition") {
        bail!(
            "`transition` events cannot be recorded with attach: they need code transition \
             callbacks, and {REASON}"
        );
    }
    if opts.events.iter().any(|e| e == "all") {
        let named: Vec<String> = opts.events.clone();
        opts.events = EventCategory::all()
            .iter()
            .map(|c| c.name())
            .filter(|c| attachable_categories().any(|a| a == *c) || named.iter().any(|e| e == c))
            .map(str::to_string)
            .collect();
    }
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
    let attach = || {
        client::attach_profiler(
            pid,
            ATTACH_TIMEOUT,
            protocol::AGENT_CLSID,
            agent_text,
            &client_data,
        )
    };
    // Right after a detach the runtime still counts the old profiler as loaded for a moment
    // (it releases it after ProfilerDetachSucceeded): a refusal then is retried briefly.
    let busy_until = Instant::now() + BUSY_RETRY;
    let attached = loop {
        match attach() {
            Err(IpcError::Refused { hresult })
                if hresult == message::CORPROF_E_PROFILER_ALREADY_ACTIVE
                    && Instant::now() < busy_until =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => break other,
        }
    };
    if let Err(e) = attached {
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
        std::thread::spawn(move || record::copy_stream(reading, trace, &progress, &abandon))
    };
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

    // Ask the agent to detach, then wait for it to close the stream.
    let _ = stream.shutdown(Shutdown::Write);
    bar.set_message("detaching");
    let deadline = Instant::now() + DETACH_TIMEOUT;
    while !receiver.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !receiver.is_finished() {
        // Unblock the receiver: the trace keeps what arrived.
        let _ = stream.shutdown(Shutdown::Both);
    }
    let trace = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))??;
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

/// The files process `pid` runs: its executable and the arguments of its command line that
/// are files (a .NET program's `.dll`). Reached through `/proc/PID/exe` and `/proc/PID/cwd`,
/// which lead to the files themselves also from another mount namespace (a container).
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
    let stream = record::accept_agent(listener, || Instant::now() < deadline).ok()??;
    stream.set_nonblocking(false).ok()?;
    Some(stream)
}

/// Turns an IPC error into what the user should know.
fn explain(e: IpcError) -> anyhow::Error {
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

    fn options(mode: &'static str, events: &[&str]) -> RecordOptions {
        RecordOptions {
            events: events.iter().map(|e| e.to_string()).collect(),
            ..RecordOptions::new(mode, PathBuf::from("x"), PathBuf::from("a"), Vec::new())
        }
    }

    #[test]
    fn refuses_what_the_runtime_refuses_after_attach() {
        let err = check_attachable(&mut options("trace", &[])).unwrap_err();
        assert!(err.to_string().contains("enter/leave hooks"), "{err}");
        let err = check_attachable(&mut options("none", &["gc", "transition"])).unwrap_err();
        assert!(err.to_string().contains("code transition"), "{err}");
        assert!(check_attachable(&mut options("none", &["nope"])).is_err());
        let mut every = options("sample", &[]);
        every.alloc = Some("all");
        let err = check_attachable(&mut every).unwrap_err();
        assert!(err.to_string().contains("allocation callback"), "{err}");
        every.alloc = Some("ticks");
        let err = check_attachable(&mut every).unwrap_err();
        assert!(err.to_string().contains("EventPipe session"), "{err}");
        let mut all = options("sample", &["all"]);
        check_attachable(&mut all).unwrap();
        assert_eq!(all.events.len(), EventCategory::all().len() - 2);
        assert!(!all.events.iter().any(|e| e == "transition"));
        assert!(!all.events.iter().any(|e| e == "heap-refs"));
        assert!(all.events.iter().any(|e| e == "gc"));
        let mut by_name = options("sample", &["all", "heap-refs"]);
        check_attachable(&mut by_name).unwrap();
        assert_eq!(by_name.events.len(), EventCategory::all().len() - 1);
        assert!(by_name.events.iter().any(|e| e == "heap-refs"));
    }
}
