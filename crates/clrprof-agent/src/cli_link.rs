//! The reading half of a connection to the CLI: what the CLI says to the agent after the
//! record stream started (a launched agent: the news of its event sessions; an attached one:
//! the request to detach).

use std::time::Duration;

/// The reading half of the connection to the CLI.
#[cfg(unix)]
pub type FromCli = std::os::unix::net::UnixStream;
/// Connections to the CLI need Unix sockets.
#[cfg(not(unix))]
pub enum FromCli {}

/// What one read of [`read_byte`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// The CLI sent this byte.
    Byte(u8),
    /// Nothing came in the time given.
    Nothing,
    /// The CLI closed its side, went away, or the connection failed.
    Closed,
}

/// Reads the CLI's next byte, waiting at most `timeout` (`None`: as long as it takes).
#[cfg(unix)]
pub fn read_byte(from_cli: &FromCli, timeout: Option<Duration>) -> Read {
    use std::io::ErrorKind;
    use std::io::Read as _;
    // A zero timeout is refused by the socket: it would mean no timeout at all.
    if timeout.is_some_and(|t| t.is_zero()) {
        return Read::Nothing;
    }
    if from_cli.set_read_timeout(timeout).is_err() {
        return Read::Closed;
    }
    let mut byte = [0u8; 1];
    let mut r = from_cli;
    loop {
        return match r.read(&mut byte) {
            Ok(1) => Read::Byte(byte[0]),
            Ok(_) => Read::Closed,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Read::Nothing
            }
            Err(_) => Read::Closed,
        };
    }
}

/// Connections to the CLI need Unix sockets.
#[cfg(not(unix))]
pub fn read_byte(from_cli: &FromCli, _timeout: Option<Duration>) -> Read {
    match *from_cli {}
}
