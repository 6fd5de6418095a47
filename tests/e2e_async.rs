//! Async call chains on a real runtime: `tests/programs/AsyncChain.cs` (its facts are
//! documented at its top): `Outer` awaits `Middle`, which awaits `Inner`, whose continuation
//! after `Task.Delay` runs `Work` on a thread-pool thread.

use clrprof_e2e::{OutputExt, Recording, compile, record_unchanged};

/// `Work`'s frame, the leaf of every stack of the work.
const WORK: &str = "AsyncChain.Program.Work(int)";

/// The folded stacks of `rec` (CPU), with extra report options.
fn folded(rec: &Recording, extra: &[&str]) -> Vec<(Vec<String>, u64)> {
    let mut args = vec!["--format", "folded", "--metric", "cpu"];
    args.extend_from_slice(extra);
    rec.report(&args)
        .assert_success()
        .stdout_str()
        .lines()
        .map(|l| {
            let (stack, weight) = l.rsplit_once(' ').expect("a folded line");
            let frames = stack.split(';').map(str::to_string).collect();
            (frames, weight.parse::<u64>().expect("a weight"))
        })
        .collect()
}

/// Whether `frame` is the `MoveNext` of async method `name`'s state machine
/// (`AsyncChain.Program.<Outer>c__async0.MoveNext()` as mcs names it).
fn move_next_of(frame: &str, name: &str) -> bool {
    frame.starts_with(&format!("AsyncChain.Program.<{name}>")) && frame.ends_with(".MoveNext()")
}

/// Whether `frames` (outermost first) is the whole logical chain of the work:
/// `Outer → [await] → Middle → [await] → Inner → Work`, with `Outer` at the root.
fn full_chain(frames: &[String]) -> bool {
    chain_through(frames, |inner| move_next_of(inner, "Inner"))
}

/// [`full_chain`] with an innermost async method that `is_inner` recognizes.
fn chain_through(frames: &[String], is_inner: impl Fn(&str) -> bool) -> bool {
    let [outer, a1, middle, a2, inner, work] = frames else {
        return false;
    };
    move_next_of(outer, "Outer")
        && a1 == "[await]"
        && move_next_of(middle, "Middle")
        && a2 == "[await]"
        && is_inner(inner)
        && work == WORK
}

/// The CPU of `Work` in all, and in the stacks `keep` picks.
fn work_cpu(stacks: &[(Vec<String>, u64)], keep: impl Fn(&[String]) -> bool) -> (u64, u64) {
    let work: Vec<_> = stacks
        .iter()
        .filter(|(f, _)| f.last().is_some_and(|l| l == WORK))
        .collect();
    let all = work.iter().map(|(_, w)| w).sum();
    let kept = work.iter().filter(|(f, _)| keep(f)).map(|(_, w)| w).sum();
    (all, kept)
}

/// Checks that at least 90% of `Work`'s CPU in `stacks` is in the stacks `keep` picks; the
/// CPU of `Work` in all.
fn assert_mostly(
    stacks: &[(Vec<String>, u64)],
    what: &str,
    keep: impl Fn(&[String]) -> bool,
) -> u64 {
    let (all, kept) = work_cpu(stacks, keep);
    assert!(all > 0, "no samples of Work");
    assert!(
        kept * 10 >= all * 9,
        "{kept} of {all} ns of Work's CPU {what}\n{stacks:#?}"
    );
    all
}

fn counter(rec: &Recording, name: &str) -> u64 {
    rec.report_json()["counters"][name].as_u64().unwrap_or(0)
}

#[test]
fn continuations_carry_the_chain_of_the_async_methods_that_await_them() {
    let program = compile("AsyncChain");
    let rec = record_unchanged(&program, &[], &[]);
    // The four state machines got the field (the compiler's three structs and the class
    // written by hand, which this run leaves unused); the three that run, their probes.
    assert_eq!(counter(&rec, "async_types"), 4);
    assert_eq!(counter(&rec, "async_methods"), 3);
    assert_eq!(counter(&rec, "async_failed"), 0);
    assert_eq!(counter(&rec, "async_chains_dropped"), 0);
    // The program has no precompiled code to refuse.
    assert_eq!(counter(&rec, "async_precompiled_refused"), 0);

    let logical = folded(&rec, &[]);
    let all = assert_mostly(&logical, "carry the whole chain", full_chain);

    // `--no-async`: the same samples, on the thread's own stacks.
    let physical = folded(&rec, &["--no-async"]);
    assert!(
        physical
            .iter()
            .all(|(f, _)| !f.iter().any(|x| x == "[await]")),
        "{physical:#?}"
    );
    let physical_all = assert_mostly(&physical, "are on the pool's stacks", |f| {
        !f.iter().any(|x| move_next_of(x, "Outer")) && f.iter().any(|x| move_next_of(x, "Inner"))
    });
    assert_eq!(physical_all, all);
}

#[test]
fn a_state_machine_that_is_a_class_carries_the_chain_too() {
    let program = compile("AsyncChain");
    let rec = record_unchanged(&program, &["class"], &[]);
    // The four state machines got the field; the three that run (`Inner`'s does not), their
    // probes.
    assert_eq!(counter(&rec, "async_types"), 4);
    assert_eq!(counter(&rec, "async_methods"), 3);
    assert_eq!(counter(&rec, "async_failed"), 0);
    let logical = folded(&rec, &[]);
    assert_mostly(&logical, "carry the whole chain", |f| {
        chain_through(f, |inner| inner == "AsyncChain.InnerMachine.MoveNext()")
    });
}

#[test]
fn a_second_copy_of_the_assembly_in_another_load_context_carries_the_chain_too() {
    let program = compile("AsyncChain");
    let rec = record_unchanged(&program, &["twice"], &[]);
    let out = rec.output.stdout_str();
    let totals: Vec<&str> = out.lines().map(|l| l.rsplit(' ').next().unwrap()).collect();
    assert_eq!(totals.len(), 2, "{out}");
    assert_eq!(totals[0], totals[1], "{out}");
    // Each of the two modules: its four state machines, the three that run with probes.
    assert_eq!(counter(&rec, "async_types"), 8);
    assert_eq!(counter(&rec, "async_methods"), 6);
    assert_eq!(counter(&rec, "async_failed"), 0);
    let logical = folded(&rec, &[]);
    assert_mostly(&logical, "carry the whole chain", full_chain);
}

#[test]
fn work_before_the_first_await_keeps_its_physical_stack() {
    let program = compile("AsyncChain");
    let rec = record_unchanged(&program, &["sync"], &[]);
    let logical = folded(&rec, &[]);
    assert_mostly(&logical, "are on main's own stack", |f| {
        f.iter().all(|x| x != "[await]")
            && f.iter().any(|x| x == "AsyncChain.Program.Main(string[])")
            && f.iter().any(|x| move_next_of(x, "Outer"))
    });
}

#[test]
fn no_async_leaves_the_program_without_probes() {
    let program = compile("AsyncChain");
    let rec = record_unchanged(&program, &[], &["--no-async"]);
    assert_eq!(counter(&rec, "async_types"), 0);
    assert_eq!(counter(&rec, "async_methods"), 0);
    let logical = folded(&rec, &[]);
    let (all, _) = work_cpu(&logical, |_| true);
    assert!(all > 0, "no samples of Work");
    assert!(
        logical
            .iter()
            .all(|(f, _)| !f.iter().any(|x| x == "[await]")),
        "{logical:#?}"
    );
}
