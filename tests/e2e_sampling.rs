//! End to end: sample mode tells the truth about CPU and wall time on a real runtime.
//! Program: tests/programs/Sampling.cs (its header states what each mode does).
//!
//! CPU samples come from each thread's own CPU clock, so a thread that does not run is never
//! interrupted for them and gets none; wall-clock samples of blocked threads cost at most one
//! signal per place a thread waits. These tests read the trace with the analysis library to see
//! every sample and its whole stack.

use clrprof_analysis::model::{FrameKind, Profile, SampleKind, ThreadProfile};
use clrprof_analysis::trace::LoadedTrace;
use clrprof_e2e::*;

/// The CPU of a thread's samples, those of missed samples (under their marker) included.
fn cpu_ns(t: &ThreadProfile) -> u64 {
    t.samples.iter().map(|s| s.cpu_ns).sum()
}

/// The CPU of a thread's samples whose stack is known: the CPU no sample saw left out (that of
/// missed samples, and that after the thread's last sample: where it went is not known; the
/// report counts it apart, each under its marker).
fn known_cpu_ns(p: &Profile, t: &ThreadProfile) -> u64 {
    t.samples
        .iter()
        .filter(|s| {
            !frame_names(p, s.stack)
                .first()
                .is_some_and(|f| f.starts_with("[CPU "))
        })
        .map(|s| s.cpu_ns)
        .sum()
}

/// CPU samples the sampler took on thread `t` (not the markers under which the CPU no sample
/// saw is counted: that of missed samples, and that after the thread's last sample).
fn cpu_samples(p: &Profile, t: &ThreadProfile) -> usize {
    t.samples
        .iter()
        .filter(|s| {
            s.kind == SampleKind::Cpu
                && !frame_names(p, s.stack)
                    .first()
                    .is_some_and(|f| f.starts_with("[CPU "))
        })
        .count()
}

/// Records the test program `name` with `args` at 1 kHz, checks that it succeeded and printed
/// `stdout`, and loads its trace.
#[track_caller]
fn sampled(name: &str, args: &[&str], stdout: &str) -> (Recording, LoadedTrace, Profile) {
    let rec = record(&compile(name), args, &["--rate", "1000"]);
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), stdout);
    let (trace, p) = profile_of(&rec);
    (rec, trace, p)
}

/// Checks that the spin/sleep worker's CPU is in the method that computes (at least 90% of the
/// CPU of its samples whose stack is known).
#[track_caller]
fn assert_worker_cpu_is_in_compute(p: &Profile, worker: &ThreadProfile) {
    let compute = cpu_in(p, worker, "SpinSleep.Compute()");
    let known = known_cpu_ns(p, worker);
    assert!(
        compute * 100 >= known * 90,
        "worker: {compute} of {known} ns of CPU in SpinSleep.Compute"
    );
}

/// The share of `first`'s CPU in that of `first` and `second` on thread `t`.
fn cpu_share(p: &Profile, t: &ThreadProfile, first: &str, second: &str) -> f64 {
    let first = cpu_in(p, t, first) as f64;
    let second = cpu_in(p, t, second) as f64;
    first / (first + second)
}

#[test]
fn idle_threads_cost_no_cpu_and_are_asked_once() {
    let (_rec, trace, p) = sampled("Sampling", &["idle"], "idle: done\n");

    let idle: Vec<&ThreadProfile> = p
        .threads
        .iter()
        .filter(|t| t.name.starts_with("idle"))
        .collect();
    assert_eq!(idle.len(), 50, "every idle thread is in the profile");
    // No sample charges a blocked thread's wait as CPU. What each really ran (starting,
    // waking, ending: 0.1 to 1 ms each, measured) no sample saw: it stands under the marker
    // of CPU after the last sample.
    let idle_cpu: u64 = idle.iter().map(|t| known_cpu_ns(&p, t)).sum();
    assert!(
        idle_cpu < 5_000_000,
        "the 50 blocked threads were charged {idle_cpu} ns of CPU"
    );
    // Blocked the whole time: their wall time is in the wait, under the method that waits.
    let main = thread(&p, "main");
    let work_ns: u64 = main.samples.iter().map(|s| s.wall_ns).sum();
    for t in &idle {
        let wall: u64 = t.samples.iter().map(|s| s.wall_ns).sum();
        let in_block: u64 = t
            .samples
            .iter()
            .filter(|s| {
                frame_names(&p, s.stack)
                    .iter()
                    .any(|f| f == "Idle.Block(object)")
            })
            .map(|s| s.wall_ns)
            .sum();
        assert!(wall > 0 && work_ns > 0);
        let elsewhere: Vec<(u64, Vec<String>)> = t
            .samples
            .iter()
            .filter(|s| s.wall_ns > 0)
            .map(|s| (s.wall_ns, frame_names(&p, s.stack)))
            .filter(|(_, frames)| !frames.iter().any(|f| f == "Idle.Block(object)"))
            .collect();
        assert!(
            in_block * 100 >= wall * 95,
            "{}: {in_block} of {wall} ns in Idle.Block; the rest: {elsewhere:#?}",
            t.name
        );
    }
    // Interrupted at most once per place a thread waits: the 50 threads wait in one place each
    // (the runtime's own threads add a few).
    let questions = trace.counter(clrprof_trace::counters::CounterName::SamplerQuestions);
    assert!(
        questions <= 2 * p.threads.len() as u64,
        "{questions} signals to blocked threads for {} threads",
        p.threads.len()
    );
    // The CPU went to the work.
    let spin = cpu_in(&p, main, "Idle.Spin(long)");
    assert!(
        spin * 100 >= known_cpu_ns(&p, main) * 90,
        "main: {spin} of {} ns in Idle.Spin",
        known_cpu_ns(&p, main)
    );
}

/// The CPU samples of the spin/sleep worker (with the markers of the CPU of missed samples and
/// of the CPU after its last sample) and what the profiler cost that thread (its signal
/// handlers, the agent's callbacks: never the program's) add up to the CPU its own clock
/// measured, but for its start before the agent armed its clock (not in the samples) and its
/// end after it last read its clock (in the samples since the CPU after the last sample is).
fn assert_worker_cpu_is_accounted(
    rec: &Recording,
    trace: &LoadedTrace,
    p: &Profile,
    worker: &ThreadProfile,
) {
    let measured: u64 = reported(&rec.output.stderr_str(), "spinsleep: worker cpu_ns ");
    let samples = cpu_samples(p, worker);
    assert!(samples > 50, "{samples} CPU samples of the worker");
    let sampled = cpu_ns(worker);
    let profiler = trace.thread_profiler_cpu_ns(worker.tid);
    assert!(profiler > 0, "the profiler's cost on the worker is counted");
    // Measured: the two differ by -220 to +410 us (the start before the clock was armed, the
    // end after the program's last reading) of 725 ms to 2.4 s. The thread's last period, up
    // to a few scheduler ticks of CPU on a CPU-time timer, is under its marker since format
    // 1.8: without it the samples fell short by up to 8 ms.
    let accounted = sampled + profiler;
    assert!(
        accounted.abs_diff(measured) * 1000 <= measured,
        "the worker's samples stand for {sampled} ns of CPU and the profiler cost it {profiler} ns; its clock says {measured} ns"
    );
}

/// CPU of thread `t`'s samples whose stack contains `function`.
fn cpu_in(p: &Profile, t: &ThreadProfile, function: &str) -> u64 {
    t.samples
        .iter()
        .filter(|s| frame_names(p, s.stack).iter().any(|f| f == function))
        .map(|s| s.cpu_ns)
        .sum()
}

#[test]
fn cpu_is_charged_where_it_is_spent_and_sleeping_costs_nothing() {
    let (rec, trace, p) = sampled("Sampling", &["spinsleep"], "spinsleep: done\n");

    let worker = thread(&p, "worker");
    assert_worker_cpu_is_in_compute(&p, worker);
    assert_worker_cpu_is_accounted(&rec, &trace, &p, worker);

    let sleeper = thread(&p, "sleeper");
    assert_eq!(
        cpu_samples(&p, sleeper),
        0,
        "a thread that sleeps the whole run has no CPU samples"
    );
    let slept: u64 = sleeper.samples.iter().map(|s| s.wall_ns).sum();
    assert!(slept > 1_500_000_000, "the sleeper's wall time: {slept} ns");

    // The main thread waits in Thread.Join the whole time, waking once when the worker ends.
    // Waking up runs a little code inside Join (microseconds), where a CPU sample may land: it
    // then stands for the CPU since the thread's previous sample, at most a period (1.5 ms at
    // most, drawn around 1 ms). So at most two such samples (one per Join), never the tens of
    // milliseconds a sampler that charges blocked threads gives.
    let main = thread(&p, "main");
    let join_cpu = cpu_in(&p, main, "System.Threading.Thread.Join()");
    assert!(
        join_cpu <= 3_000_000,
        "{join_cpu} ns of CPU charged to Thread.Join"
    );
}

/// Where perf events are refused (stricter containers), the CPU-time timer takes over: the
/// kernel checks those at its scheduler tick, so fewer samples, but each weighs the CPU its
/// thread really used, and the report says which clock was used.
#[test]
fn the_timer_clock_samples_the_same_truth() {
    let program = compile("Sampling");
    // At most 250 samples per CPU second here (the kernel's tick): run longer for as many
    // samples as the perf clock takes in the default run.
    let rec = record(
        &program,
        &["spinsleep", "5000"],
        &["--rate", "1000", "--cpu-clock", "timer"],
    );
    rec.output.assert_success();
    let (trace, p) = profile_of(&rec);
    let info = trace.sampler.as_ref().expect("SamplerInfo");
    assert_eq!(info.cpu_clock, "thread CPU-time timer");
    let sampling = p.sampling.as_ref().unwrap();
    assert_eq!(sampling.cpu_clock, "thread CPU-time timer");
    let worker = thread(&p, "worker");
    assert_worker_cpu_is_in_compute(&p, worker);
    assert_worker_cpu_is_accounted(&rec, &trace, &p, worker);
    assert_eq!(cpu_samples(&p, thread(&p, "sleeper")), 0);
}

#[test]
fn the_hot_method_gets_its_true_share() {
    let program = compile("Hot");
    let rec = record(&program, &[], &["--rate", "1000"]);
    rec.output.assert_success();
    // The program measures how much CPU each method used (the thread's CPU clock around each
    // call).
    let measured: f64 = reported(&rec.output.stderr_str(), "hot: spin share ");
    let (_, p) = profile_of(&rec);
    let main = thread(&p, "main");
    let share = cpu_share(&p, main, "Hot.Spin(long)", "Hot.Other(long)");
    // About 1,500 samples: the sampled share is within 3 standard deviations (about 3 points).
    assert!(
        (share - measured).abs() < 0.03,
        "Hot.Spin has {:.3} of the CPU samples, {measured:.3} of the CPU time",
        share
    );
    let json = rec.report_json_with(&["--metric", "cpu"]);
    assert_eq!(json["functions"][0]["name"], "Hot.Spin(long)");
}

#[test]
fn stacks_of_waiting_threads_reach_their_start() {
    let (_, _, p) = sampled("Sampling", &["tasks"], "tasks: done\n");
    let sampling = p.sampling.as_ref().expect("sampling facts");
    assert!(
        sampling.ended_early * 100 < sampling.samples,
        "{} of {} samples end early: {:?}",
        sampling.ended_early,
        sampling.samples,
        sampling.ended_early_by_reason
    );
    // The main thread's waits sit under Main, whatever the wait: about 170 ms in WaitAll, 4 x
    // 120 ms in Wait and 300 ms in Task.Delay(300).Wait().
    let main = thread(&p, "main");
    let mut waiting_ns = 0;
    for s in main.samples.iter().filter(|s| s.kind == SampleKind::Wall) {
        let names = frame_names(&p, s.stack);
        let waiting = names.iter().any(|f| {
            f.starts_with("System.Threading.Tasks.Task.Wait")
                || f.starts_with("System.Threading.Tasks.Task.InternalWait")
        });
        if waiting {
            waiting_ns += s.wall_ns;
            assert!(
                names.iter().any(|f| f == "Program.Main(string[])"),
                "a wait without Main above it: {names:?}"
            );
        }
    }
    assert!(
        waiting_ns > 800_000_000,
        "{waiting_ns} ns of the main thread's wall time in a task wait"
    );
    // Every thread's stacks start where the thread started, in native code (libc's thread
    // start, or the process's entry for the main thread).
    for t in &p.threads {
        for s in &t.samples {
            let Some(stack) = s.stack else { continue };
            let root = p.frame(p.stack_frames(stack)[0]);
            assert!(
                root.kind == FrameKind::Truncated || root.kind == FrameKind::Native,
                "{}: a stack starting at {}",
                t.label(),
                root.name
            );
        }
    }
}

#[test]
fn loop_methods_keep_their_callers_under_on_stack_replacement() {
    let (_, _, p) = sampled("Loops", &[], "loops: done\n");
    let main = thread(&p, "main");
    // Each method's samples, and those of them where the frames above it are not its callers
    // (or where the method shows twice in a row: an OSR frame and the Tier0 frame it
    // replaced).
    let callers: [(&str, &[&str]); 4] = [
        ("Loops.Multiply(long)", &["Loops.Main()"]),
        ("Loops.Shift(long)", &["Loops.Main()"]),
        ("Loops.Outer(long)", &["Loops.Main()"]),
        ("Loops.Inner(long)", &["Loops.Main()", "Loops.Outer(long)"]),
    ];
    for (method, above) in callers {
        let (mut samples, mut wrong) = (0, Vec::new());
        for s in main.samples.iter().filter(|s| s.kind == SampleKind::Cpu) {
            let names = frame_names(&p, s.stack);
            let Some(at) = names.iter().rposition(|f| f == method) else {
                continue;
            };
            samples += 1;
            let ok = at >= above.len() && names[at - above.len()..at] == *above;
            if !ok {
                wrong.push(names);
            }
        }
        assert!(samples > 20, "{method}: {samples} samples");
        assert!(
            wrong.len() * 100 < samples,
            "{method}: {} of {samples} samples without {above:?} above; first: {:?}",
            wrong.len(),
            wrong.first()
        );
    }
}

/// System time of thread `t`'s samples whose stack contains `function`, and the CPU of those
/// of them that tell user from kernel time (a perf event's samples).
fn sys_in(p: &Profile, t: &ThreadProfile, function: &str) -> (u64, u64) {
    t.samples
        .iter()
        .filter(|s| frame_names(p, s.stack).iter().any(|f| f == function))
        .fold((0, 0), |(sys, known), s| {
            (sys + s.sys_ns, known + s.mode_known_cpu_ns)
        })
}

/// Time a thread spends in the kernel (page faults, system calls) is its CPU time, charged
/// to the code that entered the kernel, as `perf` charges it, and not to whatever user code
/// runs next; the report tells which part of each function's CPU was system time.
#[test]
fn kernel_time_is_charged_to_the_code_that_entered_the_kernel() {
    let program = compile("KernelTime");
    let rec = record_unchanged(&program, &[], &["--rate", "1000"]);
    // The program's own split of its CPU (user + system) between the two phases.
    let measured: f64 = reported(&rec.output.stderr_str(), "kernel: touch share ");
    let (_, p) = profile_of(&rec);
    let main = thread(&p, "main");
    let share = cpu_share(&p, main, "KernelTime.Touch()", "KernelTime.Arith(long)");
    // About 1,500 samples: within 3 standard deviations of a share near 0.4 (4 points).
    assert!(
        (share - measured).abs() < 0.04,
        "KernelTime.Touch has {share:.3} of the CPU samples, {measured:.3} of the CPU time"
    );
    // Perf events tell whether each period ended in the kernel (the default clock gives one
    // to a thread that runs all the time, as this one, once it has seen it so for a while;
    // here every thread gets one from the start). Touch is mostly page faults and munmap (the
    // kernel's own accounting gives it about 70% system time, 10-20% of which it misplaces
    // into Arith, as it splits a thread's time at its ticks); Arith is all user time.
    let rec = record(&program, &[], &["--rate", "1000", "--cpu-clock", "perf"]);
    rec.output.assert_success();
    let (_, p) = profile_of(&rec);
    let main = thread(&p, "main");
    let touch = cpu_in(&p, main, "KernelTime.Touch()");
    let arith = cpu_in(&p, main, "KernelTime.Arith(long)");
    let (touch_sys, touch_known) = sys_in(&p, main, "KernelTime.Touch()");
    let (arith_sys, arith_known) = sys_in(&p, main, "KernelTime.Arith(long)");
    // (The CPU of samples missed when the sampler fell behind is carried by the samples on
    // either side of the gap, without a mode.)
    assert!(
        touch_known * 2 > touch && arith_known * 2 > arith,
        "perf events sampled {touch_known} of Touch's {touch} ns and {arith_known} of Arith's {arith} ns"
    );
    assert!(
        touch_sys as f64 > 0.8 * touch_known as f64,
        "Touch: {touch_sys} of {touch_known} ns in the kernel"
    );
    assert!(
        (arith_sys as f64) < 0.03 * arith_known as f64,
        "Arith: {arith_sys} of {arith_known} ns in the kernel"
    );
    let json = rec.report_json_with(&["--metric", "cpu"]);
    let row = json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "KernelTime.Touch()")
        .map(|f| f["total_sys_ns"].as_u64().unwrap());
    assert_eq!(row, Some(touch_sys), "{json:#}");
}

/// CPU of thread `t`'s samples whose innermost frame is `name`.
fn leaf_cpu(p: &Profile, t: &ThreadProfile, name: &str) -> u64 {
    t.samples
        .iter()
        .filter(|s| frame_names(p, s.stack).last().is_some_and(|f| f == name))
        .map(|s| s.cpu_ns)
        .sum()
}

/// The runtime's write barrier is named on both runtimes: CoreCLR 3.1 runs it in libcoreclr,
/// whose symbols name it; .NET 8 runs a copy of it in memory of its own, which the sampler
/// recognizes by its content. A program that does little but store references spends a large
/// share of its CPU there (measured: 48% on .NET 8.0.4, 23% on CoreCLR 3.1.23, whose barrier
/// does less), none of it in a nameless stub.
#[test]
fn the_write_barrier_is_named() {
    let (_rec, _trace, p) = sampled("WriteBarrier", &[], "stores: 102400000\n");
    let main = thread(&p, "main");
    let all: u64 = main.samples.iter().map(|s| s.cpu_ns).sum();
    let leaf_cpu = |name: &str| leaf_cpu(&p, main, name);
    let barrier_name = if Dotnet::get().major_minor() >= (7, 0) {
        "[write barrier]"
    } else {
        "JIT_WriteBarrier"
    };
    let barrier = leaf_cpu(barrier_name);
    let unnamed = leaf_cpu("[runtime stub]");
    assert!(
        barrier * 10 > all,
        "{barrier} of {all} ns in {barrier_name}"
    );
    assert!(
        unnamed * 100 < all,
        "{unnamed} of {all} ns in a nameless runtime stub"
    );
    // It is the runtime's code, shown as libcoreclr's.
    let module = p
        .frames
        .iter()
        .find(|f| f.name == barrier_name)
        .map(|f| f.module.clone());
    assert_eq!(module.as_deref(), Some("libcoreclr.so"));
}

/// The runtime's stubs are named by kind, as its perf map names them: a program that spends
/// most of its time in interface calls on three classes spends it in their resolve stub.
#[test]
fn runtime_stubs_are_named_by_kind() {
    let (_rec, trace, p) = sampled("Dispatch", &[], "dispatch: 29943200000\n");
    let main = thread(&p, "main");
    let all: u64 = main.samples.iter().map(|s| s.cpu_ns).sum();
    let leaf_cpu = |name: &str| leaf_cpu(&p, main, name);
    let resolve = leaf_cpu("[stub: interface resolve]");
    let unnamed = leaf_cpu("[runtime stub]");
    if Dotnet::get().major_minor() >= (5, 0) {
        assert!(
            resolve * 5 > all,
            "{resolve} of {all} ns in the interface resolve stub"
        );
        assert!(
            unnamed * 100 < all,
            "{unnamed} of {all} ns in stubs not named by kind"
        );
    } else {
        // CoreCLR 3.1's perf map can crash a program as it exits: `record` does not ask for
        // it, and the stubs are one nameless frame, where the same time goes.
        assert_eq!(resolve, 0);
        assert!(
            unnamed * 5 > all,
            "{unnamed} of {all} ns in the nameless runtime stub"
        );
    }
    // `record` asked for the runtime's perf map, and left no file of it behind.
    let pid = trace.session.as_ref().expect("a session").pid;
    for dir in [std::env::temp_dir(), std::path::PathBuf::from("/tmp")] {
        for name in [format!("perf-{pid}.map"), format!("perfinfo-{pid}.map")] {
            assert!(!dir.join(&name).exists(), "{} left behind", name);
        }
    }
}
