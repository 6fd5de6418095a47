//! `cargo xtask bench`: the profiler's overhead, measured as ratios within one run.
//!
//! The machine this runs on is usually shared and noisy, so no absolute time means much.
//! Every workload (a C# program in `bench/programs/`, [`workloads`]) is run under every
//! configuration ([`configs`]) once per round, the configurations alternating (and their order
//! rotating from round to round), and each profiled run is compared with the unprofiled run of
//! the same round ([`results`], [`stats`]). Programs wait for a line on stdin before their
//! timed part, so the profiler is ready (the agent initialized, the EventPipe session started)
//! before any measured work, and report the duration of that part themselves (`work_ms=`) and
//! the process's CPU time meanwhile (`cpu_ms=`): the steady-state overhead, apart from startup
//! ([`runner`]). Startup is measured separately with an empty program. Every pinned runtime
//! runs the whole matrix.
//!
//! Besides clrprof's modes, references run alongside: the runtime's own EventPipe sampler
//! (started over the diagnostics socket, see [`crate::eventpipe`]), empty enter/leave hooks (the
//! SDK's test profiler `probe-elt`), the floor under trace mode, and the agent's per-thread CPU
//! clocks with an empty signal handler, the floor under sample mode.
//!
//! The feature benchmarks ([`features`]: lock contention, alone with `--contention`, and async
//! call chains, alone with `--async`, each on a workload of its own with and without the
//! feature), the memory benchmarks ([`memory`], alone with `--memory`, their heap snapshot part
//! alone with `--heap`), the coverage benchmark ([`coverage`], alone with `--coverage`) and the
//! agreement of sample mode's profiles with Linux perf's ([`peer`], alone with `--peer`)
//! follow the main matrix. `--configs` runs only the configurations it names.
//!
//! The results are printed and, for a full run (every workload and configuration of every
//! part, on every runtime), written to `BENCHMARKS.md` ([`report`]); a partial run writes
//! nothing unless `--output` names a file, so that it never replaces the full tables.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clrprof_e2e::{Dotnet, Program, RUNTIMES};

mod configs;
mod coverage;
mod features;
mod memory;
mod peer;
mod report;
mod results;
mod runner;
mod stats;
mod workloads;

use crate::BenchArgs;
use crate::util::{build_release, catch_panic, workspace_root};
use configs::{Config, Startup};
use features::FEATURES;
use report::RunInfo;
use results::{RuntimeFeatures, RuntimeResults, WorkloadResults, config_index};
use runner::{Detail, Run, Tools, measure_startup, rotated, run_startup, run_workload};
use workloads::{EMPTY, Load, load_of};

/// `probe-elt` (tests/probes/elt), the SDK's test profiler: its `fast_ret` scenario installs
/// enter/leave hooks that are a single `ret`, the floor under any enter/leave-based trace mode.
const PROBE_PACKAGE: &str = "probe-elt";

const DEFAULT_ROUNDS: usize = 5;
const QUICK_ROUNDS: usize = 2;
const DEFAULT_STARTUP_RUNS: usize = 20;
const QUICK_STARTUP_RUNS: usize = 6;

/// The built binaries, copied where other builds cannot swap them during the run.
struct Binaries {
    clrprof: PathBuf,
    agent: PathBuf,
    probe: PathBuf,
    /// Holds the copies and the traces of the runs.
    scratch: tempfile::TempDir,
}

impl Binaries {
    fn tools(&self, dotnet: &'static Dotnet) -> Tools {
        Tools {
            dotnet,
            clrprof: self.clrprof.clone(),
            agent: self.agent.clone(),
            probe: self.probe.clone(),
            scratch: self.scratch.path().to_path_buf(),
        }
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
    let workloads = workloads::select(&opts.workloads)?;
    let runtimes = select_runtimes(&opts.runtimes)?;
    let configs = Config::parse_list(&opts.configs)?;
    // The main matrix unless only some parts were asked for.
    let only_parts = opts.memory
        || opts.heap
        || opts.coverage
        || opts.contention
        || opts.async_chains
        || opts.export
        || opts.peer;
    let matrix = opts.matrix || !only_parts;
    // Every part unless some were named.
    let all_parts = !opts.matrix && !only_parts;
    let matrix_configs = if configs.is_empty() {
        Config::ALL.to_vec()
    } else {
        if matrix && let Some(c) = configs.iter().find(|c| !Config::ALL.contains(c)) {
            bail!(
                "`{}` is not a configuration of the main matrix (with --contention or --async, \
                 --configs applies to their workloads alone)",
                c.name()
            );
        }
        configs.clone()
    };
    let features: Vec<_> = FEATURES
        .into_iter()
        .filter(|f| {
            all_parts
                || (opts.contention && f.workload == features::CONTENTION.workload)
                || (opts.async_chains && f.workload == features::ASYNC_CHAINS.workload)
                || (opts.export && f.workload == features::EXPORT.workload)
        })
        .collect();
    let full_run = !opts.quick
        && all_parts
        && configs.is_empty()
        && workloads.len() == workloads::WORKLOADS.len()
        && runtimes.len() == RUNTIMES.len();
    let output = match &opts.output {
        Some(path) => Some(path.clone()),
        None if full_run => Some(workspace_root().join("BENCHMARKS.md")),
        None => None,
    };

    crate::setup::run()?;
    crate::setup::ensure_debian_tool(
        "wrk",
        "wrk",
        "the HTTP client the server workload is loaded with",
    )?;
    let binaries = build()?;

    let mut measured = Vec::new();
    let mut measured_features = Vec::new();
    let mut sections = String::new();
    for dotnet in &runtimes {
        let tools = binaries.tools(dotnet);
        println!("bench: CoreCLR {}: compiling the workloads", dotnet.version);
        let compile = |name: &str| -> Result<Program> {
            let path = workspace_root()
                .join("bench")
                .join("programs")
                .join(format!("{name}.cs"));
            catch_panic(&format!("compiling {}", path.display()), || {
                dotnet.compile_file(&path)
            })
        };
        let programs = workloads
            .iter()
            .map(|w| compile(w.name))
            .collect::<Result<Vec<_>>>()?;
        let heading = format!("CoreCLR {}", dotnet.version);
        if matrix {
            measured.push(measure(
                &tools,
                &programs,
                &compile(EMPTY)?,
                &matrix_configs,
                rounds,
                startup_runs,
            )?);
        }
        if !features.is_empty() {
            println!("bench: {heading}: feature benchmarks (contention, async chains, export)");
            let mut results = Vec::new();
            for feature in &features {
                let program = compile(feature.workload)?;
                results.push(features::measure(
                    &tools, feature, &program, &configs, rounds,
                )?);
            }
            sections.push_str(&features::section(&heading, &results));
            measured_features.push(RuntimeFeatures {
                version: dotnet.version.clone(),
                measured: results,
            });
        }
        if all_parts || opts.memory {
            println!("bench: {heading}: memory benchmarks");
            let alloc = compile("Alloc")?;
            sections.push_str(&memory::alloc_modes(&tools, &alloc, rounds, &heading)?);
            let server = compile("AllocServer")?;
            sections.push_str(&memory::alloc_server(&tools, &server, rounds, &heading)?);
        }
        if all_parts || opts.memory || opts.heap {
            println!("bench: {heading}: heap snapshot benchmarks");
            let live = compile("LiveHeap")?;
            sections.push_str(&memory::heap_cost(&tools, &live, rounds, &heading)?);
        }
        if all_parts || opts.coverage {
            println!("bench: {heading}: coverage benchmarks");
            sections.push_str(&coverage::run(&tools, &programs, rounds, &heading)?);
        }
        if all_parts || opts.peer {
            println!("bench: {heading}: agreement with perf");
            sections.push_str(&peer::run(&tools, &programs, &heading)?);
        }
    }
    if (all_parts || opts.memory || opts.heap)
        && let Some(first) = runtimes.first()
    {
        // The CLI analysing synthetic heap snapshots: the same on every runtime.
        println!("bench: heap analysis");
        sections.push_str(&memory::heap_analysis(&binaries.tools(first))?);
    }

    let mut text = if measured.is_empty() {
        String::new()
    } else {
        let info = RunInfo {
            rounds,
            startup_runs,
            elapsed: started.elapsed(),
        };
        let mut text = report::render(&info, &measured, &measured_features);
        text.push('\n');
        text
    };
    text.push_str(&sections);
    println!("\n{text}");
    match output {
        Some(path) => {
            std::fs::write(&path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("bench: wrote {}", path.display());
        }
        None => println!(
            "bench: BENCHMARKS.md not written (only a full run writes it: every workload, \
             configuration and part on every runtime; use --output FILE)"
        ),
    }
    Ok(())
}

/// The pinned runtimes named (by version), or all of them.
fn select_runtimes(versions: &[String]) -> Result<Vec<&'static Dotnet>> {
    let mut chosen = Vec::new();
    for runtime in RUNTIMES {
        let wanted = versions.is_empty() || versions.iter().any(|v| v.trim() == runtime.version);
        if wanted {
            chosen.push(catch_panic(
                &format!("finding the .NET {} runtime", runtime.version),
                || Dotnet::pinned_runtime(runtime.version),
            )?);
        }
    }
    if chosen.is_empty() {
        let all: Vec<&str> = RUNTIMES.iter().map(|r| r.version).collect();
        bail!(
            "no pinned runtime is called {}; choose from {}",
            versions.join(", "),
            all.join(", ")
        );
    }
    Ok(chosen)
}

/// Builds clrprof, its agent and the hooks probe (release) and copies them aside.
fn build() -> Result<Binaries> {
    println!("bench: building clrprof (release)");
    let release = build_release(&["clrprof-cli", "clrprof-agent", PROBE_PACKAGE])?;
    let cdylib = |crate_name: &str| {
        release.join(format!(
            "{}{crate_name}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
    };
    let scratch = clrprof_e2e::temp_dir();
    let snapshot = |built: PathBuf| -> Result<PathBuf> {
        if !built.is_file() {
            bail!("the release build did not produce {}", built.display());
        }
        let copy = scratch
            .path()
            .join(built.file_name().context("artifact without a file name")?);
        std::fs::copy(&built, &copy)
            .with_context(|| format!("cannot copy {} to {}", built.display(), copy.display()))?;
        Ok(copy)
    };
    Ok(Binaries {
        clrprof: snapshot(release.join("clrprof"))?,
        agent: snapshot(cdylib("clrprof_agent"))?,
        probe: snapshot(cdylib(&PROBE_PACKAGE.replace('-', "_")))?,
        scratch,
    })
}

/// The main matrix (under `configs`, of [`Config::ALL`]) and the startup measurement on one
/// runtime.
fn measure(
    tools: &Tools,
    programs: &[Program],
    empty: &Program,
    configs: &[Config],
    rounds: usize,
    startup_runs: usize,
) -> Result<RuntimeResults> {
    let version = &tools.dotnet.version;
    // Warm-up (page cache, first start of each binary); not measured.
    println!("bench: CoreCLR {version}: warming up");
    for program in programs {
        run_workload(tools, program, Config::None)
            .with_context(|| format!("warm-up run of {}", program.name))?;
    }
    for s in Startup::ALL {
        run_startup(tools, empty, s).with_context(|| format!("warm-up of {}", s.name()))?;
    }

    println!("bench: CoreCLR {version}: startup, {startup_runs} runs per configuration");
    let startup = measure_startup(tools, empty, startup_runs)?;

    println!(
        "bench: CoreCLR {version}: {rounds} rounds of {} workloads x {} configurations",
        programs.len(),
        configs.len()
    );
    let mut results: Vec<WorkloadResults> = programs
        .iter()
        .map(|p| WorkloadResults::new(&p.name))
        .collect();
    // The configurations a server workload runs SERVER_PASSES times more, of those asked for.
    let compared: Vec<Config> = configs
        .iter()
        .copied()
        .filter(|c| SERVER_COMPARED.contains(c))
        .collect();
    for round in 0..rounds {
        for (program, result) in programs.iter().zip(results.iter_mut()) {
            for (_, config) in rotated(configs, round) {
                let run = run_checked(tools, program, config, (round, rounds), "", result)?;
                result.runs[config_index(config)].push(run);
            }
            // A server's CPU per request moves by several percent from one run to the next
            // (the thread pool's spinning and its count of threads settle differently each
            // time): the configurations its target compares run SERVER_PASSES times more.
            if load_of(&program.name) == Load::Own {
                continue;
            }
            for pass in 0..SERVER_PASSES {
                let tag = format!(" (extra pass {}/{SERVER_PASSES})", pass + 1);
                for (_, config) in rotated(&compared, round + pass + 1) {
                    let run = run_checked(tools, program, config, (round, rounds), &tag, result)?;
                    result.server_runs[config_index(config)].push(run);
                }
            }
        }
    }
    Ok(RuntimeResults {
        version: version.clone(),
        workloads: results,
        startup,
    })
}

/// Extra passes per round of a server workload over the configurations of its CPU-per-request
/// target ([`SERVER_COMPARED`]), beside the matrix's one.
pub const SERVER_PASSES: usize = 2;

/// The configurations a server workload's CPU-per-request target compares.
const SERVER_COMPARED: [Config; 3] = [Config::None, Config::Sample1000, Config::EventPipe1000];

/// One run of `program` under `config` in round `round` of `rounds` (`tag` says which pass),
/// printed, its warnings kept in `result` and its checksum checked against the runs before.
fn run_checked(
    tools: &Tools,
    program: &Program,
    config: Config,
    (round, rounds): (usize, usize),
    tag: &str,
    result: &mut WorkloadResults,
) -> Result<Run> {
    let version = &tools.dotnet.version;
    let (run, warnings) = run_workload(tools, program, config).with_context(|| {
        format!(
            "CoreCLR {version}, round {} of {}{tag}: {} under {}",
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
        "bench: {version} round {}/{rounds}{tag} {:<10} {:<18} work {:>8.1} ms  cpu {:>8.1} ms  \
         wall {:>8.1} ms{}",
        round + 1,
        program.name,
        config.name(),
        run.work_ms,
        run.cpu_ms.unwrap_or(f64::NAN),
        run.wall_ms,
        detail_text(run.detail)
    );
    Ok(run)
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
