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

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_sdk::info::EventPipeLevel;
use clrprof_sdk::{EventPipeEvent, ObjectId};
use clrprof_trace::Contention;
use clrprof_trace::protocol::CONTENTION_READER_COUNTER;

use crate::recorder::sys;
use crate::runtime_events::{RuntimeSession, is_runtime_provider};
use crate::session::Session;

/// `ContentionKeyword`.
const CONTENTION_KEYWORD: u64 = 0x4000;
/// `ContentionStart` (versions 1 and 2).
const CONTENTION_START: u32 = 81;
/// `ContentionStop` (versions 0 and 1).
const CONTENTION_STOP: u32 = 91;

/// The agent's EventPipe session, once started.
static SESSION: RuntimeSession = RuntimeSession::new("contention events");

/// What happened to the events, written into the trace.
struct Stats {
    starts: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
    unpaired: AtomicU64,
    unreadable: AtomicU64,
}

static STATS: Stats = Stats {
    starts: AtomicU64::new(0),
    written: AtomicU64::new(0),
    dropped: AtomicU64::new(0),
    unpaired: AtomicU64::new(0),
    unreadable: AtomicU64::new(0),
};

/// The contention session's number in this process: a wait kept by an earlier session (one
/// that was detached while a thread waited) is not this one's.
static GENERATION: AtomicU64 = AtomicU64::new(0);

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

/// With `contention=1`: starts the in-process session on the runtime provider's contention
/// keyword; returns who reads the events, for the CLI (`None` without `contention=1`): 1 the
/// agent, 0 the CLI.
pub fn start(s: &Session) -> Option<u64> {
    if !s.config.contention {
        return None;
    }
    // An attach after a detach counts its own events, and forgets the waits the previous
    // session saw start but not stop.
    for counter in [
        &STATS.starts,
        &STATS.written,
        &STATS.dropped,
        &STATS.unpaired,
        &STATS.unreadable,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    GENERATION.fetch_add(1, Ordering::Relaxed);
    SESSION.start(s, CONTENTION_KEYWORD, EventPipeLevel::INFORMATIONAL);
    Some(reader())
}

/// 1 when the agent reads the events, 0 when the CLI does.
fn reader() -> u64 {
    u64::from(SESSION.started())
}

/// Whether the agent reads the contention events (its session started).
pub fn reads_events() -> bool {
    SESSION.started()
}

/// Stops the session, if one runs (at shutdown and detach).
pub fn stop(s: &Session) {
    SESSION.stop(s);
}

/// The counters, for `Session::write_counters`.
pub fn counters(s: &Session) -> Vec<(&'static str, u64)> {
    if !s.config.contention {
        return Vec::new();
    }
    let mut counters = vec![(CONTENTION_READER_COUNTER, reader())];
    if reads_events() {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        counters.extend([
            ("contention_events", load(&STATS.starts)),
            ("contention_written", load(&STATS.written)),
            ("contention_dropped", load(&STATS.dropped)),
            ("contention_unpaired", load(&STATS.unpaired)),
            ("contention_unreadable", load(&STATS.unreadable)),
        ]);
    }
    counters
}

/// Handles one event of the agent's sessions: contention starts and stops.
pub fn event_delivered(s: &Session, event: &EventPipeEvent<'_>) {
    if !s.config.contention
        || !reads_events()
        || !matches!(event.event_id, CONTENTION_START | CONTENTION_STOP)
        || !is_runtime_provider(s, event.provider)
    {
        return;
    }
    if event.event_id == CONTENTION_START {
        started(s, event);
    } else {
        stopped(s, event);
    }
}

fn started(s: &Session, event: &EventPipeEvent<'_>) {
    STATS.starts.fetch_add(1, Ordering::Relaxed);
    let ts = s.now();
    let Some(start) = ContentionStart::read(event.event_version, event.data) else {
        STATS.unreadable.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let generation = GENERATION.load(Ordering::Relaxed);
    if WAIT.with(Cell::get).is_pending(generation) {
        // The previous wait never stopped.
        STATS.unpaired.fetch_add(1, Ordering::Relaxed);
    }
    let stack = crate::alloc::current_stack(s);
    let mut class = 0;
    if let Some(object) = start.associated_object_id.filter(|&o| o != 0) {
        // The thread is in cooperative mode here: the object stays where it is.
        if let Ok(c) = s.info.get_class_from_object(ObjectId(object as usize)) {
            s.defs.class(&s.info, &s.out, c);
            class = c.as_u64();
        }
    }
    let mut flags = 0;
    if start.flags == ContentionFlags::NATIVE {
        flags |= Contention::NATIVE;
    }
    WAIT.with(|w| {
        w.set(Pending {
            active: true,
            generation,
            ts,
            stack,
            class,
            lock_id: start.lock_id.unwrap_or(0),
            owner_tid: start
                .lock_owner_thread_id
                .and_then(|t| u32::try_from(t).ok())
                .unwrap_or(0),
            flags,
        });
    });
}

fn stopped(s: &Session, event: &EventPipeEvent<'_>) {
    let now = s.now();
    let wait = WAIT.with(|w| w.replace(IDLE));
    if !wait.is_pending(GENERATION.load(Ordering::Relaxed)) {
        STATS.unpaired.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let stop = ContentionStop::read(event.event_version, event.data);
    let mut flags = wait.flags;
    let duration_ns = match stop.and_then(|s| s.duration_ns) {
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
        &STATS.written
    } else {
        &STATS.dropped
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// `ContentionFlags` / `Flags` of the contention events (the manifest's `ContentionFlagsMap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentionFlags(pub u8);

impl ContentionFlags {
    /// A `Monitor` of managed code.
    pub const MANAGED: ContentionFlags = ContentionFlags(0);
    /// A lock of the runtime itself.
    pub const NATIVE: ContentionFlags = ContentionFlags(1);
}

/// A `ContentionStart` payload, field by field as the manifest lays out its templates:
///
/// - version 1 (CoreCLR 3.1): `ContentionFlags` u8, `ClrInstanceID` u16;
/// - version 2 (.NET 8): adds `LockID` (pointer), `AssociatedObjectID` (pointer) and
///   `LockOwnerThreadID` (u64, the holder's OS thread id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentionStart {
    /// Managed or native.
    pub flags: ContentionFlags,
    /// The runtime instance.
    pub clr_instance_id: u16,
    /// The lock (version 2).
    pub lock_id: Option<u64>,
    /// The object the lock belongs to (version 2).
    pub associated_object_id: Option<u64>,
    /// The thread that holds the lock (version 2).
    pub lock_owner_thread_id: Option<u64>,
}

impl ContentionStart {
    /// Reads a payload of `version`; `None` for a payload too short for its version.
    pub fn read(version: u32, payload: &[u8]) -> Option<ContentionStart> {
        let mut r = crate::alloc_ticks::Fields::new(payload);
        let flags = ContentionFlags(r.u8()?);
        let clr_instance_id = r.u16()?;
        let (lock_id, associated_object_id, lock_owner_thread_id) = if version >= 2 {
            (Some(r.pointer()?), Some(r.pointer()?), Some(r.u64()?))
        } else {
            (None, None, None)
        };
        Some(ContentionStart {
            flags,
            clr_instance_id,
            lock_id,
            associated_object_id,
            lock_owner_thread_id,
        })
    }
}

/// A `ContentionStop` payload: version 0 `Flags` u8, `ClrInstanceID` u16; version 1 adds
/// `DurationNs` (a double: nanoseconds the thread waited).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContentionStop {
    /// Managed or native.
    pub flags: ContentionFlags,
    /// The runtime instance.
    pub clr_instance_id: u16,
    /// The wait (version 1).
    pub duration_ns: Option<f64>,
}

impl ContentionStop {
    /// Reads a payload of `version`; `None` for a payload too short for its version.
    pub fn read(version: u32, payload: &[u8]) -> Option<ContentionStop> {
        let mut r = crate::alloc_ticks::Fields::new(payload);
        let flags = ContentionFlags(r.u8()?);
        let clr_instance_id = r.u16()?;
        let duration_ns = if version >= 1 {
            Some(f64::from_bits(r.u64()?))
        } else {
            None
        };
        Some(ContentionStop {
            flags,
            clr_instance_id,
            duration_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_2_start_and_version_1_stop_of_net_8() {
        let mut p = vec![0u8];
        p.extend_from_slice(&9u16.to_le_bytes());
        p.extend_from_slice(&0x5600_1230u64.to_le_bytes());
        p.extend_from_slice(&0x7f00_dead_0010u64.to_le_bytes());
        p.extend_from_slice(&4321u64.to_le_bytes());
        let start = ContentionStart::read(2, &p).unwrap();
        assert_eq!(start.flags, ContentionFlags::MANAGED);
        assert_eq!(start.clr_instance_id, 9);
        assert_eq!(start.lock_id, Some(0x5600_1230));
        assert_eq!(start.associated_object_id, Some(0x7f00_dead_0010));
        assert_eq!(start.lock_owner_thread_id, Some(4321));
        for len in 0..p.len() {
            assert_eq!(ContentionStart::read(2, &p[..len]), None, "{len}");
        }
        // Version 1 (3.1): the flags alone.
        let v1 = ContentionStart::read(1, &p[..3]).unwrap();
        assert_eq!((v1.lock_id, v1.lock_owner_thread_id), (None, None));

        let mut q = vec![1u8];
        q.extend_from_slice(&9u16.to_le_bytes());
        q.extend_from_slice(&20_123_456.5f64.to_bits().to_le_bytes());
        let stop = ContentionStop::read(1, &q).unwrap();
        assert_eq!(stop.flags, ContentionFlags::NATIVE);
        assert_eq!(stop.duration_ns, Some(20_123_456.5));
        assert_eq!(ContentionStop::read(1, &q[..10]), None);
        assert_eq!(ContentionStop::read(0, &q[..3]).unwrap().duration_ns, None);
    }
}
