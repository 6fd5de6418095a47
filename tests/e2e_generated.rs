//! End to end: code generated at run time is named, marked as generated and unwound to its
//! callers, on a real runtime. Program: tests/programs/Generated.cs (its header says what each
//! mode runs).
//!
//! A dynamic method has no metadata: the runtime names it through `GetFunctionFromIP3` and
//! `GetDynamicFunctionInfo`, and it is collected with its last reference, after which its
//! FunctionID and code memory are handed to the next one. The program runs 60 of them one
//! after the other and collects them as it goes, so a name or code range remembered under a
//! reused id would show as one method's samples at two different times.

use std::collections::BTreeMap;

use clrprof_analysis::model::{FrameKind, SampleKind};
use clrprof_e2e::*;

/// The innermost frame of a sample whose name starts with `prefix`, as (name, kind, module).
fn innermost_with<'p>(
    p: &'p clrprof_analysis::model::Profile,
    stack: Option<clrprof_analysis::StackIndex>,
    prefix: &str,
) -> Option<&'p clrprof_analysis::model::Frame> {
    let stack = stack?;
    p.stack_frames(stack)
        .into_iter()
        .rev()
        .map(|f| p.frame(f))
        .find(|f| f.name.starts_with(prefix))
}

#[test]
fn dynamic_methods_are_named_through_their_lives() {
    let program = compile("Generated");
    // Every thread on a perf event from its start: the default clock samples a thread's first
    // 200 ms or so with its CPU-time timer, which fires at the kernel's tick only (about 4
    // samples for one of these 15 ms methods at 250 Hz, none at all when the machine is busy
    // enough), and this test counts on each method's samples.
    let rec = record(
        &program,
        &["dynamic"],
        &["--rate", "1000", "--cpu-clock", "perf"],
    );
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), "generated: dynamic done\n");
    let (trace, p) = profile_of(&rec);

    // The runtime did reuse FunctionIDs: definitions in a later life of their id exist.
    let later_lives = trace
        .names
        .functions
        .values()
        .filter(|f| f.method_name.starts_with("dyn_") && f.id >> 48 != 0)
        .count();
    assert!(
        later_lives > 0,
        "no dynamic method reused an earlier one's id"
    );

    // Each dyn_i's CPU samples, in time: [first, last] and count.
    let main = thread(&p, "main");
    let mut spans: BTreeMap<usize, (u64, u64, usize)> = BTreeMap::new();
    for s in main.samples.iter().filter(|s| s.kind == SampleKind::Cpu) {
        let names = frame_names(&p, s.stack);
        if names.iter().any(|n| n.starts_with("Generated.RunFor(")) {
            assert!(
                !names
                    .iter()
                    .any(|n| n == "[native code]" || n.starts_with("[unloaded]")),
                "an unnamed frame: {names:?}"
            );
        }
        let Some(frame) = innermost_with(&p, s.stack, "DynamicClass.dyn_") else {
            continue;
        };
        assert_eq!(frame.kind, FrameKind::Generated, "{}", frame.name);
        assert_eq!(frame.module, "Generated.dll", "{}", frame.name);
        let i: usize = frame
            .name
            .strip_prefix("DynamicClass.dyn_")
            .and_then(|r| r.strip_suffix("(long)"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected name {}", frame.name));
        // Called through its delegate by RunFor, called by RunDynamic, called by Main.
        let at = names.iter().rposition(|n| *n == frame.name).unwrap();
        assert_eq!(
            names[..at].iter().rev().take(3).collect::<Vec<_>>(),
            [
                "Generated.RunFor(System.Func<long, long>, long)",
                "Generated.RunDynamic(int)",
                "Generated.Main(string[])",
            ],
            "{names:?}"
        );
        let span = spans.entry(i).or_insert((s.time_ns, s.time_ns, 0));
        span.0 = span.0.min(s.time_ns);
        span.1 = span.1.max(s.time_ns);
        span.2 += 1;
    }
    // Every method ran for 15 ms of CPU, about 15 samples: each has samples under its own
    // name, unless the samples of its time were all missed (the sampler fell behind: the
    // report counts them), and the methods' samples follow each other in the order they
    // ran, without overlapping.
    let missed = p.sampling.as_ref().expect("sampling facts").samples_missed;
    let unsampled: Vec<usize> = (0..60).filter(|i| !spans.contains_key(i)).collect();
    if unsampled.len() as u64 * 10 > missed {
        // What the thread ran instead, in the order it ran it.
        let leaves: Vec<String> = main
            .samples
            .iter()
            .filter(|s| s.kind == SampleKind::Cpu)
            .map(|s| {
                let names = frame_names(&p, s.stack);
                format!(
                    "{} {}",
                    s.time_ns / 1_000_000,
                    names.last().cloned().unwrap_or_default()
                )
            })
            .collect();
        panic!(
            "no samples of dyn_{unsampled:?}, and only {missed} samples missed; the thread's samples: {leaves:#?}"
        );
    }
    let mut order: Vec<(usize, (u64, u64, usize))> = spans.into_iter().collect();
    order.sort_by_key(|(_, (first, _, _))| *first);
    for pair in order.windows(2) {
        let ((a, (_, a_last, _)), (b, (b_first, _, _))) = (pair[0], pair[1]);
        assert!(b > a, "dyn_{b} was sampled before dyn_{a}'s samples ended");
        assert!(
            a_last < b_first,
            "dyn_{a} and dyn_{b} were sampled at the same time: {order:?}"
        );
    }

    // The 20 compiled expressions are 20 bodies, each in its own entry (15 ms each, so all
    // are sampled unless their samples were missed).
    let lambdas: std::collections::BTreeSet<&str> = main
        .samples
        .iter()
        .filter(|s| s.kind == SampleKind::Cpu)
        .filter_map(|s| innermost_with(&p, s.stack, "DynamicClass.lambda_method"))
        .map(|f| {
            assert_eq!(f.kind, FrameKind::Generated);
            f.name.as_str()
        })
        .collect();
    assert!(
        lambdas.len() <= 20 && (20 - lambdas.len()) as u64 * 10 <= missed,
        "{} compiled expressions sampled, {missed} samples missed: {lambdas:#?}",
        lambdas.len()
    );
}

#[test]
fn a_compiled_regex_is_named() {
    let program = compile("Generated");
    let rec = record(&program, &["regex"], &["--rate", "1000"]);
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), "generated: regex done\n");
    let (_, p) = profile_of(&rec);
    let main = thread(&p, "main");
    // The compiled expression's code is a dynamic method: `Go1` up to .NET Core 3.1,
    // `Regex1_Scan` and its helpers since .NET 7.
    let (mut matching, mut generated) = (0, 0);
    for s in main.samples.iter().filter(|s| s.kind == SampleKind::Cpu) {
        let names = frame_names(&p, s.stack);
        if !names.iter().any(|n| n == "Generated.MatchRegex()") {
            continue;
        }
        matching += 1;
        assert!(
            !names.iter().any(|n| n == "[native code]"),
            "an unnamed frame: {names:?}"
        );
        if let Some(f) = innermost_with(&p, s.stack, "DynamicClass.") {
            assert_eq!(f.kind, FrameKind::Generated);
            assert!(
                f.name.starts_with("DynamicClass.Go")
                    || f.name.starts_with("DynamicClass.FindFirstChar")
                    || f.name.starts_with("DynamicClass.Regex1_"),
                "{}",
                f.name
            );
            assert!(!f.name.contains("<internal"), "{}", f.name);
            generated += 1;
        }
    }
    assert!(matching > 20, "{matching} samples in MatchRegex");
    assert!(
        generated * 2 > matching,
        "{generated} of {matching} samples in the compiled expression's code"
    );
}

#[test]
fn trace_mode_says_which_generated_methods_ran_without_hooks() {
    let program = compile("Generated");
    let rec = record(&program, &["dynamic"], &["--mode", "trace"]);
    rec.output.assert_success();
    let json = rec.report_json();
    let notes: Vec<&str> = json["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let note = notes
        .iter()
        .find(|n| n.contains("generated at run time"))
        .unwrap_or_else(|| panic!("no note about generated code: {notes:#?}"));
    // 60 dynamic methods and 20 compiled expressions at least (the runtime adds IL stubs).
    let count: usize = note
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the note starts with a count");
    assert!(count >= 80, "{note}");
    assert!(note.contains("DynamicClass.dyn_0(long)"), "{note}");
    // No function of the call trees is a generated one: the runtime calls no hooks for them.
    for f in json["functions"].as_array().unwrap() {
        assert_ne!(f["kind"], "generated", "{f}");
    }
}
