//! The adaptive clock policy's rule (see [`crate::recorder::cpu_clock`]): which threads a perf
//! event costs next to nothing. A perf event gives the full rate but costs its thread 4-5 us
//! every time the thread is switched in and out; the CPU-time timer costs nothing per switch
//! and gives at most the kernel's tick rate. So a thread starts on a perf event, and one that
//! waits often (a server's pool thread, blocking and waking for every request) goes to the
//! timer; one that waits rarely again (running on and on, or blocked for long) goes back to a
//! perf event. Only waits count: a thread that computes on a crowded machine is preempted
//! hundreds of times a second, which costs it little (under 0.2% of a CPU at 300 a second),
//! and it is the thread that most needs the precise clock. At 50 waits a second a perf event
//! costs its thread under 0.05% of a CPU.
//! The sampler feeds in what it read at each wall tick; no system calls here, so the rule can
//! be tested on its own.

use crate::recorder::cpu_clock::ClockKind;

/// The stretch of time a decision looks at.
pub const WINDOW_NS: u64 = 100_000_000;
/// A thread on a perf event that waits more often than this a second goes to the timer...
const MAX_WAITS_ON_PERF: f64 = 200.0;
/// ... and one on the timer that waits at most this often goes back to a perf event.
const MAX_WAITS_TO_UPGRADE: f64 = 50.0;

/// One thread's recent waits.
#[derive(Debug, Default, Clone)]
pub struct WaitWatch {
    /// When the current window started, and the thread's CPU time then.
    window: Option<(u64, u64)>,
    /// The thread's count of waits when last read, and when.
    seen: Option<(u64, u64)>,
}

impl WaitWatch {
    /// A wall tick at `now` read the thread's CPU time `cpu`; the thread is on `clock`.
    /// `waits` reads how often it waited so far (a `/proc` read, done at most once per window
    /// and only for a thread that ran in it: a thread that did not waited at most once).
    /// Returns the clock to move the thread to, if any.
    pub fn on_tick(
        &mut self,
        now: u64,
        cpu: u64,
        clock: ClockKind,
        waits: impl FnOnce() -> Option<u64>,
    ) -> Option<ClockKind> {
        let Some((start, start_cpu)) = self.window else {
            self.window = Some((now, cpu));
            return None;
        };
        if now.saturating_sub(start) < WINDOW_NS {
            return None;
        }
        self.window = Some((now, cpu));
        if cpu == start_cpu {
            return None;
        }
        let count = waits();
        let before = self.seen;
        self.seen = count.map(|c| (now, c));
        let ((at, before), count) = (before?, count?);
        let elapsed = now.saturating_sub(at);
        if elapsed == 0 {
            return None;
        }
        let rate = count.saturating_sub(before) as f64 * 1e9 / elapsed as f64;
        match clock {
            ClockKind::PerfTaskClock if rate > MAX_WAITS_ON_PERF => Some(ClockKind::ThreadCpuTimer),
            ClockKind::ThreadCpuTimer if rate <= MAX_WAITS_TO_UPGRADE => {
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

    fn stat(waits: u64) -> Option<u64> {
        Some(waits)
    }

    #[test]
    fn a_thread_that_waits_often_goes_to_the_timer_and_back_when_it_calms_down() {
        let mut w = WaitWatch::default();
        let timer = ClockKind::ThreadCpuTimer;
        let perf = ClockKind::PerfTaskClock;
        assert_eq!(w.on_tick(0, 0, perf, || panic!("first look")), None);
        // It ran: its statistics are read, nothing known to compare with yet.
        assert_eq!(w.on_tick(110 * MS, 5 * MS, perf, || stat(1_000)), None);
        // 110 waits in 110 ms: 1,000 a second.
        assert_eq!(
            w.on_tick(220 * MS, 10 * MS, perf, || stat(1_110)),
            Some(timer)
        );
        // A short tick decides nothing.
        assert_eq!(
            w.on_tick(230 * MS, 11 * MS, timer, || panic!("too soon")),
            None
        );
        // Still waiting often: kept on the timer.
        assert_eq!(w.on_tick(330 * MS, 20 * MS, timer, || stat(1_220)), None);
        // Running on with 2 waits in 110 ms: back to a perf event.
        assert_eq!(
            w.on_tick(440 * MS, 125 * MS, timer, || stat(1_222)),
            Some(perf)
        );
    }

    #[test]
    fn a_thread_that_did_not_run_is_not_looked_at() {
        let mut w = WaitWatch::default();
        let timer = ClockKind::ThreadCpuTimer;
        w.on_tick(0, 7, timer, || panic!("first look"));
        assert_eq!(w.on_tick(150 * MS, 7, timer, || panic!("blocked")), None);
        assert_eq!(w.on_tick(300 * MS, 7, timer, || panic!("blocked")), None);
    }
}
