//! The messages of pprof's `profile.proto` (package `perftools.profiles`), written out by
//! hand for prost. Field numbers and types follow the upstream definition in google/pprof
//! (`proto/profile.proto`); every string field there is an index into
//! [`Profile::string_table`], whose entry 0 is the empty string.
//!
//! Shared by clrprof-analysis (`report --format pprof`) and clrprof-export (Pyroscope's push
//! API), so that the messages are written once, and so is the building of the tables samples
//! refer to ([`Tables`]).

#![forbid(unsafe_code)]

mod tables;

pub use tables::{StringTable, Tables};

/// A profile: sample types, samples, and the tables they refer to.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each entry of [`Sample::value`] measures, e.g. `cpu`/`nanoseconds`.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Binaries mapped into the process; `mapping[0]` is the main one.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Program locations referred to by samples.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions referred to by locations.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string of the profile; entry 0 must be "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Regexp (string index) of frames to drop with their callees.
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Regexp (string index) of frames to keep even when `drop_frames` matches.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// Collection start, nanoseconds since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Collection length in nanoseconds.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What is counted between two samples, e.g. `cpu`/`nanoseconds`.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// How much of `period_type` passes between two samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The `type` (string index) of the sample type shown by default.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
    /// URL (string index) of documentation for this profile.
    #[prost(int64, tag = "15")]
    pub doc_url: i64,
}

/// A measured quantity and its unit (both string indices).
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct ValueType {
    /// E.g. `cpu`, `samples`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// E.g. `nanoseconds`, `count`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// Values measured in one program context.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Sample {
    /// The stack as location ids, innermost (leaf) first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per [`Profile::sample_type`].
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Extra context such as the thread.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key with a string or numeric value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Label {
    /// Key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index), or 0.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of `num` (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// An address range of a loaded binary.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Mapping {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Load address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End of the mapped range.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// File offset of `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The binary's file name (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Build id (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Whether locations in this mapping have function names.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Whether they have file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Whether they have line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Whether they have inline frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A program location: an address and the function(s) at it.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Location {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping it belongs to, or 0.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// Instruction address, if known.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Functions at this location, inlined ones first.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Whether several symbols share this address.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and source position within a location.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Line {
    /// The [`Function::id`].
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line, or 0.
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// Source column, or 0.
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function (all names are string indices).
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Function {
    /// Unique non-zero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Human-readable name.
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as the system knows it (e.g. mangled).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file.
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function in its file.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
