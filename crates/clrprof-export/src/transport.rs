//! Sending a period, blocking on the caller's thread: OTLP/HTTP protobuf
//! (`POST <endpoint>/v1development/profiles`, gzip), OTLP over gRPC (the profiles service's
//! `Export`, gzip) or Pyroscope's push API (`POST <endpoint>/push.v1.PusherService/Push`,
//! `application/proto`), with an optional authentication header and one timeout for the whole
//! exchange. TLS (`https://` endpoints) through rustls with the Mozilla roots, on Unix
//! (elsewhere the crate builds without TLS and an `https://` endpoint is unreachable).
//!
//! The [`Exporter`] picks the wire form: `crate::http` (ureq) or `crate::grpc` (tonic); what
//! they share is below them, in `crate::settings` and `crate::outcome` (re-exported here).

use std::fmt;

pub use crate::outcome::{Outcome, Refusal, Sender, Unreachable};
pub use crate::settings::{
    Auth, DEFAULT_TIMEOUT, ExportConfig, OTLP_GRPC_METHOD, OTLP_PROFILES_PATH, PYROSCOPE_PUSH_PATH,
    Protocol,
};

use crate::grpc::GrpcClient;
use crate::http::HttpClient;
use crate::period::PeriodProfiles;
use crate::resource::Resource;
use crate::{otlp, pyroscope};

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

#[cfg(test)]
mod tests {
    use super::*;
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
