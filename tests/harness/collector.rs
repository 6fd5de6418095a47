//! A real OpenTelemetry Collector for the tests: `cargo xtask setup` builds it with the
//! Collector's builder from the published Go modules listed here, all at one release, into
//! `.deps/otelcol-<version>/`. A test starts its own on free loopback ports with a profiles
//! pipeline (the feature gate `service.profilesSupport`): the OTLP receiver (HTTP and gRPC), the debug
//! exporter (detailed, to the Collector's stdout) and the OTLP/HTTP exporter, which forwards
//! what the Collector received, re-encoded from its own data model, to a receiver in the test
//! that keeps the request bodies.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::paths::workspace_root;
use crate::process::ChildGuard;

/// The Collector release built (its core modules; `v1.71.0` for the stable ones).
pub const COLLECTOR_VERSION: &str = "0.165.0";

/// The Go modules of the Collector's components, at [`COLLECTOR_VERSION`].
pub const COLLECTOR_MODULES: [(&str, &str); 3] = [
    (
        "receivers",
        "go.opentelemetry.io/collector/receiver/otlpreceiver",
    ),
    (
        "exporters",
        "go.opentelemetry.io/collector/exporter/debugexporter",
    ),
    (
        "exporters",
        "go.opentelemetry.io/collector/exporter/otlphttpexporter",
    ),
];

/// The name of the Collector's binary.
pub const COLLECTOR_BINARY: &str = "otelcol-clrprof";

/// Where `cargo xtask setup` puts the Collector.
pub fn collector_dir() -> PathBuf {
    workspace_root()
        .join(".deps")
        .join(format!("otelcol-{COLLECTOR_VERSION}"))
}

/// The Collector's binary.
pub fn collector_bin() -> PathBuf {
    collector_dir().join(COLLECTOR_BINARY)
}

/// A free TCP port on the loopback interface (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("cannot bind a loopback port")
        .port()
}

/// Request bodies a [`CaptureServer`] received, in order.
type Bodies = Arc<Mutex<Vec<Vec<u8>>>>;

/// A minimal HTTP/1.1 server on loopback that answers every request `200 OK` with an empty
/// body and keeps the request bodies.
#[derive(Debug)]
pub struct CaptureServer {
    port: u16,
    bodies: Bodies,
}

impl CaptureServer {
    /// Starts one on a free port (its thread lives as long as the test process).
    pub fn start() -> CaptureServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("cannot bind a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        let bodies: Bodies = Arc::default();
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        CaptureServer { port, bodies }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// How many requests came so far.
    pub fn received(&self) -> usize {
        self.bodies.lock().expect("not poisoned").len()
    }

    /// Waits until `n` bodies came, then returns all of them.
    ///
    /// # Panics
    /// If fewer came within `timeout`.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        loop {
            let bodies = self.bodies.lock().expect("not poisoned").clone();
            if bodies.len() >= n {
                return bodies;
            }
            assert!(
                Instant::now() < deadline,
                "{} request(s) received within {timeout:?}, {n} expected",
                bodies.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn serve(stream: TcpStream, bodies: &Bodies) {
    let mut reader = BufReader::new(stream.try_clone().expect("a clonable stream"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        bodies.lock().expect("not poisoned").push(body);
        let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n\
                      Content-Length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The loopback ports a Collector's OTLP receiver listens on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    /// OTLP/HTTP.
    pub http: u16,
    /// OTLP over gRPC.
    pub grpc: u16,
}

impl Ports {
    /// Two free ports.
    pub fn free() -> Ports {
        Ports {
            http: free_port(),
            grpc: free_port(),
        }
    }
}

/// A running Collector, killed when dropped.
#[derive(Debug)]
pub struct Collector {
    guard: ChildGuard,
    dir: tempfile::TempDir,
    ports: Ports,
    /// Where its OTLP/HTTP exporter forwards what it received.
    pub forwarded: CaptureServer,
}

impl Collector {
    /// Starts a Collector whose OTLP receiver listens on free loopback ports. A port found
    /// free can be taken by another test's server before the Collector binds it: then new
    /// ports are chosen (a few times).
    pub fn start() -> Collector {
        let mut attempts = 0;
        loop {
            match Collector::try_start_on(Ports::free()) {
                Ok(collector) => return collector,
                Err(log) if attempts < 4 && log.contains("address already in use") => {
                    attempts += 1;
                }
                Err(log) => panic!("the Collector exited before listening\n{log}"),
            }
        }
    }

    /// Starts a Collector whose OTLP receiver listens on `ports`, and waits until it accepts
    /// connections on both.
    ///
    /// # Panics
    /// If the binary is missing (run `cargo xtask setup`), or the Collector exits or does not
    /// listen within a minute.
    pub fn start_on(ports: Ports) -> Collector {
        Collector::try_start_on(ports)
            .unwrap_or_else(|log| panic!("the Collector exited before listening\n{log}"))
    }

    /// [`Self::start_on`], with the Collector's log as the error if it exits before listening.
    fn try_start_on(ports: Ports) -> Result<Collector, String> {
        let bin = collector_bin();
        assert!(
            bin.is_file(),
            "{} is missing; run `cargo xtask setup`",
            bin.display()
        );
        let forwarded = CaptureServer::start();
        let dir = crate::temp_dir();
        let config = dir.path().join("config.yaml");
        std::fs::write(&config, config_yaml(ports, &forwarded.endpoint()))
            .expect("cannot write the Collector's configuration");
        let open = |name: &str| {
            std::fs::File::create(dir.path().join(name)).expect("cannot create a log file")
        };
        let mut cmd = Command::new(&bin);
        cmd.arg(format!("--config={}", config.display()))
            .arg("--feature-gates=service.profilesSupport")
            .stdin(Stdio::null())
            .stdout(open("stdout.log"))
            .stderr(open("stderr.log"));
        let mut collector = Collector {
            guard: ChildGuard::spawn(&mut cmd),
            dir,
            ports,
            forwarded,
        };
        collector.wait_until_listening(Duration::from_secs(60))?;
        Ok(collector)
    }

    /// Waits until the Collector listens; its exit status and log if it exits first.
    fn wait_until_listening(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.guard.child_mut().try_wait() {
                return Err(format!("({status})\n{}", self.log()));
            }
            if self.log().contains("Everything is ready")
                && TcpStream::connect(("127.0.0.1", self.ports.http)).is_ok()
                && TcpStream::connect(("127.0.0.1", self.ports.grpc)).is_ok()
            {
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "the Collector did not listen on ports {:?} within {timeout:?}\n{}",
                self.ports,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its OTLP/HTTP receiver's base URL.
    pub fn otlp_http_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.http)
    }

    /// Its OTLP/gRPC receiver's base URL.
    pub fn otlp_grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.grpc)
    }

    /// The receiver's ports.
    pub fn ports(&self) -> Ports {
        self.ports
    }

    /// What the debug exporter printed so far (the Collector's stdout).
    pub fn debug_output(&self) -> String {
        read(&self.dir.path().join("stdout.log"))
    }

    /// The Collector's own log (its stderr).
    pub fn log(&self) -> String {
        read(&self.dir.path().join("stderr.log"))
    }

    /// Stops the Collector (killed with its process group).
    pub fn stop(&mut self) {
        self.guard.kill();
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The configuration: one profiles pipeline from the OTLP receiver (HTTP and gRPC) to the debug exporter
/// and to the OTLP/HTTP exporter (uncompressed, no queue and no retry, so that it forwards
/// before the receiver answers), no telemetry of its own.
fn config_yaml(ports: Ports, forward_to: &str) -> String {
    format!(
        "receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{http}
      grpc:
        endpoint: 127.0.0.1:{grpc}
exporters:
  debug:
    verbosity: detailed
    use_internal_logger: false
  otlp_http:
    endpoint: {forward_to}
    compression: none
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [debug, otlp_http]
",
        http = ports.http,
        grpc = ports.grpc,
    )
}
