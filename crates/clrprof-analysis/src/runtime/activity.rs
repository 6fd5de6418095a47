//! JIT compilations, loads, threads, native calls and runtime suspensions: pairs of
//! started/finished callbacks turned into durations.
//!
//! Pairs are matched per thread (a method's JIT compilation starts and finishes on one
//! thread, so does a P/Invoke call), innermost first; suspensions are process-wide. Every
//! duration is the time between the two callbacks' timestamps, taken by the agent on entry
//! to each callback.

use std::collections::{BTreeMap, HashMap};

use clrprof_trace::{Callback, Event};
use serde::Serialize;

use super::timeline::{Span, Subject, Timeline, Track};
use crate::file_names::file_name;
use crate::names::Names;
use crate::runtime_names::suspend_reason_name;

/// `COR_PRF_TRANSITION_CALL` (the other reason is `COR_PRF_TRANSITION_RETURN`).
const TRANSITION_CALL: u64 = 0;
/// `COR_PRF_CACHED_FUNCTION_FOUND`.
const CACHED_FUNCTION_FOUND: u64 = 0;

/// What kind of code generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JitKind {
    /// A method JIT-compiled from its IL.
    Jit,
    /// A dynamic method (`DynamicMethod`, LCG, IL stubs).
    Dynamic,
    /// A ReJIT of a method.
    Rejit,
    /// Not compiled: the runtime used the method's precompiled (ReadyToRun) code.
    Precompiled,
}

#[derive(Debug, Default)]
struct JitAgg {
    count: u64,
    jit_ns: u64,
    il_bytes: u64,
    failed: u64,
    first_end_ns: Option<u64>,
}

#[derive(Debug, Default)]
struct NativeAgg {
    calls: u64,
    total_ns: u64,
    max_ns: u64,
}

#[derive(Debug, Default)]
struct SuspensionAgg {
    count: u64,
    total_ns: u64,
    max_ns: u64,
    suspending_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct OpenSuspension {
    reason: u64,
    start_ns: u64,
    suspended_ns: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct ThreadTimes {
    created_ns: Option<u64>,
    destroyed_ns: Option<u64>,
    os_tid: u32,
}

/// Builds the JIT, loads, threads, native and suspensions views.
#[derive(Debug, Default)]
pub(crate) struct ActivityBuilder {
    jit_open: HashMap<u32, Vec<(u64, u64, u64, JitKind)>>,
    jit: BTreeMap<(u64, JitKind), JitAgg>,
    /// (end, duration) of every compilation, for the startup view.
    pub(crate) compilations: Vec<(u64, u64)>,
    /// Methods whose precompiled code was used, with their IL size.
    precompiled: BTreeMap<u64, u64>,
    loads_open: HashMap<(&'static str, u64), (u64, u32)>,
    pub(crate) loads: Vec<LoadRecord>,
    threads: BTreeMap<u64, ThreadTimes>,
    native_open: HashMap<u32, Vec<(u64, u64, bool)>>,
    native: BTreeMap<(u64, bool), NativeAgg>,
    suspension: Option<OpenSuspension>,
    suspensions: BTreeMap<u64, SuspensionAgg>,
    last_ns: u64,
}

/// A finished load, before names are resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadRecord {
    pub kind: &'static str,
    pub id: u64,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub status: u32,
    pub tid: u32,
}

/// A load's start (its kind and id) or end (with its HRESULT).
enum LoadStep {
    Started(&'static str, u64),
    Finished(&'static str, u64, u64),
}

fn load_step(c: &Callback) -> Option<LoadStep> {
    use LoadStep::{Finished, Started};
    Some(match *c {
        Callback::AppDomainCreationStarted(c) => Started("appdomain", c.app_domain),
        Callback::AppDomainCreationFinished(c) => Finished("appdomain", c.app_domain, c.hr_status),
        Callback::AssemblyLoadStarted(c) => Started("assembly", c.assembly),
        Callback::AssemblyLoadFinished(c) => Finished("assembly", c.assembly, c.hr_status),
        Callback::ModuleLoadStarted(c) => Started("module", c.module),
        Callback::ModuleLoadFinished(c) => Finished("module", c.module, c.hr_status),
        Callback::ClassLoadStarted(c) => Started("class", c.class),
        Callback::ClassLoadFinished(c) => Finished("class", c.class, c.hr_status),
        _ => return None,
    })
}

impl ActivityBuilder {
    pub fn add(&mut self, e: &Event, tl: &mut Timeline) {
        self.last_ns = self.last_ns.max(e.ts);
        let Some(callback) = Callback::of(e) else {
            return;
        };
        match load_step(&callback) {
            Some(LoadStep::Started(kind, id)) => {
                self.loads_open.insert((kind, id), (e.ts, e.tid));
                return;
            }
            Some(LoadStep::Finished(kind, id, status)) => {
                let (start_ns, tid) = self.loads_open.remove(&(kind, id)).unwrap_or((e.ts, e.tid));
                let duration_ns = e.ts.saturating_sub(start_ns);
                self.loads.push(LoadRecord {
                    kind,
                    id,
                    start_ns,
                    duration_ns,
                    status: status as u32,
                    tid,
                });
                tl.push(Span {
                    track: Track::Thread(tid),
                    category: "load",
                    subject: Subject::Load(kind, id),
                    start_ns,
                    duration_ns,
                });
                return;
            }
            None => {}
        }
        match callback {
            Callback::JITCompilationStarted(c) => {
                self.jit_start(e, c.function, c.il_bytes, JitKind::Jit)
            }
            Callback::DynamicMethodJITCompilationStarted(c) => {
                self.jit_start(e, c.function, 0, JitKind::Dynamic)
            }
            Callback::ReJITCompilationStarted(c) => {
                self.jit_start(e, c.function, 0, JitKind::Rejit)
            }
            Callback::JITCompilationFinished(c) => {
                self.jit_end(e, c.function, c.hr_status, JitKind::Jit, tl)
            }
            Callback::DynamicMethodJITCompilationFinished(c) => {
                self.jit_end(e, c.function, c.hr_status, JitKind::Dynamic, tl)
            }
            Callback::ReJITCompilationFinished(c) => {
                self.jit_end(e, c.function, c.hr_status, JitKind::Rejit, tl)
            }
            Callback::JITCachedFunctionSearchFinished(c) if c.result == CACHED_FUNCTION_FOUND => {
                self.precompiled.insert(c.function, c.il_bytes);
            }
            Callback::ThreadCreated(c) => {
                let t = self.threads.entry(c.thread).or_default();
                t.created_ns.get_or_insert(e.ts);
            }
            Callback::ThreadDestroyed(c) => {
                self.threads.entry(c.thread).or_default().destroyed_ns = Some(e.ts);
            }
            Callback::ThreadAssignedToOSThread(c) => {
                self.threads.entry(c.thread).or_default().os_tid = c.os_thread_id as u32;
            }
            Callback::ManagedToUnmanagedTransition(c) => {
                self.transition(e, tl, true, c.function, c.reason)
            }
            Callback::UnmanagedToManagedTransition(c) => {
                self.transition(e, tl, false, c.function, c.reason)
            }
            Callback::RuntimeSuspendStarted(c) => {
                self.suspension = Some(OpenSuspension {
                    reason: c.reason,
                    start_ns: e.ts,
                    suspended_ns: None,
                });
            }
            Callback::RuntimeSuspendFinished(_) => {
                if let Some(s) = &mut self.suspension {
                    s.suspended_ns.get_or_insert(e.ts);
                }
            }
            Callback::RuntimeResumeFinished(_) | Callback::RuntimeSuspendAborted(_) => {
                if let Some(s) = self.suspension.take() {
                    let d = e.ts.saturating_sub(s.start_ns);
                    let agg = self.suspensions.entry(s.reason).or_default();
                    agg.count += 1;
                    agg.total_ns += d;
                    agg.max_ns = agg.max_ns.max(d);
                    agg.suspending_ns += s.suspended_ns.unwrap_or(e.ts).saturating_sub(s.start_ns);
                    tl.push(Span {
                        track: Track::Suspensions,
                        category: "suspension",
                        subject: Subject::Suspension(s.reason),
                        start_ns: s.start_ns,
                        duration_ns: d,
                    });
                }
            }
            _ => {}
        }
    }

    /// A managed/native transition: a call into native code is a P/Invoke; a call into
    /// managed code from native code is a reverse P/Invoke. Returns close the innermost open
    /// call.
    fn transition(
        &mut self,
        e: &Event,
        tl: &mut Timeline,
        to_native: bool,
        function: u64,
        reason: u64,
    ) {
        let stack = self.native_open.entry(e.tid).or_default();
        if reason == TRANSITION_CALL {
            stack.push((function, e.ts, to_native));
        } else if let Some(pos) = stack
            .iter()
            .rposition(|&(f, _, pinvoke)| f == function && pinvoke != to_native)
        {
            let (f, start, pinvoke) = stack.remove(pos);
            stack.truncate(pos);
            let d = e.ts.saturating_sub(start);
            let agg = self.native.entry((f, pinvoke)).or_default();
            agg.calls += 1;
            agg.total_ns += d;
            agg.max_ns = agg.max_ns.max(d);
            tl.push(Span {
                track: Track::Thread(e.tid),
                category: "native",
                subject: Subject::Function(f),
                start_ns: start,
                duration_ns: d,
            });
        }
    }

    fn jit_start(&mut self, e: &Event, function: u64, il_bytes: u64, kind: JitKind) {
        self.jit_open
            .entry(e.tid)
            .or_default()
            .push((function, e.ts, il_bytes, kind));
    }

    fn jit_end(&mut self, e: &Event, function: u64, hr: u64, kind: JitKind, tl: &mut Timeline) {
        let stack = self.jit_open.entry(e.tid).or_default();
        let Some(pos) = stack
            .iter()
            .rposition(|&(f, _, _, k)| f == function && k == kind)
        else {
            return;
        };
        let (_, start, il_bytes, _) = stack.remove(pos);
        let d = e.ts.saturating_sub(start);
        let agg = self.jit.entry((function, kind)).or_default();
        agg.count += 1;
        agg.jit_ns += d;
        agg.il_bytes = agg.il_bytes.max(il_bytes);
        agg.failed += u64::from(hr & 0x8000_0000 != 0);
        agg.first_end_ns.get_or_insert(e.ts);
        self.compilations.push((e.ts, d));
        tl.push(Span {
            track: Track::Thread(e.tid),
            category: "jit",
            subject: Subject::Function(function),
            start_ns: start,
            duration_ns: d,
        });
    }

    /// When a method's first compilation finished.
    pub fn first_compiled(&self, function: u64) -> Option<u64> {
        [JitKind::Jit, JitKind::Dynamic, JitKind::Rejit]
            .iter()
            .filter_map(|&k| self.jit.get(&(function, k))?.first_end_ns)
            .min()
    }

    pub fn finish(self, names: &Names, tl: &mut Timeline) -> Activity {
        let mut jit: Vec<JitMethod> = self
            .jit
            .iter()
            .map(|(&(f, kind), agg)| JitMethod {
                method: names.function(f),
                module: names.function_module(f),
                kind,
                count: agg.count,
                jit_ns: agg.jit_ns,
                il_bytes: agg.il_bytes,
                failed: agg.failed,
                precompiled: self.precompiled.contains_key(&f),
            })
            .collect();
        // Methods that ran their precompiled code and were never compiled while recording.
        jit.extend(
            self.precompiled
                .iter()
                .filter(|&(&f, _)| self.first_compiled(f).is_none())
                .map(|(&f, &il_bytes)| JitMethod {
                    method: names.function(f),
                    module: names.function_module(f),
                    kind: JitKind::Precompiled,
                    count: 0,
                    jit_ns: 0,
                    il_bytes,
                    failed: 0,
                    precompiled: true,
                }),
        );
        jit.sort_by(|a, b| {
            b.jit_ns
                .cmp(&a.jit_ns)
                .then_with(|| a.method.cmp(&b.method))
        });

        let mut modules: BTreeMap<String, JitModule> = BTreeMap::new();
        for j in jit.iter().filter(|j| j.kind != JitKind::Precompiled) {
            let m = modules
                .entry(j.module.clone())
                .or_insert_with(|| JitModule::named(&j.module));
            m.methods += 1;
            m.compilations += j.count;
            m.jit_ns += j.jit_ns;
            m.il_bytes += j.il_bytes;
        }
        for &f in self.precompiled.keys() {
            let module = names.function_module(f);
            modules
                .entry(module.clone())
                .or_insert_with(|| JitModule::named(&module))
                .precompiled += 1;
        }
        let mut jit_modules: Vec<JitModule> = modules.into_values().collect();
        jit_modules.sort_by(|a, b| {
            b.jit_ns
                .cmp(&a.jit_ns)
                .then_with(|| a.module.cmp(&b.module))
        });

        let loads = self
            .loads
            .iter()
            .map(|l| Load {
                kind: l.kind,
                name: load_name(names, l.kind, l.id),
                start_ns: l.start_ns,
                duration_ns: l.duration_ns,
                status: l.status,
                failed: l.status & 0x8000_0000 != 0,
                tid: l.tid,
            })
            .collect();

        let threads = self
            .threads
            .iter()
            .map(|(&managed_id, t)| {
                let tid = names.tid_of_managed(managed_id).unwrap_or(t.os_tid);
                if tid != 0 {
                    // The thread's life encloses everything else on its track.
                    let start_ns = t.created_ns.unwrap_or(0);
                    let end_ns = t.destroyed_ns.unwrap_or(self.last_ns);
                    tl.push(Span {
                        track: Track::Thread(tid),
                        category: "thread",
                        subject: Subject::Thread(managed_id),
                        start_ns,
                        duration_ns: end_ns.saturating_sub(start_ns),
                    });
                }
                ThreadLife {
                    tid,
                    managed_id,
                    name: match names.name_of_managed(managed_id) {
                        n if n.is_empty() => names.name_of_tid(tid),
                        n => n,
                    },
                    created_ns: t.created_ns,
                    destroyed_ns: t.destroyed_ns,
                    lifetime_ns: match (t.created_ns, t.destroyed_ns) {
                        (Some(c), Some(d)) => Some(d.saturating_sub(c)),
                        _ => None,
                    },
                }
            })
            .collect();

        let mut native: Vec<NativeCalls> = self
            .native
            .iter()
            .map(|(&(f, pinvoke), agg)| {
                let function = names.function(f);
                NativeCalls {
                    target: names.native_target(f),
                    function,
                    direction: if pinvoke {
                        "pinvoke"
                    } else {
                        "reverse-pinvoke"
                    },
                    calls: agg.calls,
                    total_ns: agg.total_ns,
                    max_ns: agg.max_ns,
                }
            })
            .collect();
        native.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.target.cmp(&b.target))
        });

        let suspensions = self
            .suspensions
            .iter()
            .map(|(&reason, agg)| Suspensions {
                reason: suspend_reason_name(reason),
                for_gc: is_gc_suspension(reason),
                count: agg.count,
                total_ns: agg.total_ns,
                max_ns: agg.max_ns,
                suspending_ns: agg.suspending_ns,
            })
            .collect();

        Activity {
            jit,
            jit_modules,
            loads,
            threads,
            native,
            suspensions,
        }
    }
}

/// `COR_PRF_SUSPEND_FOR_GC` and `COR_PRF_SUSPEND_FOR_GC_PREP`.
fn is_gc_suspension(reason: u64) -> bool {
    reason == 1 || reason == 7
}

/// The display name of something loaded.
pub(crate) fn load_name(names: &Names, kind: &str, id: u64) -> String {
    match kind {
        "class" => names.class(id),
        "module" => names
            .modules
            .get(&id)
            .map_or_else(|| format!("[module {id:#x}]"), |m| file_name(&m.path)),
        "assembly" => names
            .assemblies
            .get(&id)
            .map_or_else(|| format!("[assembly {id:#x}]"), |a| a.name.clone()),
        _ => names
            .app_domains
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("[appdomain {id:#x}]")),
    }
}

/// The JIT, loads, threads, native and suspensions views.
#[derive(Debug, Clone, Default)]
pub(crate) struct Activity {
    pub jit: Vec<JitMethod>,
    pub jit_modules: Vec<JitModule>,
    pub loads: Vec<Load>,
    pub threads: Vec<ThreadLife>,
    pub native: Vec<NativeCalls>,
    pub suspensions: Vec<Suspensions>,
}

/// A method's compilations of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JitMethod {
    /// The method's display name.
    pub method: String,
    /// Its module's file name.
    pub module: String,
    /// `jit`, `dynamic`, `rejit`, or `precompiled` (never compiled while recording).
    pub kind: JitKind,
    /// Compilations (tiered compilation compiles a hot method twice).
    pub count: u64,
    /// Time from compilation started to finished, summed.
    pub jit_ns: u64,
    /// Size of the method's IL code (0 if unknown, e.g. dynamic methods).
    pub il_bytes: u64,
    /// Compilations that failed.
    pub failed: u64,
    /// Whether the runtime found precompiled (ReadyToRun) code for the method (a method can be
    /// both: precompiled code first, recompiled when hot).
    pub precompiled: bool,
}

/// JIT totals of one module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JitModule {
    /// The module's file name.
    pub module: String,
    /// Methods JIT-compiled.
    pub methods: u64,
    /// Compilations.
    pub compilations: u64,
    /// Time in the JIT.
    pub jit_ns: u64,
    /// IL bytes compiled (each method once).
    pub il_bytes: u64,
    /// Methods whose precompiled (ReadyToRun) code was used instead.
    pub precompiled: u64,
}

impl JitModule {
    fn named(module: &str) -> JitModule {
        JitModule {
            module: module.to_string(),
            methods: 0,
            compilations: 0,
            jit_ns: 0,
            il_bytes: 0,
            precompiled: 0,
        }
    }
}

/// One load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Load {
    /// `appdomain`, `assembly`, `module` or `class`.
    pub kind: &'static str,
    /// What was loaded.
    pub name: String,
    /// When it started.
    pub start_ns: u64,
    /// Time from started to finished.
    pub duration_ns: u64,
    /// The HRESULT the runtime reported.
    pub status: u32,
    /// Whether the status is a failure.
    pub failed: bool,
    /// The OS thread that loaded it.
    pub tid: u32,
}

/// A managed thread's life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadLife {
    /// OS thread id (0 if never learned).
    pub tid: u32,
    /// The runtime's ThreadID.
    pub managed_id: u64,
    /// The thread's name, empty if unnamed.
    pub name: String,
    /// When `ThreadCreated` came (`null`: before recording started).
    pub created_ns: Option<u64>,
    /// When `ThreadDestroyed` came (`null`: still alive at the end).
    pub destroyed_ns: Option<u64>,
    /// Destroyed minus created, when both are known.
    pub lifetime_ns: Option<u64>,
}

/// Calls through one P/Invoke (or reverse P/Invoke) method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NativeCalls {
    /// The native function, `library!entry_point` (the method's name for reverse P/Invoke).
    pub target: String,
    /// The managed method declaring it.
    pub function: String,
    /// `pinvoke` (managed calls native) or `reverse-pinvoke` (native calls managed).
    pub direction: &'static str,
    /// Completed calls.
    pub calls: u64,
    /// Time from the call's transition to its return transition, summed.
    pub total_ns: u64,
    /// The longest call.
    pub max_ns: u64,
}

/// Runtime suspensions for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suspensions {
    /// `gc`, `gc-prep`, `shutdown`, `profiler`, ...
    pub reason: String,
    /// Whether they were for a garbage collection.
    pub for_gc: bool,
    /// How many.
    pub count: u64,
    /// Time from suspension start to resume end, summed.
    pub total_ns: u64,
    /// The longest.
    pub max_ns: u64,
    /// Of the total, time spent bringing threads to a stop.
    pub suspending_ns: u64,
}
