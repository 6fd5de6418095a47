//! What heap snapshots cost until one is taken, and what a snapshot holds, on a real runtime.
//! The program (`tests/programs/HeapCost.cs`) keeps a large live heap and makes much garbage.
//!
//! The cost is asserted through exact observables rather than time: the number of
//! collections the runtime walked the heap in without a snapshot taking the walk, and the
//! heap walk callbacks those cost (the agent's counters `heap_walks_unused` and
//! `heap_walk_callbacks_unused`): both 0 with `--heap-snapshot on-signal` and no signal, in a
//! run whose every collection the trace counts.

use std::collections::BTreeMap;
use std::process::Stdio;

use clrprof_e2e::{
    ChildGuard, OutputExt, Recording, compile, default_timeout, record_command, record_with_env,
    report_json, reported, signal_snapshot_when_ready, temp_dir, with_commas,
};
use clrprof_trace::{Reader, Record};
use serde_json::Value;

/// Live `HeapCost.Item`s.
const LIVE: u64 = 300_000;

/// A 4 MB generation-0 budget (both runtimes read the setting under either prefix), so that
/// the churn (about 420 MB per 1,000 rounds) makes a collection every 10 rounds or so, each
/// with the 600,000 live objects on the heap.
const GEN0_BUDGET: &[(&str, &str)] = &[
    ("DOTNET_GCgen0size", "0x400000"),
    ("COMPlus_GCgen0size", "0x400000"),
];

fn counter(json: &Value, name: &str) -> u64 {
    json["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name}: {:#}", json["counters"]))
}

/// The number after `label: ` on the program's standard error.
fn stderr_number(output: &std::process::Output, label: &str) -> u64 {
    reported(&output.stderr_str(), &format!("{label}: "))
}

fn heap_type<'a>(types: &'a Value, type_name: &str) -> &'a Value {
    types
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == type_name)
        .unwrap_or_else(|| panic!("no {type_name} in {types:#}"))
}

/// `HeapCost` with the live heap and 1,000 rounds of garbage, recorded with the collections
/// and `--heap-snapshot WHEN`.
fn record_churn(when: &str) -> Recording {
    let program = compile("HeapCost");
    let live = LIVE.to_string();
    let rec = record_with_env(
        &program,
        &[&live, "1000"],
        &["--mode", "none", "--events", "gc", "--heap-snapshot", when],
        GEN0_BUDGET,
    );
    rec.output.assert_success();
    rec
}

#[test]
fn on_signal_without_a_signal_never_walks_the_heap() {
    let rec = record_churn("on-signal");
    let json = rec.report_json();
    let collections = stderr_number(&rec.output, "collections");
    let gcs = json["gc"]["gcs"].as_array().unwrap();
    // Every collection of the run is in the trace, and many happened with the live heap there.
    assert_eq!(gcs.len() as u64, collections, "{:#}", json["gc"]);
    assert!(collections >= 50, "only {collections} collections");
    assert_eq!(counter(&json, "heap_walks_unused"), 0);
    assert_eq!(counter(&json, "heap_walk_callbacks_unused"), 0);
    assert_eq!(counter(&json, "heap_walk_enables"), 0);
    assert!(json["heap"].is_null() || json["heap"]["snapshots"].as_array().unwrap().is_empty());
}

/// The snapshot's objects as the trace holds them: address -> (class name, size).
fn snapshot_objects(trace: &std::path::Path) -> BTreeMap<u64, (String, u64)> {
    let file = std::fs::File::open(trace).unwrap();
    let reader = Reader::new(std::io::BufReader::new(file)).unwrap();
    let mut classes = BTreeMap::new();
    let mut objects = BTreeMap::new();
    for record in reader {
        match record.unwrap() {
            Record::ClassDef(c) => {
                classes.insert(c.id, c.name);
            }
            Record::HeapObject(o) => {
                objects.insert(o.object, (o.class, o.size));
            }
            _ => {}
        }
    }
    objects
        .into_iter()
        .map(|(a, (c, size))| (a, (classes.get(&c).cloned().unwrap_or_default(), size)))
        .collect()
}

#[test]
fn a_snapshot_on_signal_while_garbage_is_made_is_exact_and_its_sizes_tile_the_heap() {
    let program = compile("HeapCost");
    let dir = temp_dir();
    let dir_arg = dir.path().to_str().unwrap();
    let live = LIVE.to_string();
    let trace = dir.path().join("signal.clrprof");
    let mut cmd = record_command(
        &program,
        &[&live, "100", dir_arg],
        &[
            "--mode",
            "none",
            "--events",
            "gc",
            "--heap-snapshot",
            "on-signal",
        ],
        &trace,
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(&mut cmd);
    signal_snapshot_when_ready(dir.path());
    std::fs::write(dir.path().join("go"), "").unwrap();
    let output = child.wait_with_output(default_timeout());
    output.assert_success();

    let json = report_json(&trace);
    let heap = &json["heap"];
    let snapshots = heap["snapshots"].as_array().unwrap();
    assert_eq!(snapshots.len(), 1, "{snapshots:#?}");
    assert_eq!(snapshots[0]["complete"], true);
    let report = heap;
    assert_eq!(heap_type(&report["types"], "HeapCost.Item")["count"], LIVE);
    assert_eq!(heap_type(&report["types"], "HeapCost.Marker")["count"], 1);
    // The walk was on for the snapshot's collection only: at most a collection that started
    // while it was being turned on walked the heap for nothing.
    assert!(
        counter(&json, "heap_walk_enables") == 1,
        "{:#}",
        json["counters"]
    );
    assert!(
        counter(&json, "heap_walks_unused") <= 1,
        "{:#}",
        json["counters"]
    );
    // The pause the snapshot caused is recorded although suspensions were not asked for.
    let pause = snapshots[0]["pause_ns"]
        .as_u64()
        .expect("the snapshot's pause");
    assert!(pause > 0);
    // The age histogram adds up to every object of the snapshot.
    let generations = report["generations"].as_array().unwrap();
    let by_generation: u64 = generations
        .iter()
        .map(|g| g["objects"].as_u64().unwrap())
        .sum();
    assert_eq!(
        by_generation,
        report["objects"].as_u64().unwrap(),
        "{generations:#?}"
    );
    let bytes: u64 = generations
        .iter()
        .map(|g| g["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(bytes, report["total_bytes"].as_u64().unwrap());
    // Objects no reported root reaches are the non-GC heap's (.NET 8's string literals and
    // Type objects; 3.1 has none), each counted and explained.
    assert_eq!(
        report["unreached_objects"], report["unreached_non_gc"],
        "{:#}",
        report["unreached_types"]
    );
    let non_gc = generations
        .iter()
        .find(|g| g["generation"] == "non_gc")
        .unwrap();
    assert!(non_gc["objects"].as_u64().unwrap() >= report["unreached_non_gc"].as_u64().unwrap());

    // The plain report reads the snapshot's counts and pause, not its objects.
    let summary = clrprof_e2e::report(&trace, &[]);
    summary.assert_success();
    let line = format!(
        "1 heap snapshot (#1: {} objects, paused ",
        with_commas(report["objects"].as_u64().unwrap())
    );
    let text = summary.stdout_str();
    assert!(text.contains(&line), "no `{line}` in {text}");

    // Sizes as the heap lays objects out: between an object's end and the next object there
    // is nothing (0 bytes) or a free object (at least 24 bytes: header, method table, length).
    let objects = snapshot_objects(&trace);
    let mut adjacent_strings = 0;
    let list: Vec<_> = objects.iter().collect();
    for pair in list.windows(2) {
        let (&addr, (name, size)) = pair[0];
        let (&next, _) = pair[1];
        assert_eq!(size % 8, 0, "{name} at {addr:#x}: {size} bytes");
        let gap = next.checked_sub(addr + size).unwrap_or_else(|| {
            panic!("{name} at {addr:#x} ({size} bytes) overlaps the object at {next:#x}")
        });
        assert!(
            gap == 0 || gap >= 24,
            "{name} at {addr:#x} ({size} bytes): the next object starts {gap} bytes after its end"
        );
        if name == "string" && gap == 0 {
            adjacent_strings += 1;
        }
    }
    // The program's 64 strings lie one after the other, so the check above saw them: a string
    // of n characters takes 22 + 2n bytes before alignment, a multiple of 8 for one length in
    // four only.
    assert!(
        adjacent_strings >= 63,
        "{adjacent_strings} strings followed directly by an object"
    );
}

#[test]
fn every_nth_collection_walks_the_heap_only_for_its_snapshots() {
    let rec = record_churn("25");
    let json = rec.report_json();
    let collections = stderr_number(&rec.output, "collections");
    let snapshots = json["heap"]["snapshots"].as_array().unwrap();
    let gcs: Vec<u64> = snapshots
        .iter()
        .map(|s| s["gc"].as_u64().unwrap())
        .collect();
    // The first collection at or after a multiple of 25: at most one per 25.
    assert!(!gcs.is_empty() && gcs[0] >= 25, "{gcs:?}");
    for pair in gcs.windows(2) {
        assert!(pair[1] / 25 > pair[0] / 25, "{gcs:?}");
    }
    assert!(
        gcs.len() as u64 <= collections / 25,
        "{gcs:?} of {collections}"
    );
    for s in snapshots {
        assert_eq!(s["complete"], true);
        assert!(s["pause_ns"].as_u64().unwrap() > 0, "{s:#}");
    }
    assert_eq!(
        heap_type(&json["heap"]["types"], "HeapCost.Item")["count"],
        LIVE
    );
    // The walk was turned on once per snapshot, and no other collection walked the heap
    // (at most one that started in the instant the walk was being turned on). After the
    // collection before a 25th, the heap thread turns the walk on for the next collection:
    // the 25th's, or a later one's when the program collects again before the thread has run
    // (a loaded machine). One more walk than snapshots is right only when the program ended
    // before a collection took the last one: the walk was due at its last collection (the one
    // before a 25th), or the last 25th came and went before the thread turned the walk on.
    let enables = counter(&json, "heap_walk_enables");
    let snapshots_taken = gcs.len() as u64;
    let due_points = collections / 25;
    assert!(
        snapshots_taken + 1 >= due_points,
        "only the last snapshot may be missing: {gcs:?} of {collections}"
    );
    let due_at_exit = collections % 25 == 24 && snapshots_taken == due_points;
    let last_outran = snapshots_taken + 1 == due_points;
    assert!(
        enables == snapshots_taken
            || ((due_at_exit || last_outran) && enables == snapshots_taken + 1),
        "the walk was turned on {enables} times for {snapshots_taken} snapshots, \
         {collections} collections"
    );
    assert!(
        counter(&json, "heap_walks_unused") <= 1,
        "{:#}",
        json["counters"]
    );
}
