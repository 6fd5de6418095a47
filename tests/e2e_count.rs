//! End to end: count mode (`clrprof record --mode count`) on a real CoreCLR: exact calls per
//! function and per call site from IL counters, with inlining on.
//! Programs: tests/programs/{Calls,Traced,Counted}.cs (their headers state what they do).

use std::collections::HashMap;

use clrprof_e2e::*;
use serde_json::Value;

/// Calls per function of a JSON report (`functions[].calls`).
fn calls(json: &Value) -> HashMap<String, u64> {
    json["functions"]
        .as_array()
        .expect("functions[]")
        .iter()
        .map(|f| {
            let name = f["name"].as_str().unwrap().to_string();
            (name, f["calls"].as_u64().expect("calls"))
        })
        .collect()
}

fn calls_of(json: &Value, name: &str) -> u64 {
    *calls(json)
        .get(name)
        .unwrap_or_else(|| panic!("no function {name} in {:?}", calls(json)))
}

/// Calls from `caller` to `callee`, every call site summed (`call_sites[]`).
fn site_calls(json: &Value, caller: &str, callee: &str) -> u64 {
    json["call_sites"]
        .as_array()
        .expect("call_sites[]")
        .iter()
        .filter(|s| s["caller"] == caller && s["callee"] == callee)
        .map(|s| s["calls"].as_u64().unwrap())
        .sum()
}

#[test]
fn count_mode_counts_every_fib_call_with_inlining_on() {
    let program = compile("Calls");
    let rec = record(&program, &[], &["--mode", "count"]);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        program.run(&[]).stdout_str(),
        "profiled output differs"
    );
    let json = rec.report_json_with(&["--metric", "calls"]);
    eprintln!(
        "{}",
        serde_json::to_string_pretty(&json["call_sites"]).unwrap()
    );
    eprintln!("{:?}", calls(&json));
    eprintln!("{}", json["notes"]);
    assert_eq!(json["mode"], "count");
    assert_eq!(json["unit"], "calls");
    assert_eq!(calls_of(&json, "Calls.Fib(int)"), 242_785);
    assert_eq!(calls_of(&json, "Calls.Leaf(int)"), 1000);
    assert_eq!(calls_of(&json, "Calls.TailCaller(long)"), 1000);
    assert_eq!(calls_of(&json, "Calls.TailCallee(long, long)"), 1000);
    assert_eq!(calls_of(&json, "Calls.Main(string[])"), 1);
    // Fib(n) calls Fib(n - 1) and Fib(n - 2) once each when n >= 2: 121,392 times each.
    assert_eq!(
        site_calls(&json, "Calls.Fib(int)", "Calls.Fib(int)"),
        2 * 121_392
    );
    assert_eq!(
        site_calls(&json, "Calls.Main(string[])", "Calls.Fib(int)"),
        1
    );
    assert_eq!(
        site_calls(&json, "Calls.Main(string[])", "Calls.Leaf(int)"),
        1000
    );
    assert_eq!(
        site_calls(
            &json,
            "Calls.TailCaller(long)",
            "Calls.TailCallee(long, long)"
        ),
        1000
    );
}
