//! Records: one typed struct per record kind, their encoding and decoding.

use crate::wire::{FieldError, Fields, Sink, SliceSink, clip};
use crate::{EventKind, MAX_PAYLOAD_LEN, RECORD_HEADER_LEN, ReadError, RecordKind};

/// A value that can be a payload field.
trait Field: Sized {
    fn len(&self) -> usize;
    fn put<S: Sink>(&self, s: &mut S);
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError>;
}

macro_rules! int_fields {
    ($($t:ident),*) => {$(
        impl Field for $t {
            fn len(&self) -> usize {
                std::mem::size_of::<$t>()
            }
            fn put<S: Sink>(&self, s: &mut S) {
                s.put(&self.to_le_bytes());
            }
            fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
                f.$t(name)
            }
        }
    )*};
}

int_fields!(u8, u16, u32, u64, i32);

/// A one-byte code of an enum that has `to_u8` and `from_u8`.
macro_rules! byte_code_fields {
    ($($t:ident),*) => {$(
        impl Field for $t {
            fn len(&self) -> usize {
                1
            }
            fn put<S: Sink>(&self, s: &mut S) {
                s.put(&[self.to_u8()]);
            }
            fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
                f.u8(name).map($t::from_u8)
            }
        }
    )*};
}

byte_code_fields!(FrameKind, ThreadState, MessageLevel, SampleClock);

/// `[u64]`: `u32` count and the elements (at most [`MAX_U64_LIST`], which a payload can hold;
/// the count is checked against the bytes left before anything is allocated).
impl Field for Vec<u64> {
    fn len(&self) -> usize {
        4 + 8 * self.len().min(MAX_U64_LIST)
    }
    fn put<S: Sink>(&self, s: &mut S) {
        let n = self.len().min(MAX_U64_LIST);
        s.put(&(n as u32).to_le_bytes());
        for v in &self[..n] {
            s.put(&v.to_le_bytes());
        }
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        let n = f.count(name, 8, MAX_U64_LIST)?;
        (0..n).map(|_| f.u64(name)).collect()
    }
}

/// The most elements a `[u64]` field other than an event's args may have: as many as fit in a
/// payload.
pub const MAX_U64_LIST: usize = MAX_PAYLOAD_LEN / 8 - 8;

/// `u8`: 0 or 1 when written; any nonzero value reads as `true`.
impl Field for bool {
    fn len(&self) -> usize {
        1
    }
    fn put<S: Sink>(&self, s: &mut S) {
        s.put(&[u8::from(*self)]);
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        Ok(f.u8(name)? != 0)
    }
}

/// `str`: `u32` byte length and UTF-8 bytes, cut to [`crate::MAX_STR_LEN`] when written.
impl Field for String {
    fn len(&self) -> usize {
        4 + clip(self).len()
    }
    fn put<S: Sink>(&self, s: &mut S) {
        let text = clip(self);
        s.put(&(text.len() as u32).to_le_bytes());
        s.put(text.as_bytes());
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        f.str(name)
    }
}

/// One basic block of a [`CoverageMethod`]: its IL range in the method's original body and
/// how many times it was entered. 16 bytes: `u32 il_start`, `u32 il_end`, `u64 hits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CoverageBlock {
    /// IL offset of the block's first instruction.
    pub il_start: u32,
    /// IL offset just after its last instruction.
    pub il_end: u32,
    /// Times the block was entered.
    pub hits: u64,
}

impl CoverageBlock {
    /// Encoded size.
    const LEN: usize = 16;
}

/// `[CoverageBlock]`: `u32` count and the blocks.
impl Field for Vec<CoverageBlock> {
    fn len(&self) -> usize {
        4 + CoverageBlock::LEN * self.len().min(MAX_COVERAGE_BLOCKS)
    }
    fn put<S: Sink>(&self, s: &mut S) {
        let blocks = &self[..self.len().min(MAX_COVERAGE_BLOCKS)];
        (blocks.len() as u32).put(s);
        for b in blocks {
            b.il_start.put(s);
            b.il_end.put(s);
            b.hits.put(s);
        }
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        let n = f.count(name, CoverageBlock::LEN, MAX_COVERAGE_BLOCKS)?;
        (0..n)
            .map(|_| {
                Ok(CoverageBlock {
                    il_start: f.u32(name)?,
                    il_end: f.u32(name)?,
                    hits: f.u64(name)?,
                })
            })
            .collect()
    }
}

/// Most blocks one [`CoverageMethod`] holds (what fits a payload); writers drop the rest.
pub const MAX_COVERAGE_BLOCKS: usize = (MAX_PAYLOAD_LEN - 64) / CoverageBlock::LEN;

impl Field for EventKind {
    fn len(&self) -> usize {
        2
    }
    fn put<S: Sink>(&self, s: &mut S) {
        s.put(&self.0.to_le_bytes());
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        f.u16(name).map(EventKind)
    }
}

/// What a [`StackDef`] node's `frame` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FrameKind {
    /// A managed function: `frame` is a `FunctionID` (see [`FunctionDef`]).
    #[default]
    Managed,
    /// A native frame: `frame` is a [`NativeFrameDef`] id.
    Native,
    /// The stack ends early here: the unwinder could not go further. `frame` is a
    /// [`StackCut`] code saying why (0, too deep, is the only one before format 1.2).
    Truncated,
    /// Format 1.7: an async method that awaits the code below it (a logical caller, not a
    /// frame of the thread's stack): `frame` is the `FunctionID` of its state machine's
    /// `MoveNext`. A stack with async callers holds the thread's own frames from the root to
    /// where the continuation was called (the thread pool's), then the async callers, each
    /// followed by an [`FrameKind::Await`] marker, then the continuation's frames: readers
    /// show either the logical stack (without the frames above the first async caller) or
    /// the physical one (without async callers and markers).
    AsyncCaller,
    /// Format 1.7: the `[await]` marker after an [`FrameKind::AsyncCaller`]; `frame` is 0.
    Await,
    /// A frame kind from a newer minor version of the format.
    Other(u8),
}

impl FrameKind {
    /// The byte that encodes this kind.
    pub fn to_u8(self) -> u8 {
        match self {
            FrameKind::Managed => 0,
            FrameKind::Native => 1,
            FrameKind::Truncated => 2,
            FrameKind::AsyncCaller => 3,
            FrameKind::Await => 4,
            FrameKind::Other(v) => v,
        }
    }

    /// The kind a byte encodes.
    pub fn from_u8(v: u8) -> FrameKind {
        match v {
            0 => FrameKind::Managed,
            1 => FrameKind::Native,
            2 => FrameKind::Truncated,
            3 => FrameKind::AsyncCaller,
            4 => FrameKind::Await,
            v => FrameKind::Other(v),
        }
    }
}

/// Why a stack ends early: the `frame` of a [`FrameKind::Truncated`] node, the outermost
/// node of a stack the unwinder could not follow to the thread's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackCut {
    /// Deeper than the sampler keeps (the outermost frames are left out).
    TooDeep,
    /// A return address in code the unwinder has no rule for: no unwind information, and no
    /// usable frame pointer.
    NoUnwindInfo,
    /// A frame pointer that does not point into the stack.
    BadFramePointer,
    /// A stack word the unwinder needed could not be read.
    Unreadable,
    /// Unwind information that could not be used (or that does not make the stack grow).
    BadUnwindInfo,
    /// The thread's stack bounds were not known yet (a thread found after it started).
    UnknownStack,
    /// (1.3) Not a stack: the CPU a thread used in periods whose samples were dropped (its
    /// ring of captures was full because the sampler fell behind), so that the thread's CPU
    /// adds up; the marker is the whole stack.
    Missed,
    /// (1.8) Not a stack: the CPU a thread used after its last sample, up to its end or the
    /// end of sampling, which no sample saw (a CPU-time timer fires at the scheduler's tick
    /// only, so this is up to a few ticks of CPU); the marker is the whole stack.
    Unsampled,
    /// A code from a newer minor version of the format.
    Other(u64),
}

impl StackCut {
    /// The code that encodes this reason.
    pub fn to_u64(self) -> u64 {
        match self {
            StackCut::TooDeep => 0,
            StackCut::NoUnwindInfo => 1,
            StackCut::BadFramePointer => 2,
            StackCut::Unreadable => 3,
            StackCut::BadUnwindInfo => 4,
            StackCut::UnknownStack => 5,
            StackCut::Missed => 6,
            StackCut::Unsampled => 7,
            StackCut::Other(v) => v,
        }
    }

    /// The reason a code encodes.
    pub fn from_u64(v: u64) -> StackCut {
        match v {
            0 => StackCut::TooDeep,
            1 => StackCut::NoUnwindInfo,
            2 => StackCut::BadFramePointer,
            3 => StackCut::Unreadable,
            4 => StackCut::BadUnwindInfo,
            5 => StackCut::UnknownStack,
            6 => StackCut::Missed,
            7 => StackCut::Unsampled,
            v => StackCut::Other(v),
        }
    }

    /// What it means, for reports: "ended early: ...".
    pub fn describe(self) -> &'static str {
        match self {
            StackCut::TooDeep => "deeper than the sampler keeps",
            StackCut::NoUnwindInfo => "code without unwind information or frame pointer",
            StackCut::BadFramePointer => "a frame pointer outside the stack",
            StackCut::Unreadable => "a stack word that could not be read",
            StackCut::BadUnwindInfo => "unusable unwind information",
            StackCut::UnknownStack => "the thread's stack was not known yet",
            StackCut::Missed => "samples missed (the sampler fell behind)",
            StackCut::Unsampled => "CPU after the thread's last sample",
            StackCut::Other(_) => "a reason from a newer clrprof",
        }
    }
}

/// What a [`Sample`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ThreadState {
    /// A wall-clock sample of a thread that was running (or ready to run).
    #[default]
    Running,
    /// A wall-clock sample of a thread that was blocked.
    Blocked,
    /// A CPU sample (1.2): the thread's CPU clock passed a sampling period; `cpu_ns` is the
    /// CPU it used since its previous CPU sample and `wall_ns` is 0.
    Cpu,
    /// A state from a newer minor version of the format.
    Other(u8),
}

impl ThreadState {
    /// The byte that encodes this state.
    pub fn to_u8(self) -> u8 {
        match self {
            ThreadState::Running => 0,
            ThreadState::Blocked => 1,
            ThreadState::Cpu => 2,
            ThreadState::Other(v) => v,
        }
    }

    /// The state a byte encodes.
    pub fn from_u8(v: u8) -> ThreadState {
        match v {
            0 => ThreadState::Running,
            1 => ThreadState::Blocked,
            2 => ThreadState::Cpu,
            v => ThreadState::Other(v),
        }
    }
}

/// How much a [`Message`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MessageLevel {
    /// Something the user should know (a note).
    #[default]
    Info,
    /// Something went less well than asked; the recording goes on.
    Warning,
    /// Something asked for did not happen.
    Error,
    /// A level from a newer minor version of the format (shown as an error).
    Other(u8),
}

impl MessageLevel {
    /// The byte that encodes this level.
    pub fn to_u8(self) -> u8 {
        match self {
            MessageLevel::Info => 0,
            MessageLevel::Warning => 1,
            MessageLevel::Error => 2,
            MessageLevel::Other(v) => v,
        }
    }

    /// The level a byte encodes.
    pub fn from_u8(v: u8) -> MessageLevel {
        match v {
            0 => MessageLevel::Info,
            1 => MessageLevel::Warning,
            2 => MessageLevel::Error,
            v => MessageLevel::Other(v),
        }
    }

    /// How reports name it: `note`, `warning` or `error`.
    pub fn name(self) -> &'static str {
        match self {
            MessageLevel::Info => "note",
            MessageLevel::Warning => "warning",
            MessageLevel::Error | MessageLevel::Other(_) => "error",
        }
    }
}

/// Which per-thread CPU clock took a CPU [`Sample`] (format 1.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SampleClock {
    /// Not a CPU sample, or a trace before format 1.8.
    #[default]
    Unknown,
    /// The thread's perf task-clock event, counting kernel time too: the rate asked, and
    /// `sys_ns` tells whether its period ended in the kernel.
    Perf,
    /// The thread's CPU-time timer: at most one per scheduler tick of the thread's CPU;
    /// user or kernel mode not known.
    Timer,
    /// A perf task-clock event that counts user time only (where the system refuses kernel
    /// time): user or kernel mode not known.
    PerfUserOnly,
    /// A clock from a newer minor version of the format.
    Other(u8),
}

impl SampleClock {
    /// The byte that encodes this clock.
    pub fn to_u8(self) -> u8 {
        match self {
            SampleClock::Unknown => 0,
            SampleClock::Perf => 1,
            SampleClock::Timer => 2,
            SampleClock::PerfUserOnly => 3,
            SampleClock::Other(v) => v,
        }
    }

    /// The clock a byte encodes.
    pub fn from_u8(v: u8) -> SampleClock {
        match v {
            0 => SampleClock::Unknown,
            1 => SampleClock::Perf,
            2 => SampleClock::Timer,
            3 => SampleClock::PerfUserOnly,
            v => SampleClock::Other(v),
        }
    }
}

/// Where in its method's IL a managed frame of a [`StackDef`] was (format 1.9): the
/// instruction the thread was at, for the innermost frame, or the call, for a caller (the
/// runtime's native-to-IL map of the code version that ran, looked up at the return address
/// less one). What a source line is found from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IlPosition {
    /// Not known: not a managed frame, no map for the code, an address the map does not
    /// cover, or a trace before format 1.9.
    #[default]
    Unknown,
    /// At this IL offset (the method's prologue counts as offset 0).
    At(u32),
    /// In the method's epilogue (its return).
    Epilogue,
}

impl IlPosition {
    /// The `u32` that encodes it: 0 unknown, `u32::MAX` the epilogue, else the offset plus one.
    pub fn to_u32(self) -> u32 {
        match self {
            IlPosition::Unknown => 0,
            IlPosition::At(offset) => offset.saturating_add(1).min(u32::MAX - 1),
            IlPosition::Epilogue => u32::MAX,
        }
    }

    /// The position a `u32` encodes.
    pub fn from_u32(v: u32) -> IlPosition {
        match v {
            0 => IlPosition::Unknown,
            u32::MAX => IlPosition::Epilogue,
            v => IlPosition::At(v - 1),
        }
    }
}

impl Field for IlPosition {
    fn len(&self) -> usize {
        4
    }
    fn put<S: Sink>(&self, s: &mut S) {
        s.put(&self.to_u32().to_le_bytes());
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        f.u32(name).map(IlPosition::from_u32)
    }
}

/// `[IlPosition]`: `u32` count and the positions as `u32` (at most [`MAX_U64_LIST`]).
impl Field for Vec<IlPosition> {
    fn len(&self) -> usize {
        4 + 4 * self.len().min(MAX_U64_LIST)
    }
    fn put<S: Sink>(&self, s: &mut S) {
        let n = self.len().min(MAX_U64_LIST);
        s.put(&(n as u32).to_le_bytes());
        for v in &self[..n] {
            v.put(s);
        }
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        let n = f.count(name, 4, MAX_U64_LIST)?;
        (0..n).map(|_| IlPosition::take(f, name)).collect()
    }
}

/// A record type: its kind and how its payload is laid out.
trait Payload: Sized {
    const KIND: RecordKind;
    fn payload_len(&self) -> usize;
    fn write_payload<S: Sink>(&self, s: &mut S);
    fn read_payload(f: &mut Fields<'_>) -> Result<Self, FieldError>;

    /// The payload lengths, other than the whole, at which a payload of this record is
    /// complete: the start of each field added by a later minor version (an older writer's
    /// payload ends there).
    #[cfg(test)]
    fn optional_ends(&self) -> Vec<usize> {
        Vec::new()
    }

    /// Record header and payload.
    fn write_record<S: Sink>(&self, s: &mut S) {
        write_record_header(s, Self::KIND, self.payload_len());
        self.write_payload(s);
    }

    /// Writes the record, whose encoded size is `len`, at the start of `buf` without
    /// allocating: the bytes written, or `None` if `buf` is shorter than `len`.
    fn write_record_into(&self, buf: &mut [u8], len: usize) -> Option<usize> {
        if buf.len() < len {
            return None;
        }
        let mut sink = SliceSink::new(buf);
        self.write_record(&mut sink);
        sink.finish()
    }
}

fn write_record_header<S: Sink>(s: &mut S, kind: RecordKind, payload_len: usize) {
    s.put(&kind.0.to_le_bytes());
    s.put(&0u16.to_le_bytes());
    s.put(&(payload_len as u32).to_le_bytes());
}

macro_rules! records {
    ($(
        $(#[$meta:meta])*
        $ty:ident = $kind:ident {
            $($(#[$fmeta:meta])* $field:ident: $fty:ty,)*
        }
        $(+ (added in $minor:literal) {
            $($(#[$ameta:meta])* $afield:ident: $afty:ty,)*
        })?
    )*) => {$(
        $(#[$meta])*
        pub struct $ty {
            $($(#[$fmeta])* pub $field: $fty,)*
            $($($(#[$ameta])* pub $afield: $afty,)*)?
        }

        impl Payload for $ty {
            const KIND: RecordKind = RecordKind::$kind;
            fn payload_len(&self) -> usize {
                0 $(+ Field::len(&self.$field))* $($(+ Field::len(&self.$afield))*)?
            }
            fn write_payload<S: Sink>(&self, s: &mut S) {
                $(Field::put(&self.$field, s);)*
                $($(Field::put(&self.$afield, s);)*)?
            }
            fn read_payload(f: &mut Fields<'_>) -> Result<Self, FieldError> {
                Ok($ty {
                    $($field: Field::take(f, stringify!($field))?,)*
                    $($($afield: take_added(f, stringify!($afield))?,)*)?
                })
            }
            #[cfg(test)]
            #[allow(unused_assignments)]
            fn optional_ends(&self) -> Vec<usize> {
                #[allow(unused_mut)]
                let mut ends = Vec::new();
                #[allow(unused_mut, unused_variables)]
                let mut at = 0 $(+ Field::len(&self.$field))*;
                $($(
                    ends.push(at);
                    at += Field::len(&self.$afield);
                )*)?
                ends
            }
        }

        impl From<$ty> for Record {
            fn from(r: $ty) -> Record {
                Record::$ty(r)
            }
        }
    )*};
}

/// Reads a field that a later minor version added at the end of its record: a payload that
/// ends before it (written by an older writer) gives the field's default (0, empty).
fn take_added<T: Field + Default>(f: &mut Fields<'_>, name: &'static str) -> Result<T, FieldError> {
    if f.at_end() {
        Ok(T::default())
    } else {
        T::take(f, name)
    }
}

records! {
    /// Kind 1: written by the agent when it initializes.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    SessionStart = SESSION_START {
        /// Process id of the profiled process.
        pid: u32,
        /// The agent's version.
        agent_version: String,
        /// The runtime and its version, e.g. `CoreCLR 8.0.4` (older agents wrote what
        /// `GetRuntimeInformation` says, `CoreCLR 4.0.30319.0` on 3.1).
        runtime: String,
        /// The highest `ICorProfilerInfo` version the agent found.
        info_version: u16,
        /// The highest `ICorProfilerCallback` version the runtime asked for.
        callback_version: u16,
        /// Wall-clock time of the session's start, nanoseconds since the Unix epoch.
        start_unix_ns: u64,
        /// The `COR_PRF_MONITOR_*` event mask the agent set.
        event_mask: u64,
        /// The `COR_PRF_HIGH_*` event mask the agent set.
        event_mask_high: u64,
        /// The agent's configuration string.
        config: String,
        /// The profiled process's command line.
        command_line: String,
    }

    /// Kind 2: written by the agent at shutdown or detach.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    SessionEnd = SESSION_END {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// `shutdown` or `detach`.
        reason: String,
    }

    /// Kind 3: appended by the CLI when the recording ends.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    RecordingEnd = RECORDING_END {
        /// Length of the recording.
        duration_ns: u64,
        /// The profiled program's exit code, or -1.
        exit_code: i32,
        /// The signal that ended the profiled program, or 0.
        signal: i32,
        /// Whether the agent connected to the CLI.
        agent_connected: bool,
        /// Whether a [`SessionEnd`] was received.
        clean: bool,
    }

    /// Kind 4: the cumulative value of a named agent counter; the last one in a file wins.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    Counter = COUNTER {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// The counter's name, e.g. `events_dropped`.
        name: String,
        /// Its value.
        value: u64,
    }

    /// Kind 5: a diagnostic from the agent (a refused event mask, a failed hook
    /// installation...) that the CLI shows to the user.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    Message = MESSAGE {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// How much it matters (a byte: 0 note, 1 warning, 2 error).
        level: MessageLevel,
        /// The message, one line.
        text: String,
    }

    /// Kind 6 (format 1.2): how sample mode sampled, written by the agent when its sampler
    /// starts.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    SamplerInfo = SAMPLER_INFO {
        /// The per-thread CPU clock that triggers CPU samples: `perf task-clock`,
        /// `thread CPU-time timer`, or empty when there are no CPU samples.
        cpu_clock: String,
        /// CPU samples asked per second of a thread's CPU time.
        cpu_rate_hz: u32,
        /// Wall-clock samples per second, per thread.
        wall_rate_hz: u32,
    }

    /// Kind 7 (format 3.5): the records after it in its block belong to process `process`
    /// (a [`ProcessDef::process`]). Only in files of major version 3, where every block
    /// begins with one.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    Section = SECTION {
        /// The process's number in the trace, from 1.
        process: u32,
    }

    /// Kind 8 (format 1.5): one process of a recorded process tree, written by the CLI in the
    /// process's section when its agent connected.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    ProcessDef = PROCESS {
        /// The process's number in the trace, from 1, in the order the agents connected.
        process: u32,
        /// Its process id.
        pid: u32,
        /// Its parent's process id (0 if unknown).
        parent_pid: u32,
        /// When its agent connected, nanoseconds since the Unix epoch.
        start_unix_ns: u64,
        /// Its command line (arguments separated by spaces).
        command_line: String,
        /// 0 recorded, 1 left out by the process filter (`--no-children`, `--pid-filter`,
        /// `--name-filter`): the agent let the process run unprofiled.
        left_out: u8,
    }

    /// Kind 9 (format 1.5): the status a process passed to `exit` (the agent's last record,
    /// written from the process's exit handlers, after its `SessionEnd`). A process that was
    /// killed or crashed writes none.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    ProcessExit = PROCESS_EXIT {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// The exit status (its low 8 bits are what the parent sees).
        exit_code: i32,
    }

    /// Kind 16: an app domain.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    AppDomainDef = APP_DOMAIN {
        /// `AppDomainID`.
        id: u64,
        /// Its name.
        name: String,
    }

    /// Kind 17: an assembly.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    AssemblyDef = ASSEMBLY {
        /// `AssemblyID`.
        id: u64,
        /// The app domain it was loaded into.
        app_domain: u64,
        /// Its name.
        name: String,
    }

    /// Kind 18: a module.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    ModuleDef = MODULE {
        /// `ModuleID`.
        id: u64,
        /// The assembly it belongs to.
        assembly: u64,
        /// Its load address.
        base_address: u64,
        /// Its file path (or metadata name if it was not loaded from disk).
        path: String,
        /// The name of its assembly.
        assembly_name: String,
    }

    /// Kind 19: a class.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    ClassDef = CLASS {
        /// `ClassID`.
        id: u64,
        /// The module that defines it.
        module: u64,
        /// Its `mdTypeDef` token.
        token: u32,
        /// Display name with generic arguments resolved, e.g.
        /// `System.Collections.Generic.List<int>`.
        name: String,
    }

    /// Kind 20: a function.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    FunctionDef = FUNCTION {
        /// `FunctionID`.
        id: u64,
        /// Its class (0 if unknown).
        class: u64,
        /// Its module.
        module: u64,
        /// Its `mdMethodDef` token.
        token: u32,
        /// The declaring type's display name.
        type_name: String,
        /// The method's name, with method generic arguments, e.g. `Select<int, string>`.
        method_name: String,
        /// Parameter types, e.g. `(int, string)`.
        signature: String,
    }

    /// Kind 21: a thread. A later record for the same `tid` replaces the name.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    ThreadDef = THREAD {
        /// OS thread id.
        tid: u32,
        /// Managed `ThreadID`, 0 if unknown.
        managed_id: u64,
        /// The thread's name; may be empty.
        name: String,
    }

    /// Kind 24 (format 1.2): what the kernel calls a thread (`/proc/self/task/TID/comm`),
    /// when it differs from the process's name: the runtime names its own threads there
    /// (`.NET TP Worker`, `.NET Finalizer`, ...).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    ThreadOsName = THREAD_OS_NAME {
        /// OS thread id.
        tid: u32,
        /// The name.
        name: String,
    }

    /// Kind 22: a native frame: the native function (or, when nothing tells the functions of
    /// its module apart, the module) containing a code address.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    NativeFrameDef = NATIVE_FRAME {
        /// Id that [`StackDef::frame`] refers to.
        id: u64,
        /// The instruction address (the first one the agent saw in this frame).
        address: u64,
        /// Path of the library containing it.
        library: String,
        /// The function's name, from the module's symbol table; empty when the agent had no
        /// name for it (a stripped library: then `function` says which function it is).
        symbol: String,
    } + (added in 1.3) {
        /// The [`NativeModuleDef`] of the library; 0 when unknown (and before format 1.3).
        module: u64,
        /// Where the function containing `address` starts, as the module's ELF file numbers it
        /// (a virtual address, what symbol tables and debug files hold: the runtime address
        /// minus the module's load bias); from the module's symbol table, or, for a function
        /// without a symbol, from the module's unwind information (its `.eh_frame` FDE). 0 when
        /// unknown (and before format 1.3).
        function: u64,
    }

    /// Kind 25 (format 1.3): a native module (an ELF file mapped into the process), which
    /// [`NativeFrameDef`]s refer to.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    NativeModuleDef = NATIVE_MODULE {
        /// Id that [`NativeFrameDef::module`] refers to; ids start at 1.
        id: u64,
        /// The file's path as the process mapped it (`[vdso]` for the vDSO).
        path: String,
        /// Its GNU build id in lowercase hexadecimal (what separate debug files are found by);
        /// empty if it has none.
        build_id: String,
    }

    /// Kind 23: a node of the stack tree: a frame and the node of its caller.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    StackDef = STACK {
        /// Node id; ids start at 1.
        id: u32,
        /// The caller's node, 0 for none.
        parent: u32,
        /// What `frame` is.
        frame_kind: FrameKind,
        /// `FunctionID`, [`NativeFrameDef`] id, or 0.
        frame: u64,
    } + (added in 1.9) {
        /// A managed frame's place in its method's IL ([`IlPosition::Unknown`] for other
        /// frames): two calls of one function from two places of its caller are two nodes.
        il: IlPosition,
    }

    /// Kind 33: one sample of one thread: a CPU sample (`state` [`ThreadState::Cpu`]) or a
    /// wall-clock sample (running or blocked).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    Sample = SAMPLE {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// OS thread id.
        tid: u32,
        /// The sampled stack's [`StackDef`] node, 0 if there was no stack.
        stack: u32,
        /// CPU time this sample stands for.
        cpu_ns: u64,
        /// Wall time this sample stands for.
        wall_ns: u64,
        /// What kind of sample it is.
        state: ThreadState,
    } + (added in 1.8) {
        /// CPU samples taken by a [`SampleClock::Perf`] event: `cpu_ns` if the event's period
        /// ended while the thread ran in the kernel (a page fault, a system call: the sample's
        /// stack is the user code that entered it), else 0, as `perf` counts a sample user or
        /// kernel. 0 for every other sample (whether they ended in the kernel is not known).
        sys_ns: u64,
        /// CPU samples: which clock took it.
        clock: SampleClock,
    }

    /// Kind 34: one node of a thread's calling context tree (`--mode trace`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    CallTreeNode = CALL_TREE_NODE {
        /// OS thread id.
        tid: u32,
        /// Node id; ids start at 1 per thread.
        node: u32,
        /// Parent node, 0 for the root.
        parent: u32,
        /// `FunctionID`.
        function: u64,
        /// Exact number of calls.
        calls: u64,
        /// Samples that found this node on top of the shadow stack.
        self_samples: u64,
        /// CPU time attributed to this node itself.
        self_cpu_ns: u64,
        /// Wall time attributed to this node itself.
        self_wall_ns: u64,
    }

    /// Kind 40 (format 1.1): one allocation the agent recorded (`--alloc all`) or sampled
    /// (`--alloc sampled`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    Allocation = ALLOCATION {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// OS thread id of the allocating thread.
        tid: u32,
        /// The object's `ClassID` (see [`ClassDef`]).
        class: u64,
        /// The object's size in bytes, from the runtime.
        size: u64,
        /// The allocating stack's [`StackDef`] node, 0 if it has no managed frame.
        stack: u32,
        /// Mean sampling interval in bytes; 0 when every allocation is recorded. A sampled
        /// allocation of `size` bytes stands for `1 / (1 - exp(-size / interval))` of them.
        /// For an allocation tick (flag bit 2): the runtime's tick budget.
        interval: u64,
        /// Bit 0: on the large object heap (at least 85,000 bytes). Bit 1: an array. Bit 2:
        /// an allocation tick of the runtime (`--alloc sampled`): `size` is the bytes
        /// allocated on the heap since the previous tick, which this record's class stands
        /// for; the object's own size and the number of objects are not known.
        flags: u8,
        /// For an array, its number of elements (all dimensions); 0 otherwise.
        array_length: u64,
    }

    /// Kind 41 (format 1.1): the size of each GC generation when a collection starts or ends
    /// (from `GetGenerationBounds`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    GcGenerations = GC_GENERATIONS {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// 0: at `GarbageCollectionStarted` (before), 1: at `GarbageCollectionFinished` (after).
        phase: u8,
        /// Bytes in use per generation: index 0, 1, 2, 3 = large object heap, 4 = pinned.
        sizes: Vec<u64>,
    }

    /// Kind 42 (format 1.1): a heap snapshot begins; its objects and roots follow.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    HeapSnapshot = HEAP_SNAPSHOT {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// Snapshot number, from 1.
        snapshot: u32,
        /// The garbage collection it was taken in, from 1.
        gc: u32,
    }

    /// Kind 43 (format 1.1): one live object of a snapshot (`ObjectReferences`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    HeapObject = HEAP_OBJECT {
        /// The snapshot.
        snapshot: u32,
        /// The object's address (`ObjectID`) after the collection.
        object: u64,
        /// Its `ClassID`.
        class: u64,
        /// Its size in bytes.
        size: u64,
        /// The objects it references (a reference may repeat).
        refs: Vec<u64>,
    }

    /// Kind 44 (format 1.1): one root of a snapshot (`RootReferences2`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    HeapRoot = HEAP_ROOT {
        /// The snapshot.
        snapshot: u32,
        /// The object the root references.
        object: u64,
        /// `COR_PRF_GC_ROOT_KIND`: 0 other, 1 stack, 2 finalizer queue, 3 handle.
        kind: u8,
        /// `COR_PRF_GC_ROOT_FLAGS`: 1 pinning, 2 weak, 4 interior, 8 reference-counted.
        flags: u8,
        /// The root's id: the handle for handles, the function for stack roots (may be 0).
        id: u64,
    }

    /// Kind 45 (format 1.1): a heap snapshot is complete.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    HeapSnapshotEnd = HEAP_SNAPSHOT_END {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// The snapshot.
        snapshot: u32,
        /// Objects written.
        objects: u64,
        /// Roots written.
        roots: u64,
        /// References cut because an object had more than a record holds.
        refs_cut: u64,
    }

    /// Kind 46 (format 1.1): the address ranges of the GC generations when a snapshot's heap
    /// is walked (`GetGenerationBounds` at `GarbageCollectionFinished`), to tell each object's
    /// generation.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    HeapGenerations = HEAP_GENERATIONS {
        /// The snapshot.
        snapshot: u32,
        /// Triples `generation, start, length` (generation 0, 1, 2, 3 = large object heap,
        /// 4 = pinned object heap).
        ranges: Vec<u64>,
    }

    /// Kind 47 (format 1.1): `ObjectsAllocatedByClass`, objects allocated per class since the
    /// previous collection, reported during a collection's heap walk.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    AllocatedByClass = ALLOCATED_BY_CLASS {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// Pairs `class, count`.
        counts: Vec<u64>,
    }

    /// Kind 48 (format 1.10): a static field of a reference type and the object it held when
    /// a snapshot's heap was walked, so that reports name the object's root by the field
    /// (`static Cache.Entries`) rather than by the runtime's array of statics that holds it.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    HeapStatic = HEAP_STATIC {
        /// The snapshot.
        snapshot: u32,
        /// The object the field references (its address after the collection; never 0).
        object: u64,
        /// The `ClassID` of the class that declares the field (an instantiation for a field
        /// of a generic class).
        class: u64,
        /// The field's name.
        field: String,
        /// 0 for an ordinary static; for a `[ThreadStatic]`, the managed `ThreadID` of the
        /// thread whose value this is.
        thread: u64,
    }
}

records! {
    /// Kind 50 (format 1.6): one contended acquisition of a lock (`Monitor.Enter`, `lock`):
    /// the thread waited `duration_ns` from `ts` on.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    Contention = CONTENTION {
        /// When the wait began, nanoseconds since the session's start.
        ts: u64,
        /// OS thread id of the waiting thread.
        tid: u32,
        /// How long the thread waited, in nanoseconds.
        duration_ns: u64,
        /// The waiting stack's [`StackDef`] node (innermost frame: where it waits), 0 if
        /// unknown.
        stack: u32,
        /// The lock object's `ClassID` (see [`ClassDef`]), 0 if unknown.
        class: u64,
        /// The runtime's id of the lock (its `AwareLock`), to tell locks of one type apart; 0
        /// if unknown.
        lock_id: u64,
        /// OS thread id of the thread that held the lock when the wait began, 0 if unknown.
        owner_tid: u32,
        /// Bit 0: a lock of the runtime itself, not a `Monitor`. Bit 1: the duration was
        /// measured between the runtime's start and stop events rather than told by the
        /// runtime.
        flags: u8,
    }
}

impl Contention {
    /// Flag bit: a lock of the runtime itself (the events' `Flags` 1, "native").
    pub const NATIVE: u8 = 1;
    /// Flag bit: `duration_ns` measured between the start and stop events.
    pub const MEASURED: u8 = 2;
    /// The encoded size of the record, header included.
    pub const ENCODED_LEN: usize = RECORD_HEADER_LEN + 8 + 4 + 8 + 4 + 8 + 8 + 4 + 1;

    /// Encodes the record (header and payload) at the start of `buf` without allocating.
    /// Returns the bytes written, or `None` if `buf` is shorter than
    /// [`ENCODED_LEN`](Self::ENCODED_LEN).
    pub fn encode_into(&self, buf: &mut [u8]) -> Option<usize> {
        self.write_record_into(buf, Contention::ENCODED_LEN)
    }
}

impl Allocation {
    /// Flag bit: the object is on the large object heap.
    pub const LARGE_OBJECT_HEAP: u8 = 1;
    /// Flag bit: the object is an array.
    pub const ARRAY: u8 = 2;
    /// Flag bit: a runtime allocation tick; `size` is the bytes it stands for.
    pub const TICK: u8 = 4;
    /// The encoded size of an allocation, record header included.
    pub const ENCODED_LEN: usize = RECORD_HEADER_LEN + 8 + 4 + 8 + 8 + 4 + 8 + 1 + 8;

    /// Encodes the record (header and payload) at the start of `buf` without allocating.
    /// Returns the bytes written, or `None` if `buf` is shorter than
    /// [`ENCODED_LEN`](Self::ENCODED_LEN).
    pub fn encode_into(&self, buf: &mut [u8]) -> Option<usize> {
        self.write_record_into(buf, Allocation::ENCODED_LEN)
    }
}

records! {
    /// Kind 35 (format 1.1): what the agent learned about a thrown exception, written just
    /// before its `ExceptionThrown` event.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    ExceptionInfo = EXCEPTION_INFO {
        /// Nanoseconds since the session's start.
        ts: u64,
        /// OS thread id of the throwing thread.
        tid: u32,
        /// The exception object (the `ObjectID` of the `ExceptionThrown` event).
        object: u64,
        /// The exception's message as stored in the object (`Exception._message`); empty when
        /// it has none (the runtime then makes one up from resources when asked).
        message: String,
        /// The managed stack at the throw, innermost first (`FunctionID`s).
        stack: Vec<u64>,
        /// Whether `stack` was cut short.
        stack_truncated: bool,
    } + (added in 1.9) {
        /// Where each frame of `stack` was in its method's IL (the throw, then each caller's
        /// call), in the same order; empty when not known.
        stack_il: Vec<IlPosition>,
    }

    /// Kind 36 (format 1.1): definition of where a P/Invoke method goes, written with its
    /// `Function` definition.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    NativeTargetDef = NATIVE_TARGET {
        /// The P/Invoke method's `FunctionID`.
        function: u64,
        /// The library as the program names it (`libc`, `kernel32.dll`).
        library: String,
        /// The native function's name.
        entry_point: String,
    }

    /// Kind 60 (format 1.1): basic-block hit counts of one method the agent instrumented for
    /// coverage, written at shutdown.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    CoverageMethod = COVERAGE_METHOD {
        /// Its module (a [`ModuleDef`] gives the path).
        module: u64,
        /// Its MethodDef token.
        token: u32,
        /// Declaring type, generic parameters by their declared names (`Shop.Box<T>`).
        type_name: String,
        /// Method name, with its generic parameters (`Pick<T>`).
        method_name: String,
        /// Parameter list (`(bool, T, T)`).
        signature: String,
        /// Its blocks in IL order.
        blocks: Vec<CoverageBlock>,
    }
}

mod counts;
pub use counts::{CallCounts, CallKind, CallSite, CountedMethod, MAX_CALL_SITES};

/// Kind 32: one profiler callback.
///
/// `Copy` and fixed-size so that the agent can build and encode one without allocating: see
/// [`Event::encode_into`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Event {
    /// Nanoseconds since the session's start.
    pub ts: u64,
    /// OS thread id of the thread the callback ran on.
    pub tid: u32,
    /// The callback.
    pub event: EventKind,
    /// Unused entries are always 0, so that derived equality compares only the args.
    args: [u64; Event::MAX_ARGS],
    len: u8,
}

impl Event {
    /// Most args an event carries.
    pub const MAX_ARGS: usize = 8;
    /// Encoded size of an event with [`MAX_ARGS`](Self::MAX_ARGS) args, record header included.
    pub const MAX_ENCODED_LEN: usize = RECORD_HEADER_LEN + 18 + 8 * Event::MAX_ARGS;

    /// An event with the given args; args past the first [`MAX_ARGS`](Self::MAX_ARGS) are
    /// dropped.
    pub fn new(ts: u64, tid: u32, event: EventKind, args: &[u64]) -> Event {
        let n = args.len().min(Event::MAX_ARGS);
        let mut arr = [0u64; Event::MAX_ARGS];
        arr[..n].copy_from_slice(&args[..n]);
        Event {
            ts,
            tid,
            event,
            args: arr,
            len: n as u8,
        }
    }

    /// The args, in order; [`EventKind::arg_names`] says what each means.
    pub fn args(&self) -> &[u64] {
        &self.args[..usize::from(self.len).min(Event::MAX_ARGS)]
    }

    /// The `i`-th arg, if the event has one.
    pub fn arg(&self, i: usize) -> Option<u64> {
        self.args().get(i).copied()
    }

    /// The encoded size of this event, record header included.
    pub fn encoded_len(&self) -> usize {
        RECORD_HEADER_LEN + self.payload_len()
    }

    /// Encodes the record (header and payload) at the start of `buf` without allocating.
    /// Returns the bytes written, or `None` (with `buf` partly written) if it does not fit;
    /// [`MAX_ENCODED_LEN`](Self::MAX_ENCODED_LEN) bytes always suffice.
    pub fn encode_into(&self, buf: &mut [u8]) -> Option<usize> {
        if buf.len() < self.encoded_len() {
            return None;
        }
        let mut sink = SliceSink::new(buf);
        self.write_record(&mut sink);
        sink.finish()
    }
}

impl Payload for Event {
    const KIND: RecordKind = RecordKind::EVENT;

    fn payload_len(&self) -> usize {
        8 + 4 + 2 + 4 + 8 * self.args().len()
    }

    fn write_payload<S: Sink>(&self, s: &mut S) {
        self.ts.put(s);
        self.tid.put(s);
        self.event.put(s);
        (self.args().len() as u32).put(s);
        for a in self.args() {
            a.put(s);
        }
    }

    fn read_payload(f: &mut Fields<'_>) -> Result<Self, FieldError> {
        let ts = f.u64("ts")?;
        let tid = f.u32("tid")?;
        let event = EventKind::take(f, "event")?;
        let n = f.count("args", 8, Event::MAX_ARGS)?;
        let mut args = [0u64; Event::MAX_ARGS];
        for slot in args.iter_mut().take(n) {
            *slot = f.u64("args")?;
        }
        Ok(Event {
            ts,
            tid,
            event,
            args,
            len: n as u8,
        })
    }
}

impl From<Event> for Record {
    fn from(e: Event) -> Record {
        Record::Event(e)
    }
}

impl Sample {
    /// The encoded size of a sample, record header included.
    pub const ENCODED_LEN: usize = RECORD_HEADER_LEN + 8 + 4 + 4 + 8 + 8 + 1 + 8 + 1;

    /// Encodes the record (header and payload) at the start of `buf` without allocating.
    /// Returns the bytes written ([`ENCODED_LEN`](Self::ENCODED_LEN)), or `None` if `buf` is
    /// shorter.
    pub fn encode_into(&self, buf: &mut [u8]) -> Option<usize> {
        self.write_record_into(buf, Sample::ENCODED_LEN)
    }
}

/// One record of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Record {
    /// Kind 1.
    SessionStart(SessionStart),
    /// Kind 2.
    SessionEnd(SessionEnd),
    /// Kind 3.
    RecordingEnd(RecordingEnd),
    /// Kind 4.
    Counter(Counter),
    /// Kind 5.
    Message(Message),
    /// Kind 6 (1.2).
    SamplerInfo(SamplerInfo),
    /// Kind 7 (3.5).
    Section(Section),
    /// Kind 8 (1.5).
    ProcessDef(ProcessDef),
    /// Kind 9 (1.5).
    ProcessExit(ProcessExit),
    /// Kind 16.
    AppDomainDef(AppDomainDef),
    /// Kind 17.
    AssemblyDef(AssemblyDef),
    /// Kind 18.
    ModuleDef(ModuleDef),
    /// Kind 19.
    ClassDef(ClassDef),
    /// Kind 20.
    FunctionDef(FunctionDef),
    /// Kind 21.
    ThreadDef(ThreadDef),
    /// Kind 24 (1.2).
    ThreadOsName(ThreadOsName),
    /// Kind 22.
    NativeFrameDef(NativeFrameDef),
    /// Kind 25 (1.3).
    NativeModuleDef(NativeModuleDef),
    /// Kind 23.
    StackDef(StackDef),
    /// Kind 32.
    Event(Event),
    /// Kind 33.
    Sample(Sample),
    /// Kind 34.
    CallTreeNode(CallTreeNode),
    /// Kind 35.
    ExceptionInfo(ExceptionInfo),
    /// Kind 36.
    NativeTargetDef(NativeTargetDef),
    /// Kind 40 (1.1).
    Allocation(Allocation),
    /// Kind 50.
    Contention(Contention),
    /// Kind 41 (1.1).
    GcGenerations(GcGenerations),
    /// Kind 42 (1.1).
    HeapSnapshot(HeapSnapshot),
    /// Kind 43 (1.1).
    HeapObject(HeapObject),
    /// Kind 44 (1.1).
    HeapRoot(HeapRoot),
    /// Kind 45 (1.1).
    HeapSnapshotEnd(HeapSnapshotEnd),
    /// Kind 46 (1.1).
    HeapGenerations(HeapGenerations),
    /// Kind 47 (1.1).
    AllocatedByClass(AllocatedByClass),
    /// Kind 48 (1.10).
    HeapStatic(HeapStatic),
    /// Kind 60.
    CoverageMethod(CoverageMethod),
    /// Kind 61 (1.4).
    CountedMethod(CountedMethod),
    /// Kind 62 (1.4).
    CallCounts(CallCounts),
    /// A kind this crate does not know, from a newer minor version of the format. Readers
    /// skip (and may count) it; a writer copies it as it is.
    Unknown {
        /// The record's kind.
        kind: RecordKind,
        /// The record's payload.
        payload: Vec<u8>,
    },
}

/// Runs `$body` with `$r` bound to the typed record, or `$unknown` for [`Record::Unknown`].
macro_rules! with_record {
    ($self:expr, $r:ident => $body:expr, $kind:ident, $payload:ident => $unknown:expr) => {
        match $self {
            Record::SessionStart($r) => $body,
            Record::SessionEnd($r) => $body,
            Record::RecordingEnd($r) => $body,
            Record::Counter($r) => $body,
            Record::Message($r) => $body,
            Record::SamplerInfo($r) => $body,
            Record::Section($r) => $body,
            Record::ProcessDef($r) => $body,
            Record::ProcessExit($r) => $body,
            Record::AppDomainDef($r) => $body,
            Record::AssemblyDef($r) => $body,
            Record::ModuleDef($r) => $body,
            Record::ClassDef($r) => $body,
            Record::FunctionDef($r) => $body,
            Record::ThreadDef($r) => $body,
            Record::ThreadOsName($r) => $body,
            Record::NativeFrameDef($r) => $body,
            Record::NativeModuleDef($r) => $body,
            Record::StackDef($r) => $body,
            Record::Event($r) => $body,
            Record::Sample($r) => $body,
            Record::CallTreeNode($r) => $body,
            Record::ExceptionInfo($r) => $body,
            Record::NativeTargetDef($r) => $body,
            Record::Allocation($r) => $body,
            Record::Contention($r) => $body,
            Record::GcGenerations($r) => $body,
            Record::HeapSnapshot($r) => $body,
            Record::HeapObject($r) => $body,
            Record::HeapRoot($r) => $body,
            Record::HeapSnapshotEnd($r) => $body,
            Record::HeapGenerations($r) => $body,
            Record::AllocatedByClass($r) => $body,
            Record::HeapStatic($r) => $body,
            Record::CoverageMethod($r) => $body,
            Record::CountedMethod($r) => $body,
            Record::CallCounts($r) => $body,
            Record::Unknown {
                kind: $kind,
                payload: $payload,
            } => $unknown,
        }
    };
}

/// Reads a typed payload.
fn read<T: Payload>(payload: &[u8]) -> Result<T, FieldError> {
    T::read_payload(&mut Fields::new(payload))
}

/// The kind's generic implementation, for code that only has a `T`.
fn kind_of<T: Payload>(_: &T) -> RecordKind {
    T::KIND
}

impl Record {
    /// The record's kind.
    pub fn kind(&self) -> RecordKind {
        with_record!(self, r => kind_of(r), kind, _p => *kind)
    }

    /// See [`Payload::optional_ends`] (none for an unknown kind).
    #[cfg(test)]
    fn optional_ends(&self) -> Vec<usize> {
        with_record!(self, r => r.optional_ends(), _k, _p => Vec::new())
    }

    /// The record's timestamp (nanoseconds since the session's start), for the kinds that
    /// have one.
    pub fn ts(&self) -> Option<u64> {
        match self {
            Record::SessionEnd(r) => Some(r.ts),
            Record::Counter(r) => Some(r.ts),
            Record::Message(r) => Some(r.ts),
            Record::Event(r) => Some(r.ts),
            Record::Sample(r) => Some(r.ts),
            Record::ExceptionInfo(r) => Some(r.ts),
            Record::Allocation(r) => Some(r.ts),
            Record::Contention(r) => Some(r.ts),
            Record::GcGenerations(r) => Some(r.ts),
            Record::HeapSnapshot(r) => Some(r.ts),
            Record::HeapSnapshotEnd(r) => Some(r.ts),
            Record::AllocatedByClass(r) => Some(r.ts),
            Record::ProcessExit(r) => Some(r.ts),
            _ => None,
        }
    }

    /// Size of the encoded payload.
    fn payload_len(&self) -> usize {
        with_record!(self, r => r.payload_len(), _k, payload => payload.len().min(MAX_PAYLOAD_LEN))
    }

    /// Size of the encoded record, header included: what [`encode`](Self::encode) appends.
    pub fn encoded_len(&self) -> usize {
        RECORD_HEADER_LEN + self.payload_len()
    }

    fn write<S: Sink>(&self, s: &mut S) {
        with_record!(self, r => r.write_record(s), kind, payload => {
            let payload = &payload[..payload.len().min(MAX_PAYLOAD_LEN)];
            write_record_header(s, *kind, payload.len());
            s.put(payload);
        })
    }

    /// Appends the encoded record (header and payload) to `out`.
    ///
    /// Strings longer than [`crate::MAX_STR_LEN`] are cut at a character boundary, and an
    /// [`Record::Unknown`] payload longer than [`MAX_PAYLOAD_LEN`] is cut to it, so that what
    /// this writes is always readable.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        self.write(out);
    }

    /// Encodes the record at the start of `buf` without allocating. Returns the bytes written,
    /// or `None` (with `buf` partly written) if it does not fit.
    pub fn encode_into(&self, buf: &mut [u8]) -> Option<usize> {
        if buf.len() < self.encoded_len() {
            return None;
        }
        let mut sink = SliceSink::new(buf);
        self.write(&mut sink);
        sink.finish()
    }

    /// Decodes a payload of the given kind; `offset` is the file offset of the record (its
    /// header), used in error messages. Trailing bytes the kind does not define are ignored.
    pub(crate) fn decode(
        kind: RecordKind,
        payload: &[u8],
        offset: u64,
    ) -> Result<Record, ReadError> {
        let result = match kind {
            RecordKind::SESSION_START => read::<SessionStart>(payload).map(Record::from),
            RecordKind::SESSION_END => read::<SessionEnd>(payload).map(Record::from),
            RecordKind::RECORDING_END => read::<RecordingEnd>(payload).map(Record::from),
            RecordKind::COUNTER => read::<Counter>(payload).map(Record::from),
            RecordKind::MESSAGE => read::<Message>(payload).map(Record::from),
            RecordKind::SAMPLER_INFO => read::<SamplerInfo>(payload).map(Record::from),
            RecordKind::SECTION => read::<Section>(payload).map(Record::from),
            RecordKind::PROCESS => read::<ProcessDef>(payload).map(Record::from),
            RecordKind::PROCESS_EXIT => read::<ProcessExit>(payload).map(Record::from),
            RecordKind::APP_DOMAIN => read::<AppDomainDef>(payload).map(Record::from),
            RecordKind::ASSEMBLY => read::<AssemblyDef>(payload).map(Record::from),
            RecordKind::MODULE => read::<ModuleDef>(payload).map(Record::from),
            RecordKind::CLASS => read::<ClassDef>(payload).map(Record::from),
            RecordKind::FUNCTION => read::<FunctionDef>(payload).map(Record::from),
            RecordKind::THREAD => read::<ThreadDef>(payload).map(Record::from),
            RecordKind::THREAD_OS_NAME => read::<ThreadOsName>(payload).map(Record::from),
            RecordKind::NATIVE_FRAME => read::<NativeFrameDef>(payload).map(Record::from),
            RecordKind::NATIVE_MODULE => read::<NativeModuleDef>(payload).map(Record::from),
            RecordKind::STACK => read::<StackDef>(payload).map(Record::from),
            RecordKind::EVENT => read::<Event>(payload).map(Record::from),
            RecordKind::SAMPLE => read::<Sample>(payload).map(Record::from),
            RecordKind::CALL_TREE_NODE => read::<CallTreeNode>(payload).map(Record::from),
            RecordKind::EXCEPTION_INFO => read::<ExceptionInfo>(payload).map(Record::from),
            RecordKind::NATIVE_TARGET => read::<NativeTargetDef>(payload).map(Record::from),
            RecordKind::ALLOCATION => read::<Allocation>(payload).map(Record::from),
            RecordKind::CONTENTION => read::<Contention>(payload).map(Record::from),
            RecordKind::GC_GENERATIONS => read::<GcGenerations>(payload).map(Record::from),
            RecordKind::HEAP_SNAPSHOT => read::<HeapSnapshot>(payload).map(Record::from),
            RecordKind::HEAP_OBJECT => read::<HeapObject>(payload).map(Record::from),
            RecordKind::HEAP_ROOT => read::<HeapRoot>(payload).map(Record::from),
            RecordKind::HEAP_SNAPSHOT_END => read::<HeapSnapshotEnd>(payload).map(Record::from),
            RecordKind::HEAP_GENERATIONS => read::<HeapGenerations>(payload).map(Record::from),
            RecordKind::ALLOCATED_BY_CLASS => read::<AllocatedByClass>(payload).map(Record::from),
            RecordKind::HEAP_STATIC => read::<HeapStatic>(payload).map(Record::from),
            RecordKind::COVERAGE_METHOD => read::<CoverageMethod>(payload).map(Record::from),
            RecordKind::COUNTED_METHOD => read::<CountedMethod>(payload).map(Record::from),
            RecordKind::CALL_COUNTS => read::<CallCounts>(payload).map(Record::from),
            kind => Ok(Record::Unknown {
                kind,
                payload: payload.to_vec(),
            }),
        };
        result.map_err(|e| ReadError::Corrupt {
            offset: offset + (RECORD_HEADER_LEN + e.at()) as u64,
            reason: format!(
                "{} at byte {offset}: {}",
                crate::error::describe_kind(kind),
                e.describe(payload.len())
            ),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One record of each kind, with every field set to something recognizable.
    pub(crate) fn samples() -> Vec<Record> {
        vec![
            Record::SessionStart(SessionStart {
                pid: 4242,
                agent_version: "0.1.0".into(),
                runtime: "CoreCLR 4.0.30319.0".into(),
                info_version: 15,
                callback_version: 11,
                start_unix_ns: 1_700_000_000_123_456_789,
                event_mask: 0x0000_0000_8000_00a0,
                event_mask_high: 0x1,
                config: "mode=sample;events=jit,gc".into(),
                command_line: "dotnet app.dll --flag".into(),
            }),
            Record::SessionEnd(SessionEnd {
                ts: 9_000_000,
                reason: "shutdown".into(),
            }),
            Record::RecordingEnd(RecordingEnd {
                duration_ns: 10_000_000,
                exit_code: -1,
                signal: 11,
                agent_connected: true,
                clean: false,
            }),
            Record::Counter(Counter {
                ts: 8_000_000,
                name: "events_dropped".into(),
                value: 3,
            }),
            Record::Message(Message {
                ts: 8_500_000,
                level: MessageLevel::Warning,
                text: "SetEventMask2 refused COR_PRF_HIGH_BASIC_GC".into(),
            }),
            Record::SamplerInfo(SamplerInfo {
                cpu_clock: "perf task-clock".into(),
                cpu_rate_hz: 1000,
                wall_rate_hz: 100,
            }),
            Record::Section(Section { process: 2 }),
            Record::ProcessDef(ProcessDef {
                process: 2,
                pid: 4243,
                parent_pid: 4242,
                start_unix_ns: 1_700_000_000_223_456_789,
                command_line: "dotnet child.dll 7".into(),
                left_out: 0,
            }),
            Record::ProcessExit(ProcessExit {
                ts: 9_500_000,
                exit_code: 3,
            }),
            Record::AppDomainDef(AppDomainDef {
                id: 0x7f00_0000_1000,
                name: "clrhost".into(),
            }),
            Record::AssemblyDef(AssemblyDef {
                id: 0x7f00_0000_2000,
                app_domain: 0x7f00_0000_1000,
                name: "System.Private.CoreLib".into(),
            }),
            Record::ModuleDef(ModuleDef {
                id: 0x7f00_0000_3000,
                assembly: 0x7f00_0000_2000,
                base_address: 0x7f12_3400_0000,
                path: "/usr/share/dotnet/shared/System.Private.CoreLib.dll".into(),
                assembly_name: "System.Private.CoreLib".into(),
            }),
            Record::ClassDef(ClassDef {
                id: 0x7f00_0000_4000,
                module: 0x7f00_0000_3000,
                token: 0x0200_0042,
                name: "System.Collections.Generic.List<int>".into(),
            }),
            Record::FunctionDef(FunctionDef {
                id: 0x7f00_0000_5000,
                class: 0x7f00_0000_4000,
                module: 0x7f00_0000_3000,
                token: 0x0600_0123,
                type_name: "System.Linq.Enumerable".into(),
                method_name: "Select<int, string>".into(),
                signature: "(IEnumerable<int>, Func<int, string>)".into(),
            }),
            Record::ThreadDef(ThreadDef {
                tid: 4243,
                managed_id: 0x55aa,
                name: "Worker ü".into(),
            }),
            Record::ThreadOsName(ThreadOsName {
                tid: 4244,
                name: ".NET TP Worker".into(),
            }),
            Record::NativeFrameDef(NativeFrameDef {
                id: 7,
                address: 0x7f99_0000_1234,
                library: "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so"
                    .into(),
                symbol: String::new(),
                module: 3,
                function: 0x1f_2a30,
            }),
            Record::NativeModuleDef(NativeModuleDef {
                id: 3,
                path: "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so".into(),
                build_id: "5d1c2fe34e4ab1a6f0e6b6cc0f0f1e9a6d29d3b2".into(),
            }),
            Record::StackDef(StackDef {
                id: 2,
                parent: 1,
                frame_kind: FrameKind::Native,
                frame: 7,
                il: IlPosition::Unknown,
            }),
            Record::Event(Event::new(
                1_234_567,
                4243,
                EventKind::EXCEPTION_THROWN,
                &[0x7f55_0000_0010, 0x7f00_0000_4000, 0x7f00_0000_5000],
            )),
            Record::Sample(Sample {
                ts: 2_000_000,
                tid: 4243,
                stack: 2,
                cpu_ns: 900_000,
                wall_ns: 1_000_000,
                state: ThreadState::Running,
                sys_ns: 0,
                clock: SampleClock::Unknown,
            }),
            Record::Sample(Sample {
                ts: 2_500_000,
                tid: 4243,
                stack: 2,
                cpu_ns: 1_100_000,
                wall_ns: 0,
                state: ThreadState::Cpu,
                sys_ns: 400_000,
                clock: SampleClock::Timer,
            }),
            Record::CallTreeNode(CallTreeNode {
                tid: 4243,
                node: 5,
                parent: 4,
                function: 0x7f00_0000_5000,
                calls: 1000,
                self_samples: 12,
                self_cpu_ns: 12_000_000,
                self_wall_ns: 13_000_000,
            }),
            Record::ExceptionInfo(ExceptionInfo {
                ts: 3_000_000,
                tid: 4243,
                object: 0x7f10_0000_0040,
                message: "bad input".into(),
                stack: vec![0x7f00_0000_5000, 0x7f00_0000_4000],
                stack_truncated: false,
                stack_il: vec![IlPosition::At(7), IlPosition::Epilogue],
            }),
            Record::NativeTargetDef(NativeTargetDef {
                function: 0x7f00_0000_6000,
                library: "libc".into(),
                entry_point: "getpid".into(),
            }),
            Record::Allocation(Allocation {
                ts: 3_000_000,
                tid: 4243,
                class: 0x7f00_0000_4000,
                size: 100_024,
                stack: 2,
                interval: 102_400,
                flags: Allocation::LARGE_OBJECT_HEAP | Allocation::ARRAY,
                array_length: 100_000,
            }),
            Record::Contention(Contention {
                ts: 3_500_000,
                tid: 4243,
                duration_ns: 20_123_456,
                stack: 2,
                class: 0x7f00_0000_4000,
                lock_id: 0x5600_0000_1230,
                owner_tid: 4244,
                flags: Contention::MEASURED,
            }),
            Record::GcGenerations(GcGenerations {
                ts: 4_000_000,
                phase: 1,
                sizes: vec![24, 1_000_000, 2_000_000, 85_000, 0],
            }),
            Record::HeapSnapshot(HeapSnapshot {
                ts: 5_000_000,
                snapshot: 1,
                gc: 3,
            }),
            Record::HeapObject(HeapObject {
                snapshot: 1,
                object: 0x7f55_0000_1000,
                class: 0x7f00_0000_4000,
                size: 40,
                refs: vec![0x7f55_0000_2000, 0x7f55_0000_1000],
            }),
            Record::HeapRoot(HeapRoot {
                snapshot: 1,
                object: 0x7f55_0000_1000,
                kind: 2,
                flags: 1,
                id: 0x7f00_0000_9000,
            }),
            Record::HeapStatic(HeapStatic {
                snapshot: 1,
                object: 0x7f55_0000_1000,
                class: 0x7f00_0000_4000,
                field: "Entries".into(),
                thread: 0,
            }),
            Record::HeapGenerations(HeapGenerations {
                snapshot: 1,
                ranges: vec![0, 0x7f55_0000_0000, 4096, 2, 0x7f56_0000_0000, 65536],
            }),
            Record::AllocatedByClass(AllocatedByClass {
                ts: 5_200_000,
                counts: vec![0x7f00_0000_4000, 1000, 0x7f00_0000_4100, 3],
            }),
            Record::HeapSnapshotEnd(HeapSnapshotEnd {
                ts: 5_500_000,
                snapshot: 1,
                objects: 1,
                roots: 1,
                refs_cut: 0,
            }),
            Record::CoverageMethod(CoverageMethod {
                module: 0x7f00_0000_1000,
                token: 0x0600_0002,
                type_name: "Shop.Box<T>".into(),
                method_name: "Pick<U>".into(),
                signature: "(bool, U, U)".into(),
                blocks: vec![
                    CoverageBlock {
                        il_start: 0,
                        il_end: 7,
                        hits: 3,
                    },
                    CoverageBlock {
                        il_start: 7,
                        il_end: 9,
                        hits: 0,
                    },
                ],
            }),
            Record::CountedMethod(CountedMethod {
                id: 3,
                module: 0x7f00_0000_1000,
                token: 0x0600_0004,
                function: 0x7f00_0000_5000,
                type_name: "Calls".into(),
                method_name: "Fib".into(),
                signature: "(int)".into(),
                sites: vec![
                    CallSite {
                        il_offset: 9,
                        kind: CallKind::Call,
                        callee_token: 0x0600_0004,
                        callee: "Calls.Fib(int)".into(),
                    },
                    CallSite {
                        il_offset: 21,
                        kind: CallKind::CallVirt,
                        callee_token: 0,
                        callee: "System.Func<long, long>.Invoke(long)".into(),
                    },
                ],
            }),
            Record::CallCounts(CallCounts {
                tid: 4243,
                method: 3,
                calls: 242_785,
                sites: vec![121_392, 0],
            }),
            Record::Unknown {
                kind: RecordKind(200),
                payload: vec![1, 2, 3, 4, 5],
            },
        ]
    }

    fn decode_one(bytes: &[u8]) -> Record {
        let kind = RecordKind(u16::from_le_bytes([bytes[0], bytes[1]]));
        let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        assert_eq!(bytes.len(), RECORD_HEADER_LEN + len);
        Record::decode(kind, &bytes[RECORD_HEADER_LEN..], 16).unwrap()
    }

    #[test]
    fn every_kind_round_trips() {
        let samples = samples();
        let kinds: Vec<RecordKind> = samples.iter().map(Record::kind).collect();
        for k in RecordKind::KNOWN {
            assert!(kinds.contains(k), "no sample of {k}");
        }
        for r in samples {
            let mut out = Vec::new();
            r.encode(&mut out);
            assert_eq!(out.len(), r.encoded_len(), "{:?}", r.kind());
            assert_eq!(decode_one(&out), r);
            let mut buf = vec![0u8; out.len()];
            assert_eq!(r.encode_into(&mut buf), Some(out.len()));
            assert_eq!(buf, out);
            assert_eq!(r.encode_into(&mut buf[..out.len() - 1]), None);
        }
    }

    #[test]
    fn trailing_payload_bytes_are_ignored() {
        for r in samples() {
            let mut out = Vec::new();
            r.encode(&mut out);
            let len = u32::from_le_bytes([out[4], out[5], out[6], out[7]]) + 3;
            out[4..8].copy_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&[0xaa, 0xbb, 0xcc]);
            match r {
                Record::Unknown { kind, mut payload } => {
                    payload.extend_from_slice(&[0xaa, 0xbb, 0xcc]);
                    assert_eq!(decode_one(&out), Record::Unknown { kind, payload });
                }
                r => assert_eq!(decode_one(&out), r),
            }
        }
    }

    #[test]
    fn short_payloads_are_corrupt() {
        for r in samples() {
            if let Record::Unknown { .. } = r {
                continue;
            }
            let mut out = Vec::new();
            r.encode(&mut out);
            let complete = r.optional_ends();
            for cut in RECORD_HEADER_LEN..out.len() {
                let payload = &out[RECORD_HEADER_LEN..cut];
                if complete.contains(&payload.len()) {
                    // An older minor version's payload, without the fields added since: read
                    // with those fields 0 or empty.
                    let older = Record::decode(r.kind(), payload, 16).unwrap();
                    let mut again = Vec::new();
                    older.encode(&mut again);
                    assert_eq!(again[8..cut], out[8..cut], "{older:?}");
                    assert!(again[cut..].iter().all(|&b| b == 0), "{older:?}");
                    continue;
                }
                let err = Record::decode(r.kind(), payload, 16).unwrap_err();
                assert!(matches!(err, ReadError::Corrupt { .. }), "{err}");
                assert!(err.to_string().contains(&r.kind().to_string()), "{err}");
            }
        }
    }

    #[test]
    fn native_frames_of_format_1_2_have_no_module_or_function() {
        // A NativeFrame payload as clrprof 1.2 wrote it: id, address, library, symbol.
        let mut payload = Vec::new();
        payload.extend_from_slice(&7u64.to_le_bytes());
        payload.extend_from_slice(&0x7f99_0000_1234u64.to_le_bytes());
        payload.extend_from_slice(&15u32.to_le_bytes());
        payload.extend_from_slice(b"/lib/libfoo.so1");
        payload.extend_from_slice(&3u32.to_le_bytes());
        payload.extend_from_slice(b"foo");
        let r = Record::decode(RecordKind::NATIVE_FRAME, &payload, 16).unwrap();
        assert_eq!(
            r,
            Record::NativeFrameDef(NativeFrameDef {
                id: 7,
                address: 0x7f99_0000_1234,
                library: "/lib/libfoo.so1".into(),
                symbol: "foo".into(),
                module: 0,
                function: 0,
            })
        );
        // Only the fields added since can be missing, and only whole: a payload ending
        // inside `module` is corrupt.
        payload.extend_from_slice(&[1, 2, 3]);
        let err = Record::decode(RecordKind::NATIVE_FRAME, &payload, 16).unwrap_err();
        assert!(err.to_string().contains("`module`"), "{err}");
        // And the 1.3 fields are where 1.3 writes them.
        let r = NativeFrameDef {
            id: 7,
            address: 1,
            library: "l".into(),
            symbol: String::new(),
            module: 2,
            function: 0x1f_2a30,
        };
        let mut out = Vec::new();
        Record::NativeFrameDef(r.clone()).encode(&mut out);
        assert_eq!(out[out.len() - 16..out.len() - 8], 2u64.to_le_bytes());
        assert_eq!(out[out.len() - 8..], 0x1f_2a30u64.to_le_bytes());
    }

    #[test]
    fn event_encodes_without_allocating_into_a_slice() {
        let e = Event::new(1, 2, EventKind::OBJECT_ALLOCATED, &[10, 20, 30]);
        assert_eq!(e.args(), [10, 20, 30]);
        assert_eq!(e.arg(2), Some(30));
        assert_eq!(e.arg(3), None);
        let mut buf = [0u8; Event::MAX_ENCODED_LEN];
        let n = e.encode_into(&mut buf).unwrap();
        assert_eq!(n, e.encoded_len());
        assert_eq!(n, 8 + 18 + 24);
        assert_eq!(decode_one(&buf[..n]), Record::Event(e));
        assert_eq!(e.encode_into(&mut buf[..n - 1]), None);

        let full = Event::new(1, 2, EventKind(200), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(full.args(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(full.encode_into(&mut buf), Some(Event::MAX_ENCODED_LEN));
        assert_eq!(
            full,
            Event::new(1, 2, EventKind(200), &[1, 2, 3, 4, 5, 6, 7, 8])
        );
    }

    #[test]
    fn sample_encodes_into_a_slice() {
        let s = Sample {
            ts: 1,
            tid: 2,
            stack: 3,
            cpu_ns: 4,
            wall_ns: 5,
            state: ThreadState::Blocked,
            sys_ns: 3,
            clock: SampleClock::Perf,
        };
        let mut buf = [0u8; 64];
        assert_eq!(s.encode_into(&mut buf), Some(Sample::ENCODED_LEN));
        assert_eq!(Record::Sample(s).encoded_len(), Sample::ENCODED_LEN);
        assert_eq!(decode_one(&buf[..Sample::ENCODED_LEN]), Record::Sample(s));
        assert_eq!(s.encode_into(&mut buf[..Sample::ENCODED_LEN - 1]), None);
    }

    #[test]
    fn event_with_too_many_args_is_corrupt() {
        let mut out = Vec::new();
        Record::Event(Event::new(1, 2, EventKind::SHUTDOWN, &[])).encode(&mut out);
        let mut payload = out[RECORD_HEADER_LEN..].to_vec();
        payload[14..18].copy_from_slice(&9u32.to_le_bytes());
        payload.extend_from_slice(&[0u8; 72]);
        let err = Record::decode(RecordKind::EVENT, &payload, 100).unwrap_err();
        assert_eq!(
            err.to_string(),
            "corrupt trace at byte 122: the Event record (kind 32) at byte 100: `args` (payload \
             offset 14) has 9 elements, more than the 8 allowed"
        );
        payload[14..18].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Record::decode(RecordKind::EVENT, &payload, 100).is_err());
    }

    #[test]
    fn unknown_enum_values_are_kept() {
        let s = StackDef {
            id: 1,
            parent: 0,
            frame_kind: FrameKind::Other(9),
            frame: 0,
            il: IlPosition::At(0x2a),
        };
        let mut out = Vec::new();
        Record::StackDef(s).encode(&mut out);
        assert_eq!(decode_one(&out), Record::StackDef(s));
        for v in 0..=255u8 {
            assert_eq!(FrameKind::from_u8(v).to_u8(), v);
            assert_eq!(ThreadState::from_u8(v).to_u8(), v);
            assert_eq!(MessageLevel::from_u8(v).to_u8(), v);
        }
        let names: Vec<&str> = (0..4).map(|v| MessageLevel::from_u8(v).name()).collect();
        assert_eq!(names, ["note", "warning", "error", "error"]);
        for v in [0, 1, 2, 0x1000, u32::MAX - 1, u32::MAX] {
            assert_eq!(IlPosition::from_u32(v).to_u32(), v);
        }
        assert_eq!(IlPosition::At(0).to_u32(), 1, "offset 0 is not unknown");
    }

    /// The golden fixture: a whole trace (header and one record of each kind, as [`samples`]
    /// builds them) in hex, one record per paragraph, with its name in a comment.
    fn render_golden() -> String {
        let mut out = String::from(
            "# Golden bytes of the clrprof trace format: a header and one record of each kind,\n\
             # as `Record::encode` writes them. A change here is a change of the format.\n\
             # Regenerate with `CLRPROF_BLESS=1 cargo test -p clrprof-trace`.\n",
        );
        let mut paragraphs = vec![(
            "header".to_string(),
            crate::Header::CURRENT.to_bytes().to_vec(),
        )];
        for r in samples() {
            let mut bytes = Vec::new();
            r.encode(&mut bytes);
            let name = match r.kind().name() {
                Some(name) => format!("{name} (kind {})", r.kind().0),
                None => format!("a kind from a newer minor version (kind {})", r.kind().0),
            };
            paragraphs.push((name, bytes));
        }
        for (name, bytes) in paragraphs {
            out.push_str(&format!("\n# {name}\n"));
            for line in bytes.chunks(16) {
                let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
                out.push_str(&hex.join(" "));
                out.push('\n');
            }
        }
        out
    }

    fn parse_hex(text: &str) -> Vec<u8> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .flat_map(|l| l.split_whitespace())
            .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
            .collect()
    }

    #[test]
    fn golden_bytes() {
        let path =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden.hex");
        let expected = render_golden();
        if std::env::var_os("CLRPROF_BLESS").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &expected).unwrap();
        }
        let found = std::fs::read_to_string(&path).expect("read tests/fixtures/golden.hex");
        // Reading the checked-in bytes gives the sample records, whatever the encoder does.
        let bytes = parse_hex(&found);
        let records: Vec<Record> = crate::Reader::new(&bytes[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records, samples());
        assert!(
            found == expected,
            "the encoding differs from tests/fixtures/golden.hex; if the format changed on \
             purpose, run `CLRPROF_BLESS=1 cargo test -p clrprof-trace` and review the diff"
        );
    }

    #[test]
    fn long_strings_are_cut_so_the_record_stays_readable() {
        let long = "x".repeat(crate::MAX_STR_LEN + 10);
        let r = Record::Counter(Counter {
            ts: 1,
            name: long,
            value: 2,
        });
        let mut out = Vec::new();
        r.encode(&mut out);
        assert_eq!(out.len(), r.encoded_len());
        let Record::Counter(c) = decode_one(&out) else {
            panic!("not a counter")
        };
        assert_eq!(c.name.len(), crate::MAX_STR_LEN);
        assert_eq!(c.value, 2);
    }
}
