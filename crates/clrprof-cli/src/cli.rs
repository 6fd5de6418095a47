//! Command-line syntax. Parsed arguments are turned into plain option structs before the
//! commands run, so nothing below this module depends on clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A profiler for .NET: record a program, then report on what it did.
#[derive(Debug, Parser)]
#[command(name = "clrprof", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a .NET program under the clrprof agent and write a trace.
    Record(RecordArgs),
    /// Summarize a trace, or convert it for a viewer.
    Report(ReportArgs),
    /// Run a .NET program with block counters and write its code coverage.
    Coverage(crate::coverage::CoverageArgs),
}

/// How CPU time is profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Sample every managed thread's stack at --rate Hz (cheap; statistical times).
    Sample,
    /// Count every call through enter/leave hooks (exact calls and call paths; sampled times).
    Trace,
    /// No CPU profiling: only the events chosen with --events.
    None,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// CPU profiling mode.
    #[arg(long, value_enum, default_value = "sample")]
    pub mode: ModeArg,
    /// Runtime events to record, comma-separated: runtime, appdomain, assembly, module,
    /// class, jit, thread, transition, suspension, gc, heap-refs, exception, or all.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub events: Vec<String>,
    /// Sampling rate in Hz (both CPU modes sample).
    #[arg(long, default_value_t = 1000, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub rate: u32,
    /// Trace mode: disable JIT inlining so that every call is counted (slower program).
    #[arg(long)]
    pub no_inline: bool,
    /// Trace mode: the most call tree nodes to keep, all threads together.
    #[arg(long, default_value_t = 2_000_000, value_name = "N")]
    pub max_nodes: u64,
    /// Where to write the trace.
    #[arg(short, long, default_value = "trace.clrprof", value_name = "FILE")]
    pub output: PathBuf,
    /// The agent library to load (default: the one installed next to clrprof).
    #[arg(long, value_name = "PATH", env = "CLRPROF_AGENT")]
    pub agent: Option<PathBuf>,
    /// The program and its arguments. A `.dll` is run with `dotnet`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub command: Vec<String>,
}

/// Output formats of `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// The full report for people: session, events, and the top functions.
    Text,
    /// The full report for programs (see docs/report-json.md).
    Json,
    /// Folded stacks (`a;b;c weight`), for flame graph tools.
    Folded,
    /// A flame graph as SVG.
    Flamegraph,
    /// speedscope's JSON format (https://www.speedscope.app).
    Speedscope,
    /// Chrome trace events JSON, a per-thread timeline (chrome://tracing, Perfetto).
    Chrome,
    /// pprof's gzipped protobuf (go tool pprof, Pyroscope, Perfetto).
    Pprof,
}

/// What `self`/`total` measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// CPU time (threads that were not running weigh nothing).
    Cpu,
    /// Elapsed time, running or blocked.
    Wall,
    /// Sample counts.
    Samples,
    /// Exact call counts (trace mode).
    Calls,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The trace to read.
    pub file: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub format: FormatArg,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Text: also print the call tree.
    #[arg(long)]
    pub tree: bool,
    /// Only this thread (OS thread id or name).
    #[arg(long, value_name = "TID|NAME")]
    pub thread: Option<String>,
    /// Only stacks that contain a function whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Show at most this many functions.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// What to measure (default: cpu).
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
    /// JSON: indent for people.
    #[arg(long)]
    pub pretty: bool,
}
