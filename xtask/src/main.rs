//! Project automation: `cargo xtask <command>`.
//!
//! - `setup`: install the pinned .NET runtimes and the C# compiler the tests use.
//! - `test`: setup, then formatting, lints, the whole test suite on every pinned runtime and a
//!   Windows type check.
//! - `demo`: profile the bundled example program end to end (report, flame graph, speedscope).
//! - `bench`: measure the profiler's overhead and write `BENCHMARKS.md`.

#[cfg(unix)]
mod bench;
mod big_trace;
mod collector;
mod cycles;
mod demo;
#[cfg(unix)]
mod eventpipe;
mod fuzz;
mod setup;
mod test;
mod test_binaries;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "clrprof project automation",
    version
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install the pinned .NET runtimes (3.1.23, 8.0.4) and the `mcs` C# compiler (idempotent).
    Setup,
    /// Run setup, fmt, clippy, the import-circle check, the test suite on every pinned runtime
    /// and the Windows check;
    /// stops at the first failure.
    Test {
        /// Extra arguments given to each test binary (e.g. a test name, `--nocapture`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Profile the bundled demo program.
    Demo,
    /// List the import circles between the files of each crate; fails on one that is not a
    /// known one (see xtask/src/cycles.rs).
    Cycles,
    /// Make a large trace from a real one (its samples repeated, shifted in time), to measure
    /// `clrprof report` on it.
    BigTrace {
        /// The real trace.
        #[arg(long, value_name = "TRACE")]
        from: PathBuf,
        /// Size of the trace to make, in MB.
        #[arg(long, value_name = "MB", default_value_t = 1000)]
        size: u64,
        /// Where to write it.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Fuzz the trace readers (the targets of `fuzz/`) with libFuzzer on the stable toolchain.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Targets to run (trace_reader, trace_blocks, trace_report; default all).
        targets: Vec<String>,
    },
    /// Measure clrprof's overhead against no profiler and the runtime's EventPipe sampler,
    /// and what contention tracking and async chains cost, then write BENCHMARKS.md (full runs
    /// only: every workload and configuration on every runtime).
    Bench(BenchArgs),
}

/// Options of `cargo xtask bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Rounds: each workload runs once per configuration per round (default 5).
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Workloads to run, comma-separated (Fib, Realistic, Alloc, Threads, Idle, Regex,
    /// HttpServer, Server; default all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub workloads: Vec<String>,
    /// Runtimes to run on, comma-separated versions (3.1.23, 8.0.4; default all pinned ones).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub runtimes: Vec<String>,
    /// Smoke test: 2 rounds and fewer startup runs; BENCHMARKS.md is not written.
    #[arg(long)]
    pub quick: bool,
    /// Runs of the empty program per startup configuration (default 20, quick 6).
    #[arg(long, value_name = "N")]
    pub startup_runs: Option<usize>,
    /// Only the memory benchmarks: allocation recording (sampled, ticks, all) on the Alloc
    /// workload and on a server under load (AllocServer: request rate, CPU per request), heap
    /// snapshots' cost (LiveHeap: on-signal without a snapshot; at-exit snapshots of 1M and 10M
    /// live objects: pause, trace size, report time and memory) and heap-snapshot analysis of
    /// 1M and 5M synthetic objects.
    #[arg(long)]
    pub memory: bool,
    /// Only the heap snapshot part of the memory benchmarks (LiveHeap, synthetic snapshots).
    #[arg(long)]
    pub heap: bool,
    /// Only the coverage benchmark: the CPU workloads (or those of --workloads) under `clrprof
    /// coverage`, of their own assembly and with System.Private.CoreLib.
    #[arg(long)]
    pub coverage: bool,
    /// Only the main matrix (workloads x configurations, and startup): no feature, memory,
    /// coverage or agreement benchmarks.
    #[arg(long)]
    pub matrix: bool,
    /// Only the agreement check: each workload's (or those of --workloads) flat CPU profile
    /// under sample-1000 against Linux perf's (three clrprof runs against two sides of three
    /// perf runs, each side pooled).
    #[arg(long)]
    pub peer: bool,
    /// Only the lock contention benchmark: the Contention workload under sample-100, without
    /// and with `record --contention`.
    #[arg(long)]
    pub contention: bool,
    /// Only the async chains benchmark: the Async workload under sample-100, with the agent's
    /// async-chain probes (the default) and without them (`record --no-async`).
    #[arg(long = "async")]
    pub async_chains: bool,
    /// Only the continuous export benchmark: the HttpServer workload unprofiled and in export
    /// mode at its defaults (a loopback receiver), CPU per request.
    #[arg(long)]
    pub export: bool,
    /// Configurations to run, comma-separated (e.g. none,sample-100): the main matrix's
    /// workloads run under these only, and the workloads of --contention and --async under
    /// these instead of their pair (the first is the baseline of their ratios). BENCHMARKS.md is
    /// not written.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub configs: Vec<String>,
    /// Write the report here (default: BENCHMARKS.md, for a full run only).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Setup => setup::run(),
        Command::Test { args } => test::run(&args),
        Command::Demo => demo::run(),
        Command::Cycles => cycles::run(),
        Command::BigTrace { from, size, output } => big_trace::run(&from, size, &output),
        Command::Fuzz { seconds, targets } => fuzz::run_targets(seconds, &targets),
        Command::Bench(args) => run_bench(&args),
    };
    // Printed by hand rather than returned: `RUST_BACKTRACE=1` would make anyhow append a
    // backtrace of xtask itself, which only hides the message.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(unix)]
fn run_bench(args: &BenchArgs) -> anyhow::Result<()> {
    bench::run(args)
}

#[cfg(not(unix))]
fn run_bench(_args: &BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("`cargo xtask bench` runs on Linux only (it profiles CoreCLR on Linux)")
}
