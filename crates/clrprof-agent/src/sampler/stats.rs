//! The sampler's counters: what it did and what it cost, written into the trace at its end.
//! The signal handlers and the sampler thread add to them; the session reads them. They sit
//! below the sampler so that the session can hold them without depending on the sampler.

use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_trace::counters::CounterName;

/// Sampler counters, reported in the trace.
#[derive(Default)]
pub struct SamplerStats {
    /// Wall-clock ticks (sample mode) or ticks (trace mode) run.
    pub ticks: AtomicU64,
    /// Captures lost because a thread's ring was full, and questions never answered.
    pub missed: AtomicU64,
    /// Stacks cut because they were deeper than the limit.
    pub truncated: AtomicU64,
    /// CPU time the sampler thread itself used, with its symbol readers': the profiler's own
    /// cost, outside the program's threads.
    pub cpu_ns: AtomicU64,
    /// CPU time the threads that read native modules' symbols used (see
    /// `StackBuilder::read_module_of`), once each is done.
    pub symbols_cpu_ns: AtomicU64,
    /// CPU time the signal handlers used on the program's threads: the profiler's cost too,
    /// never counted as the program's.
    pub handler_cpu_ns: AtomicU64,
    /// CPU time of the program's threads in the periods whose captures were dropped (see
    /// `Book::on_cpu_capture`): carried by each thread's latest stack.
    pub cpu_missed_ns: AtomicU64,
    /// Sample records written to carry that CPU (CPU samples in the trace that the sampler
    /// did not take).
    pub missed_carriers: AtomicU64,
    /// CPU threads used after their last sample (see `StackCut::Unsampled`).
    pub cpu_unsampled_ns: AtomicU64,
    /// CPU samples written.
    pub cpu_samples: AtomicU64,
    /// Wall-clock samples written.
    pub wall_samples: AtomicU64,
    /// Questions sent to blocked threads (one signal each).
    pub questions: AtomicU64,
    /// CPU samples that found the agent's own code running (a callback): not written.
    pub agent_samples: AtomicU64,
    /// The CPU those samples stand for: the profiler's work on the program's threads.
    pub agent_cpu_ns: AtomicU64,
    /// Clocks the sampler started again: a timer whose signal's details were lost, a perf
    /// event that stopped or whose signals stopped coming.
    pub rearmed: AtomicU64,
    /// Threads moved from the CPU-time timer back to a perf event (adaptive policy).
    pub clock_upgrades: AtomicU64,
    /// Threads moved from a perf event to the timer (they wait often).
    pub clock_downgrades: AtomicU64,
    /// Stretches of [`super::TIMER_LATE_NS`] of a thread's CPU that its CPU-time timer, still set, did
    /// not sample: the thread ran only between the kernel's ticks.
    pub timer_blind: AtomicU64,
}

impl SamplerStats {
    /// The counters, by name: captures lost to full rings (`missed`) are samples dropped too,
    /// beside those the transport dropped (`transport_dropped`).
    pub fn counters(&self, transport_dropped: u64) -> [(CounterName, u64); 18] {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            (
                CounterName::SamplesDropped,
                transport_dropped + load(&self.missed),
            ),
            (CounterName::SamplerTicks, load(&self.ticks)),
            (CounterName::SamplerCpuNs, load(&self.cpu_ns)),
            (CounterName::SymbolsCpuNs, load(&self.symbols_cpu_ns)),
            (CounterName::HandlerCpuNs, load(&self.handler_cpu_ns)),
            (CounterName::CpuSamples, load(&self.cpu_samples)),
            (CounterName::WallSamples, load(&self.wall_samples)),
            (CounterName::SamplesMissed, load(&self.missed)),
            (CounterName::CpuMissedNs, load(&self.cpu_missed_ns)),
            (CounterName::MissedCarriers, load(&self.missed_carriers)),
            (CounterName::CpuUnsampledNs, load(&self.cpu_unsampled_ns)),
            (CounterName::SamplerQuestions, load(&self.questions)),
            (CounterName::AgentSamples, load(&self.agent_samples)),
            (CounterName::AgentCpuNs, load(&self.agent_cpu_ns)),
            (CounterName::ClocksRearmed, load(&self.rearmed)),
            (CounterName::ClockUpgrades, load(&self.clock_upgrades)),
            (CounterName::TimerBlindStretches, load(&self.timer_blind)),
            (CounterName::ClockDowngrades, load(&self.clock_downgrades)),
        ]
    }
}
