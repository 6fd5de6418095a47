//! Live counts of a recording, the agents' and clrprof's own messages, and the status line.

use clrprof_trace::counters::CounterName;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use clrprof_trace::protocol::TickReader;
use clrprof_trace::{Record, protocol};

use crate::event_session::is_definition;
use crate::status::StatusLine;

/// Live counts shared between the receiving thread and the status line.
#[derive(Default)]
pub(crate) struct Progress {
    pub(crate) connected: AtomicBool,
    pub(crate) clean: AtomicBool,
    pub(super) records: AtomicU64,
    pub(super) events: AtomicU64,
    pub(super) samples: AtomicU64,
    /// The latest value of the agent's cumulative `events_dropped` counter.
    events_dropped: AtomicU64,
    /// The latest value of the agent's cumulative `samples_dropped` counter.
    samples_dropped: AtomicU64,
    pub(super) bytes: AtomicU64,
    messages: Mutex<Vec<(clrprof_trace::MessageLevel, String)>>,
    /// What clrprof itself has to say while recording (a write that failed).
    pub(super) notices: Mutex<Vec<String>>,
    pub(super) problem: Mutex<Option<String>>,
    /// What the agent defined (for the allocation tick records).
    pub(super) agent_ids: Mutex<crate::event_session::AgentIds>,
    /// Who reads the allocation ticks, once the agent said so.
    tick_reader: Mutex<Option<TickReader>>,
    /// Whether the CLI reads the contention events, once the agent said so.
    contention_cli: Mutex<Option<bool>>,
    /// The connection to the launched process's agent (`record`), for the news of the CLI's
    /// event sessions.
    root_agent: Mutex<Option<UnixStream>>,
}

impl Progress {
    /// Who reads the allocation ticks, once the agent said so.
    pub(crate) fn tick_reader(&self) -> Option<TickReader> {
        *self.tick_reader.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the CLI reads the contention events, once the agent said so.
    pub(crate) fn contention_cli(&self) -> Option<bool> {
        *self
            .contention_cli
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the connection to the launched process's agent (a handle on it), for
    /// [`tell_root_agent`](Self::tell_root_agent).
    pub(super) fn set_root_agent(&self, connection: UnixStream) {
        *self.root_agent.lock().unwrap_or_else(|e| e.into_inner()) = Some(connection);
    }

    /// Tells the launched process's agent the news of one of the CLI's event sessions (it
    /// holds the program's start until they came). Nothing when there is no such agent
    /// (`attach`, whose agent would take any byte for a detach request).
    pub(crate) fn tell_root_agent(&self, news: protocol::EventSessionNews) {
        if let Some(connection) = &*self.root_agent.lock().unwrap_or_else(|e| e.into_inner()) {
            // An agent that went away needs no news.
            let _ = (&*connection).write_all(&[news.to_byte()]);
        }
    }

    /// Events and samples the agent dropped so far.
    fn dropped(&self) -> u64 {
        self.events_dropped.load(Ordering::Relaxed) + self.samples_dropped.load(Ordering::Relaxed)
    }
}

pub(super) fn set_problem(progress: &Progress, text: String) {
    progress
        .problem
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(text);
}

pub(super) fn note(progress: &Progress, record: &Record) {
    note_from(progress, record, true);
}

/// Counts a record of a process's stream; `is_root`: of the process `record` started (whose
/// definitions the allocation ticks read over its diagnostics socket refer to).
pub(super) fn note_from(progress: &Progress, record: &Record, is_root: bool) {
    progress.records.fetch_add(1, Ordering::Relaxed);
    if is_root && is_definition(record) {
        progress
            .agent_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(record);
    }
    match record {
        Record::Event(_) => {
            progress.events.fetch_add(1, Ordering::Relaxed);
        }
        Record::Sample(_) => {
            progress.samples.fetch_add(1, Ordering::Relaxed);
        }
        // Cumulative per counter: keep the latest values.
        Record::Counter(c) if c.is(CounterName::EventsDropped) => {
            progress.events_dropped.store(c.value, Ordering::Relaxed);
        }
        Record::Counter(c) if c.is(CounterName::SamplesDropped) => {
            progress.samples_dropped.store(c.value, Ordering::Relaxed);
        }
        Record::Counter(c) if c.is(protocol::CONTENTION_READER_COUNTER) && is_root => {
            *progress
                .contention_cli
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(c.value == 0);
        }
        Record::Counter(c) if c.is(TickReader::COUNTER) && is_root => {
            *progress
                .tick_reader
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = TickReader::from_counter(c);
        }
        Record::SessionEnd(_) => progress.clean.store(true, Ordering::Release),
        Record::Message(m) => progress
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((m.level, m.text.clone())),
        _ => {}
    }
}

/// The live status line (on a terminal only, on a row of its own; see [`crate::status`]).
pub(crate) fn status_line() -> StatusLine {
    StatusLine::new()
}

pub(crate) fn status_text(p: &Progress, elapsed: Duration) -> String {
    if !p.connected.load(Ordering::Acquire) {
        return if elapsed > Duration::from_secs(2) {
            "waiting for the agent to start...".into()
        } else {
            "starting".into()
        };
    }
    format!(
        "{} events · {} samples · {} dropped · {:.1} MB",
        p.events.load(Ordering::Relaxed),
        p.samples.load(Ordering::Relaxed),
        p.dropped(),
        p.bytes.load(Ordering::Relaxed) as f64 / 1e6
    )
}

pub(crate) fn print_messages(p: &Progress, bar: &StatusLine) {
    let notices = std::mem::take(&mut *p.notices.lock().unwrap_or_else(|e| e.into_inner()));
    for text in notices {
        bar.suspend(|| say!("clrprof: error: {text}"));
    }
    let messages = std::mem::take(&mut *p.messages.lock().unwrap_or_else(|e| e.into_inner()));
    for (level, text) in messages {
        bar.suspend(|| say!("clrprof: agent {}: {text}", level.name()));
    }
}

/// Prints the first problem the receiver met, if any.
pub(crate) fn warn_problem(progress: &Progress) {
    if let Some(problem) = progress
        .problem
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        say!("clrprof: warning: {problem}");
    }
}

/// The closing line: the trace file and its counts, then `tail` (how the recording ended).
pub(super) fn print_wrote(output: &Path, progress: &Progress, tail: &str) {
    say!(
        "clrprof: wrote {} ({} records: {} events, {} samples, {} dropped){tail}",
        output.display(),
        progress.records.load(Ordering::Relaxed),
        progress.events.load(Ordering::Relaxed),
        progress.samples.load(Ordering::Relaxed),
        progress.dropped(),
    );
}
