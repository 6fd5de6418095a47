//! The clrprof trace format.
//!
//! A trace is a 16-byte [`Header`] followed by records. Each record is a `u16` kind, a `u16`
//! flags field, a `u32` payload length and the payload. The format is specified in
//! `docs/trace-format.md`; this crate is its implementation, and the doc's table of event
//! arguments is generated from [`EventKind::arg_names`].
//!
//! The same bytes flow from the agent (inside the profiled process) to the `clrprof` CLI over a
//! socket and from the CLI into the trace file, so this crate serves three users:
//!
//! - **The agent** encodes records. [`Event`] and [`Sample`] are `Copy` and can be encoded into a
//!   caller's `&mut [u8]` with [`Event::encode_into`] and [`Sample::encode_into`], which never
//!   allocate; [`Record::encode`] appends any record to a `Vec<u8>`.
//! - **The CLI** checks what arrives with a [`StreamDecoder`], which takes bytes in whatever
//!   pieces the socket delivers and hands back each complete record both as raw bytes (to copy
//!   into the file) and decoded. [`Writer`] writes a header and records.
//! - **`clrprof report`** reads a file with [`Reader`], an iterator of records.
//!
//! Decoding never panics and never allocates more than the input justifies: every length and
//! count is checked against the bytes that remain before anything is reserved. A reader that
//! cannot read something says why with a [`ReadError`]: not a trace at all, a newer major
//! version, a truncated file or a corrupt record, each with the byte offset in the file.
//!
//! ```
//! use clrprof_trace::{Event, EventKind, Reader, Record, Writer};
//!
//! let mut writer = Writer::new(Vec::new()).unwrap();
//! let event = Event::new(1_000, 42, EventKind::GARBAGE_COLLECTION_STARTED, &[0b11, 1]);
//! writer.write(&Record::Event(event)).unwrap();
//! let bytes = writer.into_inner();
//!
//! let records: Vec<Record> = Reader::new(&bytes[..]).unwrap().collect::<Result<_, _>>().unwrap();
//! assert_eq!(records, [Record::Event(event)]);
//! assert_eq!(EventKind::GARBAGE_COLLECTION_STARTED.arg_names(), ["generations_collected_mask", "reason"]);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod block;
pub mod counters;
mod error;
mod event;
mod header;
mod kind;
mod read;
mod record;
mod stack_nodes;
mod stream;
mod wire;
mod write;

pub mod config;
pub mod example;
pub mod protocol;

pub use block::{
    BLOCK_HEADER_LEN, BLOCK_SYNC, BLOCK_TARGET_LEN, BlockHeader, BlockWriter, MAX_BLOCK_LEN,
};
pub use error::ReadError;
pub use event::callbacks::{self, Callback};
pub use event::{EventCategory, EventKind};
pub use header::Header;
pub use kind::RecordKind;
pub use read::{BlockStats, Reader};
pub use record::{
    AllocatedByClass, Allocation, AppDomainDef, AssemblyDef, CallCounts, CallKind, CallSite,
    CallTreeNode, ClassDef, Contention, CountedMethod, Counter, CoverageBlock, CoverageMethod,
    Event, ExceptionInfo, FrameKind, FunctionDef, GcGenerations, HeapGenerations, HeapObject,
    HeapRoot, HeapSnapshot, HeapSnapshotEnd, HeapStatic, IlPosition, MAX_CALL_SITES,
    MAX_COVERAGE_BLOCKS, MAX_U64_LIST, Message, MessageLevel, ModuleDef, NativeFrameDef,
    NativeModuleDef, NativeTargetDef, ProcessDef, ProcessExit, Record, RecordingEnd, Sample,
    SampleClock, SamplerInfo, Section, SessionEnd, SessionStart, StackCut, StackDef, ThreadDef,
    ThreadOsName, ThreadState,
};
pub use stack_nodes::StackNodes;
pub use stream::{RawRecord, StreamDecoder};
pub use write::{Writer, write_header};

/// The 8 bytes a trace starts with: `"CLRPROF\0"`.
pub const MAGIC: [u8; 8] = *b"CLRPROF\0";
/// The major format version of a record stream: records one after another, what the agent
/// sends to the CLI (and what traces of clrprof before format 2 hold).
pub const FORMAT_MAJOR: u16 = 1;
/// The major format version of a trace file in checksummed blocks, what `clrprof record`
/// writes. A reader of this crate reads both majors.
pub const BLOCKED_MAJOR: u16 = 2;
/// The major format version of a trace file of a process tree: checksummed blocks as in
/// major 2, each beginning with a [`Section`] record that names the process its records
/// belong to (see [`BlockWriter::sectioned`]). What `clrprof record` writes since format 3.5.
pub const SECTIONED_MAJOR: u16 = 3;
/// The minor format version this crate writes: the set of record kinds and fields, shared by
/// every major (a 3.6 file holds the records of 1.6 streams). Traces of any minor version of
/// a known major are readable.
pub const FORMAT_MINOR: u16 = 10;
/// Size of the file header in bytes.
pub const HEADER_LEN: usize = 16;
/// Size of a record's header (kind, flags, payload length) in bytes.
pub const RECORD_HEADER_LEN: usize = 8;
/// The largest payload a record may have (16 MiB). A longer declared length means the file is
/// corrupt.
pub const MAX_PAYLOAD_LEN: usize = 16 << 20;
/// The longest string a writer puts in a record (1 MiB of UTF-8). [`Record::encode`] cuts a
/// longer string at the last character boundary at or below this length, so that every record
/// it writes fits in [`MAX_PAYLOAD_LEN`].
pub const MAX_STR_LEN: usize = 1 << 20;
