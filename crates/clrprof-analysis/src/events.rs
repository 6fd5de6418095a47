//! The events part of a report: what the runtime told the agent, summarized.
//!
//! Built in one pass over the trace's events (in file order, which is each thread's order)
//! by [`EventSummaryBuilder`], then resolved against the trace's names into an
//! [`EventSummary`] that serializes as the report's JSON (documented in
//! `docs/report-json.md`).

use std::collections::{BTreeMap, HashMap};

use clrprof_trace::{Event, EventKind as K};
use serde::Serialize;

use crate::trace::Names;

/// Aggregates events as they are read.
#[derive(Debug, Default)]
pub struct EventSummaryBuilder {
    counts: BTreeMap<u16, u64>,
    /// Per thread: the exception in flight (class, thrower) until its catcher is known.
    in_flight: HashMap<u32, (u64, u64)>,
    exceptions: BTreeMap<(u64, u64, Option<u64>), u64>,
    threads_created: HashMap<u64, u32>,
    threads_destroyed: HashMap<u64, u32>,
    gcs: Vec<GcBuilder>,
    gc_open: HashMap<u32, usize>,
    modules: Vec<(u64, u32)>,
    jit: BTreeMap<u64, u64>,
    inlined: BTreeMap<(u64, u64), u64>,
    transitions: BTreeMap<(u16, u64, u64), u64>,
    suspensions: BTreeMap<u64, SuspensionBuilder>,
    suspend_open: Option<(u64, u64)>,
    classes: Vec<u64>,
    first_ts: Option<u64>,
    last_ts: u64,
}

#[derive(Debug)]
struct GcBuilder {
    start_ns: u64,
    end_ns: Option<u64>,
    generations: u32,
    reason: u64,
}

#[derive(Debug, Default)]
struct SuspensionBuilder {
    count: u64,
    total_ns: u64,
}

impl EventSummaryBuilder {
    /// Takes one event into account.
    pub fn add(&mut self, e: &Event) {
        *self.counts.entry(e.event.0).or_default() += 1;
        self.first_ts.get_or_insert(e.ts);
        self.last_ts = self.last_ts.max(e.ts);
        let a = |i| e.arg(i).unwrap_or(0);
        match e.event {
            K::EXCEPTION_THROWN => {
                // A throw while another is in flight on this thread ends that one uncaught here.
                if let Some((class, thrower)) = self.in_flight.insert(e.tid, (a(1), a(2))) {
                    *self.exceptions.entry((class, thrower, None)).or_default() += 1;
                }
            }
            K::EXCEPTION_CATCHER_ENTER => {
                if let Some((class, thrower)) = self.in_flight.remove(&e.tid) {
                    *self
                        .exceptions
                        .entry((class, thrower, Some(a(0))))
                        .or_default() += 1;
                }
            }
            K::THREAD_CREATED => *self.threads_created.entry(a(0)).or_default() += 1,
            K::THREAD_DESTROYED => *self.threads_destroyed.entry(a(0)).or_default() += 1,
            K::GARBAGE_COLLECTION_STARTED => {
                self.gc_open.insert(e.tid, self.gcs.len());
                self.gcs.push(GcBuilder {
                    start_ns: e.ts,
                    end_ns: None,
                    generations: a(0) as u32,
                    reason: a(1),
                });
            }
            K::GARBAGE_COLLECTION_FINISHED => {
                // Finished comes on the thread that started it; fall back to the latest open one.
                let open = self
                    .gc_open
                    .remove(&e.tid)
                    .or_else(|| self.gcs.iter().rposition(|g| g.end_ns.is_none()));
                if let Some(gc) = open.and_then(|i| self.gcs.get_mut(i)) {
                    gc.end_ns = Some(e.ts);
                }
            }
            K::MODULE_LOAD_FINISHED => self.modules.push((a(0), a(1) as u32)),
            K::JIT_COMPILATION_FINISHED => *self.jit.entry(a(0)).or_default() += 1,
            K::JIT_INLINING => *self.inlined.entry((a(1), a(0))).or_default() += 1,
            K::MANAGED_TO_UNMANAGED_TRANSITION | K::UNMANAGED_TO_MANAGED_TRANSITION => {
                *self.transitions.entry((e.event.0, a(0), a(1))).or_default() += 1;
            }
            K::RUNTIME_SUSPEND_STARTED => {
                self.suspensions.entry(a(0)).or_default().count += 1;
                self.suspend_open = Some((a(0), e.ts));
            }
            K::RUNTIME_RESUME_FINISHED | K::RUNTIME_SUSPEND_ABORTED => {
                if let Some((reason, start)) = self.suspend_open.take() {
                    self.suspensions.entry(reason).or_default().total_ns +=
                        e.ts.saturating_sub(start);
                }
            }
            K::CLASS_LOAD_FINISHED => self.classes.push(a(0)),
            _ => {}
        }
    }

    /// Resolves ids to names.
    pub fn finish(mut self, names: &Names) -> EventSummary {
        for (_, (class, thrower)) in std::mem::take(&mut self.in_flight) {
            *self.exceptions.entry((class, thrower, None)).or_default() += 1;
        }
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
        let mut exceptions: Vec<ExceptionSummary> = self
            .exceptions
            .iter()
            .map(|(&(class, thrower, catcher), &count)| ExceptionSummary {
                exception_type: names.class(class),
                thrown_by: names.function(thrower),
                caught_by: catcher.map(|c| names.function(c)),
                count,
            })
            .collect();
        exceptions.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.exception_type.cmp(&b.exception_type))
        });

        let mut managed: Vec<u64> = self
            .threads_created
            .keys()
            .chain(self.threads_destroyed.keys())
            .copied()
            .collect();
        managed.sort_unstable();
        managed.dedup();
        let mut threads: Vec<ThreadSummary> = managed
            .iter()
            .map(|&id| {
                let tid = names.tid_of_managed(id).unwrap_or(0);
                ThreadSummary {
                    tid,
                    managed_id: id,
                    name: match names.name_of_managed(id) {
                        n if n.is_empty() => names.name_of_tid(tid),
                        n => n,
                    },
                    created: self.threads_created.get(&id).copied().unwrap_or(0),
                    destroyed: self.threads_destroyed.get(&id).copied().unwrap_or(0),
                }
            })
            .collect();
        threads.sort_by_key(|t| (t.tid, t.managed_id));

        let gcs: Vec<GcSummary> = self
            .gcs
            .iter()
            .enumerate()
            .map(|(i, g)| GcSummary {
                index: i as u64 + 1,
                generation: highest_generation(g.generations),
                generations: (0..32).filter(|b| g.generations & (1 << b) != 0).collect(),
                reason: gc_reason_name(g.reason),
                start_ns: g.start_ns,
                duration_ns: g.end_ns.map(|end| end.saturating_sub(g.start_ns)),
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

        let mut jit: Vec<JitSummary> = self
            .jit
            .iter()
            .map(|(&f, &count)| JitSummary {
                name: names.function(f),
                module: names.function_module(f),
                count,
            })
            .collect();
        jit.sort_by(|a, b| a.name.cmp(&b.name));

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

        let mut transitions: Vec<TransitionSummary> = self
            .transitions
            .iter()
            .map(|(&(kind, f, reason), &count)| TransitionSummary {
                function: names.function(f),
                direction: if kind == K::MANAGED_TO_UNMANAGED_TRANSITION.0 {
                    "managed-to-unmanaged"
                } else {
                    "unmanaged-to-managed"
                },
                reason: if reason == 0 { "call" } else { "return" },
                count,
            })
            .collect();
        transitions.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.function.cmp(&b.function))
        });

        let suspensions = self
            .suspensions
            .iter()
            .map(|(&reason, s)| SuspensionSummary {
                reason: suspend_reason_name(reason),
                count: s.count,
                total_ns: s.total_ns,
            })
            .collect();

        let mut classes: Vec<String> = self.classes.iter().map(|&c| names.class(c)).collect();
        classes.sort();
        classes.dedup();

        EventSummary {
            events,
            exceptions,
            threads,
            gcs,
            modules,
            jit,
            inlined,
            transitions,
            suspensions,
            classes,
        }
    }
}

/// Everything the events part of a report says.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventSummary {
    /// Number of events per callback name.
    pub events: BTreeMap<String, u64>,
    /// Exceptions by type, throwing method and catching method.
    pub exceptions: Vec<ExceptionSummary>,
    /// Managed threads created or destroyed while recording.
    pub threads: Vec<ThreadSummary>,
    /// Garbage collections in order.
    pub gcs: Vec<GcSummary>,
    /// Modules loaded, in load order.
    pub modules: Vec<ModuleSummary>,
    /// Methods JIT-compiled, by name.
    pub jit: Vec<JitSummary>,
    /// Methods the JIT inlined into callers.
    pub inlined: Vec<InlinedSummary>,
    /// Managed/unmanaged transitions by function.
    pub transitions: Vec<TransitionSummary>,
    /// Runtime suspensions by reason.
    pub suspensions: Vec<SuspensionSummary>,
    /// Classes loaded, by name.
    pub classes: Vec<String>,
}

/// One kind of exception thrown at one place and caught at one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExceptionSummary {
    /// The exception's class.
    #[serde(rename = "type")]
    pub exception_type: String,
    /// The method that threw it.
    pub thrown_by: String,
    /// The method whose handler caught it; `null` if it was not caught while recording.
    pub caught_by: Option<String>,
    /// How many times.
    pub count: u64,
}

/// A managed thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadSummary {
    /// OS thread id (0 if never learned).
    pub tid: u32,
    /// The runtime's ThreadID.
    pub managed_id: u64,
    /// The thread's name, empty if unnamed.
    pub name: String,
    /// ThreadCreated callbacks for it (0 or 1).
    pub created: u32,
    /// ThreadDestroyed callbacks for it (0 or 1).
    pub destroyed: u32,
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

/// A JIT-compiled method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JitSummary {
    /// The method's display name.
    pub name: String,
    /// Its module's file name.
    pub module: String,
    /// Times it was compiled (tiered compilation compiles hot methods twice).
    pub count: u64,
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

/// Transitions of one function in one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransitionSummary {
    /// The P/Invoke or reverse-P/Invoke method.
    pub function: String,
    /// `managed-to-unmanaged` or `unmanaged-to-managed`.
    pub direction: &'static str,
    /// `call` or `return`.
    pub reason: &'static str,
    /// How many.
    pub count: u64,
}

/// Runtime suspensions for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuspensionSummary {
    /// `gc`, `gc-prep`, `shutdown`, `profiler`, ...
    pub reason: String,
    /// How many.
    pub count: u64,
    /// Time from suspension start to resume end.
    pub total_ns: u64,
}

fn highest_generation(mask: u32) -> u32 {
    (0..=2).rev().find(|g| mask & (1 << g) != 0).unwrap_or(0)
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

/// The last component of a path (either separator).
pub fn file_name(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_string()
}
