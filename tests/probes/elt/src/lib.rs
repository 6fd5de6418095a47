//! probe-elt: a test profiler for the SDK's enter/leave/tail-call hooks and stack walks.
//!
//! `PROBE_SCENARIO` picks what it does; results go to the file named by `PROBE_OUTPUT`, one
//! tab-separated line per fact, written at `Shutdown`:
//!
//! - `fast`: [`elt::install_hooks`]; counts enter/leave/tail calls per FunctionID in a static
//!   lock-free table (the handlers never allocate). Lines `count\t<function>\t<enter>\t<leave>\t<tail>`.
//! - `fast_mapped`: the same through a function id mapper that hands out dense client ids and
//!   leaves `Calls.Leaf` unhooked; the handlers index the table by client id.
//! - `fast_empty`: the trampolines with no handlers (for timing).
//! - `fast_ret`: hooks that are a single `ret` (the cost floor of the mechanism; for timing).
//! - `fast_noop`: the trampolines calling empty handlers (for timing).
//! - `with_info`: [`elt::install_hooks_with_info`]; for every `FloatMath` method, the first
//!   call's arguments (`enter\t<function>\t<values>`) and return value
//!   (`leave\t<function>\t<value>`), read with `GetFunctionEnter3Info`/`GetFunctionLeave3Info`,
//!   and the hook counts (`calls\t<function>\t<enter>\t<leave>\t<tail>`).
//! - `snapshot`: a `DoStackSnapshot` of the current thread in every `ExceptionThrown`:
//!   `stack\t<frame>|<frame>|...`, innermost first, `[native]` for native runs.
//! - `suspend`: a native sampler thread suspends the runtime, walks every thread and resumes,
//!   30 times, counting the allocations made while suspended (see `sampler`).
//!
//! Every line is `<kind>\t...`; failures are `error\t<where>\t<error>`. Functions are named
//! `Type.Method(params)` by the SDK's [`Namer`].

mod counting_alloc;
mod sampler;
mod table;
mod with_info;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, OnceLock};

use clrprof_sdk::elt::{self, EltHandlers};
use clrprof_sdk::{
    ClientId, EventMask, FunctionId, Namer, ObjectId, Profiler, ProfilerInfo, Result, stack,
};

use table::Table;

#[global_allocator]
static ALLOC: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

/// The probe's CLSID (what `CORECLR_PROFILER` names).
pub const CLSID: &str = "{8E2B6F41-7C3A-4D95-A1E8-2F6B9C0D4E73}";

clrprof_sdk::export_profiler!(EltProbe, CLSID);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    Fast,
    FastMapped,
    FastEmpty,
    FastRet,
    FastNoop,
    WithInfo,
    Snapshot,
    Suspend,
}

impl Scenario {
    fn parse(s: &str) -> Option<Scenario> {
        Some(match s {
            "fast" => Scenario::Fast,
            "fast_mapped" => Scenario::FastMapped,
            "fast_empty" => Scenario::FastEmpty,
            "fast_ret" => Scenario::FastRet,
            "fast_noop" => Scenario::FastNoop,
            "with_info" => Scenario::WithInfo,
            "snapshot" => Scenario::Snapshot,
            "suspend" => Scenario::Suspend,
            _ => return None,
        })
    }
}

static INFO: OnceLock<ProfilerInfo> = OnceLock::new();
static NAMER: LazyLock<Namer> = LazyLock::new(Namer::new);
static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records one output line.
fn emit(line: String) {
    lock(&LINES).push(line);
}

fn error(place: &str, e: impl std::fmt::Display) {
    emit(format!("error\t{place}\t{e}"));
}

/// `Type.Method(params)`, or a placeholder saying why not.
fn name(info: &ProfilerInfo, function: FunctionId) -> String {
    if function.is_null() {
        return "[native]".to_string();
    }
    match NAMER.get_function_name(info, function) {
        Ok(n) => n.full_name(),
        Err(e) => format!("[{function} {e}]"),
    }
}

fn write_output() {
    let Some(path) = std::env::var_os("PROBE_OUTPUT") else {
        return;
    };
    let mut text = lock(&LINES).join("\n");
    text.push('\n');
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("probe-elt: cannot write {}: {e}", path.to_string_lossy());
    }
}

#[derive(Default)]
struct EltProbe {
    scenario: OnceLock<Scenario>,
}

impl Profiler for EltProbe {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        let requested = std::env::var("PROBE_SCENARIO").unwrap_or_default();
        let Some(scenario) = Scenario::parse(&requested) else {
            error(
                "initialize",
                format!("unknown PROBE_SCENARIO {requested:?}"),
            );
            write_output();
            return Ok(());
        };
        let _ = self.scenario.set(scenario);
        let _ = INFO.set(info.clone());
        let result = match scenario {
            Scenario::Fast => start_fast(&info, false),
            Scenario::FastMapped => start_fast(&info, true),
            Scenario::FastEmpty => info
                .set_event_mask(EventMask::MONITOR_ENTERLEAVE)
                .and_then(|()| elt::install_hooks(&info, EltHandlers::default())),
            Scenario::FastRet => info
                .set_event_mask(EventMask::MONITOR_ENTERLEAVE)
                .and_then(|()| elt::install_noop_hooks(&info)),
            Scenario::FastNoop => {
                info.set_event_mask(EventMask::MONITOR_ENTERLEAVE)
                    .and_then(|()| {
                        elt::install_hooks(
                            &info,
                            EltHandlers {
                                enter: Some(|_, _| {}),
                                leave: Some(|_, _| {}),
                                tailcall: Some(|_, _| {}),
                            },
                        )
                    })
            }
            Scenario::WithInfo => with_info::start(&info),
            Scenario::Snapshot => info
                .set_event_mask(EventMask::MONITOR_EXCEPTIONS | EventMask::ENABLE_STACK_SNAPSHOT),
            Scenario::Suspend => sampler::start(&info),
        };
        if let Err(e) = result {
            error("initialize", e);
        }
        emit(format!("scenario\t{requested}"));
        Ok(())
    }

    fn exception_thrown(&self, _exception: ObjectId) -> Result<()> {
        if self.scenario.get() == Some(&Scenario::Snapshot)
            && let Some(info) = INFO.get()
        {
            match stack::current_stack(info) {
                Ok(frames) => {
                    let names: Vec<String> =
                        frames.iter().map(|f| name(info, f.function)).collect();
                    emit(format!("stack\t{}", names.join("|")));
                }
                Err(e) => error("current_stack", e),
            }
        }
        Ok(())
    }

    fn shutdown(&self) -> Result<()> {
        let Some(&scenario) = self.scenario.get() else {
            return Ok(());
        };
        let info = INFO.get().expect("set in initialize");
        match scenario {
            Scenario::Fast
            | Scenario::FastMapped
            | Scenario::FastEmpty
            | Scenario::FastRet
            | Scenario::FastNoop => report_fast(info),
            Scenario::WithInfo => with_info::report(info),
            Scenario::Snapshot => {}
            Scenario::Suspend => sampler::stop_and_wait(),
        }
        let stats = elt::stats();
        emit(format!(
            "stats\thandler_panics={}\tmapper_panics={}\tmapper_zero_ids={}\tsdk_panics={}",
            stats.handler_panics,
            stats.mapper_panics,
            stats.mapper_zero_ids,
            clrprof_sdk::panics_caught()
        ));
        write_output();
        Ok(())
    }
}

// ----- fast path: counts per function -----

static COUNTS: Table = Table::new();
/// The next dense client id of `fast_mapped` (0 is never handed out).
static NEXT_CLIENT_ID: AtomicUsize = AtomicUsize::new(1);

fn start_fast(info: &ProfilerInfo, mapped: bool) -> Result<()> {
    info.set_event_mask(EventMask::MONITOR_ENTERLEAVE)?;
    let handlers = if mapped {
        elt::set_function_id_mapper(info, map_dense)?;
        EltHandlers {
            enter: Some(|id, _| count_at(id, |s| &s.enter)),
            leave: Some(|id, _| count_at(id, |s| &s.leave)),
            tailcall: Some(|id, _| count_at(id, |s| &s.tailcall)),
        }
    } else {
        EltHandlers {
            enter: Some(|id, _| count_by_key(id, |s| &s.enter)),
            leave: Some(|id, _| count_by_key(id, |s| &s.leave)),
            tailcall: Some(|id, _| count_by_key(id, |s| &s.tailcall)),
        }
    };
    elt::install_hooks(info, handlers)
}

fn count_by_key(id: ClientId, which: fn(&table::Slot) -> &std::sync::atomic::AtomicU64) {
    if let Some(slot) = COUNTS.slot(id.0) {
        which(slot).fetch_add(1, Ordering::Relaxed);
    }
}

fn count_at(id: ClientId, which: fn(&table::Slot) -> &std::sync::atomic::AtomicU64) {
    if let Some(slot) = COUNTS.at(id.0) {
        which(slot).fetch_add(1, Ordering::Relaxed);
    }
}

/// `fast_mapped`'s mapper: a dense client id per function, `Calls.Leaf` left unhooked.
fn map_dense(function: FunctionId) -> Option<usize> {
    let info = INFO.get()?;
    if let Ok(n) = NAMER.get_function_name(info, function)
        && n.qualified_name() == "Calls.Leaf"
    {
        return None;
    }
    let id = NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed);
    COUNTS.set_key(id, function.0).then_some(id)
}

fn report_fast(info: &ProfilerInfo) {
    let (mut enter, mut leave, mut tail, mut functions) = (0, 0, 0, 0);
    for slot in COUNTS.used() {
        let e = slot.enter.load(Ordering::Relaxed);
        let l = slot.leave.load(Ordering::Relaxed);
        let t = slot.tailcall.load(Ordering::Relaxed);
        enter += e;
        leave += l;
        tail += t;
        functions += 1;
        let function = FunctionId(slot.key());
        emit(format!("count\t{}\t{e}\t{l}\t{t}", name(info, function)));
    }
    emit(format!(
        "summary\tfunctions={functions}\tenter={enter}\tleave={leave}\ttail={tail}\toverflow={}\tclient_ids={}",
        COUNTS.overflow(),
        NEXT_CLIENT_ID.load(Ordering::Relaxed) - 1
    ));
}
