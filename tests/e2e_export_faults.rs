//! Export mode against backends that fail: an endpoint nobody listens on, a Collector that
//! comes late or stops for two periods, a backend that accepts the connection and never
//! answers, over OTLP/HTTP and gRPC. The program's output and exit are unchanged, it waits at
//! most 2 s more at exit, and every period is accounted for in the agent's one line at exit
//! (delivered, dropped, waiting) and, once delivered, in the profiles' own counters.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use clrprof_e2e::{
    CaptureServer, Collector, Dotnet, OutputExt, Ports, compile, default_timeout, free_port,
};

mod export_common;
use export_common::*;

#[test]
fn an_endpoint_nobody_listens_on_costs_the_program_nothing_and_is_counted() {
    let program = compile("Continuous");
    let started = Instant::now();
    let plain = program.run(&["short"]);
    let plain_time = started.elapsed();
    plain.assert_success();
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let mut cmd = exported(
        &program,
        &["short"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PERIOD", "1"),
        ],
    );
    let started = Instant::now();
    let (output, _) = run(&mut cmd);
    let time = started.elapsed();
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout);
    // A refused connection fails at once; the last period's send is bounded by 2 s anyway.
    assert!(
        time < plain_time + Duration::from_secs(2),
        "{time:?} profiled, {plain_time:?} not"
    );
    // One line at exit: every period that had samples is accounted for, none delivered, every
    // send failed.
    let stderr = output.stderr_str();
    let (line, [periods, delivered, dropped, waiting, failed]) = exit_line(&stderr, &endpoint);
    assert!(periods >= 1, "{stderr}");
    assert_eq!(delivered, 0, "{stderr}");
    assert_eq!(dropped + waiting, periods, "{stderr}");
    assert!(failed >= 1, "{stderr}");
    assert!(
        line.contains("sends failed (last: unreachable (Connect)"),
        "{stderr}"
    );
}

#[test]
fn a_collector_that_comes_late_gets_the_waiting_periods_and_the_losses_are_counted_over_otlp_http()
{
    a_collector_that_comes_late_gets_the_waiting_periods_and_the_losses_are_counted(Otlp::Http);
}

#[test]
fn a_collector_that_comes_late_gets_the_waiting_periods_and_the_losses_are_counted_over_otlp_grpc()
{
    a_collector_that_comes_late_gets_the_waiting_periods_and_the_losses_are_counted(Otlp::Grpc);
}

fn a_collector_that_comes_late_gets_the_waiting_periods_and_the_losses_are_counted(otlp: Otlp) {
    let program = compile("Continuous");
    let ports = Ports::free();
    let endpoint = otlp.endpoint(ports);
    let mut cmd = exported(
        &program,
        &["busy", "10"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PROTOCOL", otlp.protocol()),
            ("CLRPROF_EXPORT_PERIOD", "1"),
            ("CLRPROF_EXPORT_PROFILES", "cpu"),
        ],
    );
    let child = spawn(&mut cmd);
    // Nobody listens for the first periods.
    std::thread::sleep(Duration::from_secs(3));
    let collector = Collector::start_on(ports);
    let (stderr, [periods, delivered, dropped, waiting, failed]) = busy_ended(child, &endpoint);
    assert!(failed >= 1, "{stderr}");
    assert!(delivered >= 1, "{stderr}");
    assert_eq!(delivered + dropped + waiting, periods, "{stderr}");
    // What the Collector got is what the agent counts as delivered; every profile says how many
    // periods were dropped before it, never more than the agent counted in the end.
    let bodies = settled(&collector);
    assert_eq!(bodies.len() as u64, delivered, "{stderr}");
    let (samples, _) = read(&bodies);
    assert!(samples.iter().all(|s| s.sample_type == "cpu"));
    for s in &samples {
        let said = s
            .attributes
            .get("clrprof.periods_dropped")
            .copied()
            .unwrap_or(0);
        assert!(said as u64 <= dropped, "{said} > {dropped}: {stderr}");
    }
    // (How much CPU the spinning got in its 10 s of wall time depends on the machine's load.)
    assert!(
        total(&samples, "cpu", |s| s.frames.last().map(String::as_str)
            == Some(SPIN))
            > 0
    );
}

#[test]
fn a_collector_stopped_for_two_periods_gets_them_later_and_the_program_is_unchanged() {
    let program = compile("Continuous");
    let mut first = Collector::start();
    let ports = first.ports();
    let endpoint = first.otlp_http_endpoint();
    let mut cmd = exported(
        &program,
        &["busy", "8"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PERIOD", "1"),
            ("CLRPROF_EXPORT_PROFILES", "cpu"),
        ],
    );
    let child = spawn(&mut cmd);
    // Up for the first periods, down for two, up again for the rest (on the same port).
    first.forwarded.wait_for(1, FORWARD_TIMEOUT);
    std::thread::sleep(Duration::from_millis(500));
    first.stop();
    std::thread::sleep(Duration::from_secs(2));
    let second = Collector::start_on(ports);
    let (stderr, [periods, delivered, dropped, waiting, failed]) = busy_ended(child, &endpoint);
    // The sends of the two periods failed while it was down; the queue (4 periods) kept them,
    // and the Collector that came back got them: none lost.
    assert!(failed >= 1, "{stderr}");
    assert_eq!((dropped, waiting), (0, 0), "{stderr}");
    assert_eq!(delivered, periods, "{stderr}");
    let before = first.forwarded.wait_for(1, FORWARD_TIMEOUT);
    let after = settled(&second);
    assert_eq!(
        (before.len() + after.len()) as u64,
        periods,
        "{} requests before the stop, {} after: {stderr}",
        before.len(),
        after.len()
    );
    assert!(after.len() >= 2, "{stderr}");
    let (samples, _) = read(&after);
    assert!(
        samples
            .iter()
            .all(|s| !s.attributes.contains_key("clrprof.periods_dropped")),
        "no profile says a period was lost"
    );
}

/// Runs `cmd` and says how long after the program printed its last line (`done`) it exited.
fn time_from_done_to_exit(cmd: &mut Command) -> (Output, Duration) {
    use std::io::{BufRead, BufReader};
    let mut child = spawn(cmd);
    let stdout = child.child_mut().stdout.take().unwrap();
    let done = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut at = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line == "done" {
                at = Some(Instant::now());
            }
            lines.push(line);
        }
        (lines, at)
    });
    let output = child.wait_with_output(default_timeout());
    let exited = Instant::now();
    let (lines, at) = done.join().unwrap();
    let at = at.unwrap_or_else(|| panic!("no `done` in {lines:?}\n{}", output.describe()));
    (output, exited - at)
}

#[test]
fn a_backend_that_never_answers_delays_the_exit_at_most_two_seconds_over_otlp_http() {
    a_backend_that_never_answers_delays_the_exit_at_most_two_seconds(Otlp::Http);
}

#[test]
fn a_backend_that_never_answers_delays_the_exit_at_most_two_seconds_over_otlp_grpc() {
    a_backend_that_never_answers_delays_the_exit_at_most_two_seconds(Otlp::Grpc);
}

fn a_backend_that_never_answers_delays_the_exit_at_most_two_seconds(otlp: Otlp) {
    let program = compile("Continuous");
    // Accepts every connection and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let (plain, plain_exit) = time_from_done_to_exit(program.command().arg("short"));
    plain.assert_success();
    let (output, exit) = time_from_done_to_exit(&mut exported(
        &program,
        &["short"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PROTOCOL", otlp.protocol()),
            ("CLRPROF_EXPORT_PERIOD", "1"),
        ],
    ));
    output.assert_success();
    // The last period's send gives up after 2 s; the runtime's own shutdown is the rest (and
    // a little scheduling on a loaded machine).
    assert!(
        exit <= plain_exit + Duration::from_millis(2_500),
        "exit took {exit:?} after the program's last line, {plain_exit:?} unprofiled"
    );
    let stderr = output.stderr_str();
    let (line, [periods, delivered, dropped, waiting, failed]) = exit_line(&stderr, &endpoint);
    assert_eq!(delivered, 0, "{stderr}");
    assert_eq!(dropped + waiting, periods, "{stderr}");
    assert!(failed >= 1, "{stderr}");
    assert!(line.contains("(last: unreachable (Timeout)"), "{stderr}");
}

#[test]
fn a_profile_the_runtime_cannot_give_is_said_once_when_asked_for_by_name() {
    let program = compile("Continuous");
    let plain = program.run(&["short"]);
    plain.assert_success();
    let server = CaptureServer::start();
    let endpoint = server.endpoint();
    let (output, _) = run(&mut exported(
        &program,
        &["short"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PROFILES", "cpu,alloc,lock"),
        ],
    ));
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout);
    if Dotnet::get().major_minor() >= (5, 0) {
        assert_eq!(output.stderr_str(), "");
    } else {
        assert_eq!(
            output.stderr_str(),
            "clrprof: the alloc and lock profile(s) need the runtime's events in process \
             (.NET 5 or later), which this runtime does not offer; they are not exported\n"
        );
    }
}
