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

/// Checks the calls of each `(caller, callee, calls)` in `sites`, every call site from caller to
/// callee summed; `context` ends each failure's message.
#[track_caller]
fn assert_site_calls(json: &Value, sites: &[(&str, &str, u64)], context: &str) {
    for &(caller, callee, calls) in sites {
        assert_eq!(
            site_calls(json, caller, callee),
            calls,
            "{caller} -> {callee} {context}"
        );
    }
}

#[test]
fn count_mode_counts_every_fib_call_with_inlining_on() {
    let program = compile("Calls");
    let rec = record_unchanged(&program, &[], &["--mode", "count"]);
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

/// The trace-mode program (threads, a tail call, an exception unwinding five frames, a
/// 60,000-deep recursion) gives the same counts in count mode, with tiered compilation on
/// (methods recompiled at tier 1 read the counted IL) and off (the tail call is a real one).
#[test]
fn count_mode_is_exact_across_threads_tail_calls_exceptions_and_tiers() {
    let program = compile("Traced");
    for env in [vec![], vec![("COMPlus_TieredCompilation", "0")]] {
        let rec = record_with_env(&program, &[], &["--mode", "count"], &env);
        rec.output.assert_success();
        let plain = {
            let mut cmd = program.command();
            cmd.envs(env.iter().copied());
            run_command(&mut cmd)
        };
        assert_eq!(rec.output.stdout_str(), plain.stdout_str(), "{env:?}");
        let json = rec.report_json_with(&["--metric", "calls"]);
        assert_eq!(json["counters"]["count_methods_failed"], 0, "{env:?}");
        assert_eq!(json["counters"]["count_threads_unmapped"], 0, "{env:?}");
        for &(name, calls) in TRACED_CALLS {
            assert_eq!(calls_of(&json, name), calls, "{name} {env:?}");
        }
        // Count mode knows the caller named at each call site: Callee's caller is Caller,
        // even where the tail call made it replace Caller's frame.
        let sites = &[
            ("Work.Run(int)", "Work.Step(int)", 6000),
            ("Work.Step(int)", "Work.Leaf(int)", 3000),
            ("Tail.Caller(long)", "Tail.Callee(long, long)", 100),
            ("Program.Main(string[])", "Thrower.Catch()", 10),
            ("Thrower.Catch()", "Thrower.L1()", 10),
            ("Thrower.L4()", "Thrower.L5()", 10),
            ("Thrower.Catch()", "Thrower.After()", 10),
            ("Deep.Start()", "Deep.Recurse(int)", 1),
            ("Deep.Recurse(int)", "Deep.Recurse(int)", 59_999),
            ("Program.Main(string[])", "Work.Run(int)", 0),
        ];
        assert_site_calls(&json, sites, &format!("{env:?}"));
        // Per thread: thread "t2" ran Run once, Step 2000 times, Leaf 1000 times.
        let t2 = rec.report_json_with(&["--metric", "calls", "--thread", "t2"]);
        assert_eq!(calls_of(&t2, "Work.Run(int)"), 1);
        assert_eq!(calls_of(&t2, "Work.Step(int)"), 2000);
        assert_eq!(calls_of(&t2, "Work.Leaf(int)"), 1000);
        assert_eq!(site_calls(&t2, "Work.Run(int)", "Work.Step(int)"), 2000);
    }
}

/// The cases where a count could be missed (docs/cpu-profiling.md): a callee inlined by the
/// JIT, a method recompiled by tiered compilation while counted, a generic method whose
/// instantiations share code, an exception thrown in the middle of a basic block.
#[test]
fn count_mode_counts_inlined_tiered_shared_generic_and_interrupted_calls() {
    let program = compile("Counted");
    let rec = record(&program, &[], &["--mode", "count", "--events", "jit"]);
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), program.run(&[]).stdout_str());
    let json = rec.report_json_with(&["--metric", "calls"]);
    assert_eq!(json["counters"]["count_methods_failed"], 0);
    for (name, calls) in [
        ("Counted.Main(string[])", 1),
        ("Inl.Add(int, int)", 2_000_001),
        ("Tier.Loop(int)", 20),
        ("Tier.Step(int)", 200_000),
        ("Gen.Pick<T>(T)", 15),
        ("Thrower.Middle(int)", 10),
        ("Thrower.A()", 10),
        ("Thrower.B()", 8),
    ] {
        assert_eq!(calls_of(&json, name), calls, "{name}");
    }
    let sites = &[
        ("Counted.Main(string[])", "Inl.Add(int, int)", 1),
        ("Counted.Main(string[])", "Tier.Loop(int)", 20),
        ("Tier.Loop(int)", "Inl.Add(int, int)", 2_000_000),
        ("Counted.Main(string[])", "Tier.Step(int)", 200_000),
        ("Counted.Main(string[])", "Gen.Pick<T>(T)", 15),
        ("Counted.Main(string[])", "Thrower.Middle(int)", 10),
        ("Thrower.Middle(int)", "Thrower.A()", 10),
        ("Thrower.Middle(int)", "Thrower.B()", 8),
    ];
    assert_site_calls(&json, sites, "");
    // The three call sites of Pick, one per instantiation, each with its own count.
    let mut picks: Vec<u64> = json["call_sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["callee"] == "Gen.Pick<T>(T)")
        .map(|s| s["calls"].as_u64().unwrap())
        .collect();
    picks.sort();
    assert_eq!(picks, [3, 5, 7]);
    // Add really was inlined into Loop: the counts above include inlined calls.
    let inlined = json["inlined"].as_array().expect("inlined[]");
    assert!(
        inlined
            .iter()
            .any(|i| i["callee"] == "Inl.Add(int, int)" && i["caller"] == "Tier.Loop(int)"),
        "{inlined:?}"
    );
}

/// Count mode's total is the calls it counted (not 0), and its table has one `Calls` column:
/// the self and total of a function's calls are its calls.
#[test]
fn count_mode_total_is_the_counted_calls_and_its_table_has_one_calls_column() {
    let program = compile("Calls");
    let rec = record(&program, &[], &["--mode", "count"]);
    rec.output.assert_success();
    let json = rec.report_json_with(&["--metric", "calls", "--top", "0"]);
    let functions = json["functions"].as_array().expect("functions[]");
    let sum: u64 = functions.iter().filter_map(|f| f["calls"].as_u64()).sum();
    let counted = functions
        .iter()
        .filter(|f| f["calls"].as_u64().is_some_and(|c| c > 0))
        .count();
    assert_eq!(json["total"].as_u64(), Some(sum), "{}", json["total"]);
    // Fib, Leaf, TailCaller, TailCallee and Main at least.
    let (fib, leaf, tail_caller, tail_callee, main) = (242_785, 1000, 1000, 1000, 1);
    assert!(
        sum >= fib + leaf + tail_caller + tail_callee + main,
        "{sum}"
    );

    let out = rec.report(&["--metric", "calls", "--top", "0"]);
    out.assert_success();
    let text = out.stdout_str();
    assert!(
        text.contains(&format!(
            "Total calls: {sum} (the entries of the {counted} counted functions)"
        )),
        "{text}"
    );
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("Calls%"))
        .unwrap_or_else(|| panic!("no table in\n{text}"));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["Calls%", "Calls", "Function", "Module"],
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().nth(1) == Some("242785") && l.contains("Calls.Fib(int)")),
        "{text}"
    );
    // The call tree is the samples': count mode has no calls per path, and says so.
    let tree = rec.report(&["--metric", "calls", "--tree"]);
    tree.assert_success();
    assert!(
        tree.stdout_str().contains(
            "Call tree: count mode counts the calls of each function and of each call site"
        ),
        "{}",
        tree.stdout_str()
    );
}
