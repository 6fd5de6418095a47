//! Heap snapshots (`--heap-snapshot at-exit|every-gc|N|on-signal`).
//!
//! With `COR_PRF_MONITOR_GC` the runtime walks the heap at the end of a collection, while the
//! program is still suspended: `RootReferences2` lists the roots (with their kind: stack,
//! finalizer queue, handle, other; and flags: pinning, weak...), `ObjectReferences` every live
//! object with its class and the objects it references. For a collection chosen for a
//! snapshot the agent writes a `HeapSnapshot` record (at `GarbageCollectionStarted`), one
//! `HeapObject` per object (its size from `GetObjectSize2`, rounded up to the heap's 8-byte
//! alignment) and one `HeapRoot` per root, then `HeapSnapshotEnd` when the runtime resumes the
//! program. These records must not be dropped (a snapshot with holes is wrong), so they go
//! through `push_record_or_drain`, which writes the buffer out on the calling thread when it
//! is full.
//!
//! **A snapshot costs nothing until it is taken.** The walk visits every live object, in every
//! collection while `COR_PRF_MONITOR_GC` is set, gen0 ones included. So the flag is set only
//! around the collections that take a snapshot:
//!
//! - At startup the mask has it: that is what makes the runtime turn concurrent (background)
//!   GC off (`TemporaryDisableConcurrentGC`, right after `Initialize` returns), and the runtime
//!   refuses the flag later while concurrent GC is on (`CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE`).
//!   On the first `ThreadCreated` (the runtime has started, the concurrent GC decision is
//!   made) the agent's heap thread takes it off again; `COR_PRF_HIGH_BASIC_GC` keeps the
//!   collections' start and end coming without a walk.
//! - To take a snapshot the heap thread sets the flag (with `COR_PRF_MONITOR_SUSPENDS`, to see
//!   where the collection's pause ends), and the first collection that starts with the walk on
//!   is the snapshot's. When the runtime resumes the program after it, the snapshot ends and
//!   the heap thread clears the flag. `on-signal` and `at-exit` force that collection
//!   (`ForceGC`); `N` turns the walk on when the program resumes after the collection before
//!   every N-th one (so the snapshot is the N-th's, or the next one's if the program collects
//!   again before the heap thread has run); `every-gc`
//!   keeps it on throughout (its cost: a walk of the whole heap in every collection).
//!
//! The flag is set from the heap thread (or the at-exit thread), never inside a collection,
//! and cleared there or in `RuntimeResumeStarted` right after the snapshot's walk (turning it
//! off has no condition in the runtime); never while a chosen collection runs: `WALK` goes
//! `ON -> TAKING` atomically when a collection is chosen and back when its snapshot ends.
//!
//! **The pause**: a snapshot's collection is a runtime suspension from `RuntimeSuspendStarted`
//! to `RuntimeResumeFinished`. The agent writes those two events for each snapshot whatever
//! `--events` asked for, so the report always has the pause the snapshot caused.
//!
//! **Static fields**: in `GarbageCollectionFinished` of a snapshot's collection the agent also
//! writes which object each static field of a reference type holds (`statics.rs`), so that
//! reports name those roots by their fields.
//!
//! **On demand**: whatever the mode, `SIGUSR2` sent to the program (`kill -USR2 <pid>`) asks
//! for a snapshot now (`on-signal` takes only those): the signal handler wakes the heap
//! thread, which forces a collection (`ForceGC`, accepted from a thread with no callback and no
//! managed code on its stack) and snapshots it.

use clrprof_trace::counters::CounterName;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::info::GenerationRange;
use clrprof_sdk::types::{GcRootFlags, GcRootKind};
use clrprof_sdk::{ClassId, ObjectId};
use clrprof_trace::{
    Event, EventKind, HeapGenerations, HeapObject, HeapRoot, HeapSnapshot, HeapSnapshotEnd,
    MAX_U64_LIST, Record,
};

use crate::config::HeapSnapshots;
use crate::recorder::{snapshot_signal, sys};
use crate::session::{Feature, Session};
use crate::statics::StaticFields;

/// How long `Shutdown` waits for the at-exit collection.
const EXIT_GC_TIMEOUT: Duration = Duration::from_secs(30);

/// The heap's object alignment on 64-bit targets: an object takes its size rounded up to it
/// (`GetObjectSize2` gives the unrounded size of strings and arrays: 54 bytes for a string of
/// 16 characters, which takes 56).
pub const OBJECT_ALIGNMENT: u64 = 8;

/// `size` as the heap lays the object out.
pub fn aligned(size: u64) -> u64 {
    size.div_ceil(OBJECT_ALIGNMENT) * OBJECT_ALIGNMENT
}

/// `WALK`: the runtime's heap walk (`COR_PRF_MONITOR_GC`) is off.
const WALK_OFF: u32 = 0;
/// On, no snapshot being taken.
const WALK_ON: u32 = 1;
/// On, and a collection chosen for a snapshot is running: the flag must stay.
const WALK_TAKING: u32 = 2;

#[derive(Default)]
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
    /// The next collection that starts with the walk on is a snapshot.
    due: AtomicBool,
    /// `WALK_OFF`, `WALK_ON` or `WALK_TAKING`.
    walk: AtomicU32,
    /// The walk stays on for good (`every-gc`, `heap-refs` events, or no way to turn it off).
    walk_always: AtomicBool,
    /// The runtime has started (first `ThreadCreated`): the startup flag may go.
    started: AtomicBool,
    /// When the latest suspension started (ns since the session's start), while the walk is
    /// on: the start of a snapshot's pause.
    suspend_ts: AtomicU64,
    /// The snapshot whose collection's resume is awaited (its pause's end), 0 if none.
    resume_of: AtomicU32,
    /// Collections walked by the runtime (heap walk callbacks seen) that no snapshot took, and
    /// the heap walk callbacks they cost.
    walks_unused: AtomicU64,
    walk_callbacks_unused: AtomicU64,
    /// The collection the latest unused walk callback came in.
    unused_walk_gc: AtomicU32,
    /// Times the heap walk was turned on after startup, and refusals.
    walk_enables: AtomicU64,
    walk_refusals: AtomicU64,
}

/// Heap snapshots as one of the session's features: which collections are walked, the
/// snapshot being written and the runtime's heap walk turned on and off around them.
#[derive(Default)]
pub struct Snapshots {
    state: HeapState,
    /// The static fields each snapshot says the objects of.
    pub statics: StaticFields,
    /// The event mask without the heap walk, set by `configured`.
    base_mask: OnceLock<(EventMask, HighEventMask)>,
}

impl Snapshots {
    /// Called by `configure` with the mask it set (`low` has the walk if snapshots are on).
    /// `toggles` is false where the mask cannot be changed later (no `SetEventMask2`): the walk
    /// then stays on.
    pub fn configured(&self, s: &Session, low: EventMask, high: HighEventMask, toggles: bool) {
        if s.config.heap_snapshots == HeapSnapshots::Off {
            return;
        }
        let mut base = low - EventMask::MONITOR_GC;
        let every_nth = matches!(s.config.heap_snapshots, HeapSnapshots::EveryGc(n) if n > 1);
        if !s.wants(EventKind::RUNTIME_SUSPEND_STARTED) && !every_nth {
            // `N` keeps the suspension callbacks: the walk is turned on when the program resumes
            // after the collection before an N-th one (its own walk, which comes after
            // `GarbageCollectionFinished`, must not be turned on).
            base -= EventMask::MONITOR_SUSPENDS;
        }
        let _ = self.base_mask.set((base, high));
        self.state.walk.store(WALK_ON, Ordering::Release);
        let always = !toggles
            || s.config.heap_snapshots == HeapSnapshots::EveryGc(1)
            || s.wants(EventKind::OBJECT_REFERENCES)
            || s.wants(EventKind::ROOT_REFERENCES2);
        self.state.walk_always.store(always, Ordering::Release);
        if let HeapSnapshots::EveryGc(n) = s.config.heap_snapshots {
            self.state.due.store(1 % n.max(1) == 0, Ordering::Release);
        }
    }

    /// `ThreadCreated`: the first one says the runtime has started (after the concurrent-GC
    /// decision that follows `Initialize`): the heap thread may turn the startup walk off.
    pub fn runtime_started(&self) {
        if !self.state.started.load(Ordering::Relaxed)
            && !self.state.started.swap(true, Ordering::AcqRel)
        {
            snapshot_signal::wake();
        }
    }

    /// `GarbageCollectionStarted`: ends the previous snapshot, begins one if this collection is
    /// chosen: it is due and the walk is on.
    pub fn gc_started(&self, s: &Session) {
        self.finish(s);
        let gc = self.state.gcs.fetch_add(1, Ordering::AcqRel) + 1;
        if s.config.heap_snapshots == HeapSnapshots::Off || !self.state.due.load(Ordering::Acquire)
        {
            return;
        }
        if self
            .state
            .walk
            .compare_exchange(WALK_ON, WALK_TAKING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.state.due.store(false, Ordering::Release);
        let snapshot = self.state.snapshots.fetch_add(1, Ordering::AcqRel) + 1;
        self.state.objects.store(0, Ordering::Relaxed);
        self.state.roots.store(0, Ordering::Relaxed);
        self.state.refs_cut.store(0, Ordering::Relaxed);
        let ts = s.now();
        if !s.wants(EventKind::RUNTIME_SUSPEND_STARTED) {
            // The pause's start: the suspension this collection runs in (0 if not seen).
            let start = self.state.suspend_ts.load(Ordering::Acquire);
            s.out.push_record_or_drain(&Record::Event(Event::new(
                if start == 0 { ts } else { start },
                sys::gettid(),
                EventKind::RUNTIME_SUSPEND_STARTED,
                &[u64::from(clrprof_sdk::types::SuspendReason::FOR_GC.0)],
            )));
        }
        s.out
            .push_record_or_drain(&Record::HeapSnapshot(HeapSnapshot { ts, snapshot, gc }));
        self.state.active.store(snapshot, Ordering::Release);
    }

    /// `GarbageCollectionFinished`: for a snapshot, where each generation now lies (`bounds`,
    /// from `GetGenerationBounds`; the heap walk that follows reports objects at these
    /// addresses). For `N`, the collection before an N-th one asks for the walk.
    pub fn gc_finished(&self, s: &Session, bounds: &[GenerationRange]) {
        if let HeapSnapshots::EveryGc(n) = s.config.heap_snapshots {
            let next = self.state.gcs.load(Ordering::Acquire) + 1;
            if n > 1 && next.is_multiple_of(n) {
                // The heap thread is woken when the program resumes (`resume_finished`).
                self.state.due.store(true, Ordering::Release);
            } else if n <= 1 {
                self.state.due.store(true, Ordering::Release);
            }
        }
        let snapshot = self.state.active.load(Ordering::Acquire);
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
        // The static fields' values, read while the program is suspended, after the collection
        // moved the objects and before the walk reports them.
        self.statics.snapshot(s, snapshot);
    }

    /// True if `gc_finished` needs the generation bounds.
    pub fn wants_bounds(&self) -> bool {
        self.state.active.load(Ordering::Acquire) != 0
    }

    /// Counts a heap walk callback that no snapshot takes (the walk of a collection that was not
    /// chosen: it ran while the flag was being changed, or the walk is on for good).
    fn unused_walk_callback(&self) {
        self.state
            .walk_callbacks_unused
            .fetch_add(1, Ordering::Relaxed);
        let gc = self.state.gcs.load(Ordering::Relaxed);
        if self.state.unused_walk_gc.swap(gc, Ordering::Relaxed) != gc {
            self.state.walks_unused.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `ObjectReferences`: one object of the active snapshot.
    pub fn object_references(
        &self,
        s: &Session,
        object: ObjectId,
        class: ClassId,
        refs: &[ObjectId],
    ) {
        let snapshot = self.state.active.load(Ordering::Acquire);
        if snapshot == 0 {
            self.unused_walk_callback();
            return;
        }
        s.defs.class(&s.info, &s.out, class);
        let kept = refs.len().min(MAX_U64_LIST);
        if kept < refs.len() {
            self.state
                .refs_cut
                .fetch_add((refs.len() - kept) as u64, Ordering::Relaxed);
        }
        let size = s
            .info
            .get_object_size2(object)
            .map_or(0, |n| aligned(n as u64));
        s.out.push_record_or_drain(&Record::HeapObject(HeapObject {
            snapshot,
            object: object.as_u64(),
            class: class.as_u64(),
            size,
            refs: refs[..kept].iter().map(|r| r.as_u64()).collect(),
        }));
        self.state.objects.fetch_add(1, Ordering::Relaxed);
    }

    /// `RootReferences2`: roots of the active snapshot.
    pub fn root_references(
        &self,
        s: &Session,
        roots: &[ObjectId],
        kinds: &[GcRootKind],
        flags: &[GcRootFlags],
        ids: &[usize],
    ) {
        let snapshot = self.state.active.load(Ordering::Acquire);
        if snapshot == 0 {
            self.unused_walk_callback();
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
            self.state.roots.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `RuntimeSuspendStarted`: remembered while the walk is on, as the start of a snapshot's
    /// pause.
    pub fn suspend_started(&self, s: &Session) {
        if self.state.walk.load(Ordering::Acquire) != WALK_OFF {
            self.state.suspend_ts.store(s.now(), Ordering::Release);
        }
    }

    /// `RuntimeResumeStarted`: the heap walk of the collection is over: the snapshot ends, and
    /// the walk goes off right here, before the program runs again (from the heap thread, the
    /// program could collect once more in between, walked for nothing).
    pub fn resume_started(&self, s: &Session) {
        if let Some(snapshot) = self.finish(s) {
            self.state.resume_of.store(snapshot, Ordering::Release);
            if !self.state.walk_always.load(Ordering::Acquire)
                && !self.state.due.load(Ordering::Acquire)
            {
                self.set_walk(s, false);
            }
        }
    }

    /// `RuntimeResumeFinished`: the end of a snapshot's pause.
    pub fn resume_finished(&self, s: &Session) {
        if self.state.resume_of.swap(0, Ordering::AcqRel) != 0 {
            self.write_resume(s);
        }
        if self.state.due.load(Ordering::Acquire)
            && self.state.walk.load(Ordering::Acquire) == WALK_OFF
        {
            snapshot_signal::wake();
        }
    }

    /// Writes the end of a snapshot's pause now, unless the suspension events are recorded anyway.
    fn write_resume(&self, s: &Session) {
        if !s.wants(EventKind::RUNTIME_RESUME_FINISHED) {
            s.out.push_record_or_drain(&Record::Event(Event::new(
                s.now(),
                sys::gettid(),
                EventKind::RUNTIME_RESUME_FINISHED,
                &[],
            )));
        }
    }

    /// Ends the snapshot being written, if any, and returns its number. The runtime walks the
    /// heap after `GarbageCollectionFinished`, still inside the collection, so a snapshot ends
    /// when the runtime resumes the program, at the next collection's start, after a forced
    /// collection, or at shutdown.
    pub fn finish(&self, s: &Session) -> Option<u32> {
        let snapshot = self.state.active.swap(0, Ordering::AcqRel);
        if snapshot == 0 {
            return None;
        }
        s.out
            .push_record_or_drain(&Record::HeapSnapshotEnd(HeapSnapshotEnd {
                ts: s.now(),
                snapshot,
                objects: self.state.objects.load(Ordering::Relaxed),
                roots: self.state.roots.load(Ordering::Relaxed),
                refs_cut: self.state.refs_cut.load(Ordering::Relaxed),
            }));
        let _ = self.state.walk.compare_exchange(
            WALK_TAKING,
            WALK_ON,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if !self.state.walk_always.load(Ordering::Acquire) {
            // The heap thread turns the walk off (never from inside the runtime's callbacks).
            snapshot_signal::wake();
        }
        Some(snapshot)
    }

    /// Turns the runtime's heap walk on (with suspension callbacks, for the pause) or off.
    /// Returns false if the runtime refused.
    fn set_walk(&self, s: &Session, on: bool) -> bool {
        let Some(&(base, _)) = self.base_mask.get() else {
            return false;
        };
        let walk = EventMask::MONITOR_GC | EventMask::MONITOR_SUSPENDS;
        // Off: the suspension callbacks stay only if the session needs them without the walk.
        let mask = |low: EventMask, high| {
            if on {
                (low | walk, high)
            } else {
                ((low - walk) | (base & EventMask::MONITOR_SUSPENDS), high)
            }
        };
        if on {
            // Announced before the flag is set: a collection that starts in between is chosen
            // only once the runtime walks it.
            let mut last = Ok(());
            for _ in 0..50 {
                last = s.event_mask.change(&s.info, mask);
                if last.is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            if let Err(e) = last {
                self.state.walk_refusals.fetch_add(1, Ordering::Relaxed);
                s.warn(format!(
                    "the runtime refused to walk the heap for a snapshot (COR_PRF_MONITOR_GC: {e})"
                ));
                return false;
            }
            self.state.walk_enables.fetch_add(1, Ordering::Relaxed);
            self.state.walk.store(WALK_ON, Ordering::Release);
            true
        } else {
            // Only from ON: never while a chosen collection runs.
            if self
                .state
                .walk
                .compare_exchange(WALK_ON, WALK_OFF, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return false;
            }
            if let Err(e) = s.event_mask.change(&s.info, mask) {
                // Still on: say so once, and keep it on for good.
                self.state.walk.store(WALK_ON, Ordering::Release);
                self.state.walk_always.store(true, Ordering::Release);
                s.warn(format!(
                    "the runtime's heap walk could not be turned off ({e}): every collection walks \
                     the heap"
                ));
                return false;
            }
            true
        }
    }

    /// Brings the walk where it should be now: on while a snapshot is due or being taken (or for
    /// good), off otherwise once the runtime has started.
    fn settle_walk(&self, s: &Session) {
        if self.state.walk_always.load(Ordering::Acquire)
            || !self.state.started.load(Ordering::Acquire)
        {
            return;
        }
        let due = self.state.due.load(Ordering::Acquire);
        match self.state.walk.load(Ordering::Acquire) {
            WALK_OFF if due => {
                self.set_walk(s, true);
            }
            WALK_ON if !due => {
                self.set_walk(s, false);
            }
            _ => {}
        }
    }

    /// Starts the heap thread: it turns the walk on and off (`settle_walk`) and takes the
    /// snapshots the signal asks for.
    pub fn start_heap_thread(&'static self, s: &'static Session) {
        if s.config.heap_snapshots == HeapSnapshots::Off {
            return;
        }
        let signal = snapshot_signal::install();
        let spawned = crate::recorder::threads::spawn_agent_thread("clrprof-heap", move || {
            let mut seen = snapshot_signal::REQUESTS.load(Ordering::Acquire);
            let mut woken = snapshot_signal::WAKE.load(Ordering::Acquire);
            while !s.ended() {
                // Settled before every wait: a wake that came before this thread first read
                // `WAKE` (the runtime's start, usually) is not left for the timeout.
                self.settle_walk(s);
                sys::futex_wait(&snapshot_signal::WAKE, woken, 200_000_000);
                woken = snapshot_signal::WAKE.load(Ordering::Acquire);
                if s.ended() {
                    break;
                }
                let now = snapshot_signal::REQUESTS.load(Ordering::Acquire);
                if now != seen && signal {
                    seen = now;
                    self.forced_snapshot(s, || {
                        // This thread never runs managed code: the runtime accepts ForceGC
                        // from it.
                        if let Err(e) = s.info.force_gc() {
                            s.warn(format!("no heap snapshot on request: ForceGC failed ({e})"));
                        }
                    });
                }
            }
        });
        if spawned.is_err() {
            self.state.walk_always.store(true, Ordering::Release);
            s.warn("heap snapshots on request are unavailable: cannot start a thread");
        }
    }

    /// At `Shutdown`, for `at-exit`: forces a collection from a thread of the agent's own, waiting
    /// for it (bounded).
    pub fn snapshot_at_exit(&'static self, s: &'static Session) {
        if s.config.heap_snapshots != HeapSnapshots::AtExit {
            return;
        }
        let (done, wait) = std::sync::mpsc::channel();
        let spawned = crate::recorder::threads::spawn_agent_thread("clrprof-heap", move || {
            let mut outcome = Ok(());
            self.forced_snapshot(s, || outcome = s.info.force_gc());
            let _ = done.send(outcome);
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
    }

    /// Snapshots the collection `collect` forces: the snapshot is due and the walk on while it
    /// runs, and the snapshot is ended after it.
    fn forced_snapshot(&self, s: &Session, collect: impl FnOnce()) {
        self.state.due.store(true, Ordering::Release);
        if self.state.walk.load(Ordering::Acquire) == WALK_OFF && !self.set_walk(s, true) {
            self.state.due.store(false, Ordering::Release);
            return;
        }
        collect();
        self.state.due.store(false, Ordering::Release);
        // The forced collection is over and the program resumed. The runtime does not always say
        // so (3.1 makes no resume callbacks at shutdown): the pause then ends here.
        if self.finish(s).is_some() || self.state.resume_of.swap(0, Ordering::AcqRel) != 0 {
            self.write_resume(s);
        }
        self.settle_walk(s);
    }
}

impl Feature for Snapshots {
    /// The event mask bits snapshots need at startup: the walk (so that the runtime turns
    /// concurrent GC off, which lets it be turned on again later), and the collections' start
    /// and end without a walk once it is off.
    fn event_mask(&self, s: &Session) -> (EventMask, HighEventMask) {
        match s.config.heap_snapshots {
            HeapSnapshots::Off => (EventMask::empty(), HighEventMask::empty()),
            _ => (
                EventMask::MONITOR_GC | EventMask::MONITOR_SUSPENDS,
                HighEventMask::BASIC_GC,
            ),
        }
    }

    fn counters(&self, s: &Session) -> Vec<(CounterName, u64)> {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut counters = vec![
            (CounterName::HeapWalksUnused, load(&self.state.walks_unused)),
            (
                CounterName::HeapWalkCallbacksUnused,
                load(&self.state.walk_callbacks_unused),
            ),
            (CounterName::HeapWalkEnables, load(&self.state.walk_enables)),
            (
                CounterName::HeapWalkRefusals,
                load(&self.state.walk_refusals),
            ),
        ];
        counters.extend(self.statics.counters(s));
        counters
    }
}

#[cfg(test)]
mod tests {
    use super::aligned;

    #[test]
    fn sizes_round_up_to_the_heap_alignment() {
        // A string of 16 characters: 22 bytes of header, length and terminator, 32 of text.
        assert_eq!(aligned(54), 56);
        assert_eq!(aligned(56), 56);
        assert_eq!(aligned(124), 128);
        assert_eq!(aligned(0), 0);
    }
}
