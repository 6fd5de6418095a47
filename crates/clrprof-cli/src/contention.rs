//! `record --contention` and `attach --contention` on runtimes without in-process EventPipe
//! sessions (CoreCLR 3.1): the runtime's contention events read over the program's
//! diagnostics socket.
//!
//! The agent says who reads them right after its `SessionStart` (the counter
//! `CONTENTION_READER_COUNTER` of the protocol): on .NET 5 and later it reads them itself and nothing is
//! left to do here. Otherwise a session on the runtime provider's contention keyword runs for
//! the whole program (`event_session.rs`, as for the allocation ticks), and
//! when the program has exited each `ContentionStart` is paired with the next
//! `ContentionStop` of its thread into one `Contention` record: the wait is the time between
//! the two events (CoreCLR 3.1's stop event carries no duration: flag
//! [`Contention::MEASURED`]), the waiting stack the one EventPipe attached to the start event,
//! mapped to the rundown's methods (`managed_stacks.rs`). 3.1's events name neither the lock nor its holder, so
//! `class`, `lock_id` and `owner_tid` stay 0.

use clrprof_trace::counters::CounterName;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clrprof_events::contention::{ContentionFlags, ContentionStart, ContentionStop};
use clrprof_events::{Payload, keyword, level};
use clrprof_ipc::nettrace::{self, EventMetadata};
use clrprof_trace::protocol::EventSessionNews;
use clrprof_trace::{Contention, Counter, Record};

use crate::event_session::{AgentIds, EventSession};
use crate::managed_stacks::{ManagedStacks, StreamClock, is_rundown_method, read_event};

/// Starts the reader thread: `cli_reads` says, once the agent told, whether the CLI reads the
/// events; `tell_agent` passes the news of the session on to the agent.
pub(crate) fn start(
    pid: u32,
    exited: Arc<AtomicBool>,
    cli_reads: impl Fn() -> Option<bool> + Send + 'static,
    tell_agent: impl Fn(EventSessionNews) + Send + 'static,
) -> std::io::Result<EventSession> {
    EventSession::start(
        pid,
        exited,
        cli_reads,
        tell_agent,
        keyword::CONTENTION,
        level::INFORMATIONAL,
    )
}

fn wanted(m: &EventMetadata) -> bool {
    ContentionStart::is(&m.provider, m.event_id)
        || ContentionStop::is(&m.provider, m.event_id)
        || is_rundown_method(m)
}

/// What the conversion found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ContentionSummary {
    /// Contended acquisitions written.
    pub written: u64,
    /// Start events without a stop, or stops without a start.
    pub unpaired: u64,
    /// Events whose payload could not be read.
    pub unreadable: u64,
    /// Events of the session the runtime dropped (its buffers were full).
    pub lost: u64,
    /// Why the stream was incomplete, if it was.
    pub incomplete: Option<String>,
}

/// Turns a session's stream into trace records: definitions, then the contended acquisitions.
pub(crate) fn contention_records(
    bytes: &[u8],
    agent: &AgentIds,
) -> (Vec<Record>, ContentionSummary) {
    let trace = nettrace::parse(bytes, wanted);
    let mut summary = ContentionSummary {
        incomplete: trace.incomplete.clone(),
        lost: trace.events_lost,
        ..ContentionSummary::default()
    };
    let clock = StreamClock::new(&trace, agent);
    let mut stacks = ManagedStacks::new(&trace, agent);
    let mut out = Vec::new();
    let mut contended = Vec::new();
    let mut waits = Pairing::default();
    for e in &trace.events {
        if let Some(start) = read_event::<ContentionStart>(&trace, e) {
            let Ok(start) = start else {
                summary.unreadable += 1;
                continue;
            };
            let stack = stacks.intern(trace.stack_of(e), &mut out);
            let mut record_flags = Contention::MEASURED;
            if start.flags() == ContentionFlags::NATIVE {
                record_flags |= Contention::NATIVE;
            }
            waits.start(e.thread_id, e.timestamp, stack, record_flags);
        } else if let Some(stop) = read_event::<ContentionStop>(&trace, e) {
            if stop.is_err() {
                summary.unreadable += 1;
                continue;
            }
            let Some((start, stack, flags)) = waits.stop(e.thread_id) else {
                continue;
            };
            summary.written += 1;
            contended.push(Record::Contention(Contention {
                ts: clock.session_ts(start),
                tid: u32::try_from(e.thread_id).unwrap_or(0),
                duration_ns: clock.ns(e.timestamp.saturating_sub(start)),
                stack,
                class: 0,
                lock_id: 0,
                owner_tid: 0,
                flags,
            }));
        }
    }
    summary.unpaired = waits.finish();
    out.extend(contended);
    for (name, value) in [
        (CounterName::ContentionWritten, summary.written),
        (CounterName::ContentionUnpaired, summary.unpaired),
        (CounterName::ContentionUnreadable, summary.unreadable),
        (CounterName::ContentionEventsLost, summary.lost),
    ] {
        out.push(Record::Counter(Counter::named(name, 0, value)));
    }
    (out, summary)
}

/// Pairs each thread's `ContentionStart` with its next `ContentionStop` (a thread waits for one
/// lock at a time), counting the events that have no partner.
#[derive(Debug, Default)]
struct Pairing {
    /// Per thread: the start waiting for its stop (timestamp, stack, record flags).
    open: HashMap<u64, (u64, u32, u8)>,
    unpaired: u64,
}

impl Pairing {
    /// A start on `thread`; a start still open there never stopped.
    fn start(&mut self, thread: u64, timestamp: u64, stack: u32, flags: u8) {
        if self
            .open
            .insert(thread, (timestamp, stack, flags))
            .is_some()
        {
            self.unpaired += 1;
        }
    }

    /// A stop on `thread`: its start, or `None` (counted) if there is none.
    fn stop(&mut self, thread: u64) -> Option<(u64, u32, u8)> {
        let start = self.open.remove(&thread);
        if start.is_none() {
            self.unpaired += 1;
        }
        start
    }

    /// The events without a partner, the starts still open included.
    fn finish(self) -> u64 {
        self.unpaired + self.open.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_pair_with_the_next_stop_of_their_thread() {
        let mut p = Pairing::default();
        // Two threads waiting at once, their events interleaved.
        p.start(7, 100, 1, 2);
        p.start(8, 150, 2, 2);
        assert_eq!(p.stop(8), Some((150, 2, 2)));
        assert_eq!(p.stop(7), Some((100, 1, 2)));
        // A stop without a start, a start replaced by the next one, a start never stopped.
        assert_eq!(p.stop(7), None);
        p.start(7, 300, 3, 2);
        p.start(7, 400, 4, 3);
        assert_eq!(p.stop(7), Some((400, 4, 3)));
        p.start(9, 500, 5, 2);
        assert_eq!(p.finish(), 3);
    }
}
