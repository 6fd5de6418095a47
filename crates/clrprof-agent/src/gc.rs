//! Generation sizes around each collection: `GetGenerationBounds` at `GarbageCollectionStarted`
//! (the heap before) and at `GarbageCollectionFinished` (after), summed per generation into a
//! `GcGenerations` record. Both callbacks run while the runtime is suspended for the GC, the
//! only moments the bounds are exact.

use clrprof_trace::{GcGenerations, Record};

use crate::session::Session;

/// Generations reported: 0, 1, 2, large object heap, pinned object heap.
const GENERATIONS: usize = 5;

/// Writes the generation sizes; `phase` 0 at the start of a collection, 1 at its end.
pub fn write_generation_sizes(s: &Session, phase: u8) {
    let Ok(ranges) = s.info.get_generation_bounds() else {
        return;
    };
    let mut sizes = vec![0u64; GENERATIONS];
    for r in ranges {
        if let Some(size) = sizes.get_mut(r.generation.0 as usize) {
            *size += r.length as u64;
        }
    }
    s.out.push_record(&Record::GcGenerations(GcGenerations {
        ts: s.now(),
        phase,
        sizes,
    }));
}
