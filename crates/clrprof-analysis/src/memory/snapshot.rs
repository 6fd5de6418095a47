//! One heap snapshot as the loader reads it from a trace: objects, roots and generation
//! ranges in flat arrays (see `heap.rs` for what is computed from them).

use std::collections::HashMap;

use clrprof_trace::{
    HeapGenerations, HeapObject, HeapRoot, HeapSnapshot, HeapSnapshotEnd, HeapStatic,
};

/// The age histogram's bucket for objects in no generation's range: the runtime's non-GC
/// (frozen) heap, where .NET 8 allocates string literals and `System.RuntimeType` objects once,
/// for good. `GetGenerationBounds` does not list it, and no root leads there: compiled code
/// refers to those objects by address.
pub const NON_GC: usize = 5;

/// The histogram's bucket names, by index.
pub const GENERATION_NAMES: [&str; 6] = ["gen0", "gen1", "gen2", "loh", "poh", "non_gc"];

/// One heap snapshot as read from a trace, in flat arrays.
#[derive(Debug, Default, Clone)]
pub struct SnapshotData {
    /// Snapshot number, from 1.
    pub number: u32,
    /// The collection it was taken in, from 1.
    pub gc: u32,
    /// When it began.
    pub ts: u64,
    /// When it ended (0 until its end is read).
    pub end_ts: u64,
    /// True once its `HeapSnapshotEnd` was read.
    pub complete: bool,
    /// True if its objects were not kept (see `HeapKeep`): only the counts remain.
    pub released: bool,
    pub(super) objects_seen: u64,
    pub(super) roots_seen: u64,
    /// References the agent cut (objects with more than a record holds).
    pub refs_cut: u64,
    pub(super) addresses: Vec<u64>,
    pub(super) classes: Vec<u32>,
    pub(super) sizes: Vec<u64>,
    pub(super) ref_ends: Vec<u64>,
    pub(super) refs: Vec<u64>,
    pub(super) roots: Vec<(u64, u8, u8)>,
    /// Static fields and the objects they held: `(object, class id, field, thread)`, the
    /// thread 0 for an ordinary static (see [`StaticRoot`]).
    pub(super) statics: Vec<StaticRoot>,
    /// Generation ranges `(start, length, generation)`, sorted by start.
    pub(super) ranges: Vec<(u64, u64, u8)>,
    pub(super) class_ids: Vec<u64>,
    pub(super) class_index: HashMap<u64, u32>,
}

/// A static field of a reference type and the object it held (`HeapStatic`, format 1.10).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StaticRoot {
    /// The object.
    pub object: u64,
    /// The class that declares the field.
    pub class: u64,
    /// The field's name.
    pub field: String,
    /// 0 for an ordinary static, else the managed thread of a `[ThreadStatic]`'s value.
    pub thread: u64,
}

impl SnapshotData {
    /// A new, empty snapshot.
    pub fn new(s: &HeapSnapshot) -> SnapshotData {
        SnapshotData {
            number: s.snapshot,
            gc: s.gc,
            ts: s.ts,
            ..SnapshotData::default()
        }
    }

    /// Adds an object.
    pub fn object(&mut self, o: &HeapObject) {
        self.objects_seen += 1;
        if self.released {
            return;
        }
        let next = self.class_ids.len() as u32;
        let class = *self.class_index.entry(o.class).or_insert_with(|| {
            self.class_ids.push(o.class);
            next
        });
        self.addresses.push(o.object);
        self.classes.push(class);
        self.sizes.push(o.size);
        self.refs.extend_from_slice(&o.refs);
        self.ref_ends.push(self.refs.len() as u64);
    }

    /// Adds a root.
    pub fn root(&mut self, r: &HeapRoot) {
        self.roots_seen += 1;
        if self.released {
            return;
        }
        self.roots.push((r.object, r.kind, r.flags));
    }

    /// Adds a static field's value.
    pub fn static_root(&mut self, r: &HeapStatic) {
        if self.released {
            return;
        }
        self.statics.push(StaticRoot {
            object: r.object,
            class: r.class,
            field: r.field.clone(),
            thread: r.thread,
        });
    }

    /// Takes the generation ranges.
    pub fn generations(&mut self, g: &HeapGenerations) {
        self.ranges = g
            .ranges
            .chunks_exact(3)
            .map(|r| (r[1], r[2], r[0].min(255) as u8))
            .collect();
        self.ranges.sort_unstable();
    }

    /// Sets the generation ranges `(start, length, generation)` (for tests and benchmarks).
    pub fn set_generation_ranges(&mut self, mut ranges: Vec<(u64, u64, u8)>) {
        ranges.sort_unstable();
        self.ranges = ranges;
    }

    /// The generation of an object (0, 1, 2, 3 = LOH, 4 = POH), or `NON_GC` for an address
    /// in no generation's range; `None` when the trace has no ranges.
    pub(super) fn generation_of(&self, address: u64) -> Option<usize> {
        if self.ranges.is_empty() {
            return None;
        }
        let Some(i) = self
            .ranges
            .partition_point(|r| r.0 <= address)
            .checked_sub(1)
        else {
            return Some(NON_GC);
        };
        let (start, len, generation) = self.ranges[i];
        Some(if address - start < len && generation < 5 {
            generation as usize
        } else {
            NON_GC
        })
    }

    /// Marks the snapshot complete.
    pub fn end(&mut self, e: &HeapSnapshotEnd) {
        self.complete = true;
        self.refs_cut = e.refs_cut;
        self.end_ts = e.ts;
        // Objects and roots the loader passed over (`HeapKeep::None`) are counted by the agent.
        self.objects_seen = self.objects_seen.max(e.objects);
        self.roots_seen = self.roots_seen.max(e.roots);
    }

    /// Gives the objects' memory back, keeping the counts.
    pub fn release(&mut self) {
        self.released = true;
        self.addresses = Vec::new();
        self.classes = Vec::new();
        self.sizes = Vec::new();
        self.ref_ends = Vec::new();
        self.refs = Vec::new();
        self.roots = Vec::new();
        self.statics = Vec::new();
        self.ranges = Vec::new();
        self.class_ids = Vec::new();
        self.class_index = HashMap::new();
    }

    /// Objects in the snapshot.
    pub fn objects(&self) -> usize {
        self.objects_seen as usize
    }

    /// Roots in the snapshot.
    pub fn roots(&self) -> usize {
        self.roots_seen as usize
    }

    /// Builds a snapshot from plain parts (for tests and benchmarks): objects as
    /// `(address, class id, size, references)` and roots as `(address, kind, flags)`.
    pub fn from_parts(
        number: u32,
        objects: impl IntoIterator<Item = (u64, u64, u64, Vec<u64>)>,
        roots: impl IntoIterator<Item = (u64, u8, u8)>,
    ) -> SnapshotData {
        let mut s = SnapshotData {
            number,
            complete: true,
            ..SnapshotData::default()
        };
        for (object, class, size, refs) in objects {
            s.object(&HeapObject {
                snapshot: number,
                object,
                class,
                size,
                refs,
            });
        }
        for (object, kind, flags) in roots {
            s.root(&HeapRoot {
                snapshot: number,
                object,
                kind,
                flags,
                id: 0,
            });
        }
        s
    }
}
