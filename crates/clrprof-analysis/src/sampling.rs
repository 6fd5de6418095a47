//! What a report says about the sampling itself: the clock used and the rate it reached, what
//! was missed, what the profiler cost, and how many stacks ended early and why. The trace
//! loader computes it (`LoadedTrace::profile`) from the agent's `SamplerInfo` and counters
//! and the samples themselves; the profile carries it to every renderer.

use serde::Serialize;

/// CPU samples by the clock that took them (format 1.8; all 0 before).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClockTally {
    /// Samples a perf task-clock event took.
    pub perf_samples: u64,
    /// The CPU time they stand for.
    pub perf_cpu_ns: u64,
    /// Samples a CPU-time timer took.
    pub timer_samples: u64,
    /// The CPU time they stand for.
    pub timer_cpu_ns: u64,
}

impl ClockTally {
    /// Counts a CPU sample of `cpu_ns` that `clock` took.
    pub fn add(&mut self, clock: clrprof_trace::SampleClock, cpu_ns: u64) {
        let (samples, cpu) = match clock {
            clrprof_trace::SampleClock::Perf => (&mut self.perf_samples, &mut self.perf_cpu_ns),
            clrprof_trace::SampleClock::Timer => (&mut self.timer_samples, &mut self.timer_cpu_ns),
            _ => return,
        };
        *samples += 1;
        *cpu = cpu.saturating_add(cpu_ns);
    }

    /// Both tallies together.
    pub fn merged(self, other: &ClockTally) -> ClockTally {
        ClockTally {
            perf_samples: self.perf_samples + other.perf_samples,
            perf_cpu_ns: self.perf_cpu_ns.saturating_add(other.perf_cpu_ns),
            timer_samples: self.timer_samples + other.timer_samples,
            timer_cpu_ns: self.timer_cpu_ns.saturating_add(other.timer_cpu_ns),
        }
    }

    /// The share of the CPU that perf events sampled (`None` when no clock is known).
    pub fn perf_cpu_share(&self) -> Option<f64> {
        let all = self.perf_cpu_ns.saturating_add(self.timer_cpu_ns);
        (all > 0).then(|| self.perf_cpu_ns as f64 / all as f64)
    }
}

/// CPU samples per second of a thread's CPU time on one of the busiest threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadRate {
    /// OS thread id.
    pub tid: u32,
    /// Its name (may be empty).
    pub name: String,
    /// CPU time its samples stand for.
    pub cpu_ns: u64,
    /// Its CPU samples.
    pub samples: u64,
    /// Samples per second of its CPU time.
    pub rate_hz: f64,
    /// The share of its CPU a perf event sampled (the rest: its CPU-time timer, at most one
    /// sample per scheduler tick); `None` before format 1.8.
    pub perf_cpu_share: Option<f64>,
}

/// Why some stacks ended before the thread's start, and how many samples have such a stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndedEarly {
    /// The reason, as the marker frame says it.
    pub reason: String,
    /// Samples (CPU and wall-clock) whose stack ends so.
    pub samples: u64,
}

/// The sampling of a sample-mode profile (format 1.2 and later).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingInfo {
    /// The per-thread CPU clock that triggered CPU samples; empty when there was none.
    pub cpu_clock: String,
    /// CPU samples by clock.
    pub by_clock: ClockTally,
    /// Threads the adaptive clock moved onto a perf event (busy), and back to the timer.
    pub clock_upgrades: u64,
    /// See `clock_upgrades`.
    pub clock_downgrades: u64,
    /// Times a thread on its CPU-time timer used 40 ms of CPU with the timer set and no sample
    /// (it ran only between the kernel's scheduler ticks): that CPU went to the stack of the
    /// sample that ended the stretch. The default policy moves such a thread to a perf event.
    pub timer_blind_stretches: u64,
    /// CPU samples asked per second of a thread's CPU time.
    pub cpu_rate_hz: u32,
    /// CPU samples per second of sampled CPU time, all threads together.
    pub cpu_rate_reached_hz: f64,
    /// The rate reached on the (at most three) threads that used the most CPU.
    pub busiest_threads: Vec<ThreadRate>,
    /// Wall-clock samples per second and thread.
    pub wall_rate_hz: u32,
    /// CPU samples.
    pub cpu_samples: u64,
    /// Wall-clock samples.
    pub wall_samples: u64,
    /// CPU samples lost because a thread had too many waiting to be read.
    pub samples_missed: u64,
    /// CPU the program's threads used in the periods of the missed samples: carried by each
    /// thread's stacks on either side of the gap, half each, as samples at a lower rate would
    /// (under a marker of its own when the thread had none; traces before the carrying: always
    /// the marker), and in `program_cpu_ns`.
    pub cpu_missed_ns: u64,
    /// Sample records that carry it on a thread's stacks (0: it is under the marker).
    pub missed_carriers: u64,
    /// CPU the threads used after their last sample (up to their end or the end of
    /// sampling), which no sample saw: under a marker of its own, and in `program_cpu_ns`.
    pub cpu_unsampled_ns: u64,
    /// Signals sent to blocked threads to learn where they wait (once per new wait).
    pub questions: u64,
    /// CPU the program's threads used, as the CPU samples add it up.
    pub program_cpu_ns: u64,
    /// CPU the profiler's signal handlers used on the program's threads (not in the above).
    pub handler_cpu_ns: u64,
    /// CPU the profiler's sampler thread used, with its symbol-reading threads'.
    pub sampler_cpu_ns: u64,
    /// The part of it the threads that read native modules' symbols used (once per module).
    pub symbols_cpu_ns: u64,
    /// CPU the agent's writer thread used sending the records (0 before the agent reported it).
    pub writer_cpu_ns: u64,
    /// CPU the profiler's callbacks used on the program's threads, as sampled (not in
    /// `program_cpu_ns`).
    pub agent_cpu_ns: u64,
    /// CPU the runtime spent on the program's threads on work it did only because the
    /// profiler asked it for events (its event source's set-up for the agent's event
    /// session, on .NET 5 and later), as sampled (not in `program_cpu_ns`).
    pub induced_cpu_ns: u64,
    /// Samples (CPU and wall-clock) whose stack ended before the thread's start.
    pub ended_early: u64,
    /// Every sample record: CPU and wall-clock samples, and those that carry the CPU of
    /// missed samples.
    pub samples: u64,
    /// The reasons, most frequent first.
    pub ended_early_by_reason: Vec<EndedEarly>,
}

impl SamplingInfo {
    /// The sampler thread's own CPU per sample written (CPU and wall-clock samples), its
    /// symbol reading left out: what each sample costs it (`None` without samples).
    pub fn sampler_ns_per_sample(&self) -> Option<u64> {
        let samples = self.cpu_samples + self.wall_samples;
        (samples > 0).then(|| self.sampler_cpu_ns.saturating_sub(self.symbols_cpu_ns) / samples)
    }

    /// The profiler's CPU (handlers, sampler, writer, callbacks, work the runtime did for it)
    /// as a share of the program's.
    pub fn overhead_share(&self) -> f64 {
        let own = self.handler_cpu_ns
            + self.sampler_cpu_ns
            + self.writer_cpu_ns
            + self.agent_cpu_ns
            + self.induced_cpu_ns;
        if self.program_cpu_ns == 0 {
            0.0
        } else {
            own as f64 / self.program_cpu_ns as f64
        }
    }
}
