//! Command-line syntax. Parsed arguments are turned into plain option structs before the
//! commands run, so nothing below this module depends on clap.

use std::path::PathBuf;
use std::sync::LazyLock;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use clrprof_analysis::runtime::View;
use clrprof_trace::config::{AllocMode, CpuClockChoice, HeapSnapshots, Mode};

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
    /// List the .NET processes of this user (pid, runtime, command line).
    Ps,
    /// Load the agent into a running .NET process, record for a while, then detach.
    Attach(AttachArgs),
    /// Run a .NET program with block counters and write its code coverage.
    Coverage(crate::coverage::CoverageArgs),
    /// Print the environment variables that make the agent alone ship a profile of every
    /// period to a profiling backend (continuous profiling, no clrprof process).
    Env(crate::env::EnvArgs),
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// CPU profiling mode.
    #[arg(long, value_enum, default_value = "sample")]
    pub mode: Mode,
    /// Runtime events to record, comma-separated: runtime, appdomain, assembly, module,
    /// class, jit, thread, transition, suspension, gc, heap-refs, exception, all, or none.
    /// Default: gc (collections: about 15 us per collection).
    #[arg(long, value_delimiter = ',', value_name = "LIST", default_values = ["gc"])]
    pub events: Vec<String>,
    /// Sampling rate in Hz: sample mode's CPU samples per second of a thread's CPU time, trace
    /// mode's time samples per second.
    #[arg(long, default_value_t = 1000, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub rate: u32,
    /// Sample mode: wall-clock samples per second and thread (default: a fifth of --rate, at
    /// most 20).
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub wall_rate: Option<u32>,
    /// Sample mode: the per-thread CPU clock that triggers CPU samples: `perf` (a perf
    /// task-clock event on every thread: the exact rate, but each switch of a thread costs it
    /// some microseconds) or `timer` (a CPU-time timer: free per switch, at most the kernel's
    /// tick rate); default: every thread starts on its timer and gets a perf event once seen
    /// switched at most 1,500 times per second of its CPU (a computing thread), back to the
    /// timer above 3,000 (a thread that waits and wakes often); the timer everywhere where the
    /// kernel refuses perf events that count kernel time.
    #[arg(long, value_enum, value_name = "CLOCK")]
    pub cpu_clock: Option<CpuClockChoice>,
    /// Trace mode: disable JIT inlining so that every call is counted (slower program).
    #[arg(long)]
    pub no_inline: bool,
    /// Trace mode: the most call tree nodes to keep, all threads together.
    #[arg(long, default_value_t = 2_000_000, value_name = "N", value_parser = parse_max_nodes)]
    pub max_nodes: u64,
    /// Count mode: count only this assembly (file name without extension); repeatable.
    /// Default: every assembly outside the .NET framework. Naming a framework assembly turns
    /// the framework's precompiled code off (it is JIT-compiled, and slower to start).
    #[arg(long, value_name = "ASSEMBLY")]
    pub include: Vec<String>,
    /// Count mode: never count this assembly; repeatable.
    #[arg(long, value_name = "ASSEMBLY")]
    pub exclude: Vec<String>,
    /// Record allocations with their stacks: `ticks` (the default: the runtime's own
    /// allocation ticks, one per ~100 KB allocated; 1-10% more CPU on a server under load;
    /// bytes per type and stack estimated, biased by object size, no object counts),
    /// `sampled` (picked at random by bytes: unbiased estimates with object counts; the
    /// runtime's allocation callback costs 1.2-5x on allocation-heavy code) or `all` (every
    /// allocation with its stack, exact; 15-80x slower). See docs/memory-profiling.md.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "ticks", value_name = "HOW")]
    pub alloc: Option<AllocMode>,
    /// `--alloc sampled`: mean number of bytes allocated between two samples (default 131072).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=1_099_511_627_776))]
    pub alloc_interval: Option<u64>,
    /// Lock contention: every contended `lock` / `Monitor.Enter` with its wait, stack, lock
    /// type and holder, from the runtime's contention events (see docs/cpu-profiling.md).
    #[arg(long)]
    pub contention: bool,
    /// No async call chains: leave the program's async state machines without the probes
    /// that tell which async methods await a continuation (samples then show the thread's
    /// own stack only; see docs/cpu-profiling.md).
    #[arg(long)]
    pub no_async: bool,
    /// Heap snapshots (object graph, retained sizes): `at-exit` (one, in a collection forced
    /// when the program ends), `on-signal` (none but those asked for), a number N (the first
    /// collection at or after every N-th) or `every-gc`. With any of them, `kill -USR2
    /// <program pid>` takes one now. A snapshot pauses the program while the runtime walks the
    /// whole heap (seconds for millions of objects); until one is taken nothing is walked, so
    /// `at-exit` and `on-signal` cost nothing while the program runs, `N` costs a walk every
    /// N collections and `every-gc` one in every collection, gen0 ones included.
    #[arg(long, value_name = "WHEN", value_parser = parse_heap_snapshot)]
    pub heap_snapshot: Option<HeapSnapshots>,
    /// The size of each of the agent's two record buffers, in KiB (default 4096). When the
    /// program makes events and samples faster than they can be written, a full buffer drops
    /// them, and the report says which figures miss how many.
    #[arg(long, value_name = "KIB", value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub buffer_size: Option<u32>,
    /// Where to write the trace (default trace.clrprof; with --export, a trace is written
    /// only when this is given).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Record only the process clrprof starts, not the .NET processes it starts (by default
    /// every .NET process of the tree is recorded, each in its own section of the trace).
    #[arg(long)]
    pub no_children: bool,
    /// Record only the processes with these ids (with --name-filter: either matches).
    #[arg(long, value_delimiter = ',', value_name = "PIDS")]
    pub pid_filter: Vec<u32>,
    /// Record only the processes whose command line contains TEXT (repeatable; with
    /// --pid-filter: either matches), e.g. `--name-filter testhost`.
    #[arg(long, value_name = "TEXT")]
    pub name_filter: Vec<String>,
    /// The agent library to load (default: the one installed next to clrprof).
    #[arg(long, value_name = "PATH", env = "CLRPROF_AGENT")]
    pub agent: Option<PathBuf>,
    /// Export mode: the program (and the .NET processes it starts) ships a profile of every
    /// period to this backend itself, as with `clrprof env`'s variables (e.g.
    /// `http://collector:4318`; needs --service). The recording options do not apply; with
    /// -o, a trace of what is exported is written too.
    #[arg(long, value_name = "URL", conflicts_with_all = [
        "mode", "events", "rate", "wall_rate", "cpu_clock", "no_inline", "max_nodes",
        "include", "exclude", "alloc", "alloc_interval", "contention", "no_async",
        "heap_snapshot", "buffer_size", "no_children", "pid_filter", "name_filter",
    ])]
    pub export: Option<String>,
    /// Export mode's settings (with --export).
    #[command(flatten)]
    pub export_options: crate::env::ExportOptions,
    /// The program and its arguments. A `.dll` is run with `dotnet`.
    #[arg(required = true, trailing_var_arg = true, value_name = "PROGRAM")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The process id (see `clrprof ps`).
    pub pid: u32,
    /// Record for this many seconds, then detach (default: until Ctrl-C).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<std::time::Duration>,
    /// CPU profiling mode.
    #[arg(long, default_value = "sample", value_parser = attach_modes())]
    pub mode: Mode,
    /// Runtime events to record, comma-separated: runtime, appdomain, assembly, module,
    /// class, jit, thread, suspension, gc, heap-refs, exception, or all.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub events: Vec<String>,
    /// Sample mode's CPU samples per second of a thread's CPU time.
    #[arg(long, default_value_t = 1000, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub rate: u32,
    /// Sample mode: wall-clock samples per second and thread (default: a fifth of --rate, at
    /// most 20).
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(1..=20000))]
    pub wall_rate: Option<u32>,
    /// Record allocations with their stacks from the runtime's allocation ticks (one per ~100 KB
    /// allocated: bytes per type and stack, estimated, no object counts). `sampled` and `all`
    /// need the runtime's allocation callback, which only a profiler loaded at startup gets
    /// (use `clrprof record --alloc sampled`).
    #[arg(long, num_args = 0..=1, default_missing_value = "ticks", value_name = "HOW", value_parser = attach_alloc())]
    pub alloc: Option<AllocMode>,
    /// Lock contention: every contended `lock` / `Monitor.Enter` while attached, with its
    /// wait, stack, lock type and holder, from the runtime's contention events (CoreCLR 3.1's
    /// name neither the lock's type nor its holder).
    #[arg(long)]
    pub contention: bool,
    /// Where to write the trace.
    #[arg(short, long, default_value = "trace.clrprof", value_name = "FILE")]
    pub output: PathBuf,
    /// The agent library to load (default: the one installed next to clrprof).
    #[arg(long, value_name = "PATH", env = "CLRPROF_AGENT")]
    pub agent: Option<PathBuf>,
    /// Export mode instead of a trace: the process ships a profile of every period to this
    /// backend itself from now on (e.g. `http://collector:4318`; needs --service), until it
    /// ends or `clrprof attach PID --stop`; clrprof returns at once.
    #[arg(long, value_name = "URL", conflicts_with_all = [
        "duration", "mode", "events", "rate", "wall_rate", "alloc", "contention", "output",
    ])]
    pub export: Option<String>,
    /// Ends the export mode `clrprof attach --export` started in the process: its last period
    /// is sent, and the agent detaches.
    #[arg(long, conflicts_with_all = [
        "export", "duration", "mode", "events", "rate", "wall_rate", "alloc", "contention",
        "output",
    ])]
    pub stop: bool,
    /// Export mode's settings (with --export).
    #[command(flatten)]
    pub export_options: crate::env::ExportOptions,
}

fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let longest = std::time::Duration::MAX.as_secs();
    match text.trim().parse::<f64>() {
        Err(_) => Err(format!("`{text}` is not a number of seconds")),
        Ok(s) if s.is_nan() => Err(format!("`{text}` is not a number of seconds")),
        Ok(s) if s <= 0.0 => Err(format!(
            "`{text}` is not more than 0 seconds; give how long to record, e.g. 10 or 0.5"
        )),
        Ok(s) => std::time::Duration::try_from_secs_f64(s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                format!(
                    "`{text}` seconds is {}: the longest duration is {longest} s; to record \
                     until Ctrl-C, leave --duration out",
                    if s < 1.0 { "too short" } else { "too long" }
                )
            }),
    }
}

fn parse_max_nodes(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err(
            "the call tree needs at least 1 node (the agent would refuse 0); leave --max-nodes \
             out for the default, 2000000"
                .into(),
        ),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{text}` is not a number of nodes from 1 to {}",
            u64::MAX
        )),
    }
}

/// `--heap-snapshot`: any schedule but `off` (which is leaving the option out).
fn parse_heap_snapshot(v: &str) -> Result<HeapSnapshots, String> {
    HeapSnapshots::parse(v)
        .filter(|h| *h != HeapSnapshots::Off)
        .ok_or_else(|| {
            "expected at-exit, every-gc, on-signal or a number of collections (1 or more)".into()
        })
}

/// Some values of a setting, each with the help of what it does here: what `attach` offers
/// of a `record` setting. The names are the setting's own ([`ValueEnum`]).
fn offered<T: ValueEnum + Clone + Send + Sync + 'static>(
    values: &[(T, &'static str)],
) -> impl TypedValueParser<Value = T> {
    let values: Vec<PossibleValue> = values
        .iter()
        .filter_map(|(value, help)| Some(value.to_possible_value()?.help(*help)))
        .collect();
    PossibleValuesParser::new(values).try_map(|name| T::from_str(&name, false))
}

/// `attach --mode`: trace mode is offered to be refused with the reason; count mode is not
/// offered (its counters go into methods as they are compiled).
fn attach_modes() -> impl TypedValueParser<Value = Mode> {
    offered(&[
        (
            Mode::Sample,
            "Sample where the CPU is spent and where every thread is (as `record` does)",
        ),
        (
            Mode::Trace,
            "Refused: enter/leave hooks cannot be set after attach (record from the start \
             instead)",
        ),
        (
            Mode::None,
            "No CPU profiling: only the events chosen with --events",
        ),
    ])
}

/// `attach --alloc`: the ticks; the two methods that need the allocation callback are offered
/// to be refused with the reason.
fn attach_alloc() -> impl TypedValueParser<Value = AllocMode> {
    offered(&[
        (
            AllocMode::Sampled,
            "Refused: needs the runtime's allocation callback, which an attached profiler \
             does not get",
        ),
        (
            AllocMode::All,
            "Refused: needs the runtime's allocation callback, which an attached profiler \
             does not get",
        ),
        (
            AllocMode::Ticks,
            "The runtime's allocation ticks (one per ~100 KB allocated): bytes per type and \
             stack, estimated, with a bias; no object counts. The default",
        ),
    ])
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
    /// A flame graph as SVG (`svg` is another name for it).
    #[value(alias = "svg")]
    Flamegraph,
    /// speedscope's JSON format (https://www.speedscope.app).
    Speedscope,
    /// Chrome trace events JSON, a per-thread timeline (chrome://tracing, Perfetto).
    Chrome,
    /// pprof's gzipped protobuf (go tool pprof, Pyroscope, Perfetto).
    Pprof,
    /// One self-contained HTML page: flame graphs, timeline, memory, runtime views.
    Html,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The trace to read (optional with `--diff` between two traces).
    pub file: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub format: FormatArg,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Text: also print the call tree.
    #[arg(long)]
    pub tree: bool,
    /// A trace of a process tree: report only the process with this id (default: every
    /// process; the profile formats merge them under a frame per process).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// List the processes of the trace (pid, parent, command line, how each ended) and stop.
    #[arg(long)]
    pub processes: bool,
    /// Only this thread (OS thread id or name); `all`: every thread, also the runtime's
    /// service threads that `--metric wall` leaves out by default.
    #[arg(long, value_name = "TID|NAME|all")]
    pub thread: Option<String>,
    /// Every frame of every stack, from the thread's start (`_start`, the .NET host, the
    /// runtime's call into `Main`); by default a managed thread's stacks start at its
    /// managed entry (`Main`, the thread's start delegate).
    #[arg(long)]
    pub all_frames: bool,
    /// Text: fit every line in this many columns (`0`: never cut). Default: the terminal's
    /// width (`COLUMNS` if set) when standard output is a terminal, else no limit.
    #[arg(long, value_name = "COLUMNS")]
    pub width: Option<usize>,
    /// Only stacks that contain a function whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Show at most this many functions.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// What to measure (default: cpu; with --alloc: bytes).
    #[arg(long, value_enum)]
    pub metric: Option<clrprof_analysis::query::Metric>,
    /// JSON: indent for people.
    #[arg(long)]
    pub pretty: bool,
    #[command(flatten)]
    pub view: ViewArgs,
    /// Allocations (`record --alloc`): text shows the top types and stacks; folded,
    /// flamegraph, speedscope and pprof show allocated bytes instead of CPU time.
    #[arg(long)]
    pub alloc: bool,
    /// Lock contention (`record --contention`): text and JSON show each lock type and waiting
    /// site with count, total and longest wait; folded, flamegraph, speedscope and pprof show
    /// the time waited for locks by stack.
    #[arg(long, conflicts_with = "alloc")]
    pub contention: bool,
    /// Source lines: the hottest lines of managed code by CPU (text or json), each with its
    /// file and line, its text, its method, self and total CPU; from the IL positions the trace
    /// records and the assemblies' symbols (portable PDB beside or embedded, Mono's .mdb).
    /// With --alloc: by bytes allocated; --contention: by lock wait; --exceptions: by throws.
    #[arg(long)]
    pub lines: bool,
    /// The source of the method whose name contains METHOD, each line with its CPU share (or
    /// bytes with --alloc, wait with --contention, throws with --exceptions), as `perf
    /// annotate` and `pprof -list` show it (the method with the most if several match).
    #[arg(long, value_name = "METHOD")]
    pub source: Option<String>,
    /// Where the source files the symbols name are on this machine: FROM=TO replaces the start
    /// FROM of a path by TO (e.g. /build/src=/home/me/app). Repeatable.
    #[arg(long, value_name = "FROM=TO")]
    pub source_root: Vec<String>,
    /// Physical stacks: a sample taken after an `await` shows the thread's own frames (the
    /// thread pool's, then the continuation) instead of the async methods that await it, each
    /// followed by an `[await]` frame.
    #[arg(long)]
    pub no_async: bool,
    /// Garbage collections: text shows the table of GCs, pause percentiles and time in GC.
    #[arg(long)]
    pub gc: bool,
    /// Heap snapshot (`record --heap-snapshot`): types by retained size, top retainers with
    /// their path from a root.
    #[arg(long)]
    pub heap: bool,
    /// Which heap snapshot `--heap` and JSON analyse (default: the last complete one).
    #[arg(long, value_name = "N")]
    pub snapshot: Option<u32>,
    /// What grew between two heap snapshots. Each is a snapshot number of FILE, a trace (its
    /// last snapshot) or TRACE@N.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub diff: Vec<String>,
    /// Symbols for native code recorded without names (a stripped library's functions show as
    /// `libcoreclr.so!+0x1f2a30`): a debug file, an unstripped copy of the library, or a
    /// directory searched recursively (also the `.build-id/ab/cdef.debug` layout). A file
    /// names a module's frames only if its GNU build id is the module's. Repeatable.
    #[arg(long, value_name = "PATH")]
    pub symbols: Vec<PathBuf>,
    /// A symbol server to download symbol files from, by GNU build id, for the native code
    /// `--symbols` does not name: its URL, as `dotnet-symbol --server-path` takes it (the
    /// layout of the .NET tools' symbol servers). Repeatable, asked in order; replaces the
    /// space-separated list of CLRPROF_SYMBOL_SERVER. No server is asked unless one is given.
    #[arg(
        long = "symbol-server",
        value_name = "URL",
        env = "CLRPROF_SYMBOL_SERVER",
        value_delimiter = ' '
    )]
    pub symbol_servers: Vec<String>,
    /// Where files downloaded from symbol servers are kept, and looked for first (default:
    /// $XDG_CACHE_HOME/clrprof/symbols, else ~/.cache/clrprof/symbols).
    #[arg(long, value_name = "DIR", env = "CLRPROF_SYMBOL_CACHE")]
    pub symbol_cache: Option<PathBuf>,
    /// Never use the network: symbol files from the cache of symbol servers only (with or
    /// without --symbol-server).
    #[arg(long)]
    pub offline: bool,
    /// How long to wait for a symbol server: to connect, to answer, and between two reads of
    /// a download.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 20,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub symbol_timeout: u64,
}

/// Runtime views of `report`: at most one; text or JSON.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct ViewArgs {
    /// Only exceptions: by type, throw site and catcher, with messages, rethrows, filters,
    /// finally blocks and time to catch.
    #[arg(long)]
    pub exceptions: bool,
    /// Only the JIT: time and IL size per method, totals per module, inlining, startup.
    #[arg(long)]
    pub jit: bool,
    /// Only loads: app domains, assemblies, modules and classes, with durations and failures.
    #[arg(long)]
    pub loads: bool,
    /// Only threads: ids, names and lifetimes.
    #[arg(long)]
    pub threads: bool,
    /// Only native calls: P/Invoke and reverse P/Invoke, calls and time per target.
    #[arg(long)]
    pub native: bool,
    /// Only runtime suspensions: reason, count, time, whether for a GC.
    #[arg(long)]
    pub suspensions: bool,
    /// One view by name: the same as its own option (`--view jit` is `--jit`, `--view
    /// contention` is `--contention`).
    #[arg(long, value_enum, value_name = "VIEW")]
    pub view: Option<ViewName>,
}

/// The views `report --view` names: a runtime view, or the lock contention view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewName {
    /// A runtime view (`--view jit` is `--jit`).
    Runtime(View),
    /// `--contention`.
    Contention,
}

impl ViewName {
    fn name(self) -> &'static str {
        match self {
            ViewName::Runtime(view) => view.name(),
            ViewName::Contention => "contention",
        }
    }
}

impl ValueEnum for ViewName {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<ViewName>> = LazyLock::new(|| {
            View::ALL
                .into_iter()
                .map(ViewName::Runtime)
                .chain([ViewName::Contention])
                .collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let name = self.name();
        Some(PossibleValue::new(name).help(format!("`--{name}`")))
    }
}

impl ViewArgs {
    /// The view asked for, if any.
    pub fn view(&self) -> Option<View> {
        let by_option = [
            (self.exceptions, View::Exceptions),
            (self.jit, View::Jit),
            (self.loads, View::Loads),
            (self.threads, View::Threads),
            (self.native, View::Native),
            (self.suspensions, View::Suspensions),
        ]
        .into_iter()
        .find_map(|(on, view)| on.then_some(view));
        by_option.or(match self.view {
            Some(ViewName::Runtime(view)) => Some(view),
            _ => None,
        })
    }

    /// Whether `--view contention` was given.
    pub fn contention(&self) -> bool {
        self.view == Some(ViewName::Contention)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_limits_are_the_real_ones() {
        assert_eq!(
            parse_seconds("99999999999").unwrap(),
            std::time::Duration::from_secs(99_999_999_999)
        );
        assert_eq!(parse_seconds("0.5").unwrap().as_millis(), 500);
        let too_long = parse_seconds("1e30").unwrap_err();
        assert!(
            too_long.contains("too long: the longest duration is 18446744073709551615 s"),
            "{too_long}"
        );
        assert!(parse_seconds("0").unwrap_err().contains("not more than 0"));
        assert!(parse_seconds("-3").unwrap_err().contains("not more than 0"));
        assert!(parse_seconds("1e-30").unwrap_err().contains("too short"));
        assert!(parse_seconds("ten").unwrap_err().contains("not a number"));
        assert!(parse_seconds("NaN").unwrap_err().contains("not a number"));
        assert!(
            parse_max_nodes("0")
                .unwrap_err()
                .contains("at least 1 node")
        );
        assert_eq!(parse_max_nodes("1").unwrap(), 1);
        assert_eq!(parse_max_nodes(&u64::MAX.to_string()).unwrap(), u64::MAX);
        assert!(parse_max_nodes("-1").is_err());
    }

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("clrprof").chain(args.iter().copied()))
            .map(|cli| cli.command)
    }

    fn record(args: &[&str]) -> RecordArgs {
        match parse(args) {
            Ok(Command::Record(r)) => r,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn attach(args: &[&str]) -> AttachArgs {
        match parse(args) {
            Ok(Command::Attach(a)) => a,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn a_misspelled_option_before_the_program_is_an_unknown_option() {
        for args in [
            &["record", "--allocs", "-o", "x", "--", "dotnet", "Busy.dll"][..],
            &["record", "-o", "x", "--allocs", "dotnet", "Busy.dll"],
            &["coverage", "--allocs", "--", "dotnet", "Busy.dll"],
            &["attach", "42", "--allocs"],
        ] {
            let err = parse(args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::UnknownArgument,
                "{args:?}"
            );
            assert_eq!(err.exit_code(), 2);
            let text = err.render().to_string();
            assert!(
                text.contains("unexpected argument '--allocs' found"),
                "{args:?}: {text}"
            );
            if args[0] != "coverage" {
                assert!(
                    text.contains("a similar argument exists: '--alloc'"),
                    "{args:?}: {text}"
                );
            }
        }
    }

    #[test]
    fn the_program_keeps_its_own_options() {
        let r = record(&["record", "--", "prog", "--x", "-o", "y"]);
        assert_eq!(r.command, ["prog", "--x", "-o", "y"]);
        assert_eq!(r.output, None);
        // Without `--`, everything from the program on is the program's.
        let r = record(&["record", "-o", "t", "prog", "--x", "-o", "y"]);
        assert_eq!(r.command, ["prog", "--x", "-o", "y"]);
        assert_eq!(r.output, Some(PathBuf::from("t")));
        let r = record(&["record", "--mode", "none", "--", "--prog"]);
        assert_eq!(r.command, ["--prog"]);
        match parse(&["coverage", "--format", "json", "prog", "--format", "x"]) {
            Ok(Command::Coverage(c)) => {
                assert_eq!(c.command, ["prog", "--format", "x"]);
                assert_eq!(c.format, crate::coverage::CoverageFormatArg::Json);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn settings_parse_into_the_configuration_types() {
        let r = record(&["record", "--", "p"]);
        assert_eq!(r.mode, Mode::Sample);
        assert_eq!((r.alloc, r.cpu_clock, r.heap_snapshot), (None, None, None));
        let r = record(&[
            "record",
            "--mode",
            "count",
            "--alloc",
            "--cpu-clock",
            "timer",
            "--heap-snapshot",
            "3",
            "--",
            "p",
        ]);
        assert_eq!(r.mode, Mode::Count);
        assert_eq!(r.alloc, Some(AllocMode::Ticks));
        assert_eq!(r.cpu_clock, Some(CpuClockChoice::Timer));
        assert_eq!(r.heap_snapshot, Some(HeapSnapshots::EveryGc(3)));
        for (text, when) in [
            ("at-exit", HeapSnapshots::AtExit),
            ("every-gc", HeapSnapshots::EveryGc(1)),
            ("on-signal", HeapSnapshots::OnSignal),
        ] {
            let r = record(&["record", "--heap-snapshot", text, "--", "p"]);
            assert_eq!(r.heap_snapshot, Some(when));
        }
        for bad in ["0", "off", "sometimes"] {
            let err = parse(&["record", "--heap-snapshot", bad, "--", "p"]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation);
            assert!(
                err.to_string().contains(
                    "expected at-exit, every-gc, on-signal or a number of collections (1 or more)"
                ),
                "{err}"
            );
        }
        for (text, method) in [
            ("sampled", AllocMode::Sampled),
            ("all", AllocMode::All),
            ("ticks", AllocMode::Ticks),
        ] {
            let r = record(&["record", "--alloc", text, "--", "p"]);
            assert_eq!(r.alloc, Some(method));
        }
        let err = parse(&["record", "--alloc", "off", "--", "p"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
        assert!(
            err.to_string()
                .contains("[possible values: sampled, all, ticks]"),
            "{err}"
        );
        let err = parse(&["record", "--mode", "fast", "--", "p"]).unwrap_err();
        assert!(
            err.to_string()
                .contains("[possible values: sample, trace, count, none]"),
            "{err}"
        );
    }

    #[test]
    fn attach_offers_its_own_choices() {
        let a = attach(&["attach", "42"]);
        assert_eq!((a.mode, a.alloc, a.contention), (Mode::Sample, None, false));
        let a = attach(&["attach", "42", "--alloc", "--contention", "--mode", "none"]);
        assert_eq!(
            (a.mode, a.alloc, a.contention),
            (Mode::None, Some(AllocMode::Ticks), true)
        );
        // Offered so that `attach` can say why it refuses them.
        assert_eq!(
            attach(&["attach", "42", "--mode", "trace"]).mode,
            Mode::Trace
        );
        assert_eq!(
            attach(&["attach", "42", "--alloc", "sampled"]).alloc,
            Some(AllocMode::Sampled)
        );
        let err = parse(&["attach", "42", "--mode", "count"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
        assert!(
            err.to_string()
                .contains("[possible values: sample, trace, none]"),
            "{err}"
        );
    }
}
