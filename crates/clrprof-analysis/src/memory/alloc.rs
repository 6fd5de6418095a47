//! Allocations by type, by allocating method and by allocating stack, and the allocation
//! profile ([`profile`]) that every output format renders, weighted by
//! allocated bytes or objects.
//!
//! With `--alloc all` every allocation is a record and every number is exact. With
//! `--alloc sampled` each record is one sampled allocation of `size` bytes, picked with
//! probability `p = 1 - exp(-size / interval)` (see the agent's `alloc.rs`); it stands for
//! `1/p` allocations and `size/p` bytes, which makes every total an unbiased estimate.
//! A record flagged [`Allocation::TICK`] is one of the runtime's allocation ticks instead: it
//! stands for `size` bytes of its type and an unknown number of objects (counted as 0).

use clrprof_trace::counters::CounterName;
use std::collections::HashMap;

use clrprof_trace::Allocation;
use clrprof_trace::config::AllocMode;
use serde::Serialize;

use crate::builder::ProfileBuilder;
use crate::model::{FrameIndex, Profile, ProfileKind, Sample, SampleKind};
use crate::stack_frames::ModelStacks;
use crate::trace::LoadedTrace;

/// One allocated type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocationRow {
    /// The type's display name, e.g. `byte[]`.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Objects allocated (estimated when sampled).
    pub count: u64,
    /// Bytes allocated (estimated when sampled).
    pub bytes: u64,
    /// True if `count` and `bytes` are estimates from sampling.
    pub estimated: bool,
    /// Objects that went to the large object heap.
    pub large_object_heap: u64,
    /// True if the type is an array.
    pub array: bool,
    /// Arrays: the most elements one of the recorded arrays had (`null` for other types).
    pub array_length_max: Option<u64>,
    /// The methods that allocated it (innermost managed frame), most bytes first.
    pub allocated_by: Vec<AllocatingMethod>,
}

/// A method that allocated a type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocatingMethod {
    /// The method, `Type.Method(args)`.
    pub function: String,
    /// Objects.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Arrays: the most elements one of them had (`null` for other types).
    pub array_length_max: Option<u64>,
}

/// One allocating stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocationStackRow {
    /// The frames, innermost (the allocating method) first.
    pub frames: Vec<String>,
    /// Objects allocated there.
    pub count: u64,
    /// Bytes allocated there.
    pub bytes: u64,
}

/// An allocation method as the configuration names it (`ticks`, `sampled`, `all`).
fn alloc_mode_name<S: serde::Serializer>(mode: &AllocMode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(mode.name())
}

/// The allocation report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocReport {
    /// `All` (exact), `Sampled` or `Ticks` (the runtime's allocation ticks: bytes estimated,
    /// objects not counted).
    #[serde(rename = "allocation_mode", serialize_with = "alloc_mode_name")]
    pub mode: AllocMode,
    /// The mean sampling interval in bytes (0 when every allocation was recorded).
    #[serde(rename = "allocation_interval_bytes")]
    pub interval_bytes: u64,
    /// Allocation records in the trace.
    #[serde(rename = "allocation_records")]
    pub records: u64,
    /// Allocation records the agent dropped (its buffer was full).
    #[serde(rename = "allocations_dropped")]
    pub dropped: u64,
    /// All objects (estimated when sampled).
    #[serde(rename = "allocated_objects")]
    pub total_count: u64,
    /// All bytes (estimated when sampled).
    #[serde(rename = "allocated_bytes")]
    pub total_bytes: u64,
    /// Types, most bytes first.
    #[serde(rename = "allocations")]
    pub types: Vec<AllocationRow>,
    /// Stacks, most bytes first (at most `top` of them).
    #[serde(rename = "allocation_stacks")]
    pub stacks: Vec<AllocationStackRow>,
    /// Allocation records of work the runtime did only for the profiler (its event source's
    /// set-up for the agent's event session): left out of every figure above.
    #[serde(rename = "profiler_allocation_records")]
    pub profiler_records: u64,
    /// The bytes they stand for.
    #[serde(rename = "profiler_allocated_bytes")]
    pub profiler_bytes: u64,
    /// When the runtime's allocation ticks began, nanoseconds into the recording, if that was
    /// after its start: on Linux the GC turns its events on only when it collects, so ticks
    /// read over the diagnostics socket (CoreCLR 3.1) begin at the first collection.
    /// Allocations before it are in no figure.
    #[serde(rename = "allocation_ticks_from_ns")]
    pub ticks_from_ns: Option<u64>,
}

/// Weight of one record: (objects, bytes) it stands for.
pub fn weight(a: &Allocation) -> (f64, f64) {
    if a.flags & Allocation::TICK != 0 {
        // The tick's type stands for the bytes allocated since the previous tick; how many
        // objects that was is unknown.
        return (0.0, a.size as f64);
    }
    if a.interval == 0 || a.size == 0 {
        return (1.0, a.size as f64);
    }
    let p = -(-(a.size as f64) / a.interval as f64).exp_m1();
    (1.0 / p, a.size as f64 / p)
}

#[derive(Default, Clone, Copy)]
struct Sum {
    count: f64,
    bytes: f64,
    loh: f64,
    array_length_max: Option<u64>,
}

impl Sum {
    fn add(&mut self, a: &Allocation) {
        let (c, b) = weight(a);
        self.count += c;
        self.bytes += b;
        if a.flags & Allocation::LARGE_OBJECT_HEAP != 0 {
            self.loh += c;
        }
        if a.flags & Allocation::ARRAY != 0 && a.flags & Allocation::TICK == 0 {
            self.array_length_max = self.array_length_max.max(Some(a.array_length));
        }
    }

    fn merge(&mut self, other: &Sum) {
        self.count += other.count;
        self.bytes += other.bytes;
        self.loh += other.loh;
        self.array_length_max = self.array_length_max.max(other.array_length_max);
    }
}

/// Allocations summed by (stack, class): what every view is made from.
struct Aggregate {
    by_site: HashMap<(u32, u64), Sum>,
    /// The work the runtime did for the profiler: not the program's.
    induced: Sum,
    induced_records: u64,
    arrays: HashMap<u64, bool>,
    sampled: bool,
    ticks: bool,
    interval: u64,
}

fn aggregate(t: &LoadedTrace) -> Aggregate {
    let mut agg = Aggregate {
        by_site: HashMap::new(),
        induced: Sum::default(),
        induced_records: 0,
        arrays: HashMap::new(),
        sampled: false,
        ticks: false,
        interval: 0,
    };
    for a in &t.memory.allocations {
        if t.induced.contains(&a.stack) {
            agg.induced.add(a);
            agg.induced_records += 1;
        } else {
            agg.by_site
                .entry((t.functions_stack(a.stack), a.class))
                .or_default()
                .add(a);
        }
        *agg.arrays.entry(a.class).or_default() |= a.flags & Allocation::ARRAY != 0;
        agg.ticks |= a.flags & Allocation::TICK != 0;
        if a.interval > 0 {
            agg.sampled = true;
            agg.interval = agg.interval.max(a.interval);
        }
    }
    agg
}

fn round(v: f64) -> u64 {
    v.round() as u64
}

/// True if the trace has allocation records (`--alloc`).
pub fn has_allocations(t: &LoadedTrace) -> bool {
    !t.memory.allocations.is_empty()
}

/// The allocation report: every type, and the `top` stacks by bytes.
pub fn report(t: &LoadedTrace, top: usize) -> AllocReport {
    let agg = aggregate(t);
    let mut types: HashMap<u64, (Sum, HashMap<String, Sum>)> = HashMap::new();
    let mut stacks: HashMap<u32, Sum> = HashMap::new();
    let mut total = Sum::default();
    for (&(stack, class), sum) in &agg.by_site {
        let allocator = t
            .stack_path(stack)
            .first()
            .map_or_else(|| "[no managed frame]".to_string(), |&f| t.frame_name(f));
        let (ty, methods) = types.entry(class).or_default();
        for s in [
            &mut *ty,
            methods.entry(allocator).or_default(),
            stacks.entry(stack).or_default(),
            &mut total,
        ] {
            s.merge(sum);
        }
    }
    let mut type_rows: Vec<AllocationRow> = types
        .into_iter()
        .map(|(class, (sum, methods))| {
            let mut allocated_by: Vec<AllocatingMethod> = methods
                .into_iter()
                .map(|(function, s)| AllocatingMethod {
                    function,
                    count: round(s.count),
                    bytes: round(s.bytes),
                    array_length_max: s.array_length_max,
                })
                .collect();
            allocated_by.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.function.cmp(&b.function)));
            AllocationRow {
                type_name: t.names.class(class),
                count: round(sum.count),
                bytes: round(sum.bytes),
                estimated: agg.sampled,
                large_object_heap: round(sum.loh),
                array: agg.arrays.get(&class).copied().unwrap_or(false),
                array_length_max: sum.array_length_max,
                allocated_by,
            }
        })
        .collect();
    type_rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.type_name.cmp(&b.type_name)));
    let mut stack_rows: Vec<AllocationStackRow> = stacks
        .into_iter()
        .map(|(stack, s)| AllocationStackRow {
            frames: t
                .stack_path(stack)
                .into_iter()
                .map(|f| t.frame_name(f))
                .collect(),
            count: round(s.count),
            bytes: round(s.bytes),
        })
        .collect();
    stack_rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.frames.cmp(&b.frames)));
    stack_rows.truncate(top);
    AllocReport {
        mode: if agg.ticks {
            AllocMode::Ticks
        } else if agg.sampled {
            AllocMode::Sampled
        } else {
            AllocMode::All
        },
        interval_bytes: agg.interval,
        records: t.memory.allocations.len() as u64,
        dropped: t.counter(CounterName::AllocationsDropped),
        total_count: round(total.count),
        total_bytes: round(total.bytes),
        types: type_rows,
        stacks: stack_rows,
        profiler_records: agg.induced_records,
        profiler_bytes: round(agg.induced.bytes),
        ticks_from_ns: t
            .counters
            .get(clrprof_trace::protocol::ALLOCATION_TICKS_FROM_COUNTER.as_str())
            .copied(),
    }
}

/// The allocations as a weighted-stack profile ([`ProfileKind::Alloc`]): per thread, one sample
/// per allocating stack and type, weighed by the bytes and objects allocated there
/// (estimated when sampled), the type as a `[type]` frame at the leaf. Every output format
/// renders it as it renders a CPU profile, with the metric `bytes` (default) or `objects`.
pub fn profile(t: &LoadedTrace) -> Profile {
    let mut sites: HashMap<(u32, u32, u64), (Sum, u64)> = HashMap::new();
    let mut induced = Sum::default();
    for a in &t.memory.allocations {
        if t.induced.contains(&a.stack) {
            induced.add(a);
            continue;
        }
        let (sum, first_ns) = sites
            .entry((a.tid, t.functions_stack(a.stack), a.class))
            .or_insert((Sum::default(), a.ts));
        sum.add(a);
        *first_ns = (*first_ns).min(a.ts);
    }
    let mut sites: Vec<_> = sites.into_iter().collect();
    sites.sort_unstable_by_key(|&((tid, stack, class), (_, first))| (tid, first, stack, class));

    let mut b = ProfileBuilder::new(ProfileKind::Alloc);
    let mut model = ModelStacks::new(&t.names, &t.stacks, t.stack_view);
    let mut types: HashMap<u64, FrameIndex> = HashMap::new();
    for ((tid, stack, class), (sum, first_ns)) in sites {
        let name = || format!("[{}]", t.names.class(class));
        let sample = Sample {
            time_ns: first_ns,
            kind: SampleKind::Alloc,
            bytes: round(sum.bytes),
            objects: round(sum.count),
            ..Sample::default()
        };
        model.add_under_type(
            &mut b, &t.names, tid, stack, &mut types, class, name, sample,
        );
    }
    if induced.bytes > 0.0 {
        b.note(format!(
            "{} allocated by the runtime's event source set-up for the profiler's event session are the profiler's, not shown",
            super::text::bytes(round(induced.bytes))
        ));
    }
    let dropped = t.counter(CounterName::AllocationsDropped);
    if dropped > 0 {
        b.note(format!(
            "{dropped} allocation records were dropped (the agent's buffer was full)"
        ));
    }
    t.finish_profile(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_stands_for_its_bytes_and_no_known_objects() {
        let tick = Allocation {
            size: 104_664,
            interval: 100 * 1024,
            flags: Allocation::TICK | Allocation::ARRAY,
            ..Default::default()
        };
        assert_eq!(weight(&tick), (0.0, 104_664.0));
        let mut sum = Sum::default();
        sum.add(&tick);
        assert_eq!(sum.array_length_max, None);
    }

    #[test]
    fn weights_scale_sampled_allocations() {
        let exact = Allocation {
            size: 100,
            interval: 0,
            ..Allocation::default()
        };
        assert_eq!(weight(&exact), (1.0, 100.0));
        let small = Allocation {
            size: 24,
            interval: 1 << 20,
            ..Allocation::default()
        };
        let (c, b) = weight(&small);
        // p ~ size/interval for small objects: one sample stands for ~interval bytes.
        assert!((b - (1 << 20) as f64).abs() < 100.0, "{b}");
        assert!((c - b / 24.0).abs() < 1e-6);
        let huge = Allocation {
            size: 100 << 20,
            interval: 1 << 20,
            ..Allocation::default()
        };
        assert_eq!(weight(&huge), (1.0, (100 << 20) as f64));
    }
}
