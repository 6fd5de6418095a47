//! Sending a period over HTTP, blocking on the caller's thread: OTLP/HTTP protobuf
//! (`POST <endpoint>/v1development/profiles`, gzip) or Pyroscope's push API
//! (`POST <endpoint>/push.v1.PusherService/Push`, `application/proto`), with an optional
//! authentication header and one timeout for the whole exchange. TLS (`https://` endpoints)
//! through rustls with the Mozilla roots, on Unix (elsewhere the crate builds without TLS and
//! an `https://` endpoint is unreachable). OTLP over gRPC is not implemented yet.

use std::fmt;
use std::io::Read;
use std::time::Duration;

use crate::period::PeriodProfiles;
use crate::resource::Resource;
use crate::{otlp, pyroscope};

/// The path OTLP/HTTP takes profiles at.
pub const OTLP_PROFILES_PATH: &str = "/v1development/profiles";
/// The path of Pyroscope's push API.
pub const PYROSCOPE_PUSH_PATH: &str = "/push.v1.PusherService/Push";
/// The timeout of one exchange unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes of a response body read (a partial success's message, an error text).
const MAX_RESPONSE_BYTES: u64 = 64 * 1024;

/// What the backend speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies, gzip'd.
    OtlpHttp,
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
    fn header_value(&self) -> String {
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
    /// The connection broke, or the answer was not HTTP.
    Io,
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
    /// The backend answered with an HTTP error status.
    Refused {
        /// The status.
        status: u16,
        /// Its `Retry-After`, in seconds, when it gave one.
        retry_after: Option<Duration>,
        /// The start of the response body.
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
    /// Whether sending the same request later may succeed: no answer, or HTTP 429, 502, 503
    /// or 504 (OTLP's retryable statuses).
    pub fn is_retryable(&self) -> bool {
        match self {
            Outcome::Accepted | Outcome::PartiallyAccepted { .. } => false,
            Outcome::Refused { status, .. } => matches!(status, 429 | 502 | 503 | 504),
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
            } => write!(f, "refused with HTTP {status}: {message}"),
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
    /// The backend's base URL, e.g. `http://collector:4318` or `https://pyroscope:4040`.
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

/// Encodes periods and sends them to one backend.
pub struct Exporter {
    agent: ureq::Agent,
    url: String,
    config: ExportConfig,
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("url", &self.url)
            .field("config", &self.config)
            .finish()
    }
}

impl Exporter {
    /// An exporter for `config`.
    pub fn new(config: ExportConfig) -> Exporter {
        let path = match config.protocol {
            Protocol::OtlpHttp => OTLP_PROFILES_PATH,
            Protocol::PyroscopePush => PYROSCOPE_PUSH_PATH,
        };
        let url = format!("{}{path}", config.endpoint.trim_end_matches('/'));
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("clrprof/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Exporter { agent, url, config }
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request for one period in the backend's protocol, ready for [`Sender::send`].
    pub fn encode(&self, period: &PeriodProfiles, resource: &Resource) -> Vec<u8> {
        match self.config.protocol {
            Protocol::OtlpHttp => otlp::encode(period, resource),
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
        let mut post = self.agent.post(&self.url);
        let body = match self.config.protocol {
            Protocol::OtlpHttp => {
                post = post
                    .header("Content-Type", "application/x-protobuf")
                    .header("Content-Encoding", "gzip");
                pyroscope::gzip(request)
            }
            Protocol::PyroscopePush => {
                post = post.header("Content-Type", "application/proto");
                request.to_vec()
            }
        };
        if let Some(auth) = &self.config.auth {
            post = post.header("Authorization", auth.header_value());
        }
        if let Some(tenant) = &self.config.tenant {
            post = post.header("X-Scope-OrgID", tenant);
        }
        match post.send(&body[..]) {
            Ok(mut response) => {
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get("Retry-After")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let mut answer = Vec::new();
                let read = response
                    .body_mut()
                    .as_reader()
                    .take(MAX_RESPONSE_BYTES)
                    .read_to_end(&mut answer);
                if (200..300).contains(&status) {
                    if let Err(e) = read {
                        return unreachable_from_io(&e);
                    }
                    return match self.config.protocol {
                        // A body that is not a response message says nothing of a partial
                        // success: the status accepted the request.
                        Protocol::OtlpHttp => match otlp::partial_success(&answer) {
                            Ok(Some((rejected, message))) => {
                                Outcome::PartiallyAccepted { rejected, message }
                            }
                            Ok(None) | Err(_) => Outcome::Accepted,
                        },
                        Protocol::PyroscopePush => Outcome::Accepted,
                    };
                }
                let protobuf = response
                    .headers()
                    .get("Content-Type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.starts_with("application/x-protobuf"));
                Outcome::Refused {
                    status,
                    retry_after,
                    message: error_message(&answer, protobuf),
                }
            }
            Err(e) => unreachable_from(e),
        }
    }
}

/// Whether an I/O error is rustls's (a failed handshake or certificate check surfaces as one).
#[cfg(unix)]
fn is_tls(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
}

/// Without TLS (not Unix) no I/O error is a TLS one.
#[cfg(not(unix))]
fn is_tls(_: &std::io::Error) -> bool {
    false
}

/// `google.rpc.Status`, the body of an OTLP/HTTP error in protobuf.
#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// The readable text of an error response: a protobuf `Status`'s message, else the body as
/// text.
fn error_message(body: &[u8], protobuf: bool) -> String {
    if protobuf && let Ok(status) = <Status as prost::Message>::decode(body) {
        return status.message;
    }
    String::from_utf8_lossy(body).trim().to_string()
}

fn unreachable_from_io(e: &std::io::Error) -> Outcome {
    let why = match e.kind() {
        _ if is_tls(e) => Unreachable::Tls,
        std::io::ErrorKind::TimedOut => Unreachable::Timeout,
        _ => Unreachable::Io,
    };
    Outcome::Unreachable {
        why,
        message: e.to_string(),
    }
}

fn unreachable_from(e: ureq::Error) -> Outcome {
    let why = match &e {
        ureq::Error::HostNotFound => Unreachable::Dns,
        ureq::Error::ConnectionFailed => Unreachable::Connect,
        ureq::Error::Timeout(_) => Unreachable::Timeout,
        ureq::Error::Tls(_) | ureq::Error::TlsRequired => Unreachable::Tls,
        #[cfg(unix)]
        ureq::Error::Rustls(_) | ureq::Error::Pem(_) => Unreachable::Tls,
        ureq::Error::Io(io) => match io.kind() {
            _ if is_tls(io) => Unreachable::Tls,
            std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::NotConnected
            | std::io::ErrorKind::AddrNotAvailable => Unreachable::Connect,
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Unreachable::Timeout,
            _ => Unreachable::Io,
        },
        _ => Unreachable::Io,
    };
    Outcome::Unreachable {
        why,
        message: e.to_string(),
    }
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
            status,
            retry_after: None,
            message: String::new(),
        };
        assert!(refused(429).is_retryable());
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
        let status = Status {
            code: 3,
            message: "proto: illegal wireType".into(),
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
    }
}
