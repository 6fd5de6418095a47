//! The adaptive clock policy's rule (see [`crate::recorder::cpu_clock`]): which threads a perf
//! event costs next to nothing. A perf event gives the full rate but costs its thread some
//! microseconds every time the thread is switched in and out (4-5 us measured here); the
//! CPU-time timer costs nothing per switch and gives at most the kernel's tick rate. What a
//! perf event costs a thread is its switches per second of its CPU times that: a thread that
//! computes and is preempted some hundreds of times a second pays under 0.2%, and it is the
//! thread that most needs the precise clock; a server's pool thread that blocks and wakes for
//! every request, or a thread that spins on `sched_yield` while others wait for the CPU, is
//! switched thousands of times per second of its CPU and would pay 1.5% to 150% more (measured:
//! 2.5x the CPU of a workload of short work items on the thread pool, whose idle workers spin
//! on `sched_yield`). So a thread starts on the timer, goes to a perf event once it is seen to
//! be switched at most [`MAX_SWITCHES_TO_UPGRADE`] times per second of its CPU (a busy thread,
//! within about 100 ms), and back to the timer when its switches would cost it more than
//! [`MAX_SWITCHES_PER_CPU_S`] allows. Every switch counts, blocking or preempted or yielding alike:
//! each costs the event the same.
//! The sampler feeds in what it read at each wall tick; no system calls here, so the rule can
//! be tested on its own.

use crate::recorder::cpu_clock::ClockKind;

/// The stretch of time a decision looks at.
pub const WINDOW_NS: u64 = 100_000_000;
/// A thread on a perf event switched more often than this per second of its own CPU goes to
/// the timer (about 1.5% of its CPU at 5 us a switch)...
const MAX_SWITCHES_PER_CPU_S: f64 = 3_000.0;
/// ... and one on the timer switched at most this often goes to a perf event: a thread that
/// computes on a machine with more runnable threads than cores is preempted every 0.7-3 ms
/// of its CPU (measured: 4 busy threads on 2 cores, 600-700 switches per CPU second).
const MAX_SWITCHES_TO_UPGRADE: f64 = 1_500.0;
/// Less CPU than this in a window tells too little to move a thread on (a thread that ran for
/// a few microseconds after a long wait).
const MIN_CPU_NS: u64 = 2_000_000;

/// One thread's recent switches.
#[derive(Debug, Default, Clone)]
pub struct SwitchWatch {
    /// When the current window started.
    window: Option<u64>,
    /// The thread's CPU time and count of switches when last read.
    seen: Option<(u64, u64)>,
}

impl SwitchWatch {
    /// A wall tick at `now` read the thread's CPU time `cpu`; the thread is on `clock`.
    /// `switches` reads how many times it was switched in so far (a `/proc` read, done at the
    /// first look and then at most once per window, only for a thread that ran in it).
    /// Returns the clock to move the thread to, if any.
    pub fn on_tick(
        &mut self,
        now: u64,
        cpu: u64,
        clock: ClockKind,
        switches: impl FnOnce() -> Option<u64>,
    ) -> Option<ClockKind> {
        let Some(start) = self.window else {
            // The first look: the count to compare the next window with, so that a busy
            // thread gets its clock one window after it is first seen (about 100 ms), not two.
            self.window = Some(now);
            self.seen = switches().map(|count| (cpu, count));
            return None;
        };
        if now.saturating_sub(start) < WINDOW_NS {
            return None;
        }
        self.window = Some(now);
        let Some((before_cpu, before_count)) = self.seen else {
            self.seen = switches().map(|count| (cpu, count));
            return None;
        };
        let ran = cpu.saturating_sub(before_cpu);
        if ran < MIN_CPU_NS {
            // Did not run, or too little to tell (and not worth a `/proc` read: a server's
            // pool threads are most of a sampler's reads); keep counting from where the
            // window started.
            return None;
        }
        let count = switches()?;
        self.seen = Some((cpu, count));
        let rate = count.saturating_sub(before_count) as f64 * 1e9 / ran as f64;
        match clock {
            ClockKind::PerfTaskClock if rate > MAX_SWITCHES_PER_CPU_S => {
                Some(ClockKind::ThreadCpuTimer)
            }
            ClockKind::ThreadCpuTimer if rate <= MAX_SWITCHES_TO_UPGRADE => {
                Some(ClockKind::PerfTaskClock)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn stat(switches: u64) -> Option<u64> {
        Some(switches)
    }

    #[test]
    fn a_thread_switched_often_for_its_cpu_goes_to_the_timer_and_back_when_it_calms_down() {
        let mut w = SwitchWatch::default();
        let timer = ClockKind::ThreadCpuTimer;
        let perf = ClockKind::PerfTaskClock;
        // The first look reads its statistics: nothing known to compare with yet.
        assert_eq!(w.on_tick(0, 0, perf, || stat(1_000)), None);
        // 100 switches in 20 ms of CPU: 5,000 per CPU second.
        assert_eq!(
            w.on_tick(300 * MS, 20 * MS, perf, || stat(1_100)),
            Some(timer)
        );
        // A short tick decides nothing.
        assert_eq!(
            w.on_tick(310 * MS, 21 * MS, timer, || panic!("too soon")),
            None
        );
        // Still switched often: kept on the timer.
        assert_eq!(w.on_tick(600 * MS, 40 * MS, timer, || stat(1_200)), None);
        // Running on with 10 switches in 250 ms of CPU: back to a perf event.
        assert_eq!(
            w.on_tick(900 * MS, 290 * MS, timer, || stat(1_210)),
            Some(perf)
        );
    }

    #[test]
    fn a_busy_thread_preempted_hundreds_of_times_a_second_gets_a_perf_event_within_a_window() {
        let mut w = SwitchWatch::default();
        let perf = ClockKind::PerfTaskClock;
        w.on_tick(0, 0, perf, || stat(0));
        // 175 preemptions in 250 ms of CPU: 700 a second.
        assert_eq!(w.on_tick(250 * MS, 250 * MS, perf, || stat(175)), None);
        // And one on the timer gets a perf event at the end of its first window.
        let mut w = SwitchWatch::default();
        let timer = ClockKind::ThreadCpuTimer;
        w.on_tick(0, 0, timer, || stat(0));
        assert_eq!(
            w.on_tick(110 * MS, 100 * MS, timer, || stat(70)),
            Some(perf)
        );
    }

    #[test]
    fn a_thread_that_did_not_run_is_not_looked_at() {
        let mut w = SwitchWatch::default();
        let timer = ClockKind::ThreadCpuTimer;
        w.on_tick(0, 7, timer, || stat(3));
        // 37 switches in 9 ms of CPU: kept on the timer.
        assert_eq!(w.on_tick(300 * MS, 9 * MS, timer, || stat(40)), None);
        assert_eq!(
            w.on_tick(600 * MS, 9 * MS, timer, || panic!("blocked")),
            None
        );
        assert_eq!(
            w.on_tick(900 * MS, 9 * MS, timer, || panic!("blocked")),
            None
        );
    }

    #[test]
    fn too_little_cpu_decides_nothing() {
        let mut w = SwitchWatch::default();
        let perf = ClockKind::PerfTaskClock;
        w.on_tick(0, 0, perf, || stat(10));
        // 1 ms of CPU is not enough to tell: not even worth reading the count.
        assert_eq!(
            w.on_tick(300 * MS, MS, perf, || panic!("too little CPU to read")),
            None
        );
        // Counted on from the first reading: 60 switches in 3 ms of CPU.
        assert_eq!(
            w.on_tick(600 * MS, 3 * MS, perf, || stat(70)),
            Some(ClockKind::ThreadCpuTimer)
        );
    }
}
