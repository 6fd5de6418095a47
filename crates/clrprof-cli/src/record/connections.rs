//! The agents' connections: the socket they connect to, a thread for each process of the
//! tree, and their streams copied into the trace.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clrprof_trace::{Record, StreamDecoder, protocol};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::native_names::NativeNamer;
use super::options::ProcessFilter;
use super::progress::{Progress, note, note_from, set_problem};
use crate::trace_file::{SEAL_EVERY, TraceFile};

/// What `record` knows of one .NET process of the tree.
#[derive(Debug, Clone)]
pub(super) struct ProcessState {
    /// Its section in the trace.
    pub(super) section: u32,
    /// What its agent said.
    pub(super) hello: protocol::Hello,
    /// Left out by the process filter.
    pub(super) left_out: bool,
    /// Since the recording's start.
    pub(super) started: Duration,
    /// When its stream ended, since the recording's start.
    pub(super) ended: Option<Duration>,
    /// The exit status its agent sent.
    pub(super) exit_code: Option<i32>,
    /// Whether its agent's `SessionEnd` arrived.
    pub(super) clean: bool,
}

/// The recording of a process tree: the trace every connection writes its section of, and
/// the processes.
pub(super) struct Tree {
    pub(super) trace: Mutex<TraceFile>,
    pub(super) processes: Mutex<Vec<ProcessState>>,
    /// The pid of the process `record` started.
    pub(super) root: u32,
    pub(super) filter: ProcessFilter,
    /// The kinds of the runtime's events the CLI reads over the root process's diagnostics
    /// socket where its agent cannot (`--alloc ticks`, `--contention`): the agent of another
    /// process of the tree is told at once that no such session runs for it.
    pub(super) event_session_kinds: u32,
}

impl Tree {
    fn lock_trace(&self) -> std::sync::MutexGuard<'_, TraceFile> {
        self.trace.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn lock_processes(&self) -> std::sync::MutexGuard<'_, Vec<ProcessState>> {
        self.processes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Processes being recorded now.
    pub(super) fn running(&self) -> usize {
        self.lock_processes()
            .iter()
            .filter(|p| !p.left_out && p.ended.is_none())
            .count()
    }

    /// The trace and the processes, once every connection is done (its thread joined).
    pub(super) fn into_parts(self: Arc<Tree>) -> Result<(TraceFile, Vec<ProcessState>)> {
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

/// Accepts the agents of the tree's processes until `stop` (set before `woken` becomes
/// readable), each on a thread of its own, and waits for those threads.
pub(super) fn accept_all(
    listener: &UnixListener,
    tree: &Arc<Tree>,
    progress: &Arc<Progress>,
    stop: &AtomicBool,
    woken: &UnixStream,
    abandon: &Arc<AtomicBool>,
) {
    let started = Instant::now();
    let mut connections = Vec::new();
    loop {
        let stream = match accept_agent(listener, Some(woken.as_fd()), || {
            !stop.load(Ordering::Acquire)
        }) {
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
                format!(
                    "a process's agent could not be recorded: {:#}",
                    anyhow::Error::new(e)
                ),
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
    let pid = hello.pid;
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
    if is_root {
        if let Ok(connection) = stream.try_clone() {
            // Before its records are read: the event sessions they start answer on it.
            progress.set_root_agent(connection);
        }
    } else {
        // An agent that left the events to the CLI would hold its program's start for them.
        let news = protocol::EventSessionNews::NotForThisProcess.to_byte();
        let _ = (&stream).write_all(&vec![news; tree.event_session_kinds as usize]);
    }
    let mut state = StreamState::default();
    copy_section(
        stream, tree, section, pid, is_root, progress, abandon, &mut state,
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

/// Copies one process's stream (process `pid`'s) into its section of the trace until it ends
/// (or `abandon` is set), naming its native functions. Like [`copy_stream`], a failed write
/// does not stop the copy.
#[allow(clippy::too_many_arguments)]
fn copy_section(
    stream: UnixStream,
    tree: &Tree,
    section: u32,
    pid: u32,
    is_root: bool,
    progress: &Progress,
    abandon: &AtomicBool,
    state: &mut StreamState,
) {
    let _ = stream.set_read_timeout(Some(SEAL_EVERY));
    let who = format!("the agent of process {section}");
    let mut namer = NativeNamer::new(pid);
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
                match namer.named(&raw.record) {
                    Some(named) => trace.write(&named),
                    None => trace.append(raw.bytes, &raw.record),
                }
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
            // The agent's side closed with bytes of the CLI's unread (news of an event
            // session that came after it stopped waiting): everything it sent was read before
            // this, as at an end of stream; a record cut short is found below.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
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

/// Copies the agent's stream (process `pid`'s) into the trace until it ends (or `abandon` is
/// set), naming its native functions and sealing a block at least every [`SEAL_EVERY`]. A
/// failed write does not stop the copy: the agent's stream is read to its end, so that the
/// program never waits on a full socket.
pub(crate) fn copy_stream(
    stream: UnixStream,
    pid: u32,
    trace: TraceFile,
    progress: &Progress,
    abandon: &AtomicBool,
) -> Result<TraceFile> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(SEAL_EVERY))?;
    let trace = std::cell::RefCell::new(trace);
    let mut namer = NativeNamer::new(pid);
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
                match namer.named(&raw.record) {
                    Some(named) => trace.write(&named),
                    None => trace.append(raw.bytes, &raw.record),
                }
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
        let socket = dir.path().join(crate::private_dir::SOCKET_NAME);
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

/// Waits for the agent's connection on the non-blocking `listener` while `waiting()` says to
/// go on; `None` once it says to stop. A connection is taken as soon as it comes: the agent
/// waits for its verdict inside the runtime's startup. With a `wake` descriptor, which becomes
/// readable once `waiting()` turns false, the wait sleeps until one of the two is ready (and
/// looks at `waiting()` every half second regardless): a recording's acceptor then costs the
/// machine nothing while the program runs. Without, `waiting()` is asked every 2 ms.
pub(crate) fn accept_agent(
    listener: &UnixListener,
    wake: Option<BorrowedFd<'_>>,
    mut waiting: impl FnMut() -> bool,
) -> std::io::Result<Option<UnixStream>> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => return Ok(Some(stream)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !waiting() {
                    return Ok(None);
                }
                let mut ready = vec![PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
                let timeout = match wake {
                    Some(fd) => {
                        ready.push(PollFd::new(fd, PollFlags::POLLIN));
                        PollTimeout::from(500u16)
                    }
                    None => PollTimeout::from(2u8),
                };
                match poll(&mut ready, timeout) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e),
        }
    }
}
