//! The runtime's own story of a run, from its profiler callbacks: exceptions from throw to
//! catcher, JIT compilations, loads, threads, native calls, runtime suspensions, a startup
//! view, and the timeline of all of them.
//!
//! [`RuntimeBuilder`] takes the trace's events (and `ExceptionInfo` records) in file order,
//! which is each thread's order, and keeps only aggregates and a bounded list of spans;
//! [`RuntimeBuilder::finish`] resolves ids into the [`RuntimeViews`] that the report shows as
//! text and JSON (`docs/report-json.md`) and draws as a timeline.

mod activity;
mod exceptions;
mod startup;
mod text;
pub mod timeline;

use std::collections::BTreeMap;

use clrprof_trace::{Callback, Event, ExceptionInfo};
use serde::Serialize;

pub use activity::{JitKind, JitMethod, JitModule, Load, NativeCalls, Suspensions, ThreadLife};
pub use exceptions::{ExceptionGroup, FunctionCount};
pub use startup::{Startup, StartupLoad};
pub use text::{has_data as text_has_data, write_view};
pub use timeline::{Span, Subject, Timeline, Track};

pub(crate) use activity::load_name;

use crate::memory::gc_record::GcRecord;
use crate::names::Names;

/// One view of the runtime's activity, as `clrprof report --exceptions` etc. select it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Exceptions by type, throw site and catcher.
    Exceptions,
    /// JIT compilations, per method and module, and the startup view.
    Jit,
    /// App domain, assembly, module and class loads.
    Loads,
    /// Managed threads and their lifetimes.
    Threads,
    /// Calls between managed and native code.
    Native,
    /// Runtime suspensions.
    Suspensions,
}

impl View {
    /// Every view.
    pub const ALL: [View; 6] = [
        View::Exceptions,
        View::Jit,
        View::Loads,
        View::Threads,
        View::Native,
        View::Suspensions,
    ];

    /// The view's name, as `report --view` takes it and as its own option is spelled
    /// (`jit`: `--jit`).
    pub fn name(self) -> &'static str {
        match self {
            View::Exceptions => "exceptions",
            View::Jit => "jit",
            View::Loads => "loads",
            View::Threads => "threads",
            View::Native => "native",
            View::Suspensions => "suspensions",
        }
    }

    /// What the view shows, for messages.
    pub fn noun(self) -> &'static str {
        match self {
            View::Exceptions => "exceptions",
            View::Jit => "JIT compilations",
            View::Loads => "loads",
            View::Threads => "thread events",
            View::Native => "native calls",
            View::Suspensions => "runtime suspensions",
        }
    }

    /// The `--events` categories that record what the view shows.
    pub fn event_categories(self) -> &'static str {
        match self {
            View::Exceptions => "exception",
            View::Jit => "jit",
            View::Loads => "appdomain,assembly,module,class",
            View::Threads => "thread",
            View::Native => "transition",
            View::Suspensions => "suspension",
        }
    }
}

/// Aggregates the runtime's events as they are read.
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    exceptions: exceptions::ExceptionBuilder,
    activity: activity::ActivityBuilder,
    timeline: Timeline,
}

impl RuntimeBuilder {
    /// A contended lock acquisition: a `lock` span on the waiting thread, for the timeline.
    pub fn contention(&mut self, c: &clrprof_trace::Contention) {
        self.timeline.push(Span {
            track: Track::Thread(c.tid),
            category: "lock",
            subject: Subject::Lock(c.class),
            start_ns: c.ts,
            duration_ns: c.duration_ns,
        });
    }

    /// Takes one event into account.
    pub fn event(&mut self, e: &Event) {
        let at = (e.tid, e.ts);
        let tl = &mut self.timeline;
        match Callback::of(e) {
            Some(Callback::ExceptionThrown(c)) => {
                self.exceptions
                    .thrown(tl, at, c.object, c.class, c.throwing_function)
            }
            Some(Callback::ExceptionSearchFilterEnter(_)) => self.exceptions.filter(e.tid),
            Some(Callback::ExceptionUnwindFinallyEnter(c)) => {
                self.exceptions.finally(e.tid, c.function)
            }
            Some(Callback::ExceptionUnwindFunctionEnter(_)) => self.exceptions.unwind(e.tid),
            Some(Callback::ExceptionCatcherEnter(c)) => {
                self.exceptions.catcher_enter(tl, at, c.function, c.object)
            }
            Some(Callback::ExceptionCatcherLeave(_)) => self.exceptions.catcher_leave(tl, e.tid),
            _ => self.activity.add(e, tl),
        }
    }

    /// Takes the details of a thrown exception (they come just before its event).
    pub fn exception_info(&mut self, info: ExceptionInfo) {
        self.exceptions.info(info);
    }

    /// Resolves ids to names; `collections` (paired by the memory records) become the
    /// timeline's GC track.
    pub fn finish(mut self, names: &Names, collections: &[GcRecord]) -> RuntimeViews {
        for g in collections {
            if let Some(end) = g.end_ns {
                self.timeline.push(Span {
                    track: Track::Gc,
                    category: "gc",
                    subject: Subject::Gc(g.generations_mask, g.reason),
                    start_ns: g.start_ns,
                    duration_ns: end.saturating_sub(g.start_ns),
                });
            }
        }
        let startup = startup::startup(names, &self.activity);
        let exceptions = self.exceptions.finish(&mut self.timeline, names);
        let activity = self.activity.finish(names, &mut self.timeline);
        RuntimeViews {
            exceptions,
            jit: activity.jit,
            jit_modules: activity.jit_modules,
            startup,
            loads: activity.loads,
            threads: activity.threads,
            native: activity.native,
            suspensions: activity.suspensions,
            timeline: self.timeline,
            events_lost: BTreeMap::new(),
        }
    }
}

/// Everything the runtime views say.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RuntimeViews {
    /// Exceptions grouped by type, throwing method and catching method.
    pub exceptions: Vec<ExceptionGroup>,
    /// Methods compiled, most JIT time first.
    pub jit: Vec<JitMethod>,
    /// JIT totals per module.
    pub jit_modules: Vec<JitModule>,
    /// What happened before `Main` ran (`null` if the entry point was not found).
    pub startup: Option<Startup>,
    /// Loads in the order they finished.
    pub loads: Vec<Load>,
    /// Managed threads.
    pub threads: Vec<ThreadLife>,
    /// Native calls by target, most time first.
    pub native: Vec<NativeCalls>,
    /// Runtime suspensions by reason.
    pub suspensions: Vec<Suspensions>,
    /// The spans for the timeline view.
    #[serde(skip)]
    pub timeline: Timeline,
    /// Events the agent dropped, per callback name (the events summary's `lost`): the views
    /// made of those kinds miss them.
    #[serde(skip)]
    pub events_lost: BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use clrprof_trace::{EventKind as K, FunctionDef};

    use super::*;

    const THROW: u64 = 0x10;
    const MIDDLE: u64 = 0x20;
    const CATCH: u64 = 0x30;
    const PINVOKE: u64 = 0x40;

    fn names() -> Names {
        let mut names = Names::default();
        for (id, name) in [
            (THROW, "Throw"),
            (MIDDLE, "Middle"),
            (CATCH, "Catch"),
            (PINVOKE, "Abs"),
        ] {
            names.functions.insert(
                id,
                FunctionDef {
                    id,
                    type_name: "T".into(),
                    method_name: name.into(),
                    signature: "()".into(),
                    ..FunctionDef::default()
                },
            );
        }
        names
    }

    fn run(events: &[(u64, u32, K, &[u64])]) -> RuntimeViews {
        let mut b = RuntimeBuilder::default();
        for &(ts, tid, kind, args) in events {
            b.event(&Event::new(ts, tid, kind, args));
        }
        b.finish(&names(), &[])
    }

    #[test]
    fn a_rethrow_is_the_same_exception_and_its_last_catcher_counts() {
        let v = run(&[
            (10, 1, K::EXCEPTION_THROWN, &[0xA, 7, THROW]),
            (11, 1, K::EXCEPTION_SEARCH_FILTER_ENTER, &[CATCH]),
            (12, 1, K::EXCEPTION_UNWIND_FUNCTION_ENTER, &[THROW]),
            (13, 1, K::EXCEPTION_UNWIND_FINALLY_ENTER, &[MIDDLE]),
            (14, 1, K::EXCEPTION_CATCHER_ENTER, &[MIDDLE, 0xA]),
            (15, 1, K::EXCEPTION_THROWN, &[0xA, 7, MIDDLE]),
            (20, 1, K::EXCEPTION_CATCHER_ENTER, &[CATCH, 0xA]),
            (21, 1, K::EXCEPTION_CATCHER_LEAVE, &[]),
        ]);
        assert_eq!(v.exceptions.len(), 1, "{:#?}", v.exceptions);
        let g = &v.exceptions[0];
        assert_eq!(g.count, 1);
        assert_eq!(g.rethrows, 1);
        assert_eq!(g.rethrow_functions[0].function, "T.Middle()");
        assert_eq!(g.throw_function, "T.Throw()");
        assert_eq!(g.catch_function.as_deref(), Some("T.Catch()"));
        assert_eq!((g.filters_run, g.frames_unwound), (1, 1));
        assert_eq!(g.finally_blocks[0].function, "T.Middle()");
        assert_eq!(g.throw_to_catch_ns, 10);
    }

    #[test]
    fn a_throw_inside_a_finally_is_a_new_exception_and_the_first_may_stay_uncaught() {
        let v = run(&[
            (10, 1, K::EXCEPTION_THROWN, &[0xA, 7, THROW]),
            (11, 1, K::EXCEPTION_UNWIND_FINALLY_ENTER, &[MIDDLE]),
            // The finally block throws another exception, caught by Catch.
            (12, 1, K::EXCEPTION_THROWN, &[0xB, 8, MIDDLE]),
            (13, 1, K::EXCEPTION_CATCHER_ENTER, &[CATCH, 0xB]),
            (14, 1, K::EXCEPTION_CATCHER_LEAVE, &[]),
            // Another thread's exception is never caught.
            (15, 2, K::EXCEPTION_THROWN, &[0xC, 7, THROW]),
        ]);
        let caught: Vec<_> = v
            .exceptions
            .iter()
            .filter(|g| g.catch_function.is_some())
            .collect();
        assert_eq!(caught.len(), 1);
        assert_eq!(caught[0].throw_function, "T.Middle()");
        assert_eq!(caught[0].finally_blocks.len(), 0);
        let uncaught: Vec<_> = v
            .exceptions
            .iter()
            .filter(|g| g.catch_function.is_none())
            .collect();
        // 0xA was replaced by 0xB (its catcher caught 0xB, not 0xA), and 0xC was not caught.
        assert_eq!(uncaught.iter().map(|g| g.count).sum::<u64>(), 2);
        let first = uncaught
            .iter()
            .find(|g| g.finally_blocks.len() == 1)
            .unwrap();
        assert_eq!(first.finally_blocks[0].function, "T.Middle()");
    }

    #[test]
    fn native_calls_pair_per_thread_and_unmatched_returns_are_ignored() {
        let (m2u, u2m) = (
            K::MANAGED_TO_UNMANAGED_TRANSITION,
            K::UNMANAGED_TO_MANAGED_TRANSITION,
        );
        let v = run(&[
            (10, 1, m2u, &[PINVOKE, 0]),
            (11, 2, m2u, &[PINVOKE, 0]),
            (15, 1, u2m, &[PINVOKE, 1]),
            (31, 2, u2m, &[PINVOKE, 1]),
            (40, 1, u2m, &[PINVOKE, 1]),
        ]);
        assert_eq!(v.native.len(), 1);
        let n = &v.native[0];
        assert_eq!((n.calls, n.total_ns, n.max_ns), (2, 25, 20));
        assert_eq!(n.direction, "pinvoke");
        assert_eq!(
            n.target, "T.Abs()",
            "no NativeTarget definition: the method's name"
        );
        assert_eq!(v.timeline.spans.len(), 2);
    }

    #[test]
    fn jit_time_and_il_size_per_method() {
        let v = run(&[
            (10, 1, K::JIT_COMPILATION_STARTED, &[THROW, 1, 9]),
            (12, 1, K::JIT_COMPILATION_STARTED, &[MIDDLE, 1, 30]),
            (15, 1, K::JIT_COMPILATION_FINISHED, &[MIDDLE, 0, 1]),
            (20, 1, K::JIT_COMPILATION_FINISHED, &[THROW, 0, 1]),
        ]);
        let throw = v.jit.iter().find(|j| j.method == "T.Throw()").unwrap();
        assert_eq!((throw.count, throw.jit_ns, throw.il_bytes), (1, 10, 9));
        let middle = v.jit.iter().find(|j| j.method == "T.Middle()").unwrap();
        assert_eq!((middle.jit_ns, middle.il_bytes), (3, 30));
        assert_eq!(v.jit_modules[0].methods, 2);
        assert_eq!(v.startup, None, "no module file, no entry point");
    }
}
