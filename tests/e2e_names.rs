//! End to end: one entry per compiled body, named as C# shows it. Programs:
//! tests/programs/Generics.cs (its header lists every body and its exact calls) and
//! tests/programs/Plugin.cs (compiled twice, as PluginA.dll and PluginB.dll).
//!
//! What the runtime does, and what the names must say: generic code over value types is
//! compiled per instantiation (`Two<int, long>.M`); code over reference types is compiled once
//! per canonical instantiation, over `System.__Canon`, so `Two<int, string>` and `Two<string,
//! int>` are two bodies (`Two<int, __Canon>`, `Two<__Canon, int>`) and `Two<string, string>`
//! and `Two<object, string>` are one (`Two<__Canon, __Canon>`). Trace mode counts calls per
//! body (per FunctionID), so each body's count is exact.

use std::collections::HashMap;

use clrprof_e2e::*;
use serde_json::Value;

/// A number of a function of a JSON report (`calls`, `self`, `total`).
#[track_caller]
fn value_of(json: &Value, name: &str, key: &str) -> u64 {
    let functions = functions_by_name(json);
    let f = functions.get(name).unwrap_or_else(|| {
        let mut names: Vec<&String> = functions.keys().collect();
        names.sort();
        panic!("no function {name} among {names:#?}")
    });
    f[key].as_u64().unwrap_or(0)
}

/// Calls along the call path `path` (callers first, ending with the callee), summed over
/// the merged call tree's nodes where such a path ends.
fn path_calls(json: &Value, path: &[&str]) -> u64 {
    let nodes: HashMap<u64, &Value> = json["call_tree"]["nodes"]
        .as_array()
        .expect("call_tree.nodes")
        .iter()
        .map(|n| (n["id"].as_u64().unwrap(), n))
        .collect();
    nodes
        .values()
        .filter(|n| ends_path(&nodes, n, path))
        .map(|n| n["calls"].as_u64().unwrap())
        .sum()
}

/// Whether the path from the root to `node` ends with `path`.
fn ends_path<'a>(nodes: &HashMap<u64, &'a Value>, mut node: &'a Value, path: &[&str]) -> bool {
    for (i, name) in path.iter().rev().enumerate() {
        if i > 0 {
            match node["parent"].as_u64().and_then(|p| nodes.get(&p)) {
                Some(parent) => node = parent,
                None => return false,
            }
        }
        if node["name"] != *name {
            return false;
        }
    }
    true
}

/// The dictionary method a lookup spends its time in: `FindEntry` up to .NET Core 3.1,
/// `FindValue` (returning a reference to the value) since .NET 5.
fn find_method() -> &'static str {
    if Dotnet::get().major_minor().0 >= 5 {
        "FindValue"
    } else {
        "FindEntry"
    }
}

const DICTIONARY: &str = "System.Collections.Generic.Dictionary";

/// `Generics calls PluginA.dll PluginB.dll` in trace mode with inlining off (so that the
/// framework's dictionary methods are counted too).
fn traced() -> Recording {
    let program = compile("Generics");
    let source = std::fs::read_to_string(programs_dir().join("Plugin.cs")).unwrap();
    let a = compile_source("PluginA", &source);
    let b = compile_source("PluginB", &source);
    let (a, b) = (a.dll.to_str().unwrap(), b.dll.to_str().unwrap());
    let rec = record(
        &program,
        &["calls", a, b],
        &["--mode", "trace", "--no-inline"],
    );
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        "two: 3 4 7 6 | 11 12 | 13 14\n\
         money: 9 10\n\
         lookups: 15 16\n\
         plugin 0: 17 calls\n\
         plugin 1: 18 calls\n"
    );
    rec
}

#[test]
fn trace_mode_counts_each_generic_body_exactly() {
    let rec = traced();
    let json = rec.report_json_with(&["--metric", "calls"]);
    for (name, calls) in [
        ("Two<int, __Canon>.M(int, __Canon, int)", 3),
        ("Two<__Canon, int>.M(__Canon, int, int)", 4),
        // Two<string, string> (5 calls) and Two<object, string> (2) run the same body.
        ("Two<__Canon, __Canon>.M(__Canon, __Canon, int)", 7),
        ("Two<int, long>.M(int, long, int)", 6),
        ("Two<int, __Canon>.Both(int, __Canon)", 11),
        ("Two<__Canon, int>.Both(__Canon, int)", 12),
        ("Two<int, __Canon>.Pick<__Canon>(__Canon)", 13),
        ("Two<int, __Canon>.Pick<int>(int)", 14),
        ("Two<int, __Canon>..ctor()", 1),
        ("Two<__Canon, int>..ctor()", 1),
        ("Two<__Canon, __Canon>..ctor()", 2),
        ("Two<int, long>..ctor()", 1),
    ] {
        assert_eq!(value_of(&json, name, "calls"), calls, "{name}");
        assert_eq!(
            functions_by_name(&json)[name]["module"],
            "Generics.dll",
            "{name}"
        );
    }
    // Every function of Two is one of the bodies above: none is named with the declared
    // parameters (the name a body gets when its instantiation is not known).
    let two: Vec<String> = functions_by_name(&json)
        .into_keys()
        .filter(|n| n.starts_with("Two<"))
        .collect();
    assert_eq!(two.len(), 12, "{two:#?}");
}

#[test]
fn trace_mode_keeps_conversion_operators_apart_by_return_type() {
    let rec = traced();
    let json = rec.report_json_with(&["--metric", "calls"]);
    assert_eq!(
        value_of(&json, "Money.op_Implicit(Money) -> int", "calls"),
        9
    );
    assert_eq!(
        value_of(&json, "Money.op_Implicit(Money) -> long", "calls"),
        10
    );
    assert!(
        !functions_by_name(&json).contains_key("Money.op_Implicit(Money)"),
        "an operator without its return type"
    );
}

#[test]
fn trace_mode_counts_framework_dictionary_bodies_per_instantiation() {
    let rec = traced();
    let json = rec.report_json_with(&["--metric", "calls"]);
    // The framework calls Dictionary<__Canon, __Canon> itself (any dictionary with
    // reference-type keys and values runs that body), so the program's calls are counted
    // on the call paths from its own methods.
    let find = find_method();
    for (caller, body, key, calls) in [
        (
            "Lookups.IntKeys(System.Collections.Generic.Dictionary<int, string>, int)",
            format!("{DICTIONARY}<int, __Canon>"),
            "int",
            15,
        ),
        (
            "Lookups.StringKeys(System.Collections.Generic.Dictionary<string, string>, int)",
            format!("{DICTIONARY}<__Canon, __Canon>"),
            "__Canon",
            16,
        ),
    ] {
        let try_get = format!("{body}.TryGetValue({key}, out __Canon)");
        assert_eq!(path_calls(&json, &[caller, &try_get]), calls, "{try_get}");
        let find = format!("{body}.{find}({key})");
        assert_eq!(
            path_calls(&json, &[caller, &try_get, &find]),
            calls,
            "{find}"
        );
    }
    // Dictionary<int, string> is the only Dictionary<int, reference type> of the program,
    // and the framework uses none while it runs: its body's count is exact.
    assert_eq!(
        value_of(
            &json,
            &format!("{DICTIONARY}<int, __Canon>.TryGetValue(int, out __Canon)"),
            "calls"
        ),
        15
    );
}

#[test]
fn folded_output_marks_the_module_of_a_name_found_in_two_assemblies() {
    let rec = traced();
    // Text and JSON keep the two apart by their module.
    let json = rec.report_json_with(&["--metric", "calls"]);
    let runs: Vec<(String, u64)> = json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == "Lib.Util.Run(int)")
        .map(|f| {
            (
                f["module"].as_str().unwrap().to_string(),
                f["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut sorted = runs.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            ("PluginA.dll".to_string(), 17),
            ("PluginB.dll".to_string(), 18)
        ]
    );

    // Folded stacks name frames only: the colliding name carries its module, the others
    // do not.
    let folded = rec.report(&["--format", "folded", "--metric", "calls"]);
    folded.assert_success();
    let folded = folded.stdout_str();
    let weight = |leaf: &str| -> u64 {
        folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(stack, _)| stack.ends_with(leaf))
            .map(|(_, w)| w.parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(weight(";Lib.Util.Run(int) [PluginA.dll]"), 17, "{folded}");
    assert_eq!(weight(";Lib.Util.Run(int) [PluginB.dll]"), 18, "{folded}");
    assert!(
        folded
            .lines()
            .filter(|l| l.contains("Lib.Util.Run(int)"))
            .all(|l| l.contains("Lib.Util.Run(int) [Plugin")),
        "an unmarked Run: {folded}"
    );
    assert!(folded.contains("Program.Main(string[]);"), "{folded}");
    assert!(!folded.contains("[Generics.dll]"), "{folded}");

    // The flame graph is drawn from the folded stacks.
    let svg = rec.report(&["--format", "flamegraph", "--metric", "calls"]);
    svg.assert_success();
    let svg = svg.stdout_str();
    for name in [
        "Lib.Util.Run(int) [PluginA.dll]",
        "Lib.Util.Run(int) [PluginB.dll]",
    ] {
        assert!(svg.contains(name), "{name} is not in the flame graph");
    }
}

#[test]
fn sample_mode_keeps_generic_bodies_apart() {
    let program = compile("Generics");
    // With dynamic PGO (on by default since .NET 8) the JIT inlines the dictionary's lookup
    // into the program's loop, and then it is no body of its own; without it, it is.
    let rec = record_with_env(
        &program,
        &["spin"],
        &["--mode", "sample"],
        &[("DOTNET_TieredPGO", "0")],
    );
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), "spin: done\n");
    let json = rec.report_json_with(&["--metric", "cpu"]);
    let two = [
        "Two<int, __Canon>.M(int, __Canon, int)",
        "Two<__Canon, int>.M(__Canon, int, int)",
        "Two<__Canon, __Canon>.M(__Canon, __Canon, int)",
        "Two<int, long>.M(int, long, int)",
    ];
    // The four bodies run the same loop for as many iterations: about a quarter of their CPU
    // time each, as the program's own clock measured it (a loaded machine makes the same loop
    // cost more or less); each entry's share of the samples is its body's share within 5
    // points. An entry standing for two bodies would have twice its share.
    let measured: Vec<f64> = rec
        .output
        .stderr_str()
        .lines()
        .find_map(|l| l.strip_prefix("spin: cpu_ns "))
        .expect("Generics reports the bodies' CPU")
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let measured_sum: f64 = measured.iter().sum();
    let cpu: Vec<u64> = two.iter().map(|n| value_of(&json, n, "self")).collect();
    let sum: u64 = cpu.iter().sum();
    for ((name, ns), truth) in two.iter().zip(&cpu).zip(&measured) {
        let (share, true_share) = (*ns as f64 / sum as f64, truth / measured_sum);
        assert!(
            (share - true_share).abs() <= 0.05,
            "{name}: {:.1}% of the four bodies' samples, {:.1}% of their measured CPU ({ns} of {sum} ns sampled; measured {measured:?})",
            share * 100.0,
            true_share * 100.0
        );
    }
    for name in [
        "Money.op_Implicit(Money) -> int",
        "Money.op_Implicit(Money) -> long",
    ] {
        assert!(value_of(&json, name, "self") > 0, "{name}");
    }
    let find = find_method();
    for name in [
        format!("{DICTIONARY}<int, __Canon>.{find}(int)"),
        format!("{DICTIONARY}<__Canon, __Canon>.{find}(__Canon)"),
    ] {
        assert!(value_of(&json, &name, "total") > 0, "{name}");
    }
    for merged in [
        "Two<A, B>.M(A, B, int)",
        "Money.op_Implicit(Money)",
        &format!("{DICTIONARY}<TKey, TValue>.{find}(TKey)"),
    ] {
        assert!(!functions_by_name(&json).contains_key(merged), "{merged}");
    }
}
