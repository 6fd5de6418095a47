//! `--contention`: every contended `Monitor.Enter` (C# `lock`) from the runtime's own
//! contention events, read through an in-process EventPipe session where the runtime offers
//! one (`ICorProfilerInfo12`, .NET 5 and later).
//!
//! The runtime writes `ContentionStart` on the waiting thread when a `Monitor.Enter` stops
//! spinning and is about to wait, and `ContentionStop` on the same thread once it holds the
//! lock. A profiler's session is synchronous: `EventPipeEventDelivered` runs inside the write,
//! on that thread, while it is still in cooperative mode (the lock object cannot move). At the
//! start the agent walks the thread's managed stack (the waiting stack), asks the lock object's
//! class (`GetClassFromObject` of the event's `AssociatedObjectID`) and keeps them, with the
//! lock's id and its holder's thread, in the thread's slot; at the stop it writes one
//! `Contention` record with the runtime's `DurationNs` (or, where the stop event has none,
//! the time between the two events).
//!
//! What each runtime's events carry (the manifest, `ClrEtwAll.man`): .NET 8 writes
//! `ContentionStart` version 2 (`ContentionFlags`, `ClrInstanceID`, `LockID`,
//! `AssociatedObjectID`, `LockOwnerThreadID`) and `ContentionStop` version 1 (`Flags`,
//! `ClrInstanceID`, `DurationNs`); CoreCLR 3.1 has no `ICorProfilerInfo12`, and its events
//! (start version 1, stop version 0) carry only the flags: there the CLI reads them over the
//! diagnostics socket and measures the wait between them, and the lock's class and holder are
//! unknown.
//!
//! The callbacks do not allocate beyond what naming a class or function for the first time
//! takes, and never block beyond the stack table's short lock; a record the transport's full
//! buffer refuses is dropped and counted (`contention_dropped`).

use clrprof_trace::counters::CounterName;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_events::contention::{ContentionFlags, ContentionStart, ContentionStop};
use clrprof_events::{Payload, PointerSize, keyword, level};
use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::info::EventPipeLevel;
use clrprof_sdk::{EventPipeEvent, ObjectId};
use clrprof_trace::Contention;
use clrprof_trace::protocol::CONTENTION_READER_COUNTER;

use crate::recorder::sys;
use crate::runtime_events::{RuntimeSession, is_runtime_provider};
use crate::session::{Feature, Session};

/// What happened to the events, written into the trace.
#[derive(Default)]
struct Stats {
    starts: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
    unpaired: AtomicU64,
    unreadable: AtomicU64,
}

/// The last contention feature's number in this process: a wait that an earlier session's
/// feature saw start (one detached while a thread waited) is not a later one's, although the
/// thread keeps it.
static LAST_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The contention feature of one session: its EventPipe session, its number in the process
/// and what became of the events.
pub struct ContentionEvents {
    /// The agent's EventPipe session, once started.
    session: RuntimeSession,
    generation: u64,
    stats: Stats,
}

impl Default for ContentionEvents {
    fn default() -> Self {
        ContentionEvents {
            session: RuntimeSession::new("contention events"),
            generation: LAST_GENERATION.fetch_add(1, Ordering::Relaxed) + 1,
            stats: Stats::default(),
        }
    }
}

/// A wait that started on this thread and has not stopped yet.
#[derive(Clone, Copy)]
struct Pending {
    active: bool,
    generation: u64,
    ts: u64,
    stack: u32,
    class: u64,
    lock_id: u64,
    owner_tid: u32,
    flags: u8,
}

const IDLE: Pending = Pending {
    active: false,
    generation: 0,
    ts: 0,
    stack: 0,
    class: 0,
    lock_id: 0,
    owner_tid: 0,
    flags: 0,
};

impl Pending {
    /// Whether this is a wait of session `generation` that has not stopped.
    fn is_pending(&self, generation: u64) -> bool {
        self.active && self.generation == generation
    }
}

thread_local! {
    /// This thread's current wait (a thread waits for one lock at a time).
    static WAIT: Cell<Pending> = const { Cell::new(IDLE) };
}

impl ContentionEvents {
    /// With `contention=1`: starts the in-process session on the runtime provider's
    /// contention keyword; returns who reads the events, for the CLI (`None` without
    /// `contention=1`): 1 the agent, 0 the CLI.
    pub fn start(&self, s: &Session) -> Option<u64> {
        if !s.config.contention {
            return None;
        }
        self.session
            .start(s, keyword::CONTENTION, EventPipeLevel(level::INFORMATIONAL));
        Some(self.reader())
    }

    /// 1 when the agent reads the events, 0 when the CLI does.
    fn reader(&self) -> u64 {
        u64::from(self.reads_events())
    }

    /// Whether the agent reads the contention events (its session started).
    pub fn reads_events(&self) -> bool {
        self.session.started()
    }

    /// Handles one event of the agent's sessions: contention starts and stops.
    pub fn event_delivered(&self, s: &Session, event: &EventPipeEvent<'_>) {
        if !s.config.contention
            || !self.reads_events()
            || ![ContentionStart::EVENT_ID, ContentionStop::EVENT_ID].contains(&event.event_id)
            || !is_runtime_provider(s, event.provider)
        {
            return;
        }
        if event.event_id == ContentionStart::EVENT_ID {
            self.started(s, event);
        } else {
            self.stopped(s, event);
        }
    }

    fn started(&self, s: &Session, event: &EventPipeEvent<'_>) {
        self.stats.starts.fetch_add(1, Ordering::Relaxed);
        let ts = s.now();
        let Ok(start) = ContentionStart::read(event.event_version, event.data, PointerSize::NATIVE)
        else {
            self.stats.unreadable.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let generation = self.generation;
        if WAIT.with(Cell::get).is_pending(generation) {
            // The previous wait never stopped.
            self.stats.unpaired.fetch_add(1, Ordering::Relaxed);
        }
        let stack = crate::alloc::current_stack(s);
        let mut class = 0;
        if let Some(object) = start.associated_object_id().filter(|&o| o != 0) {
            // The thread is in cooperative mode here: the object stays where it is.
            if let Ok(c) = s.info.get_class_from_object(ObjectId(object as usize)) {
                s.defs.class(&s.info, &s.out, c);
                class = c.as_u64();
            }
        }
        let mut flags = 0;
        if start.flags() == ContentionFlags::NATIVE {
            flags |= Contention::NATIVE;
        }
        WAIT.with(|w| {
            w.set(Pending {
                active: true,
                generation,
                ts,
                stack,
                class,
                lock_id: start.lock_id().unwrap_or(0),
                owner_tid: start
                    .lock_owner_thread_id()
                    .and_then(|t| u32::try_from(t).ok())
                    .unwrap_or(0),
                flags,
            });
        });
    }

    fn stopped(&self, s: &Session, event: &EventPipeEvent<'_>) {
        let now = s.now();
        let wait = WAIT.with(|w| w.replace(IDLE));
        if !wait.is_pending(self.generation) {
            self.stats.unpaired.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let stop = ContentionStop::read(event.event_version, event.data, PointerSize::NATIVE);
        let mut flags = wait.flags;
        let duration_ns = match stop.ok().and_then(|s| s.duration_ns()) {
            Some(ns) if ns.is_finite() && ns >= 0.0 => ns as u64,
            _ => {
                flags |= Contention::MEASURED;
                now.saturating_sub(wait.ts)
            }
        };
        let record = Contention {
            ts: wait.ts,
            tid: sys::gettid(),
            duration_ns,
            stack: wait.stack,
            class: wait.class,
            lock_id: wait.lock_id,
            owner_tid: wait.owner_tid,
            flags,
        };
        let counter = if s.out.push_contention(&record) {
            &self.stats.written
        } else {
            &self.stats.dropped
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Feature for ContentionEvents {
    /// The waiting stack is walked on the waiting thread.
    fn event_mask(&self, _s: &Session) -> (EventMask, HighEventMask) {
        self.session.event_mask()
    }

    fn stop(&self, s: &Session) {
        self.session.stop(s);
    }

    fn counters(&self, s: &Session) -> Vec<(CounterName, u64)> {
        if !s.config.contention {
            return Vec::new();
        }
        let mut counters = vec![(CONTENTION_READER_COUNTER, self.reader())];
        if self.reads_events() {
            let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
            let t = &self.stats;
            counters.extend([
                (CounterName::ContentionEvents, load(&t.starts)),
                (CounterName::ContentionWritten, load(&t.written)),
                (CounterName::ContentionDropped, load(&t.dropped)),
                (CounterName::ContentionUnpaired, load(&t.unpaired)),
                (CounterName::ContentionUnreadable, load(&t.unreadable)),
            ]);
        }
        counters
    }
}
