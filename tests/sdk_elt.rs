//! The SDK's enter/leave/tail-call hooks and stack walks, inside a real runtime.
//!
//! `probe-elt` (tests/probes/elt) is a profiler built on the SDK; `PROBE_SCENARIO` picks what it
//! exercises and it writes tab-separated lines to `PROBE_OUTPUT` (format in its crate docs).
//! The programs' counts and stacks are documented at the top of `tests/programs/Calls.cs`,
//! `Doubles.cs` and `Events.cs`.

use std::collections::HashMap;
use std::process::Output;

use clrprof_e2e::{OutputExt, Program, compile, example_lib, probes, run_command, run_probe};

/// The documented output of `Doubles.cs`.
const DOUBLES_OUTPUT: &str = "Mix = 406.75\n\
                              Scale = 4.25\n\
                              MakePair = (4.5, -1.5)\n\
                              SumPair = 13.5\n\
                              MakeQuad = (2, 6, 12, 20)\n\
                              Mixed = 20.25\n\
                              Loop = 145148.76872537588\n";

/// The documented output of `Calls.cs` without arguments.
const CALLS_OUTPUT: &str = "fib(25) = 75025\nleaf = 1499716\ntail = 1508500\n";

/// Tiered compilation on (the default) or off (everything optimized from the first call, which
/// is what makes the runtime do implicit tail calls deterministically).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tiering {
    Default,
    Off,
}

/// One run of a program, with or without the probe.
struct Run {
    output: Output,
    lines: Vec<String>,
}

impl Run {
    /// The fields after the kind of every line of `kind`.
    fn all(&self, kind: &str) -> Vec<Vec<&str>> {
        self.lines
            .iter()
            .filter_map(|l| {
                let mut fields = l.split('\t');
                (fields.next() == Some(kind)).then(|| fields.collect())
            })
            .collect()
    }

    /// The fields of the one line of `kind`.
    fn one(&self, kind: &str) -> Vec<&str> {
        let mut found = self.all(kind);
        assert_eq!(
            found.len(),
            1,
            "expected one `{kind}` line in {:#?}",
            self.lines
        );
        found.remove(0)
    }

    /// The second field of the one line of `kind`, as a number.
    fn num(&self, kind: &str) -> u64 {
        self.one(kind)[0]
            .parse()
            .unwrap_or_else(|e| panic!("`{kind}` is not a number: {e}"))
    }

    fn assert_no_errors(&self) {
        let errors = self.all("error");
        assert!(errors.is_empty(), "the probe reported errors: {errors:#?}");
        let stats = self.one("stats");
        assert_eq!(
            stats,
            [
                "handler_panics=0",
                "mapper_panics=0",
                "mapper_zero_ids=0",
                "sdk_panics=0"
            ],
            "{:#?}",
            self.lines
        );
    }

    /// `count` lines: function -> (enter, leave, tail).
    fn counts(&self) -> HashMap<String, (u64, u64, u64)> {
        let mut counts = HashMap::new();
        for f in self.all("count") {
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            let previous = counts.insert(f[0].to_string(), (n(1), n(2), n(3)));
            // Two FunctionIDs with one name would be generic instantiations; the test
            // programs' own methods have none.
            if f[0].starts_with("Calls.") {
                assert!(previous.is_none(), "{} counted twice", f[0]);
            }
        }
        counts
    }
}

fn run(program: &Program, args: &[&str], scenario: Option<&str>, tiering: Tiering) -> Run {
    let mut cmd = match scenario {
        Some(scenario) => {
            let mut cmd = program.command_with_profiler(probes::ELT, &example_lib("probe-elt"));
            cmd.env("PROBE_SCENARIO", scenario);
            cmd
        }
        None => program.command(),
    };
    cmd.args(args);
    if tiering == Tiering::Off {
        cmd.env("COMPlus_TieredCompilation", "0");
    }
    let (output, lines) = match scenario {
        None => {
            let output = run_command(&mut cmd);
            output.assert_success();
            (output, Vec::new())
        }
        Some(scenario) => {
            let probes::ProbeRun { output, text, .. } = run_probe(&mut cmd);
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            assert!(
                lines.contains(&format!("scenario\t{scenario}")),
                "{lines:#?}"
            );
            (output, lines)
        }
    };
    Run { output, lines }
}

// ----- floating-point arguments survive the hooks -----

#[test]
fn doubles_output_is_identical_without_and_with_hooks() {
    let program = compile("Doubles");
    let plain = run(&program, &[], None, Tiering::Default);
    assert_eq!(plain.output.stdout_str(), DOUBLES_OUTPUT);
    for (scenario, tiering) in [
        ("fast", Tiering::Default),
        ("fast", Tiering::Off),
        ("with_info", Tiering::Default),
        ("with_info", Tiering::Off),
    ] {
        let profiled = run(&program, &[], Some(scenario), tiering);
        assert_eq!(
            profiled.output.stdout, plain.output.stdout,
            "{scenario}: output differs from the unprofiled run"
        );
        assert_eq!(profiled.output.stderr_str(), "", "{scenario}");
        profiled.assert_no_errors();
    }
}

#[test]
fn with_info_reads_exact_arguments_and_return_values() {
    let run = run(
        &compile("Doubles"),
        &[],
        Some("with_info"),
        Tiering::Default,
    );
    run.assert_no_errors();
    let by_function = |kind: &str| -> HashMap<String, Vec<String>> {
        run.all(kind)
            .into_iter()
            .map(|f| {
                (
                    f[0].to_string(),
                    f[1..].iter().map(|s| s.to_string()).collect(),
                )
            })
            .collect()
    };
    let enter = by_function("enter");
    let leave = by_function("leave");
    let mix = "FloatMath.Mix(double, double, double, double, double, double, double, double, float, double)";
    // (function, first call's arguments, total argument bytes, first call's return value)
    let expected = [
        (
            mix,
            "1.5 2.25 3.125 4.0625 5.5 6.75 7.875 8 9.5 10.25",
            "total=76",
            Some("406.75"),
        ),
        (
            "FloatMath.Scale(float, float)",
            "2.5 1.5",
            "total=8",
            Some("4.25"),
        ),
        (
            "FloatMath.MakePair(double, double)",
            "1.5 3",
            "total=16",
            None,
        ),
        (
            "FloatMath.SumPair(Pair)",
            "Pair(4.5, 0)",
            "total=16",
            Some("13.5"),
        ),
        (
            "FloatMath.MakeQuad(double, double, double, double)",
            "1 2 3 4",
            "total=32",
            Some("(2, 6, 12, 20)"),
        ),
        (
            "FloatMath.Mixed(int, double, long, float, double)",
            "3 2.5 4 3.5 1.25",
            "total=32",
            Some("20.25"),
        ),
    ];
    for (function, args, total, ret) in expected {
        let e = enter
            .get(function)
            .unwrap_or_else(|| panic!("no enter line for {function}: {:#?}", run.lines));
        assert_eq!(e, &[args, total, "frame=true"], "{function}");
        let l = leave
            .get(function)
            .unwrap_or_else(|| panic!("no leave line for {function}"));
        match ret {
            Some(ret) => assert_eq!(l, &[ret], "{function}"),
            // .NET Core 3.1 reports a struct returned in two registers (here xmm0:xmm1) as the
            // 16 bytes at its saved rax, not the registers' values: the runtime's
            // ProfileArgIterator::GetReturnBufferAddr only special-cases R4/R8. Only the
            // length is right.
            None => assert!(l[0].starts_with('('), "{function}: {l:?}"),
        }
        assert!(
            run.all("calls")
                .contains(&vec![function, "1001", "1001", "0"]),
            "{function}: {:#?}",
            run.all("calls")
        );
    }
    assert_eq!(enter.len(), 6);
}

// ----- exact call counts -----

#[track_caller]
fn assert_calls_counts(run: &Run, tail_caller: (u64, u64, u64)) {
    let counts = run.counts();
    let get = |name: &str| {
        *counts
            .get(name)
            .unwrap_or_else(|| panic!("no count for {name}: {:#?}", run.all("count")))
    };
    assert_eq!(get("Calls.Fib(int)"), (242_785, 242_785, 0));
    assert_eq!(get("Calls.TailCaller(long)"), tail_caller);
    assert_eq!(get("Calls.TailCallee(long, long)"), (1000, 1000, 0));
    assert_eq!(get("Calls.Main(string[])"), (1, 1, 0));
    // Every frame ends in exactly one leave or tail call (the program throws no exception,
    // and exceptions are the only way out of a frame without either).
    for (function, (enter, leave, tail)) in &counts {
        assert_eq!(*enter, leave + tail, "{function}");
    }
}

#[test]
fn fast_hooks_count_every_call_exactly() {
    let program = compile("Calls");
    let run = run(&program, &[], Some("fast"), Tiering::Off);
    assert_eq!(run.output.stdout_str(), CALLS_OUTPUT);
    run.assert_no_errors();
    // Optimized code leaves TailCaller through an implicit fast tail call: the tail-call hook
    // replaces leave.
    assert_calls_counts(&run, (1000, 0, 1000));
    assert_eq!(run.counts()["Calls.Leaf(int)"], (1000, 1000, 0));
    let summary = run.one("summary");
    assert!(summary.contains(&"overflow=0"), "{summary:?}");
}

#[test]
fn fast_hooks_with_tiered_compilation_balance_enter_and_exit() {
    let run = run(&compile("Calls"), &[], Some("fast"), Tiering::Default);
    assert_eq!(run.output.stdout_str(), CALLS_OUTPUT);
    run.assert_no_errors();
    let counts = run.counts();
    // Tier-0 code returns normally, optimized code tail-calls: the split depends on when
    // the rejit happens, the sum does not.
    let (enter, leave, tail) = counts["Calls.TailCaller(long)"];
    assert_eq!((enter, leave + tail), (1000, 1000));
    assert_eq!(counts["Calls.Fib(int)"], (242_785, 242_785, 0));
    assert_eq!(counts["Calls.Leaf(int)"], (1000, 1000, 0));
    for (function, (enter, leave, tail)) in &counts {
        assert_eq!(*enter, leave + tail, "{function}");
    }
}

#[test]
fn the_function_id_mapper_filters_and_maps_ids() {
    let run = run(&compile("Calls"), &[], Some("fast_mapped"), Tiering::Off);
    assert_eq!(run.output.stdout_str(), CALLS_OUTPUT);
    run.assert_no_errors();
    assert_calls_counts(&run, (1000, 0, 1000));
    let counts = run.counts();
    // The mapper returned None for Leaf: no hook ever fired for it.
    assert!(!counts.contains_key("Calls.Leaf(int)"), "{counts:#?}");
    // Every hooked function was counted under the dense client id the mapper gave it.
    let summary = run.one("summary");
    let functions = summary[0].strip_prefix("functions=").unwrap();
    assert_eq!(summary[5], format!("client_ids={functions}"), "{summary:?}");
}

// ----- stacks -----

#[test]
fn snapshot_of_the_current_thread_in_exception_thrown() {
    let run = run(&compile("Events"), &[], Some("snapshot"), Tiering::Default);
    run.assert_no_errors();
    let expected = [
        "Thrower.Throw",
        "Thrower.Level3",
        "Thrower.Level2",
        "Thrower.Level1",
        "Thrower.Level3",
        "Thrower.Level2",
        "Thrower.Level1",
        "Thrower.ThrowDeep",
        "Catcher.CatchIt",
        "Events.Program.Main",
    ];
    let stacks = run.all("stack");
    assert_eq!(stacks.len(), 7, "one per exception thrown: {stacks:#?}");
    for stack in stacks {
        let frames: Vec<&str> = stack[0].split('|').collect();
        // Managed frames by name; native runs (the host below Main) are `[native]`.
        let managed: Vec<&str> = frames
            .iter()
            .filter(|f| **f != "[native]")
            .map(|f| f.split('(').next().unwrap())
            .collect();
        assert_eq!(managed, expected, "{frames:?}");
        assert_eq!(frames[0], "Thrower.Throw()");
    }
}

#[test]
fn suspended_runtime_walks_every_thread_without_allocating() {
    let run = run(
        &compile("Calls"),
        &["sleep"],
        Some("suspend"),
        Tiering::Default,
    );
    assert_eq!(run.output.stdout_str(), "sleeper started\nsleeper done\n");
    run.assert_no_errors();
    // The probe takes 30 samples 20 ms apart while the sleeper sleeps 2 s; leave room for a
    // slow machine (a sampler still running at Shutdown stops early).
    let samples = run.num("samples");
    assert!((10..=30).contains(&samples), "{:#?}", run.lines);
    // The counting allocator works (it saw its own test allocation) ...
    assert!(run.num("alloc_counter_selftest") >= 1);
    // ... and saw nothing while the runtime was suspended, in every walk of every thread.
    assert_eq!(run.num("allocs_while_suspended"), 0);
    let threads = run.one("threads");
    assert!(threads[0].parse::<u32>().unwrap() >= 2, "{threads:?}");
    assert_eq!(threads[2], "0", "threads missed: {threads:?}");
    // The sleeper thread is seen asleep in Sleeper.Nap: only Thread.Sleep (or native code)
    // above it.
    assert!(run.num("sleeper_seen") >= 1, "{:#?}", run.lines);
    let sleeper = run.one("sleeper_stack")[0].to_string();
    let (above, below) = sleeper
        .split_once("Sleeper.Nap()|")
        .unwrap_or_else(|| panic!("{sleeper}"));
    assert!(below.starts_with("Sleeper.Run()|"), "{sleeper}");
    for frame in above.split('|').filter(|f| !f.is_empty()) {
        assert!(
            frame == "[native]" || frame.starts_with("System.Threading.Thread."),
            "unexpected frame above Sleeper.Nap: {sleeper}"
        );
    }
    let main = run.one("main_stack")[0].to_string();
    assert!(
        main.contains("Sleeper.Start()|Calls.Main(string[])"),
        "{main}"
    );
    // The only acceptable reasons for a failed sample: too early, or a GC in progress.
    for failure in run.all("sample_errors") {
        assert!(
            failure[0].contains("CORPROF_E_RUNTIME_UNINITIALIZED")
                || failure[0].contains("CORPROF_E_SUSPENSION_IN_PROGRESS"),
            "{failure:?}"
        );
    }
}
