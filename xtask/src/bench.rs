//! `cargo xtask bench`: the profiler's overhead, measured as ratios within one run.
//!
//! The machine this runs on is usually shared and noisy, so no absolute time means much.
//! Every workload (a C# program in `bench/programs/`) is run under every configuration once per
//! round, the configurations alternating (and their order rotating from round to round), and
//! each profiled run is compared with the unprofiled run of the same round. Programs wait for a
//! line on stdin before their timed part, so the profiler is ready (the agent initialized, the
//! EventPipe session started) before any measured work, and report the duration of that part
//! themselves (`work_ms=`): the steady-state overhead, apart from startup. Startup is measured
//! separately with an empty program.
//!
//! Besides clrprof's modes, two references run alongside: the runtime's own EventPipe sampler
//! (started over the diagnostics socket, see [`crate::eventpipe`]), and empty enter/leave hooks
//! (the SDK's test profiler `probe-elt`), the floor under trace mode.
//!
//! The memory benchmarks ([`memory`], alone with `--memory`) and the coverage benchmark
//! ([`coverage`], alone with `--coverage`) follow the main matrix.
//!
//! The results are printed and, for a full run, written to `BENCHMARKS.md`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use clrprof_e2e::probes::{self, set_profiler};
use clrprof_e2e::{ChildGuard, Dotnet, Program, apply_env, describe_command};
use clrprof_trace::protocol;

mod coverage;
mod memory;

use crate::BenchArgs;
use crate::eventpipe;
use crate::util::{build_release, catch_panic, workspace_root};

/// The workloads, in report order.
const WORKLOADS: &[&str] = &["Fib", "Realistic", "Alloc", "Threads"];
/// The startup program.
const EMPTY: &str = "Empty";

/// `probe-elt` (tests/probes/elt), the SDK's test profiler: its `fast_ret` scenario installs
/// enter/leave hooks that are a single `ret`, the floor under any enter/leave-based trace mode.
const PROBE_PACKAGE: &str = "probe-elt";

const DEFAULT_ROUNDS: usize = 5;
const QUICK_ROUNDS: usize = 2;
const DEFAULT_STARTUP_RUNS: usize = 20;
const QUICK_STARTUP_RUNS: usize = 6;

/// Runtime startup (and the profiler's) before the program prints `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// The timed work, however slow a configuration makes it.
const WORK_TIMEOUT: Duration = Duration::from_secs(600);
/// From the end of the work to the end of the process (trace writing included).
const EXIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Targets (see BENCHMARKS.md).
const SAMPLE_100_MAX: f64 = 1.02;
const TRACE_FIB_MAX: f64 = 3.0;
const TRACE_REALISTIC_MAX: f64 = 1.5;
const STARTUP_MAX_MS: f64 = 15.0;

/// How a workload is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    None,
    Sample100,
    Sample1000,
    Trace,
    HooksFloor,
    EventPipe1000,
    /// Memory benchmarks only (not in [`Config::ALL`]).
    AllocSampled,
    AllocAll,
    AllocTicks,
    /// Coverage benchmarks only (not in [`Config::ALL`]).
    Coverage,
    CoverageCoreLib,
}

impl Config {
    const ALL: [Config; 6] = [
        Config::None,
        Config::Sample100,
        Config::Sample1000,
        Config::Trace,
        Config::HooksFloor,
        Config::EventPipe1000,
    ];

    fn name(self) -> &'static str {
        match self {
            Config::None => "none",
            Config::Sample100 => "sample-100",
            Config::Sample1000 => "sample-1000",
            Config::Trace => "trace",
            Config::HooksFloor => "hooks-floor",
            Config::EventPipe1000 => "eventpipe-1000",
            Config::AllocSampled => "alloc-sampled",
            Config::AllocAll => "alloc-all",
            Config::AllocTicks => "alloc-ticks",
            Config::Coverage => "coverage",
            Config::CoverageCoreLib => "coverage-corelib",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Config::None => "no profiler",
            Config::Sample100 => "`clrprof record --mode sample --rate 100`",
            Config::Sample1000 => "`clrprof record --mode sample --rate 1000`",
            Config::Trace => "`clrprof record --mode trace` (default rate 1000 Hz, inlining kept)",
            Config::HooksFloor => {
                "not clrprof: the SDK's test profiler `probe-elt` with enter/leave hooks that \
                 are a single `ret` (scenario `fast_ret`): what the runtime's enter/leave hooks \
                 cost by themselves, the floor under trace mode"
            }
            Config::EventPipe1000 => {
                "the runtime's EventPipe sampler (`Microsoft-DotNETCore-SampleProfiler`, 1 ms, \
                 with `Microsoft-Windows-DotNETRuntime` 0x4c14fccbd level 5: dotnet-trace's CPU \
                 profile), streamed over the diagnostics socket and discarded"
            }
            Config::AllocSampled => "`clrprof record --mode none --alloc sampled`",
            Config::AllocAll => "`clrprof record --mode none --alloc all`",
            Config::AllocTicks => "`clrprof record --mode none --alloc ticks`",
            Config::Coverage => "`clrprof coverage` (default: the workload's own assembly)",
            Config::CoverageCoreLib => {
                "`clrprof coverage --include WORKLOAD --include System.Private.CoreLib` (the \
                 workload and the framework's core library, precompiled code off)"
            }
        }
    }

    /// `clrprof record` arguments before `-o`, or `None` when clrprof is not used.
    fn clrprof_args(self) -> Option<&'static [&'static str]> {
        match self {
            Config::None | Config::HooksFloor | Config::EventPipe1000 => None,
            Config::Sample100 => Some(&["--mode", "sample", "--rate", "100"]),
            Config::Sample1000 => Some(&["--mode", "sample", "--rate", "1000"]),
            Config::Trace => Some(&["--mode", "trace"]),
            Config::AllocSampled => Some(&["--mode", "none", "--alloc", "sampled"]),
            Config::AllocAll => Some(&["--mode", "none", "--alloc", "all"]),
            Config::AllocTicks => Some(&["--mode", "none", "--alloc", "ticks"]),
            Config::Coverage => Some(&[]),
            Config::CoverageCoreLib => Some(&["--include", "System.Private.CoreLib"]),
        }
    }

    /// The `clrprof` subcommand of a configuration that uses clrprof.
    fn subcommand(self) -> &'static str {
        match self {
            Config::Coverage | Config::CoverageCoreLib => "coverage",
            _ => "record",
        }
    }

    /// Whether the configuration samples CPU (and its trace must hold samples).
    fn samples_cpu(self) -> bool {
        matches!(self, Config::Sample100 | Config::Sample1000 | Config::Trace)
    }
}

/// How the empty program is started for the startup measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Startup {
    /// `dotnet Empty.dll`.
    None,
    /// `clrprof record --mode none -- dotnet Empty.dll`.
    ClrprofNone,
    /// The agent loaded through the runtime's variables, writing its trace to a file itself
    /// (`CLRPROF_OUTPUT`), without the CLI: separates the agent's cost from the CLI's.
    AgentOnly,
}

impl Startup {
    const ALL: [Startup; 3] = [Startup::None, Startup::ClrprofNone, Startup::AgentOnly];

    fn name(self) -> &'static str {
        match self {
            Startup::None => "none",
            Startup::ClrprofNone => "clrprof record --mode none",
            Startup::AgentOnly => "agent only (no CLI), mode=none",
        }
    }
}

/// What the bench runs things with.
struct Tools {
    dotnet: &'static Dotnet,
    clrprof: PathBuf,
    agent: PathBuf,
    probe: PathBuf,
    /// Copies of the binaries, and the traces written by the runs (deleted after each run).
    scratch: tempfile::TempDir,
}

/// What a profiler run left besides timings.
#[derive(Debug, Clone, Copy)]
enum Detail {
    Nothing,
    /// Samples in the clrprof trace (as `clrprof record` reports them).
    Samples(Option<u64>),
    /// Bytes of the EventPipe stream.
    EventPipeBytes(u64),
}

/// One run of a workload.
#[derive(Debug, Clone)]
struct Run {
    work_ms: f64,
    wall_ms: f64,
    checksum: String,
    detail: Detail,
}

/// All runs of one workload, by configuration, in round order.
struct WorkloadResults {
    name: String,
    runs: Vec<Vec<Run>>,
    warnings: Vec<String>,
}

impl WorkloadResults {
    fn runs(&self, config: Config) -> &[Run] {
        &self.runs[config_index(config)]
    }

    fn work(&self, config: Config) -> Vec<f64> {
        self.runs(config).iter().map(|r| r.work_ms).collect()
    }

    fn wall(&self, config: Config) -> Vec<f64> {
        self.runs(config).iter().map(|r| r.wall_ms).collect()
    }

    /// Per-round ratios of `config`'s work time to the unprofiled run of the same round.
    fn ratios(&self, config: Config) -> Vec<f64> {
        per_round_ratios(&self.work(config), &self.work(Config::None))
    }

    fn wall_ratios(&self, config: Config) -> Vec<f64> {
        per_round_ratios(&self.wall(config), &self.wall(Config::None))
    }

    fn median_ratio(&self, config: Config) -> Option<f64> {
        median(&self.ratios(config))
    }
}

fn config_index(config: Config) -> usize {
    Config::ALL
        .iter()
        .position(|c| *c == config)
        .expect("every config is in ALL")
}

/// Startup measurements: per configuration, time to `Main` and whole-process wall time.
struct StartupResults {
    ready: Vec<Vec<f64>>,
    wall: Vec<Vec<f64>>,
}

impl StartupResults {
    fn index(s: Startup) -> usize {
        Startup::ALL
            .iter()
            .position(|x| *x == s)
            .expect("every startup config is in ALL")
    }

    /// Median of the per-run differences to `none` (runs are paired by iteration).
    fn wall_delta(&self, s: Startup) -> Option<f64> {
        median(&per_round_deltas(
            &self.wall[Self::index(s)],
            &self.wall[Self::index(Startup::None)],
        ))
    }

    fn ready_delta(&self, s: Startup) -> Option<f64> {
        median(&per_round_deltas(
            &self.ready[Self::index(s)],
            &self.ready[Self::index(Startup::None)],
        ))
    }
}

pub fn run(opts: &BenchArgs) -> Result<()> {
    let started = Instant::now();
    let rounds = opts
        .rounds
        .unwrap_or(if opts.quick {
            QUICK_ROUNDS
        } else {
            DEFAULT_ROUNDS
        })
        .max(1);
    let startup_runs = opts
        .startup_runs
        .unwrap_or(if opts.quick {
            QUICK_STARTUP_RUNS
        } else {
            DEFAULT_STARTUP_RUNS
        })
        .max(1);
    let workloads = select_workloads(&opts.workloads)?;
    let full_run = !opts.quick && workloads.len() == WORKLOADS.len();
    let output = match &opts.output {
        Some(path) => Some(path.clone()),
        None if full_run => Some(workspace_root().join("BENCHMARKS.md")),
        None => None,
    };

    crate::setup::run()?;
    println!("bench: building clrprof (release)");
    let release = build_release(&["clrprof-cli", "clrprof-agent", PROBE_PACKAGE])?;
    let cdylib = |crate_name: &str| {
        release.join(format!(
            "{}{crate_name}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
    };
    // Run copies: the target directory may be shared with other builds, which must not swap
    // the binaries in the middle of a run.
    let scratch = clrprof_e2e::temp_dir();
    let snapshot = |built: PathBuf| -> Result<PathBuf> {
        let built = existing(built)?;
        let copy = scratch
            .path()
            .join(built.file_name().context("artifact without a file name")?);
        std::fs::copy(&built, &copy)
            .with_context(|| format!("cannot copy {} to {}", built.display(), copy.display()))?;
        Ok(copy)
    };
    let tools = Tools {
        dotnet: catch_panic("finding the .NET runtime", Dotnet::get)?,
        clrprof: snapshot(release.join("clrprof"))?,
        agent: snapshot(cdylib("clrprof_agent"))?,
        probe: snapshot(cdylib(&PROBE_PACKAGE.replace('-', "_")))?,
        scratch,
    };

    println!("bench: compiling the workloads");
    let programs_dir = workspace_root().join("bench").join("programs");
    let compile = |name: &str| -> Result<Program> {
        let path = programs_dir.join(format!("{name}.cs"));
        catch_panic(&format!("compiling {}", path.display()), || {
            clrprof_e2e::compile_file(&path)
        })
    };
    let programs = workloads
        .iter()
        .map(|name| compile(name))
        .collect::<Result<Vec<_>>>()?;
    let empty = compile(EMPTY)?;

    if opts.memory || opts.coverage {
        let mut section = String::new();
        if opts.memory {
            let alloc = compile("Alloc")?;
            section.push_str(&memory::run(&tools, Some(&alloc), rounds)?);
        }
        if opts.coverage {
            section.push_str(&coverage::run(&tools, &programs, rounds)?);
        }
        println!("\n{section}");
        if let Some(path) = &opts.output {
            std::fs::write(path, &section)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("bench: wrote {}", path.display());
        }
        return Ok(());
    }

    // Warm-up (page cache, first start of each binary); not measured.
    println!("bench: warming up");
    for program in &programs {
        run_workload(&tools, program, Config::None)
            .with_context(|| format!("warm-up run of {}", program.name))?;
    }
    for s in Startup::ALL {
        run_startup(&tools, &empty, s).with_context(|| format!("warm-up of {}", s.name()))?;
    }

    println!("bench: startup, {startup_runs} runs per configuration");
    let startup = measure_startup(&tools, &empty, startup_runs)?;

    println!(
        "bench: {rounds} rounds of {} workloads x {} configurations",
        programs.len(),
        Config::ALL.len()
    );
    let mut results: Vec<WorkloadResults> = programs
        .iter()
        .map(|p| WorkloadResults {
            name: p.name.clone(),
            runs: vec![Vec::new(); Config::ALL.len()],
            warnings: Vec::new(),
        })
        .collect();
    for round in 0..rounds {
        for (program, result) in programs.iter().zip(results.iter_mut()) {
            for (_, config) in rotated(&Config::ALL, round) {
                let (run, warnings) = run_workload(&tools, program, config).with_context(|| {
                    format!(
                        "round {} of {}: {} under {}",
                        round + 1,
                        rounds,
                        program.name,
                        config.name()
                    )
                })?;
                for w in warnings {
                    let w = format!("{}: {w}", config.name());
                    if !result.warnings.contains(&w) {
                        println!("bench:   warning: {w}");
                        result.warnings.push(w);
                    }
                }
                check_checksum(result, config, round, &run)?;
                println!(
                    "bench: round {}/{rounds} {:<10} {:<15} work {:>8.1} ms  wall {:>8.1} ms{}",
                    round + 1,
                    program.name,
                    config.name(),
                    run.work_ms,
                    run.wall_ms,
                    detail_text(run.detail)
                );
                result.runs[config_index(config)].push(run);
            }
        }
    }

    let info = RunInfo {
        rounds,
        startup_runs,
        runtime: tools.dotnet.version.clone(),
        elapsed: started.elapsed(),
    };
    let mut report = render(&info, &results, &startup);
    println!("bench: memory benchmarks");
    let alloc = programs.iter().find(|p| p.name == "Alloc");
    report.push('\n');
    report.push_str(&memory::run(&tools, alloc, rounds)?);
    println!("bench: coverage benchmarks");
    report.push_str(&coverage::run(&tools, &programs, rounds)?);
    println!("\n{report}");
    match output {
        Some(path) => {
            std::fs::write(&path, &report)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("bench: wrote {}", path.display());
        }
        None => println!(
            "bench: BENCHMARKS.md not written (only a full run writes it; use --output FILE)"
        ),
    }
    Ok(())
}

fn select_workloads(names: &[String]) -> Result<Vec<&'static str>> {
    if names.is_empty() {
        return Ok(WORKLOADS.to_vec());
    }
    let mut chosen = Vec::new();
    for name in names {
        let Some(w) = WORKLOADS
            .iter()
            .find(|w| w.eq_ignore_ascii_case(name.trim()))
        else {
            bail!(
                "unknown workload `{name}`; choose from {}",
                WORKLOADS.join(", ")
            );
        };
        if !chosen.contains(w) {
            chosen.push(*w);
        }
    }
    // Report order, whatever the order given.
    chosen.sort_by_key(|w| WORKLOADS.iter().position(|x| x == w));
    Ok(chosen)
}

fn existing(path: PathBuf) -> Result<PathBuf> {
    if !path.is_file() {
        bail!("the release build did not produce {}", path.display());
    }
    Ok(path)
}

fn check_checksum(result: &WorkloadResults, config: Config, round: usize, run: &Run) -> Result<()> {
    let reference = Config::ALL
        .iter()
        .flat_map(|c| result.runs(*c).iter().map(move |r| (*c, r)))
        .next();
    if let Some((ref_config, reference)) = reference
        && reference.checksum != run.checksum
    {
        bail!(
            "{} printed a different checksum under {} (round {}): `{}`, but `{}` under {}; \
             a profiler changed what the program computes",
            result.name,
            config.name(),
            round + 1,
            run.checksum,
            reference.checksum,
            ref_config.name()
        );
    }
    Ok(())
}

fn detail_text(detail: Detail) -> String {
    match detail {
        Detail::Nothing => String::new(),
        Detail::Samples(Some(n)) => format!("  ({n} samples)"),
        Detail::Samples(None) => String::new(),
        Detail::EventPipeBytes(b) => format!("  ({:.1} MB nettrace)", b as f64 / 1e6),
    }
}

// ---------------------------------------------------------------------------------------------
// Running programs

/// The environment of every .NET process the bench starts (as the tests use).
fn dotnet_env(cmd: &mut Command) {
    apply_env(cmd);
    for var in [
        protocol::ENV_SESSION,
        protocol::ENV_OUTPUT,
        protocol::ENV_CONFIG,
        "CLRPROF_AGENT",
    ] {
        cmd.env_remove(var);
    }
}

fn plain_command(program: &Program) -> Command {
    let mut cmd = program.command();
    dotnet_env(&mut cmd);
    cmd
}

fn clrprof_command(
    tools: &Tools,
    program: &Program,
    subcommand: &str,
    args: &[&str],
    trace: &Path,
) -> Command {
    let mut cmd = Command::new(&tools.clrprof);
    cmd.arg(subcommand)
        .args(args)
        .arg("-o")
        .arg(trace)
        .arg("--agent")
        .arg(&tools.agent)
        .arg("--")
        .arg(&tools.dotnet.muxer)
        .arg(&program.dll);
    dotnet_env(&mut cmd);
    cmd
}

/// A started process whose stdout is read line by line (with arrival times).
struct Proc {
    guard: ChildGuard,
    started: Instant,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
    stderr: Option<JoinHandle<String>>,
    shown: String,
}

struct Exited {
    status: ExitStatus,
    wall_ms: f64,
    stderr: String,
}

impl Proc {
    fn spawn(mut cmd: Command, with_stdin: bool) -> Result<Proc> {
        cmd.stdin(if with_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let shown = describe_command(&cmd);
        let started = Instant::now();
        let mut guard = catch_panic("starting a program", || ChildGuard::spawn(&mut cmd))?;
        let child = guard.child_mut();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("stdout is not piped")?;
        let mut stderr_pipe = child.stderr.take().context("stderr is not piped")?;
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr_pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        });
        Ok(Proc {
            guard,
            started,
            stdin,
            lines,
            seen: Vec::new(),
            stderr: Some(stderr),
            shown,
        })
    }

    fn pid(&self) -> u32 {
        self.guard.id()
    }

    /// Waits for a stdout line satisfying `want`; returns it and when it arrived.
    fn expect_line(
        &mut self,
        what: &str,
        timeout: Duration,
        want: impl Fn(&str) -> bool,
    ) -> Result<(String, Instant)> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let at = Instant::now();
                    self.seen.push(line.clone());
                    if want(&line) {
                        return Ok((line, at));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.failure(&format!("no {what} within {timeout:?}")));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.failure(&format!("the program ended before printing {what}")));
                }
            }
        }
    }

    fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin is not piped")?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .context("cannot write to the program's stdin")
    }

    /// Closes stdin, reads stdout to its end and waits for the process.
    fn finish(mut self) -> Result<Exited> {
        drop(self.stdin.take());
        let deadline = Instant::now() + EXIT_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(self.failure(&format!(
                        "the program did not exit within {EXIT_TIMEOUT:?} after its work"
                    )));
                }
            }
        }
        let status = self
            .guard
            .child_mut()
            .wait()
            .context("cannot wait for the program")?;
        let wall_ms = ms(self.started.elapsed());
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        if !status.success() {
            bail!(
                "`{}` failed ({status})\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.shown,
                self.seen.join("\n"),
                stderr
            );
        }
        Ok(Exited {
            status,
            wall_ms,
            stderr,
        })
    }

    /// An error with what the program printed so far (the process is killed by the guard).
    fn failure(&mut self, msg: &str) -> anyhow::Error {
        self.guard.kill();
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        anyhow!(
            "`{}`: {msg}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.shown,
            self.seen.join("\n"),
            stderr
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs one workload under one configuration. Returns the run and any clrprof warnings.
fn run_workload(tools: &Tools, program: &Program, config: Config) -> Result<(Run, Vec<String>)> {
    let trace = tools
        .scratch
        .path()
        .join(format!("{}.clrprof", program.name));
    let probe_output = tools.scratch.path().join("probe.txt");
    let cmd = match config.clrprof_args() {
        Some(args) => {
            let mut args = args.to_vec();
            if config == Config::CoverageCoreLib {
                // `--include` replaces the default (the program's own assembly): name it too.
                args.extend(["--include", program.name.as_str()]);
            }
            clrprof_command(tools, program, config.subcommand(), &args, &trace)
        }
        None if config == Config::HooksFloor => {
            let mut cmd = plain_command(program);
            set_profiler(&mut cmd, probes::ELT, &tools.probe);
            cmd.env("PROBE_SCENARIO", "fast_ret")
                .env("PROBE_OUTPUT", &probe_output);
            cmd
        }
        None => plain_command(program),
    };
    let mut proc = Proc::spawn(cmd, true)?;
    proc.expect_line("`ready`", READY_TIMEOUT, |l| l.trim() == "ready")?;
    let session = if config == Config::EventPipe1000 {
        // `ready` comes from Main, after the runtime opened its diagnostics socket.
        match eventpipe::Session::start(proc.pid(), eventpipe::CPU_SAMPLING) {
            Ok(s) => Some(s),
            Err(e) => {
                return Err(proc.failure(&format!("cannot start the EventPipe session: {e:#}")));
            }
        }
    } else {
        None
    };
    proc.send_line("go")?;
    let (work, _) = proc.expect_line("`work_ms=`", WORK_TIMEOUT, |l| l.starts_with("work_ms="))?;
    let (checksum, _) =
        proc.expect_line("`checksum=`", WORK_TIMEOUT, |l| l.starts_with("checksum="))?;
    let work_ms: f64 = work["work_ms=".len()..]
        .trim()
        .parse()
        .with_context(|| format!("bad work time line `{work}`"))?;
    let checksum = checksum["checksum=".len()..].trim().to_string();

    let mut detail = Detail::Nothing;
    if let Some(session) = session {
        match session.stop() {
            Ok(stats) => detail = Detail::EventPipeBytes(stats.bytes),
            Err(e) => {
                return Err(proc.failure(&format!("the EventPipe session failed: {e:#}")));
            }
        }
    }
    let exited = proc.finish()?;
    let mut warnings = Vec::new();
    if config == Config::HooksFloor {
        // The probe writes its report at shutdown: proof that it was loaded and hooked.
        let report = std::fs::read_to_string(&probe_output).unwrap_or_default();
        let _ = std::fs::remove_file(&probe_output);
        if !report.lines().any(|l| l == "scenario\tfast_ret") {
            bail!(
                "the hooks-floor probe was not loaded (no report from it)\n{}",
                exited.stderr
            );
        }
        if let Some(error) = report.lines().find(|l| l.starts_with("error\t")) {
            bail!("the hooks-floor probe failed: {error}");
        }
    }
    if config.clrprof_args().is_some() {
        let size = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
        if size == 0 {
            bail!(
                "clrprof exited with {} but wrote no trace\n{}",
                exited.status,
                exited.stderr
            );
        }
        let _ = std::fs::remove_file(&trace);
        let samples = parse_samples(&exited.stderr);
        if samples == Some(0) && config.samples_cpu() {
            warnings.push("the trace holds no samples".to_string());
        }
        detail = Detail::Samples(samples);
        warnings.extend(
            exited
                .stderr
                .lines()
                .filter(|l| l.contains("warning") || l.contains("error"))
                .map(|l| l.trim().to_string()),
        );
    }
    Ok((
        Run {
            work_ms,
            wall_ms: exited.wall_ms,
            checksum,
            detail,
        },
        warnings,
    ))
}

/// Times in ms, per configuration, in round order.
type Times = Vec<Vec<f64>>;

/// `items` with their indices, starting at `round` (modulo their number) and wrapping around:
/// each round runs the configurations in another order, so that none always runs first.
fn rotated<T: Copy>(items: &[T], round: usize) -> impl Iterator<Item = (usize, T)> + '_ {
    (0..items.len()).map(move |k| {
        let i = (k + round) % items.len();
        (i, items[i])
    })
}

/// Work and wall times (ms) of `program` under each of `configs`, in the order of `configs`:
/// every configuration once per round, alternating, their order rotating from round to round
/// (the first configuration is the baseline the others are compared with). Every run must print
/// the same checksum.
fn alternate(
    tools: &Tools,
    program: &Program,
    configs: &[Config],
    rounds: usize,
    label: &str,
) -> Result<(Times, Times)> {
    let mut work: Times = vec![Vec::new(); configs.len()];
    let mut wall: Times = vec![Vec::new(); configs.len()];
    let mut checksum: Option<(Config, String)> = None;
    for round in 0..rounds {
        for (i, config) in rotated(configs, round) {
            let (run, warnings) = run_workload(tools, program, config)
                .with_context(|| format!("{} under {}", program.name, config.name()))?;
            for w in warnings {
                println!("bench:   warning: {}: {w}", config.name());
            }
            match &checksum {
                Some((first, sum)) if *sum != run.checksum => bail!(
                    "{} printed checksum `{}` under {} but `{sum}` under {}; a profiler changed \
                     what the program computes",
                    program.name,
                    run.checksum,
                    config.name(),
                    first.name()
                ),
                Some(_) => {}
                None => checksum = Some((config, run.checksum.clone())),
            }
            println!(
                "bench: {label} round {}/{rounds} {:<10} {:<16} work {:>8.1} ms",
                round + 1,
                program.name,
                config.name(),
                run.work_ms
            );
            work[i].push(run.work_ms);
            wall[i].push(run.wall_ms);
        }
    }
    Ok((work, wall))
}

/// The sample count from clrprof's closing line (`... N events, M samples, ...`).
fn parse_samples(stderr: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("clrprof: wrote"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[1].trim_end_matches(',') == "samples")
        .and_then(|w| w[0].parse().ok())
}

/// One run of the empty program: (time until it printed `ready`, whole wall time), in ms.
fn run_startup(tools: &Tools, empty: &Program, how: Startup) -> Result<(f64, f64)> {
    let trace = tools.scratch.path().join("startup.clrprof");
    let cmd = match how {
        Startup::None => plain_command(empty),
        Startup::ClrprofNone => {
            clrprof_command(tools, empty, "record", &["--mode", "none"], &trace)
        }
        Startup::AgentOnly => {
            let mut cmd = plain_command(empty);
            set_profiler(&mut cmd, protocol::AGENT_CLSID, &tools.agent);
            cmd.env(protocol::ENV_OUTPUT, &trace)
                .env(protocol::ENV_CONFIG, "mode=none");
            cmd
        }
    };
    let mut proc = Proc::spawn(cmd, false)?;
    let started = proc.started;
    let (_, ready_at) = proc.expect_line("`ready`", READY_TIMEOUT, |l| l.trim() == "ready")?;
    let exited = proc.finish()?;
    if how != Startup::None {
        let size = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
        if size == 0 {
            bail!(
                "{}: the agent wrote no trace, so it was not loaded\n{}",
                how.name(),
                exited.stderr
            );
        }
        let _ = std::fs::remove_file(&trace);
    }
    Ok((ms(ready_at - started), exited.wall_ms))
}

fn measure_startup(tools: &Tools, empty: &Program, runs: usize) -> Result<StartupResults> {
    let mut results = StartupResults {
        ready: vec![Vec::new(); Startup::ALL.len()],
        wall: vec![Vec::new(); Startup::ALL.len()],
    };
    for i in 0..runs {
        for (_, how) in rotated(&Startup::ALL, i) {
            let (ready, wall) = run_startup(tools, empty, how)
                .with_context(|| format!("startup run {} under {}", i + 1, how.name()))?;
            let idx = StartupResults::index(how);
            results.ready[idx].push(ready);
            results.wall[idx].push(wall);
        }
    }
    for how in Startup::ALL {
        let idx = StartupResults::index(how);
        println!(
            "bench: startup {:<32} to Main {:>6.1} ms  wall {:>6.1} ms (medians)",
            how.name(),
            median(&results.ready[idx]).unwrap_or(f64::NAN),
            median(&results.wall[idx]).unwrap_or(f64::NAN)
        );
    }
    Ok(results)
}

// ---------------------------------------------------------------------------------------------
// Statistics

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let min = values.iter().copied().min_by(f64::total_cmp)?;
    let max = values.iter().copied().max_by(f64::total_cmp)?;
    Some((min, max))
}

fn per_round_ratios(values: &[f64], baseline: &[f64]) -> Vec<f64> {
    values
        .iter()
        .zip(baseline)
        .filter(|(_, b)| **b > 0.0)
        .map(|(v, b)| v / b)
        .collect()
}

/// Median, min and max of the per-round ratios of `values` to `baseline` (NaN when empty).
fn ratio_summary(values: &[f64], baseline: &[f64]) -> (f64, f64, f64) {
    let ratios = per_round_ratios(values, baseline);
    let (lo, hi) = min_max(&ratios).unwrap_or((f64::NAN, f64::NAN));
    (median(&ratios).unwrap_or(f64::NAN), lo, hi)
}

fn per_round_deltas(values: &[f64], baseline: &[f64]) -> Vec<f64> {
    values.iter().zip(baseline).map(|(v, b)| v - b).collect()
}

// ---------------------------------------------------------------------------------------------
// Report

struct RunInfo {
    rounds: usize,
    startup_runs: usize,
    runtime: String,
    elapsed: Duration,
}

fn met(ok: bool) -> &'static str {
    if ok { "**met**" } else { "**missed**" }
}

fn render(info: &RunInfo, results: &[WorkloadResults], startup: &StartupResults) -> String {
    let mut out = String::new();
    let push = |out: &mut String, line: &str| {
        out.push_str(line);
        out.push('\n');
    };
    push(&mut out, "# Benchmarks");
    push(&mut out, "");
    push(
        &mut out,
        "Profiler overhead measured by `cargo xtask bench` (generated file: rerun the command to \
         refresh it).",
    );
    push(&mut out, "");
    push(&mut out, &format!("- Date: {} (UTC)", today()));
    push(&mut out, &format!("- Machine: {}", machine()));
    push(
        &mut out,
        &format!(
            "- Runtime: CoreCLR {} (Microsoft.NETCore.App), programs compiled with Mono's `mcs \
             -optimize+`",
            info.runtime
        ),
    );
    push(
        &mut out,
        &format!(
            "- Rounds: {} per workload and configuration; startup: {} runs per configuration; \
             whole bench took {:.0} s",
            info.rounds,
            info.startup_runs,
            info.elapsed.as_secs_f64()
        ),
    );
    if let Some(rev) = revision() {
        push(&mut out, &format!("- clrprof: {rev}"));
    }
    push(&mut out, "");
    push(&mut out, "## Method");
    push(&mut out, "");
    push(
        &mut out,
        "The machine is shared and noisy, so results are ratios measured within one run, never \
         absolute times. Each workload is a C# program in `bench/programs/` that prints `ready` \
         from `Main`, waits for a line on stdin, does about 1-2 s of deterministic work, then \
         prints `work_ms=` (a `Stopwatch` around that work only) and a checksum. The bench \
         starts the program, waits for `ready` (by then the clrprof agent has initialized, \
         since the runtime loads it before `Main`), for EventPipe also starts the session and \
         waits for the runtime's reply, and only then sends the line: `work_ms` is the \
         steady-state cost of profiling, without startup. In every round each workload runs \
         once under every configuration, one after the other, the order rotating from round to \
         round, so that load from other processes hits all configurations alike. The slowdown \
         is the **median of the per-round ratios** `work_ms(config) / work_ms(none)` (each \
         profiled run compared with the unprofiled run of the same round); min and max are \
         over the rounds. The checksums of every run of a workload must be identical (the \
         bench aborts otherwise). `wall` is the whole process, from start to exit (runtime \
         startup and shutdown, trace writing, and for EventPipe the session's start, stop and \
         rundown).",
    );
    push(&mut out, "");
    push(&mut out, "Configurations:");
    push(&mut out, "");
    for c in Config::ALL {
        push(&mut out, &format!("- `{}`: {}", c.name(), c.describe()));
    }
    push(&mut out, "");
    push(
        &mut out,
        "Workloads: `Fib` (recursive Fibonacci: almost nothing but calls), `Realistic` (CSV-like \
         parsing, Dictionary/List, LINQ GroupBy/OrderBy/Select, string formatting, small \
         recursive expression trees), `Alloc` (small objects, arrays, strings and lists: dozens \
         of gen0 collections), `Threads` (4 threads of mixed calls and loops on the machine's \
         cores).",
    );
    push(&mut out, "");
    push(
        &mut out,
        &format!(
            "Targets: sample mode costs at most {:.0}% at 100 Hz, and less than the runtime's own \
             EventPipe sampler at the same rate (1000 Hz); trace mode at most {TRACE_FIB_MAX}x \
             on `Fib` and {TRACE_REALISTIC_MAX}x on `Realistic`; startup (`clrprof record --mode \
             none` on an empty program, median of the paired differences of whole-process wall \
             time) under {STARTUP_MAX_MS:.0} ms.",
            (SAMPLE_100_MAX - 1.0) * 100.0
        ),
    );
    push(&mut out, "");

    push(&mut out, "## Targets");
    push(&mut out, "");
    let spreads: Vec<f64> = results
        .iter()
        .filter_map(|r| {
            let work = r.work(Config::None);
            let (lo, hi) = min_max(&work)?;
            Some((hi - lo) / median(&work)? * 100.0)
        })
        .collect();
    if let Some((lo, hi)) = min_max(&spreads) {
        push(
            &mut out,
            &format!(
                "Noise: the unprofiled runs of one workload differ by {lo:.1}% to {hi:.1}% \
                 (max - min over median) across the rounds of this run, so a difference of a \
                 few percent between two configurations is within the noise.",
            ),
        );
        push(&mut out, "");
    }
    push(&mut out, "| target | measured | status |");
    push(&mut out, "|---|---|---|");
    for r in results {
        if let Some(ratio) = r.median_ratio(Config::Sample100) {
            push(
                &mut out,
                &format!(
                    "| `{}`: sample-100 <= {SAMPLE_100_MAX:.2}x | {ratio:.3}x | {} |",
                    r.name,
                    met(ratio <= SAMPLE_100_MAX)
                ),
            );
        }
    }
    for r in results {
        if let (Some(ours), Some(theirs)) = (
            r.median_ratio(Config::Sample1000),
            r.median_ratio(Config::EventPipe1000),
        ) {
            push(
                &mut out,
                &format!(
                    "| `{}`: sample-1000 < eventpipe-1000 | {ours:.3}x vs {theirs:.3}x | {} |",
                    r.name,
                    met(ours < theirs)
                ),
            );
        }
    }
    for (name, limit) in [("Fib", TRACE_FIB_MAX), ("Realistic", TRACE_REALISTIC_MAX)] {
        let Some(r) = results.iter().find(|r| r.name == name) else {
            continue;
        };
        if let Some(ratio) = r.median_ratio(Config::Trace) {
            let floor = r
                .median_ratio(Config::HooksFloor)
                .map_or(String::new(), |f| format!(" (empty hooks alone: {f:.2}x)"));
            push(
                &mut out,
                &format!(
                    "| `{name}`: trace <= {limit}x | {ratio:.2}x{floor} | {} |",
                    met(ratio <= limit)
                ),
            );
        }
    }
    if let Some(delta) = startup.wall_delta(Startup::ClrprofNone) {
        push(
            &mut out,
            &format!(
                "| startup (`clrprof record --mode none`) < {STARTUP_MAX_MS:.0} ms | {delta:+.1} \
                 ms | {} |",
                met(delta < STARTUP_MAX_MS)
            ),
        );
    }
    push(&mut out, "");

    push(&mut out, "## Steady state (`work_ms`)");
    for r in results {
        push(&mut out, "");
        push(&mut out, &format!("### {}", r.name));
        push(&mut out, "");
        push(
            &mut out,
            "| configuration | work ms (median) | min | max | slowdown (median ratio) | ratio \
             min-max | wall ms (median) | wall ratio | per run |",
        );
        push(&mut out, "|---|--:|--:|--:|--:|--:|--:|--:|---|");
        for c in Config::ALL {
            let work = r.work(c);
            let (Some(m), Some((lo, hi))) = (median(&work), min_max(&work)) else {
                continue;
            };
            let ratios = r.ratios(c);
            let (ratio, range) = if c == Config::None {
                (
                    "1".to_string(),
                    format!("spread {:.1}%", (hi - lo) / m * 100.0),
                )
            } else {
                let ratio = median(&ratios).map_or("-".into(), |x| format!("{x:.3}x"));
                let range = min_max(&ratios).map_or("-".into(), |(a, b)| format!("{a:.3}-{b:.3}"));
                (ratio, range)
            };
            let wall = median(&r.wall(c)).unwrap_or(f64::NAN);
            let wall_ratio = if c == Config::None {
                "1".to_string()
            } else {
                median(&r.wall_ratios(c)).map_or("-".into(), |x| format!("{x:.3}x"))
            };
            push(
                &mut out,
                &format!(
                    "| `{}` | {m:.1} | {lo:.1} | {hi:.1} | {ratio} | {range} | {wall:.0} | \
                     {wall_ratio} | {} |",
                    c.name(),
                    per_run(r.runs(c))
                ),
            );
        }
        if !r.warnings.is_empty() {
            push(&mut out, "");
            push(&mut out, "Warnings printed during the runs:");
            for w in &r.warnings {
                push(&mut out, &format!("- {w}"));
            }
        }
    }
    push(&mut out, "");

    push(&mut out, "## Startup");
    push(&mut out, "");
    push(
        &mut out,
        "`bench/programs/Empty.cs` (prints one line and exits), each configuration run in turn; \
         the differences are medians of the per-iteration differences to `none`. \"to Main\" is \
         the time from starting the process until the program's line arrives.",
    );
    push(&mut out, "");
    push(
        &mut out,
        "| configuration | to Main (median ms) | diff | wall (median ms) | diff | wall min-max |",
    );
    push(&mut out, "|---|--:|--:|--:|--:|--:|");
    for how in Startup::ALL {
        let idx = StartupResults::index(how);
        let ready = median(&startup.ready[idx]).unwrap_or(f64::NAN);
        let wall = median(&startup.wall[idx]).unwrap_or(f64::NAN);
        let (lo, hi) = min_max(&startup.wall[idx]).unwrap_or((f64::NAN, f64::NAN));
        let (dr, dw) = if how == Startup::None {
            ("-".to_string(), "-".to_string())
        } else {
            (
                startup
                    .ready_delta(how)
                    .map_or("-".into(), |d| format!("{d:+.1}")),
                startup
                    .wall_delta(how)
                    .map_or("-".into(), |d| format!("{d:+.1}")),
            )
        };
        push(
            &mut out,
            &format!(
                "| {} | {ready:.1} | {dr} | {wall:.1} | {dw} | {lo:.0}-{hi:.0} |",
                how.name()
            ),
        );
    }

    push(&mut out, "");
    push(&mut out, "## Where the time goes");
    push(&mut out, "");
    let floors: Vec<(&str, f64, f64)> = results
        .iter()
        .filter_map(|r| {
            Some((
                r.name.as_str(),
                r.median_ratio(Config::Trace)?,
                r.median_ratio(Config::HooksFloor)?,
            ))
        })
        .collect();
    if !floors.is_empty() {
        push(
            &mut out,
            "Trace mode against `hooks-floor`, the same program with enter/leave hooks that \
             are a single `ret`: the floor is what the runtime's hooks cost by themselves (a call \
             into the hook at every method entry and exit, and the runtime giving up \
             precompiled framework code once hooks are on); the rest is clrprof's own work \
             (call tree updates in its hooks, the sampler).",
        );
        push(&mut out, "");
        push(
            &mut out,
            "| workload | trace | hooks-floor | clrprof's share |",
        );
        push(&mut out, "|---|--:|--:|--:|");
        for (name, trace, floor) in floors {
            // Keep a rounded zero from printing as -0.00.
            let own = if (trace - floor).abs() < 0.005 {
                0.0
            } else {
                trace - floor
            };
            push(
                &mut out,
                &format!("| `{name}` | {trace:.2}x | {floor:.2}x | {own:+.2}x |"),
            );
        }
        push(&mut out, "");
    }
    if let (Some(all), Some(agent)) = (
        startup.wall_delta(Startup::ClrprofNone),
        startup.wall_delta(Startup::AgentOnly),
    ) {
        let cli = all - agent;
        let text = if cli.abs() < 1.0 {
            format!(
                "Startup: the agent alone adds {agent:+.1} ms to an empty program and \
                 `clrprof record` {all:+.1} ms in all: the CLI itself adds nothing measurable."
            )
        } else {
            format!(
                "Startup: the agent alone adds {agent:+.1} ms to an empty program; \
                 `clrprof record` adds {all:+.1} ms in all, so {cli:+.1} ms are the CLI's (its \
                 own start, waiting for the agent, noticing that the program exited, finishing \
                 the trace). The same CLI time is in the `wall` of every clrprof configuration \
                 above."
            )
        };
        push(&mut out, &text);
    }
    out
}

/// What a configuration's runs produced, for the table's last column.
fn per_run(runs: &[Run]) -> String {
    let samples: Vec<f64> = runs
        .iter()
        .filter_map(|r| match r.detail {
            Detail::Samples(Some(n)) => Some(n as f64),
            _ => None,
        })
        .collect();
    let bytes: Vec<f64> = runs
        .iter()
        .filter_map(|r| match r.detail {
            Detail::EventPipeBytes(b) => Some(b as f64),
            _ => None,
        })
        .collect();
    if let Some(m) = median(&samples) {
        format!("{m:.0} samples")
    } else if let Some(m) = median(&bytes) {
        format!("{:.1} MB nettrace", m / 1e6)
    } else {
        String::new()
    }
}

/// Today's date, `YYYY-MM-DD`, in UTC.
fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Shift the epoch to 0000-03-01 so that leap days end each 4/100/400-year cycle.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146096
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year
    let mp = (5 * doy + 2) / 153; // March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `N CPUs, <CPU model>, <memory>` from the kernel's files.
fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get().to_string())
        .unwrap_or_else(|_| "?".into());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let memory = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let kb: f64 = s
            .lines()
            .find(|l| l.starts_with("MemTotal:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(format!(", {:.1} GiB RAM", kb / (1024.0 * 1024.0)))
    });
    format!(
        "{cores} CPUs (nproc), {model}{}, Linux; shared with other work while measured",
        memory.unwrap_or_default()
    )
}

/// The commit measured, marked when the working tree had changes.
fn revision() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(workspace_root())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("commit {head} with uncommitted changes")
    } else {
        format!("commit {head}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn sample_count_from_clrprof_output() {
        let stderr = "clrprof: wrote /tmp/x.clrprof (120 records: 3 events, 97 samples, 0 \
                      dropped); the program exited with code 0\n";
        assert_eq!(parse_samples(stderr), Some(97));
        assert_eq!(parse_samples("nothing"), None);
    }

    #[test]
    fn workload_selection() {
        assert_eq!(
            select_workloads(&["threads".into(), "Fib".into()]).unwrap(),
            vec!["Fib", "Threads"]
        );
        assert!(select_workloads(&["nope".into()]).is_err());
    }
}
