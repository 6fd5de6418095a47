//! The runtime's own EventPipe sampler in a running process, started as `dotnet-trace collect`
//! does over the diagnostics IPC protocol (the client is `clrprof-ipc`): start the session,
//! drain the event stream, stop the session.
//!
//! - CollectTracing (`0x02/0x02`): u32 circular buffer MB, u32 format (1 = nettrace), then the
//!   providers (u32 count; per provider u64 keywords, u32 level, name, filter arguments).
//!   Strings are a u32 count of UTF-16 units including the terminating NUL, then the units;
//!   a count of 0 is an absent string. The OK reply carries a u64 session id, after which the
//!   nettrace stream follows on the same connection until the session ends.
//! - StopTracing (`0x02/0x01`) with the u64 session id, on a second connection; the runtime
//!   writes the rundown, ends the stream and closes the first connection.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clrprof_ipc::Provider;
use clrprof_ipc::client::{command, start_tracing};
use clrprof_ipc::message::{self, u64_at};

/// Circular buffer size `dotnet-trace` uses by default.
const BUFFER_MB: u32 = 256;

/// How long a command reply, or a pause in the event stream, may take.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

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
        let (stream, id) =
            start_tracing(pid, BUFFER_MB, providers, IO_TIMEOUT).context("CollectTracing")?;
        // The stream may pause for as long as the program does not write events.
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
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
            let (_, payload) = command(self.pid, &message::stop_tracing(self.id)?, IO_TIMEOUT)
                .context("StopTracing")?;
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
