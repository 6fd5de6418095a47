//! The names of the counters the agent and the CLI write (`Counter` records): one list, so
//! that the writers and the readers cannot spell a counter two ways. The wire form is the
//! name (a string), so a reader keeps counters it does not know (a newer agent's) by name.
//!
//! Two families are open-ended and have a prefix instead: the CPU the profiler used on one
//! thread ([`THREAD_PROFILER_CPU_PREFIX`] and the thread id) and the events dropped of one
//! kind (`events_dropped:` and the kind's name, see `EventKind::dropped_counter`).

macro_rules! counter_names {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, )*) => {
        /// A counter the agent or the CLI writes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum CounterName {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl CounterName {
            /// Every counter, in the order of the list.
            pub const ALL: &'static [CounterName] = &[$(CounterName::$variant),*];

            /// The name written in `Counter` records (and shown in reports' `counters`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( CounterName::$variant => $name, )*
                }
            }

            /// The counter of a written name, if it is one of this list.
            pub fn from_name(name: &str) -> Option<CounterName> {
                match name {
                    $( $name => Some(CounterName::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

counter_names! {
    // The transport (every session).
    /// Events written to the trace.
    EventsWritten = "events_written",
    /// Events dropped because the agent's buffer was full.
    EventsDropped = "events_dropped",
    /// Samples written.
    SamplesWritten = "samples_written",
    /// Samples dropped (buffer full, or missed by the sampler).
    SamplesDropped = "samples_dropped",
    /// Other records (names, call trees) dropped at the buffer's hard limit.
    RecordsDropped = "records_dropped",
    /// Bytes lost because the trace's reader went away.
    BytesLost = "bytes_lost",
    /// Set when the runtime announced its shutdown.
    Shutdown = "shutdown",
    /// Panics caught at the FFI boundary.
    PanicsCaught = "panics_caught",

    // Sample mode.
    /// Wall-clock ticks of the sampler thread.
    SamplerTicks = "sampler_ticks",
    /// CPU the sampler thread used.
    SamplerCpuNs = "sampler_cpu_ns",
    /// The part of it spent reading native modules' symbols.
    SymbolsCpuNs = "symbols_cpu_ns",
    /// CPU the agent's writer thread used: sending the records to the CLI (or the trace file,
    /// or export mode's aggregation).
    WriterCpuNs = "writer_cpu_ns",
    /// CPU spent in the sampling signal handlers.
    HandlerCpuNs = "handler_cpu_ns",
    /// CPU samples taken.
    CpuSamples = "cpu_samples",
    /// Wall-clock samples taken.
    WallSamples = "wall_samples",
    /// Samples the handlers could not take (a thread's ring was full).
    SamplesMissed = "samples_missed",
    /// CPU the missed samples stood for.
    CpuMissedNs = "cpu_missed_ns",
    /// Missed samples whose CPU could not be given to a later sample of their thread.
    MissedCarriers = "missed_carriers",
    /// CPU a thread used after its last sample (no sample stands for it).
    CpuUnsampledNs = "cpu_unsampled_ns",
    /// Times the sampler asked a blocked thread for its stack.
    SamplerQuestions = "sampler_questions",
    /// Samples that caught the agent's own code on a program thread.
    AgentSamples = "agent_samples",
    /// CPU those samples stood for.
    AgentCpuNs = "agent_cpu_ns",
    /// CPU clocks the sampler re-armed (their signal was lost).
    ClocksRearmed = "clocks_rearmed",
    /// Threads moved to a better CPU clock.
    ClockUpgrades = "clock_upgrades",
    /// Threads moved to a lesser CPU clock.
    ClockDowngrades = "clock_downgrades",
    /// Times a thread on its CPU-time timer used many ticks' worth of CPU with the timer set
    /// and no sample: it ran only between the kernel's scheduler ticks, which never saw it.
    TimerBlindStretches = "timer_blind_stretches",
    /// perf signals that arrived after their thread had moved on.
    PerfSignalsLate = "perf_signals_late",
    /// Stacks cut at the frame limit.
    StacksTruncated = "stacks_truncated",

    // Trace mode.
    /// Call tree nodes written.
    CallTreeNodes = "call_tree_nodes",
    /// Call tree nodes dropped at the node limit.
    CallTreeNodesDropped = "call_tree_nodes_dropped",
    /// Calls not recorded (their thread's tree was full).
    CallsUnrecorded = "calls_unrecorded",
    /// Leaves that did not match the shadow stack's enter.
    ShadowStackMismatches = "shadow_stack_mismatches",
    /// Enters that took the slow path.
    SlowPathEnters = "slow_path_enters",
    /// Threads dropped (no thread slot left).
    ThreadsDropped = "threads_dropped",

    // Allocations.
    /// Allocation records written.
    AllocationsWritten = "allocations_written",
    /// Allocation records dropped (buffer full).
    AllocationsDropped = "allocations_dropped",
    /// Who read the runtime's allocation ticks: 1 the agent, 0 the CLI (see `protocol`).
    AllocationTicksReader = "allocation_ticks_reader",
    /// Allocation ticks the agent read.
    AllocationTicks = "allocation_ticks",
    /// Ticks whose payload could not be read.
    AllocationTicksUnreadable = "allocation_ticks_unreadable",
    /// Ticks delivered on another thread than the allocating one.
    AllocationTicksOtherThread = "allocation_ticks_other_thread",
    /// Stack frames of ticks that no method's code contained (the CLI's conversion).
    AllocationTicksUnresolvedFrames = "allocation_ticks_unresolved_frames",
    /// Events of the CLI's tick session the runtime dropped.
    AllocationTicksLost = "allocation_ticks_lost",
    /// When the ticks began, if after the session's start (see `protocol`).
    AllocationTicksFromNs = "allocation_ticks_from_ns",

    // Lock contention.
    /// Who read the runtime's contention events: 1 the agent, 0 the CLI.
    ContentionReader = "contention_reader",
    /// Contention events the agent read.
    ContentionEvents = "contention_events",
    /// Contended acquisitions written.
    ContentionWritten = "contention_written",
    /// Contended acquisitions dropped (buffer full).
    ContentionDropped = "contention_dropped",
    /// Starts without a stop, or stops without a start.
    ContentionUnpaired = "contention_unpaired",
    /// Contention events whose payload could not be read.
    ContentionUnreadable = "contention_unreadable",
    /// Events of the CLI's contention session the runtime dropped.
    ContentionEventsLost = "contention_events_lost",

    // The CLI's event sessions (CoreCLR 3.1), see `protocol::EventSessionNews`.
    /// Sessions of the CLI's the agent held the program's start for.
    CliEventSessionsAwaited = "cli_event_sessions_awaited",
    /// Of them, those the CLI said had started before the program went on.
    CliEventSessionsStarted = "cli_event_sessions_started",
    /// How long the agent held the program's start for them.
    CliEventSessionsWaitNs = "cli_event_sessions_wait_ns",

    // Heap snapshots.
    /// Collections whose heap walk no snapshot took.
    HeapWalksUnused = "heap_walks_unused",
    /// Heap walk callbacks no snapshot took.
    HeapWalkCallbacksUnused = "heap_walk_callbacks_unused",
    /// Times the heap walk was turned on.
    HeapWalkEnables = "heap_walk_enables",
    /// Times the runtime refused to turn it on.
    HeapWalkRefusals = "heap_walk_refusals",
    /// Static fields written with snapshots.
    HeapStaticFields = "heap_static_fields",
    /// Static fields left out (over the limit).
    HeapStaticFieldsDropped = "heap_static_fields_dropped",
    /// Static field records dropped (buffer full).
    HeapStaticsDropped = "heap_statics_dropped",
    /// Static fields not set yet (their class not initialized).
    HeapStaticsUnset = "heap_statics_unset",
    /// Static fields the runtime could not give.
    HeapStaticsFailed = "heap_statics_failed",

    // Count mode.
    /// Methods given call counters.
    CountMethods = "count_methods",
    /// Methods whose counters could not be added.
    CountMethodsFailed = "count_methods_failed",
    /// Inlinings refused so that callees keep their counters.
    CountInlinesRefused = "count_inlines_refused",
    /// Precompiled methods refused (so that they are compiled with counters).
    CountPrecompiledRefused = "count_precompiled_refused",
    /// Threads whose counts could not be told apart.
    CountThreadsUnmapped = "count_threads_unmapped",

    // Async call chains.
    /// Async state machine types probed.
    AsyncTypes = "async_types",
    /// Async methods probed.
    AsyncMethods = "async_methods",
    /// Async methods whose probes could not be added.
    AsyncFailed = "async_failed",
    /// Precompiled async methods refused (so that they get probes).
    AsyncPrecompiledRefused = "async_precompiled_refused",
    /// Chains dropped (table full).
    AsyncChainsDropped = "async_chains_dropped",
    /// Samples given their async callers.
    AsyncSamplesSpliced = "async_samples_spliced",
    /// Samples whose chain's method was not on the stack.
    AsyncSamplesUnmatched = "async_samples_unmatched",
}

impl crate::Counter {
    /// A counter record of `name`.
    pub fn named(name: CounterName, ts: u64, value: u64) -> crate::Counter {
        crate::Counter {
            ts,
            name: name.as_str().into(),
            value,
        }
    }

    /// Whether this record is counter `name`.
    pub fn is(&self, name: CounterName) -> bool {
        self.name == name.as_str()
    }
}

/// The prefix of the counter of the CPU the profiler used on one thread: the thread id
/// follows (`profiler_cpu_ns:4242`).
pub const THREAD_PROFILER_CPU_PREFIX: &str = "profiler_cpu_ns:";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_has_one_name_and_reads_back() {
        let mut names = std::collections::HashSet::new();
        for &c in CounterName::ALL {
            assert!(names.insert(c.as_str()), "{} twice", c.as_str());
            assert_eq!(CounterName::from_name(c.as_str()), Some(c));
        }
        assert_eq!(CounterName::from_name("no_such_counter"), None);
    }
}
