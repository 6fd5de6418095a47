//! Sending a period, blocking on the caller's thread: OTLP/HTTP protobuf
//! (`POST <endpoint>/v1development/profiles`, gzip), OTLP over gRPC (the profiles service's
//! `Export`, gzip) or Pyroscope's push API (`POST <endpoint>/push.v1.PusherService/Push`,
//! `application/proto`), with an optional authentication header and one timeout for the whole
//! exchange. TLS (`https://` endpoints) through rustls with the Mozilla roots, on Unix
//! (elsewhere the crate builds without TLS and an `https://` endpoint is unreachable).
//!
//! This module holds what every protocol shares (the configuration, the outcomes, the
//! [`Exporter`]); [`crate::http`] and [`crate::grpc`] hold the two wire forms.

use std::fmt;
use std::time::Duration;

use crate::grpc::GrpcClient;
use crate::http::HttpClient;
use crate::period::PeriodProfiles;
use crate::resource::Resource;
use crate::{otlp, pyroscope};

/// The path OTLP/HTTP takes profiles at.
pub const OTLP_PROFILES_PATH: &str = "/v1development/profiles";
/// The path of Pyroscope's push API.
pub const PYROSCOPE_PUSH_PATH: &str = "/push.v1.PusherService/Push";
/// The gRPC method OTLP profiles are exported through.
pub const OTLP_GRPC_METHOD: &str =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
/// The timeout of one exchange unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes of a response body read (a partial success's message, an error text).
pub(crate) const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// What the backend speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies, gzip'd.
    OtlpHttp,
    /// OTLP over gRPC, gzip'd.
    OtlpGrpc,
    /// Pyroscope's `push.v1.PusherService/Push`.
    PyroscopePush,
}

/// An authentication header.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// `Authorization: Basic <base64(user:password)>`.
    Basic {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Secrets stay out of logs.
        match self {
            Auth::Bearer(_) => write!(f, "Bearer(..)"),
            Auth::Basic { user, .. } => write!(f, "Basic {{ user: {user:?}, .. }}"),
        }
    }
}

impl Auth {
    pub(crate) fn header_value(&self) -> String {
        match self {
            Auth::Bearer(token) => format!("Bearer {token}"),
            Auth::Basic { user, password } => {
                format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
            }
        }
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

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

/// Where and how profiles are sent.
#[derive(Clone, Debug)]
pub struct ExportConfig {
    /// The backend's base URL, e.g. `http://collector:4318` (OTLP/HTTP),
    /// `http://collector:4317` (OTLP/gRPC) or `https://pyroscope:4040`.
    pub endpoint: String,
    /// What it speaks.
    pub protocol: Protocol,
    /// An authentication header, if any.
    pub auth: Option<Auth>,
    /// Pyroscope's tenant (`X-Scope-OrgID`), if any.
    pub tenant: Option<String>,
    /// The timeout of one exchange, from connecting to the end of the answer.
    pub timeout: Duration,
}

/// The client of one protocol.
enum Client {
    Http(HttpClient),
    // Its runtime is large; one per exporter.
    Grpc(Box<GrpcClient>),
}

/// Encodes periods and sends them to one backend.
pub struct Exporter {
    client: Client,
    config: ExportConfig,
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("url", &self.url())
            .field("config", &self.config)
            .finish()
    }
}

impl Exporter {
    /// An exporter for `config`. Nothing is connected yet: the first send connects.
    pub fn new(config: ExportConfig) -> Exporter {
        let client = match config.protocol {
            Protocol::OtlpHttp | Protocol::PyroscopePush => Client::Http(HttpClient::new(&config)),
            Protocol::OtlpGrpc => Client::Grpc(Box::new(GrpcClient::new(&config))),
        };
        Exporter { client, config }
    }

    /// The URL requests are posted to (for gRPC, the endpoint and the method's path).
    pub fn url(&self) -> &str {
        match &self.client {
            Client::Http(c) => c.url(),
            Client::Grpc(c) => c.url(),
        }
    }

    /// The request for one period in the backend's protocol, ready for [`Sender::send`].
    pub fn encode(&self, period: &PeriodProfiles, resource: &Resource) -> Vec<u8> {
        match self.config.protocol {
            Protocol::OtlpHttp | Protocol::OtlpGrpc => otlp::encode(period, resource),
            Protocol::PyroscopePush => pyroscope::encode(period, resource),
        }
    }

    /// Encodes and sends one period.
    pub fn export(&self, period: &PeriodProfiles, resource: &Resource) -> Outcome {
        self.send(&self.encode(period, resource))
    }
}

impl Sender for Exporter {
    fn send(&self, request: &[u8]) -> Outcome {
        match &self.client {
            Client::Http(c) => c.send(&self.config, request),
            Client::Grpc(c) => c.send(&self.config, request),
        }
    }
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
    fn basic_authentication_is_base64() {
        let auth = Auth::Basic {
            user: "Aladdin".into(),
            password: "open sesame".into(),
        };
        assert_eq!(auth.header_value(), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(Auth::Bearer("t0k".into()).header_value(), "Bearer t0k");
        assert_eq!(format!("{:?}", Auth::Bearer("secret".into())), "Bearer(..)");
    }

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

    #[test]
    fn the_url_is_the_endpoint_and_the_protocol_path() {
        let exporter = Exporter::new(ExportConfig {
            endpoint: "http://127.0.0.1:4318/".into(),
            protocol: Protocol::OtlpHttp,
            auth: None,
            tenant: None,
            timeout: DEFAULT_TIMEOUT,
        });
        assert_eq!(
            exporter.url(),
            "http://127.0.0.1:4318/v1development/profiles"
        );
        let grpc = Exporter::new(ExportConfig {
            endpoint: "http://127.0.0.1:4317".into(),
            protocol: Protocol::OtlpGrpc,
            auth: None,
            tenant: None,
            timeout: DEFAULT_TIMEOUT,
        });
        assert_eq!(
            grpc.url(),
            "http://127.0.0.1:4317/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
        );
    }
}
