//! What the trace loader keeps of a trace for the memory reports: every allocation,
//! generation-size record and GC or suspension event is handed to a [`MemoryRecords`] as the
//! file is read; the reports are computed from it on demand (see the parent module).

use clrprof_trace::{
    AllocatedByClass, Allocation, Callback, Event, GcGenerations, HeapGenerations, HeapObject,
    HeapRoot, HeapSnapshot, HeapSnapshotEnd, HeapStatic,
};

use super::gc_record::GcRecord;
use super::snapshot::SnapshotData;

/// Which heap snapshots' objects the loader keeps (the others are only counted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HeapKeep {
    /// The last complete one (at most two are held while reading).
    #[default]
    Last,
    /// These numbers, and the last complete one.
    Numbers(Vec<u32>),
    /// Every one.
    All,
    /// None: the objects and roots are passed over without being decoded (a report that
    /// shows no heap); the snapshots keep their counts, from the agent's `HeapSnapshotEnd`.
    None,
}

/// What the loader keeps of a trace for the memory reports.
#[derive(Debug, Default)]
pub struct MemoryRecords {
    /// Which snapshots keep their objects.
    pub keep: HeapKeep,
    /// Every `Allocation` record, in file order.
    pub allocations: Vec<Allocation>,
    /// Collections, in the order they started.
    pub gcs: Vec<GcRecord>,
    /// Runtime suspensions: (start, end) of each from `RuntimeSuspendStarted` to
    /// `RuntimeResumeFinished`.
    pub suspensions: Vec<(u64, u64)>,
    /// Heap snapshots, in order.
    pub snapshots: Vec<SnapshotData>,
    /// `GarbageCollectionFinished` callbacks that ended no started collection: the runtime
    /// sends some (after a background collection, a second one for one collection), and they
    /// are not collections of their own.
    pub unpaired_gc_ends: u64,
    open_gcs: Vec<usize>,
    open_suspension: Option<u64>,
    handles_created: u64,
    handles_destroyed: u64,
    sizes_before: Option<Vec<u64>>,
    sizes_after: Option<Vec<u64>>,
}

impl MemoryRecords {
    /// Records that keep the snapshots `keep` names.
    pub fn keeping(keep: HeapKeep) -> MemoryRecords {
        MemoryRecords {
            keep,
            ..MemoryRecords::default()
        }
    }

    /// Takes an allocation record.
    pub fn allocation(&mut self, a: Allocation) {
        self.allocations.push(a);
    }

    /// Takes a generation sizes record; it belongs to the collection event that follows it.
    pub fn generations(&mut self, g: GcGenerations) {
        if g.phase == 0 {
            self.sizes_before = Some(g.sizes);
        } else {
            self.sizes_after = Some(g.sizes);
        }
    }

    /// Takes the runtime's per-class allocation counts: they come in the heap walk at the end
    /// of the latest collection.
    pub fn allocated_by_class(&mut self, a: &AllocatedByClass) {
        if let Some(g) = self.gcs.last_mut() {
            g.allocated_by_class
                .extend(a.counts.chunks_exact(2).map(|p| (p[0], p[1])));
        }
    }

    /// Takes the start of a heap snapshot.
    pub fn heap_snapshot(&mut self, s: &HeapSnapshot) {
        let mut data = SnapshotData::new(s);
        if self.keep == HeapKeep::None {
            data.release();
        }
        self.snapshots.push(data);
    }

    fn snapshot_mut(&mut self, number: u32) -> Option<&mut SnapshotData> {
        self.snapshots.iter_mut().rev().find(|s| s.number == number)
    }

    /// Takes an object of a heap snapshot.
    pub fn heap_object(&mut self, o: &HeapObject) {
        if let Some(s) = self.snapshot_mut(o.snapshot) {
            s.object(o);
        }
    }

    /// Takes a root of a heap snapshot.
    pub fn heap_root(&mut self, r: &HeapRoot) {
        if let Some(s) = self.snapshot_mut(r.snapshot) {
            s.root(r);
        }
    }

    /// Takes a static field's value in a heap snapshot.
    pub fn heap_static(&mut self, r: &HeapStatic) {
        if let Some(s) = self.snapshot_mut(r.snapshot) {
            s.static_root(r);
        }
    }

    /// Takes the generation ranges of a heap snapshot.
    pub fn heap_generations(&mut self, g: &HeapGenerations) {
        if let Some(s) = self.snapshot_mut(g.snapshot) {
            s.generations(g);
        }
    }

    /// Takes the end of a heap snapshot. Older complete snapshots that are not asked for
    /// give their objects back.
    pub fn heap_snapshot_end(&mut self, e: &HeapSnapshotEnd) {
        let Some(s) = self.snapshot_mut(e.snapshot) else {
            return;
        };
        s.end(e);
        let wanted: &[u32] = match &self.keep {
            HeapKeep::All | HeapKeep::None => return,
            HeapKeep::Last => &[],
            HeapKeep::Numbers(n) => n,
        };
        for s in &mut self.snapshots {
            if s.complete && s.number != e.snapshot && !wanted.contains(&s.number) {
                s.release();
            }
        }
    }

    fn open_gc(&mut self) -> Option<&mut GcRecord> {
        let i = *self.open_gcs.last()?;
        self.gcs.get_mut(i)
    }

    /// Takes an event; keeps collections and suspensions.
    pub fn event(&mut self, e: &Event) {
        let Some(callback) = Callback::of(e) else {
            return;
        };
        match callback {
            Callback::GarbageCollectionStarted(c) => {
                self.open_gcs.push(self.gcs.len());
                self.gcs.push(GcRecord {
                    start_ns: e.ts,
                    end_ns: None,
                    generations_mask: c.generations_collected_mask as u32,
                    reason: c.reason,
                    before: self.sizes_before.take(),
                    handles_created: std::mem::take(&mut self.handles_created),
                    handles_destroyed: std::mem::take(&mut self.handles_destroyed),
                    ..GcRecord::default()
                });
            }
            Callback::GarbageCollectionFinished(_) => {
                if let Some(i) = self.open_gcs.pop() {
                    let g = &mut self.gcs[i];
                    g.end_ns = Some(e.ts);
                    g.after = self.sizes_after.take();
                } else {
                    self.unpaired_gc_ends += 1;
                }
            }
            // Survivors of a compacting collection are moved, of another left in place; the
            // first callbacks count them in 32-bit sizes, the second ones in 64-bit sizes.
            Callback::MovedReferences(c) => self.survived(0, c.moved_bytes),
            Callback::SurvivingReferences(c) => self.survived(0, c.surviving_bytes),
            Callback::MovedReferences2(c) => self.survived(1, c.moved_bytes),
            Callback::SurvivingReferences2(c) => self.survived(1, c.surviving_bytes),
            Callback::FinalizeableObjectQueued(_) => {
                if let Some(g) = self.open_gc() {
                    g.finalizable_queued += 1;
                }
            }
            Callback::HandleCreated(_) => self.handles_created += 1,
            Callback::HandleDestroyed(_) => self.handles_destroyed += 1,
            Callback::RuntimeSuspendStarted(_) => self.open_suspension = Some(e.ts),
            Callback::RuntimeSuspendAborted(_) => self.open_suspension = None,
            Callback::RuntimeResumeFinished(_) => {
                if let Some(start) = self.open_suspension.take() {
                    self.suspensions.push((start, e.ts));
                }
            }
            _ => {}
        }
    }

    /// Adds bytes that survived the open collection to one of its two counts.
    fn survived(&mut self, which: usize, bytes: u64) {
        if let Some(g) = self.open_gc() {
            g.survived[which] = g.survived[which].saturating_add(bytes);
        }
    }
}
