//! Allocations by type, by allocating method and by allocating stack, and their exports
//! (folded stacks, flame graph, speedscope, pprof) weighted by allocated bytes.
//!
//! With `--alloc all` every allocation is a record and every number is exact. With
//! `--alloc sampled` each record is one sampled allocation of `size` bytes, picked with
//! probability `p = 1 - exp(-size / interval)` (see the agent's `alloc.rs`); it stands for
//! `1/p` allocations and `size/p` bytes, which makes every total an unbiased estimate.
//! A record flagged [`Allocation::TICK`] is one of the runtime's allocation ticks instead: it
//! stands for `size` bytes of its type and an unknown number of objects (counted as 0).

use std::collections::HashMap;
use std::io::Write;

use clrprof_trace::{Allocation, FrameKind};
use serde::Serialize;

use crate::Error;
use crate::output::{
    LocationTable, SPEEDSCOPE_SCHEMA, StringTable, exporter, folded_frame_name, to_i64,
    write_gzipped, write_json,
};
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

/// The allocation report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocReport {
    /// `all` (exact), `sampled` or `ticks` (the runtime's allocation ticks: bytes estimated,
    /// objects not counted).
    #[serde(rename = "allocation_mode")]
    pub mode: String,
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
    arrays: HashMap<u64, bool>,
    sampled: bool,
    ticks: bool,
    interval: u64,
}

fn aggregate(t: &LoadedTrace) -> Aggregate {
    let mut agg = Aggregate {
        by_site: HashMap::new(),
        arrays: HashMap::new(),
        sampled: false,
        ticks: false,
        interval: 0,
    };
    for a in &t.memory.allocations {
        agg.by_site.entry((a.stack, a.class)).or_default().add(a);
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

impl LoadedTrace {
    /// True if the trace has allocation records (`--alloc`).
    pub fn has_allocations(&self) -> bool {
        !self.memory.allocations.is_empty()
    }

    /// The frames of a stack, innermost first, with their kinds and ids.
    fn stack_path(&self, id: u32) -> Vec<(FrameKind, u64)> {
        let mut out = Vec::new();
        let mut cur = id;
        while cur != 0 && out.len() <= self.stacks.len() {
            let Some(def) = self.stacks.get(&cur) else {
                break;
            };
            out.push((def.frame_kind, def.frame));
            cur = def.parent;
        }
        out
    }

    fn frame_name(&self, (kind, id): (FrameKind, u64)) -> String {
        match kind {
            FrameKind::Managed => self.names.function(id),
            FrameKind::Native => self.names.native_frame(id).0,
            FrameKind::Truncated => "[truncated]".into(),
            FrameKind::Other(_) => "[unknown frame]".into(),
        }
    }

    /// The allocation report: every type, and the `top` stacks by bytes.
    pub fn alloc_report(&self, top: usize) -> AllocReport {
        let agg = aggregate(self);
        let mut types: HashMap<u64, (Sum, HashMap<String, Sum>)> = HashMap::new();
        let mut stacks: HashMap<u32, Sum> = HashMap::new();
        let mut total = Sum::default();
        for (&(stack, class), sum) in &agg.by_site {
            let allocator = self
                .stack_path(stack)
                .first()
                .map_or_else(|| "[no managed frame]".to_string(), |&f| self.frame_name(f));
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
                allocated_by
                    .sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.function.cmp(&b.function)));
                AllocationRow {
                    type_name: self.names.class(class),
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
                frames: self
                    .stack_path(stack)
                    .into_iter()
                    .map(|f| self.frame_name(f))
                    .collect(),
                count: round(s.count),
                bytes: round(s.bytes),
            })
            .collect();
        stack_rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.frames.cmp(&b.frames)));
        stack_rows.truncate(top);
        AllocReport {
            mode: if agg.ticks {
                "ticks"
            } else if agg.sampled {
                "sampled"
            } else {
                "all"
            }
            .into(),
            interval_bytes: agg.interval,
            records: self.memory.allocations.len() as u64,
            dropped: self.counter("allocations_dropped"),
            total_count: round(total.count),
            total_bytes: round(total.bytes),
            types: type_rows,
            stacks: stack_rows,
        }
    }

    /// Allocation stacks as folded lines (`outer;...;inner;[type] bytes`), one per stack and
    /// type, sorted.
    pub fn alloc_folded_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .alloc_sites()
            .into_iter()
            .filter(|s| s.bytes > 0)
            .map(|s| {
                let mut frames = s.frames;
                frames.push(format!("[{}]", s.type_name));
                let cleaned: Vec<_> = frames.iter().map(|f| folded_frame_name(f)).collect();
                format!("{} {}", cleaned.join(";"), s.bytes)
            })
            .collect();
        lines.sort();
        lines
    }

    /// Every (stack, type) with its frames outermost first, count and bytes.
    fn alloc_sites(&self) -> Vec<Site> {
        let agg = aggregate(self);
        agg.by_site
            .iter()
            .map(|(&(stack, class), sum)| {
                let mut frames: Vec<String> = self
                    .stack_path(stack)
                    .into_iter()
                    .map(|f| self.frame_name(f))
                    .collect();
                frames.reverse();
                Site {
                    frames,
                    type_name: self.names.class(class),
                    count: round(sum.count),
                    bytes: round(sum.bytes),
                }
            })
            .collect()
    }

    /// A flame graph (SVG) of allocated bytes.
    pub fn write_alloc_flamegraph(&self, out: &mut dyn Write) -> Result<(), Error> {
        let lines = self.alloc_folded_lines();
        let mut options = inferno::flamegraph::Options::default();
        options.title = "Allocated bytes".into();
        options.count_name = "bytes".into();
        if lines.is_empty() {
            options.title = "Allocated bytes (no allocations recorded)".into();
            let empty = ["[no allocations] 1"];
            inferno::flamegraph::from_lines(&mut options, empty.iter().copied(), out)?;
        } else {
            inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)?;
        }
        Ok(())
    }

    /// speedscope's file format: one sampled profile whose weights are allocated bytes.
    pub fn write_alloc_speedscope(&self, out: &mut dyn Write) -> Result<(), Error> {
        let mut frames: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut samples = Vec::new();
        let mut weights = Vec::new();
        let mut sites = self.alloc_sites();
        sites.sort_by(|a, b| a.frames.cmp(&b.frames).then(a.type_name.cmp(&b.type_name)));
        for s in sites.into_iter().filter(|s| s.bytes > 0) {
            let mut stack = Vec::new();
            for name in s.frames.into_iter().chain([format!("[{}]", s.type_name)]) {
                let next = frames.len();
                let i = *index.entry(name.clone()).or_insert_with(|| {
                    frames.push(name);
                    next
                });
                stack.push(i);
            }
            samples.push(stack);
            weights.push(s.bytes);
        }
        let total: u64 = weights.iter().sum();
        let doc = serde_json::json!({
            "$schema": SPEEDSCOPE_SCHEMA,
            "exporter": exporter(),
            "name": "allocated bytes",
            "activeProfileIndex": 0,
            "shared": { "frames": frames.iter().map(|f| serde_json::json!({"name": f})).collect::<Vec<_>>() },
            "profiles": [{
                "type": "sampled",
                "name": "allocated bytes",
                "unit": "bytes",
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }],
        });
        write_json(&doc, false, out)
    }

    /// pprof (gzipped protobuf) with sample types `alloc_objects/count` and
    /// `alloc_space/bytes` (the default), one sample per stack and type, labelled `type`.
    pub fn write_alloc_pprof(&self, out: &mut dyn Write) -> Result<(), Error> {
        use crate::output::pprof_proto as pb;
        let mut strings = StringTable::new();
        let mut string = |s: &str| strings.string(s);
        let sample_type = vec![
            pb::ValueType {
                r#type: string("alloc_objects"),
                unit: string("count"),
            },
            pb::ValueType {
                r#type: string("alloc_space"),
                unit: string("bytes"),
            },
        ];
        let type_key = string("type");
        let mut table = LocationTable::default();
        let mut location_of: HashMap<String, u64> = HashMap::new();
        let mut samples = Vec::new();
        let mut sites = self.alloc_sites();
        sites.sort_by(|a, b| a.frames.cmp(&b.frames).then(a.type_name.cmp(&b.type_name)));
        for s in sites {
            let mut location_id = Vec::new();
            for name in s.frames.iter().rev() {
                let id = match location_of.get(name) {
                    Some(&id) => id,
                    None => {
                        let id = table.add(string(name), 0);
                        location_of.insert(name.clone(), id);
                        id
                    }
                };
                location_id.push(id);
            }
            samples.push(pb::Sample {
                location_id,
                value: vec![to_i64(s.count), to_i64(s.bytes)],
                label: vec![pb::Label {
                    key: type_key,
                    str: string(&s.type_name),
                    ..pb::Label::default()
                }],
            });
        }
        let default_sample_type = string("alloc_space");
        let comment = vec![string("clrprof allocation profile")];
        let period_type = Some(pb::ValueType {
            r#type: string("alloc_space"),
            unit: string("bytes"),
        });
        let message = pb::Profile {
            sample_type,
            sample: samples,
            location: table.locations,
            function: table.functions,
            string_table: strings.into_vec(),
            period_type,
            comment,
            default_sample_type,
            ..pb::Profile::default()
        };
        write_gzipped(&message, out)
    }
}

struct Site {
    frames: Vec<String>,
    type_name: String,
    count: u64,
    bytes: u64,
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
