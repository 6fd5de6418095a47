//! The events part of a report: what the runtime told the agent, summarized.
//!
//! Built in one pass over the trace's events (in file order, which is each thread's order)
//! by [`EventSummaryBuilder`], then resolved against the trace's names into an
//! [`EventSummary`] that serializes as the report's JSON (documented in
//! `docs/report-json.md`).

use std::collections::BTreeMap;

use clrprof_trace::{Callback, Event, EventKind as K};
use serde::Serialize;

use crate::file_names::file_name;
use crate::memory::gc_record::GcRecord;
use crate::names::Names;
use crate::runtime_names::{gc_reason_name, generations_in, highest_generation};

/// Aggregates events as they are read.
#[derive(Debug, Default)]
pub struct EventSummaryBuilder {
    counts: BTreeMap<u16, u64>,
    modules: Vec<(u64, u32)>,
    inlined: BTreeMap<(u64, u64), u64>,
    classes: Vec<u64>,
}

impl EventSummaryBuilder {
    /// Takes one event into account.
    pub fn add(&mut self, e: &Event) {
        *self.counts.entry(e.event.0).or_default() += 1;
        match Callback::of(e) {
            Some(Callback::ModuleLoadFinished(c)) => {
                self.modules.push((c.module, c.hr_status as u32))
            }
            Some(Callback::JITInlining(c)) => {
                *self.inlined.entry((c.callee, c.caller)).or_default() += 1
            }
            Some(Callback::ClassLoadFinished(c)) => self.classes.push(c.class),
            _ => {}
        }
    }

    /// Resolves ids to names; the collections are the ones the memory records paired, the
    /// counters the agent's (which say how many events of each kind it dropped).
    pub fn finish(
        self,
        names: &Names,
        collections: &[GcRecord],
        counters: &BTreeMap<String, u64>,
    ) -> EventSummary {
        let lost: BTreeMap<String, u64> = counters
            .iter()
            .filter_map(|(name, &n)| {
                let kind = K::of_dropped_counter(name)?;
                let name = kind
                    .name()
                    .map_or_else(|| format!("event{}", kind.0), str::to_string);
                (n > 0).then_some((name, n))
            })
            .collect();
        let ends_lost = lost.contains_key("GarbageCollectionFinished");
        let events = self
            .counts
            .iter()
            .map(|(&k, &n)| {
                (
                    K(k).name()
                        .map_or_else(|| format!("event{k}"), str::to_string),
                    n,
                )
            })
            .collect();
        let gcs: Vec<GcSummary> = collections
            .iter()
            .enumerate()
            .map(|(i, g)| GcSummary {
                index: i as u64 + 1,
                generation: highest_generation(g.generations_mask),
                generations: generations_in(g.generations_mask),
                reason: gc_reason_name(g.reason),
                start_ns: g.start_ns,
                duration_ns: g.end_ns.map(|end| end.saturating_sub(g.start_ns)),
                end_lost: g.end_ns.is_none() && ends_lost,
            })
            .collect();

        let modules = self
            .modules
            .iter()
            .map(|&(id, hr)| {
                let def = names.modules.get(&id);
                ModuleSummary {
                    path: def.map(|m| m.path.clone()).unwrap_or_default(),
                    name: def.map_or_else(|| format!("{id:#x}"), |m| file_name(&m.path)),
                    assembly: def.map(|m| m.assembly_name.clone()).unwrap_or_default(),
                    status: hr,
                }
            })
            .collect();

        let mut inlined: Vec<InlinedSummary> = self
            .inlined
            .iter()
            .map(|(&(callee, caller), &count)| InlinedSummary {
                callee: names.function(callee),
                caller: names.function(caller),
                count,
            })
            .collect();
        inlined.sort_by(|a, b| {
            a.callee
                .cmp(&b.callee)
                .then_with(|| a.caller.cmp(&b.caller))
        });

        let mut classes: Vec<String> = self.classes.iter().map(|&c| names.class(c)).collect();
        classes.sort();
        classes.dedup();

        EventSummary {
            events,
            lost,
            gcs,
            modules,
            inlined,
            classes,
        }
    }
}

/// Everything the events part of a report says.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventSummary {
    /// Number of events per callback name.
    pub events: BTreeMap<String, u64>,
    /// Events the agent dropped (its buffer was full), per callback name: every figure made
    /// from such events misses them.
    pub lost: BTreeMap<String, u64>,
    /// Garbage collections in order.
    pub gcs: Vec<GcSummary>,
    /// Modules loaded, in load order.
    pub modules: Vec<ModuleSummary>,
    /// Methods the JIT inlined into callers.
    pub inlined: Vec<InlinedSummary>,
    /// Classes loaded, by name.
    pub classes: Vec<String>,
}

/// One garbage collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcSummary {
    /// 1-based position.
    pub index: u64,
    /// The highest small-object generation collected (0, 1 or 2).
    pub generation: u32,
    /// Every generation collected (3 is the large object heap).
    pub generations: Vec<u32>,
    /// `induced` or `other`.
    pub reason: String,
    /// Start, nanoseconds since the session started.
    pub start_ns: u64,
    /// Duration, if its end was recorded.
    pub duration_ns: Option<u64>,
    /// Its end is not known because the agent dropped `GarbageCollectionFinished` events.
    pub end_lost: bool,
}

/// A module load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleSummary {
    /// The file name.
    pub name: String,
    /// The full path.
    pub path: String,
    /// The assembly's name.
    pub assembly: String,
    /// The load's HRESULT (0 = success).
    pub status: u32,
}

/// A method inlined into a caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InlinedSummary {
    /// The inlined method.
    pub callee: String,
    /// The method it was inlined into.
    pub caller: String,
    /// Times the JIT reported it.
    pub count: u64,
}
