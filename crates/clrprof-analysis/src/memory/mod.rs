//! Memory: allocations by type and by stack ([`alloc`]), and garbage collections with their
//! pauses and generation sizes ([`gc`]).
//!
//! The trace loader hands every allocation, generation-size record and GC or suspension event
//! to a [`MemoryRecords`] as it reads the file; the reports are computed from it on demand.

pub mod alloc;
pub mod gc;
pub mod heap;

use clrprof_trace::{
    AllocatedByClass, Allocation, Event, EventKind, GcGenerations, HeapGenerations, HeapObject,
    HeapRoot, HeapSnapshot, HeapSnapshotEnd,
};

pub use alloc::{AllocReport, AllocatingMethod, AllocationRow, AllocationStackRow};
pub use gc::{ClassCountRow, GcReport, GcRow};
pub use heap::{GenerationRow, HeapDiffRow, HeapReport, HeapTypeRow, Retainer, SnapshotData};

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
    pub gcs: Vec<gc::GcRecord>,
    /// Runtime suspensions: (start, end) of each from `RuntimeSuspendStarted` to
    /// `RuntimeResumeFinished`.
    pub suspensions: Vec<(u64, u64)>,
    /// Heap snapshots, in order.
    pub snapshots: Vec<SnapshotData>,
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

    fn open_gc(&mut self) -> Option<&mut gc::GcRecord> {
        let i = *self.open_gcs.last()?;
        self.gcs.get_mut(i)
    }

    /// Takes an event; keeps collections and suspensions.
    pub fn event(&mut self, e: &Event) {
        let arg = |i| e.arg(i).unwrap_or(0);
        match e.event {
            EventKind::GARBAGE_COLLECTION_STARTED => {
                self.open_gcs.push(self.gcs.len());
                self.gcs.push(gc::GcRecord {
                    start_ns: e.ts,
                    end_ns: None,
                    generations_mask: arg(0) as u32,
                    reason: arg(1),
                    before: self.sizes_before.take(),
                    handles_created: std::mem::take(&mut self.handles_created),
                    handles_destroyed: std::mem::take(&mut self.handles_destroyed),
                    ..gc::GcRecord::default()
                });
            }
            EventKind::GARBAGE_COLLECTION_FINISHED => {
                if let Some(i) = self.open_gcs.pop() {
                    let g = &mut self.gcs[i];
                    g.end_ns = Some(e.ts);
                    g.after = self.sizes_after.take();
                }
            }
            EventKind::MOVED_REFERENCES | EventKind::SURVIVING_REFERENCES => {
                if let Some(g) = self.open_gc() {
                    g.survived[0] = g.survived[0].saturating_add(arg(1));
                }
            }
            EventKind::MOVED_REFERENCES2 | EventKind::SURVIVING_REFERENCES2 => {
                if let Some(g) = self.open_gc() {
                    g.survived[1] = g.survived[1].saturating_add(arg(1));
                }
            }
            EventKind::FINALIZEABLE_OBJECT_QUEUED => {
                if let Some(g) = self.open_gc() {
                    g.finalizable_queued += 1;
                }
            }
            EventKind::HANDLE_CREATED => self.handles_created += 1,
            EventKind::HANDLE_DESTROYED => self.handles_destroyed += 1,
            EventKind::RUNTIME_SUSPEND_STARTED => self.open_suspension = Some(e.ts),
            EventKind::RUNTIME_SUSPEND_ABORTED => self.open_suspension = None,
            EventKind::RUNTIME_RESUME_FINISHED => {
                if let Some(start) = self.open_suspension.take() {
                    self.suspensions.push((start, e.ts));
                }
            }
            _ => {}
        }
    }
}

use std::io::Write;

use crate::Error;
use crate::trace::LoadedTrace;
use crate::units::{count, duration};

/// Rows the text sections show by default.
pub const TEXT_ROWS: usize = 25;

/// Bytes as `812 B`, `12.3 KiB`, `5.67 MiB`, `1.23 GiB`.
pub fn bytes(n: u64) -> String {
    let f = n as f64;
    if n < 1 << 10 {
        format!("{n} B")
    } else if n < 1 << 20 {
        format!("{:.1} KiB", f / 1024.0)
    } else if n < 1 << 30 {
        format!("{:.2} MiB", f / 1048576.0)
    } else {
        format!("{:.2} GiB", f / 1073741824.0)
    }
}

/// The text allocation section: top types (with their allocating methods) and top stacks.
pub fn write_alloc_text(t: &LoadedTrace, top: usize, out: &mut dyn Write) -> Result<(), Error> {
    if !t.has_allocations() {
        writeln!(out, "Allocations: none recorded (record with --alloc)")?;
        return Ok(());
    }
    let r = t.alloc_report(top);
    let ticks = r.mode == "ticks";
    // Ticks say how many bytes, not how many objects.
    let objects = |n: u64| if ticks { "-".to_string() } else { count(n) };
    if ticks {
        writeln!(
            out,
            "Allocations: {} (the runtime's allocation ticks, one per {} allocated: bytes \
             estimated, with a bias, objects not counted; {} ticks)",
            bytes(r.total_bytes),
            bytes(r.interval_bytes),
            count(r.records)
        )?;
        writeln!(
            out,
            "  Each tick's type and stack stand for the bytes since the previous tick. The total \
             is a few percent over (the unused ends of allocation contexts count); a type's \
             share can be off by tens of percent, more for types of large objects and for \
             allocations in a fixed rhythm, and rare types may get no tick. Unbiased: record \
             with --alloc sampled; exact: --alloc all (both slow allocation down)."
        )?;
    } else {
        let how = if r.mode == "sampled" {
            format!(
                "sampled every {} on average, totals estimated",
                bytes(r.interval_bytes)
            )
        } else {
            "every allocation, exact".to_string()
        };
        writeln!(
            out,
            "Allocations: {} objects, {} ({how}; {} records, {} dropped)",
            count(r.total_count),
            bytes(r.total_bytes),
            count(r.records),
            count(r.dropped)
        )?;
    }
    writeln!(
        out,
        "\n  {:>12}  {:>12}  {:>6}  type / allocated by",
        "objects", "bytes", "%"
    )?;
    for row in r.types.iter().take(top) {
        let share = crate::top::percent(row.bytes, r.total_bytes);
        let mut notes = Vec::new();
        if let Some(max) = row.array_length_max {
            notes.push(format!("up to {} elements", count(max)));
        }
        if row.large_object_heap > 0 {
            notes.push(format!(
                "{} on the large object heap",
                count(row.large_object_heap)
            ));
        }
        let loh = if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join(", "))
        };
        writeln!(
            out,
            "  {:>12}  {:>12}  {:>5.1}%  {}{loh}",
            objects(row.count),
            bytes(row.bytes),
            share,
            row.type_name
        )?;
        for m in row.allocated_by.iter().take(3) {
            writeln!(
                out,
                "  {:>12}  {:>12}           {}",
                objects(m.count),
                bytes(m.bytes),
                m.function
            )?;
        }
    }
    writeln!(out, "\nTop allocating stacks")?;
    for (i, s) in r.stacks.iter().enumerate() {
        writeln!(
            out,
            "  #{:<3} {} objects, {}",
            i + 1,
            objects(s.count),
            bytes(s.bytes)
        )?;
        for f in s.frames.iter().take(12) {
            writeln!(out, "        {f}")?;
        }
        if s.frames.len() > 12 {
            writeln!(out, "        ... {} more frames", s.frames.len() - 12)?;
        }
    }
    Ok(())
}

/// The text GC section: one line per collection, pause percentiles and time in GC.
pub fn write_gc_text(t: &LoadedTrace, out: &mut dyn Write) -> Result<(), Error> {
    let r = t.gc_report();
    if r.gcs.is_empty() {
        writeln!(
            out,
            "Garbage collections: none recorded (record with --events gc,suspension)"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "Garbage collections: {} (gen0 {}, gen1 {}, gen2 {})",
        r.gcs.len(),
        r.count_by_generation[0],
        r.count_by_generation[1],
        r.count_by_generation[2]
    )?;
    writeln!(
        out,
        "  {:>4}  {:>3}  {:<9} {:>11}  {:>11}  {:>21}  {:>21}  {:>21}",
        "#",
        "gen",
        "reason",
        "start",
        "pause",
        "gen0 before/after",
        "gen1 before/after",
        "gen2+LOH before/after"
    )?;
    let size_of = |sizes: &Option<Vec<u64>>, i: usize| -> String {
        sizes.as_ref().map_or_else(
            || "?".into(),
            |s| {
                if i == 2 {
                    bytes(s.iter().skip(2).sum())
                } else {
                    bytes(s.get(i).copied().unwrap_or(0))
                }
            },
        )
    };
    for g in &r.gcs {
        let pause = g.pause_ns.map_or_else(|| "?".to_string(), duration);
        let cols: Vec<String> = (0..3)
            .map(|i| {
                format!(
                    "{} / {}",
                    size_of(&g.heap_before, i),
                    size_of(&g.heap_after, i)
                )
            })
            .collect();
        writeln!(
            out,
            "  {:>4}  {:>3}  {:<9} {:>11}  {:>11}  {:>21}  {:>21}  {:>21}",
            g.index,
            g.generation,
            g.reason,
            duration(g.start_ns),
            pause,
            cols[0],
            cols[1],
            cols[2]
        )?;
    }
    if r.pauses_known {
        writeln!(
            out,
            "\n  pauses: p50 {}, p90 {}, p99 {}, max {}; {} in total, {:.2}% of the recording",
            duration(r.pause_p50_ns),
            duration(r.pause_p90_ns),
            duration(r.pause_p99_ns),
            duration(r.pause_max_ns),
            duration(r.pause_total_ns),
            r.time_in_gc_percent
        )?;
    } else {
        writeln!(
            out,
            "\n  pauses unknown: record with --events gc,suspension to measure them"
        )?;
    }
    if !r.allocated_by_class.is_empty() {
        writeln!(
            out,
            "\n  allocated between collections (the runtime's counts, small object heap):"
        )?;
        for row in r.allocated_by_class.iter().take(10) {
            writeln!(out, "  {:>12}  {}", count(row.count), row.type_name)?;
        }
    }
    Ok(())
}

/// The `heap` part of the JSON report: every snapshot of the trace, and one analysed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HeapJson {
    /// Every snapshot: number, collection, objects, roots, complete.
    pub snapshots: Vec<SnapshotSummary>,
    /// The analysed snapshot (the last complete one unless asked otherwise).
    #[serde(flatten)]
    pub report: HeapReport,
}

/// One snapshot in the list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotSummary {
    /// Its number, from 1.
    pub snapshot: u32,
    /// The collection it was taken in, from 1 (see `gc.gcs[].index`).
    pub gc: u32,
    /// Objects.
    pub objects: u64,
    /// Roots.
    pub roots: u64,
    /// False if the trace ends inside it.
    pub complete: bool,
    /// How long the program was stopped for it: the runtime suspension its collection ran in,
    /// which includes the heap walk (none if the trace has no suspension around it).
    pub pause_ns: Option<u64>,
}

impl MemoryRecords {
    /// The pause of the collection a snapshot was taken in: the suspension around its start.
    pub fn snapshot_pause(&self, s: &SnapshotData) -> Option<u64> {
        let i = self
            .suspensions
            .partition_point(|&(start, _)| start <= s.ts);
        let (start, end) = *self.suspensions.get(i.checked_sub(1)?)?;
        (s.ts <= end).then_some(end - start)
    }

    /// Every snapshot, summarized.
    pub fn snapshot_summaries(&self) -> Vec<SnapshotSummary> {
        self.snapshots
            .iter()
            .map(|s| SnapshotSummary {
                snapshot: s.number,
                gc: s.gc,
                objects: s.objects() as u64,
                roots: s.roots() as u64,
                complete: s.complete,
                pause_ns: self.snapshot_pause(s),
            })
            .collect()
    }
}

impl LoadedTrace {
    /// The snapshot numbered `number`, or the last complete one.
    pub fn snapshot(&self, number: Option<u32>) -> Result<&SnapshotData, Error> {
        let found = match number {
            Some(n) => self.memory.snapshots.iter().find(|s| s.number == n),
            None => self.memory.snapshots.iter().rev().find(|s| s.complete),
        };
        if let Some(s) = found.filter(|s| s.released) {
            return Err(Error::NoSuchSnapshot(format!(
                "heap snapshot {} was not loaded (load the trace with HeapKeep naming it)",
                s.number
            )));
        }
        found.ok_or_else(|| {
            let have = self.memory.snapshots.len();
            Error::NoSuchSnapshot(match number {
                Some(n) => format!("there is no heap snapshot {n} (the trace has {have})"),
                None if have == 0 => {
                    "the trace has no heap snapshot; record with --heap-snapshot".into()
                }
                None => "the trace has no complete heap snapshot".into(),
            })
        })
    }

    /// The heap part of the report for snapshot `number` (default: the last complete one).
    pub fn heap_json(
        &self,
        number: Option<u32>,
        top: usize,
        progress: &mut dyn FnMut(&str),
    ) -> Result<HeapJson, Error> {
        let s = self.snapshot(number)?;
        Ok(HeapJson {
            snapshots: self.memory.snapshot_summaries(),
            report: heap::analyze(s, &self.names, top, progress),
        })
    }
}

/// The objects no reported root reaches, and why.
fn write_unreached(r: &HeapReport, out: &mut dyn Write) -> Result<(), Error> {
    let others = r.unreached_objects - r.unreached_non_gc;
    writeln!(
        out,
        "  {} objects no reported root reaches (shown below the roots, not left out):",
        count(r.unreached_objects)
    )?;
    if r.unreached_non_gc > 0 {
        writeln!(
            out,
            "    {} on the non-GC heap: string literals and Type objects the runtime allocates \
             once, which compiled code refers to by address, not through a root",
            count(r.unreached_non_gc)
        )?;
    }
    if others > 0 {
        let types: Vec<String> = r
            .unreached_types
            .iter()
            .filter(|t| t.objects > t.non_gc)
            .take(5)
            .map(|t| format!("{} {}", count(t.objects - t.non_gc), t.type_name))
            .collect();
        writeln!(
            out,
            "    {} in the collected heap, kept alive by roots the runtime does not report to \
             profilers (e.g. its own references from native data structures): {}",
            count(others),
            types.join(", ")
        )?;
    }
    Ok(())
}

/// The text heap section.
pub fn write_heap_text(h: &HeapJson, top: usize, out: &mut dyn Write) -> Result<(), Error> {
    let r = &h.report;
    writeln!(
        out,
        "Heap snapshot {} of {} (GC #{}): {} objects, {}, {} roots",
        r.snapshot,
        h.snapshots.len(),
        r.gc,
        count(r.objects),
        bytes(r.total_bytes),
        count(r.roots)
    )?;
    if let Some(p) = h.snapshots.iter().find(|s| s.snapshot == r.snapshot)
        && let Some(pause) = p.pause_ns
    {
        writeln!(out, "  The program was paused {} for it.", duration(pause))?;
    }
    if r.unreached_objects > 0 {
        write_unreached(r, out)?;
    }
    if r.refs_cut > 0 {
        writeln!(
            out,
            "  ({} references cut: objects with more than a record holds)",
            count(r.refs_cut)
        )?;
    }
    writeln!(
        out,
        "\n  {:>10}  {:>12}  {:>12}  type",
        "objects", "shallow", "retained"
    )?;
    for t in r.types.iter().take(top) {
        writeln!(
            out,
            "  {:>10}  {:>12}  {:>12}  {}",
            count(t.count),
            bytes(t.shallow_bytes),
            bytes(t.retained_bytes),
            t.type_name
        )?;
    }
    if !r.generations.is_empty() {
        writeln!(
            out,
            "\nAge (generation: gen0 survived no collection, gen1 one, gen2 two or more)"
        )?;
        for g in &r.generations {
            writeln!(
                out,
                "  {:<5} {:>10} objects  {:>12}",
                g.generation,
                count(g.objects),
                bytes(g.bytes)
            )?;
        }
    }
    writeln!(out, "\nTop retainers")?;
    for (i, x) in r.top_retainers.iter().enumerate() {
        writeln!(
            out,
            "  #{:<3} {} retains {} (itself {}) at {:#x}",
            i + 1,
            x.type_name,
            bytes(x.retained_bytes),
            bytes(x.shallow_bytes),
            x.address
        )?;
        writeln!(out, "        {}", x.path.join(" -> "))?;
    }
    Ok(())
}

/// The text diff of two snapshots.
pub fn write_diff_text(
    before: &HeapReport,
    after: &HeapReport,
    rows: &[HeapDiffRow],
    top: usize,
    out: &mut dyn Write,
) -> Result<(), Error> {
    writeln!(
        out,
        "Heap diff: snapshot {} ({} objects, {}) -> snapshot {} ({} objects, {})",
        before.snapshot,
        count(before.objects),
        bytes(before.total_bytes),
        after.snapshot,
        count(after.objects),
        bytes(after.total_bytes)
    )?;
    writeln!(
        out,
        "\n  {:>10}  {:>10}  {:>10}  {:>14}  {:>14}  type",
        "before", "after", "delta", "shallow delta", "retained delta"
    )?;
    for r in rows.iter().take(top) {
        writeln!(
            out,
            "  {:>10}  {:>10}  {:>+10}  {:>+14}  {:>+14}  {}",
            count(r.count_before),
            count(r.count_after),
            r.count_delta,
            r.shallow_bytes_delta,
            r.retained_bytes_delta,
            r.type_name
        )?;
    }
    Ok(())
}

/// One side of a diff in the JSON.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DiffSide {
    /// Snapshot number in its trace.
    pub snapshot: u32,
    /// Objects.
    pub objects: u64,
    /// Bytes.
    pub total_bytes: u64,
}

/// The JSON of `report --diff A B`: `{"diff": {"before", "after", "types": [...]}}`.
pub fn write_diff_json(
    before: &HeapReport,
    after: &HeapReport,
    rows: &[HeapDiffRow],
    pretty: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        before: DiffSide,
        after: DiffSide,
        types: &'a [HeapDiffRow],
    }
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        diff: Body<'a>,
    }
    let side = |r: &HeapReport| DiffSide {
        snapshot: r.snapshot,
        objects: r.objects,
        total_bytes: r.total_bytes,
    };
    let doc = Doc {
        diff: Body {
            before: side(before),
            after: side(after),
            types: rows,
        },
    };
    if pretty {
        serde_json::to_writer_pretty(&mut *out, &doc)?;
    } else {
        serde_json::to_writer(&mut *out, &doc)?;
    }
    writeln!(out)?;
    Ok(())
}

/// A line at the end of the plain text report pointing at the memory reports the trace has.
pub fn write_hints(t: &LoadedTrace, out: &mut dyn Write) -> Result<(), Error> {
    let mut hints = Vec::new();
    if t.has_allocations() {
        hints.push(format!(
            "{} allocation records (--alloc)",
            count(t.memory.allocations.len() as u64)
        ));
    }
    if !t.memory.gcs.is_empty() {
        hints.push(format!(
            "{} garbage collections (--gc)",
            count(t.memory.gcs.len() as u64)
        ));
    }
    if !t.memory.snapshots.is_empty() {
        let described: Vec<String> = t
            .memory
            .snapshot_summaries()
            .iter()
            .map(|s| {
                let pause = s.pause_ns.map_or_else(
                    || "pause unknown".to_string(),
                    |p| format!("paused {}", duration(p)),
                );
                let end = if s.complete { "" } else { ", incomplete" };
                format!(
                    "#{}: {} objects, {pause}{end}",
                    s.snapshot,
                    count(s.objects)
                )
            })
            .collect();
        let shown = described.len().min(3);
        let more = if described.len() > shown {
            format!(", ... ({} more)", described.len() - shown)
        } else {
            String::new()
        };
        hints.push(format!(
            "{} heap snapshot{} ({}{more}) (--heap, --diff A B)",
            count(t.memory.snapshots.len() as u64),
            if t.memory.snapshots.len() == 1 {
                ""
            } else {
                "s"
            },
            described[..shown].join("; ")
        ));
    }
    if !hints.is_empty() {
        writeln!(out, "\nMemory: {}", hints.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_trace::{Record, Writer};

    /// A trace with three complete snapshots of 1, 2 and 3 objects.
    fn three_snapshots() -> Vec<u8> {
        let mut w = Writer::new(Vec::new()).unwrap();
        for n in 1..=3u32 {
            w.write(&Record::HeapSnapshot(HeapSnapshot {
                ts: 0,
                snapshot: n,
                gc: n,
            }))
            .unwrap();
            for i in 0..n {
                w.write(&Record::HeapObject(HeapObject {
                    snapshot: n,
                    object: 0x1000 + 64 * u64::from(i),
                    class: 7,
                    size: 24,
                    refs: vec![],
                }))
                .unwrap();
            }
            w.write(&Record::HeapRoot(HeapRoot {
                snapshot: n,
                object: 0x1000,
                kind: 3,
                flags: 0,
                id: 0,
            }))
            .unwrap();
            w.write(&Record::HeapSnapshotEnd(HeapSnapshotEnd {
                ts: 0,
                snapshot: n,
                objects: u64::from(n),
                roots: 1,
                refs_cut: 0,
            }))
            .unwrap();
        }
        w.into_inner()
    }

    fn trace(records: Vec<Record>) -> LoadedTrace {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in &records {
            w.write(r).unwrap();
        }
        crate::trace::read(&w.into_inner()[..]).unwrap()
    }

    fn function(id: u64, method: &str) -> Record {
        Record::FunctionDef(clrprof_trace::FunctionDef {
            id,
            type_name: "App".into(),
            method_name: method.into(),
            signature: "()".into(),
            ..Default::default()
        })
    }

    fn stack(id: u32, parent: u32, frame: u64) -> Record {
        Record::StackDef(clrprof_trace::StackDef {
            id,
            parent,
            frame_kind: clrprof_trace::FrameKind::Managed,
            frame,
        })
    }

    fn class(id: u64, name: &str) -> Record {
        Record::ClassDef(clrprof_trace::ClassDef {
            id,
            name: name.into(),
            ..Default::default()
        })
    }

    fn allocation(class: u64, size: u64, stack: u32, interval: u64) -> Record {
        Record::Allocation(Allocation {
            class,
            size,
            stack,
            interval,
            ..Default::default()
        })
    }

    #[test]
    fn allocations_by_type_method_and_stack() {
        // Main -> Make (stack 2) allocates 3 Nodes; Main -> Fill (stack 3) 2 byte[] of 124.
        let mut records = vec![
            function(1, "Main"),
            function(2, "Make"),
            function(3, "Fill"),
            stack(1, 0, 1),
            stack(2, 1, 2),
            stack(3, 1, 3),
            class(10, "Node"),
            class(11, "byte[]"),
        ];
        records.extend((0..3).map(|_| allocation(10, 40, 2, 0)));
        records.extend((0..2).map(|_| allocation(11, 124, 3, 0)));
        let t = trace(records);
        let r = t.alloc_report(10);
        assert_eq!(r.mode, "all");
        assert_eq!((r.total_count, r.total_bytes), (5, 3 * 40 + 2 * 124));
        assert_eq!(r.types[0].type_name, "byte[]");
        assert_eq!((r.types[0].count, r.types[0].bytes), (2, 248));
        assert!(!r.types[0].estimated);
        assert_eq!(r.types[1].allocated_by[0].function, "App.Make()");
        assert_eq!(r.stacks[0].frames, ["App.Fill()", "App.Main()"]);
        let (metric, folded) =
            crate::output::folded_lines(&t.alloc_profile(), &crate::Query::default(), false)
                .unwrap();
        assert_eq!(metric, crate::Metric::Bytes);
        assert_eq!(
            folded,
            [
                "App.Main();App.Fill();[byte[]] 248",
                "App.Main();App.Make();[Node] 120"
            ]
        );
        let objects = crate::Query {
            metric: Some(crate::Metric::Objects),
            ..Default::default()
        };
        let (_, folded) = crate::output::folded_lines(&t.alloc_profile(), &objects, false).unwrap();
        assert_eq!(
            folded,
            [
                "App.Main();App.Fill();[byte[]] 2",
                "App.Main();App.Make();[Node] 3"
            ]
        );
        // pprof: allocation sample types, the type as a label too.
        let p = crate::output::pprof_encode(&t.alloc_profile(), &crate::Query::default()).unwrap();
        let name = |i: i64| p.string_table[i as usize].as_str();
        let types: Vec<&str> = p.sample_type.iter().map(|t| name(t.r#type)).collect();
        assert_eq!(types, ["alloc_objects", "alloc_space"]);
        assert_eq!(name(p.default_sample_type), "alloc_space");
        let node: Vec<i64> = p
            .sample
            .iter()
            .filter(|s| {
                s.label
                    .iter()
                    .any(|l| name(l.key) == "type" && name(l.str) == "Node")
            })
            .flat_map(|s| s.value.clone())
            .collect();
        assert_eq!(node, [3, 120]);
        // CPU metrics are refused, with the reason.
        let cpu = crate::Query {
            metric: Some(crate::Metric::Cpu),
            ..Default::default()
        };
        let err = crate::output::folded_lines(&t.alloc_profile(), &cpu, false).unwrap_err();
        assert!(
            err.to_string().contains("not available for allocation"),
            "{err}"
        );
    }

    #[test]
    fn sampled_allocations_are_scaled_up() {
        // One sampled 24-byte object with a 1 MiB interval stands for about 1 MiB.
        let t = trace(vec![class(10, "Small"), allocation(10, 24, 0, 1 << 20)]);
        let r = t.alloc_report(10);
        assert_eq!(r.mode, "sampled");
        assert!(r.types[0].estimated);
        let bytes = r.types[0].bytes as f64;
        assert!((bytes - (1u64 << 20) as f64).abs() < 100.0, "{bytes}");
        assert_eq!(r.types[0].allocated_by[0].function, "[no managed frame]");
    }

    #[test]
    fn collections_get_their_pause_and_generation_sizes() {
        use clrprof_trace::Event;
        let ev = |ts, kind, args: &[u64]| Record::Event(Event::new(ts, 1, kind, args));
        let sizes = |phase, sizes: Vec<u64>| {
            Record::GcGenerations(GcGenerations {
                ts: 0,
                phase,
                sizes,
            })
        };
        let t = trace(vec![
            ev(100, EventKind::RUNTIME_SUSPEND_STARTED, &[1]),
            sizes(0, vec![1000, 0, 0, 0, 0]),
            ev(150, EventKind::GARBAGE_COLLECTION_STARTED, &[0b111, 1]),
            ev(160, EventKind::SURVIVING_REFERENCES2, &[2, 300]),
            ev(170, EventKind::MOVED_REFERENCES2, &[1, 100]),
            sizes(1, vec![0, 400, 0, 0, 0]),
            ev(200, EventKind::GARBAGE_COLLECTION_FINISHED, &[]),
            ev(250, EventKind::RUNTIME_RESUME_FINISHED, &[]),
            // A second collection without a recorded suspension.
            ev(500, EventKind::GARBAGE_COLLECTION_STARTED, &[0b1, 0]),
            ev(520, EventKind::GARBAGE_COLLECTION_FINISHED, &[]),
        ]);
        let r = t.gc_report();
        assert_eq!(r.gcs.len(), 2);
        let g = &r.gcs[0];
        assert_eq!((g.generation, g.reason.as_str()), (2, "induced"));
        assert_eq!((g.pause_ns, g.duration_ns), (Some(150), Some(50)));
        assert_eq!(g.heap_before, Some(vec![1000, 0, 0, 0, 0]));
        assert_eq!(g.heap_after, Some(vec![0, 400, 0, 0, 0]));
        assert_eq!((g.freed_bytes, g.survived_bytes), (Some(600), Some(400)));
        let g = &r.gcs[1];
        assert_eq!(
            (g.generation, g.pause_ns, g.heap_before.clone()),
            (0, None, None)
        );
        assert_eq!(r.count_by_generation, [1, 0, 1]);
        assert_eq!((r.pause_max_ns, r.pause_total_ns), (150, 150));
    }

    #[test]
    fn the_loader_keeps_only_the_snapshots_asked_for() {
        let bytes = three_snapshots();
        let last = crate::trace::read_with(&bytes[..], HeapKeep::Last).unwrap();
        let kept: Vec<bool> = last.memory.snapshots.iter().map(|s| s.released).collect();
        assert_eq!(kept, [true, true, false]);
        // Counts survive the release; only the analysed snapshot needs its objects.
        let counts: Vec<usize> = last.memory.snapshots.iter().map(|s| s.objects()).collect();
        assert_eq!(counts, [1, 2, 3]);
        assert_eq!(
            last.heap_json(None, 5, &mut |_| {}).unwrap().report.objects,
            3
        );
        let err = last.heap_json(Some(1), 5, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("not loaded"), "{err}");
        assert!(last.heap_json(Some(9), 5, &mut |_| {}).is_err());

        let first = crate::trace::read_with(&bytes[..], HeapKeep::Numbers(vec![1])).unwrap();
        assert_eq!(
            first
                .heap_json(Some(1), 5, &mut |_| {})
                .unwrap()
                .report
                .objects,
            1
        );
        let all = crate::trace::read_with(&bytes[..], HeapKeep::All).unwrap();
        assert!(all.memory.snapshots.iter().all(|s| !s.released));
    }

    #[test]
    fn a_report_without_the_heap_reads_the_snapshots_counts_and_pauses_only() {
        let mut bytes = three_snapshots();
        // The second snapshot's collection ran in a suspension of 7 ms.
        let mut w = Writer::new(Vec::new()).unwrap();
        for (ts, kind) in [
            (1_000, EventKind::RUNTIME_SUSPEND_STARTED),
            (8_001_000, EventKind::RUNTIME_RESUME_FINISHED),
        ] {
            w.write(&Record::Event(Event::new(ts, 1, kind, &[])))
                .unwrap();
        }
        let events = w.into_inner();
        bytes.extend_from_slice(&events[clrprof_trace::HEADER_LEN..]);
        let none = crate::trace::read_with(&bytes[..], HeapKeep::None).unwrap();
        assert!(none.memory.snapshots.iter().all(|s| s.released));
        assert_eq!(none.unknown_records, 0, "passed over, not unknown");
        let summaries = none.memory.snapshot_summaries();
        let counts: Vec<(u64, u64, bool)> = summaries
            .iter()
            .map(|s| (s.objects, s.roots, s.complete))
            .collect();
        assert_eq!(counts, [(1, 1, true), (2, 1, true), (3, 1, true)]);
        // Every snapshot starts at ts 0 here, before the suspension: no pause is known.
        assert!(summaries.iter().all(|s| s.pause_ns.is_none()));
        assert!(none.heap_json(None, 5, &mut |_| {}).is_err());
        let mut text = Vec::new();
        write_hints(&none, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("3 heap snapshots (#1: 1 objects, pause unknown;"),
            "{text}"
        );
    }

    #[test]
    fn a_snapshot_gets_the_pause_of_the_suspension_around_it() {
        let m = MemoryRecords {
            suspensions: vec![(100, 200), (1_000, 9_000), (10_000, 10_500)],
            ..MemoryRecords::default()
        };
        let at = |ts| {
            SnapshotData::new(&HeapSnapshot {
                ts,
                snapshot: 1,
                gc: 1,
            })
        };
        assert_eq!(m.snapshot_pause(&at(1_500)), Some(8_000));
        assert_eq!(m.snapshot_pause(&at(9_500)), None);
        assert_eq!(m.snapshot_pause(&at(50)), None);
        assert_eq!(m.snapshot_pause(&at(10_500)), Some(500));
    }
}
