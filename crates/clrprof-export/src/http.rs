//! The HTTP wire form: OTLP/HTTP protobuf (gzip'd body) and Pyroscope's push API, posted with
//! ureq and one timeout for the whole exchange.

use std::io::Read;
use std::time::Duration;

use crate::otlp;
use crate::outcome::{Outcome, Refusal, Unreachable, error_message, is_tls, unreachable_kind};
use crate::pyroscope;
use crate::settings::{
    ExportConfig, MAX_RESPONSE_BYTES, OTLP_PROFILES_PATH, PYROSCOPE_PUSH_PATH, Protocol,
};

/// Posts requests to one URL.
pub(crate) struct HttpClient {
    agent: ureq::Agent,
    url: String,
}

impl HttpClient {
    /// A client for `config` (OTLP/HTTP or Pyroscope's push).
    pub(crate) fn new(config: &ExportConfig) -> HttpClient {
        let path = match config.protocol {
            Protocol::PyroscopePush => PYROSCOPE_PUSH_PATH,
            Protocol::OtlpHttp | Protocol::OtlpGrpc => OTLP_PROFILES_PATH,
        };
        let url = format!("{}{path}", config.endpoint.trim_end_matches('/'));
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("clrprof/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        HttpClient { agent, url }
    }

    /// The URL requests are posted to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Posts one encoded request.
    pub(crate) fn send(&self, config: &ExportConfig, request: &[u8]) -> Outcome {
        let mut post = self.agent.post(&self.url);
        let otlp = config.protocol != Protocol::PyroscopePush;
        let body = if otlp {
            post = post
                .header("Content-Type", "application/x-protobuf")
                .header("Content-Encoding", "gzip");
            pyroscope::gzip(request)
        } else {
            post = post.header("Content-Type", "application/proto");
            request.to_vec()
        };
        if let Some(auth) = &config.auth {
            post = post.header("Authorization", auth.header_value());
        }
        if let Some(tenant) = &config.tenant {
            post = post.header("X-Scope-OrgID", tenant);
        }
        let mut response = match post.send(&body[..]) {
            Ok(response) => response,
            Err(e) => return unreachable_from(e),
        };
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
            .take(MAX_RESPONSE_BYTES as u64)
            .read_to_end(&mut answer);
        if (200..300).contains(&status) {
            if let Err(e) = read {
                return Outcome::Unreachable {
                    why: match unreachable_kind(&e) {
                        Unreachable::Connect => Unreachable::Io,
                        why => why,
                    },
                    message: e.to_string(),
                };
            }
            // A body that is not a response message says nothing of a partial success: the
            // status accepted the request.
            if otlp && let Ok(Some((rejected, message))) = otlp::partial_success(&answer) {
                return Outcome::PartiallyAccepted { rejected, message };
            }
            return Outcome::Accepted;
        }
        let protobuf = response
            .headers()
            .get("Content-Type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-protobuf"));
        Outcome::Refused {
            status: Refusal::Http(status),
            retry_after,
            message: error_message(&answer, protobuf),
        }
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
        ureq::Error::Io(io) if is_tls(io) => Unreachable::Tls,
        ureq::Error::Io(io) => unreachable_kind(io),
        _ => Unreachable::Io,
    };
    Outcome::Unreachable {
        why,
        message: e.to_string(),
    }
}
