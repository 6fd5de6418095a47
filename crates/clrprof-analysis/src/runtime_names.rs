//! Names of the runtime's codes in reports: the generations a collection's mask holds, why a
//! collection or a suspension happened.

/// The highest small-object generation (0, 1 or 2) in a `GarbageCollectionStarted`
/// generations mask.
pub fn highest_generation(mask: u32) -> u32 {
    (0..=2).rev().find(|g| mask & (1 << g) != 0).unwrap_or(0)
}

/// Every generation in a generations mask (3 is the large object heap, 4 the pinned one).
pub fn generations_in(mask: u32) -> Vec<u32> {
    (0..32).filter(|g| mask & (1 << g) != 0).collect()
}

/// Name of a `COR_PRF_GC_REASON`.
pub fn gc_reason_name(reason: u64) -> String {
    match reason {
        0 => "other".into(),
        1 => "induced".into(),
        n => format!("reason{n}"),
    }
}

/// Name of a `COR_PRF_SUSPEND_REASON`.
pub fn suspend_reason_name(reason: u64) -> String {
    match reason {
        0 => "other",
        1 => "gc",
        2 => "appdomain-shutdown",
        3 => "code-pitching",
        4 => "shutdown",
        6 => "inproc-debugger",
        7 => "gc-prep",
        8 => "rejit",
        9 => "profiler",
        _ => return format!("reason{reason}"),
    }
    .into()
}
