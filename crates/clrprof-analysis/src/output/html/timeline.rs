//! The timeline of the HTML report: per thread, CPU activity in time bins (from CPU samples)
//! and when the thread is known to exist (wall-clock samples tile time: each covers
//! `[time - wall_ns, time]`), with the function that used the most CPU in each bin; and the
//! runtime's spans (GCs, suspensions, JIT, loads, exceptions, native calls) as marks.
//!
//! Marks are capped: past the budget the longest are kept and the rest counted per category.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::model::{Profile, SampleKind};
use crate::names::Names;
use crate::output::chrome::span_name;
use crate::runtime::RuntimeViews;
use crate::runtime::timeline::{Span, Track};

use super::flame::FrameTable;

/// Categories of marks, in drawing order.
pub(super) const MARK_CATEGORIES: [&str; 7] = [
    "gc",
    "suspension",
    "jit",
    "load",
    "exception",
    "native",
    "lock",
];

/// One row of the timeline.
#[derive(Debug, Serialize)]
pub(super) struct TimelineTrack {
    /// `GC`, `Runtime suspensions`, or the thread's label.
    pub label: String,
    /// OS thread id (0 for the process-wide tracks).
    pub tid: u32,
    /// Per bin: CPU used, in thousandths of the bin (may exceed 1000 by sampling noise);
    /// empty for a thread without samples.
    pub cpu: Vec<u16>,
    /// Per bin: the part of the bin the wall-clock samples cover, in thousandths.
    pub wall: Vec<u16>,
    /// Per bin: the frame with the most CPU samples' CPU innermost, or -1.
    pub top: Vec<i64>,
}

/// The timeline.
#[derive(Debug, Serialize)]
pub(super) struct TimelineData {
    /// Length of the recording.
    pub duration_ns: u64,
    /// Width of a bin.
    pub bin_ns: u64,
    /// Rows: the process-wide tracks first, then threads.
    pub tracks: Vec<TimelineTrack>,
    /// Marks as columns: track (row), category (index into `categories`), start, length,
    /// name (index into `names`).
    pub mark_track: Vec<u32>,
    pub mark_cat: Vec<u8>,
    pub mark_start: Vec<u64>,
    pub mark_dur: Vec<u64>,
    pub mark_name: Vec<u32>,
    /// Mark names.
    pub names: Vec<String>,
    /// The mark categories.
    pub categories: [&'static str; 7],
    /// Marks per category, before the budget.
    pub mark_counts: BTreeMap<&'static str, u64>,
    /// Marks left out, by category: over the budget, or over the trace's own span limit.
    pub marks_left_out: u64,
}

/// Spreads `value` over the bins that `[start, end)` overlaps, in proportion.
fn spread(bins: &mut [f64], bin_ns: u64, start: u64, end: u64, value: f64) {
    if bins.is_empty() {
        return;
    }
    if end <= start {
        if let Some(b) = bins.get_mut(((start / bin_ns) as usize).min(bins.len() - 1)) {
            *b += value;
        }
        return;
    }
    let per_ns = value / (end - start) as f64;
    let first = (start / bin_ns) as usize;
    let last = (((end - 1) / bin_ns) as usize).min(bins.len() - 1);
    for (i, b) in bins.iter_mut().enumerate().take(last + 1).skip(first) {
        let lo = start.max((i as u64).saturating_mul(bin_ns));
        let hi = end.min((i as u64 + 1).saturating_mul(bin_ns));
        *b += per_ns * hi.saturating_sub(lo) as f64;
    }
}

fn permille(bins: &[f64], bin_ns: u64) -> Vec<u16> {
    bins.iter()
        .map(|&v| (v * 1000.0 / bin_ns as f64).round().clamp(0.0, 60000.0) as u16)
        .collect()
}

/// Builds the timeline of `profile` (if any) and the runtime's spans.
pub(super) fn timeline(
    profile: Option<&Profile>,
    runtime: &RuntimeViews,
    names: &Names,
    frames: &mut FrameTable,
    duration_ns: u64,
    bins: usize,
    max_marks: usize,
) -> TimelineData {
    let spans = &runtime.timeline.spans;
    let end = spans
        .iter()
        .map(|s| s.start_ns.saturating_add(s.duration_ns))
        .max()
        .unwrap_or(0)
        .max(duration_ns)
        .max(1);
    let bin_ns = end.div_ceil(bins as u64).max(1);
    let bins = end.div_ceil(bin_ns) as usize;

    let mut tracks = vec![
        TimelineTrack {
            label: "GC".into(),
            tid: 0,
            cpu: Vec::new(),
            wall: Vec::new(),
            top: Vec::new(),
        },
        TimelineTrack {
            label: "Runtime suspensions".into(),
            tid: 0,
            cpu: Vec::new(),
            wall: Vec::new(),
            top: Vec::new(),
        },
    ];
    let mut track_of: HashMap<u32, usize> = HashMap::new();
    if let Some(p) = profile {
        let mut ids = Vec::new();
        for t in &p.threads {
            let mut cpu = vec![0.0; bins];
            let mut wall = vec![0.0; bins];
            let mut top: Vec<HashMap<u32, u64>> = vec![HashMap::new(); bins];
            for s in &t.samples {
                match s.kind {
                    SampleKind::Cpu | SampleKind::Tick => {
                        let start = s.time_ns.saturating_sub(s.cpu_ns);
                        spread(&mut cpu, bin_ns, start, s.time_ns, s.cpu_ns as f64);
                        if let Some(stack) = s.stack {
                            let leaf = p.stacks[stack.index()].frame.index() as u32;
                            let bin = ((s.time_ns / bin_ns) as usize).min(bins - 1);
                            *top[bin].entry(leaf).or_default() += s.cpu_ns.max(1);
                        }
                    }
                    _ => {}
                }
                if matches!(s.kind, SampleKind::Wall | SampleKind::Tick) {
                    let start = s.time_ns.saturating_sub(s.wall_ns);
                    spread(&mut wall, bin_ns, start, s.time_ns, s.wall_ns as f64);
                }
            }
            track_of.insert(t.tid, tracks.len());
            // A thread without samples costs no bins.
            let (cpu, wall) = if t.samples.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                (permille(&cpu, bin_ns), permille(&wall, bin_ns))
            };
            if t.samples.is_empty() {
                top.clear();
            }
            tracks.push(TimelineTrack {
                label: t.label(),
                tid: t.tid,
                cpu,
                wall,
                top: top
                    .into_iter()
                    .map(|m| {
                        m.into_iter()
                            .max_by_key(|&(f, w)| (w, std::cmp::Reverse(f)))
                            .map_or(-1, |(f, _)| {
                                i64::from(frames.frame(p, &mut ids, f as usize))
                            })
                    })
                    .collect(),
            });
        }
    }

    // Marks: every category counted, the longest kept within the budget.
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut kept: Vec<&Span> = spans
        .iter()
        .filter(|s| MARK_CATEGORIES.contains(&s.category))
        .inspect(|s| *counts.entry(s.category).or_default() += 1)
        .collect();
    let mut left_out = runtime.timeline.dropped;
    if kept.len() > max_marks {
        kept.sort_by_key(|s| std::cmp::Reverse(s.duration_ns));
        left_out += (kept.len() - max_marks) as u64;
        kept.truncate(max_marks);
    }
    kept.sort_by_key(|s| s.start_ns);
    let mut data = TimelineData {
        duration_ns: end,
        bin_ns,
        tracks: Vec::new(),
        mark_track: Vec::new(),
        mark_cat: Vec::new(),
        mark_start: Vec::new(),
        mark_dur: Vec::new(),
        mark_name: Vec::new(),
        names: Vec::new(),
        categories: MARK_CATEGORIES,
        mark_counts: counts,
        marks_left_out: left_out,
    };
    let mut name_index: HashMap<String, u32> = HashMap::new();
    for s in kept {
        let track = match s.track {
            Track::Gc => 0,
            Track::Suspensions => 1,
            Track::Thread(tid) => *track_of.entry(tid).or_insert_with(|| {
                let name = names.name_of_tid(tid);
                tracks.push(TimelineTrack {
                    label: if name.is_empty() {
                        format!("thread {tid}")
                    } else {
                        format!("{name} ({tid})")
                    },
                    tid,
                    cpu: Vec::new(),
                    wall: Vec::new(),
                    top: Vec::new(),
                });
                tracks.len() - 1
            }),
        };
        let (name, _) = span_name(s, names);
        let next = data.names.len() as u32;
        let n = *name_index.entry(name.clone()).or_insert_with(|| {
            data.names.push(name);
            next
        });
        data.mark_track.push(track as u32);
        data.mark_cat.push(
            MARK_CATEGORIES
                .iter()
                .position(|&c| c == s.category)
                .unwrap_or(0) as u8,
        );
        data.mark_start.push(s.start_ns);
        data.mark_dur.push(s.duration_ns);
        data.mark_name.push(n);
    }
    data.tracks = tracks;
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreading_splits_a_value_over_the_bins_it_overlaps() {
        let mut bins = vec![0.0; 4];
        spread(&mut bins, 10, 5, 25, 20.0);
        assert_eq!(bins, [5.0, 10.0, 5.0, 0.0]);
        // An instant lands in its bin; past the end, in the last one.
        spread(&mut bins, 10, 39, 39, 1.0);
        spread(&mut bins, 10, 99, 99, 1.0);
        assert_eq!(bins[3], 2.0);
        assert_eq!(permille(&[5.0, 10.0], 10), [500, 1000]);
    }
}
