//! How the CLI and the agent find each other: the agent's CLSID, the environment variables
//! `clrprof record` sets for it, and the client data `clrprof attach` hands to it. Both sides
//! use these definitions, so they cannot drift. Also who of the two reads the runtime's
//! allocation ticks ([`TickReader`]).

use crate::Counter;
use crate::counters::CounterName;

/// The agent's CLSID, passed to the runtime in `CORECLR_PROFILER`.
pub const AGENT_CLSID: &str = "{897B9E27-A69B-4816-9F74-172E6D96334F}";

/// Path of the Unix socket the CLI listens on; the agent streams the trace there.
pub const ENV_SESSION: &str = "CLRPROF_SESSION";

/// A file the agent writes the trace to itself, when there is no CLI (`CLRPROF_SESSION` wins).
pub const ENV_OUTPUT: &str = "CLRPROF_OUTPUT";

/// The agent's settings: `key=value` pairs separated by `;` (`mode`, `events`, `rate`,
/// `inline`, `max_nodes`, `buffer_kb`).
pub const ENV_CONFIG: &str = "CLRPROF_CONFIG";

/// `alloc=ticks`: who reads the runtime's allocation ticks (`GCAllocationTick`).
///
/// The agent decides while it initializes, and tells the CLI with a [`Counter`] named
/// [`TickReader::COUNTER`], written right after its `SessionStart` (and again with its other
/// counters at the end): [`TickReader::Agent`] when it started an in-process EventPipe session
/// (`ICorProfilerInfo12`, .NET 5 and later) and writes the ticks itself, [`TickReader::Cli`]
/// when the runtime refused one (CoreCLR 3.1 has no `ICorProfilerInfo12`); then the CLI reads
/// them over the program's diagnostics socket. Either way they become the same `Allocation`
/// records, flagged `Allocation::TICK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TickReader {
    /// The CLI, over the diagnostics socket.
    Cli,
    /// The agent, through an in-process EventPipe session.
    Agent,
}

impl TickReader {
    /// The name of the counter that carries it.
    pub const COUNTER: CounterName = CounterName::AllocationTicksReader;

    /// The counter's value.
    pub fn value(self) -> u64 {
        match self {
            TickReader::Cli => 0,
            TickReader::Agent => 1,
        }
    }

    /// The reader a counter names, if it is this counter with a known value.
    pub fn from_counter(counter: &Counter) -> Option<TickReader> {
        if counter.name != Self::COUNTER.as_str() {
            return None;
        }
        match counter.value {
            0 => Some(TickReader::Cli),
            1 => Some(TickReader::Agent),
            _ => None,
        }
    }

    /// The counter that says so, at `ts` nanoseconds since the session's start.
    pub fn counter(self, ts: u64) -> Counter {
        Counter::named(Self::COUNTER, ts, self.value())
    }
}

/// The counter by which the agent says, right after its `SessionStart` (and again with its
/// other counters at the end), who reads the runtime's contention events of `--contention`:
/// 1 the agent, through an in-process EventPipe session (.NET 5 and later); 0 the CLI, over
/// the program's diagnostics socket (CoreCLR 3.1).
pub const CONTENTION_READER_COUNTER: CounterName = CounterName::ContentionReader;

/// The counter by which the CLI says when the runtime's allocation ticks it read began, in
/// nanoseconds since the session's start, when that was after the session started: the GC
/// (on Linux) turns its events on only when it collects, so on CoreCLR 3.1, where the CLI
/// reads the ticks, they begin at the first collection after its session starts. Absent when
/// the ticks ran from the start.
pub const ALLOCATION_TICKS_FROM_COUNTER: CounterName = CounterName::AllocationTicksFromNs;

/// What the CLI tells a launched process's agent, after the [`Verdict`], about one of the
/// EventPipe sessions it runs for the runtime's events the agent left to it (CoreCLR 3.1:
/// [`TickReader::Cli`], or [`CONTENTION_READER_COUNTER`] 0): one byte per such kind, once the
/// runtime started the session or the CLI gave up on it. Such a session can start only once
/// the runtime opened its diagnostics socket, after the agent's `Initialize`; the agent holds
/// the program's first module load after the core library until the news came, so that the
/// session sees the program's first events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSessionNews {
    /// The runtime started the session: its events are read from here on.
    Started,
    /// The session could not start (the CLI says why in its own output).
    Failed,
    /// The CLI runs no such session for this process: only for the process `record` started,
    /// not for the processes it starts in turn (their runtime's events are not recorded).
    NotForThisProcess,
}

impl EventSessionNews {
    /// The byte that carries it.
    pub fn to_byte(self) -> u8 {
        match self {
            EventSessionNews::Started => b'E',
            EventSessionNews::Failed => b'F',
            EventSessionNews::NotForThisProcess => b'N',
        }
    }

    /// The news a byte carries (`None` for any other byte).
    pub fn from_byte(b: u8) -> Option<EventSessionNews> {
        match b {
            b'E' => Some(EventSessionNews::Started),
            b'F' => Some(EventSessionNews::Failed),
            b'N' => Some(EventSessionNews::NotForThisProcess),
            _ => None,
        }
    }
}

/// What one allocation tick stands for, in the `interval` of its `Allocation` record: the
/// runtime writes a tick each time it has handed out about this many bytes of allocation
/// contexts on a heap since the previous one (100 KiB).
pub const ALLOCATION_TICK_BYTES: u64 = 100 * 1024;

/// What `clrprof attach` hands to the agent's `InitializeForAttach` (there are no environment
/// variables in a process that is already running): a tag, the session socket and the
/// configuration, separated by NUL bytes.
///
/// The agent streams the trace to the socket as in `record`. It also reads from it: when the
/// CLI shuts down its writing half of the connection (or goes away), the agent stops
/// collecting, asks the runtime to detach it, and closes the connection once the runtime
/// confirmed the detach (`ProfilerDetachSucceeded`), after which the runtime unloads it.
pub fn attach_client_data(session: &str, config: &str) -> Vec<u8> {
    [ATTACH_TAG, session, config].join("\0").into_bytes()
}

/// The session socket and configuration in `InitializeForAttach`'s client data, if it came
/// from `clrprof attach`.
pub fn parse_attach_client_data(data: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(data).ok()?;
    let mut parts = text.split('\0');
    if parts.next()? != ATTACH_TAG {
        return None;
    }
    let session = parts.next().filter(|s| !s.is_empty())?;
    let config = parts.next().unwrap_or("");
    parts
        .next()
        .is_none()
        .then(|| (session.to_string(), config.to_string()))
}

/// The first field of the attach client data (its version).
const ATTACH_TAG: &str = "clrprof-attach-1";
/// The first field of the attach client data of export mode (its version).
const ATTACH_EXPORT_TAG: &str = "clrprof-attach-export-1";

/// What `clrprof attach` asks of the agent in `InitializeForAttach`'s client data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachRequest {
    /// Stream a trace to the CLI's socket `session`, with `config` (an encoded
    /// `AgentConfig`).
    Session {
        /// The CLI's socket.
        session: String,
        /// The configuration.
        config: String,
    },
    /// Export mode (`clrprof attach --export`): ship profiles to a backend, with these
    /// `CLRPROF_EXPORT_*` variables (as `clrprof env` writes them), until the process ends or
    /// `clrprof attach --stop` asks for the end on [`export_control_name`].
    Export {
        /// The variables, by name.
        vars: Vec<(String, String)>,
    },
}

/// The client data of `clrprof attach --export`: the export variables.
pub fn attach_export_client_data(vars: &[(String, String)]) -> Vec<u8> {
    let mut fields = vec![ATTACH_EXPORT_TAG.to_string()];
    fields.extend(vars.iter().map(|(k, v)| format!("{k}={v}")));
    fields.join("\0").into_bytes()
}

/// What the client data asks, if it came from `clrprof attach`.
pub fn parse_attach_request(data: &[u8]) -> Option<AttachRequest> {
    if let Some((session, config)) = parse_attach_client_data(data) {
        return Some(AttachRequest::Session { session, config });
    }
    let text = std::str::from_utf8(data).ok()?;
    let mut parts = text.split('\0');
    if parts.next()? != ATTACH_EXPORT_TAG {
        return None;
    }
    let vars = parts
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(AttachRequest::Export { vars })
}

/// The abstract Unix socket name (Linux) on which an agent attached in export mode waits for
/// `clrprof attach PID --stop`: one per process. A connection that sends
/// [`EXPORT_STOP`] ends export mode (the last period is sent first) and detaches the agent,
/// which answers [`EXPORT_STOPPED`] once the runtime accepted the detach.
pub fn export_control_name(pid: u32) -> String {
    format!("clrprof-export-{pid}")
}

/// The byte `clrprof attach --stop` sends.
pub const EXPORT_STOP: u8 = b'S';
/// The agent's answer once export mode ended and the detach was asked for.
pub const EXPORT_STOPPED: u8 = b'D';

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_session_news_round_trips_and_differs_from_a_verdict() {
        for news in [
            EventSessionNews::Started,
            EventSessionNews::Failed,
            EventSessionNews::NotForThisProcess,
        ] {
            assert_eq!(EventSessionNews::from_byte(news.to_byte()), Some(news));
            assert_eq!(Verdict::from_byte(news.to_byte()), None);
        }
        assert_eq!(EventSessionNews::from_byte(Verdict::Record.to_byte()), None);
    }

    #[test]
    fn the_tick_reader_round_trips_through_its_counter() {
        for reader in [TickReader::Cli, TickReader::Agent] {
            let counter = reader.counter(7);
            assert_eq!(
                (counter.ts, counter.name.as_str()),
                (7, TickReader::COUNTER.as_str())
            );
            assert_eq!(TickReader::from_counter(&counter), Some(reader));
        }
        let other = Counter {
            ts: 0,
            name: "allocations_dropped".into(),
            value: 1,
        };
        assert_eq!(TickReader::from_counter(&other), None);
        let unknown = Counter {
            value: 2,
            ..TickReader::Agent.counter(0)
        };
        assert_eq!(TickReader::from_counter(&unknown), None);
    }

    #[test]
    fn attach_export_client_data_round_trips() {
        let vars = vec![
            (
                "CLRPROF_EXPORT_ENDPOINT".to_string(),
                "http://c:4318".to_string(),
            ),
            ("CLRPROF_EXPORT_LABELS".to_string(), "a=b,c=d".to_string()),
        ];
        assert_eq!(
            parse_attach_request(&attach_export_client_data(&vars)),
            Some(AttachRequest::Export { vars })
        );
        assert_eq!(
            parse_attach_request(&attach_client_data("/s", "c")),
            Some(AttachRequest::Session {
                session: "/s".into(),
                config: "c".into()
            })
        );
        assert_eq!(
            parse_attach_request(b"clrprof-attach-export-1\0novalue"),
            None
        );
        assert_eq!(parse_attach_request(b"other"), None);
    }

    #[test]
    fn attach_client_data_round_trips() {
        let data = attach_client_data("/tmp/x/agent.sock", "mode=none;events=gc");
        assert_eq!(
            data,
            b"clrprof-attach-1\0/tmp/x/agent.sock\0mode=none;events=gc"
        );
        assert_eq!(
            parse_attach_client_data(&data),
            Some(("/tmp/x/agent.sock".into(), "mode=none;events=gc".into()))
        );
        assert_eq!(parse_attach_client_data(b""), None);
        assert_eq!(parse_attach_client_data(b"other\0/s\0c"), None);
        assert_eq!(parse_attach_client_data(b"clrprof-attach-1\0\0c"), None);
        assert_eq!(
            parse_attach_client_data(b"clrprof-attach-1\0/s\0c\0d"),
            None
        );
    }
}

/// What the agent of `clrprof record` sends first on its connection, before its record
/// stream: which process it is in. Every .NET process of the recorded tree inherits the
/// session's variables, so every one of them connects to the one socket the CLI listens on;
/// the CLI answers each with a [`Verdict`] (its process filter), then reads the stream of
/// those it records, each connection into its own section of the trace.
///
/// On the wire: [`Hello::MAGIC`], `u16` [`Hello::VERSION`], `u32` payload length, then the
/// payload: `u32 pid`, `u32 parent_pid`, `u32` length and the UTF-8 command line (arguments
/// separated by spaces), all little-endian.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hello {
    /// The agent's process.
    pub pid: u32,
    /// Its parent process (0 if unknown).
    pub parent_pid: u32,
    /// Its command line.
    pub command_line: String,
}

/// The CLI's answer to a [`Hello`]: one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Record this process: the record stream follows.
    Record,
    /// Leave it out (`--no-children`, a process filter): the agent closes the connection and
    /// refuses to start, so that the process runs without the profiler.
    LeaveOut,
}

impl Verdict {
    /// The byte that carries it.
    pub fn to_byte(self) -> u8 {
        match self {
            Verdict::Record => 1,
            Verdict::LeaveOut => 0,
        }
    }

    /// The verdict a byte carries (`None` for any other byte).
    pub fn from_byte(b: u8) -> Option<Verdict> {
        match b {
            1 => Some(Verdict::Record),
            0 => Some(Verdict::LeaveOut),
            _ => None,
        }
    }
}

impl Hello {
    /// The 8 bytes a hello starts with.
    pub const MAGIC: [u8; 8] = *b"CLRPHELO";
    /// The version of the hello this crate writes and reads.
    pub const VERSION: u16 = 1;
    /// The longest command line a hello carries (longer ones are cut).
    pub const MAX_COMMAND_LINE: usize = 64 << 10;

    /// The hello's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut cmd = self.command_line.as_str();
        if cmd.len() > Self::MAX_COMMAND_LINE {
            let mut end = Self::MAX_COMMAND_LINE;
            while !cmd.is_char_boundary(end) {
                end -= 1;
            }
            cmd = &cmd[..end];
        }
        let mut out = Vec::with_capacity(26 + cmd.len());
        out.extend_from_slice(&Self::MAGIC);
        out.extend_from_slice(&Self::VERSION.to_le_bytes());
        out.extend_from_slice(&((12 + cmd.len()) as u32).to_le_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.extend_from_slice(&self.parent_pid.to_le_bytes());
        out.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
        out.extend_from_slice(cmd.as_bytes());
        out
    }

    /// Reads a hello, saying what is wrong with one that is not.
    pub fn read(r: &mut impl std::io::Read) -> Result<Hello, HelloError> {
        let mut head = [0u8; 14];
        r.read_exact(&mut head).map_err(HelloError::NoHello)?;
        if head[..8] != Self::MAGIC {
            return Err(HelloError::NotAHello);
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != Self::VERSION {
            return Err(HelloError::Version(version));
        }
        let len = u32::from_le_bytes([head[10], head[11], head[12], head[13]]) as usize;
        if !(12..=12 + Self::MAX_COMMAND_LINE).contains(&len) {
            return Err(HelloError::Length(len));
        }
        let mut payload = vec![0u8; len];
        r.read_exact(&mut payload).map_err(HelloError::CutShort)?;
        let u32_at = |i: usize| {
            u32::from_le_bytes([payload[i], payload[i + 1], payload[i + 2], payload[i + 3]])
        };
        let cmd_len = u32_at(8) as usize;
        let cmd = payload
            .get(12..12 + cmd_len)
            .ok_or(HelloError::CommandLinePastEnd)?;
        Ok(Hello {
            pid: u32_at(0),
            parent_pid: u32_at(4),
            command_line: String::from_utf8_lossy(cmd).into_owned(),
        })
    }
}

/// What is wrong with a connection that should have started with a [`Hello`].
#[derive(Debug, thiserror::Error)]
pub enum HelloError {
    /// Nothing (or too little) came.
    #[error("no hello from the agent")]
    NoHello(#[source] std::io::Error),
    /// The bytes are not a hello.
    #[error("the connection did not start with the agent's hello")]
    NotAHello,
    /// The agent speaks another version.
    #[error(
        "the agent speaks hello version {0}, this clrprof {version}: use the agent that came \
         with it",
        version = Hello::VERSION
    )]
    Version(u16),
    /// A length no hello has.
    #[error("a hello of {0} bytes")]
    Length(usize),
    /// The payload ended before its announced length.
    #[error("the agent's hello was cut short")]
    CutShort(#[source] std::io::Error),
    /// The command line's length runs past the payload.
    #[error("the hello's command line runs past its end")]
    CommandLinePastEnd,
}

#[cfg(test)]
mod hello_tests {
    use super::*;

    #[test]
    fn hello_round_trips_and_bad_ones_say_why() {
        let h = Hello {
            pid: 4242,
            parent_pid: 1,
            command_line: "dotnet app.dll ü".into(),
        };
        let bytes = h.encode();
        assert_eq!(Hello::read(&mut &bytes[..]).unwrap(), h);
        let mut bad = bytes.clone();
        bad[8] = 9;
        assert_eq!(
            Hello::read(&mut &bad[..]).unwrap_err().to_string(),
            "the agent speaks hello version 9, this clrprof 1: use the agent that came with it"
        );
        let cut = Hello::read(&mut &bytes[..20]).unwrap_err();
        assert!(
            matches!(&cut, HelloError::CutShort(e) if e.kind() == std::io::ErrorKind::UnexpectedEof),
            "{cut:?}"
        );
        assert_eq!(cut.to_string(), "the agent's hello was cut short");
        assert_eq!(
            Hello::read(&mut &b"CLRPROF\0xxxxxx"[..])
                .unwrap_err()
                .to_string(),
            "the connection did not start with the agent's hello"
        );
        for v in [Verdict::Record, Verdict::LeaveOut] {
            assert_eq!(Verdict::from_byte(v.to_byte()), Some(v));
        }
        assert_eq!(Verdict::from_byte(7), None);
    }
}
