//! A minimal client for the .NET diagnostics IPC protocol: enough to start the runtime's own
//! EventPipe sampler in a running process (as `dotnet-trace collect` does), drain the event
//! stream and stop the session.
//!
//! Protocol (dotnet/diagnostics `documentation/design-docs/ipc-protocol.md`):
//! - The runtime listens on a Unix socket `$TMPDIR/dotnet-diagnostic-{pid}-{key}-socket`
//!   (`/tmp` when `TMPDIR` is unset), where `key` is the process start time.
//! - Every message starts with a 20-byte little-endian header: the magic `DOTNET_IPC_V1\0`,
//!   a u16 total size (header included), a command set, a command id and a reserved u16.
//!   One command per connection; the reply is `0xFF/0x00` (OK) or `0xFF/0xFF` + HRESULT.
//! - CollectTracing (`0x02/0x02`): u32 circular buffer MB, u32 format (1 = nettrace), then the
//!   providers (u32 count; per provider u64 keywords, u32 level, name, filter arguments).
//!   Strings are a u32 count of UTF-16 units including the terminating NUL, then the units;
//!   a count of 0 is an absent string. The OK reply carries a u64 session id, after which the
//!   nettrace stream follows on the same connection until the session ends.
//! - StopTracing (`0x02/0x01`) with the u64 session id, on a second connection; the runtime
//!   writes the rundown, ends the stream and closes the first connection.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail};

const MAGIC: &[u8; 14] = b"DOTNET_IPC_V1\0";
const HEADER_LEN: usize = 20;

const SET_EVENTPIPE: u8 = 0x02;
const EVENTPIPE_STOP: u8 = 0x01;
const EVENTPIPE_COLLECT: u8 = 0x02;
const SET_SERVER: u8 = 0xFF;
const SERVER_OK: u8 = 0x00;
const SERVER_ERROR: u8 = 0xFF;

/// nettrace, the format `dotnet-trace` asks for.
const FORMAT_NETTRACE: u32 = 1;
/// Circular buffer size `dotnet-trace` uses by default.
const BUFFER_MB: u32 = 256;

/// How long a command reply, or a pause in the event stream, may take.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

/// One EventPipe provider to enable.
#[derive(Debug, Clone)]
pub struct Provider {
    pub name: &'static str,
    pub keywords: u64,
    pub level: u32,
}

/// The providers of `dotnet-trace`'s CPU sampling profile: the runtime's stop-the-world stack
/// sampler (every 1 ms) and the runtime events a viewer needs to symbolize its stacks.
pub const CPU_SAMPLING: &[Provider] = &[
    Provider {
        name: "Microsoft-DotNETCore-SampleProfiler",
        keywords: 0,
        level: 5,
    },
    Provider {
        name: "Microsoft-Windows-DotNETRuntime",
        keywords: 0x4_c14f_ccbd,
        level: 5,
    },
];

/// What was read from a session's event stream.
#[derive(Debug, Clone, Copy)]
pub struct StreamStats {
    /// Bytes of nettrace data received.
    pub bytes: u64,
}

/// A running EventPipe session whose stream is being read (and discarded) by a thread.
#[derive(Debug)]
pub struct Session {
    pid: u32,
    id: u64,
    reader: JoinHandle<Result<StreamStats>>,
}

impl Session {
    /// Starts a streaming session with `providers` in process `pid` and begins draining it.
    /// Returns once the runtime has accepted the session.
    pub fn start(pid: u32, providers: &[Provider]) -> Result<Session> {
        let mut stream = connect(pid)?;
        stream
            .write_all(&collect_tracing(providers))
            .context("sending CollectTracing")?;
        let payload = read_reply(&mut stream).context("CollectTracing")?;
        let id = u64_at(&payload, 0).with_context(|| {
            format!(
                "CollectTracing reply has a {}-byte payload, expected a u64 session id",
                payload.len()
            )
        })?;
        let reader = std::thread::Builder::new()
            .name("eventpipe-reader".into())
            .spawn(move || drain(stream))
            .context("cannot start the EventPipe reader thread")?;
        Ok(Session { pid, id, reader })
    }

    /// Stops the session on a second connection and waits for the end of its stream.
    /// Fails unless the stream was a nettrace stream.
    pub fn stop(self) -> Result<StreamStats> {
        let stop_result = (|| -> Result<()> {
            let mut stream = connect(self.pid)?;
            stream
                .write_all(&stop_tracing(self.id))
                .context("sending StopTracing")?;
            let payload = read_reply(&mut stream).context("StopTracing")?;
            if let Some(id) = u64_at(&payload, 0)
                && id != self.id
            {
                bail!(
                    "StopTracing acknowledged session {id:#x}, expected {:#x}",
                    self.id
                );
            }
            Ok(())
        })();
        // The runtime closes the stream when the session ends (or when the process exits, if
        // stopping failed), so the reader always finishes.
        let stats = self
            .reader
            .join()
            .map_err(|_| anyhow::anyhow!("the EventPipe reader thread panicked"))?;
        stop_result?;
        stats
    }
}

/// The diagnostics socket of process `pid`: the newest `dotnet-diagnostic-{pid}-{key}-socket`.
pub fn socket_path(pid: u32) -> Result<PathBuf> {
    let dir = std::env::var_os("TMPDIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let prefix = format!("dotnet-diagnostic-{pid}-");
    let mut best: Option<(u64, PathBuf)> = None;
    let entries =
        std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(key) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix("-socket"))
            .and_then(|key| key.parse::<u64>().ok())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            best = Some((key, entry.path()));
        }
    }
    best.map(|(_, path)| path).with_context(|| {
        format!(
            "process {pid} has no diagnostics socket {}/{prefix}<key>-socket (is it a .NET \
             Core 3.0+ process with the diagnostics server enabled?)",
            dir.display()
        )
    })
}

fn connect(pid: u32) -> Result<UnixStream> {
    let path = socket_path(pid)?;
    let stream = UnixStream::connect(&path)
        .with_context(|| format!("cannot connect to {}", path.display()))?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(stream)
}

fn message(set: u8, id: u8, payload: &[u8]) -> Vec<u8> {
    let size = u16::try_from(HEADER_LEN + payload.len()).expect("IPC message over 64 KiB");
    let mut msg = Vec::with_capacity(usize::from(size));
    msg.extend_from_slice(MAGIC);
    msg.extend_from_slice(&size.to_le_bytes());
    msg.push(set);
    msg.push(id);
    msg.extend_from_slice(&0u16.to_le_bytes());
    msg.extend_from_slice(payload);
    msg
}

/// Appends an IPC string: UTF-16 units with a terminating NUL, or a zero count when empty.
fn put_string(buf: &mut Vec<u8>, s: &str) {
    if s.is_empty() {
        buf.extend_from_slice(&0u32.to_le_bytes());
        return;
    }
    let units: Vec<u16> = s.encode_utf16().chain(std::iter::once(0)).collect();
    let count = u32::try_from(units.len()).expect("IPC string too long");
    buf.extend_from_slice(&count.to_le_bytes());
    for unit in units {
        buf.extend_from_slice(&unit.to_le_bytes());
    }
}

fn collect_tracing(providers: &[Provider]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&BUFFER_MB.to_le_bytes());
    payload.extend_from_slice(&FORMAT_NETTRACE.to_le_bytes());
    let count = u32::try_from(providers.len()).expect("too many providers");
    payload.extend_from_slice(&count.to_le_bytes());
    for p in providers {
        payload.extend_from_slice(&p.keywords.to_le_bytes());
        payload.extend_from_slice(&p.level.to_le_bytes());
        put_string(&mut payload, p.name);
        put_string(&mut payload, "");
    }
    message(SET_EVENTPIPE, EVENTPIPE_COLLECT, &payload)
}

fn stop_tracing(session: u64) -> Vec<u8> {
    message(SET_EVENTPIPE, EVENTPIPE_STOP, &session.to_le_bytes())
}

/// Reads one reply message; returns its payload if it is OK, fails with the HRESULT otherwise.
fn read_reply(stream: &mut UnixStream) -> Result<Vec<u8>> {
    let mut header = [0u8; HEADER_LEN];
    stream
        .read_exact(&mut header)
        .context("the runtime closed the connection without replying")?;
    if &header[..14] != MAGIC {
        bail!("reply does not start with the DOTNET_IPC_V1 magic: {header:02x?}");
    }
    let size = usize::from(u16::from_le_bytes([header[14], header[15]]));
    if size < HEADER_LEN {
        bail!("reply header announces {size} bytes, less than the header itself");
    }
    let mut payload = vec![0u8; size - HEADER_LEN];
    stream
        .read_exact(&mut payload)
        .context("reading the reply payload")?;
    match (header[16], header[17]) {
        (SET_SERVER, SERVER_OK) => Ok(payload),
        (SET_SERVER, SERVER_ERROR) => {
            let code = payload
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            match code {
                Some(hr) => bail!("the runtime refused the command: HRESULT {hr:#010x}"),
                None => bail!("the runtime refused the command"),
            }
        }
        (set, id) => bail!("unexpected reply command {set:#04x}/{id:#04x}"),
    }
}

fn u64_at(payload: &[u8], offset: usize) -> Option<u64> {
    let bytes = payload.get(offset..offset + 8)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads the event stream to its end, counting bytes; checks that it is a nettrace stream.
fn drain(mut stream: UnixStream) -> Result<StreamStats> {
    const NETTRACE: &[u8; 8] = b"Nettrace";
    let mut head = Vec::with_capacity(NETTRACE.len());
    let mut bytes = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(e).context(format!(
                    "reading the EventPipe stream failed after {bytes} bytes"
                ));
            }
        };
        if head.len() < NETTRACE.len() {
            let take = (NETTRACE.len() - head.len()).min(n);
            head.extend_from_slice(&buf[..take]);
        }
        bytes += n as u64;
    }
    if head.as_slice() != NETTRACE {
        bail!(
            "the EventPipe stream ({bytes} bytes) does not start with `Nettrace` (starts with \
             {head:02x?}): the session did not produce a trace"
        );
    }
    Ok(StreamStats { bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout() {
        let msg = stop_tracing(0x0102_0304_0506_0708);
        assert_eq!(msg.len(), 28);
        assert_eq!(&msg[..14], b"DOTNET_IPC_V1\0");
        assert_eq!(&msg[14..16], &28u16.to_le_bytes());
        assert_eq!(&msg[16..20], &[0x02, 0x01, 0, 0]);
        assert_eq!(&msg[20..], &0x0102_0304_0506_0708u64.to_le_bytes());
    }

    #[test]
    fn collect_tracing_payload() {
        let msg = collect_tracing(&[Provider {
            name: "AB",
            keywords: 0x10,
            level: 4,
        }]);
        let payload = &msg[HEADER_LEN..];
        let mut expected = Vec::new();
        expected.extend_from_slice(&256u32.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&0x10u64.to_le_bytes());
        expected.extend_from_slice(&4u32.to_le_bytes());
        expected.extend_from_slice(&3u32.to_le_bytes());
        expected.extend_from_slice(&[b'A', 0, b'B', 0, 0, 0]);
        expected.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(payload, expected.as_slice());
        assert_eq!(&msg[16..18], &[0x02, 0x02]);
        assert_eq!(
            usize::from(u16::from_le_bytes([msg[14], msg[15]])),
            msg.len()
        );
    }
}
