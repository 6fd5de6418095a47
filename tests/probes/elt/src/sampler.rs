//! The `suspend` scenario: a native sampler thread (spawned from `Initialize`; it never runs
//! managed code) takes [`SAMPLES`] stop-the-world samples with [`stack::walk_all_threads`],
//! [`INTERVAL`] apart, counting every allocation made while a sample is being taken (the
//! runtime suspended). Functions are named only after the runtime is resumed.
//!
//! Lines: `samples\t<n>`, `allocs_while_suspended\t<n>`, `alloc_counter_selftest\t<n>`,
//! `pause_us\t<min>\t<median>\t<max>`, `threads\t<max walked>\t<max reported>\t<missed>`,
//! `sleeper_seen\t<samples>`, `sleeper_stack\t<frames>` (the first stack holding
//! `Sleeper.Nap`), `main_stack\t<frames>` (the first holding `Sleeper.Start`),
//! `walk_errors\t<error>\t<count>` (per-thread walk failures), `sample_errors\t<error>\t<count>`
//! (failed suspensions, e.g. before the runtime started).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clrprof_sdk::stack::{self, StackPool};
use clrprof_sdk::{EventMask, ProfilerInfo, Result};

use super::{counting_alloc, emit, name};

const SAMPLES: usize = 30;
const INTERVAL: Duration = Duration::from_millis(20);
/// Give up if the runtime never lets us sample.
const GIVE_UP: Duration = Duration::from_secs(30);

static STOP: AtomicBool = AtomicBool::new(false);
static DONE: AtomicBool = AtomicBool::new(false);

pub fn start(info: &ProfilerInfo) -> Result<()> {
    info.set_event_mask(EventMask::ENABLE_STACK_SNAPSHOT)?;
    let info = info.clone();
    let spawned = std::thread::Builder::new()
        .name("probe-elt-sampler".into())
        .spawn(move || {
            run(&info);
            DONE.store(true, Ordering::SeqCst);
        });
    if let Err(e) = spawned {
        super::error("spawn", e);
        DONE.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Called from `Shutdown`: asks the sampler to stop and waits (bounded) for its lines.
pub fn stop_and_wait() {
    STOP.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !DONE.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    if !DONE.load(Ordering::SeqCst) {
        super::error("sampler", "did not finish within 5 s of Shutdown");
    }
}

fn run(info: &ProfilerInfo) {
    emit(format!(
        "alloc_counter_selftest\t{}",
        counting_alloc::self_test()
    ));
    let mut pool = StackPool::new(64, 512);
    let mut pauses: Vec<Duration> = Vec::with_capacity(SAMPLES);
    let mut sample_errors = BTreeMap::<String, u64>::new();
    let mut walk_errors = BTreeMap::<String, u64>::new();
    let (mut sleeper_seen, mut sleeper_stack, mut main_stack) = (0u64, None, None);
    let (mut max_walked, mut max_total, mut missed) = (0, 0, 0);
    let allocs_before = counting_alloc::counted();
    let give_up = Instant::now() + GIVE_UP;

    while pauses.len() < SAMPLES && !STOP.load(Ordering::SeqCst) && Instant::now() < give_up {
        // From here until `counting(false)` the SDK must not allocate.
        counting_alloc::counting(true);
        let started = Instant::now();
        let walked = stack::walk_all_threads(info, &mut pool).map(|stacks| stacks.len());
        let pause = started.elapsed();
        counting_alloc::counting(false);

        match walked {
            Ok(n) => {
                pauses.push(pause);
                max_walked = max_walked.max(n);
                max_total = max_total.max(pool.total_threads());
                missed += pool.missed_threads();
            }
            Err(e) => {
                *sample_errors.entry(e.to_string()).or_default() += 1;
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        }
        // The runtime runs again: naming is allowed now.
        for s in pool.stacks() {
            if let Some(hr) = s.error() {
                *walk_errors.entry(hr.to_string()).or_default() += 1;
            }
            let names: Vec<String> = s.frames().iter().map(|f| name(info, f.function)).collect();
            let joined = names.join("|");
            if names.iter().any(|n| n.starts_with("Sleeper.Nap(")) {
                sleeper_seen += 1;
                sleeper_stack.get_or_insert(joined.clone());
            }
            if names.iter().any(|n| n.starts_with("Sleeper.Start(")) {
                main_stack.get_or_insert(joined);
            }
        }
        std::thread::sleep(INTERVAL);
    }

    let allocs = counting_alloc::counted() - allocs_before;
    emit(format!("samples\t{}", pauses.len()));
    emit(format!("allocs_while_suspended\t{allocs}"));
    let mut sorted = pauses.clone();
    sorted.sort();
    if let (Some(min), Some(max)) = (sorted.first(), sorted.last()) {
        emit(format!(
            "pause_us\t{}\t{}\t{}",
            min.as_micros(),
            sorted[sorted.len() / 2].as_micros(),
            max.as_micros()
        ));
    }
    emit(format!("threads\t{max_walked}\t{max_total}\t{missed}"));
    emit(format!("sleeper_seen\t{sleeper_seen}"));
    if let Some(s) = sleeper_stack {
        emit(format!("sleeper_stack\t{s}"));
    }
    if let Some(s) = main_stack {
        emit(format!("main_stack\t{s}"));
    }
    for (e, n) in walk_errors {
        emit(format!("walk_errors\t{e}\t{n}"));
    }
    for (e, n) in sample_errors {
        emit(format!("sample_errors\t{e}\t{n}"));
    }
}
