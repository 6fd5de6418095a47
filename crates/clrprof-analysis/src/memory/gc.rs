//! Garbage collections: generation, reason, pause, generation sizes before and after, pause
//! percentiles and the share of the recording spent paused for GCs.
//!
//! A collection's pause is the runtime suspension it ran in: from `RuntimeSuspendStarted` to
//! the `RuntimeResumeFinished` that ended it (record with `--events gc,suspension`). Without
//! suspension events the pause is unknown and the collection's own duration (start to
//! finish callback) is shown instead.

use serde::Serialize;

use crate::runtime_names::{gc_reason_name, generations_in, highest_generation};
use crate::trace::LoadedTrace;

/// One collection in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcRow {
    /// 1-based position.
    pub index: u64,
    /// The highest generation collected (0, 1 or 2).
    pub generation: u32,
    /// Every generation collected (3 = large object heap, 4 = pinned object heap).
    pub generations: Vec<u32>,
    /// `induced`, `other`...
    pub reason: String,
    /// Start, nanoseconds since the session started.
    pub start_ns: u64,
    /// The pause: the runtime suspension around the collection, from suspension start to
    /// resume end; `null` if suspensions were not recorded.
    pub pause_ns: Option<u64>,
    /// From `GarbageCollectionStarted` to `GarbageCollectionFinished`.
    pub duration_ns: Option<u64>,
    /// Bytes per generation (0, 1, 2, LOH, POH) when the collection started.
    pub heap_before: Option<Vec<u64>>,
    /// Bytes per generation when it finished.
    pub heap_after: Option<Vec<u64>>,
    /// Heap bytes before minus after (what the collection freed, net of promotion).
    pub freed_bytes: Option<i64>,
    /// Bytes of the objects that survived the collection (moved or left in place), from the
    /// moved/surviving reference callbacks; `null` unless the runtime reported them (it does
    /// with heap snapshots, `COR_PRF_MONITOR_GC`).
    pub survived_bytes: Option<u64>,
    /// Objects queued for finalization during the collection (same condition).
    pub finalizable_queued: u64,
    /// GC handles created since the previous collection (same condition).
    pub handles_created: u64,
    /// GC handles destroyed since the previous collection (same condition).
    pub handles_destroyed: u64,
    /// Objects allocated since the previous collection, from the runtime's per-class counts
    /// (`ObjectsAllocatedByClass`; same condition; small object heap only).
    pub allocated_objects: Option<u64>,
}

/// Objects of one class allocated between collections, summed over the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassCountRow {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Objects.
    pub count: u64,
}

/// The GC report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GcReport {
    /// Every collection, in order.
    pub gcs: Vec<GcRow>,
    /// Collections per highest generation collected: `[gen0, gen1, gen2]`.
    pub count_by_generation: [u64; 3],
    /// Pause percentiles in nanoseconds (nearest rank), over collections with a known pause.
    pub pause_p50_ns: u64,
    /// 90th percentile.
    pub pause_p90_ns: u64,
    /// 99th percentile.
    pub pause_p99_ns: u64,
    /// Longest pause.
    pub pause_max_ns: u64,
    /// Sum of the pauses.
    pub pause_total_ns: u64,
    /// Sum of the pauses as a percentage of the recording's duration.
    pub time_in_gc_percent: f64,
    /// False when the trace has no suspension events (pauses unknown).
    pub pauses_known: bool,
    /// The runtime's per-class allocation counts summed over every collection, most first
    /// (empty unless the heap walk was on).
    pub allocated_by_class: Vec<ClassCountRow>,
}

/// The sum of generation sizes, as a signed number (saturating: a corrupt trace must not
/// overflow).
fn total(sizes: &[u64]) -> i64 {
    let sum = sizes.iter().fold(0u64, |a, &b| a.saturating_add(b));
    i64::try_from(sum).unwrap_or(i64::MAX)
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
pub fn percentile(sorted: &[u64], p: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The GC report.
pub fn report(t: &LoadedTrace) -> GcReport {
    let m = &t.memory;
    let pauses_known = !m.suspensions.is_empty();
    let mut rows = Vec::with_capacity(m.gcs.len());
    let mut count_by_generation = [0u64; 3];
    for (i, g) in m.gcs.iter().enumerate() {
        let generation = highest_generation(g.generations_mask);
        count_by_generation[generation as usize] += 1;
        let pause_ns = m
            .suspensions
            .iter()
            .find(|&&(start, end)| start <= g.start_ns && g.start_ns <= end)
            .map(|&(start, end)| end.saturating_sub(start));
        let freed_bytes = match (&g.before, &g.after) {
            (Some(b), Some(a)) => Some(total(b).saturating_sub(total(a))),
            _ => None,
        };
        rows.push(GcRow {
            index: i as u64 + 1,
            generation,
            generations: generations_in(g.generations_mask),
            reason: gc_reason_name(g.reason),
            start_ns: g.start_ns,
            pause_ns,
            duration_ns: g.end_ns.map(|e| e.saturating_sub(g.start_ns)),
            heap_before: g.before.clone(),
            heap_after: g.after.clone(),
            freed_bytes,
            survived_bytes: match g.survived {
                [0, 0] => None,
                [v1, 0] => Some(v1),
                [_, v2] => Some(v2),
            },
            finalizable_queued: g.finalizable_queued,
            handles_created: g.handles_created,
            handles_destroyed: g.handles_destroyed,
            allocated_objects: (!g.allocated_by_class.is_empty()).then(|| {
                g.allocated_by_class
                    .iter()
                    .fold(0u64, |a, &(_, n)| a.saturating_add(n))
            }),
        });
    }
    let mut by_class: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for &(class, n) in m.gcs.iter().flat_map(|g| &g.allocated_by_class) {
        let c = by_class.entry(class).or_default();
        *c = c.saturating_add(n);
    }
    let mut allocated_by_class: Vec<ClassCountRow> = by_class
        .into_iter()
        .map(|(class, count)| ClassCountRow {
            type_name: t.names.class(class),
            count,
        })
        .collect();
    allocated_by_class.sort_by(|a, b| b.count.cmp(&a.count).then(a.type_name.cmp(&b.type_name)));
    let mut pauses: Vec<u64> = rows.iter().filter_map(|r| r.pause_ns).collect();
    pauses.sort_unstable();
    let total_pause = pauses.iter().fold(0u64, |a, &b| a.saturating_add(b));
    let duration = t.duration_ns();
    GcReport {
        gcs: rows,
        count_by_generation,
        pause_p50_ns: percentile(&pauses, 50),
        pause_p90_ns: percentile(&pauses, 90),
        pause_p99_ns: percentile(&pauses, 99),
        pause_max_ns: pauses.last().copied().unwrap_or(0),
        pause_total_ns: total_pause,
        time_in_gc_percent: crate::top::percent(total_pause, duration),
        pauses_known,
        allocated_by_class,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&v, 50), 5);
        assert_eq!(percentile(&v, 90), 9);
        assert_eq!(percentile(&v, 99), 10);
        assert_eq!(percentile(&[7], 50), 7);
        assert_eq!(percentile(&[], 50), 0);
    }
}
