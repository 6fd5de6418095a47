//! One profiling session: what `Initialize` set up and every callback uses, and the
//! [`Feature`] interface through which the session stops what its features run and writes
//! their counters at its end. The features themselves sit above the session (see
//! [`crate::features`]): they use it; it knows them only as features.

use clrprof_trace::counters::CounterName;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::{FunctionId, ProfilerInfo};
use clrprof_trace::callbacks::CallbackArgs;
use clrprof_trace::{CallTreeNode, Counter, Event, EventKind, Message, MessageLevel, Record};

use crate::config::{Config, Mode};
use crate::defs::Definitions;
use crate::event_mask::CurrentMask;
use crate::exceptions::ExceptionReader;
use crate::il_positions::CallbackPositions;
use crate::recorder::cct::{self, ThreadState};
use crate::recorder::{sys, threads};
use crate::sampler::gone_code::GoneCode;
use crate::sampler::stats::SamplerStats;
use crate::stacks::StackInterner;
use crate::transport::Transport;

/// One thing a session does beside its core (sampling, reading allocation ticks, counting
/// calls, ...): it owns its state, asks for the runtime callbacks it needs and reports its own
/// counters. The session stops each feature and writes its counters when it ends.
pub trait Feature: Send + Sync {
    /// The runtime callbacks (and codegen settings) the feature needs, given the session's
    /// configuration.
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        (EventMask::empty(), HighEventMask::empty())
    }

    /// Stops what the feature runs beside the program (threads, EventPipe sessions): at the
    /// session's end, and before a detach. Stopping twice does nothing more.
    fn stop(&self, _s: &Session) {}

    /// The feature's counters, written at the session's end.
    fn counters(&self, _s: &Session) -> Vec<(CounterName, u64)> {
        Vec::new()
    }
}

/// Everything a running session needs.
pub struct Session {
    /// The runtime's ICorProfilerInfo.
    pub info: ProfilerInfo,
    /// What to record.
    pub config: Config,
    /// Where records go.
    pub out: Arc<Transport>,
    /// Names already written.
    pub defs: Definitions,
    /// Where exception objects keep their message.
    pub exceptions: ExceptionReader,
    /// Sampler counters.
    pub sampler_stats: SamplerStats,
    /// Every stack written so far (samples and allocations share it).
    pub stacks: StackInterner,
    /// Code the runtime unloaded, for the sampler to forget.
    pub gone_code: GoneCode,
    /// Where the frames of stacks taken in callbacks and events were in their IL.
    pub il_positions: CallbackPositions,
    /// The runtime's event mask as last set, for the features that change it later.
    pub event_mask: CurrentMask,
    /// True if the agent was attached to a running program (`clrprof attach`).
    pub attached: bool,
    /// The thread that waits for the CLI to ask for a detach (attach only).
    pub control: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Which event kinds to record: bit `k` for `EventKind(k)`.
    wanted: u128,
    start_ns: u64,
    ended: AtomicBool,
}

impl Session {
    /// A new session; `start_ns` is the monotonic clock at initialization; `attached` if the
    /// agent was attached to a running program.
    pub fn new(
        info: ProfilerInfo,
        config: Config,
        out: Arc<Transport>,
        start_ns: u64,
        attached: bool,
    ) -> Session {
        let mut wanted = 0u128;
        for kind in EventKind::all() {
            if (kind.0 as u32) < 128 && config.wants(kind.category()) {
                wanted |= 1u128 << kind.0;
            }
        }
        if config.mode == Mode::Trace {
            // Trace mode reports what was inlined into what, whatever the event selection.
            wanted |= 1u128 << EventKind::JIT_INLINING.0;
        }
        if config.export.is_some() && !config.also_export {
            // Export mode's profiles need the throws alone of all the exception callbacks.
            wanted &= 1u128 << EventKind::EXCEPTION_THROWN.0;
        }
        Session {
            info,
            config,
            out,
            defs: Definitions::default(),
            exceptions: ExceptionReader::default(),
            sampler_stats: SamplerStats::default(),
            stacks: StackInterner::default(),
            gone_code: GoneCode::default(),
            il_positions: CallbackPositions::default(),
            event_mask: CurrentMask::default(),
            attached,
            control: Mutex::new(None),
            wanted,
            start_ns,
            ended: AtomicBool::new(false),
        }
    }

    /// Nanoseconds since the session started, for a monotonic clock reading `now`.
    pub fn since_start(&self, now: u64) -> u64 {
        now.saturating_sub(self.start_ns)
    }

    /// Nanoseconds since the session started.
    pub fn now(&self) -> u64 {
        self.since_start(sys::monotonic_ns())
    }

    /// True once Shutdown ran: later callbacks record nothing.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// True if events of `kind` are recorded.
    pub fn wants(&self, kind: EventKind) -> bool {
        kind.0 < 128 && self.wanted & (1u128 << kind.0) != 0 && !self.ended()
    }

    /// Records a callback's event, its args by name, if the session wants its kind.
    pub fn callback<C: CallbackArgs>(&self, args: C) {
        self.event(C::KIND, args.to_args().as_ref());
    }

    /// Records an event of `kind` on the calling thread, if that kind was asked for.
    pub fn event(&self, kind: EventKind, args: &[u64]) {
        if self.wants(kind) {
            self.out
                .push_event(&Event::new(self.now(), sys::gettid(), kind, args));
        }
    }

    /// Sends a message for the user (shown by the CLI).
    pub fn message(&self, level: MessageLevel, text: impl Into<String>) {
        self.out.push_record(&Record::Message(Message {
            ts: self.now(),
            level,
            text: text.into(),
        }));
    }

    /// Sends a note for the user.
    pub fn info(&self, text: impl Into<String>) {
        self.message(MessageLevel::Info, text);
    }

    /// Sends a warning for the user.
    pub fn warn(&self, text: impl Into<String>) {
        self.message(MessageLevel::Warning, text);
    }

    /// Writes the current value of every counter: the session's own, then each feature's.
    pub fn write_counters(&self, features: &[&dyn Feature]) {
        let ts = self.now();
        let t = self.out.stats();
        let c = &cct::STATS;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let counters = [
            (CounterName::EventsWritten, load(&t.events_written)),
            (CounterName::EventsDropped, load(&t.events_dropped)),
            (CounterName::SamplesWritten, load(&t.samples_written)),
            (CounterName::RecordsDropped, load(&t.records_dropped)),
            (CounterName::BytesLost, load(&t.bytes_lost)),
            (CounterName::WriterCpuNs, self.out.writer_cpu_ns()),
            (
                CounterName::AllocationsWritten,
                load(&t.allocations_written),
            ),
            (
                CounterName::AllocationsDropped,
                load(&t.allocations_dropped),
            ),
            (
                CounterName::PerfSignalsLate,
                crate::recorder::capture::PERF_SIGNALS_LATE.load(Ordering::Relaxed),
            ),
            (CounterName::CallTreeNodes, load(&c.nodes)),
            (CounterName::CallTreeNodesDropped, load(&c.nodes_dropped)),
            (CounterName::CallsUnrecorded, load(&c.calls_unrecorded)),
            (CounterName::ShadowStackMismatches, load(&c.mismatches)),
            (CounterName::SlowPathEnters, load(&c.slow_enters)),
            (
                CounterName::ThreadsDropped,
                load(&c.threads_dropped) + threads::THREADS_DROPPED.load(Ordering::Relaxed),
            ),
            (CounterName::PanicsCaught, clrprof_sdk::panics_caught()),
        ];
        let sampler = self.sampler_stats.counters(load(&t.samples_dropped));
        for (name, value) in counters
            .into_iter()
            .chain(sampler)
            .chain(features.iter().flat_map(|f| f.counters(self)))
        {
            self.out
                .push_record(&Record::Counter(Counter::named(name, ts, value)));
        }
        // Which figures lost events: `events_dropped:ExceptionThrown`, ...
        for (kind, value) in t.events_dropped_by_kind.nonzero() {
            self.out.push_record(&Record::Counter(Counter {
                ts,
                name: kind.dropped_counter(),
                value,
            }));
        }
    }

    /// Writes a thread's call tree (once), draining the buffer as it fills.
    pub fn dump_call_tree(&self, state: &ThreadState) {
        if state.dumped.swap(true, Ordering::AcqRel) {
            return;
        }
        let tid = state.tid();
        for (node, parent) in state.nodes() {
            let function = node.function();
            let times = state.times(node);
            let function = self
                .defs
                .function(&self.info, &self.out, FunctionId(function));
            let record = Record::CallTreeNode(CallTreeNode {
                tid,
                node: node.id.load(Ordering::Relaxed),
                parent,
                function,
                calls: node.calls.load(Ordering::Relaxed),
                self_samples: times.self_samples.load(Ordering::Relaxed),
                self_cpu_ns: times.self_cpu_ns.load(Ordering::Relaxed),
                self_wall_ns: times.self_wall_ns.load(Ordering::Relaxed),
            });
            self.out.push_record_or_drain(&record);
        }
    }

    /// Stops every feature's threads and sessions (see [`Feature::stop`]).
    pub fn stop_features(&self, features: &[&dyn Feature]) {
        for f in features {
            f.stop(self);
        }
    }

    /// Ends the session: stops its features, writes call trees and counters, flushes
    /// everything.
    pub fn end(&self, reason: &str, features: &[&dyn Feature]) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        self.stop_features(features);
        for slot in threads::used() {
            if let Some(state) = cct::state_of(slot) {
                self.dump_call_tree(state);
            }
        }
        self.write_counters(features);
        self.out
            .push_record(&Record::SessionEnd(clrprof_trace::SessionEnd {
                ts: self.now(),
                reason: reason.into(),
            }));
        self.out.stop();
    }
}
