//! The exporter against a real OpenTelemetry Collector (built by `cargo xtask setup`, started
//! per test on free loopback ports with a profiles pipeline): what it receives is exactly what
//! was sent, as its debug exporter prints it and as its OTLP/HTTP exporter forwards it
//! (decoded here with the official generated messages of `opentelemetry-proto`); a malformed
//! request and a stopped Collector give the exporter's typed outcomes. Each over OTLP/HTTP and
//! over OTLP/gRPC.

use std::time::{Duration, Instant};

use clrprof_e2e::{Collector, otlp_attributes};
use clrprof_export::{
    ExportConfig, Exporter, Frame, GrpcCode, Outcome, PeriodProfiles, ProfileType, Protocol,
    QueueLimits, Refusal, Resource, RetryQueue, Sender, Unreachable,
};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use prost::Message;

const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

fn resource() -> Resource {
    Resource {
        service_name: "checkout".into(),
        service_version: Some("2.4.1".into()),
        host_name: "test-host".into(),
        process_pid: 4242,
        executable_name: "dotnet".into(),
        runtime_name: ".NET".into(),
        runtime_version: "8.0.4".into(),
        container_id: Some("ab".repeat(32)),
        labels: vec![("deployment.environment".into(), "e2e".into())],
    }
}

fn frame(function: &str) -> Frame {
    Frame::new(function, "Shop.dll")
}

/// A period with every profile type, known stacks and values.
fn period() -> PeriodProfiles {
    let main = frame("Shop.Program.Main()");
    let handle = frame("Shop.Orders.Handle(Order)").at("Orders.cs", 42);
    let price = frame("Shop.Pricing.Compute(Cart)");
    let concat = Frame::new(
        "System.String.Concat(string,string)",
        "System.Private.CoreLib.dll",
    );
    let wait = Frame::new(
        "System.Threading.Monitor.Enter(object)",
        "System.Private.CoreLib.dll",
    );
    let mut p = PeriodProfiles::new(1_764_230_400_000_000_000, 15_000_000_000, 1024);
    p.set_period(ProfileType::Cpu, ProfileType::Cpu.period(10_000_000));
    let add = |p: &mut PeriodProfiles, t, stack: &[&Frame], values: &[i64]| {
        let stack: Vec<Frame> = stack.iter().map(|f| (*f).clone()).collect();
        p.add(t, &stack, values).unwrap();
    };
    add(
        &mut p,
        ProfileType::Cpu,
        &[&main, &handle, &price],
        &[30_000_000],
    );
    add(
        &mut p,
        ProfileType::Cpu,
        &[&main, &handle, &price],
        &[20_000_000],
    );
    add(&mut p, ProfileType::Cpu, &[&main, &handle], &[10_000_000]);
    add(
        &mut p,
        ProfileType::Wall,
        &[&main, &handle, &wait],
        &[700_000_000],
    );
    add(
        &mut p,
        ProfileType::Allocations,
        &[&main, &handle, &concat],
        &[524_288, 12],
    );
    add(
        &mut p,
        ProfileType::Lock,
        &[&main, &handle, &wait],
        &[650_000_000, 3],
    );
    add(&mut p, ProfileType::Exceptions, &[&main, &price], &[2]);
    p
}

/// The profiles the Collector forwarded, readable: (sample type, unit, period, samples as
/// (function names root first, value)).
type Readable = Vec<(String, String, i64, Vec<(Vec<String>, i64)>)>;

fn readable(request: &ExportProfilesServiceRequest) -> Readable {
    let d = request.dictionary.as_ref().expect("a dictionary");
    let s = |i: i32| d.string_table[i as usize].clone();
    let mut out = Vec::new();
    for rp in &request.resource_profiles {
        for sp in &rp.scope_profiles {
            for p in &sp.profiles {
                let t = p.sample_type.expect("a sample type");
                let samples = p
                    .samples
                    .iter()
                    .map(|sample| {
                        let names = d.stack_table[sample.stack_index as usize]
                            .location_indices
                            .iter()
                            .rev()
                            .map(|&l| {
                                let line = &d.location_table[l as usize].lines[0];
                                s(d.function_table[line.function_index as usize].name_strindex)
                            })
                            .collect();
                        assert_eq!(sample.values.len(), 1);
                        (names, sample.values[0])
                    })
                    .collect();
                out.push((s(t.type_strindex), s(t.unit_strindex), p.period, samples));
            }
        }
    }
    out
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

fn exporter(endpoint: String, protocol: Protocol) -> Exporter {
    Exporter::new(ExportConfig {
        endpoint,
        protocol,
        auth: None,
        tenant: None,
        timeout: Duration::from_secs(10),
    })
}

/// The Collector's receiver for `protocol`.
fn endpoint(collector: &Collector, protocol: Protocol) -> String {
    match protocol {
        Protocol::OtlpHttp => collector.otlp_http_endpoint(),
        Protocol::OtlpGrpc => collector.otlp_grpc_endpoint(),
        Protocol::PyroscopePush => unreachable!("the Collector takes OTLP"),
    }
}

#[test]
fn the_collector_receives_exactly_what_was_sent_over_otlp_http() {
    the_collector_receives_exactly_what_was_sent(Protocol::OtlpHttp);
}

#[test]
fn the_collector_receives_exactly_what_was_sent_over_otlp_grpc() {
    the_collector_receives_exactly_what_was_sent(Protocol::OtlpGrpc);
}

fn the_collector_receives_exactly_what_was_sent(protocol: Protocol) {
    let collector = Collector::start();
    let outcome = exporter(endpoint(&collector, protocol), protocol).export(&period(), &resource());
    assert_eq!(outcome, Outcome::Accepted, "{}", collector.log());

    let forwarded = collector.forwarded.wait_for(1, FORWARD_TIMEOUT);
    assert_eq!(forwarded.len(), 1);
    let request = ExportProfilesServiceRequest::decode(&forwarded[0][..])
        .expect("the Collector forwards an ExportProfilesServiceRequest");

    let main = "Shop.Program.Main()";
    let handle = "Shop.Orders.Handle(Order)";
    let price = "Shop.Pricing.Compute(Cart)";
    let wait = "System.Threading.Monitor.Enter(object)";
    let concat = "System.String.Concat(string,string)";
    let s = |v: &str| v.to_string();
    let expected: Readable = vec![
        (
            s("cpu"),
            s("nanoseconds"),
            10_000_000,
            vec![
                (names(&[main, handle, price]), 50_000_000),
                (names(&[main, handle]), 10_000_000),
            ],
        ),
        (
            s("wall"),
            s("nanoseconds"),
            0,
            vec![(names(&[main, handle, wait]), 700_000_000)],
        ),
        (
            s("alloc_space"),
            s("bytes"),
            0,
            vec![(names(&[main, handle, concat]), 524_288)],
        ),
        (
            s("alloc_objects"),
            s("count"),
            0,
            vec![(names(&[main, handle, concat]), 12)],
        ),
        (
            s("delay"),
            s("nanoseconds"),
            0,
            vec![(names(&[main, handle, wait]), 650_000_000)],
        ),
        (
            s("contentions"),
            s("count"),
            0,
            vec![(names(&[main, handle, wait]), 3)],
        ),
        (
            s("exceptions"),
            s("count"),
            0,
            vec![(names(&[main, price]), 2)],
        ),
    ];
    assert_eq!(readable(&request), expected);

    let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
    for p in profiles {
        assert_eq!(p.time_unix_nano, 1_764_230_400_000_000_000);
        assert_eq!(p.duration_nano, 15_000_000_000);
    }
    let d = request.dictionary.as_ref().unwrap();
    // The module as the mapping, the file and line as the line.
    let handle_location = d
        .location_table
        .iter()
        .find(|l| {
            l.lines.first().is_some_and(|line| {
                d.string_table
                    [d.function_table[line.function_index as usize].name_strindex as usize]
                    == handle
            })
        })
        .expect("Handle's location");
    assert_eq!(handle_location.lines[0].line, 42);
    let function = &d.function_table[handle_location.lines[0].function_index as usize];
    assert_eq!(
        d.string_table[function.filename_strindex as usize],
        "Orders.cs"
    );
    let mapping = &d.mapping_table[handle_location.mapping_index as usize];
    assert_eq!(
        d.string_table[mapping.filename_strindex as usize],
        "Shop.dll"
    );

    // The Collector forwards the attributes by reference to the dictionary's strings (v1.10's
    // `key_strindex` and `string_value_strindex`), which the exporter sends inline.
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    let attributes = otlp_attributes(&d.string_table, &resource.attributes);
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let container = "ab".repeat(32);
    assert_eq!(
        attributes,
        pairs(&[
            ("service.name", "checkout"),
            ("service.version", "2.4.1"),
            ("host.name", "test-host"),
            ("process.pid", "4242"),
            ("process.executable.name", "dotnet"),
            ("process.runtime.name", ".NET"),
            ("process.runtime.version", "8.0.4"),
            ("container.id", &container),
            ("deployment.environment", "e2e"),
        ])
    );

    // The debug exporter's own account: every sample's values in order, the function names
    // in its string table, the resource attributes.
    let deadline = Instant::now() + FORWARD_TIMEOUT;
    while !collector.debug_output().contains("ResourceProfiles #0") {
        assert!(
            Instant::now() < deadline,
            "no debug output\n{}",
            collector.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = collector.debug_output();
    let values: Vec<&str> = output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Values: "))
        .collect();
    assert_eq!(
        values,
        [
            "[50000000]",
            "[10000000]",
            "[700000000]",
            "[524288]",
            "[12]",
            "[650000000]",
            "[3]",
            "[2]"
        ],
        "{output}"
    );
    let strings: Vec<&str> = output
        .lines()
        .skip_while(|l| l.trim() != "String table:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(str::trim)
        .collect();
    for name in [main, handle, price, wait, concat, "Shop.dll", "Orders.cs"] {
        assert!(strings.contains(&name), "{name} not in {strings:?}");
    }
    assert_eq!(output.matches("Profile #").count(), 7, "{output}");
    assert!(
        output.contains("-> service.name: Str(checkout)"),
        "{output}"
    );
    assert!(output.contains("-> process.pid: Int(4242)"), "{output}");
}

#[test]
fn a_malformed_request_is_refused_for_good_over_otlp_http() {
    // The Collector's google.rpc.Status, read from its protobuf body.
    a_malformed_request_is_refused_for_good(Protocol::OtlpHttp, Refusal::Http(400));
}

#[test]
fn a_malformed_request_is_refused_for_good_over_otlp_grpc() {
    // gRPC-Go's server says INTERNAL when it cannot decode a request (not retryable).
    a_malformed_request_is_refused_for_good(Protocol::OtlpGrpc, Refusal::Grpc(GrpcCode::Internal));
}

fn a_malformed_request_is_refused_for_good(protocol: Protocol, refusal: Refusal) {
    let collector = Collector::start();
    // Field 1 (resource_profiles) claims 100 bytes and has 3.
    let exporter = exporter(endpoint(&collector, protocol), protocol);
    let outcome = exporter.send(&[0x0a, 100, 1, 2, 3]);
    match &outcome {
        Outcome::Refused {
            status, message, ..
        } => {
            assert_eq!(*status, refusal, "{outcome}");
            assert!(message.contains("unexpected EOF"), "{outcome}");
        }
        other => panic!("expected a refusal, got {other}"),
    }
    assert!(!outcome.is_retryable());
    // Nothing of it went down the pipeline: the next good request is the first forwarded.
    assert_eq!(exporter.export(&period(), &resource()), Outcome::Accepted);
    let forwarded = collector.forwarded.wait_for(1, FORWARD_TIMEOUT);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(collector.forwarded.wait_for(1, FORWARD_TIMEOUT).len(), 1);
    let request = ExportProfilesServiceRequest::decode(&forwarded[0][..]).unwrap();
    assert_eq!(readable(&request).len(), 7);
}

#[test]
fn a_stopped_collector_is_unreachable_and_the_queue_retries_until_it_is_back_over_otlp_http() {
    a_stopped_collector_is_unreachable_and_the_queue_retries_until_it_is_back(Protocol::OtlpHttp);
}

#[test]
fn a_stopped_collector_is_unreachable_and_the_queue_retries_until_it_is_back_over_otlp_grpc() {
    a_stopped_collector_is_unreachable_and_the_queue_retries_until_it_is_back(Protocol::OtlpGrpc);
}

fn a_stopped_collector_is_unreachable_and_the_queue_retries_until_it_is_back(protocol: Protocol) {
    let mut collector = Collector::start();
    let ports = collector.ports();
    let exporter = exporter(endpoint(&collector, protocol), protocol);
    collector.stop();

    let outcome = exporter.export(&period(), &resource());
    match &outcome {
        Outcome::Unreachable { why, .. } => assert_eq!(*why, Unreachable::Connect, "{outcome}"),
        other => panic!("expected unreachable, got {other}"),
    }

    let mut queue = RetryQueue::new(QueueLimits {
        max_requests: 2,
        ..QueueLimits::default()
    });
    for _ in 0..3 {
        queue.push(exporter.encode(&period(), &resource()));
    }
    let t0 = Instant::now();
    let outcomes = queue.send_due(&exporter, t0);
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes[0].is_retryable());
    assert!(queue.next_attempt().is_some_and(|t| t > t0));
    assert_eq!(
        queue.counts().dropped_full,
        1,
        "the oldest of three, two fit"
    );

    let collector = Collector::start_on(ports);
    let later = queue.next_attempt().unwrap();
    let outcomes = queue.send_due(&exporter, later);
    assert_eq!(outcomes, [Outcome::Accepted, Outcome::Accepted]);
    let counts = queue.counts();
    assert_eq!((counts.accepted, counts.dropped()), (2, 1));
    assert_eq!(collector.forwarded.wait_for(2, FORWARD_TIMEOUT).len(), 2);
}
