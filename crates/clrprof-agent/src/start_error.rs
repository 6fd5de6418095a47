//! Why the agent could not start a session, with the cause where there is one. The runtime
//! gets only an HRESULT; the tests and the agent's own messages get the rest.

use std::io;

/// Why a session did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `Initialize` or `InitializeForAttach` came while a session runs.
    #[error("initialized twice")]
    InitializedTwice,
    /// Export mode's state was already taken.
    #[error("export mode started twice")]
    ExportStartedTwice,
    /// An export variable is wrong (said on standard error already).
    #[error(transparent)]
    ExportSettings(#[from] clrprof_trace::config::SettingsError),
    /// Attached in export mode without any export variable.
    #[error("attached in export mode without export settings")]
    NoExportSettings,
    /// Neither `CLRPROF_SESSION` nor `CLRPROF_OUTPUT` says where the trace goes.
    #[error("neither CLRPROF_SESSION nor CLRPROF_OUTPUT is set")]
    NoDestination,
    /// The CLI's socket needs Unix sockets.
    #[error("{path} is a Unix socket, which this system lacks; use CLRPROF_OUTPUT")]
    NoUnixSockets {
        /// The socket's path.
        path: String,
    },
    /// The CLI's socket could not be reached.
    #[error("cannot connect to the clrprof CLI at {path}")]
    Connect {
        /// The socket's path.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The connection could not be shared between the writer and the control thread.
    #[error("cannot share the connection to the clrprof CLI")]
    ShareConnection(#[source] io::Error),
    /// The hello could not be sent.
    #[error("cannot introduce the process to the clrprof CLI")]
    Introduce(#[source] io::Error),
    /// The CLI did not answer the hello (in time).
    #[error("no answer from the clrprof CLI")]
    NoVerdict(#[source] io::Error),
    /// The CLI's process filter leaves this process out.
    #[error("the clrprof CLI's process filter leaves this process out")]
    LeftOut,
    /// The CLI answered with a byte this agent does not know.
    #[error("the clrprof CLI answered {0}, which this agent does not know")]
    UnknownVerdict(u8),
    /// The trace file could not be created.
    #[error("cannot create {path}")]
    CreateOutput {
        /// The file's path.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The trace header could not be written.
    #[error("cannot write the trace header")]
    WriteHeader(#[source] io::Error),
}

impl StartError {
    /// The `io::ErrorKind` behind it, if an I/O operation failed.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            StartError::Connect { source, .. }
            | StartError::CreateOutput { source, .. }
            | StartError::ShareConnection(source)
            | StartError::Introduce(source)
            | StartError::NoVerdict(source)
            | StartError::WriteHeader(source) => Some(source.kind()),
            _ => None,
        }
    }
}

impl From<StartError> for clrprof_sdk::Error {
    fn from(e: StartError) -> Self {
        clrprof_sdk::Error::profiler("clrprof agent: start", e)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_missing_socket_keeps_its_kind_and_says_where_and_why() {
        let path = "/nonexistent-clrprof-dir/session.sock";
        let source = std::os::unix::net::UnixStream::connect(path).unwrap_err();
        let cause = source.to_string();
        let error = StartError::Connect {
            path: path.into(),
            source,
        };
        assert_eq!(error.io_kind(), Some(io::ErrorKind::NotFound));
        let sdk: clrprof_sdk::Error = error.into();
        assert_eq!(sdk.hresult().0, clrprof_sdk::sys::hresult::E_FAIL);
        assert_eq!(
            sdk.to_string(),
            format!("clrprof agent: start: cannot connect to the clrprof CLI at {path}: {cause}")
        );
        let clrprof_sdk::Error::Profiler { source, .. } = &sdk else {
            panic!("not a profiler failure: {sdk:?}");
        };
        let start = source.downcast_ref::<StartError>().expect("a StartError");
        assert_eq!(start.io_kind(), Some(io::ErrorKind::NotFound));
        assert_eq!(sdk, sdk.clone());
        assert_ne!(sdk, clrprof_sdk::Error::from(StartError::LeftOut));
    }
}
