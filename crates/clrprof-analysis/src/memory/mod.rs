//! Memory: allocations by type and by stack ([`alloc`]), and garbage collections with their
//! pauses and generation sizes ([`gc`]).
//!
//! The trace loader hands every allocation, generation-size record and GC or suspension event
//! to a [`MemoryRecords`] as it reads the file; the reports are computed from it on demand.

pub mod alloc;
pub mod gc;
pub mod gc_record;
pub mod heap;
pub mod records;
mod snapshot;
pub(crate) mod text;

pub use alloc::{AllocReport, AllocatingMethod, AllocationRow, AllocationStackRow};
pub use gc::{ClassCountRow, GcReport, GcRow};
pub use heap::{
    GenerationRow, HeapDiffRow, HeapReport, HeapTypeRow, Retainer, SnapshotData, StaticRoot,
};
pub use records::{HeapKeep, MemoryRecords};
pub use text::{
    DiffSide, TEXT_ROWS, bytes, write_alloc_text, write_diff_json, write_diff_text, write_gc_text,
    write_heap_text, write_hints, write_unpaired_gc_ends,
};

use crate::Error;
use crate::trace::LoadedTrace;

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

/// The snapshot numbered `number`, or the last complete one.
pub fn snapshot(t: &LoadedTrace, number: Option<u32>) -> Result<&SnapshotData, Error> {
    let found = match number {
        Some(n) => t.memory.snapshots.iter().find(|s| s.number == n),
        None => t.memory.snapshots.iter().rev().find(|s| s.complete),
    };
    if let Some(s) = found.filter(|s| s.released) {
        return Err(Error::NoSuchSnapshot(format!(
            "heap snapshot {} was not loaded (load the trace with HeapKeep naming it)",
            s.number
        )));
    }
    found.ok_or_else(|| {
        let have = t.memory.snapshots.len();
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
    t: &LoadedTrace,
    number: Option<u32>,
    top: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<HeapJson, Error> {
    let s = snapshot(t, number)?;
    Ok(HeapJson {
        snapshots: t.memory.snapshot_summaries(),
        report: heap::analyze(s, &t.names, top, progress),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_trace::{
        Allocation, Event, EventKind, GcGenerations, HeapObject, HeapRoot, HeapSnapshot,
        HeapSnapshotEnd, Record, Writer,
    };

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
            il: Default::default(),
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
        let r = crate::memory::alloc::report(&t, 10);
        assert_eq!(r.mode, clrprof_trace::config::AllocMode::All);
        assert_eq!((r.total_count, r.total_bytes), (5, 3 * 40 + 2 * 124));
        assert_eq!(r.types[0].type_name, "byte[]");
        assert_eq!((r.types[0].count, r.types[0].bytes), (2, 248));
        assert!(!r.types[0].estimated);
        assert_eq!(r.types[1].allocated_by[0].function, "App.Make()");
        assert_eq!(r.stacks[0].frames, ["App.Fill()", "App.Main()"]);
        let (metric, folded) = crate::output::folded_lines(
            &crate::memory::alloc::profile(&t),
            &crate::Query::default(),
            false,
        )
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
        let (_, folded) =
            crate::output::folded_lines(&crate::memory::alloc::profile(&t), &objects, false)
                .unwrap();
        assert_eq!(
            folded,
            [
                "App.Main();App.Fill();[byte[]] 2",
                "App.Main();App.Make();[Node] 3"
            ]
        );
        // pprof: allocation sample types, the type as a label too.
        let p = crate::output::pprof_encode(
            &crate::memory::alloc::profile(&t),
            &crate::Query::default(),
        )
        .unwrap();
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
        let err = crate::output::folded_lines(&crate::memory::alloc::profile(&t), &cpu, false)
            .unwrap_err();
        assert!(
            err.to_string().contains("not available for allocation"),
            "{err}"
        );
    }

    #[test]
    fn sampled_allocations_are_scaled_up() {
        // One sampled 24-byte object with a 1 MiB interval stands for about 1 MiB.
        let t = trace(vec![class(10, "Small"), allocation(10, 24, 0, 1 << 20)]);
        let r = crate::memory::alloc::report(&t, 10);
        assert_eq!(r.mode, clrprof_trace::config::AllocMode::Sampled);
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
            // A finish that ends no started collection is not a collection.
            ev(530, EventKind::GARBAGE_COLLECTION_FINISHED, &[]),
        ]);
        assert_eq!(t.memory.unpaired_gc_ends, 1);
        let r = crate::memory::gc::report(&t);
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
            heap_json(&last, None, 5, &mut |_| {})
                .unwrap()
                .report
                .objects,
            3
        );
        let err = heap_json(&last, Some(1), 5, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("not loaded"), "{err}");
        assert!(heap_json(&last, Some(9), 5, &mut |_| {}).is_err());

        let first = crate::trace::read_with(&bytes[..], HeapKeep::Numbers(vec![1])).unwrap();
        assert_eq!(
            heap_json(&first, Some(1), 5, &mut |_| {})
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
        assert!(heap_json(&none, None, 5, &mut |_| {}).is_err());
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
        let mut m = MemoryRecords::default();
        m.suspensions = vec![(100, 200), (1_000, 9_000), (10_000, 10_500)];
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
