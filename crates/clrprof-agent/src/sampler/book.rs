//! What the sampler keeps per thread in sample mode, and the rules that turn captures and
//! clock readings into samples. No system calls here: the sampler thread feeds in what it
//! read, so the rules can be tested on their own.
//!
//! - **CPU samples**: each capture the thread's CPU clock triggered stands for the CPU the
//!   thread used since the previous one, measured by the handler: from the end of the previous
//!   capture's handler (or the moment the clock was armed) to the start of this one, minus the
//!   time handlers spent answering the sampler in between. The handlers' own time is the
//!   profiler's.
//! - **Wall-clock samples**: at every wall tick each thread gets one sample of the time since
//!   its previous one, with the stack where it is: where it waits if it is blocked, else the
//!   stack of its latest capture. A thread whose CPU clock has not moved since the tick that
//!   found it blocked is in the same wait: its stack is repeated, and nothing disturbs it. A
//!   thread that ran since is looked at again (`/proc`: which system call, from which
//!   instruction, at which stack depth); a wait seen before on this thread reuses the stack
//!   learnt then, and only a new wait costs a question (one signal, whose answer is the
//!   stack). So a blocked thread is interrupted at most once per place it waits, however long
//!   it waits and however often it comes back. At a wait's ends the interval is split by the
//!   thread's CPU clock: what it ran goes to where it ran, the rest to the wait (a look that
//!   finds a new wait, a tick or a CPU sample that finds one ended, the thread's end).

use clrprof_trace::ThreadState;

use super::procfs::{WaitKey, Whereabouts};
use crate::unwind::Tail;

/// The clock readings a capture's handler took.
#[derive(Debug, Clone, Copy, Default)]
pub struct CaptureClock {
    /// The thread's CPU time where the period of the clock that sent the signal ended
    /// (`enter` where not known).
    pub due: u64,
    /// The thread's CPU time when the handler started.
    pub enter: u64,
    /// ... and when it was done.
    pub exit: u64,
    /// The thread's CPU time at its latest dropped capture (0: none).
    pub dropped_at: u64,
}

/// Waits remembered per thread (most recent first).
const WAITS_KEPT: usize = 8;
/// A question not answered after this long is given up (the thread may be stopped).
pub const ANSWER_TIMEOUT_NS: u64 = 1_000_000_000;
/// A thread that stays in one wait gets one wall-clock sample per this much of it (and one
/// when the wait ends), not one per tick: the same figures, a hundredth of the records.
pub const EPISODE_SAMPLE_NS: u64 = 1_000_000_000;
/// A thread that has been in one wait this long is looked at (its CPU clock read) only every
/// [`LONG_WAIT_CHECK_NS`]: servers keep dozens of threads idle for minutes, and reading each
/// one's clock every tick would be most of the sampler's work. A CPU sample of such a thread
/// ends its wait at once; a wake-up too short for one is seen at the next look.
pub const LONG_WAIT_NS: u64 = 1_000_000_000;
/// See [`LONG_WAIT_NS`].
pub const LONG_WAIT_CHECK_NS: u64 = 80_000_000;

/// A thread that the last looks found in the same wait this many times in a row...
const SETTLED_LOOKS: u32 = 2;
/// ... is taken to be back in it, without a look, on the next tick where it ran a little since
/// the previous one (a server's pool thread, which wakes for each request and goes back to the
/// same wait: its `/proc` reads were a fifth of the sampler's CPU on a server), and is then
/// left alone, its CPU clock not even read, for this many ticks in all (reading another
/// thread's CPU clock is a system call, and a server's pool threads were most of the sampler's
/// 13 reads a tick on `HttpServer`). The tick that ends such a stretch charges what the
/// thread ran in it to its latest CPU sample's stack and the rest to the wait, then looks
/// again (a look charges the whole interval to what it sees at that instant, so it comes
/// after the charge). A look found the thread running does not unsettle it (it goes back to
/// its wait when done); one that found it in another wait does. A thread that did not run
/// at all in the stretch is looked at before its wait may last (see `Book::on_tick`), and a
/// CPU sample of it ends the stretch at once.
const TRUSTED_TICKS: u32 = 3;

/// A blocked thread's wall-clock sample.
fn blocked(stack: u32, wall_ns: u64) -> WallSample {
    WallSample {
        stack,
        state: ThreadState::Blocked,
        wall_ns,
    }
}

/// A running thread's wall-clock sample.
fn running_at(stack: u32, wall_ns: u64) -> WallSample {
    WallSample {
        stack,
        state: ThreadState::Running,
        wall_ns,
    }
}

/// A wall-clock sample to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallSample {
    /// The stack (0 if none is known).
    pub stack: u32,
    /// Running or blocked.
    pub state: ThreadState,
    /// The time it stands for.
    pub wall_ns: u64,
}

/// One thread, as the sampler knows it.
#[derive(Debug, Default)]
pub struct Book {
    /// The thread this book is about (0: unused).
    pub tid: u32,
    /// Where the next CPU sample counts from (the end of the previous one's handler).
    cpu_mark: Option<u64>,
    /// Handler time spent answering questions since the last CPU sample.
    overhead: u64,
    /// When the previous wall-clock sample ended (monotonic ns).
    wall_mark: u64,
    /// The stack of the latest capture (0: none yet).
    stack: u32,
    /// The profiler's CPU on this thread so far: its signal handlers, and the agent's own code
    /// that CPU samples found running (callbacks); never the program's.
    pub profiler_ns: u64,
    /// The stack and time of the latest CPU sample of the program's code: what carries the
    /// CPU of samples missed after it (see [`split_missed`]).
    pub last_cpu: Option<(u32, u64)>,
    /// The thread's CPU clock when it was found blocked, and the stack it waits with.
    episode: Option<(u64, u32)>,
    /// Whether a look found the current wait (else it was taken on trust, see
    /// [`TRUSTED_TICKS`]).
    episode_seen: bool,
    /// When the current wait was found.
    episode_since: u64,
    /// The wait the latest looks found, how many looks in a row found it, and whether it was
    /// taken on trust since the latest look.
    settled: Option<(WaitKey, u32, bool)>,
    /// What the thread ran on ticks that took its wait on trust, not written yet: the stack of
    /// its latest CPU sample then, and the time.
    trusted_running: (u32, u64),
    /// Wall time of the current wait not written yet.
    episode_wall: u64,
    /// The thread's CPU clock at the previous tick.
    cpu_seen: u64,
    /// Waits learnt on this thread and their stacks, most recent first.
    waits: Vec<(WaitKey, u32)>,
    /// The wait a question is out for, and when it was asked.
    asking: Option<(WaitKey, u64)>,
    /// Wall time not written yet (waiting for a stack).
    pending_wall: u64,
    /// Ticks since the thread was first seen (its name is read again after a while).
    pub ticks_seen: u32,
    /// The thread's perf event count when the sampler last suspected it was stopped.
    pub clock_count: Option<u64>,
    /// The latest sample's CPU mark when the thread's timer was last found blind to it.
    blind_at: Option<Option<u64>>,
    /// The outer frames of its stack, unwound once.
    pub tail: Tail,
    /// How often it is switched for its CPU (adaptive clocks).
    pub switch_rate: super::switches::SwitchWatch,
}

impl Book {
    /// A new book for thread `tid`, whose wall time counts from `now`; `cpu_then`: its CPU
    /// clock at that moment, if known (0: not known), so that the first tick knows what the
    /// thread ran before it (a new thread's setup before its first wait is not the wait's).
    pub fn new(tid: u32, now: u64, cpu_then: u64) -> Book {
        Book {
            tid,
            wall_mark: now,
            cpu_seen: cpu_then,
            ..Book::default()
        }
    }

    /// A capture the thread's CPU clock triggered: returns the CPU the sample stands for,
    /// and the CPU that went unsampled before it. `clock.due` is where the clock's period
    /// ended: the sample stands for the CPU up to there, and the CPU from there to the
    /// handler goes to the next sample, as the clock's next period counts it. `armed_at` is
    /// the thread's CPU clock when its clock was armed (CPU used before that was never
    /// sampled); `clock.dropped_at` its CPU clock at the latest capture dropped before this
    /// one (its ring was full). The CPU up to a dropped capture is not this sample's: its
    /// stack is unknown, so it is counted as missed rather than given to whatever the thread
    /// ran next.
    pub fn on_cpu_capture(&mut self, clock: CaptureClock, armed_at: u64) -> (u64, u64) {
        let mut from = self.cpu_mark.unwrap_or(armed_at);
        let mut missed = 0;
        let due = clock.due.min(clock.enter);
        if clock.dropped_at > from && clock.dropped_at <= due {
            missed = clock.dropped_at - from;
            from = clock.dropped_at;
        }
        let cpu = due.saturating_sub(from).saturating_sub(self.overhead);
        // The handler's own CPU is the profiler's: the next sample counts from `due` with it
        // left out.
        let handler = clock.exit.saturating_sub(clock.enter);
        self.cpu_mark = Some(due.max(from) + handler);
        self.overhead = 0;
        (cpu, missed)
    }

    /// A capture the sampler asked for, whose handler ran from `cpu_enter` to `cpu_exit` (not
    /// also a CPU sample): its time is the profiler's, not counted in the next CPU sample.
    pub fn on_asked_overhead(&mut self, cpu_enter: u64, cpu_exit: u64) {
        self.overhead += cpu_exit.saturating_sub(cpu_enter);
    }

    /// A CPU capture's stack: the thread's latest, and proof that it runs (a wait it was in
    /// has ended). `at`: when the capture was taken and the thread's CPU clock then, if known.
    /// Writes held wall time to `emit`: the rest of that wait (of the time since the previous
    /// tick, what the thread did not run up to the capture; what it ran is the capture's
    /// stack's), or time held for a stack, if no question is out (a question's answer writes
    /// its own).
    pub fn on_stack(
        &mut self,
        stack: u32,
        at: Option<(u64, u64)>,
        emit: &mut impl FnMut(WallSample),
    ) {
        self.stack = stack;
        if let Some((_, waited)) = self.episode.take() {
            let mut ran = 0;
            if let Some((ts, cpu)) = at
                && self.cpu_seen != 0
                && ts > self.wall_mark
            {
                let span = ts - self.wall_mark;
                ran = cpu.saturating_sub(self.cpu_seen).min(span);
                self.episode_wall += span - ran;
                self.wall_mark = ts;
                self.cpu_seen = self.cpu_seen.max(cpu);
            }
            if self.episode_wall > 0 {
                emit(blocked(waited, std::mem::take(&mut self.episode_wall)));
            }
            if ran > 0 {
                emit(running_at(stack, ran));
            }
            return;
        }
        if self.asking.is_some() || self.pending_wall == 0 {
            return;
        }
        emit(running_at(stack, std::mem::take(&mut self.pending_wall)));
    }

    /// Whether the thread should be looked at on a tick at `now`, ticks coming every
    /// `period_ns`: always, but for a thread taken back to its wait on trust (not until
    /// [`TRUSTED_TICKS`] ticks have passed) and one in a long wait (see [`LONG_WAIT_NS`]).
    pub fn due(&self, now: u64, period_ns: u64) -> bool {
        if self.episode.is_none() {
            return true;
        }
        let since = now.saturating_sub(self.episode_since);
        if !self.episode_seen {
            // Due on the tick TRUSTED_TICKS periods on, wherever the ticks' jitter put it.
            return since >= u64::from(TRUSTED_TICKS) * period_ns - period_ns / 2;
        }
        since < LONG_WAIT_NS || now.saturating_sub(self.wall_mark) >= LONG_WAIT_CHECK_NS
    }

    /// The answer to a question: the thread was interrupted at `rip`/`rsp` and its stack is
    /// `stack`. If it was still in the wait it was asked about, the wait's stack is learnt.
    /// Returns the held wall time to write.
    pub fn on_answer(&mut self, rip: usize, rsp: usize, stack: u32) -> Option<WallSample> {
        self.stack = stack;
        let (key, _) = self.asking.take()?;
        let blocked = key.matches(rip, rsp);
        if blocked {
            self.remember(key, stack);
        }
        (self.pending_wall > 0).then(|| WallSample {
            stack,
            state: if blocked {
                ThreadState::Blocked
            } else {
                ThreadState::Running
            },
            wall_ns: std::mem::take(&mut self.pending_wall),
        })
    }

    /// The answer to a question came without a stack to name (the thread was in the agent's
    /// own code, or its stack could not be resolved): the question is over, and what is held
    /// waits for the next stack. The wait is not remembered, so it is asked about again.
    pub fn on_answer_without_stack(&mut self) {
        self.asking = None;
    }

    /// A wall tick at `now` that read the thread's CPU clock as `cpu`. `whereabouts` reads
    /// where the thread is, and is called only when the CPU clock moved since it was last
    /// found blocked. Samples to write go to `emit`. Returns true if the thread must be asked
    /// where it waits (then call [`Self::ask_failed`] if the question cannot be sent).
    pub fn on_tick(
        &mut self,
        now: u64,
        cpu: u64,
        whereabouts: impl FnOnce() -> Option<Whereabouts>,
        emit: &mut impl FnMut(WallSample),
    ) -> bool {
        let mut wall_ns = now.saturating_sub(self.wall_mark);
        self.wall_mark = now;
        // Nothing is known of the first interval seen.
        let mut ran_ns = if self.cpu_seen == 0 {
            0
        } else {
            cpu.saturating_sub(self.cpu_seen)
        };
        self.cpu_seen = cpu;
        // A thread that ran most of the interval is running: no need to ask /proc.
        let busy = ran_ns.saturating_mul(2) >= wall_ns;
        // A wait taken on trust is looked at once the thread stops running in it.
        let mut must_look = false;
        if let Some((base, stack)) = self.episode {
            if cpu == base && !self.episode_seen {
                must_look = true;
            } else if !self.episode_seen {
                // The end of a stretch taken on trust, in which the thread ran: charged as a
                // trusted tick charges, before anything looks.
                let ran = self.charge_trusted_run(ran_ns, emit);
                self.episode_wall += wall_ns.saturating_sub(ran);
                (wall_ns, ran_ns) = (0, 0);
            } else if cpu == base {
                // Still in the same wait: one sample per second of it is enough.
                self.episode_wall += wall_ns;
                if self.episode_wall >= EPISODE_SAMPLE_NS {
                    emit(blocked(stack, std::mem::take(&mut self.episode_wall)));
                }
                return false;
            }
            if cpu != base {
                // The wait ended in this interval, before the thread ran: what it did not run
                // of the interval is the wait's.
                let waited = wall_ns.saturating_sub(ran_ns);
                self.episode_wall += waited;
                wall_ns -= waited;
            }
            self.episode = None;
            if self.episode_wall > 0 {
                emit(blocked(stack, std::mem::take(&mut self.episode_wall)));
            }
        }
        if let Some((key, asked_at)) = self.asking {
            self.pending_wall += wall_ns;
            if now.saturating_sub(asked_at) >= ANSWER_TIMEOUT_NS {
                // No answer (the thread blocks the signal): do not ask about this wait again,
                // and write what is held without a stack.
                self.asking = None;
                self.remember(key, 0);
                emit(blocked(0, std::mem::take(&mut self.pending_wall)));
            }
            return false;
        }
        if !busy
            && !must_look
            && let Some(stack) = self.trusted_wait()
        {
            let ran = self.charge_trusted_run(ran_ns, emit);
            self.begin_episode(cpu, stack, now, wall_ns.saturating_sub(ran), false);
            return false;
        }
        self.write_trusted_running(emit);
        let found = if busy { None } else { whereabouts() };
        self.settled = match (found, self.settled) {
            (Some(Whereabouts::Blocked(key)), Some((settled, looks, _)))
                if key.same_place(&settled) =>
            {
                Some((key, looks + 1, false))
            }
            (Some(Whereabouts::Blocked(key)), _) => Some((key, 1, false)),
            // Found running (an interval it ran in, but less than half of it): it goes back
            // to its wait when it is done, as often before.
            (Some(Whereabouts::Running), Some((settled, looks, _))) => {
                Some((settled, looks, false))
            }
            _ => None,
        };
        match found {
            Some(Whereabouts::Blocked(key)) => {
                // What the thread ran of the interval came before it blocked: at its latest
                // CPU sample's stack. Only the rest is the wait's.
                let waited = wall_ns.saturating_sub(self.charge_run(ran_ns, emit));
                if let Some(stack) = self.known_wait(key) {
                    self.begin_episode(cpu, stack, now, waited, true);
                    return false;
                }
                self.asking = Some((key, now));
                self.pending_wall += waited;
                true
            }
            Some(Whereabouts::Running) | None => {
                self.running(wall_ns, emit);
                false
            }
        }
    }

    /// What a thread taken to be back in its wait on trust ran of an interval (`ran_ns`): at
    /// the stack of its latest CPU sample, held until the next look, in one sample while that
    /// stack stays the same. Returns the part so charged.
    fn charge_trusted_run(&mut self, ran_ns: u64, emit: &mut impl FnMut(WallSample)) -> u64 {
        match self.last_cpu {
            Some((running, _)) if ran_ns > 0 => {
                if self.trusted_running.0 != running {
                    self.write_trusted_running(emit);
                    self.trusted_running.0 = running;
                }
                self.trusted_running.1 += ran_ns;
                ran_ns
            }
            _ => 0,
        }
    }

    /// What the thread ran (`ran_ns`) of an interval at one end of a wait, at the stack of its
    /// latest CPU sample (nothing without one). Returns the part so charged.
    fn charge_run(&mut self, ran_ns: u64, emit: &mut impl FnMut(WallSample)) -> u64 {
        match self.last_cpu {
            Some((running, _)) if ran_ns > 0 => {
                emit(running_at(running, ran_ns));
                ran_ns
            }
            _ => 0,
        }
    }

    /// Writes the running time of ticks that took the thread's wait on trust.
    fn write_trusted_running(&mut self, emit: &mut impl FnMut(WallSample)) {
        let (stack, wall_ns) = std::mem::take(&mut self.trusted_running);
        if wall_ns > 0 {
            emit(running_at(stack, wall_ns));
        }
    }

    /// The thread is in the wait whose stack is `stack` since CPU time `cpu` (seen there by a
    /// look, or taken on trust), with the interval's `wall_ns` and what was held.
    fn begin_episode(&mut self, cpu: u64, stack: u32, now: u64, wall_ns: u64, seen: bool) {
        self.episode = Some((cpu, stack));
        self.episode_seen = seen;
        self.episode_since = now;
        self.stack = stack;
        self.episode_wall = wall_ns + std::mem::take(&mut self.pending_wall);
    }

    /// The stack of the wait the thread is taken to be back in without a look (see
    /// [`TRUSTED_TICKS`]), if it settled in one and was not taken there on trust since the
    /// latest look.
    fn trusted_wait(&mut self) -> Option<u32> {
        let (key, looks, trusted) = self.settled?;
        if looks < SETTLED_LOOKS || trusted {
            return None;
        }
        let stack = self.known_wait(key)?;
        self.settled = Some((key, looks, true));
        Some(stack)
    }

    /// The question could not be sent (the thread is gone): give it up.
    pub fn ask_failed(&mut self, emit: &mut impl FnMut(WallSample)) {
        self.asking = None;
        self.running(0, emit);
    }

    /// A running thread's wall time (with whatever is held), at its latest stack; held if no
    /// stack is known yet.
    fn running(&mut self, wall_ns: u64, emit: &mut impl FnMut(WallSample)) {
        self.pending_wall += wall_ns;
        if self.stack != 0 && self.pending_wall > 0 {
            emit(running_at(
                self.stack,
                std::mem::take(&mut self.pending_wall),
            ));
        }
    }

    /// The CPU up to the latest dropped capture (`dropped_at`, the thread's CPU clock then)
    /// that no sample stands for yet, when no capture will come after it (the thread ended,
    /// or sampling stopped); counted once.
    pub fn take_missed_tail(&mut self, armed_at: u64, dropped_at: u64) -> u64 {
        let from = self.cpu_mark.unwrap_or(armed_at);
        if dropped_at <= from {
            return 0;
        }
        self.cpu_mark = Some(dropped_at);
        dropped_at - from
    }

    /// The CPU the thread used after its latest CPU sample (or since its clock was armed at
    /// `armed_at`, 0 if it was not), up to its CPU time `end_cpu` (when it ended, or sampling
    /// stopped), less what handlers answering questions used meanwhile: what no sample saw.
    /// Counted once.
    pub fn take_unsampled(&mut self, end_cpu: u64, armed_at: u64) -> u64 {
        let Some(from) = self.cpu_mark.or((armed_at != 0).then_some(armed_at)) else {
            return 0;
        };
        let tail = end_cpu.saturating_sub(from).saturating_sub(self.overhead);
        self.cpu_mark = Some(end_cpu.max(from));
        self.overhead = 0;
        tail
    }

    /// True the first time it is called since the thread's latest CPU sample: a stretch
    /// without samples is counted once, however many ticks look at it.
    pub fn new_stretch_without_sample(&mut self) -> bool {
        let new = self.blind_at != Some(self.cpu_mark);
        self.blind_at = Some(self.cpu_mark);
        new
    }

    /// CPU the thread used since its latest CPU sample (or since its clock was armed at
    /// `armed_at`), for a CPU clock reading `cpu`.
    pub fn cpu_since_sample(&self, cpu: u64, armed_at: u64) -> u64 {
        cpu.saturating_sub(self.cpu_mark.unwrap_or(armed_at))
    }

    /// Writes what is still held, up to `end` (when the thread ended, or sampling stopped),
    /// where the thread was last seen; `end_cpu`: its CPU clock then, if known, which splits
    /// the time since the last tick as a tick does (a wait that ended in it gets what the
    /// thread did not run).
    pub fn flush(&mut self, end: u64, end_cpu: Option<u64>, emit: &mut impl FnMut(WallSample)) {
        self.write_trusted_running(emit);
        let mut tail = end.saturating_sub(self.wall_mark);
        self.wall_mark = self.wall_mark.max(end);
        if let Some((base, stack)) = self.episode.take() {
            // Still in the wait at the end unless the thread ran since it was found there.
            let ran = match end_cpu {
                Some(cpu) if cpu != base && self.cpu_seen != 0 => {
                    cpu.saturating_sub(self.cpu_seen).min(tail)
                }
                _ => 0,
            };
            self.episode_wall += tail - ran;
            if self.episode_wall > 0 {
                emit(blocked(stack, std::mem::take(&mut self.episode_wall)));
            }
            tail = ran - self.charge_run(ran, emit);
        }
        self.pending_wall += tail;
        if self.pending_wall > 0 {
            emit(running_at(
                self.stack,
                std::mem::take(&mut self.pending_wall),
            ));
        }
    }

    fn known_wait(&mut self, key: WaitKey) -> Option<u32> {
        let i = self.waits.iter().position(|(k, _)| *k == key)?;
        let entry = self.waits.remove(i);
        self.waits.insert(0, entry);
        Some(entry.1)
    }

    fn remember(&mut self, key: WaitKey, stack: u32) {
        self.waits.retain(|(k, _)| *k != key);
        self.waits.insert(0, (key, stack));
        self.waits.truncate(WAITS_KEPT);
    }
}

/// A part of the CPU of missed captures: the stack that carries it, the time of that stack's
/// sample, and the CPU.
pub type MissedPart = (u32, u64, u64);

/// Who carries `missed` ns of a thread's CPU whose captures were dropped: the thread's CPU
/// samples on either side of the gap, `before` and `after` (stack and time), as the nearest
/// sample in time would: the first half of the gap goes to the stack before it, the second to
/// the stack after it. Drops come in bursts (the sampler fell behind), and a burst that
/// starts where the program's phase changes belongs to the new phase: given all to the
/// previous stack, the new phase lost its first tens of milliseconds. One part when both
/// sides are the same stack, or only one is known; none when neither is (the caller puts it
/// under a marker of its own).
pub fn split_missed(
    missed: u64,
    before: Option<(u32, u64)>,
    after: Option<(u32, u64)>,
) -> [Option<MissedPart>; 2] {
    match (before, after) {
        (Some((b, b_at)), Some((a, a_at))) if b != a => {
            let first = missed / 2;
            [Some((b, b_at, first)), Some((a, a_at, missed - first))]
        }
        (Some((b, b_at)), _) => [Some((b, b_at, missed)), None],
        (None, Some((a, a_at))) => [Some((a, a_at, missed)), None],
        (None, None) => [None, None],
    }
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
