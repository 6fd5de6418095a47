//! The CLI's EventPipe sessions on the runtime's event provider, for the runtimes where the
//! agent cannot read the runtime's events in process (CoreCLR 3.1, without
//! `ICorProfilerInfo12`): a thread waits until the agent has said who reads them (right
//! after its `SessionStart`) and, if that is the CLI, waits for the program's diagnostics
//! socket, starts a session with the keywords asked and reads its stream until the program
//! exits. The runtime then writes the method rundown (every method's code range and names,
//! read by `managed_stacks.rs`) and closes the stream. `alloc_ticks.rs` and `contention.rs`
//! turn the streams into trace records.

use std::collections::HashSet;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrprof_events::RUNTIME_PROVIDER;
use clrprof_ipc::{Provider, client, discovery};
use clrprof_trace::Record;

/// EventPipe's buffer in the program, in megabytes (the CLI drains it continuously).
const BUFFER_MB: u32 = 64;
/// How long the program may take to open its diagnostics socket, and the agent to say who
/// reads the events.
const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// What the agent defined, so the CLI's records reuse its names and avoid its stack ids.
#[derive(Debug, Default)]
pub(crate) struct AgentIds {
    pub(crate) classes: HashSet<u64>,
    pub(crate) functions: HashSet<u64>,
    pub(crate) max_stack: u32,
    pub(crate) start_unix_ns: u64,
}

impl AgentIds {
    /// Notes a record of the agent's stream.
    pub(crate) fn observe(&mut self, record: &Record) {
        match record {
            Record::ClassDef(c) => {
                self.classes.insert(c.id);
            }
            Record::FunctionDef(f) => {
                self.functions.insert(f.id);
            }
            Record::StackDef(s) => self.max_stack = self.max_stack.max(s.id),
            Record::SessionStart(s) => self.start_unix_ns = s.start_unix_ns,
            _ => {}
        }
    }
}

/// Whether `record` is one [`AgentIds`] needs.
pub(crate) fn is_definition(record: &Record) -> bool {
    matches!(
        record,
        Record::ClassDef(_)
            | Record::FunctionDef(_)
            | Record::StackDef(_)
            | Record::SessionStart(_)
    )
}

/// One EventPipe session of the CLI on the runtime provider: a thread that learns whether
/// the CLI is to read the events and, if so, reads the session until the program exits.
pub(crate) struct EventSession {
    reader: JoinHandle<Result<Option<Vec<u8>>, String>>,
}

impl EventSession {
    /// Starts a thread that waits until `cli_reads` says whether the CLI is to read the
    /// runtime provider's events of `keywords` at `level` (`exited` tells it to give up
    /// waiting) and, if so, starts a session with them on `pid`'s diagnostics socket as soon
    /// as it appears (the allocation ticks of `alloc_ticks.rs`, the contention events of
    /// `contention.rs`).
    pub(crate) fn start(
        pid: u32,
        exited: Arc<AtomicBool>,
        cli_reads: impl Fn() -> Option<bool> + Send + 'static,
        keywords: u64,
        level: u32,
    ) -> std::io::Result<EventSession> {
        let reader = std::thread::Builder::new()
            .name("clrprof-eventpipe".into())
            .spawn(move || {
                if wait_for_reader(&exited, cli_reads)? {
                    collect(pid, &exited, keywords, level).map(Some)
                } else {
                    Ok(None)
                }
            })?;
        Ok(EventSession { reader })
    }

    /// Waits for the end of the stream (the program exited) and returns its bytes, or `None`
    /// if the agent read the events.
    pub(crate) fn finish(self) -> Result<Option<Vec<u8>>, String> {
        self.reader
            .join()
            .map_err(|_| "the EventPipe reader thread panicked".to_string())?
    }
}

/// Whether the CLI reads the events, once the agent said so (it does while the runtime
/// initializes it, before any of the program's code runs).
fn wait_for_reader(exited: &AtomicBool, reader: impl Fn() -> Option<bool>) -> Result<bool, String> {
    let started = Instant::now();
    loop {
        if let Some(reader) = reader() {
            return Ok(reader);
        }
        if exited.load(Ordering::Acquire) {
            return Err("the program exited before the agent started".into());
        }
        if started.elapsed() > STARTUP_WAIT {
            return Err(format!(
                "the agent did not start in {} s",
                STARTUP_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn collect(pid: u32, exited: &AtomicBool, keywords: u64, level: u32) -> Result<Vec<u8>, String> {
    let started = Instant::now();
    // The runtime opens the socket early in its startup.
    while discovery::socket_path(pid).is_err() {
        if exited.load(Ordering::Acquire) {
            return Err("the program exited before its diagnostics socket appeared".into());
        }
        if started.elapsed() > STARTUP_WAIT {
            return Err(format!(
                "the program opened no diagnostics socket in {} s (is it a .NET Core 3.0 or later program, with DOTNET_EnableDiagnostics not 0?)",
                STARTUP_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let providers = [Provider {
        name: RUNTIME_PROVIDER,
        keywords,
        level,
    }];
    // The socket file appears when the runtime binds it, a moment before it listens: a
    // connection refused then is early, not final.
    let (mut stream, _session) = loop {
        match client::start_tracing(pid, BUFFER_MB, &providers, client::REPLY_TIMEOUT) {
            Ok(session) => break session,
            Err(clrprof_ipc::Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::ConnectionRefused
                    && !exited.load(Ordering::Acquire)
                    && started.elapsed() <= STARTUP_WAIT =>
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(format!("cannot start the EventPipe session: {e}")),
        }
    };
    let mut bytes = Vec::new();
    // The runtime ends the stream when the program exits, after the method rundown.
    match stream.read_to_end(&mut bytes) {
        Ok(_) => Ok(bytes),
        // Keep what arrived: the nettrace reader says where the stream was cut.
        Err(_) if !bytes.is_empty() => Ok(bytes),
        Err(e) => Err(format!("reading the EventPipe stream failed: {e}")),
    }
}
