//! Objects allocated per class between collections (`ObjectsAllocatedByClass`, which the
//! runtime sends only with its heap walk on, i.e. with heap snapshots), and generation sizes
//! around each collection: `GetGenerationBounds` at `GarbageCollectionStarted`
//! (the heap before) and at `GarbageCollectionFinished` (after), summed per generation into a
//! `GcGenerations` record. Both callbacks run while the runtime is suspended for the GC, the
//! only moments the bounds are exact.

use clrprof_sdk::ClassId;
use clrprof_sdk::info::GenerationRange;
use clrprof_trace::{AllocatedByClass, GcGenerations, MAX_U64_LIST, Record};

use crate::session::Session;

/// Generations reported: 0, 1, 2, large object heap, pinned object heap.
const GENERATIONS: usize = 5;

/// Writes the generation sizes of `ranges` (from `GetGenerationBounds`); `phase` 0 at the
/// start of a collection, 1 at its end.
pub fn write_generation_sizes(s: &Session, phase: u8, ranges: &[GenerationRange]) {
    let mut sizes = [0u64; GENERATIONS];
    for r in ranges {
        if let Some(size) = sizes.get_mut(r.generation.0 as usize) {
            *size += r.length as u64;
        }
    }
    s.out.push_record(&Record::GcGenerations(GcGenerations {
        ts: s.now(),
        phase,
        sizes: sizes.to_vec(),
    }));
}

/// Writes `ObjectsAllocatedByClass` (naming the classes); called during a collection's heap
/// walk.
pub fn write_allocated_by_class(s: &Session, classes: &[ClassId], counts: &[u32]) {
    let n = classes.len().min(counts.len()).min(MAX_U64_LIST / 2);
    let mut pairs = Vec::with_capacity(2 * n);
    for (&class, &count) in classes.iter().zip(counts).take(n) {
        s.defs.class(&s.info, &s.out, class);
        pairs.extend([class.as_u64(), u64::from(count)]);
    }
    s.out
        .push_record_or_drain(&Record::AllocatedByClass(AllocatedByClass {
            ts: s.now(),
            counts: pairs,
        }));
}
