//! The gRPC wire form: OTLP's profiles service `Export`, called with tonic over one lazily
//! connected channel on a current-thread tokio runtime the client owns, so that a send blocks
//! the caller's thread as an HTTP one does and nothing runs between sends. The request is
//! gzip'd; the whole exchange (connecting included) has one timeout. A status the server gave
//! is a [`Refusal::Grpc`], with its `RetryInfo` delay when it gave one; a failure below gRPC
//! (no connection, TLS, no answer) is [`Outcome::Unreachable`]: the channel is wrapped in
//! [`Watched`], which keeps the transport's error with its causes (tonic keeps only its text
//! in the status it makes of it).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut};
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, Endpoint};

use crate::otlp;
use crate::outcome::{Outcome, Refusal, RpcStatus, Unreachable, is_tls, unreachable_kind};
use crate::settings::{ExportConfig, MAX_RESPONSE_BYTES, OTLP_GRPC_METHOD};

/// The type URL of `google.rpc.RetryInfo` in a status's details.
const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// Calls the profiles service of one endpoint.
pub(crate) struct GrpcClient {
    url: String,
    /// The runtime and the service, or why there are none (the reason every send returns).
    ready: Result<(tokio::runtime::Runtime, tonic::client::Grpc<Watched>), String>,
    /// The transport failure of the call under way, set by the service's [`Watched`].
    failure: Failure,
}

/// What the last call's transport failure was, if it failed below gRPC.
type Failure = Arc<Mutex<Option<(Unreachable, String)>>>;

/// The channel, keeping the last transport failure in `failure`.
#[derive(Clone)]
pub(crate) struct Watched {
    channel: Channel,
    failure: Failure,
}

type ChannelRequest = http::Request<tonic::body::Body>;
type ChannelResponse = http::Response<tonic::body::Body>;

impl tower_service::Service<ChannelRequest> for Watched {
    type Response = ChannelResponse;
    type Error = tonic::transport::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<ChannelResponse, tonic::transport::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let ready = self.channel.poll_ready(cx);
        if let Poll::Ready(Err(e)) = &ready {
            *lock(&self.failure) = Some(classify(e));
        }
        ready
    }

    fn call(&mut self, request: ChannelRequest) -> Self::Future {
        let call = self.channel.call(request);
        let failure = Arc::clone(&self.failure);
        Box::pin(async move {
            let answer = call.await;
            if let Err(e) = &answer {
                *lock(&failure) = Some(classify(e));
            }
            answer
        })
    }
}

fn lock(failure: &Failure) -> std::sync::MutexGuard<'_, Option<(Unreachable, String)>> {
    failure.lock().unwrap_or_else(|e| e.into_inner())
}

impl GrpcClient {
    /// A client for `config`'s endpoint; connects at the first send.
    pub(crate) fn new(config: &ExportConfig) -> GrpcClient {
        let endpoint = config.endpoint.trim_end_matches('/').to_string();
        let failure = Failure::default();
        GrpcClient {
            url: format!("{endpoint}{OTLP_GRPC_METHOD}"),
            ready: connect_lazily(endpoint, config.timeout, Arc::clone(&failure)),
            failure,
        }
    }

    /// The endpoint and the method's path.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Calls `Export` with one encoded `ExportProfilesServiceRequest`.
    pub(crate) fn send(&self, config: &ExportConfig, request: &[u8]) -> Outcome {
        let (runtime, service) = match &self.ready {
            Ok(ready) => ready,
            Err(why) => {
                return Outcome::Unreachable {
                    why: Unreachable::Io,
                    message: why.clone(),
                };
            }
        };
        let mut request = tonic::Request::new(request.to_vec());
        if let Some(auth) = &config.auth {
            let Ok(value) = auth.header_value().parse() else {
                return Outcome::Unreachable {
                    why: Unreachable::Io,
                    message: "the credentials are not valid in a header".into(),
                };
            };
            request.metadata_mut().insert("authorization", value);
        }
        let mut service = service.clone();
        let failure = &self.failure;
        *lock(failure) = None;
        let call = async {
            if let Err(e) = service.ready().await {
                return Err(tonic::Status::from_error(Box::new(e)));
            }
            let path = http::uri::PathAndQuery::from_static(OTLP_GRPC_METHOD);
            service.unary(request, path, RawBytes).await
        };
        let answer = runtime.block_on(async { tokio::time::timeout(config.timeout, call).await });
        if let Some((why, message)) = lock(failure).take() {
            return Outcome::Unreachable { why, message };
        }
        match answer {
            Err(_) => Outcome::Unreachable {
                why: Unreachable::Timeout,
                message: format!("no answer within {:?}", config.timeout),
            },
            Ok(Ok(response)) => match otlp::partial_success(response.get_ref()) {
                Ok(Some((rejected, message))) => Outcome::PartiallyAccepted { rejected, message },
                Ok(None) | Err(_) => Outcome::Accepted,
            },
            Ok(Err(status)) => Outcome::Refused {
                status: Refusal::Grpc(status.code()),
                retry_after: retry_delay(status.details()),
                message: status.message().to_string(),
            },
        }
    }
}

/// The runtime and a channel that connects at its first use.
fn connect_lazily(
    endpoint: String,
    timeout: Duration,
    failure: Failure,
) -> Result<(tokio::runtime::Runtime, tonic::client::Grpc<Watched>), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the gRPC client: {e}"))?;
    let https = endpoint.starts_with("https://");
    // The whole exchange's timeout is the caller's (around connecting and the call).
    let endpoint = Endpoint::from_shared(endpoint.clone())
        .map_err(|e| format!("{endpoint}: not a gRPC endpoint: {e}"))?
        .connect_timeout(timeout);
    #[cfg(unix)]
    let endpoint = if https {
        endpoint
            .tls_config(tonic::transport::ClientTlsConfig::new().with_webpki_roots())
            .map_err(|e| format!("cannot set up TLS: {e}"))?
    } else {
        endpoint
    };
    #[cfg(not(unix))]
    if https {
        return Err("TLS is not available on this platform".into());
    }
    let channel = {
        // The channel's worker task is spawned on this runtime; it runs while a send blocks.
        let _context = runtime.enter();
        endpoint.connect_lazy()
    };
    let watched = Watched { channel, failure };
    let service = tonic::client::Grpc::new(watched)
        .send_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(MAX_RESPONSE_BYTES);
    Ok((runtime, service))
}

/// What a transport failure says of the backend, and its text with its causes.
fn classify(e: &tonic::transport::Error) -> (Unreachable, String) {
    let mut why = None;
    let mut message = e.to_string();
    let mut next = std::error::Error::source(e);
    while let Some(e) = next {
        let text = e.to_string();
        if why.is_none() {
            if is_tls(e) {
                why = Some(Unreachable::Tls);
            } else if e.is::<tonic::TimeoutExpired>() {
                why = Some(Unreachable::Timeout);
            } else if let Some(io) = e.downcast_ref::<std::io::Error>() {
                why = Some(unreachable_kind(io));
            } else if text.starts_with("dns error") {
                // hyper's connector says so in words only.
                why = Some(Unreachable::Dns);
            }
        }
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        next = e.source();
    }
    (why.unwrap_or(Unreachable::Io), message)
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, prost::Message)]
struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    retry_delay: Option<ProtoDuration>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, PartialEq, prost::Message)]
struct ProtoDuration {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

/// The delay a status's details ask for (a `google.rpc.Status` with a `RetryInfo`), if any.
fn retry_delay(details: &[u8]) -> Option<Duration> {
    let status = <RpcStatus as prost::Message>::decode(details).ok()?;
    let info = status
        .details
        .iter()
        .find(|a| a.type_url == RETRY_INFO_TYPE)?;
    let delay = <RetryInfo as prost::Message>::decode(&info.value[..])
        .ok()?
        .retry_delay?;
    let seconds = u64::try_from(delay.seconds).ok()?;
    let nanos = u32::try_from(delay.nanos).ok()?;
    Some(Duration::new(seconds, nanos))
}

/// A codec that passes messages through as the bytes they already are.
#[derive(Clone, Copy, Debug, Default)]
struct RawBytes;

impl Codec for RawBytes {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawBytes;
    type Decoder = RawBytes;

    fn encoder(&mut self) -> RawBytes {
        RawBytes
    }

    fn decoder(&mut self) -> RawBytes {
        RawBytes
    }
}

impl Encoder for RawBytes {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawBytes {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let mut message = vec![0; src.remaining()];
        src.copy_to_slice(&mut message);
        Ok(Some(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Any;
    use prost::Message;

    fn details(delay: Option<ProtoDuration>) -> Vec<u8> {
        RpcStatus {
            code: 8,
            message: "slow down".into(),
            details: vec![
                Any {
                    type_url: "type.googleapis.com/google.rpc.DebugInfo".into(),
                    value: vec![1, 2, 3],
                },
                Any {
                    type_url: RETRY_INFO_TYPE.into(),
                    value: RetryInfo { retry_delay: delay }.encode_to_vec(),
                },
            ],
        }
        .encode_to_vec()
    }

    #[test]
    fn a_retry_delay_is_read_from_the_status_details() {
        let delay = ProtoDuration {
            seconds: 3,
            nanos: 500_000_000,
        };
        assert_eq!(
            retry_delay(&details(Some(delay))),
            Some(Duration::from_millis(3500))
        );
        assert_eq!(retry_delay(&details(None)), None);
        assert_eq!(retry_delay(b""), None);
        assert_eq!(retry_delay(b"\xff\xff"), None);
    }

    #[test]
    fn a_connection_refused_is_unreachable() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let config = ExportConfig {
            endpoint: format!("http://127.0.0.1:{port}"),
            protocol: crate::Protocol::OtlpGrpc,
            auth: None,
            tenant: None,
            timeout: Duration::from_secs(5),
        };
        let outcome = GrpcClient::new(&config).send(&config, b"");
        assert!(
            matches!(
                outcome,
                Outcome::Unreachable {
                    why: Unreachable::Connect,
                    ..
                }
            ),
            "{outcome:?}"
        );
    }
}
