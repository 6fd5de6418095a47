//! The memory sections of the text report (allocations, collections, a heap snapshot, a
//! diff, the summary line), and the diff's JSON.

use clrprof_trace::counters::CounterName;
use std::io::Write;

use clrprof_trace::config::AllocMode;

use crate::Error;
use crate::trace::LoadedTrace;

use super::{HeapDiffRow, HeapJson, HeapReport};
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
    if !crate::memory::alloc::has_allocations(t) {
        writeln!(out, "Allocations: none recorded (record with --alloc)")?;
        return Ok(());
    }
    let r = crate::memory::alloc::report(t, top);
    let ticks = r.mode == AllocMode::Ticks;
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
        let lost = t.counter(CounterName::AllocationTicksLost);
        if lost > 0 {
            writeln!(
                out,
                "  WARNING: the runtime dropped {} events of its session (its buffers were \
                 full): the ticks stand for less than was allocated.",
                count(lost)
            )?;
        }
        if let Some(from) = r.ticks_from_ns {
            writeln!(
                out,
                "  The ticks began at the runtime's first garbage collection, {} into the \
                 recording: the GC turns its events on only when it collects (CoreCLR 3.1 on \
                 Linux), so what was allocated before is in no figure.",
                crate::units::duration(from)
            )?;
        }
    } else {
        let how = if r.mode == AllocMode::Sampled {
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
    if r.profiler_records > 0 {
        writeln!(
            out,
            "  Not counted: {} in {} records allocated by the runtime's event source set-up \
             for the profiler's event session (the profiler's cost, not the program's).",
            bytes(r.profiler_bytes),
            count(r.profiler_records)
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

/// Says how many `GarbageCollectionFinished` callbacks ended no started collection, which the
/// events count but the collections do not.
pub fn write_unpaired_gc_ends(t: &LoadedTrace, out: &mut dyn Write) -> Result<(), Error> {
    let n = t.memory.unpaired_gc_ends;
    if n > 0 {
        let s = if n == 1 { "" } else { "s" };
        writeln!(
            out,
            "  (and {n} GarbageCollectionFinished without a start, as after a background GC: \
             not collection{s})"
        )?;
    }
    Ok(())
}

/// The text GC section: one line per collection, pause percentiles and time in GC.
pub fn write_gc_text(t: &LoadedTrace, out: &mut dyn Write) -> Result<(), Error> {
    let r = crate::memory::gc::report(t);
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
    write_unpaired_gc_ends(t, out)?;
    writeln!(
        out,
        "  {:>4}  {:>3}  {:<9} {:>11}  {:>11}  {:>11}  {:>21}  {:>21}  {:>21}",
        "#",
        "gen",
        "reason",
        "start",
        "pause",
        "duration",
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
        // The pause needs suspension events; the collection's own duration (start to
        // finish callback, as the full report shows) is known without them.
        let pause = g.pause_ns.map_or_else(|| "-".to_string(), duration);
        let took = g.duration_ns.map_or_else(|| "-".to_string(), duration);
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
            "  {:>4}  {:>3}  {:<9} {:>11}  {:>11}  {:>11}  {:>21}  {:>21}  {:>21}",
            g.index,
            g.generation,
            g.reason,
            duration(g.start_ns),
            pause,
            took,
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
            "\n  pauses unknown (-): record with --events gc,suspension to measure them; \
             duration is from the runtime's start to finish callbacks of each collection"
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
        let name = match &x.static_field {
            Some(field) => format!("{field}: {}", x.type_name),
            None => x.type_name.clone(),
        };
        writeln!(
            out,
            "  #{:<3} {} retains {} (itself {}) at {:#x}",
            i + 1,
            name,
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
    crate::output::write_json(&doc, pretty, out)
}

/// A line at the end of the plain text report pointing at the memory reports the trace has.
pub fn write_hints(t: &LoadedTrace, out: &mut dyn Write) -> Result<(), Error> {
    let mut hints = Vec::new();
    if crate::memory::alloc::has_allocations(t) {
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
