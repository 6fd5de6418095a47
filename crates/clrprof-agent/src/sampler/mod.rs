//! The sampler thread.
//!
//! **Sample mode** takes two kinds of samples, and stops no thread for either:
//!
//! - *CPU samples*, where the CPU is spent: each thread has a CPU clock that interrupts it
//!   after every `1/rate` seconds of CPU it uses ([`crate::recorder::cpu_clock`]); the signal
//!   handler, on the thread itself, records its stack into the thread's capture ring
//!   ([`crate::recorder::capture`]). A thread that does not run is never interrupted for CPU
//!   sampling. The sampler reads the rings, unwinds and names the stacks ([`frames`]) and
//!   writes one sample per capture, weighed with the CPU the thread used since its previous
//!   one (the handlers' own time excluded, see [`book`]).
//! - *Wall-clock samples*, where the time goes: every `1/wall_rate` seconds each thread gets
//!   one sample of the time since its previous one, with the stack where it waits (or, if it
//!   runs, of its latest capture). Where a blocked thread waits is learnt without waking it
//!   again and again: its CPU clock tells whether it ran since it was found blocked, `/proc`
//!   where it waits now ([`procfs`]), and only a wait never seen on that thread costs one
//!   signal, whose answer is the stack ([`book`]).
//!
//! The sampler also arms the CPU clocks of threads that were not armed when they registered,
//! adopts the process's threads the runtime never announced (its own native threads, and after
//! an attach the threads that were already running), and names threads as the kernel does
//! (`.NET TP Worker`, ...). Everything that may allocate or lock (naming, interning,
//! encoding) happens here, never in a handler. This thread never runs managed code, which
//! keeps it a "native" thread for the runtime: it may call the runtime's asynchronous methods
//! (GetFunctionFromIP, GetFunctionInfo2) at any time.
//!
//! **Trace mode** reads each thread's current call tree node at `rate` Hz ([`trace`]).

mod book;
mod frames;
pub mod gone_code;
mod known_stacks;
mod mappings;
mod method_shapes;
mod module_reading;
mod procfs;
pub mod stats;
mod stubs;
mod switches;
mod trace;
mod write_barrier;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use clrprof_trace::{
    Record, Sample, SampleClock, SamplerInfo, StackCut, ThreadOsName, ThreadState,
};

use crate::async_chains::AsyncChains;
use crate::config::{CpuClockChoice, Mode};
use crate::recorder::cpu_clock::{self, Armed, Chosen, ClockKind, Policy};
use crate::recorder::ring::{ASKED, BY_PERF, BY_TIMER, CPU, IN_KERNEL, MODE_KNOWN};
use crate::recorder::threads::{self, ThreadSlot};
use crate::recorder::{capture, sys};
use crate::session::{Feature, Session};
use book::{Book, CaptureClock, WallSample, split_missed};
use frames::{Resolved, StackBuilder};
use trace::TraceTicker;

pub use gone_code::GoneCode;
use gone_code::GoneSeen;
pub use method_shapes::prologue_at;
pub use stats::SamplerStats;

/// The name of the counter of the profiler's CPU on one thread, before its OS thread id.
pub const THREAD_PROFILER_CPU: &str = clrprof_trace::counters::THREAD_PROFILER_CPU_PREFIX;
/// CPU a thread on a CPU-time timer uses without a sample before the sampler looks at its timer:
/// a few ticks at the slowest usual tick rate (100 Hz). A timer no longer set was not re-armed
/// (its signal was lost); one still set is blind to the thread (see `watch_clock`).
pub(crate) const TIMER_LATE_NS: u64 = 40_000_000;
/// How often the sampler looks for threads the runtime did not announce.
const THREAD_SCAN_NS: u64 = 1_000_000_000;
/// A thread's name is read when it is first seen and again after this many wall ticks (the
/// runtime names some of its threads once they run).
const RENAME_AFTER_TICKS: u32 = 50;

/// A running sampler thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// Sampling as one of the session's features: the sampler thread, while it runs.
#[derive(Default)]
pub struct Sampling(Mutex<Option<Sampler>>);

impl Sampling {
    /// Starts the sampler thread for `session` (which must live for the rest of the process),
    /// splicing the async callers of `chains` into its stacks where they are on.
    pub fn start(&self, session: &'static Session, chains: Option<&'static AsyncChains>) {
        let sampler = Sampler::start(session, chains);
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = sampler;
    }
}

impl Feature for Sampling {
    /// Stops the sampler thread, if it runs, and waits for it.
    fn stop(&self, _s: &Session) {
        let sampler = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(sampler) = sampler {
            sampler.stop();
        }
    }
}

impl Sampler {
    /// Starts sampling for `session` (which must live for the rest of the process).
    fn start(session: &'static Session, chains: Option<&'static AsyncChains>) -> Option<Sampler> {
        if session.config.mode.samples() && !capture::install() {
            session.warn(
                "stack sampling is not supported on this platform; no samples will be recorded",
            );
            return None;
        }
        // The clock is chosen here, on the thread that starts the session: at startup the
        // program's main thread, which the runtime announces to no callback. It is registered
        // and its clock armed now, so that its CPU is sampled from the start rather than from
        // when the sampler thread gets to adopt it.
        let clock = session.config.mode.samples().then(|| choose_clock(session));
        if let Some(Some(_)) = clock
            && !session.attached
            && let Some(slot) = threads::register_current(0)
        {
            cpu_clock::arm_slot(slot, capture::SAMPLE_SIGNAL);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stop);
        let handle =
            threads::spawn_agent_thread("clrprof-sampler", move || match session.config.mode {
                Mode::Sample | Mode::Count => {
                    SampleLoop::new(session, clock.flatten(), chains).run(&stop_flag)
                }
                Mode::Trace => run_trace(session, &stop_flag),
                Mode::None => {}
            })
            .ok()?;
        Some(Sampler {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it. In sample mode every CPU clock is disarmed by then.
    fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        capture::WAKE.fetch_add(1, Ordering::AcqRel);
        sys::futex_wake(&capture::WAKE);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Randomized sampling intervals.
///
/// A sampler that ticks at a fixed period falls into step with a program whose work is
/// periodic too (a loop alternating two calls of fixed length): every tick then lands in the
/// same phase of the loop, and one function gets far more samples than its share of time
/// (measured: a method using 15% of the CPU got 27% of the samples at 1 kHz and 72% at 500 Hz).
/// Drawing each interval uniformly from [0.5, 1.5] x the period keeps the mean rate and breaks
/// any such lock-step. (CPU samples need none of this: they follow each thread's own CPU
/// clock.)
struct Jitter(u64);

impl Jitter {
    fn new(seed: u64) -> Jitter {
        Jitter(seed | 1)
    }

    /// The next interval for a nominal `period_ns`.
    fn interval(&mut self, period_ns: u64) -> u64 {
        // xorshift64: cheap, no allocation, plenty random for spreading ticks.
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        period_ns / 2 + x % period_ns.max(1)
    }
}

/// Trace mode: ticks at the configured rate until stopped.
fn run_trace(session: &'static Session, stop: &AtomicBool) {
    let period = 1_000_000_000 / u64::from(session.config.rate_hz.max(1));
    let mut ticker = TraceTicker::new(session);
    let mut deadline = sys::monotonic_ns();
    let mut jitter = Jitter::new(deadline);
    session.out.push_record(&Record::SamplerInfo(SamplerInfo {
        cpu_clock: String::new(),
        cpu_rate_hz: 0,
        wall_rate_hz: session.config.rate_hz,
    }));
    while !stop.load(Ordering::Acquire) {
        deadline += jitter.interval(period);
        let now = sys::monotonic_ns();
        if deadline > now {
            std::thread::sleep(Duration::from_nanos(deadline - now));
        } else {
            deadline = now; // fell behind: do not try to catch up with a burst
        }
        session.sampler_stats.ticks.fetch_add(1, Ordering::Relaxed);
        ticker.tick();
        for (i, slot) in threads::in_use().iter().enumerate() {
            if slot.is_dead() {
                ticker.forget(i);
                slot.release();
            }
        }
        record_own_cpu(session);
    }
}

/// Stores the sampler thread's CPU time in its counter.
fn record_own_cpu(session: &Session) {
    let stats = &session.sampler_stats;
    let readers = stats.symbols_cpu_ns.load(Ordering::Relaxed);
    stats
        .cpu_ns
        .store(sys::own_cpu_ns().saturating_add(readers), Ordering::Relaxed);
}

/// What the sampler keeps for each thread slot in use, made when the slot is first used (a
/// table for every possible slot was nearly half a megabyte to fault in, and to free, on every
/// run, however few threads the program had).
struct PerSlot<T>(Vec<T>);

impl<T> Default for PerSlot<T> {
    fn default() -> Self {
        PerSlot(Vec::new())
    }
}

impl<T: Default> PerSlot<T> {
    fn at(&mut self, slot: usize) -> &mut T {
        if slot >= self.0.len() {
            self.0.resize_with(slot + 1, T::default);
        }
        &mut self.0[slot]
    }
}

/// Sample mode's loop and what it keeps.
struct SampleLoop {
    session: &'static Session,
    stacks: StackBuilder,
    books: PerSlot<Book>,
    clock: Option<Chosen>,
    period_ns: u64,
    wall_period_ns: u64,
    /// Each slot's thread's `/proc` files, once opened.
    task_files: PerSlot<procfs::TaskFiles>,
    /// The process's own name: a thread called the same has no name of its own.
    process_name: String,
    /// Scratch list of thread ids.
    tids: Vec<u32>,
    /// The notices of unloaded code looked at (see [`GoneCode`]).
    gone_seen: GoneSeen,
}

/// Chooses the session's CPU clocks (see [`cpu_clock::choose`]) and says which in the trace.
fn choose_clock(session: &Session) -> Option<Chosen> {
    let period_ns = 1_000_000_000 / u64::from(session.config.rate_hz.max(1));
    let wanted = match session.config.cpu_clock {
        None => Policy::Adaptive,
        Some(CpuClockChoice::Perf) => Policy::Fixed(ClockKind::PerfTaskClock),
        Some(CpuClockChoice::Timer) => Policy::Fixed(ClockKind::ThreadCpuTimer),
    };
    let chosen = cpu_clock::choose(wanted, period_ns, capture::SAMPLE_SIGNAL);
    capture::set_floor(session.config.handler_floor);
    session.out.push_record(&Record::SamplerInfo(SamplerInfo {
        cpu_clock: chosen.map_or(String::new(), |c| c.name().to_owned()),
        cpu_rate_hz: session.config.rate_hz,
        wall_rate_hz: session.config.wall_rate().max(1),
    }));
    match chosen {
        None => session.warn(
            "no per-thread CPU clock is available (perf events and CPU-time timers were \
             refused): only wall-clock samples are taken",
        ),
        Some(c) if c.policy == Policy::Fixed(ClockKind::PerfTaskClock) && !c.perf_kernel => session
            .warn(
                "perf events that count time in the kernel are refused here \
                 (perf_event_paranoid above 1 and no CAP_PERFMON): the perf clock counts user \
                 time only, and the time threads spend in the kernel is charged to the user \
                 code they run next; the default clock counts it where it is spent",
            ),
        Some(c) if wanted == Policy::Adaptive && c.policy != Policy::Adaptive => session.info(
            "perf events that count time in the kernel are refused here \
             (perf_event_paranoid above 1 and no CAP_PERFMON): every thread is sampled by its \
             CPU-time timer, at most at the kernel's tick rate, and no sample tells user from \
             system time",
        ),
        Some(_) => {}
    }
    chosen
}

impl SampleLoop {
    fn new(
        session: &'static Session,
        clock: Option<Chosen>,
        chains: Option<&'static AsyncChains>,
    ) -> SampleLoop {
        let period_ns = 1_000_000_000 / u64::from(session.config.rate_hz.max(1));
        let wall_rate = session.config.wall_rate().max(1);
        SampleLoop {
            session,
            stacks: StackBuilder::new(session).splicing(chains),
            books: PerSlot::default(),
            task_files: PerSlot::default(),
            clock,
            period_ns,
            wall_period_ns: 1_000_000_000 / u64::from(wall_rate),
            process_name: procfs::thread_name(std::process::id()).unwrap_or_default(),
            tids: Vec::new(),
            gone_seen: GoneSeen::default(),
        }
    }

    fn run(mut self, stop: &AtomicBool) {
        let start = sys::monotonic_ns();
        let mut jitter = Jitter::new(start);
        let mut next_tick = start + jitter.interval(self.wall_period_ns);
        let mut next_scan = start;
        while !stop.load(Ordering::Acquire) {
            let now = sys::monotonic_ns();
            if now < next_tick {
                let seen = capture::WAKE.load(Ordering::Acquire);
                sys::futex_wait(&capture::WAKE, seen, next_tick - now);
            }
            self.drain();
            let now = sys::monotonic_ns();
            if now >= next_scan {
                next_scan = now + THREAD_SCAN_NS;
                self.adopt_unannounced_threads();
                self.stacks.refresh_modules(now);
            }
            // A handler that woke the sampler (its ring three quarters full) within half a period
            // of the tick gets the tick's work done now too: one wake-up instead of two. The tick
            // after stays where it was due, so the ticks keep their rate.
            if now >= next_tick || next_tick - now <= self.wall_period_ns / 2 {
                self.session
                    .sampler_stats
                    .ticks
                    .fetch_add(1, Ordering::Relaxed);
                self.arm_threads();
                cpu_clock::reap_retired();
                if !self.session.config.handler_floor {
                    self.wall_tick(now);
                }
                self.release_dead();
                next_tick = (next_tick + jitter.interval(self.wall_period_ns)).max(now);
                record_own_cpu(self.session);
            }
        }
        self.finish();
    }

    /// Stops every CPU clock, then writes what the rings and books still hold.
    fn finish(&mut self) {
        cpu_clock::clear();
        for slot in threads::in_use().iter() {
            cpu_clock::disarm_slot(slot);
        }
        cpu_clock::reap_retired();
        self.drain();
        for (i, slot) in threads::in_use().iter().enumerate() {
            if slot.is_live() || slot.is_dead() {
                self.flush_book(i, slot, sys::monotonic_ns());
            }
        }
        self.stacks.name_unnamed(true);
        record_own_cpu(self.session);
    }

    /// Arms the CPU clock of every live thread that has none yet.
    fn arm_threads(&mut self) {
        if self.clock.is_none() {
            return;
        }
        for slot in threads::in_use().iter() {
            if slot.is_live() {
                cpu_clock::arm_slot(slot, capture::SAMPLE_SIGNAL);
            }
        }
    }

    /// Registers the process's threads that are not registered yet (the runtime announces
    /// only managed threads, and after an attach none of those already running): the
    /// handler takes the slot on its first capture.
    fn adopt_unannounced_threads(&mut self) {
        self.tids.clear();
        procfs::task_ids(&mut self.tids);
        for &tid in &self.tids {
            if !threads::is_agent_thread(tid) {
                threads::adopt(tid, 0);
            }
        }
    }

    /// Reads every thread's ring.
    fn drain(&mut self) {
        self.stacks.name_unnamed(false);
        let now = sys::monotonic_ns();
        for (i, slot) in threads::in_use().iter().enumerate() {
            if slot.ring.is_empty() {
                continue;
            }
            if slot.is_free() {
                // A capture no thread of this session made (a handler still running when the
                // previous attached session emptied the slot, see `capture::uninstall`): read
                // as this session's, it became a sample of "thread 0" carrying the CPU since
                // the previous session armed the slot's clock (measured: 0.5-1.2 s in one
                // sample, the heaviest thread of the attach). Whoever takes the slot next
                // clears its ring.
                continue;
            }
            self.ensure_book(i, slot, now);
            while let Some(capture) = slot.ring.oldest() {
                // Code the runtime unloaded before this capture was taken may hold other
                // code by now: forget it first (a capture of the new code was published
                // after the unload's notice, so this sees the notice). Code unloaded later
                // was still there when the capture was taken.
                if let Some(forget) = self.session.gone_code.take(&mut self.gone_seen, capture.ts) {
                    self.stacks.forget(forget);
                }
                let flags = capture.flags;
                let (ts, clock, regs) = (
                    capture.ts,
                    CaptureClock {
                        due: capture.cpu_due,
                        enter: capture.cpu_enter,
                        exit: capture.cpu_exit,
                        dropped_at: capture.dropped_at,
                    },
                    capture.regs,
                );
                let resolved =
                    self.stacks
                        .resolve_capture(slot, capture, &mut self.books.at(i).tail);
                slot.ring.pop();
                let handler = clock.exit.saturating_sub(clock.enter);
                self.books.at(i).profiler_ns = self.books.at(i).profiler_ns.saturating_add(handler);
                self.session
                    .sampler_stats
                    .handler_cpu_ns
                    .fetch_add(handler, Ordering::Relaxed);
                self.on_capture(i, slot, flags, ts, clock, regs, resolved);
            }
        }
        let dropped: u64 = threads::in_use()
            .iter()
            .map(|s| s.ring.dropped.swap(0, Ordering::Relaxed))
            .sum();
        if dropped > 0 {
            self.session
                .sampler_stats
                .missed
                .fetch_add(dropped, Ordering::Relaxed);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_capture(
        &mut self,
        i: usize,
        slot: &ThreadSlot,
        flags: u32,
        ts: u64,
        clock: CaptureClock,
        regs: [usize; 3],
        resolved: Resolved,
    ) {
        let stats = &self.session.sampler_stats;
        let tid = self.books.at(i).tid;
        let stack = match resolved {
            Resolved::Program(stack) => stack,
            Resolved::Agent => 0,
        };
        if flags & CPU != 0 {
            let armed_at = slot.cpu_at_arm.load(Ordering::Acquire);
            let (cpu, missed) = self.books.at(i).on_cpu_capture(clock, armed_at);
            // A perf event tells whether its period ended in the kernel: the whole sample is
            // then the kernel's (as `perf` counts a sample), else the user code's.
            let (by, sys) = if flags & BY_PERF != 0 && flags & MODE_KNOWN != 0 {
                let sys = if flags & IN_KERNEL != 0 { cpu } else { 0 };
                (SampleClock::Perf, sys)
            } else if flags & BY_PERF != 0 {
                (SampleClock::PerfUserOnly, 0)
            } else if flags & BY_TIMER != 0 {
                (SampleClock::Timer, 0)
            } else {
                (SampleClock::Unknown, 0)
            };
            let after = match resolved {
                Resolved::Program(stack) if stack != 0 => Some(stack),
                _ => None,
            };
            self.emit_missed(i, tid, missed, ts, after);
            match resolved {
                Resolved::Program(stack) => {
                    stats.cpu_samples.fetch_add(1, Ordering::Relaxed);
                    self.books.at(i).last_cpu = Some((stack, ts));
                    self.session.out.push_sample(&Sample {
                        ts: self.session.since_start(ts),
                        tid,
                        stack,
                        cpu_ns: cpu,
                        wall_ns: 0,
                        state: ThreadState::Cpu,
                        sys_ns: sys,
                        clock: by,
                    });
                }
                Resolved::Agent => {
                    stats.agent_samples.fetch_add(1, Ordering::Relaxed);
                    stats.agent_cpu_ns.fetch_add(cpu, Ordering::Relaxed);
                    self.books.at(i).profiler_ns = self.books.at(i).profiler_ns.saturating_add(cpu);
                }
            }
        } else {
            self.books.at(i).on_asked_overhead(clock.enter, clock.exit);
        }
        if stack == 0 {
            if flags & ASKED != 0 {
                self.books.at(i).on_answer_without_stack();
            }
            return;
        }
        let session = self.session;
        if flags & ASKED != 0 {
            if let Some(w) = self.books.at(i).on_answer(regs[0], regs[1], stack) {
                emit_wall(session, tid, sys::monotonic_ns(), w);
            }
        } else {
            // A CPU capture's time and CPU clock mark where a wait it ends ended.
            let at = (flags & CPU != 0).then_some((ts, clock.enter));
            self.books
                .at(i)
                .on_stack(stack, at, &mut |w| emit_wall(session, tid, ts, w));
        }
    }

    /// One wall-clock tick: every thread's wall time since the previous one.
    fn wall_tick(&mut self, now: u64) {
        for (i, slot) in threads::in_use().iter().enumerate() {
            if !slot.is_live() {
                continue;
            }
            self.ensure_book(i, slot, now);
            if !self.books.at(i).due(now, self.wall_period_ns) {
                continue;
            }
            let tid = self.books.at(i).tid;
            let Some(cpu) = sys::thread_cpu_ns(tid) else {
                // Gone without being announced (a native thread): its slot is released.
                slot.mark_dead();
                continue;
            };
            self.watch_clock(i, slot, cpu);
            self.review_clock(i, slot, now, cpu);
            let session = self.session;
            let mut emit = |w: WallSample| emit_wall(session, tid, now, w);
            let book = self.books.at(i);
            let file = self.task_files.at(i);
            if book.on_tick(now, cpu, || procfs::whereabouts(tid, file), &mut emit) {
                if capture::ask(slot) {
                    session
                        .sampler_stats
                        .questions
                        .fetch_add(1, Ordering::Relaxed);
                } else {
                    book.ask_failed(&mut emit);
                }
            }
            book.ticks_seen = book.ticks_seen.saturating_add(1);
            if book.ticks_seen == RENAME_AFTER_TICKS {
                self.name_thread(tid);
            }
        }
    }

    /// A clock whose signal lost its details was not set again by its handler, or a perf
    /// event stopped: if the thread used several periods of CPU without a sample (and, for a
    /// perf event, its count stood still since the last look), start it again here. A
    /// CPU-time timer that is still set after that much CPU is blind to its thread instead
    /// (see below).
    fn watch_clock(&mut self, i: usize, slot: &'static ThreadSlot, cpu: u64) {
        let Some(armed) = Armed::of(slot) else {
            return;
        };
        let armed_at = slot.cpu_at_arm.load(Ordering::Acquire);
        let book = self.books.at(i);
        // A CPU-time timer fires at the scheduler's tick only (every 4 ms at 250 Hz, 10 ms at
        // 100 Hz): a thread on one goes several periods without a sample by design.
        let late = match armed.kind {
            ClockKind::PerfTaskClock => 4 * self.period_ns,
            ClockKind::ThreadCpuTimer => (4 * self.period_ns).max(TIMER_LATE_NS),
        };
        if book.cpu_since_sample(cpu, armed_at) < late {
            book.clock_count = None;
            return;
        }
        let stuck = match armed.kind {
            ClockKind::PerfTaskClock => {
                let count = cpu_clock::perf_count(armed.handle);
                let stood_still = count.is_some() && count == book.clock_count;
                book.clock_count = count;
                // A count that moves while no capture comes (its signals lost, or the count
                // unreadable) must not leave the clock unwatched: after many periods of CPU
                // with nothing waiting in the ring, it is started again all the same (for a
                // running event, that only sets its period).
                stood_still
                    || (slot.ring.is_empty()
                        && book.cpu_since_sample(cpu, armed_at) >= 16 * self.period_ns)
            }
            // A one-shot timer that is no longer set expired without being re-armed (its
            // signal was absorbed by one already pending). One still set is counting: setting
            // it again would push its expiry back, and a thread that uses less than a period
            // between two looks would never get a sample.
            ClockKind::ThreadCpuTimer => match cpu_clock::timer_set(armed.handle) {
                Some(true) => {
                    self.timer_blind(i, slot, cpu);
                    false
                }
                _ => true,
            },
        };
        if stuck {
            // Not re-armed on schedule: the next period counts from now.
            slot.due_cpu.store(0, Ordering::Relaxed);
        }
        if stuck && cpu_clock::start_slot(slot, armed, self.period_ns) {
            self.books.at(i).clock_count = None;
            self.session
                .sampler_stats
                .rearmed
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Slot `i`'s thread used [`TIMER_LATE_NS`] of CPU since its latest sample, and its
    /// CPU-time timer is still set: the kernel checks the timer at its scheduler tick, on the
    /// thread it finds running then, and this thread runs only between ticks. That happens on
    /// a machine with more runnable threads than cores, where the scheduler ends time slices
    /// between ticks: measured here with three busy processes on two cores, a computing
    /// thread was switched in just after each tick and out 1.5-2.5 ms later, before the next,
    /// and its timer went 60-80 ms of its CPU without firing, all of it then charged to the
    /// stack of the one sample that came. A perf event counts the thread's own CPU and fires
    /// wherever it is: the default policy moves such a thread to one at once (its switch rate
    /// may move it back later, as any thread's). Counted once per stretch either way.
    fn timer_blind(&mut self, i: usize, slot: &'static ThreadSlot, cpu: u64) {
        if !self.books.at(i).new_stretch_without_sample() {
            return;
        }
        let stats = &self.session.sampler_stats;
        stats.timer_blind.fetch_add(1, Ordering::Relaxed);
        if self.clock.is_some_and(|c| c.policy == Policy::Adaptive)
            && cpu_clock::switch_slot(slot, ClockKind::PerfTaskClock, cpu, capture::SAMPLE_SIGNAL)
        {
            stats.clock_upgrades.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The adaptive policy: moves slot `i`'s thread between a perf event and the CPU-time
    /// timer as it is switched often or rarely for its CPU (see [`switches`]).
    fn review_clock(&mut self, i: usize, slot: &'static ThreadSlot, now: u64, cpu: u64) {
        if self.clock.is_none_or(|c| c.policy != Policy::Adaptive) {
            return;
        }
        let Some(armed) = Armed::of(slot) else {
            return;
        };
        let tid = self.books.at(i).tid;
        let files = self.task_files.at(i);
        let to = self
            .books
            .at(i)
            .switch_rate
            .on_tick(now, cpu, armed.kind, || procfs::switches_in(tid, files));
        if let Some(to) = to
            && cpu_clock::switch_slot(slot, to, cpu, capture::SAMPLE_SIGNAL)
        {
            let stats = &self.session.sampler_stats;
            match to {
                ClockKind::PerfTaskClock => &stats.clock_upgrades,
                ClockKind::ThreadCpuTimer => &stats.clock_downgrades,
            }
            .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Makes sure slot `i`'s book is about its current thread.
    fn ensure_book(&mut self, i: usize, slot: &ThreadSlot, now: u64) {
        let tid = slot.tid.load(Ordering::Acquire);
        if self.books.at(i).tid == tid {
            return;
        }
        let born = slot.born_at.load(Ordering::Acquire);
        // The thread's CPU clock when its clock was armed, as it registered (at `born`).
        let cpu_at_arm = slot.cpu_at_arm.load(Ordering::Acquire);
        *self.books.at(i) = if born == 0 || born > now {
            Book::new(tid, now, 0)
        } else {
            Book::new(tid, born, cpu_at_arm)
        };
        *self.task_files.at(i) = procfs::TaskFiles::default();
        self.name_thread(tid);
    }

    /// Writes the kernel's name of a thread if it has one of its own.
    fn name_thread(&mut self, tid: u32) {
        if let Some(name) = procfs::thread_name(tid)
            && !name.is_empty()
            && name != self.process_name
            && !name.starts_with("clrprof-")
        {
            self.session
                .out
                .push_record(&Record::ThreadOsName(ThreadOsName { tid, name }));
        }
    }

    /// Writes the CPU of thread `i`'s dropped captures (`missed` ns; its ring was full: the
    /// sampler fell behind). It goes to the thread's CPU samples on either side of the gap
    /// (its latest before, `after` the one that ended it, if it is the program's), as samples
    /// taken at a lower rate would weigh them ([`split_missed`]), so that a burst of drops in
    /// one phase of the program does not take that phase's share away. Without a sample on
    /// either side it stands under a marker of its own, at `ts`.
    fn emit_missed(&mut self, i: usize, tid: u32, missed: u64, ts: u64, after: Option<u32>) {
        if missed == 0 {
            return;
        }
        let stats = &self.session.sampler_stats;
        stats.cpu_missed_ns.fetch_add(missed, Ordering::Relaxed);
        let parts = split_missed(missed, self.books.at(i).last_cpu, after.map(|s| (s, ts)));
        let parts = match parts {
            [None, _] => [
                Some((self.stacks.marker(StackCut::Missed), ts, missed)),
                None,
            ],
            parts => {
                let carriers = parts.iter().flatten().count() as u64;
                stats.missed_carriers.fetch_add(carriers, Ordering::Relaxed);
                parts
            }
        };
        for (stack, at, cpu) in parts.into_iter().flatten() {
            emit_cpu(self.session, self.session.since_start(at), tid, stack, cpu);
        }
    }

    /// Writes what slot `i`'s book still holds, up to when its thread ended (or `now`).
    fn flush_book(&mut self, i: usize, slot: &ThreadSlot, now: u64) {
        let tid = self.books.at(i).tid;
        if tid == 0 {
            return;
        }
        let end = match slot.died_at.load(Ordering::Acquire) {
            0 => now,
            died => died.min(now),
        };
        // Captures dropped after the last one read (the thread ended, or sampling stopped,
        // before the sampler caught up): their CPU is the thread's too.
        let armed_at = slot.cpu_at_arm.load(Ordering::Acquire);
        let dropped_at = slot.ring.dropped_at.load(Ordering::Acquire);
        let missed = self.books.at(i).take_missed_tail(armed_at, dropped_at);
        self.emit_missed(i, tid, missed, sys::monotonic_ns(), None);
        // The CPU after the thread's last sample, up to its end (as it read its clock then)
        // or now: no sample saw it (a timer fires at the tick only), so it stands under a
        // marker of its own, and the thread's CPU adds up.
        let end_cpu = match slot.cpu_at_death.load(Ordering::Acquire) {
            0 if slot.is_dead() => None,
            0 => sys::thread_cpu_ns(tid),
            cpu => Some(cpu),
        };
        if self.clock.is_some()
            && let Some(end_cpu) = end_cpu
        {
            let tail = self.books.at(i).take_unsampled(end_cpu, armed_at);
            if tail > 0 {
                self.session
                    .sampler_stats
                    .cpu_unsampled_ns
                    .fetch_add(tail, Ordering::Relaxed);
                let stack = self.stacks.marker(StackCut::Unsampled);
                let ts = self.session.since_start(sys::monotonic_ns());
                emit_cpu(self.session, ts, tid, stack, tail);
            }
        }
        let session = self.session;
        self.books
            .at(i)
            .flush(end, end_cpu, &mut |w| emit_wall(session, tid, end, w));
        // What the profiler cost this thread, beside what its samples stand for: together
        // they are the thread's CPU (but for its start before its clock was armed, and the
        // last period no capture ended).
        let profiler_ns = std::mem::take(&mut self.books.at(i).profiler_ns);
        if profiler_ns > 0 {
            session
                .out
                .push_record(&Record::Counter(clrprof_trace::Counter {
                    ts: session.since_start(sys::monotonic_ns()),
                    name: format!("{THREAD_PROFILER_CPU}{tid}"),
                    value: profiler_ns,
                }));
        }
    }

    /// Frees the slots of threads that ended, after their last captures were read.
    fn release_dead(&mut self) {
        let now = sys::monotonic_ns();
        for (i, slot) in threads::in_use().iter().enumerate() {
            if slot.is_dead() {
                cpu_clock::disarm_slot(slot);
                self.flush_book(i, slot, now);
                *self.books.at(i) = Book::default();
                *self.task_files.at(i) = procfs::TaskFiles::default();
                while slot.ring.oldest().is_some() {
                    slot.ring.pop();
                }
                slot.release();
            }
        }
    }
}

/// Writes a wall-clock sample of thread `tid` ending at monotonic time `now`.
fn emit_wall(session: &Session, tid: u32, now: u64, w: WallSample) {
    session
        .sampler_stats
        .wall_samples
        .fetch_add(1, Ordering::Relaxed);
    session.out.push_sample(&Sample {
        ts: session.since_start(now),
        tid,
        stack: w.stack,
        wall_ns: w.wall_ns,
        state: w.state,
        ..Sample::default()
    });
}

/// Writes a CPU sample of thread `tid` at `ts` (since the session's start).
fn emit_cpu(session: &Session, ts: u64, tid: u32, stack: u32, cpu_ns: u64) {
    session.out.push_sample(&Sample {
        ts,
        tid,
        stack,
        cpu_ns,
        state: ThreadState::Cpu,
        ..Sample::default()
    });
}
