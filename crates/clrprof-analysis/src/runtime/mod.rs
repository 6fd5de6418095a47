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

use clrprof_trace::{Event, EventKind as K, ExceptionInfo};
use serde::Serialize;

pub use activity::{JitKind, JitMethod, JitModule, Load, NativeCalls, Suspensions, ThreadLife};
pub use exceptions::{ExceptionGroup, FunctionCount};
pub use startup::{Startup, StartupLoad};
pub use text::{has_data as text_has_data, write_view};
pub use timeline::{Span, Subject, Timeline, Track};

pub(crate) use activity::load_name;

use crate::trace::Names;

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
    /// Takes one event into account.
    pub fn event(&mut self, e: &Event) {
        let a = |i| e.arg(i).unwrap_or(0);
        let at = (e.tid, e.ts);
        let tl = &mut self.timeline;
        match e.event {
            K::EXCEPTION_THROWN => self.exceptions.thrown(tl, at, a(0), a(1), a(2)),
            K::EXCEPTION_SEARCH_FILTER_ENTER => self.exceptions.filter(e.tid),
            K::EXCEPTION_UNWIND_FINALLY_ENTER => self.exceptions.finally(e.tid, a(0)),
            K::EXCEPTION_UNWIND_FUNCTION_ENTER => self.exceptions.unwind(e.tid),
            K::EXCEPTION_CATCHER_ENTER => self.exceptions.catcher_enter(tl, at, a(0), a(1)),
            K::EXCEPTION_CATCHER_LEAVE => self.exceptions.catcher_leave(tl, e.tid),
            _ => self.activity.add(e, tl),
        }
    }

    /// Takes the details of a thrown exception (they come just before its event).
    pub fn exception_info(&mut self, info: ExceptionInfo) {
        self.exceptions.info(info);
    }

    /// Resolves ids to names.
    pub fn finish(mut self, names: &Names) -> RuntimeViews {
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
}
