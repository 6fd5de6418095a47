//! Every record written is accounted for: the samples a report shows and the ones it leaves
//! out (with why) add up to what `record` said it wrote, and every figure made from a kind of
//! event that lost events says how many, on a program that makes far more events than a small
//! agent buffer holds (`--buffer-size 64`).

use clrprof_e2e::{OutputExt, Recording, compile, record, reported, with_commas};
use serde_json::Value;

/// How many the Flood program throws (see tests/programs/Flood.cs).
const THROWS: u64 = 5_000;

/// `record`'s closing line: `wrote F (N records: E events, S samples, D dropped)`: S.
fn samples_written(rec: &Recording) -> u64 {
    let stderr = rec.output.stderr_str();
    let line = stderr
        .lines()
        .find(|l| l.starts_with("clrprof: wrote "))
        .unwrap_or_else(|| panic!("no closing line:\n{stderr}"));
    let before = line
        .split(" samples,")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no sample count in {line:?}"));
    before
        .parse()
        .unwrap_or_else(|_| panic!("no sample count in {line:?}"))
}

/// The program's collections, as it printed them.
fn collections(rec: &Recording) -> u64 {
    reported(&rec.output.stdout_str(), "flood: collections=")
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The samples of one report add up: shown + every group left out = recorded (+ those the
/// call trees counted without a record), and the header's count is the shown one.
fn assert_samples_add_up(json: &Value, written: u64, what: &str) {
    let acc = &json["sample_accounting"];
    assert_eq!(num(&acc["recorded"]), written, "{what}: {acc:#}");
    let left: u64 = acc["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| num(&l["samples"]))
        .sum();
    assert_eq!(
        num(&acc["shown"]) + left,
        written + num(&acc["counted_unwritten"]),
        "{what}: {acc:#}"
    );
    assert_eq!(json["samples"], acc["shown"], "{what}");
    assert_eq!(
        num(&acc["dropped"]),
        num(&json["counters"]["samples_dropped"]),
        "{what}"
    );
}

fn flood(mode: &str) -> Recording {
    let program = compile("Flood");
    let rec = record(
        &program,
        &[],
        &["--mode", mode, "--events", "all", "--buffer-size", "64"],
    );
    rec.output.assert_success();
    assert!(
        rec.output
            .stdout_str()
            .starts_with("flood: thrown=5000 caught=5000\nflood: collections="),
        "{}",
        rec.output.stdout_str()
    );
    rec
}

/// Every event the program caused is seen or counted as lost, per kind; the text report says
/// it next to each figure.
fn assert_events_add_up(rec: &Recording, json: &Value) {
    let seen = |kind: &str| num(&json["events"][kind]);
    let lost = |kind: &str| num(&json["lost"][kind]);
    assert!(
        num(&json["session"]["events_dropped"]) > 0,
        "the small buffer dropped no event: the test tests nothing"
    );
    assert_eq!(
        json["lost"]
            .as_object()
            .unwrap()
            .values()
            .map(num)
            .sum::<u64>(),
        num(&json["session"]["events_dropped"]),
        "per kind: {:#}",
        json["lost"]
    );
    assert_eq!(seen("ExceptionThrown") + lost("ExceptionThrown"), THROWS);
    assert_eq!(
        seen("ExceptionCatcherEnter") + lost("ExceptionCatcherEnter"),
        THROWS
    );
    let gcs = collections(rec);
    assert_eq!(
        seen("GarbageCollectionStarted") + lost("GarbageCollectionStarted"),
        gcs
    );
    assert_eq!(
        json["gcs"].as_array().unwrap().len() as u64,
        seen("GarbageCollectionStarted")
    );
    // A collection without an end says that its end was lost.
    for g in json["gcs"].as_array().unwrap() {
        assert!(
            g["duration_ns"].is_u64() || g["end_lost"] == true,
            "a GC with no duration and no reason: {g}"
        );
    }

    let text = rec.report(&[]);
    text.assert_success();
    let text = text.stdout_str();
    let thrown_line = format!(
        "\nExceptions ({} seen thrown, {} more lost;",
        with_commas(seen("ExceptionThrown")),
        with_commas(lost("ExceptionThrown"))
    );
    assert!(
        text.contains(&thrown_line),
        "{thrown_line:?} not in\n{text}"
    );
    if lost("GarbageCollectionStarted") > 0 {
        let gc_line = format!(
            "\nGarbage collections ({} seen, {} more lost)",
            seen("GarbageCollectionStarted"),
            with_commas(lost("GarbageCollectionStarted"))
        );
        assert!(text.contains(&gc_line), "{gc_line:?} not in\n{text}");
    }
    assert!(
        text.contains(&format!(
            "ExceptionThrown (and {} lost)",
            with_commas(lost("ExceptionThrown"))
        )),
        "{text}"
    );
}

#[test]
fn sample_mode_accounts_for_every_sample_and_event() {
    let rec = flood("sample");
    let written = samples_written(&rec);
    let json = rec.report_json();
    assert_events_add_up(&rec, &json);
    for (args, what) in [
        (&["--metric", "cpu"][..], "cpu"),
        (&["--metric", "wall"][..], "wall"),
        (&["--filter", "Flood.Spin"][..], "filter"),
        (&["--thread", "main"][..], "main thread"),
    ] {
        let json = rec.report_json_with(args);
        assert_samples_add_up(&json, written, what);
    }
    // CPU and wall-clock samples are told apart: each metric shows one kind, and leaves the
    // other out with the reason (of every thread: the wall metric leaves the runtime's
    // service threads out unless asked for all).
    let cpu = rec.report_json_with(&["--metric", "cpu"]);
    let wall = rec.report_json_with(&["--metric", "wall", "--thread", "all"]);
    assert_eq!(
        num(&cpu["sample_accounting"]["shown"]) + num(&wall["sample_accounting"]["shown"]),
        written
    );
}

#[test]
fn trace_mode_accounts_for_every_sample_and_event() {
    let rec = flood("trace");
    let written = samples_written(&rec);
    let json = rec.report_json();
    assert_events_add_up(&rec, &json);
    assert_samples_add_up(&json, written, "trace");
    // The call trees count a tick whose record was dropped: never more than were dropped.
    let acc = &json["sample_accounting"];
    assert!(
        num(&acc["counted_unwritten"]) <= num(&acc["dropped"]),
        "{acc:#}"
    );
    for (args, what) in [
        (&["--filter", "Flood.Spin"][..], "filter"),
        (&["--thread", "main"][..], "main thread"),
    ] {
        assert_samples_add_up(&rec.report_json_with(args), written, what);
    }
}
