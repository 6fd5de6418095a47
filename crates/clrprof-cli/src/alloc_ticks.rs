//! `record --alloc ticks` and `attach --alloc`: allocation samples from the runtime's own `GCAllocationTick`
//! events instead of the profiling API's `ObjectAllocated` callback (which sends every
//! allocation through the runtime's slow path).
//!
//! Who reads them is the agent's decision, which it sends right after its `SessionStart`
//! ([`TickReader`]): where the runtime offers in-process EventPipe sessions
//! (`ICorProfilerInfo12`, .NET 5 and later) the agent reads the ticks itself, with its own
//! stacks of the allocating threads, and writes them among its records (the agent's
//! `alloc_ticks.rs`); nothing is left to do here, and the program needs no diagnostics socket.
//! Otherwise (CoreCLR 3.1) the CLI reads them over the diagnostics socket:
//!
//! A thread waits for the program's diagnostics socket and starts an EventPipe session with
//! the runtime provider's GC keyword at verbose level (`event_session.rs`): the runtime then
//! writes a `GCAllocationTick` (with the allocating thread's managed stack) each time about
//! 100 KB have been allocated on a heap. When the program exits (or `attach` stops the
//! session at the detach), the runtime writes the method rundown (every method's code range
//! and name) and closes the stream. The CLI then turns each
//! tick into an `Allocation` record flagged [`Allocation::TICK`]: the tick's type stands for
//! the bytes allocated since the previous tick. Its stack becomes the trace's through the
//! rundown's methods (`managed_stacks.rs`); a type the agent did not name gets a definition
//! from the tick's own name, spelled as the agent spells it from metadata
//! (`clrprof_events::csharp::runtime_type_name`: `System.IntPtr[]` is `nint[]` on every
//! runtime).

use clrprof_trace::counters::CounterName;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clrprof_events::csharp::runtime_type_name;
use clrprof_events::gc::{AllocationKind, AllocationTick, GcEnd, GcStart};
use clrprof_events::{Payload, keyword, level};
use clrprof_ipc::nettrace::{self, EventMetadata};
use clrprof_trace::protocol::{
    ALLOCATION_TICK_BYTES, ALLOCATION_TICKS_FROM_COUNTER, EventSessionNews, TickReader,
};
use clrprof_trace::{Allocation, ClassDef, Counter, Record};

use crate::event_session::{AgentIds, EventSession};
use crate::managed_stacks::{ManagedStacks, StreamClock, is_rundown_method, read_event};

/// Starts the reader thread: `reader` says who reads the ticks once the agent sent it;
/// `tell_agent` passes the news of the session on to the agent.
pub(crate) fn start(
    pid: u32,
    exited: Arc<AtomicBool>,
    reader: impl Fn() -> Option<TickReader> + Send + 'static,
    tell_agent: impl Fn(EventSessionNews) + Send + 'static,
) -> std::io::Result<EventSession> {
    let cli_reads = move || reader().map(|r| r == TickReader::Cli);
    EventSession::start(
        pid,
        exited,
        cli_reads,
        tell_agent,
        keyword::GC,
        level::VERBOSE,
    )
}

/// Which events the conversion needs.
fn wanted(m: &EventMetadata) -> bool {
    AllocationTick::is(&m.provider, m.event_id)
        || GcStart::is(&m.provider, m.event_id)
        || GcEnd::is(&m.provider, m.event_id)
        || is_rundown_method(m)
}

/// What the conversion found, for the user.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TickSummary {
    /// Ticks turned into records.
    pub ticks: u64,
    /// Ticks whose payload could not be read.
    pub unreadable: u64,
    /// Stack frames no rundown method contained (left out of the stacks).
    pub unresolved_frames: u64,
    /// Events of the session the runtime dropped (its buffers were full).
    pub lost: u64,
    /// When the ticks began, in the agent's session clock, if a collection came before the
    /// first of them: the GC turns its events on only when it collects (on Linux), so what
    /// was allocated before is not in the ticks.
    pub from_ns: Option<u64>,
    /// Why the stream was incomplete, if it was.
    pub incomplete: Option<String>,
}

/// Turns a session's stream into trace records: definitions first, then the allocations.
pub(crate) fn tick_records(bytes: &[u8], agent: &AgentIds) -> (Vec<Record>, TickSummary) {
    let trace = nettrace::parse(bytes, wanted);
    let mut summary = TickSummary {
        incomplete: trace.incomplete.clone(),
        lost: trace.events_lost,
        ..TickSummary::default()
    };
    let clock = StreamClock::new(&trace, agent);
    let mut stacks = ManagedStacks::new(&trace, agent);
    let mut out = Vec::new();
    let mut defined_classes = HashSet::new();
    let mut allocations = Vec::new();
    let mut first_tick = None;
    let mut first_gc = None;
    for e in &trace.events {
        // Either end of a collection (see `ticks_from`).
        if read_event::<GcStart>(&trace, e).is_some() || read_event::<GcEnd>(&trace, e).is_some() {
            first_gc = Some(first_gc.map_or(e.timestamp, |t: u64| t.min(e.timestamp)));
            continue;
        }
        let tick = match read_event::<AllocationTick<'_>>(&trace, e) {
            None => continue,
            Some(Ok(tick)) => tick,
            Some(Err(_)) => {
                summary.unreadable += 1;
                continue;
            }
        };
        summary.ticks += 1;
        first_tick = Some(first_tick.map_or(e.timestamp, |t: u64| t.min(e.timestamp)));
        let type_name = runtime_type_name(&tick.type_name().to_string_lossy());
        let mut flags = Allocation::TICK;
        if tick.allocation_kind() == AllocationKind::LARGE {
            flags |= Allocation::LARGE_OBJECT_HEAP;
        }
        // An array's C# name ends with its brackets (a generic type's with `>`).
        if type_name.ends_with(']') {
            flags |= Allocation::ARRAY;
        }
        if !agent.classes.contains(&tick.type_id()) && defined_classes.insert(tick.type_id()) {
            out.push(Record::ClassDef(ClassDef {
                id: tick.type_id(),
                module: 0,
                token: 0,
                name: type_name,
            }));
        }
        let stack = stacks.intern(trace.stack_of(e), &mut out);
        let ts = if trace.trace.is_some() {
            clock.session_ts(e.timestamp)
        } else {
            0
        };
        allocations.push(Record::Allocation(Allocation {
            ts,
            tid: u32::try_from(e.thread_id).unwrap_or(0),
            class: tick.type_id(),
            size: tick.allocation_amount64(),
            stack,
            interval: ALLOCATION_TICK_BYTES,
            flags,
            array_length: 0,
        }));
    }
    summary.unresolved_frames = stacks.unresolved_frames();
    summary.from_ns = ticks_from(first_gc, first_tick)
        .filter(|_| trace.trace.is_some())
        .map(|ts| clock.session_ts(ts));
    out.extend(allocations);
    for (name, value) in [
        (CounterName::AllocationTicksUnreadable, summary.unreadable),
        (
            CounterName::AllocationTicksUnresolvedFrames,
            summary.unresolved_frames,
        ),
        (CounterName::AllocationTicksLost, summary.lost),
    ] {
        out.push(Record::Counter(Counter::named(name, 0, value)));
    }
    if let Some(value) = summary.from_ns {
        out.push(Record::Counter(Counter::named(
            ALLOCATION_TICKS_FROM_COUNTER,
            0,
            value,
        )));
    }
    (out, summary)
}

/// When the ticks began (stream timestamps), if a collection's event (`GCStart` or `GCEnd`)
/// came before the first tick (or there was no tick): the GC reads which events are on when it
/// collects, not when a session starts. Either event serves: some streams hold the first
/// collection's end without its start (about one attach in seven here), and a background
/// collection lets the program run (and allocate, and tick) before its end.
fn ticks_from(first_gc: Option<u64>, first_tick: Option<u64>) -> Option<u64> {
    match (first_gc, first_tick) {
        (Some(gc), Some(tick)) if gc < tick => Some(gc),
        (Some(gc), None) => Some(gc),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_begin_at_the_first_collection_only_when_it_came_first() {
        assert_eq!(ticks_from(Some(50), Some(60)), Some(50));
        assert_eq!(ticks_from(Some(70), Some(60)), None);
        assert_eq!(ticks_from(None, Some(60)), None);
        assert_eq!(ticks_from(Some(50), None), Some(50));
        assert_eq!(ticks_from(None, None), None);
    }

    #[test]
    fn a_stream_that_is_not_nettrace_gives_no_records_and_says_why() {
        let (records, summary) = tick_records(b"not a trace", &AgentIds::default());
        assert!(summary.incomplete.is_some());
        assert_eq!(summary.ticks, 0);
        assert!(
            records
                .iter()
                .all(|r| !matches!(r, Record::Allocation(_) | Record::ClassDef(_))),
            "{records:?}"
        );
    }
}
