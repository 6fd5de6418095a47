//! Heap snapshots (`--heap-snapshot at-exit|every-gc|N`).
//!
//! With `COR_PRF_MONITOR_GC` the runtime walks the heap at the end of every collection, while
//! the program is still suspended: `RootReferences2` lists the roots (with their kind: stack,
//! finalizer queue, handle, other; and flags: pinning, weak...), `ObjectReferences` every live
//! object with its class and the objects it references. For a collection chosen for a
//! snapshot the agent writes a `HeapSnapshot` record (at `GarbageCollectionStarted`), one
//! `HeapObject` per object (its size from `GetObjectSize2`) and one `HeapRoot` per root, then
//! `HeapSnapshotEnd`. The runtime walks the heap after `GarbageCollectionFinished`, so the
//! snapshot ends at the next collection's start or at shutdown. These records
//! must not be dropped (a snapshot with holes is wrong), so they go through
//! `push_record_or_drain`, which writes the buffer out on the calling thread when it is full.
//!
//! **On demand**: whatever the mode, `SIGUSR2` sent to the program (`kill -USR2 <pid>`) asks
//! for a snapshot now (`on-signal` takes only those): the signal handler wakes the agent's heap
//! thread, which forces a collection (`ForceGC`) and snapshots it.
//!
//! `every-gc` snapshots every collection, `N` every N-th. `at-exit` snapshots one collection
//! that the agent forces at `Shutdown` with `ForceGC`, from a thread of its own (the runtime
//! accepts `ForceGC` only from a thread with no callback and no managed code on its stack).
//! `COR_PRF_MONITOR_GC` must be set at startup in every case (it turns concurrent GC off, and
//! the runtime refuses it later); the walks of collections not chosen are ignored.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use clrprof_sdk::flags::EventMask;
use clrprof_sdk::info::GenerationRange;
use clrprof_sdk::types::{GcRootFlags, GcRootKind};
use clrprof_sdk::{ClassId, ObjectId};
use clrprof_trace::{
    HeapGenerations, HeapObject, HeapRoot, HeapSnapshot, HeapSnapshotEnd, MAX_U64_LIST, Record,
};

use crate::config::HeapSnapshots;
use crate::recorder::{snapshot_signal, sys};
use crate::session::Session;

/// How long `Shutdown` waits for the at-exit collection.
const EXIT_GC_TIMEOUT: Duration = Duration::from_secs(30);

struct HeapState {
    /// Collections seen (started).
    gcs: AtomicU32,
    /// Snapshots taken.
    snapshots: AtomicU32,
    /// The snapshot being written, 0 if none.
    active: AtomicU32,
    /// Objects, roots and cut references of the active snapshot.
    objects: AtomicU64,
    roots: AtomicU64,
    refs_cut: AtomicU64,
    /// The next collection is the at-exit one, or one asked for with the signal.
    exit_requested: AtomicBool,
}

static STATE: HeapState = HeapState {
    gcs: AtomicU32::new(0),
    snapshots: AtomicU32::new(0),
    active: AtomicU32::new(0),
    objects: AtomicU64::new(0),
    roots: AtomicU64::new(0),
    refs_cut: AtomicU64::new(0),
    exit_requested: AtomicBool::new(false),
};

/// The event mask bits snapshots need from the start. `COR_PRF_MONITOR_GC` cannot be turned
/// on later while the runtime uses concurrent (background) GC, its default, so `at-exit` asks
/// for it at startup too.
pub fn event_mask(s: &HeapSnapshots) -> EventMask {
    match s {
        HeapSnapshots::EveryGc(_) | HeapSnapshots::AtExit | HeapSnapshots::OnSignal => {
            EventMask::MONITOR_GC
        }
        HeapSnapshots::Off => EventMask::empty(),
    }
}

/// `GarbageCollectionStarted`: ends the previous snapshot, begins one if this collection is
/// chosen.
pub fn gc_started(s: &Session) {
    finish(s);
    let gc = STATE.gcs.fetch_add(1, Ordering::AcqRel) + 1;
    let chosen = match s.config.heap_snapshots {
        HeapSnapshots::Off => false,
        HeapSnapshots::EveryGc(n) => {
            STATE.exit_requested.swap(false, Ordering::AcqRel) || gc.is_multiple_of(n.max(1))
        }
        HeapSnapshots::AtExit | HeapSnapshots::OnSignal => {
            STATE.exit_requested.swap(false, Ordering::AcqRel)
        }
    };
    if !chosen {
        return;
    }
    let snapshot = STATE.snapshots.fetch_add(1, Ordering::AcqRel) + 1;
    STATE.objects.store(0, Ordering::Relaxed);
    STATE.roots.store(0, Ordering::Relaxed);
    STATE.refs_cut.store(0, Ordering::Relaxed);
    s.out
        .push_record_or_drain(&Record::HeapSnapshot(HeapSnapshot {
            ts: s.now(),
            snapshot,
            gc,
        }));
    STATE.active.store(snapshot, Ordering::Release);
}

/// True while a heap snapshot is being taken (its collection has started and not ended).
pub fn snapshot_active() -> bool {
    STATE.active.load(Ordering::Acquire) != 0
}

/// `GarbageCollectionFinished`: for a snapshot, where each generation now lies (`bounds`,
/// from `GetGenerationBounds`; the heap walk that follows reports objects at these
/// addresses).
pub fn gc_finished(s: &Session, bounds: &[GenerationRange]) {
    let snapshot = STATE.active.load(Ordering::Acquire);
    if snapshot == 0 {
        return;
    }
    let ranges = bounds
        .iter()
        .flat_map(|r| [u64::from(r.generation.0), r.start as u64, r.length as u64])
        .collect();
    s.out
        .push_record_or_drain(&Record::HeapGenerations(HeapGenerations {
            snapshot,
            ranges,
        }));
}

/// `ObjectReferences`: one object of the active snapshot.
pub fn object_references(s: &Session, object: ObjectId, class: ClassId, refs: &[ObjectId]) {
    let snapshot = STATE.active.load(Ordering::Acquire);
    if snapshot == 0 {
        return;
    }
    s.defs.class(&s.info, &s.out, class);
    let kept = refs.len().min(MAX_U64_LIST);
    if kept < refs.len() {
        STATE
            .refs_cut
            .fetch_add((refs.len() - kept) as u64, Ordering::Relaxed);
    }
    let size = s.info.get_object_size2(object).map_or(0, |n| n as u64);
    s.out.push_record_or_drain(&Record::HeapObject(HeapObject {
        snapshot,
        object: object.as_u64(),
        class: class.as_u64(),
        size,
        refs: refs[..kept].iter().map(|r| r.as_u64()).collect(),
    }));
    STATE.objects.fetch_add(1, Ordering::Relaxed);
}

/// `RootReferences2`: roots of the active snapshot.
pub fn root_references(
    s: &Session,
    roots: &[ObjectId],
    kinds: &[GcRootKind],
    flags: &[GcRootFlags],
    ids: &[usize],
) {
    let snapshot = STATE.active.load(Ordering::Acquire);
    if snapshot == 0 {
        return;
    }
    for (i, root) in roots.iter().enumerate() {
        if root.is_null() {
            continue;
        }
        s.out.push_record_or_drain(&Record::HeapRoot(HeapRoot {
            snapshot,
            object: root.as_u64(),
            kind: kinds.get(i).map_or(0, |k| k.0 as u8),
            flags: flags.get(i).map_or(0, |f| f.bits() as u8),
            id: ids.get(i).map_or(0, |&id| id as u64),
        }));
        STATE.roots.fetch_add(1, Ordering::Relaxed);
    }
}

/// Ends the snapshot being written, if any. The runtime walks the heap after
/// `GarbageCollectionFinished` (still inside the collection, before the program resumes), so
/// a snapshot ends at the next collection's start, after the at-exit collection, or at
/// shutdown.
pub fn finish(s: &Session) {
    let snapshot = STATE.active.swap(0, Ordering::AcqRel);
    if snapshot == 0 {
        return;
    }
    s.out
        .push_record_or_drain(&Record::HeapSnapshotEnd(HeapSnapshotEnd {
            ts: s.now(),
            snapshot,
            objects: STATE.objects.load(Ordering::Relaxed),
            roots: STATE.roots.load(Ordering::Relaxed),
            refs_cut: STATE.refs_cut.load(Ordering::Relaxed),
        }));
}

/// Starts the thread that takes snapshots when the snapshot signal asks (any heap mode).
pub fn start_signal_thread(s: &'static Session) {
    if s.config.heap_snapshots == HeapSnapshots::Off || !snapshot_signal::install() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("clrprof-heap".into())
        .spawn(move || {
            let _own = crate::recorder::threads::mark_agent_thread();
            let mut seen = snapshot_signal::REQUESTS.load(Ordering::Acquire);
            while !s.ended() {
                sys::futex_wait(&snapshot_signal::REQUESTS, seen, 200_000_000);
                let now = snapshot_signal::REQUESTS.load(Ordering::Acquire);
                if now == seen || s.ended() {
                    continue;
                }
                seen = now;
                forced_snapshot(s, || {
                    // This thread never runs managed code: the runtime accepts ForceGC from it.
                    if let Err(e) = s.info.force_gc() {
                        s.warn(format!("no heap snapshot on request: ForceGC failed ({e})"));
                    }
                });
            }
        });
    if spawned.is_err() {
        s.warn("heap snapshots on request are unavailable: cannot start a thread");
    }
}

/// At `Shutdown`, for `at-exit`: forces a collection from a thread of the agent's own, waiting
/// for it (bounded).
pub fn snapshot_at_exit(s: &'static Session) {
    if s.config.heap_snapshots != HeapSnapshots::AtExit {
        return;
    }
    forced_snapshot(s, || {
        let (done, wait) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("clrprof-heap".into())
            .spawn(move || {
                let _own = crate::recorder::threads::mark_agent_thread();
                let _ = done.send(s.info.force_gc());
            });
        let outcome = match spawned {
            Ok(_) => wait.recv_timeout(EXIT_GC_TIMEOUT).ok(),
            Err(_) => None,
        };
        match outcome {
            Some(Ok(())) => {}
            Some(Err(e)) => s.warn(format!("no heap snapshot at exit: ForceGC failed ({e})")),
            None => s.warn("no heap snapshot at exit: the collection did not finish in time"),
        }
    });
}

/// Snapshots the collection `collect` forces: the next collection is chosen while it runs,
/// and the snapshot is ended after it.
fn forced_snapshot(s: &Session, collect: impl FnOnce()) {
    STATE.exit_requested.store(true, Ordering::Release);
    collect();
    STATE.exit_requested.store(false, Ordering::Release);
    finish(s);
}
