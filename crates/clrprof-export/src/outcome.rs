//! What became of a request: accepted, partly accepted, refused (an HTTP status or a gRPC
//! status) or unreachable, and which of those are worth sending again; with the helpers both
//! wire forms use to tell why (TLS, the kind of an I/O error, an error body's message).

use std::fmt;
use std::time::Duration;

/// Why a backend could not be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// The host name did not resolve.
    Dns,
    /// The connection was refused or could not be made.
    Connect,
    /// The TLS handshake failed.
    Tls,
    /// No complete answer within the timeout.
    Timeout,
    /// The connection broke, or the answer was not HTTP (or not gRPC).
    Io,
}

/// How a backend that answered said no.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// An HTTP error status.
    Http(u16),
    /// A gRPC status other than OK.
    Grpc(tonic::Code),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Http(status) => write!(f, "HTTP {status}"),
            Refusal::Grpc(code) => write!(f, "gRPC status {code:?} ({})", *code as i32),
        }
    }
}

/// What became of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything was accepted.
    Accepted,
    /// OTLP's `partial_success`: some profiles were rejected (or a warning was given).
    PartiallyAccepted {
        /// How many profiles were rejected.
        rejected: i64,
        /// The backend's message.
        message: String,
    },
    /// The backend answered no.
    Refused {
        /// Its status.
        status: Refusal,
        /// How long it asked to wait before a retry (HTTP `Retry-After` in seconds, gRPC
        /// `RetryInfo`), when it said.
        retry_after: Option<Duration>,
        /// The start of the response body, or the gRPC status message.
        message: String,
    },
    /// No answer.
    Unreachable {
        /// Why.
        why: Unreachable,
        /// The client's error text.
        message: String,
    },
}

impl Outcome {
    /// Whether sending the same request later may succeed (OTLP's rules): no answer; HTTP
    /// 429, 502, 503 or 504; gRPC `UNAVAILABLE`, `CANCELLED`, `DEADLINE_EXCEEDED`, `ABORTED`,
    /// `OUT_OF_RANGE`, `DATA_LOSS`, and `RESOURCE_EXHAUSTED` when the server said when to
    /// retry (without that it is a limit the request will meet again).
    pub fn is_retryable(&self) -> bool {
        match self {
            Outcome::Accepted | Outcome::PartiallyAccepted { .. } => false,
            Outcome::Refused {
                status: Refusal::Http(status),
                ..
            } => matches!(status, 429 | 502 | 503 | 504),
            Outcome::Refused {
                status: Refusal::Grpc(code),
                retry_after,
                ..
            } => match code {
                tonic::Code::Unavailable
                | tonic::Code::Cancelled
                | tonic::Code::DeadlineExceeded
                | tonic::Code::Aborted
                | tonic::Code::OutOfRange
                | tonic::Code::DataLoss => true,
                tonic::Code::ResourceExhausted => retry_after.is_some(),
                _ => false,
            },
            Outcome::Unreachable { .. } => true,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Accepted => write!(f, "accepted"),
            Outcome::PartiallyAccepted { rejected, message } => {
                write!(f, "partially accepted: {rejected} rejected: {message}")
            }
            Outcome::Refused {
                status, message, ..
            } => write!(f, "refused with {status}: {message}"),
            Outcome::Unreachable { why, message } => write!(f, "unreachable ({why:?}): {message}"),
        }
    }
}

/// Anything that sends encoded requests (the exporter; a fake in tests).
pub trait Sender {
    /// Sends one encoded request.
    fn send(&self, request: &[u8]) -> Outcome;
}

/// Whether an error is rustls's (a failed handshake or certificate check), anywhere in its
/// chain of sources.
#[cfg(unix)]
pub(crate) fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.is::<rustls::Error>() {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io
                .get_ref()
                .is_some_and(|inner| inner.is::<rustls::Error>())
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Without TLS (not Unix) no error is a TLS one.
#[cfg(not(unix))]
pub(crate) fn is_tls(_: &(dyn std::error::Error + 'static)) -> bool {
    false
}

/// What an I/O error's kind says of the backend.
pub(crate) fn unreachable_kind(e: &std::io::Error) -> Unreachable {
    match e.kind() {
        _ if is_tls(e) => Unreachable::Tls,
        std::io::ErrorKind::ConnectionRefused
        | std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted
        | std::io::ErrorKind::NotConnected
        | std::io::ErrorKind::AddrNotAvailable => Unreachable::Connect,
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Unreachable::Timeout,
        _ => Unreachable::Io,
    }
}

/// `google.rpc.Status`: the body of an OTLP/HTTP error in protobuf, and gRPC's status details.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<Any>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// The readable text of an error response: a protobuf `Status`'s message, else the body as
/// text.
pub(crate) fn error_message(body: &[u8], protobuf: bool) -> String {
    if protobuf && let Ok(status) = <RpcStatus as prost::Message>::decode(body) {
        return status.message;
    }
    String::from_utf8_lossy(body).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn which_outcomes_are_retried() {
        let refused = |status| Outcome::Refused {
            status: Refusal::Http(status),
            retry_after: None,
            message: String::new(),
        };
        assert!(refused(429).is_retryable());
        let grpc = |code, retry_after| Outcome::Refused {
            status: Refusal::Grpc(code),
            retry_after,
            message: String::new(),
        };
        assert!(grpc(tonic::Code::Unavailable, None).is_retryable());
        assert!(!grpc(tonic::Code::ResourceExhausted, None).is_retryable());
        assert!(grpc(tonic::Code::ResourceExhausted, Some(Duration::from_secs(1))).is_retryable());
        assert!(!grpc(tonic::Code::InvalidArgument, None).is_retryable());
        assert!(!grpc(tonic::Code::Unauthenticated, None).is_retryable());
        assert!(refused(503).is_retryable());
        assert!(!refused(400).is_retryable());
        assert!(!refused(401).is_retryable());
        assert!(!Outcome::Accepted.is_retryable());
        assert!(
            Outcome::Unreachable {
                why: Unreachable::Dns,
                message: String::new()
            }
            .is_retryable()
        );
    }

    #[test]
    fn error_bodies_are_read_as_status_or_text() {
        use prost::Message;
        let status = RpcStatus {
            code: 3,
            message: "proto: illegal wireType".into(),
            details: Vec::new(),
        }
        .encode_to_vec();
        assert_eq!(error_message(&status, true), "proto: illegal wireType");
        assert_eq!(error_message(b" busy \n", false), "busy");
    }
}
