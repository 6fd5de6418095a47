//! End to end: the exports of real traces open in the viewers people use.
//! - speedscope: validated against speedscope's own JSON schema (fetched by `cargo xtask setup`);
//! - pprof: gunzipped and decoded as a `perftools.profiles.Profile` protobuf;
//! - flame graph: an SVG naming the hot method;
//! - Chrome trace events: JSON with per-thread, balanced slices and thread names.

use std::io::Read;

use clrprof_analysis::output::pprof_proto;
use clrprof_e2e::*;
use prost::Message;
use serde_json::Value;

fn hot_sampled() -> Recording {
    let rec = record(&compile("Hot"), &[], &["--mode", "sample"]);
    rec.output.assert_success();
    rec
}

fn fib_traced() -> Recording {
    let rec = record(&compile("Calls"), &["bench", "27"], &["--mode", "trace"]);
    rec.output.assert_success();
    rec
}

fn export(rec: &Recording, format: &str, extra: &[&str]) -> Vec<u8> {
    let out_path = rec.dir.path().join(format!("export.{format}"));
    let mut args = vec!["--format", format, "-o", out_path.to_str().unwrap()];
    args.extend_from_slice(extra);
    rec.report(&args).assert_success();
    std::fs::read(&out_path).unwrap()
}

#[test]
fn speedscope_output_validates_against_speedscope_schema() {
    for (rec, hot, metric) in [
        (hot_sampled(), "Hot.Spin(long)", "cpu"),
        // Trace mode weighted by its exact call counts: by CPU, Fib's ~15 ms can fall between
        // samples when a loaded machine delays the sampler thread.
        (fib_traced(), "Calls.Fib(int)", "calls"),
    ] {
        let doc: Value =
            serde_json::from_slice(&export(&rec, "speedscope", &["--metric", metric])).unwrap();
        assert_valid_speedscope(&doc);
        let frames = doc["shared"]["frames"].as_array().unwrap();
        assert!(
            frames.iter().any(|f| f["name"] == hot),
            "{hot} among the frames"
        );
        assert!(!doc["profiles"].as_array().unwrap().is_empty());
    }
}

#[test]
fn pprof_output_decodes_as_a_profile_protobuf() {
    for (rec, hot, types) in [
        (
            hot_sampled(),
            "Hot.Spin(long)",
            // The system time of the samples that tell it (perf events', format 1.8).
            vec!["samples", "cpu", "wall", "sys"],
        ),
        (
            fib_traced(),
            "Calls.Fib(int)",
            vec!["samples", "cpu", "wall", "calls"],
        ),
    ] {
        let gz = export(&rec, "pprof", &[]);
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip on disk");
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        let profile =
            pprof_proto::Profile::decode(&raw[..]).expect("a valid perftools.profiles.Profile");
        let strings = &profile.string_table;
        assert_eq!(strings[0], "", "string table starts with the empty string");
        let sample_types: Vec<&str> = profile
            .sample_type
            .iter()
            .map(|t| strings[t.r#type as usize].as_str())
            .collect();
        assert_eq!(sample_types, types);
        assert!(!profile.sample.is_empty());
        assert!(profile.sample.iter().all(|s| s.value.len() == types.len()));
        let names: Vec<&str> = profile
            .function
            .iter()
            .map(|f| strings[f.name as usize].as_str())
            .collect();
        assert!(names.contains(&hot), "{hot} among pprof functions");
    }
}

#[test]
fn flamegraph_svg_names_the_hot_method() {
    let svg = String::from_utf8(export(&hot_sampled(), "flamegraph", &[])).unwrap();
    assert!(
        svg.starts_with("<?xml") || svg.starts_with("<svg"),
        "an SVG document"
    );
    assert!(
        svg.contains("Hot.Spin(long)"),
        "the hot method is in the flame graph"
    );
    let folded =
        String::from_utf8(export(&fib_traced(), "folded", &["--metric", "calls"])).unwrap();
    assert!(
        folded.lines().any(|l| l.contains("Calls.Fib(int)")),
        "folded stacks name Fib"
    );
}

#[test]
fn chrome_trace_has_per_thread_timelines() {
    for rec in [hot_sampled(), fib_traced()] {
        let doc: Value =
            serde_json::from_slice(&export(&rec, "chrome", &[])).expect("chrome JSON parses");
        let events = doc["traceEvents"].as_array().expect("traceEvents");
        let names: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
            .collect();
        assert!(!names.is_empty(), "thread names");
        let mut depth: std::collections::HashMap<u64, i64> = std::collections::HashMap::new();
        for e in events {
            let tid = e["tid"].as_u64().unwrap_or(0);
            match e["ph"].as_str() {
                Some("B") => *depth.entry(tid).or_default() += 1,
                Some("E") => {
                    let d = depth.entry(tid).or_default();
                    *d -= 1;
                    assert!(*d >= 0, "E without B on thread {tid}");
                }
                _ => {}
            }
        }
        assert!(
            depth.values().all(|&d| d == 0),
            "balanced B/E per thread: {depth:?}"
        );
        let threads_with_slices = events
            .iter()
            .filter(|e| e["ph"] == "B" || e["ph"] == "X")
            .map(|e| e["tid"].as_u64())
            .collect::<std::collections::HashSet<_>>();
        assert!(!threads_with_slices.is_empty());
    }
}
