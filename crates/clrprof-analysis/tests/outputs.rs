//! The machine formats: pprof decodes, speedscope and Chrome JSON follow their specs, the
//! flame graph shows the hot function.

mod common;

use std::collections::HashMap;
use std::io::Read;

use clrprof_analysis::output::pprof_proto as pb;
use clrprof_analysis::output::{Chrome, Flamegraph, Pprof, Render, Speedscope};
use clrprof_analysis::{Error, Format, Metric, Profile, Query};
use common::{sample_profile, trace_profile};
use prost::Message;
use serde_json::Value;

const MS: i64 = 1_000_000;

fn render(r: &dyn Render, p: &Profile, q: &Query) -> Vec<u8> {
    let mut out = Vec::new();
    r.render(p, q, &mut out).unwrap();
    out
}

fn decode_pprof(bytes: &[u8]) -> pb::Profile {
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .unwrap();
    pb::Profile::decode(raw.as_slice()).unwrap()
}

fn string(p: &pb::Profile, i: i64) -> &str {
    &p.string_table[usize::try_from(i).unwrap()]
}

fn sample_types(p: &pb::Profile) -> Vec<(String, String)> {
    p.sample_type
        .iter()
        .map(|t| (string(p, t.r#type).to_owned(), string(p, t.unit).to_owned()))
        .collect()
}

/// Sums each sample type per leaf function name.
fn self_by_function(p: &pb::Profile) -> HashMap<String, Vec<i64>> {
    let names: HashMap<u64, &str> = p
        .function
        .iter()
        .map(|f| (f.id, string(p, f.name)))
        .collect();
    let loc_fn: HashMap<u64, u64> = p
        .location
        .iter()
        .map(|l| (l.id, l.line[0].function_id))
        .collect();
    let mut out: HashMap<String, Vec<i64>> = HashMap::new();
    for s in &p.sample {
        let leaf = names[&loc_fn[&s.location_id[0]]].to_owned();
        let acc = out.entry(leaf).or_insert_with(|| vec![0; s.value.len()]);
        for (a, v) in acc.iter_mut().zip(&s.value) {
            *a += v;
        }
    }
    out
}

fn check_pprof_invariants(p: &pb::Profile) {
    assert_eq!(p.string_table[0], "");
    for (i, f) in p.function.iter().enumerate() {
        assert_eq!(f.id, i as u64 + 1);
    }
    for (i, l) in p.location.iter().enumerate() {
        assert_eq!(l.id, i as u64 + 1);
        assert!(p.function.iter().any(|f| f.id == l.line[0].function_id));
        assert!(l.mapping_id == 0 || p.mapping.iter().any(|m| m.id == l.mapping_id));
    }
    for s in &p.sample {
        assert_eq!(s.value.len(), p.sample_type.len());
        assert!(!s.location_id.is_empty());
        for id in &s.location_id {
            assert!(*id >= 1 && *id <= p.location.len() as u64);
        }
        let keys: Vec<&str> = s.label.iter().map(|l| string(p, l.key)).collect();
        assert_eq!(keys, ["thread", "thread_id"]);
    }
}

#[test]
fn pprof_sample_mode_decodes() {
    let profile = sample_profile();
    let p = decode_pprof(&render(&Pprof, &profile, &Query::default()));
    check_pprof_invariants(&p);
    assert_eq!(
        sample_types(&p),
        [
            ("samples".into(), "count".into()),
            ("cpu".into(), "nanoseconds".into()),
            ("wall".into(), "nanoseconds".into())
        ]
    );
    let period = p.period_type.unwrap();
    assert_eq!(
        (string(&p, period.r#type), string(&p, period.unit)),
        ("cpu", "nanoseconds")
    );
    assert_eq!(p.period, 1_000_000);
    assert_eq!(p.duration_nanos, 15 * MS);
    assert_eq!(p.time_nanos, 1_700_000_000_000_000_000);
    assert_eq!(string(&p, p.default_sample_type), "cpu");

    let totals: Vec<i64> = (0..3)
        .map(|i| p.sample.iter().map(|s| s.value[i]).sum())
        .collect();
    assert_eq!(totals, [18, 13 * MS + MS / 2, 18 * MS]);
    let by_fn = self_by_function(&p);
    assert_eq!(
        by_fn["MyApp.Parser.ParseLine(string, int)"],
        [9, 9 * MS, 9 * MS]
    );
    assert_eq!(
        by_fn["System.Threading.Monitor.Wait(object)"],
        [4, 0, 4 * MS]
    );
    assert_eq!(by_fn["[no managed frames]"], [1, MS / 2, MS]);

    // The leaf comes first.
    let hot = p
        .sample
        .iter()
        .find(|s| s.value[0] == 6)
        .expect("the 6-sample ParseLine stack");
    assert_eq!(hot.location_id.len(), 3);
    let thread = hot
        .label
        .iter()
        .find(|l| string(&p, l.key) == "thread")
        .unwrap();
    assert_eq!(string(&p, thread.str), "main");
    let tid = hot
        .label
        .iter()
        .find(|l| string(&p, l.key) == "thread_id")
        .unwrap();
    assert_eq!(tid.num, 1);
    // Modules become mappings.
    assert!(
        p.mapping
            .iter()
            .any(|m| string(&p, m.filename) == "MyApp.dll")
    );
}

#[test]
fn pprof_trace_mode_has_calls() {
    let profile = trace_profile();
    let q = Query {
        metric: Some(Metric::Calls),
        ..Query::default()
    };
    let p = decode_pprof(&render(&Pprof, &profile, &q));
    check_pprof_invariants(&p);
    assert_eq!(sample_types(&p)[3], ("calls".into(), "count".into()));
    assert_eq!(string(&p, p.default_sample_type), "calls");
    let by_fn = self_by_function(&p);
    assert_eq!(
        by_fn["MyApp.Parser.ParseLine(string, int)"],
        [9, 9 * MS, 9 * MS, 250]
    );
    assert_eq!(by_fn["MyApp.Compute.Fib(int)"], [4, 4 * MS, 4 * MS, 7]);
}

#[test]
fn pprof_respects_thread_and_filter() {
    let profile = sample_profile();
    let q = Query {
        thread: Some("main".into()),
        filter: Some("Fib".into()),
        ..Query::default()
    };
    let p = decode_pprof(&render(&Pprof, &profile, &q));
    let by_fn = self_by_function(&p);
    assert_eq!(by_fn.len(), 1);
    assert_eq!(by_fn["MyApp.Compute.Fib(int)"], [3, 3 * MS, 3 * MS]);
}

fn check_speedscope(v: &Value) {
    assert_eq!(
        v["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames = v["shared"]["frames"].as_array().expect("shared.frames");
    for f in frames {
        assert!(f["name"].is_string());
    }
    assert!(v["name"].is_string());
    assert!(v["exporter"].as_str().unwrap().starts_with("clrprof@"));
    let profiles = v["profiles"].as_array().expect("profiles");
    assert!(!profiles.is_empty());
    assert!(v["activeProfileIndex"].as_u64().unwrap() < profiles.len() as u64);
    for p in profiles {
        assert!(["sampled", "evented"].contains(&p["type"].as_str().unwrap()));
        assert!(p["name"].is_string());
        assert!(
            [
                "none",
                "nanoseconds",
                "microseconds",
                "milliseconds",
                "seconds",
                "bytes"
            ]
            .contains(&p["unit"].as_str().unwrap())
        );
        let start = p["startValue"].as_f64().unwrap();
        let end = p["endValue"].as_f64().unwrap();
        assert!(end >= start);
        let samples = p["samples"].as_array().unwrap();
        let weights = p["weights"].as_array().unwrap();
        assert_eq!(samples.len(), weights.len());
        let mut sum = 0.0;
        for (s, w) in samples.iter().zip(weights) {
            for i in s.as_array().unwrap() {
                assert!((i.as_u64().unwrap() as usize) < frames.len());
            }
            let w = w.as_f64().unwrap();
            assert!(w > 0.0);
            sum += w;
        }
        assert_eq!(sum, end - start);
    }
}

#[test]
fn speedscope_sample_mode() {
    let out = render(&Speedscope, &sample_profile(), &Query::default());
    let v: Value = serde_json::from_slice(&out).unwrap();
    check_speedscope(&v);
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2);
    assert_eq!(profiles[0]["unit"], "nanoseconds");
    assert_eq!(profiles[0]["name"], "main (1) (CPU time)");
    assert_eq!(profiles[0]["endValue"], 10 * MS + MS / 2);
    assert_eq!(v["activeProfileIndex"], 0);
    // Consecutive samples of the same stack are merged: main has 6 stacks with CPU time.
    assert_eq!(profiles[0]["samples"].as_array().unwrap().len(), 5);
    let frames = v["shared"]["frames"].as_array().unwrap();
    let main = &frames[profiles[0]["samples"][0][0].as_u64().unwrap() as usize];
    assert_eq!(main["name"], "MyApp.Program.Main(string[])");
    assert_eq!(main["file"], "MyApp.dll");
}

#[test]
fn speedscope_trace_mode_and_other_metrics() {
    for metric in [Metric::Cpu, Metric::Wall, Metric::Samples, Metric::Calls] {
        let q = Query {
            metric: Some(metric),
            ..Query::default()
        };
        let out = render(&Speedscope, &trace_profile(), &q);
        let v: Value = serde_json::from_slice(&out).unwrap();
        check_speedscope(&v);
        let unit = if metric.is_time() {
            "nanoseconds"
        } else {
            "none"
        };
        assert_eq!(v["profiles"][0]["unit"], unit);
        if metric == Metric::Calls {
            assert_eq!(v["profiles"][0]["endValue"], 1 + 2 + 200 + 1 + 2 + 4);
        }
    }
    let q = Query {
        metric: Some(Metric::Samples),
        ..Query::default()
    };
    let v: Value = serde_json::from_slice(&render(&Speedscope, &sample_profile(), &q)).unwrap();
    check_speedscope(&v);
    assert_eq!(v["profiles"][0]["endValue"], 15);
}

/// Checks the Chrome JSON and returns the events per tid.
fn check_chrome(v: &Value) -> HashMap<u64, Vec<Value>> {
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let mut per_tid: HashMap<u64, Vec<Value>> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(["B", "E", "X", "M"].contains(&ph), "{ph}");
        assert!(e["ts"].is_number());
        assert!(e["pid"].is_u64());
        per_tid
            .entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push(e.clone());
    }
    for (tid, evs) in &per_tid {
        let mut depth = 0i64;
        let mut last_ts = f64::MIN;
        for e in evs.iter().filter(|e| e["ph"] == "B" || e["ph"] == "E") {
            let ts = e["ts"].as_f64().unwrap();
            assert!(ts >= last_ts, "time goes backwards on thread {tid}");
            last_ts = ts;
            depth += if e["ph"] == "B" { 1 } else { -1 };
            assert!(depth >= 0, "E without B on thread {tid}");
        }
        assert_eq!(depth, 0, "unbalanced B/E on thread {tid}");
    }
    per_tid
}

#[test]
fn chrome_sample_mode_timeline() {
    let profile = sample_profile();
    let out = render(&Chrome, &profile, &Query::default());
    let v: Value = serde_json::from_slice(&out).unwrap();
    let per_tid = check_chrome(&v);
    for t in &profile.threads {
        let evs = &per_tid[&u64::from(t.tid)];
        assert!(evs.iter().any(|e| e["ph"] == "M"
            && e["name"] == "thread_name"
            && e["args"]["name"].as_str().unwrap().starts_with(&t.name)));
        assert!(
            evs.iter().any(|e| e["ph"] == "B"),
            "no slices for {}",
            t.name
        );
    }
    // Main stays open across all of main's first 14 samples (1 ms each): one slice.
    let main: Vec<&Value> = per_tid[&1]
        .iter()
        .filter(|e| e["ph"] == "B" && e["name"] == "MyApp.Program.Main(string[])")
        .collect();
    assert_eq!(main.len(), 1);
    assert_eq!(main[0]["ts"], 0.0);
    // The six ParseLine samples make one slice from 0 to 6 ms.
    let parse_line: Vec<&Value> = per_tid[&1]
        .iter()
        .filter(|e| e["ph"] == "B" && e["name"] == "MyApp.Parser.ParseLine(string, int)")
        .collect();
    assert_eq!(parse_line.len(), 1);
    assert_eq!(parse_line[0]["args"]["module"], "MyApp.dll");
    // Process name metadata.
    assert!(
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "process_name" && e["args"]["name"] == "MyApp")
    );
}

#[test]
fn chrome_trace_mode_lays_out_call_trees() {
    let profile = trace_profile();
    let out = render(&Chrome, &profile, &Query::default());
    let v: Value = serde_json::from_slice(&out).unwrap();
    let per_tid = check_chrome(&v);
    let main: Vec<&Value> = per_tid[&1].iter().filter(|e| e["ph"] == "X").collect();
    let root = main
        .iter()
        .find(|e| e["name"] == "MyApp.Program.Main(string[])")
        .unwrap();
    assert_eq!(root["dur"], 12_000.0);
    assert_eq!(root["args"]["calls"], 1);
    // Callees lie within their caller.
    for e in &main {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && ts + dur <= 12_000.0);
    }
    assert!(per_tid[&2].iter().any(|e| e["ph"] == "X"));
}

#[test]
fn chrome_gap_and_filter_close_slices() {
    // Two samples 10 ms apart, each standing for 1 ms: a gap between them.
    let mut p = Profile::from_stacks(&[
        ("t", vec!["A", "B"], 1, MS as u64),
        ("t", vec!["A", "C"], 1, MS as u64),
    ]);
    p.threads[0].samples[1].time_ns = 12 * MS as u64;
    let v: Value = serde_json::from_slice(&render(&Chrome, &p, &Query::default())).unwrap();
    let evs = &check_chrome(&v)[&1];
    let a_begins = evs.iter().filter(|e| e["name"] == "A").count();
    assert_eq!(a_begins, 2, "A is reopened after the gap");

    let q = Query {
        filter: Some("C".into()),
        ..Query::default()
    };
    let v: Value = serde_json::from_slice(&render(&Chrome, &p, &q)).unwrap();
    let evs = &check_chrome(&v)[&1];
    assert!(!evs.iter().any(|e| e["name"] == "B"));
    assert!(evs.iter().any(|e| e["name"] == "C"));
}

#[test]
fn flamegraph_svg_names_the_hot_function() {
    let out = render(&Flamegraph::default(), &sample_profile(), &Query::default());
    let svg = String::from_utf8(out).unwrap();
    assert!(svg.starts_with("<?xml"));
    assert!(svg.contains("<svg"));
    assert!(svg.contains("MyApp.Parser.ParseLine(string, int)"));
    assert!(svg.contains("MyApp: CPU time (ns)"));

    let fg = Flamegraph {
        per_thread: true,
        title: Some("Custom".into()),
        inverted: true,
    };
    let q = Query {
        metric: Some(Metric::Calls),
        ..Query::default()
    };
    let svg = String::from_utf8(render(&fg, &trace_profile(), &q)).unwrap();
    assert!(svg.contains("Custom"));
    assert!(svg.contains("worker (2)"));
}

#[test]
fn flamegraph_of_nothing_is_an_error() {
    let q = Query {
        filter: Some("does not occur".into()),
        ..Query::default()
    };
    let mut out = Vec::new();
    let err = Flamegraph::default()
        .render(&sample_profile(), &q, &mut out)
        .unwrap_err();
    assert!(matches!(err, Error::NothingToDraw(_)));
}

#[test]
fn every_format_renders_both_modes() {
    for format in Format::ALL {
        for profile in [sample_profile(), trace_profile()] {
            let mut out = Vec::new();
            format
                .renderer()
                .render(&profile, &Query::default(), &mut out)
                .unwrap_or_else(|e| panic!("{format}: {e}"));
            assert!(!out.is_empty(), "{format}");
            if !format.is_binary() && format != Format::Text && format != Format::Folded {
                assert!(std::str::from_utf8(&out).is_ok());
            }
        }
    }
}
