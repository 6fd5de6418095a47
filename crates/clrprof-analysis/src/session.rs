//! The session facts at the top of every JSON report (and of the contention report): the
//! trace's format, the program and its runtime, how the recording went and ended, what was
//! dropped, and the trace's integrity.

use clrprof_trace::counters::CounterName;
use serde::Serialize;

use crate::ending::program_end;
use crate::integrity::Integrity;
use crate::trace::LoadedTrace;

/// Session facts at the top of a report.
#[derive(Debug, Clone, Serialize)]
pub struct SessionJson {
    /// Trace format version, `major.minor`.
    pub format_version: String,
    /// Process id of the profiled program.
    pub pid: u32,
    /// The runtime and its version, e.g. `CoreCLR 8.0.4`.
    pub runtime: String,
    /// The agent's version.
    pub agent_version: String,
    /// The profiled program's command line.
    pub command_line: String,
    /// `sample`, `trace` or `none`.
    pub mode: String,
    /// The agent's configuration string.
    pub config: String,
    /// Length of the recording.
    pub duration_ns: u64,
    /// The program's exit code, when the CLI recorded it (-1 if a signal ended it).
    pub exit_code: Option<i32>,
    /// The signal that ended the program (0 if none), when the CLI recorded it.
    pub signal: Option<i32>,
    /// How the program ended, as `record` said it: `exit 3`, `killed by signal 6 (SIGABRT)`;
    /// null when the trace does not say (cut short, or an attach).
    pub program_end: Option<String>,
    /// True if the agent shut down normally (the trace is complete).
    pub ended_cleanly: bool,
    /// Records in the trace.
    pub records: u64,
    /// Events dropped by the agent because its buffer was full.
    pub events_dropped: u64,
    /// Samples dropped.
    pub samples_dropped: u64,
    /// What `--symbols` named, when it was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_symbols: Option<crate::native_naming::NativeNaming>,
    /// What reading found cut short, damaged or unreadable, and left out of every figure.
    pub integrity: Integrity,
    /// The same, in sentences for people (empty for a whole trace).
    pub integrity_notes: Vec<String>,
}

/// The session facts of `t`.
pub(crate) fn session_json(t: &LoadedTrace) -> SessionJson {
    let s = t.session.as_ref();
    SessionJson {
        format_version: format!("{}.{}", t.header.major, t.header.minor),
        pid: s.map_or(0, |s| s.pid),
        runtime: s.map(|s| s.runtime.clone()).unwrap_or_default(),
        agent_version: s.map(|s| s.agent_version.clone()).unwrap_or_default(),
        command_line: s.map(|s| s.command_line.clone()).unwrap_or_default(),
        mode: t.mode().name().to_string(),
        config: s.map(|s| s.config.clone()).unwrap_or_default(),
        duration_ns: t.duration_ns(),
        exit_code: t.recording_end.as_ref().map(|r| r.exit_code),
        signal: t.recording_end.as_ref().map(|r| r.signal),
        program_end: t
            .recording_end
            .as_ref()
            .map(|r| program_end(r.exit_code, r.signal)),
        ended_cleanly: t.ended_cleanly(),
        records: t.records,
        events_dropped: t.counter(CounterName::EventsDropped),
        samples_dropped: t.counter(CounterName::SamplesDropped),
        native_symbols: t.native_naming.clone(),
        integrity: t.integrity.clone(),
        integrity_notes: t.integrity.notes(),
    }
}
