//! Running the benchmark programs: starting them plain or under a profiler, the protocol
//! (`ready`, the go line, `work_ms=`, `cpu_ms=`, `checksum=`), and the rounds that alternate
//! configurations.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clrprof_e2e::peer_perf;
use clrprof_e2e::probes::{self, set_profiler};
use clrprof_e2e::{CaptureServer, ChildGuard, Dotnet, Program, apply_env, describe_command};
use clrprof_trace::{Reader, Record, protocol};

use super::configs::{Config, Startup};
use super::results::StartupResults;
use super::stats::median;
use super::workloads::Load;
use crate::eventpipe;
use crate::util::catch_panic;

/// Runtime startup (and the profiler's) before the program prints `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// The timed work, however slow a configuration makes it.
const WORK_TIMEOUT: Duration = Duration::from_secs(600);
/// From the end of the work to the end of the process (trace writing included).
const EXIT_TIMEOUT: Duration = Duration::from_secs(120);

/// What the bench runs things with, on one runtime.
pub struct Tools {
    pub dotnet: &'static Dotnet,
    pub clrprof: PathBuf,
    pub agent: PathBuf,
    pub probe: PathBuf,
    /// Where the runs write their traces (deleted after each run).
    pub scratch: PathBuf,
}

/// What a profiler run left besides timings.
#[derive(Debug, Clone, Copy)]
pub enum Detail {
    Nothing,
    /// Samples in the clrprof trace (as `clrprof record` reports them).
    Samples(Option<u64>),
    /// Bytes of the EventPipe stream.
    EventPipeBytes(u64),
}

/// One run of a workload.
#[derive(Debug, Clone)]
pub struct Run {
    /// The timed work's wall time, as the program measured it.
    pub work_ms: f64,
    /// The CPU time of the whole process during the work (every thread, user and system), as
    /// the program measured it.
    pub cpu_ms: Option<f64>,
    /// The CPU time of the whole process from its start to the end of the work, as the program
    /// measured it: the window of `profiler_cpu_ms` (but for the agent's last writes at exit).
    pub process_cpu_ms: Option<f64>,
    /// What the clrprof agent says it used itself (signal handlers, sampler and writer
    /// threads), for the whole run.
    pub profiler_cpu_ms: Option<f64>,
    /// The contended lock acquisitions in the clrprof trace, for a configuration that records
    /// them (the whole run: the program's warm-up too).
    pub contended_waits: Option<u64>,
    /// The requests a server workload answered during its timed part.
    pub requests: Option<u64>,
    /// The sampler thread's own CPU per sample it wrote (its symbol reading left out), in
    /// microseconds, as the clrprof trace says (sample mode).
    pub sampler_us_per_sample: Option<f64>,
    /// The program's peak resident memory (`VmHWM`) when its work was done, in KiB, where the
    /// bench started the program itself (not through `clrprof record` or `perf`).
    pub peak_rss_kib: Option<u64>,
    /// The whole process, start to exit.
    pub wall_ms: f64,
    pub checksum: String,
    pub detail: Detail,
}

/// The environment of every .NET process the bench starts (as the tests use).
pub fn dotnet_env(cmd: &mut Command) {
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

pub fn plain_command(program: &Program) -> Command {
    let mut cmd = program.command();
    dotnet_env(&mut cmd);
    cmd
}

pub fn clrprof_command(
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

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs one workload under one configuration. Returns the run and any clrprof warnings.
pub fn run_workload(
    tools: &Tools,
    program: &Program,
    config: Config,
) -> Result<(Run, Vec<String>)> {
    run_workload_into(tools, program, config, None, &[])
}

/// Runs one workload once under a clrprof configuration, with `env` added to its
/// environment, and keeps its trace at `trace`. Returns what the run measured, for the report.
pub fn record_once(
    tools: &Tools,
    program: &Program,
    config: Config,
    trace: &Path,
    env: &[(&str, &str)],
) -> Result<String> {
    let (run, _) = run_workload_into(tools, program, config, Some(trace), env)?;
    Ok(format!(
        "work {:.0} ms, whole run {:.0} ms",
        run.work_ms, run.wall_ms
    ))
}

/// [`run_workload`], moving a clrprof trace to `keep` instead of deleting it, with `env` added
/// to the program's environment.
fn run_workload_into(
    tools: &Tools,
    program: &Program,
    config: Config,
    keep: Option<&Path>,
    env: &[(&str, &str)],
) -> Result<(Run, Vec<String>)> {
    let trace = tools.scratch.join(format!("{}.clrprof", program.name));
    let probe_output = tools.scratch.join("probe.txt");
    let perf_data = tools.scratch.join(format!("{}.perf.data", program.name));
    let mut receiver: Option<CaptureServer> = None;
    let cmd = match config.clrprof_args() {
        Some(args) => {
            let mut args = args.to_vec();
            if config == Config::CoverageCoreLib {
                // `--include` replaces the default (the program's own assembly): name it too.
                args.extend(["--include", program.name.as_str()]);
            }
            clrprof_command(tools, program, config.subcommand(), &args, &trace)
        }
        None if let Some(agent_config) = config.agent_only_config() => {
            // The agent without the CLI, writing its trace itself.
            let mut cmd = plain_command(program);
            set_profiler(&mut cmd, protocol::AGENT_CLSID, &tools.agent);
            cmd.env(protocol::ENV_OUTPUT, &trace)
                .env(protocol::ENV_CONFIG, agent_config.encode());
            cmd
        }
        None if config == Config::Export => {
            // Export mode: the agent alone, with nothing but the endpoint and a service name.
            let mut cmd = plain_command(program);
            set_profiler(&mut cmd, protocol::AGENT_CLSID, &tools.agent);
            let receiver = receiver.get_or_insert_with(CaptureServer::start);
            cmd.env("CLRPROF_EXPORT_ENDPOINT", receiver.endpoint())
                .env("CLRPROF_EXPORT_SERVICE", "bench");
            cmd
        }
        None if config == Config::HooksFloor => {
            let mut cmd = plain_command(program);
            set_profiler(&mut cmd, probes::ELT, &tools.probe);
            cmd.env("PROBE_SCENARIO", "fast_ret")
                .env("PROBE_OUTPUT", &probe_output);
            cmd
        }
        None if config == Config::Perf1000 => {
            let mut cmd = peer_perf::perf_record_command(&perf_data);
            cmd.arg(&tools.dotnet.muxer).arg(&program.dll);
            dotnet_env(&mut cmd);
            cmd
        }
        None => plain_command(program),
    };
    let mut cmd = cmd;
    cmd.envs(env.iter().copied());
    let load = super::workloads::load_of(&program.name);
    let port = match load {
        Load::Own => None,
        Load::Http { .. } => Some(free_port()?),
    };
    if let Some(port) = port {
        cmd.arg(port.to_string());
    }
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
    let http = match (load, port) {
        (Load::Http { warmup, seconds }, Some(port)) => Some((port, warmup, seconds)),
        _ => None,
    };
    if let Some((port, warmup, _)) = http
        && let Err(e) = http_load(port, warmup, &tools.scratch)
    {
        return Err(proc.failure(&format!("the HTTP client failed warming up: {e:#}")));
    }
    proc.send_line("go")?;
    if let Some((port, _, seconds)) = http {
        if let Err(e) = http_load(port, seconds, &tools.scratch) {
            return Err(proc.failure(&format!("the HTTP client failed: {e:#}")));
        }
        proc.send_line("stop")?;
    }
    let (work, _) = proc.expect_line("`work_ms=`", WORK_TIMEOUT, |l| l.starts_with("work_ms="))?;
    let (cpu, _) = proc.expect_line("`cpu_ms=`", WORK_TIMEOUT, |l| l.starts_with("cpu_ms="))?;
    let (process_cpu, _) = proc.expect_line("`process_cpu_ms=`", WORK_TIMEOUT, |l| {
        l.starts_with("process_cpu_ms=")
    })?;
    // Read while the program still runs (it prints more, then exits).
    let peak_rss_kib = (config.clrprof_args().is_none() && config != Config::Perf1000)
        .then(|| peak_rss_kib(proc.pid()))
        .flatten();
    let requests = match load {
        Load::Own => None,
        Load::Http { .. } => {
            let (line, _) =
                proc.expect_line("`requests=`", WORK_TIMEOUT, |l| l.starts_with("requests="))?;
            Some(
                line["requests=".len()..]
                    .trim()
                    .parse::<u64>()
                    .with_context(|| format!("bad line `{line}`"))?,
            )
        }
    };
    let (checksum, _) =
        proc.expect_line("`checksum=`", WORK_TIMEOUT, |l| l.starts_with("checksum="))?;
    let number = |line: &str, key: &str| -> Result<f64> {
        line[key.len()..]
            .trim()
            .parse()
            .with_context(|| format!("bad line `{line}`"))
    };
    let work_ms = number(&work, "work_ms=")?;
    let cpu_ms = number(&cpu, "cpu_ms=")?;
    let process_cpu_ms = number(&process_cpu, "process_cpu_ms=")?;
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
    if let Some(receiver) = &receiver {
        // The last period is sent at exit: export mode ran if it arrived.
        if receiver.received() == 0 {
            bail!("export mode sent nothing to the receiver");
        }
    }
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
    let mut profiler_cpu_ms = None;
    let mut contended_waits = None;
    let mut sampler_us_per_sample = None;
    if config.agent_only_config().is_some() {
        profiler_cpu_ms = Some(
            trace_counts(&trace)
                .with_context(|| {
                    format!("the agent's trace of {}\n{}", config.name(), exited.stderr)
                })?
                .profiler_cpu_ms,
        );
        let _ = std::fs::remove_file(&trace);
    }
    if config == Config::Perf1000 {
        match keep {
            Some(path) => std::fs::rename(&perf_data, path)
                .with_context(|| format!("cannot move perf's data to {}", path.display()))?,
            None => {
                let _ = std::fs::remove_file(&perf_data);
            }
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
        let records_contention = config
            .clrprof_args()
            .is_some_and(|args| args.contains(&"--contention"));
        if config.samples_cpu() || records_contention {
            let counts = trace_counts(&trace)?;
            if config.samples_cpu() {
                profiler_cpu_ms = Some(counts.profiler_cpu_ms);
                sampler_us_per_sample = counts.sampler_us_per_sample;
            }
            if records_contention {
                contended_waits = Some(counts.contended_waits);
            }
        }
        match keep {
            Some(path) => std::fs::rename(&trace, path)
                .with_context(|| format!("cannot move the trace to {}", path.display()))?,
            None => {
                let _ = std::fs::remove_file(&trace);
            }
        }
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
            cpu_ms: Some(cpu_ms),
            process_cpu_ms: Some(process_cpu_ms),
            profiler_cpu_ms,
            contended_waits,
            requests,
            sampler_us_per_sample,
            peak_rss_kib,
            wall_ms: exited.wall_ms,
            checksum,
            detail,
        },
        warnings,
    ))
}

/// The peak resident memory (`VmHWM`) of process `pid` so far, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Times in ms, per configuration, in round order.
pub type Times = Vec<Vec<f64>>;

/// `items` with their indices, starting at `round` (modulo their number) and wrapping around:
/// each round runs the configurations in another order, so that none always runs first.
pub fn rotated<T: Copy>(items: &[T], round: usize) -> impl Iterator<Item = (usize, T)> + '_ {
    (0..items.len()).map(move |k| {
        let i = (k + round) % items.len();
        (i, items[i])
    })
}

/// Work and wall times (ms) of `program` under each of `configs`, in the order of `configs`:
/// every configuration once per round, alternating, their order rotating from round to round
/// (the first configuration is the baseline the others are compared with). Every run must print
/// the same checksum.
pub fn alternate(
    tools: &Tools,
    program: &Program,
    configs: &[Config],
    rounds: usize,
    label: &str,
) -> Result<(Times, Times)> {
    let (work, wall, _) = alternate_cpu(tools, program, configs, rounds, label)?;
    Ok((work, wall))
}

/// [`alternate`], with the CPU time of each run's work too (the program's whole process, as
/// it measured it; 0 where it did not say).
pub fn alternate_cpu(
    tools: &Tools,
    program: &Program,
    configs: &[Config],
    rounds: usize,
    label: &str,
) -> Result<(Times, Times, Times)> {
    let runs = alternate_runs(tools, program, configs, rounds, label)?;
    let times = |f: fn(&Run) -> f64| -> Times {
        runs.iter()
            .map(|runs| runs.iter().map(f).collect())
            .collect()
    };
    Ok((
        times(|r| r.work_ms),
        times(|r| r.wall_ms),
        times(|r| r.cpu_ms.unwrap_or(0.0)),
    ))
}

/// The runs of [`alternate`], per configuration (in the order of `configs`), in round order.
pub fn alternate_runs(
    tools: &Tools,
    program: &Program,
    configs: &[Config],
    rounds: usize,
    label: &str,
) -> Result<Vec<Vec<Run>>> {
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); configs.len()];
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
                "bench: {label} round {}/{rounds} {:<10} {:<21} work {:>8.1} ms  cpu {:>8.1} \
                 ms{}",
                round + 1,
                program.name,
                config.name(),
                run.work_ms,
                run.cpu_ms.unwrap_or(f64::NAN),
                run.contended_waits
                    .map_or(String::new(), |n| format!("  ({n} contended waits)"))
            );
            runs[i].push(run);
        }
    }
    Ok(runs)
}

/// What the bench reads in a clrprof trace.
struct TraceCounts {
    /// The CPU the agent used itself during the run (ms), from its trace's counters: its
    /// signal handlers' time on the program's threads and its sampler thread's.
    profiler_cpu_ms: f64,
    /// Contended lock acquisitions recorded.
    contended_waits: u64,
    /// The sampler thread's own CPU per sample written (its symbol reading left out), in
    /// microseconds.
    sampler_us_per_sample: Option<f64>,
}

fn trace_counts(trace: &Path) -> Result<TraceCounts> {
    let file = std::fs::File::open(trace)
        .with_context(|| format!("cannot open the trace {}", trace.display()))?;
    let reader = Reader::new(BufReader::new(file))
        .with_context(|| format!("cannot read the trace {}", trace.display()))?;
    let (mut handlers, mut sampler, mut contended_waits) = (0u64, 0u64, 0u64);
    let mut writer = 0u64;
    let (mut symbols, mut samples) = (0u64, 0u64);
    for record in reader {
        match record? {
            Record::Counter(c) => match c.name.as_str() {
                "handler_cpu_ns" => handlers = c.value,
                "sampler_cpu_ns" => sampler = c.value,
                "symbols_cpu_ns" => symbols = c.value,
                "writer_cpu_ns" => writer = c.value,
                "cpu_samples" | "wall_samples" => samples += c.value,
                _ => {}
            },
            Record::Contention(_) => contended_waits += 1,
            _ => {}
        }
    }
    Ok(TraceCounts {
        profiler_cpu_ms: (handlers + sampler + writer) as f64 / 1e6,
        contended_waits,
        sampler_us_per_sample: (samples > 0)
            .then(|| sampler.saturating_sub(symbols) as f64 / 1e3 / samples as f64),
    })
}

/// A TCP port of loopback no one listens on now.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .context("cannot find a free port on loopback")?;
    Ok(listener.local_addr()?.port())
}

/// Runs the HTTP client against `port` for `seconds` (`wrk -t1 -c16`, each connection pacing
/// its requests, see [`super::workloads::HTTP_PACE_MS`]; a query of three short words per
/// request), bounded in time.
fn http_load(port: u16, seconds: u32, scratch: &Path) -> Result<()> {
    // wrk asks a script's `delay()` how long to wait before each request.
    let pace = scratch.join("pace.lua");
    std::fs::write(
        &pace,
        format!(
            "function delay()\n  return {}\nend\n",
            super::workloads::HTTP_PACE_MS
        ),
    )
    .with_context(|| format!("cannot write {}", pace.display()))?;
    let mut cmd = Command::new("wrk");
    cmd.args(["-t1", "-c16", "--timeout", "5s", "-s"])
        .arg(&pace)
        .arg(format!("-d{seconds}s"))
        .arg(format!("http://127.0.0.1:{port}/?a=1&b=22&c=333"));
    let out =
        clrprof_e2e::run_command_timeout(&mut cmd, Duration::from_secs(u64::from(seconds) + 60));
    if !out.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            describe_command(&cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    if let Some(errors) = text
        .lines()
        .find(|l| l.contains("Non-2xx") || l.contains("Socket errors"))
    {
        bail!("the server did not answer every request: {errors}\n{text}");
    }
    Ok(())
}

/// The sample count from clrprof's closing line (`... N events, M samples, ...`).
pub fn parse_samples(stderr: &str) -> Option<u64> {
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
pub fn run_startup(tools: &Tools, empty: &Program, how: Startup) -> Result<(f64, f64)> {
    let trace = tools.scratch.join("startup.clrprof");
    let cmd = match how {
        Startup::None => plain_command(empty),
        Startup::ClrprofNone => {
            clrprof_command(tools, empty, "record", &["--mode", "none"], &trace)
        }
        Startup::AgentOnly => {
            let mut cmd = plain_command(empty);
            set_profiler(&mut cmd, protocol::AGENT_CLSID, &tools.agent);
            cmd.env(protocol::ENV_OUTPUT, &trace).env(
                protocol::ENV_CONFIG,
                clrprof_trace::config::AgentConfig {
                    mode: clrprof_trace::config::Mode::None,
                    ..Default::default()
                }
                .encode(),
            );
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

pub fn measure_startup(tools: &Tools, empty: &Program, runs: usize) -> Result<StartupResults> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_count_from_clrprof_output() {
        let stderr = "clrprof: wrote /tmp/x.clrprof (120 records: 3 events, 97 samples, 0 \
                      dropped); the program exited with code 0\n";
        assert_eq!(parse_samples(stderr), Some(97));
        assert_eq!(parse_samples("nothing"), None);
    }
}
