//! `--alloc ticks` where the runtime offers in-process EventPipe sessions
//! (`ICorProfilerInfo12`, .NET 5 and later): the runtime's own `GCAllocationTick` events,
//! delivered to the agent's `EventPipeEventDelivered`, become `Allocation` records flagged
//! [`Allocation::TICK`], as the CLI makes them from the diagnostics socket on older runtimes.
//!
//! The runtime writes a tick each time it has handed out about 100 KiB on a heap since the
//! previous one, naming the type of the object being allocated at that moment
//! (docs/memory-profiling.md). A profiler's session is synchronous: the runtime
//! calls `EventPipeEventDelivered` inside the write, on the writing thread, and for this event
//! that is the allocating thread, inside the allocation. The event names its thread as null,
//! "the thread you are on" (a thread id equal to the current one means the same). There the
//! agent walks the thread's managed stack itself, exactly as for `ObjectAllocated`
//! (`DoStackSnapshot` on the current thread: the innermost frame is the allocating method).
//! An event delivered on another thread would get the stack EventPipe attached to it, mapped
//! to functions, or none (counted; .NET 8.0.4 delivers every tick on the allocating thread and
//! attaches no stacks to a profiler's session).
//!
//! No `ObjectAllocated` callback is asked for, so allocations stay on the runtime's fast path;
//! no diagnostics socket, method rundown or conversion in the CLI is needed. The callback does
//! not block beyond the stack table's short lock and never grows memory without bound: the
//! record goes into the transport's fixed buffer and is dropped and counted
//! (`allocations_dropped`) when that is full.
//!
//! Whether the agent or the CLI reads the ticks is decided by asking for the session (the SDK
//! finds the interfaces by QueryInterface, so a runtime without `ICorProfilerInfo12` refuses
//! it with `NotSupported`), and told to the CLI with [`TickReader`].

use clrprof_trace::counters::CounterName;
use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_events::gc::{AllocationKind, AllocationTick};
use clrprof_events::{Payload, PointerSize, keyword, level};
use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::info::EventPipeLevel;
use clrprof_sdk::{ClassId, EventPipeEvent, FunctionId};
use clrprof_trace::Allocation;
use clrprof_trace::protocol::{ALLOCATION_TICK_BYTES, TickReader};

use crate::config::AllocMode;
use crate::recorder::sys;
use crate::runtime_events::{RuntimeSession, is_runtime_provider};
use crate::session::{Feature, Session};
use crate::stacks::ManagedFrame;

/// Deepest stack taken from an event's own frames.
const MAX_EVENT_FRAMES: usize = 256;

/// What happened to the ticks, written into the trace.
#[derive(Default)]
struct TickStats {
    /// Ticks delivered to the agent.
    delivered: AtomicU64,
    /// Ticks whose payload could not be read (dropped).
    unreadable: AtomicU64,
    /// Ticks delivered on another thread than the allocating one.
    other_thread: AtomicU64,
    /// Frames of an event's own stack that are in no managed function (left out).
    unresolved_frames: AtomicU64,
}

/// The allocation ticks feature of one session: its EventPipe session and what became of the
/// ticks.
pub struct AllocTicks {
    /// The agent's EventPipe session, once started.
    session: RuntimeSession,
    stats: TickStats,
}

impl Default for AllocTicks {
    fn default() -> Self {
        AllocTicks {
            session: RuntimeSession::new("allocation ticks"),
            stats: TickStats::default(),
        }
    }
}

impl AllocTicks {
    /// Who reads the ticks (`None` without `alloc=ticks`).
    fn reader(&self, s: &Session) -> Option<TickReader> {
        (s.config.alloc == AllocMode::Ticks).then(|| {
            if self.reads_ticks() {
                TickReader::Agent
            } else {
                TickReader::Cli
            }
        })
    }

    /// With `alloc=ticks`: starts the in-process session (the runtime provider's GC keyword at
    /// verbose level, where the ticks are); says who reads the ticks, for the CLI (`None`
    /// without `alloc=ticks`).
    pub fn start(&self, s: &Session) -> Option<TickReader> {
        if s.config.alloc != AllocMode::Ticks {
            return None;
        }
        self.session
            .start(s, keyword::GC, EventPipeLevel(level::VERBOSE));
        self.reader(s)
    }

    /// Whether the agent reads the ticks (its session started).
    pub fn reads_ticks(&self) -> bool {
        self.session.started()
    }

    /// Handles one event of the agent's session: a `GCAllocationTick` becomes an
    /// `Allocation`.
    pub fn event_delivered(&self, s: &Session, event: &EventPipeEvent<'_>) {
        if event.event_id != AllocationTick::EVENT_ID
            || s.config.alloc != AllocMode::Ticks
            || !is_runtime_provider(s, event.provider)
        {
            return;
        }
        self.stats.delivered.fetch_add(1, Ordering::Relaxed);
        // The payload is read where it lies: nothing allocated inside the allocation.
        let Ok(tick) = AllocationTick::read(event.event_version, event.data, PointerSize::NATIVE)
        else {
            self.stats.unreadable.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let on_this_thread = event.thread.is_null()
            || matches!(s.info.get_current_thread_id(), Ok(t) if t == event.thread);
        let stack = if on_this_thread {
            crate::alloc::current_stack(s)
        } else {
            self.stats.other_thread.fetch_add(1, Ordering::Relaxed);
            self.event_stack(s, event.stack)
        };
        let class = ClassId(tick.type_id() as usize);
        s.defs.class(&s.info, &s.out, class);
        let mut flags = Allocation::TICK;
        if tick.allocation_kind() == AllocationKind::LARGE {
            flags |= Allocation::LARGE_OBJECT_HEAP;
        }
        if matches!(s.info.is_array_class(class), Ok(Some(_))) {
            flags |= Allocation::ARRAY;
        }
        s.out.push_allocation(&Allocation {
            ts: s.now(),
            tid: sys::gettid(),
            class: class.as_u64(),
            size: tick.allocation_amount64(),
            stack,
            interval: ALLOCATION_TICK_BYTES,
            flags,
            array_length: 0,
        });
    }

    /// The stack EventPipe attached to an event (return addresses, innermost first), as
    /// managed functions; addresses in no managed function are left out and counted.
    fn event_stack(&self, s: &Session, ips: &[usize]) -> u32 {
        let mut frames = [ManagedFrame::default(); MAX_EVENT_FRAMES];
        let mut depth = 0;
        for &ip in ips {
            if depth == frames.len() {
                break;
            }
            // A return address: the byte before it is inside the calling method.
            match s.info.get_function_from_ip(ip.saturating_sub(1)) {
                Ok(f) if f != FunctionId::NULL => {
                    frames[depth] = ManagedFrame { function: f.0, ip };
                    depth += 1;
                }
                _ => {
                    self.stats.unresolved_frames.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let truncated = depth == frames.len() && ips.len() > depth;
        crate::alloc::intern_managed(s, &frames[..depth], truncated)
    }
}

impl Feature for AllocTicks {
    /// The ticks' stacks are walked on the allocating thread, inside the event.
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        self.session.event_mask()
    }

    fn stop(&self, s: &Session) {
        self.session.stop(s);
    }

    /// With `alloc=ticks`, who reads the ticks, and what became of them when the agent does.
    fn counters(&self, s: &Session) -> Vec<(CounterName, u64)> {
        let Some(reader) = self.reader(s) else {
            return Vec::new();
        };
        let mut counters = vec![(TickReader::COUNTER, reader.value())];
        if reader == TickReader::Agent {
            let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
            let t = &self.stats;
            counters.extend([
                (CounterName::AllocationTicks, load(&t.delivered)),
                (CounterName::AllocationTicksUnreadable, load(&t.unreadable)),
                (
                    CounterName::AllocationTicksOtherThread,
                    load(&t.other_thread),
                ),
                (
                    CounterName::AllocationTicksUnresolvedFrames,
                    load(&t.unresolved_frames),
                ),
            ]);
        }
        counters
    }
}
