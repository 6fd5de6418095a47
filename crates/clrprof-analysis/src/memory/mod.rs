//! Memory: allocations by type and by stack ([`alloc`]), and garbage collections with their
//! pauses and generation sizes ([`gc`]).
//!
//! The trace loader hands every allocation, generation-size record and GC or suspension event
//! to a [`MemoryRecords`] as it reads the file; the reports are computed from it on demand.

pub mod alloc;
pub mod gc;

use clrprof_trace::{Allocation, Event, EventKind, GcGenerations};

pub use alloc::{AllocReport, AllocatingMethod, AllocationRow, AllocationStackRow};
pub use gc::{GcReport, GcRow};

/// What the loader keeps of a trace for the memory reports.
#[derive(Debug, Default)]
pub struct MemoryRecords {
    /// Every `Allocation` record, in file order.
    pub allocations: Vec<Allocation>,
    /// Collections, in the order they started.
    pub gcs: Vec<gc::GcRecord>,
    /// Runtime suspensions: (start, end) of each from `RuntimeSuspendStarted` to
    /// `RuntimeResumeFinished`.
    pub suspensions: Vec<(u64, u64)>,
    open_gcs: Vec<usize>,
    open_suspension: Option<u64>,
    sizes_before: Option<Vec<u64>>,
    sizes_after: Option<Vec<u64>>,
}

impl MemoryRecords {
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
                    after: None,
                });
            }
            EventKind::GARBAGE_COLLECTION_FINISHED => {
                if let Some(i) = self.open_gcs.pop() {
                    let g = &mut self.gcs[i];
                    g.end_ns = Some(e.ts);
                    g.after = self.sizes_after.take();
                }
            }
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
    writeln!(
        out,
        "\n  {:>12}  {:>12}  {:>6}  type / allocated by",
        "objects", "bytes", "%"
    )?;
    for row in r.types.iter().take(top) {
        let share = if r.total_bytes == 0 {
            0.0
        } else {
            row.bytes as f64 * 100.0 / r.total_bytes as f64
        };
        let loh = if row.large_object_heap > 0 {
            format!(
                "  ({} on the large object heap)",
                count(row.large_object_heap)
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "  {:>12}  {:>12}  {:>5.1}%  {}{loh}",
            count(row.count),
            bytes(row.bytes),
            share,
            row.type_name
        )?;
        for m in row.allocated_by.iter().take(3) {
            writeln!(
                out,
                "  {:>12}  {:>12}           {}",
                count(m.count),
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
            count(s.count),
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
    Ok(())
}
