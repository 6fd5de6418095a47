//! End to end: CPU profiling on a real CoreCLR, in both modes, and every export format.
//! Programs: tests/programs/{Calls,Traced,Hot,Doubles}.cs (their headers state what they do).

use std::collections::HashMap;

use clrprof_e2e::*;
use serde_json::Value;

fn calls_of(json: &Value, name: &str) -> u64 {
    functions_by_name(json)
        .get(name)
        .unwrap_or_else(|| panic!("no function {name}"))
        .get("calls")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The merged call tree: nodes by id.
struct Tree {
    nodes: HashMap<u64, Value>,
}

impl Tree {
    fn of(json: &Value) -> Tree {
        let nodes = json["call_tree"]["nodes"]
            .as_array()
            .expect("call_tree.nodes");
        Tree {
            nodes: nodes
                .iter()
                .map(|n| (n["id"].as_u64().unwrap(), n.clone()))
                .collect(),
        }
    }
    fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.nodes.values().filter(move |n| n["name"] == name)
    }
    fn parent_name(&self, node: &Value) -> String {
        node["parent"]
            .as_u64()
            .and_then(|p| self.nodes.get(&p))
            .map_or(String::new(), |p| p["name"].as_str().unwrap().to_string())
    }
    /// Calls along the edges `caller -> callee`, summed over all such nodes.
    fn edge_calls(&self, caller: &str, callee: &str) -> u64 {
        self.named(callee)
            .filter(|n| self.parent_name(n) == caller)
            .map(|n| n["calls"].as_u64().unwrap())
            .sum()
    }
}

#[test]
fn trace_mode_counts_every_fib_call() {
    let program = compile("Calls");
    let rec = record_unchanged(&program, &[], &["--mode", "trace"]);
    let json = rec.report_json_with(&["--metric", "calls"]);
    assert_eq!(json["mode"], "trace");
    assert_eq!(json["unit"], "calls");
    assert_eq!(calls_of(&json, "Calls.Fib(int)"), 242_785);
    assert_eq!(calls_of(&json, "Calls.Leaf(int)"), 1000);
}

/// Time in trace mode is sampled on the shadow stack, so it needs a run long enough to be
/// sampled many times: Fib(32) three times (about 100 ms under the hooks, where Fib(25) above
/// lasts a few milliseconds and may fall between two samples on a loaded machine).
#[test]
fn trace_mode_gives_time_to_the_function_that_spends_it() {
    let program = compile("Calls");
    let rec = record(&program, &["bench", "32"], &["--mode", "trace"]);
    rec.output.assert_success();
    let calls = rec.report_json_with(&["--metric", "calls"]);
    // 3 x (2 * F(33) - 1) with F(33) = 3,524,578.
    assert_eq!(calls_of(&calls, "Calls.Fib(int)"), 21_147_465);

    let wall = rec.report_json_with(&["--metric", "wall"]);
    assert_eq!(wall["unit"], "ns");
    let functions = functions_by_name(&wall);
    let fib = functions["Calls.Fib(int)"]["total"].as_u64().unwrap();
    let main = functions["Calls.Main(string[])"]["total"].as_u64().unwrap();
    // Main does little else than call Fib (parse an int, print one line).
    assert!(
        fib > 0 && fib * 2 > main,
        "Fib {fib} ns of Main's {main} ns"
    );
}

#[test]
fn trace_mode_is_exact_across_threads_tail_calls_exceptions_and_deep_recursion() {
    let program = compile("Traced");
    let env = [("COMPlus_TieredCompilation", "0")];
    let rec = record_with_env(&program, &[], &["--mode", "trace"], &env);
    rec.output.assert_success();
    let plain = {
        let mut cmd = program.command();
        cmd.envs(env);
        run_command(&mut cmd)
    };
    assert_eq!(
        rec.output.stdout_str(),
        plain.stdout_str(),
        "profiled output differs"
    );

    let json = rec.report_json_with(&["--metric", "calls"]);
    assert_eq!(
        json["counters"]["shadow_stack_mismatches"], 0,
        "{}",
        json["counters"]
    );
    assert_eq!(json["counters"]["call_tree_nodes_dropped"], 0);
    for &(name, calls) in TRACED_CALLS {
        assert_eq!(calls_of(&json, name), calls, "{name}");
    }

    let tree = Tree::of(&json);
    assert_eq!(tree.edge_calls("Work.Run(int)", "Work.Step(int)"), 6000);
    assert_eq!(tree.edge_calls("Work.Step(int)", "Work.Leaf(int)"), 3000);
    assert_eq!(
        tree.edge_calls("Program.Main(string[])", "Work.Run(int)"),
        0,
        "Run runs on its own threads"
    );
    // The tail call: Callee takes Caller's frame, so its caller is Main, and Caller has no callee.
    assert_eq!(
        tree.edge_calls("Program.Main(string[])", "Tail.Caller(long)"),
        100
    );
    assert_eq!(
        tree.edge_calls("Program.Main(string[])", "Tail.Callee(long, long)"),
        100
    );
    assert_eq!(
        tree.edge_calls("Tail.Caller(long)", "Tail.Callee(long, long)"),
        0
    );
    // The exception unwound L5..L1: After is called from Catch, not from anything below it.
    for (caller, callee) in [
        ("Program.Main(string[])", "Thrower.Catch()"),
        ("Thrower.Catch()", "Thrower.L1()"),
        ("Thrower.L1()", "Thrower.L2()"),
        ("Thrower.L2()", "Thrower.L3()"),
        ("Thrower.L3()", "Thrower.L4()"),
        ("Thrower.L4()", "Thrower.L5()"),
        ("Thrower.Catch()", "Thrower.After()"),
    ] {
        assert_eq!(tree.edge_calls(caller, callee), 10, "{caller} -> {callee}");
    }
    assert_eq!(
        tree.named("Thrower.After()").count(),
        1,
        "After has exactly one call path"
    );
    // 60,000-deep recursion: a chain of 60,000 nodes with one call each, under Deep.Start.
    let recurse: Vec<&Value> = tree.named("Deep.Recurse(int)").collect();
    assert_eq!(recurse.len(), 60_000);
    assert!(recurse.iter().all(|n| n["calls"] == 1));
    assert_eq!(tree.edge_calls("Deep.Start()", "Deep.Recurse(int)"), 1);

    // Per thread: thread "t2" ran Run once, Step 2000 times, Leaf 1000 times.
    let t2 = rec.report_json_with(&["--metric", "calls", "--thread", "t2"]);
    assert_eq!(calls_of(&t2, "Work.Run(int)"), 1);
    assert_eq!(calls_of(&t2, "Work.Step(int)"), 2000);
    assert_eq!(calls_of(&t2, "Work.Leaf(int)"), 1000);
}

#[test]
fn sample_mode_finds_the_hot_method_and_splits_cpu_from_wall() {
    let program = compile("Hot");
    let rec = record(&program, &[], &["--mode", "sample", "--rate", "1000"]);
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), "hot: done\n");

    let cpu = rec.report_json_with(&["--metric", "cpu"]);
    assert_eq!(cpu["mode"], "sample");
    let top = &cpu["functions"][0];
    assert_eq!(
        top["name"],
        "Hot.Spin(long)",
        "hottest by self CPU: {:#?}",
        &cpu["functions"].as_array().unwrap()[..5]
    );
    assert_eq!(top["module"], "Hot.dll");
    let share = top["self"].as_f64().unwrap() / cpu["total"].as_f64().unwrap();
    assert!(
        share >= 0.70,
        "Hot.Spin has {:.1}% of CPU samples",
        share * 100.0
    );

    // The sleeper: all wall time, (next to) no CPU.
    let thread = |json: &Value, name: &str| {
        json["cpu_threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
    };
    let wall = rec.report_json_with(&["--metric", "wall"]);
    let sleeper = thread(&wall, "sleeper").expect("the sleeping thread is in the wall-clock view");
    // Its wall time covers its wait, as long as the program measured it (the wait lies within
    // the thread's life; wall-clock samples come every 50 ms), and no more than the recording.
    let nap_ns: f64 = reported(&rec.output.stderr_str(), "hot: sleeper nap_ns ");
    let duration = wall["duration_ns"].as_f64().unwrap();
    let sleeper_wall_ns = sleeper["wall_ns"].as_f64().unwrap();
    assert!(
        sleeper_wall_ns >= 0.95 * nap_ns && sleeper_wall_ns <= duration,
        "{sleeper}: its wait took {nap_ns} ns, the recording {duration} ns"
    );
    // Its stack is unwound through libc and the runtime back into managed code: the wait in
    // WaitHandle.WaitOne, called from Sleeper.Nap, called from Sleeper.Run. On 3.1 the
    // precompiled WaitOne() calls WaitOneNoCheck without a frame pointer of its own (its
    // prologue tells where its caller's return address is); on .NET 8 it jumps to
    // WaitOneNoCheck (a tail call), so WaitOne() is not on the stack at all there.
    let nap = rec.report_json_with(&["--metric", "wall", "--thread", "sleeper"]);
    let sleeper_wall = sleeper["wall_ns"].as_f64().unwrap();
    let path: &[&str] = if Dotnet::get().major_minor() >= (8, 0) {
        &[
            "Sleeper.Run()",
            "Sleeper.Nap()",
            "System.Threading.WaitHandle.WaitOneNoCheck(int)",
        ]
    } else {
        &[
            "Sleeper.Run()",
            "Sleeper.Nap()",
            "System.Threading.WaitHandle.WaitOne()",
            "System.Threading.WaitHandle.WaitOneNoCheck(int)",
        ]
    };
    for &name in path {
        let total = functions_by_name(&nap)
            .get(name)
            .map(|f| f["total"].as_f64().unwrap())
            .unwrap_or(0.0);
        assert!(
            total > 0.8 * sleeper_wall,
            "the sleeper's wall time is in {name}: {:#?}",
            nap["functions"]
        );
    }
    // Sleeping costs no CPU: the sleeper used a few milliseconds of CPU to start, enter its
    // wait and wake, and park (the kernel says how many once it is parked, so that no CPU of
    // it comes after the reading), and its CPU samples, those in its wait included, stand
    // for no more than that. (A sample can land in the wait: entering and
    // leaving it takes CPU, and a sample stands for the CPU since the thread's previous one.)
    let measured: f64 = reported(&rec.output.stderr_str(), "hot: sleeper cpu_ns ");
    assert!(measured < 50e6, "the sleeper used {measured} ns of CPU");
    let sleeper_cpu = rec.report_json_with(&["--metric", "cpu", "--thread", "sleeper"]);
    let sampled = sleeper_cpu["total"].as_f64().unwrap();
    assert!(
        sampled <= measured,
        "{sampled} ns of CPU sampled on the sleeper, which used {measured} ns: {:#?}",
        sleeper_cpu["functions"]
    );
}

#[test]
fn program_output_is_identical_in_every_mode() {
    let program = compile("Doubles");
    let plain = program.run(&[]);
    plain.assert_success();
    for args in [
        &["--mode", "sample"][..],
        &["--mode", "trace"][..],
        &["--mode", "trace", "--no-inline"][..],
        &["--mode", "none", "--events", "all"][..],
    ] {
        let rec = record(&program, &[], args);
        rec.output.assert_success();
        assert_eq!(
            rec.output.stdout, plain.stdout,
            "output differs under {args:?}"
        );
    }
}

#[test]
fn no_inline_counts_calls_that_inlining_would_hide() {
    let program = compile("Calls");
    let inlined =
        record(&program, &[], &["--mode", "trace"]).report_json_with(&["--metric", "calls"]);
    let every = record(&program, &[], &["--mode", "trace", "--no-inline"])
        .report_json_with(&["--metric", "calls"]);
    // With inlining off every call is counted: at least as many distinct functions and calls,
    // and nothing reported as inlined.
    assert!(
        every["total"].as_u64() > inlined["total"].as_u64(),
        "{} vs {}",
        every["total"],
        inlined["total"]
    );
    assert!(
        !inlined["inlined"].as_array().unwrap().is_empty(),
        "inlining is reported by default"
    );
    assert!(
        every["inlined"].as_array().unwrap().is_empty(),
        "--no-inline: nothing inlined"
    );
    assert_eq!(calls_of(&every, "Calls.Fib(int)"), 242_785);
}

/// What a newcomer reads first: the text report fits the width asked (and a pipe gets whole
/// lines), stacks start at `Main` or the thread's start delegate unless `--all-frames`, and
/// wall time leaves out the runtime's service threads, says what its total sums, and its
/// per-thread table follows `--thread`.
#[test]
fn the_text_report_fits_its_width_starts_at_main_and_explains_wall_time() {
    let program = compile("Hot");
    let rec = record(&program, &[], &[]);
    rec.output.assert_success();
    for args in [
        &["--width", "80"][..],
        &["--width", "80", "--tree"],
        &["--width", "80", "--metric", "wall", "--tree"],
        &[
            "--width",
            "100",
            "--tree",
            "--all-frames",
            "--thread",
            "all",
        ],
    ] {
        let out = rec.report(args);
        out.assert_success();
        let width: usize = args[1].parse().unwrap();
        let text = out.stdout_str();
        for line in text.lines() {
            assert!(
                line.chars().count() <= width,
                "{args:?}: {} columns: {line:?}\n{text}",
                line.chars().count()
            );
        }
    }
    let whole = rec.report(&["--tree", "--all-frames"]);
    whole.assert_success();
    assert!(
        !whole.stdout_str().contains('…'),
        "a report to a pipe is not cut:\n{}",
        whole.stdout_str()
    );

    // Stacks start at the managed entry: Main, the sleeper's delegate.
    let stacks = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--format", "folded"];
        all.extend_from_slice(args);
        let out = rec.report(&all);
        out.assert_success();
        out.stdout_str()
            .lines()
            .map(|l| l.rsplit_once(' ').expect("stack weight").0.to_string())
            .collect()
    };
    // A stack that ended early keeps its frames and its marker (its outermost managed frame
    // need not be its entry): on CoreCLR 3.1 a walk through the runtime's class loading
    // above `Main` rarely meets a frame pointer outside the stack.
    let entry = stacks(&[]);
    let with_main: Vec<&String> = entry
        .iter()
        .filter(|s| s.contains("Hot.Main(") && !s.starts_with("[stack ended early"))
        .collect();
    assert!(!with_main.is_empty(), "{entry:#?}");
    for s in &with_main {
        assert!(s.starts_with("Hot.Main(string[])"), "{s}");
    }
    let wall = stacks(&["--metric", "wall", "--thread", "sleeper"]);
    assert!(
        wall.iter()
            .any(|s| s.starts_with("Sleeper.Run();Sleeper.Nap()")),
        "{wall:#?}"
    );
    let all = stacks(&["--all-frames"]);
    assert!(
        all.iter()
            .any(|s| s.contains(";Hot.Main(string[])") && !s.starts_with("Hot.Main(")),
        "--all-frames keeps the frames above Main: {all:#?}"
    );

    // Wall time: the program's threads, each its own time, summed and said so.
    let json = rec.report_json_with(&["--metric", "wall"]);
    let threads: Vec<(String, u64)> = json["cpu_threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["wall_ns"].as_u64() > Some(0))
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    let names: Vec<&str> = threads.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"main") && names.contains(&"sleeper"),
        "{names:?}"
    );
    for name in &names {
        assert!(
            !name.starts_with(".NET ") && *name != "finalizer" && *name != "tiered compilation",
            "a runtime service thread in the wall-time profile: {names:?}"
        );
    }
    let all_threads = rec.report_json_with(&["--metric", "wall", "--thread", "all"]);
    assert!(
        all_threads["cpu_threads"].as_array().unwrap().len() > threads.len(),
        "--thread all shows the runtime's threads too"
    );
    let out = rec.report(&["--metric", "wall"]);
    out.assert_success();
    let text = out.stdout_str();
    assert!(
        text.contains(&format!(
            "the wall time of {} threads summed (",
            threads.len()
        )),
        "{text}"
    );
    assert!(text.contains("  runtime service threads ("), "{text}");
    assert!(text.contains("service thread"), "{text}");
    // The per-thread table shows the thread asked for, whatever --top says.
    let sleeper_tid = threads.iter().find(|(n, _)| n == "sleeper").unwrap().1;
    let out = rec.report(&["--metric", "wall", "--thread", "sleeper", "--top", "1"]);
    out.assert_success();
    let text = out.stdout_str();
    let table = text
        .split("\nWall time by thread")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-thread table in\n{text}"));
    assert!(
        table.contains(&format!("  sleeper ({sleeper_tid}) ")),
        "{table}"
    );
    assert!(!table.contains("main ("), "{table}");
    assert!(!table.contains("runtime service threads"), "{table}");
}
