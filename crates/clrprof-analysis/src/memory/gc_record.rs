//! A garbage collection as the loader reads it from the trace (the GC report and the events
//! summary are made from these).

/// A collection as read from the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcRecord {
    /// `GarbageCollectionStarted`.
    pub start_ns: u64,
    /// `GarbageCollectionFinished`, if recorded.
    pub end_ns: Option<u64>,
    /// Bit n: generation n collected.
    pub generations_mask: u32,
    /// `COR_PRF_GC_REASON`.
    pub reason: u64,
    /// Bytes per generation at the start.
    pub before: Option<Vec<u64>>,
    /// Bytes per generation at the end.
    pub after: Option<Vec<u64>>,
    /// Bytes in moved and surviving ranges, from `MovedReferences`/`SurvivingReferences`
    /// (index 0) and their `2` versions (index 1), which the runtime may both send.
    pub survived: [u64; 2],
    /// `FinalizeableObjectQueued` during the collection.
    pub finalizable_queued: u64,
    /// `HandleCreated` and `HandleDestroyed` since the previous collection.
    pub handles_created: u64,
    /// See `handles_created`.
    pub handles_destroyed: u64,
    /// `ObjectsAllocatedByClass` of the collection: `(class, objects)`.
    pub allocated_by_class: Vec<(u64, u64)>,
}
