//! Talking to one runtime: one command per connection, then its reply.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::message::{self, HEADER_LEN, ProcessInfo};
use crate::{Error, discovery};

/// How long a simple command's reply may take.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to `pid`'s diagnostics socket; reads and writes time out after `timeout`.
pub fn connect(pid: u32, timeout: Duration) -> Result<UnixStream, Error> {
    let path = discovery::socket_path(pid)?;
    let stream = UnixStream::connect(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::Permission {
            pid,
            what: format!("cannot connect to {}", path.display()),
        },
        // A socket file left behind by a process that is gone.
        std::io::ErrorKind::ConnectionRefused if !discovery::is_alive(pid) => {
            Error::NoSuchProcess { pid }
        }
        _ => Error::Io {
            context: format!("cannot connect to {}", path.display()),
            source: e,
        },
    })?;
    let io = |e| Error::Io {
        context: "cannot set a timeout on the diagnostics socket".into(),
        source: e,
    };
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    Ok(stream)
}

/// Sends `msg` on a new connection to `pid` and reads the reply. Returns the connection (some
/// commands stream more data on it) and the reply's payload.
pub fn command(pid: u32, msg: &[u8], timeout: Duration) -> Result<(UnixStream, Vec<u8>), Error> {
    let mut stream = connect(pid, timeout)?;
    stream.write_all(msg).map_err(|e| Error::Io {
        context: "sending the command".into(),
        source: e,
    })?;
    let payload = read_reply(&mut stream)?;
    Ok((stream, payload))
}

/// Reads one reply message; returns its payload if it is OK, the runtime's refusal otherwise.
pub fn read_reply(stream: &mut UnixStream) -> Result<Vec<u8>, Error> {
    let mut header = [0u8; HEADER_LEN];
    stream.read_exact(&mut header).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset => Error::Closed,
        _ => Error::Io {
            context: "waiting for the runtime's reply".into(),
            source: e,
        },
    })?;
    let mut payload = vec![0u8; message::reply_payload_len(&header)?];
    stream.read_exact(&mut payload).map_err(|e| Error::Io {
        context: "reading the reply".into(),
        source: e,
    })?;
    message::check_reply(&header, payload)
}

/// Asks `pid` who it is.
pub fn process_info(pid: u32) -> Result<ProcessInfo, Error> {
    let (_, payload) = command(pid, &message::process_info()?, REPLY_TIMEOUT)?;
    ProcessInfo::parse(&payload)
}

/// Loads the profiler `clsid` from `path` into `pid` and waits until its `InitializeForAttach`
/// returned (at most `timeout`). `client_data` is handed to `InitializeForAttach`.
pub fn attach_profiler(
    pid: u32,
    timeout: Duration,
    clsid: &str,
    path: &str,
    client_data: &[u8],
) -> Result<(), Error> {
    let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
    let msg = message::attach_profiler(ms, clsid, path, client_data)?;
    // The runtime replies once the profiler initialized, or gave up after `timeout`.
    let (_, payload) = command(pid, &msg, timeout + REPLY_TIMEOUT)?;
    match message::u32_at(&payload, 0) {
        Some(0) | None => Ok(()),
        Some(hresult) => Err(Error::Refused { hresult }),
    }
}

/// Starts a streaming EventPipe session (`CollectTracing`) with `providers` in `pid`, with a
/// circular buffer of `buffer_mb` megabytes. Returns the connection, on which the nettrace
/// stream follows until the session stops or the process exits (it has no read timeout), and
/// the session id for `StopTracing`.
pub fn start_tracing(
    pid: u32,
    buffer_mb: u32,
    providers: &[message::Provider],
    timeout: Duration,
) -> Result<(UnixStream, u64), Error> {
    let (stream, payload) = command(
        pid,
        &message::collect_tracing(buffer_mb, providers)?,
        timeout,
    )?;
    let id = message::u64_at(&payload, 0).ok_or_else(|| {
        Error::Protocol(format!(
            "CollectTracing reply has a {}-byte payload, expected a u64 session id",
            payload.len()
        ))
    })?;
    stream.set_read_timeout(None).map_err(|e| Error::Io {
        context: "cannot clear the timeout of the event stream".into(),
        source: e,
    })?;
    Ok((stream, id))
}

/// Stops EventPipe session `session` in `pid` (`StopTracing`): the runtime writes the
/// session's rundown and ends its stream.
pub fn stop_tracing(pid: u32, session: u64) -> Result<(), Error> {
    command(pid, &message::stop_tracing(session)?, REPLY_TIMEOUT).map(|_| ())
}
