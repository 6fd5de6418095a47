//! The exporter's gRPC exchanges against a small HTTP/2 server on loopback that answers as a
//! backend in trouble would: what is sent (method, headers, the gzip'd message) and the typed
//! outcome of each answer (OK with a partial success, UNAVAILABLE, RESOURCE_EXHAUSTED with
//! and without a retry delay, no answer at all).

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine;
use clrprof_export::otlp;
use clrprof_export::transport::OTLP_GRPC_METHOD;
use clrprof_export::{
    Auth, ExportConfig, Exporter, GrpcCode, Outcome, Protocol, Refusal, Sender, Unreachable,
};
use common::{period, resource};
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesPartialSuccess, ExportProfilesServiceResponse,
};
use prost::Message;

/// One call as the server saw it.
#[derive(Debug)]
struct Seen {
    path: String,
    headers: http::HeaderMap,
    /// The gRPC message's frame: compressed flag, length, message.
    body: Vec<u8>,
}

/// How the server answers.
#[derive(Clone)]
enum Answer {
    /// OK with this response message.
    Ok(Vec<u8>),
    /// A trailers-only error: the status code, its message and its details.
    Status(i32, &'static str, Option<Vec<u8>>),
    /// Accepts the connection and says nothing.
    Never,
}

/// A gRPC server that answers every call with `answer`. Returns its base URL and what it saw.
fn serve(answer: Answer) -> (String, mpsc::Receiver<Seen>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                if matches!(answer, Answer::Never) {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    return;
                }
                let Ok(mut connection) = h2::server::handshake(socket).await else {
                    continue;
                };
                // The connection is polled here while each call is answered on its own task.
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer_call(request, respond, answer.clone(), tx.clone()));
                }
            }
        });
    });
    (url, rx)
}

/// Reads one call's message and answers it.
async fn answer_call(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    answer: Answer,
    tx: mpsc::Sender<Seen>,
) {
    let (parts, mut body) = request.into_parts();
    let mut data = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let _ = tx.send(Seen {
        path: parts.uri.path().to_string(),
        headers: parts.headers,
        body: data,
    });
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc");
    match &answer {
        Answer::Ok(message) => {
            let mut send = respond
                .send_response(head.body(()).unwrap(), false)
                .unwrap();
            let mut frame = vec![0];
            frame.extend((message.len() as u32).to_be_bytes());
            frame.extend(message);
            send.send_data(frame.into(), false).unwrap();
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().unwrap());
            send.send_trailers(trailers).unwrap();
        }
        Answer::Status(code, message, details) => {
            let mut head = head
                .header("grpc-status", code.to_string())
                .header("grpc-message", *message);
            if let Some(details) = details {
                let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(details);
                head = head.header("grpc-status-details-bin", encoded);
            }
            respond.send_response(head.body(()).unwrap(), true).unwrap();
        }
        Answer::Never => unreachable!(),
    }
}

fn exporter(endpoint: String, auth: Option<Auth>) -> Exporter {
    Exporter::new(ExportConfig {
        endpoint,
        protocol: Protocol::OtlpGrpc,
        auth,
        tenant: None,
        timeout: Duration::from_millis(1500),
    })
}

/// `google.rpc.Status` with a `google.rpc.RetryInfo` of `seconds` (none: no details).
fn status_details(seconds: Option<i64>) -> Vec<u8> {
    // Hand-encoded: Status { code = 8 (field 1), details (field 3) = [Any { type_url (1),
    // value (2) = RetryInfo { retry_delay (1) = Duration { seconds (1) } } }] }.
    let mut retry_info = Vec::new();
    if let Some(s) = seconds {
        let duration = [0x08, s as u8];
        retry_info.extend([0x0a, duration.len() as u8]);
        retry_info.extend(duration);
    }
    let type_url = b"type.googleapis.com/google.rpc.RetryInfo";
    let mut any = vec![0x0a, type_url.len() as u8];
    any.extend(type_url);
    any.extend([0x12, retry_info.len() as u8]);
    any.extend(retry_info);
    let mut status = vec![0x08, 8, 0x1a, any.len() as u8];
    status.extend(any);
    status
}

#[test]
fn the_call_is_the_profiles_service_s_export_with_a_gzipped_message() {
    let response = ExportProfilesServiceResponse {
        partial_success: Some(ExportProfilesPartialSuccess {
            rejected_profiles: 2,
            error_message: "two too old".into(),
        }),
    }
    .encode_to_vec();
    let (url, seen) = serve(Answer::Ok(response));
    let outcome = exporter(url, Some(Auth::Bearer("t0k".into()))).export(&period(), &resource());
    assert_eq!(
        outcome,
        Outcome::PartiallyAccepted {
            rejected: 2,
            message: "two too old".into()
        }
    );
    let seen = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(seen.path, OTLP_GRPC_METHOD);
    let header = |name: &str| seen.headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("content-type"), Some("application/grpc"));
    assert_eq!(header("grpc-encoding"), Some("gzip"));
    assert_eq!(header("authorization"), Some("Bearer t0k"));
    // One frame, compressed, of the length it says.
    assert_eq!(seen.body[0], 1, "the compressed flag");
    let length = u32::from_be_bytes(seen.body[1..5].try_into().unwrap()) as usize;
    assert_eq!(seen.body.len(), 5 + length);
    let mut message = Vec::new();
    flate2::read::GzDecoder::new(&seen.body[5..])
        .read_to_end(&mut message)
        .unwrap();
    assert_eq!(message, otlp::encode(&period(), &resource()));
}

#[test]
fn unavailable_is_refused_and_retried() {
    let (url, _seen) = serve(Answer::Status(14, "overloaded", None));
    let outcome = exporter(url, None).send(b"");
    assert_eq!(
        outcome,
        Outcome::Refused {
            status: Refusal::Grpc(GrpcCode::Unavailable),
            retry_after: None,
            message: "overloaded".into(),
        }
    );
    assert!(outcome.is_retryable());
}

#[test]
fn resource_exhausted_is_retried_only_when_the_server_says_when() {
    let (url, _seen) = serve(Answer::Status(
        8,
        "slow down",
        Some(status_details(Some(3))),
    ));
    let outcome = exporter(url, None).send(b"");
    assert_eq!(
        outcome,
        Outcome::Refused {
            status: Refusal::Grpc(GrpcCode::ResourceExhausted),
            retry_after: Some(Duration::from_secs(3)),
            message: "slow down".into(),
        }
    );
    assert!(outcome.is_retryable());

    let (url, _seen) = serve(Answer::Status(8, "quota", Some(status_details(None))));
    let outcome = exporter(url, None).send(b"");
    assert!(
        matches!(
            outcome,
            Outcome::Refused {
                status: Refusal::Grpc(GrpcCode::ResourceExhausted),
                retry_after: None,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(!outcome.is_retryable());
}

#[test]
fn a_server_that_never_answers_times_out() {
    let (url, _seen) = serve(Answer::Never);
    let start = Instant::now();
    let outcome = exporter(url, None).send(b"");
    let took = start.elapsed();
    assert!(
        matches!(
            outcome,
            Outcome::Unreachable {
                why: Unreachable::Timeout,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_millis(3000),
        "{took:?}"
    );
    assert!(outcome.is_retryable());
}

#[test]
fn a_tls_handshake_with_a_plain_server_fails_as_tls() {
    let (url, _seen) = serve(Answer::Status(0, "", None));
    let url = url.replace("http://", "https://");
    let outcome = exporter(url, None).send(b"");
    assert!(
        matches!(
            outcome,
            Outcome::Unreachable {
                why: Unreachable::Tls,
                ..
            }
        ),
        "{outcome:?}"
    );
}
