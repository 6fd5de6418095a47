//! The exporter's HTTP exchanges against small servers on loopback that answer as a backend
//! in trouble would: what is sent (path, headers, body) and the typed outcome of each answer.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clrprof_export::otlp;
use clrprof_export::pyroscope::PushRequest;
use clrprof_export::{
    Auth, ExportConfig, Exporter, Outcome, Protocol, Refusal, Sender, Unreachable,
};
use common::{period, resource};
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesPartialSuccess, ExportProfilesServiceResponse,
};
use prost::Message;

/// One request as the server saw it.
#[derive(Debug)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        request_line: request_line.trim_end().to_string(),
        headers,
        body,
    })
}

/// A server that takes one request and answers `status`, `headers` and `body` (None: never
/// answers, holding the connection for `hold`). Returns its base URL and what it saw.
fn serve_once(
    status: u16,
    headers: &'static str,
    body: Vec<u8>,
    answer: bool,
) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let seen = read_request(&stream);
        if answer {
            let head = format!(
                "HTTP/1.1 {status} X\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
        if let Some(seen) = seen {
            let _ = tx.send(seen);
        }
        if !answer {
            std::thread::sleep(Duration::from_secs(10));
        }
    });
    (url, rx)
}

fn exporter(endpoint: String, protocol: Protocol, auth: Option<Auth>) -> Exporter {
    Exporter::new(ExportConfig {
        endpoint,
        protocol,
        auth,
        tenant: Some("team-a".into()),
        timeout: Duration::from_millis(1500),
    })
}

#[test]
fn otlp_is_gzipped_protobuf_with_the_authentication_header() {
    let (url, seen) = serve_once(200, "", Vec::new(), true);
    let auth = Auth::Bearer("s3cret".into());
    let outcome = exporter(url, Protocol::OtlpHttp, Some(auth)).export(&period(), &resource());
    assert_eq!(outcome, Outcome::Accepted);
    let seen = seen.recv().unwrap();
    assert_eq!(seen.request_line, "POST /v1development/profiles HTTP/1.1");
    assert_eq!(seen.header("content-type"), Some("application/x-protobuf"));
    assert_eq!(seen.header("content-encoding"), Some("gzip"));
    assert_eq!(seen.header("authorization"), Some("Bearer s3cret"));
    let mut body = Vec::new();
    flate2::read::GzDecoder::new(&seen.body[..])
        .read_to_end(&mut body)
        .unwrap();
    assert_eq!(body, otlp::encode(&period(), &resource()));
}

#[test]
fn pyroscope_push_is_application_proto_with_the_tenant() {
    let (url, seen) = serve_once(200, "", Vec::new(), true);
    let auth = Auth::Basic {
        user: "u".into(),
        password: "p".into(),
    };
    let outcome = exporter(url, Protocol::PyroscopePush, Some(auth)).export(&period(), &resource());
    assert_eq!(outcome, Outcome::Accepted);
    let seen = seen.recv().unwrap();
    assert_eq!(
        seen.request_line,
        "POST /push.v1.PusherService/Push HTTP/1.1"
    );
    assert_eq!(seen.header("content-type"), Some("application/proto"));
    assert_eq!(seen.header("content-encoding"), None);
    assert_eq!(seen.header("authorization"), Some("Basic dTpw"));
    assert_eq!(seen.header("x-scope-orgid"), Some("team-a"));
    let push = PushRequest::decode(&seen.body[..]).unwrap();
    assert_eq!(push.series.len(), 1);
    assert_eq!(push.series[0].labels[0].value, "process_cpu");
}

#[test]
fn a_partial_success_is_reported_with_its_count_and_message() {
    let answer = ExportProfilesServiceResponse {
        partial_success: Some(ExportProfilesPartialSuccess {
            rejected_profiles: 1,
            error_message: "one profile had no sample type".into(),
        }),
    }
    .encode_to_vec();
    let (url, _seen) = serve_once(
        200,
        "Content-Type: application/x-protobuf\r\n",
        answer,
        true,
    );
    let outcome = exporter(url, Protocol::OtlpHttp, None).export(&period(), &resource());
    assert_eq!(
        outcome,
        Outcome::PartiallyAccepted {
            rejected: 1,
            message: "one profile had no sample type".into()
        }
    );
    assert!(!outcome.is_retryable());
}

#[test]
fn overload_is_refused_and_retryable_with_its_retry_after() {
    let (url, _seen) = serve_once(429, "Retry-After: 7\r\n", b"slow down".to_vec(), true);
    let outcome = exporter(url, Protocol::OtlpHttp, None).export(&period(), &resource());
    assert_eq!(
        outcome,
        Outcome::Refused {
            status: Refusal::Http(429),
            retry_after: Some(Duration::from_secs(7)),
            message: "slow down".into()
        }
    );
    assert!(outcome.is_retryable());

    let (url, _seen) = serve_once(503, "", Vec::new(), true);
    let outcome = exporter(url, Protocol::PyroscopePush, None).export(&period(), &resource());
    assert_eq!(
        outcome,
        Outcome::Refused {
            status: Refusal::Http(503),
            retry_after: None,
            message: String::new()
        }
    );
    assert!(outcome.is_retryable());
}

#[test]
fn a_backend_that_never_answers_times_out_within_the_timeout() {
    let (url, _seen) = serve_once(200, "", Vec::new(), false);
    let start = Instant::now();
    let outcome = exporter(url, Protocol::OtlpHttp, None).export(&period(), &resource());
    let took = start.elapsed();
    match &outcome {
        Outcome::Unreachable { why, .. } => assert_eq!(*why, Unreachable::Timeout, "{outcome}"),
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_millis(3000),
        "{took:?}"
    );
    assert!(outcome.is_retryable());
}

#[test]
fn a_closed_port_is_unreachable_at_connect() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let outcome =
        exporter(format!("http://127.0.0.1:{port}"), Protocol::OtlpHttp, None).send(b"anything");
    match &outcome {
        Outcome::Unreachable { why, .. } => assert_eq!(*why, Unreachable::Connect, "{outcome}"),
        other => panic!("expected unreachable, got {other}"),
    }
}

#[test]
fn a_tls_handshake_with_a_plain_server_fails_as_tls() {
    // A server that answers the ClientHello with plain HTTP.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 512];
        let _ = stream.read(&mut buf);
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let outcome = exporter(
        format!("https://127.0.0.1:{port}"),
        Protocol::OtlpHttp,
        None,
    )
    .send(b"anything");
    match &outcome {
        Outcome::Unreachable { why, .. } => assert_eq!(*why, Unreachable::Tls, "{outcome}"),
        other => panic!("expected a TLS failure, got {other}"),
    }
}
