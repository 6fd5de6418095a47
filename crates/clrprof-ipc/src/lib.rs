//! A client for the .NET diagnostics IPC protocol (the runtime's diagnostics server, which
//! `dotnet-trace` and `dotnet-counters` talk to): finding the runtimes of this user, asking one
//! for its [`ProcessInfo`], loading a profiler into it with `AttachProfiler`, and the messages
//! of an EventPipe session.
//!
//! - [`message`]: the bytes (headers, strings, commands, replies), with unit tests on each
//!   layout.
//! - [`discovery`] (Unix): where a process's diagnostics socket is, also for processes in
//!   other mount namespaces (containers), through `/proc/PID/root`.
//! - [`client`] (Unix): one command per connection, and its reply.
//! - [`nettrace`]: a reader of the event stream an EventPipe session sends back.
#![forbid(unsafe_code)]

#[cfg(unix)]
pub mod client;
#[cfg(unix)]
pub mod discovery;
pub mod message;
pub mod nettrace;

use std::path::PathBuf;

pub use message::{ProcessInfo, Provider};

/// What can go wrong talking to a runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// There is no such process.
    #[error("there is no process {pid}")]
    NoSuchProcess {
        /// The process id asked for.
        pid: u32,
    },
    /// The process has no diagnostics socket.
    #[error(
        "process {pid} is not a .NET process (no diagnostics socket {}/dotnet-diagnostic-{nspid}-*-socket; \
         .NET Core 3.0 or later with the diagnostics server enabled has one)", dir.display()
    )]
    NotDotnet {
        /// The process id asked for.
        pid: u32,
        /// Its id in its own pid namespace.
        nspid: u32,
        /// Where its socket would be.
        dir: PathBuf,
    },
    /// The process belongs to someone else, or its files cannot be read.
    #[error("no permission to reach process {pid} ({what}); run clrprof as the process's user")]
    Permission {
        /// The process id asked for.
        pid: u32,
        /// What could not be read or connected to.
        what: String,
    },
    /// Reading or writing the socket failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The runtime closed the connection without a reply (it probably exited).
    #[error("the runtime closed the connection without replying (did the process exit?)")]
    Closed,
    /// The runtime refused the command.
    #[error("the runtime refused the command: {}", describe_hresult(*hresult))]
    Refused {
        /// Its HRESULT.
        hresult: u32,
    },
    /// The bytes do not follow the protocol.
    #[error("diagnostics protocol error: {0}")]
    Protocol(String),
}

/// An HRESULT the diagnostics server or the profiling API returns, explained.
pub fn describe_hresult(hresult: u32) -> String {
    use message::*;
    let text = match hresult {
        CORPROF_E_PROFILER_ALREADY_ACTIVE => {
            "a profiler is already loaded in this process (CORPROF_E_PROFILER_ALREADY_ACTIVE)"
        }
        CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER => {
            "not allowed for a profiler that attached to a running process \
             (CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER)"
        }
        CORPROF_E_RUNTIME_UNINITIALIZED => {
            "the runtime has not finished starting (CORPROF_E_RUNTIME_UNINITIALIZED)"
        }
        CORPROF_E_PROFILER_NOT_ATTACHABLE => {
            "the profiler does not support attaching (CORPROF_E_PROFILER_NOT_ATTACHABLE)"
        }
        CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC => {
            "timed out waiting for a concurrent GC (CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC)"
        }
        DS_IPC_E_UNKNOWN_COMMAND => {
            "the runtime does not know this command; it is too old for it (DS_IPC_E_UNKNOWN_COMMAND)"
        }
        0x8007_0057 => "invalid argument (E_INVALIDARG)",
        0x8000_4005 => "unspecified failure (E_FAIL)",
        _ => "",
    };
    if text.is_empty() {
        format!("HRESULT {hresult:#010x}")
    } else {
        format!("{text}, HRESULT {hresult:#010x}")
    }
}
