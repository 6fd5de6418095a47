//! End to end: sample mode's flat CPU profile agrees with Linux `perf`'s, which samples in
//! the kernel (see `harness/peer_perf.rs` for how the two are compared). Program:
//! tests/programs/KernelTime.cs (arithmetic, and pages faulted in and unmapped: a third of
//! its CPU is in the kernel, charged by both to the code that entered it).
//!
//! Where perf cannot sample (not installed, or perf events refused to this process), the test
//! says so on stderr and checks nothing else: `cargo xtask setup` installs perf, and CI runs
//! where it can sample.

use clrprof_e2e::peer_perf::{
    PEER_ENV, agreement, clrprof_flat, largest_differences, perf_flat, perf_usable,
    remove_perf_maps,
};
use clrprof_e2e::*;

#[test]
fn the_flat_cpu_profile_agrees_with_perf() {
    if let Err(why) = perf_usable() {
        eprintln!("SKIPPED the_flat_cpu_profile_agrees_with_perf: {why}");
        return;
    }
    let program = compile("KernelTime");
    let dir = tempfile::tempdir().unwrap();
    // 4 s of CPU: about 4,000 samples for each, and the runtime's start (every method is
    // JIT-compiled here), where the profiler's callbacks make the runtime do more, is a small
    // part of it.
    let args = ["4000"];
    // Two perf runs tell how much two samplings of the same program agree by chance.
    let perf_a = perf_flat(&program, &args, dir.path());
    let perf_b = perf_flat(&program, &args, dir.path());
    let rec = record_with_env(&program, &args, &["--rate", "1000"], PEER_ENV);
    rec.output.assert_success();
    let (trace, p) = profile_of(&rec);
    if let Some(s) = &trace.session {
        remove_perf_maps(s.pid);
    }
    let ours = clrprof_flat(&p);
    let between_perfs = agreement(&perf_a, &perf_b);
    let with_perf = agreement(&ours, &perf_a).max(agreement(&ours, &perf_b));
    eprintln!("agreement: perf with perf {between_perfs:.3}, clrprof with perf {with_perf:.3}");
    assert!(
        between_perfs > 0.8,
        "two perf runs agree only {between_perfs:.3}: {:#?}",
        largest_differences(&perf_a, &perf_b, 8)
    );
    assert!(
        with_perf >= between_perfs - 0.03,
        "clrprof agrees {with_perf:.3} with perf, perf {between_perfs:.3} with itself; \
         largest differences (function, clrprof, perf): {:#?}",
        largest_differences(&ours, &perf_a, 8)
    );
}
