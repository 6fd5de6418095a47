//! Where and how profiles are sent: the protocols, their paths, the authentication header and
//! the exporter's configuration (shared by the exporter and its two wire forms).

use std::fmt;
use std::time::Duration;

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
}
