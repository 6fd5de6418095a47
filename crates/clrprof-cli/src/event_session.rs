//! An EventPipe session of the CLI's on the program's diagnostics socket, for the runtime's
//! events the agent cannot read in process (CoreCLR 3.1 has no in-process sessions): the
//! allocation ticks (`alloc_ticks.rs`) and the contention events (`contention.rs`).
//!
//! The agent says who reads each kind right after its `SessionStart`. If it is the CLI, a
//! thread starts a session on the runtime provider as soon as the program's diagnostics
//! socket appears and reads its stream to the end: the runtime ends it after its method
//! rundown (every method's code range and name, which the conversion maps the events'
//! stacks to) when the program exits, or when `attach` stops the session at the detach.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrprof_events::RUNTIME_PROVIDER;
use clrprof_ipc::{Provider, client, discovery};
use clrprof_trace::Record;
use clrprof_trace::protocol::EventSessionNews;
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
    /// The modules the agent defined (their trace ids are the runtime's `ModuleID`s while
    /// loaded).
    pub(crate) modules: HashSet<u64>,
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
            Record::ModuleDef(m) => {
                self.modules.insert(m.id);
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
            | Record::ModuleDef(_)
            | Record::StackDef(_)
            | Record::SessionStart(_)
    )
}

/// One kind of the runtime's events in one recording: a thread that learns who reads them
/// and, if that is the CLI, reads them from an EventPipe session.
pub(crate) struct EventSession {
    pid: u32,
    reader: JoinHandle<Result<Option<Vec<u8>>, String>>,
    /// The session once the runtime started it: its id and the connection its events come on.
    running: Arc<OnceLock<Running>>,
    /// How long [`finish`](Self::finish) waits for the stream's end (`None`: as long as it
    /// takes).
    limit: Option<Duration>,
}

/// A session the runtime started.
struct Running {
    /// The runtime's id of the session, for `StopTracing`.
    id: u64,
    /// A handle on the connection the events come on, to cut a stream that does not end.
    stream: UnixStream,
}

impl EventSession {
    /// Starts a thread that waits until `cli_reads` says whether the CLI is to read the
    /// runtime provider's events of `keywords` at `level` and, if so, starts a session with
    /// them on `pid`'s diagnostics socket as soon as it appears, and gives `tell_agent` the
    /// news (the agent holds the program's start until it came). `exited` tells the thread to
    /// give up waiting.
    pub(crate) fn start(
        pid: u32,
        exited: Arc<AtomicBool>,
        cli_reads: impl Fn() -> Option<bool> + Send + 'static,
        tell_agent: impl Fn(EventSessionNews) + Send + 'static,
        keywords: u64,
        level: u32,
    ) -> std::io::Result<EventSession> {
        let running = Arc::new(OnceLock::new());
        let started = Arc::clone(&running);
        let reader = std::thread::Builder::new()
            .name("clrprof-eventpipe".into())
            .spawn(move || {
                if !wait_for_reader(&exited, cli_reads)? {
                    return Ok(None);
                }
                let told = std::cell::Cell::new(false);
                let tell = |news| {
                    told.set(true);
                    tell_agent(news);
                };
                let collected = collect(pid, &exited, keywords, level, &started, &tell);
                if collected.is_err() && !told.get() {
                    tell_agent(EventSessionNews::Failed);
                }
                collected.map(Some)
            })?;
        Ok(EventSession {
            pid,
            reader,
            running,
            limit: None,
        })
    }

    /// Waits at most `timeout` until the events are being read: by the agent, or by the CLI's
    /// session, which the runtime has started (`attach`: the recording starts only then). Also
    /// returns when the thread gave up (it says why in [`finish`](Self::finish)).
    pub(crate) fn wait_until_reading(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.running.get().is_none() && !self.reader.is_finished() {
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Ends the CLI's session now, if it runs (`attach`, at the detach): the runtime writes
    /// its method rundown and ends the stream. A session that cannot be stopped is cut.
    pub(crate) fn stop(&self) {
        if let Some(running) = self.running.get()
            && client::stop_tracing(self.pid, running.id).is_err()
        {
            let _ = running.stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// The session whose [`finish`](Self::finish) cuts the stream if it has not ended within
    /// `timeout` (the runtime's rundown after [`stop`](Self::stop) did not come), keeping the
    /// events that came.
    pub(crate) fn within(self, timeout: Duration) -> EventSession {
        EventSession {
            limit: Some(timeout),
            ..self
        }
    }

    /// Waits for the end of the stream (the program exited, or [`stop`](Self::stop)) and
    /// returns its bytes, or `None` if the agent read the events.
    pub(crate) fn finish(self) -> Result<Option<Vec<u8>>, String> {
        if let Some(limit) = self.limit {
            let deadline = Instant::now() + limit;
            while !self.reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if !self.reader.is_finished()
                && let Some(running) = self.running.get()
            {
                let _ = running.stream.shutdown(std::net::Shutdown::Both);
            }
        }
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

fn collect(
    pid: u32,
    exited: &AtomicBool,
    keywords: u64,
    level: u32,
    running: &OnceLock<Running>,
    tell_agent: &dyn Fn(EventSessionNews),
) -> Result<Vec<u8>, String> {
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
    let (mut stream, id) = loop {
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
    if let Ok(handle) = stream.try_clone() {
        let _ = running.set(Running { id, stream: handle });
    }
    tell_agent(EventSessionNews::Started);
    let mut bytes = Vec::new();
    // The runtime ends the stream when the program exits or the session is stopped, after the
    // method rundown.
    match stream.read_to_end(&mut bytes) {
        Ok(_) => Ok(bytes),
        // Keep what arrived: the nettrace reader says where the stream was cut.
        Err(_) if !bytes.is_empty() => Ok(bytes),
        Err(e) => Err(format!("reading the EventPipe stream failed: {e}")),
    }
}
