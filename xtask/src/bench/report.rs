//! `BENCHMARKS.md`: the method, the targets met or missed on each runtime side by side, and
//! every measurement by runtime and workload.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use super::configs::{Config, Startup};
use super::features;
use super::results::{RuntimeFeatures, RuntimeResults, StartupResults, WorkloadResults};
use super::runner::{Detail, Run};
use super::stats::{median, min_max};
use super::workloads::{Load, WORKLOADS, load_of};
use crate::util::workspace_root;

/// Targets (see the Method section this renders).
const SAMPLE_100_MAX: f64 = 1.02;
const IDLE_CPU_100_MAX: f64 = 1.02;
const IDLE_CPU_1000_MAX: f64 = 1.05;
const PROFILER_SHARE_100_MAX: f64 = 0.01;
const FLOOR_FACTOR_MAX: f64 = 1.5;
const TRACE_FIB_MAX: f64 = 3.0;
const TRACE_REALISTIC_MAX: f64 = 1.5;
/// Count mode's work-time targets: Fib (a call is almost all its work), the others.
const COUNT_FIB_MAX: f64 = 1.5;
const COUNT_OTHER_MAX: f64 = 1.10;
const STARTUP_MAX_MS: f64 = 15.0;
/// The server workload's CPU per request at the default (1 kHz).
const SERVER_CPU_PER_REQUEST_MAX: f64 = 1.05;
/// The sampler thread's own CPU per sample at 1 kHz (us).
const SAMPLER_US_PER_SAMPLE_MAX: f64 = 10.0;

/// Facts about the whole bench run.
pub struct RunInfo {
    pub rounds: usize,
    pub startup_runs: usize,
    pub elapsed: Duration,
}

pub fn met(ok: bool) -> &'static str {
    if ok { "**met**" } else { "**missed**" }
}

/// A runtime as the report names it.
fn runtime_name(version: &str) -> String {
    format!("CoreCLR {version}")
}

/// A target's measurement on one runtime: what was measured, and whether the target is met;
/// `None` when that runtime did not measure it.
type Measure<'a> = Box<dyn Fn(&RuntimeResults) -> Option<(String, bool)> + 'a>;

/// One target, measured on each runtime.
struct Target<'a> {
    name: String,
    measure: Measure<'a>,
}

fn workload<'r>(rt: &'r RuntimeResults, name: &str) -> Option<&'r WorkloadResults> {
    rt.workloads.iter().find(|w| w.name == name)
}

fn targets<'a>(all_names: &'a [String]) -> Vec<Target<'a>> {
    let mut t: Vec<Target<'a>> = Vec::new();
    // A workload a client drives takes the client's time whatever the server pays: its cost
    // is its CPU per request.
    let names: Vec<&'a String> = all_names
        .iter()
        .filter(|n| load_of(n) == Load::Own)
        .collect();
    if all_names.iter().any(|n| n == "HttpServer") {
        t.push(Target {
            name: format!(
                "`HttpServer`: sample-1000 (the default) CPU per request <=                  {SERVER_CPU_PER_REQUEST_MAX:.2}x, and below eventpipe-1000's"
            ),
            measure: Box::new(|rt| {
                let w = workload(rt, "HttpServer")?;
                let pairs = w.cpu_per_request_ratios(Config::Sample1000).len();
                let ours = w.median_cpu_per_request_ratio(Config::Sample1000)?;
                let theirs = w.median_cpu_per_request_ratio(Config::EventPipe1000)?;
                Some((
                    format!("{ours:.3}x over {pairs} paired runs (eventpipe-1000: {theirs:.3}x)"),
                    ours <= SERVER_CPU_PER_REQUEST_MAX && ours < theirs,
                ))
            }),
        });
    }
    for name in all_names {
        t.push(Target {
            name: format!(
                "`{name}`: sample-1000 sampler CPU per sample < {SAMPLER_US_PER_SAMPLE_MAX:.0} us"
            ),
            measure: Box::new(move |rt| {
                let us = workload(rt, name)?.sampler_us_per_sample(Config::Sample1000)?;
                Some((format!("{us:.1} us"), us < SAMPLER_US_PER_SAMPLE_MAX))
            }),
        });
    }
    for name in names.iter().copied() {
        t.push(Target {
            name: format!("`{name}`: sample-100 work time <= {SAMPLE_100_MAX:.2}x"),
            measure: Box::new(move |rt| {
                let r = workload(rt, name)?.median_ratio(Config::Sample100)?;
                Some((format!("{r:.3}x"), r <= SAMPLE_100_MAX))
            }),
        });
    }
    for name in names.iter().copied() {
        t.push(Target {
            name: format!("`{name}`: sample-1000 work time < eventpipe-1000"),
            measure: Box::new(move |rt| {
                let w = workload(rt, name)?;
                let ours = w.median_ratio(Config::Sample1000)?;
                let theirs = w.median_ratio(Config::EventPipe1000)?;
                Some((format!("{ours:.3}x vs {theirs:.3}x"), ours < theirs))
            }),
        });
    }
    for (config, max) in [
        (Config::Sample100, IDLE_CPU_100_MAX),
        (Config::Sample1000, IDLE_CPU_1000_MAX),
    ] {
        t.push(Target {
            name: format!(
                "`Idle`: {} process CPU time <= {max:.2}x (eventpipe-1000 for reference)",
                config.name()
            ),
            measure: Box::new(move |rt| {
                let w = workload(rt, "Idle")?;
                let r = w.median_cpu_ratio(config)?;
                let ep = w
                    .median_cpu_ratio(Config::EventPipe1000)
                    .map_or(String::new(), |e| format!(" ({e:.3}x)"));
                Some((format!("{r:.3}x{ep}"), r <= max))
            }),
        });
    }
    for name in all_names {
        t.push(Target {
            name: format!(
                "`{name}`: sample-100 profiler CPU (handlers + sampler + writer) < {:.0}% of the program's",
                PROFILER_SHARE_100_MAX * 100.0
            ),
            measure: Box::new(move |rt| {
                let s = workload(rt, name)?.profiler_share(Config::Sample100)?;
                Some((format!("{:.2}%", s * 100.0), s < PROFILER_SHARE_100_MAX))
            }),
        });
    }
    for name in all_names {
        t.push(Target {
            name: format!(
                "`{name}`: sample-1000 extra process CPU <= {FLOOR_FACTOR_MAX}x signal-floor-1000's"
            ),
            measure: Box::new(move |rt| {
                let w = workload(rt, name)?;
                let ours = w.median_cpu_delta(Config::Sample1000)?;
                let floor = w.median_cpu_delta(Config::SampleFloor1000)?;
                let mut text = format!("{ours:+.1} ms vs {floor:+.1} ms");
                if floor <= 0.0 {
                    text.push_str(" (the floor is within the noise)");
                }
                // A floor within the noise (or below it) cannot be a denominator.
                Some((text, ours <= FLOOR_FACTOR_MAX * floor.max(0.0)))
            }),
        });
    }
    for (name, limit) in [("Fib", TRACE_FIB_MAX), ("Realistic", TRACE_REALISTIC_MAX)] {
        if !names.iter().any(|n| *n == name) {
            continue;
        }
        t.push(Target {
            name: format!("`{name}`: trace <= {limit}x"),
            measure: Box::new(move |rt| {
                let w = workload(rt, name)?;
                let r = w.median_ratio(Config::Trace)?;
                let floor = w
                    .median_ratio(Config::HooksFloor)
                    .map_or(String::new(), |f| format!(" (empty hooks alone: {f:.2}x)"));
                Some((format!("{r:.2}x{floor}"), r <= limit))
            }),
        });
    }
    for name in names.iter().copied() {
        let limit = if name == "Fib" {
            COUNT_FIB_MAX
        } else {
            COUNT_OTHER_MAX
        };
        if !matches!(name.as_str(), "Fib" | "Realistic" | "Alloc" | "Threads") {
            continue;
        }
        t.push(Target {
            name: format!("`{name}`: count <= {limit:.2}x"),
            measure: Box::new(move |rt| {
                let w = workload(rt, name)?;
                let r = w.median_ratio(Config::Count)?;
                let trace = w
                    .median_ratio(Config::Trace)
                    .map_or(String::new(), |f| format!(" (trace: {f:.2}x)"));
                Some((format!("{r:.2}x{trace}"), r <= limit))
            }),
        });
    }
    t.push(Target {
        name: format!("startup (`clrprof record --mode none`) < {STARTUP_MAX_MS:.0} ms"),
        measure: Box::new(|rt| {
            let d = rt.startup.wall_delta(Startup::ClrprofNone)?;
            Some((format!("{d:+.1} ms"), d < STARTUP_MAX_MS))
        }),
    });
    t
}

/// The whole report (the feature, memory and coverage sections are appended by the caller;
/// the feature benchmarks' targets are in its Targets table).
pub fn render(
    info: &RunInfo,
    runtimes: &[RuntimeResults],
    measured_features: &[RuntimeFeatures],
) -> String {
    let mut out = String::new();
    let mut push = |line: &str| {
        out.push_str(line);
        out.push('\n');
    };
    push("# Benchmarks");
    push("");
    push(
        "Profiler overhead measured by `cargo xtask bench` (generated file: rerun the command to \
         refresh it).",
    );
    push("");
    push(&format!("- Date: {} (UTC)", today()));
    push(&format!("- Machine: {}", machine()));
    let names: Vec<String> = runtimes.iter().map(|r| runtime_name(&r.version)).collect();
    push(&format!(
        "- Runtimes: {} (Microsoft.NETCore.App), programs compiled once with Mono's `mcs \
         -optimize+`",
        names.join(" and ")
    ));
    push(&format!(
        "- Rounds: {} per runtime, workload and configuration; startup: {} runs per \
         configuration; whole bench took {:.0} s",
        info.rounds,
        info.startup_runs,
        info.elapsed.as_secs_f64()
    ));
    if let Some(rev) = revision() {
        push(&format!("- clrprof: {rev}"));
    }
    push("");
    push("## Method");
    push("");
    push(&format!(
        "The machine is shared and noisy, so results are ratios measured within one run, never \
         absolute times. Each workload is a C# program in `bench/programs/` that prints `ready` \
         from `Main`, waits for a line on stdin, does about 1-3 s of deterministic work, then \
         prints `work_ms=` (a `Stopwatch` around that work only), `cpu_ms=` (the CPU time the \
         whole process used meanwhile, every thread, user and system: \
         `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, so it includes a profiler's own threads and \
         signal handlers) and a checksum. The bench starts the program, waits for `ready` (by \
         then the clrprof agent has initialized, since the runtime loads it before `Main`), for \
         EventPipe also starts the session and waits for the runtime's reply, and only then \
         sends the line: `work_ms` and `cpu_ms` are the steady-state cost of profiling, without \
         startup. In every round each workload runs once under every configuration, one after \
         the other, the order rotating from round to round, so that load from other processes \
         hits all configurations alike. A slowdown is the **median of the per-round ratios** \
         `work_ms(config) / work_ms(none)` (each profiled run compared with the unprofiled run \
         of the same round; likewise for `cpu_ms`); min and max are over the rounds. The \
         checksums of every run of a workload must be identical (the bench aborts otherwise). \
         `wall` is the whole process, from start to exit (runtime startup and shutdown, trace \
         writing, and for EventPipe the session's start, stop and rundown). Every runtime runs \
         the whole matrix. The server workload (`HttpServer`) is driven by a real HTTP client \
         instead: the bench runs `wrk` against it on loopback (16 connections, each sending its \
         next request 4 ms after an answer: about 3,500 requests a second, a third of what the \
         server answers flat out, as a server in production is not saturated) for {warmup} s \
         before the go line (a server in production has served for a while: the runtime has \
         compiled its request path again at its higher tier) and for {seconds} s after it, then \
         sends a stop line; the server reports the requests it answered between the two lines, \
         and its cost is the process CPU per request (`cpu_ms` over the requests), \
         compared round by round with the unprofiled server's; its work time is the client's. \
         That cost moves by about 5% from one run of the same configuration to the next (the \
         thread pool's workers spin on `sched_yield` between requests, and how much they spin \
         and how many of them there are settles differently each run), so in every round the \
         configurations of its target (`none`, `sample-1000`, `eventpipe-1000`) run {passes} \
         more times, each pass in a rotated order, and that target is the median over all \
         these same-pass pairs. \
         The sampler's CPU per sample is its trace's `sampler_cpu_ns` less `symbols_cpu_ns` (its \
         one-time reading of native modules' unwind sections, and of their symbols where the \
         agent names native functions itself) over the samples it wrote. Under `clrprof record` \
         the symbol tables are read by `clrprof`, outside the program's process, and are in \
         no figure of the program's CPU. The profiler's CPU as a share of the program's is its \
         trace's `handler_cpu_ns`, `sampler_cpu_ns` and `writer_cpu_ns` (from the agent's start) \
         over the program's CPU in the same window: the process's CPU from its start to the end \
         of the work (`process_cpu_ms=`), less the profiler's.",
        passes = super::SERVER_PASSES,
        warmup = super::workloads::HTTP_WARMUP_SECONDS,
        seconds = super::workloads::HTTP_SECONDS,
    ));
    push("");
    push("Configurations:");
    push("");
    for c in Config::ALL {
        push(&format!("- `{}`: {}", c.name(), c.describe()));
    }
    push("");
    let workloads: Vec<String> = WORKLOADS
        .iter()
        .map(|w| format!("`{}` ({})", w.name, w.what))
        .collect();
    push(&format!("Workloads: {}.", workloads.join("; ")));
    push("");
    push(&format!(
        "Targets: sample mode costs at most {:.0}% of work time at 100 Hz, and less than the \
         runtime's own EventPipe sampler at the same rate (1000 Hz); with 50 idle threads \
         (`Idle`) the process's CPU time grows at most {IDLE_CPU_100_MAX:.2}x at 100 Hz and \
         {IDLE_CPU_1000_MAX:.2}x at 1 kHz; the agent's own CPU (its trace's `handler_cpu_ns`, \
         `sampler_cpu_ns` and `writer_cpu_ns`) stays under {:.0}% of the program's at 100 Hz, and at 1 kHz the \
         extra process CPU of sampling is within {FLOOR_FACTOR_MAX}x of the floor (the same \
         signals with an empty handler, `signal-floor-1000`); trace mode at most \
         {TRACE_FIB_MAX}x on `Fib` and {TRACE_REALISTIC_MAX}x on `Realistic`; startup \
         (`clrprof record --mode none` on an empty program, median of the paired differences \
         of whole-process wall time) under {STARTUP_MAX_MS:.0} ms; the server workload's CPU \
         per request at the default rate at most {SERVER_CPU_PER_REQUEST_MAX:.2}x, and below \
         the EventPipe sampler's; the sampler's own CPU under {SAMPLER_US_PER_SAMPLE_MAX:.0} us \
         per sample at 1 kHz; {}.",
        (SAMPLE_100_MAX - 1.0) * 100.0,
        PROFILER_SHARE_100_MAX * 100.0,
        features::targets_text(),
    ));
    push("");

    push("## Targets");
    push("");
    for rt in runtimes {
        let spreads: Vec<f64> = rt
            .workloads
            .iter()
            .filter_map(|r| {
                let work = r.work(Config::None);
                let (lo, hi) = min_max(&work)?;
                Some((hi - lo) / median(&work)? * 100.0)
            })
            .collect();
        if let Some((lo, hi)) = min_max(&spreads) {
            push(&format!(
                "Noise on {}: the unprofiled runs of one workload differ by {lo:.1}% to \
                 {hi:.1}% (max - min over median) across the rounds, so a difference of a few \
                 percent between two configurations is within the noise.",
                runtime_name(&rt.version)
            ));
            push("");
        }
    }
    let mut header = String::from("| target |");
    let mut rule = String::from("|---|");
    for n in &names {
        let _ = write!(header, " {n} | status |");
        rule.push_str("---|---|");
    }
    push(&header);
    push(&rule);
    let measured: Vec<String> = runtimes
        .first()
        .map(|rt| rt.workloads.iter().map(|w| w.name.clone()).collect())
        .unwrap_or_default();
    for target in targets(&measured) {
        let cells: Vec<Option<(String, bool)>> =
            runtimes.iter().map(|rt| (target.measure)(rt)).collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        let mut row = format!("| {} |", target.name);
        for cell in cells {
            match cell {
                Some((text, ok)) => {
                    let _ = write!(row, " {text} | {} |", met(ok));
                }
                None => row.push_str(" - | - |"),
            }
        }
        push(&row);
    }
    let versions: Vec<&str> = runtimes.iter().map(|rt| rt.version.as_str()).collect();
    for row in features::target_rows(&versions, measured_features) {
        push(&row);
    }
    push("");

    for rt in runtimes {
        push(&format!("## {}", runtime_name(&rt.version)));
        push("");
        push("### Steady state (`work_ms`, `cpu_ms`)");
        for r in &rt.workloads {
            push("");
            push(&format!("#### {}", r.name));
            push("");
            push(
                "| configuration | work ms (median) | min | max | slowdown (median ratio) | ratio \
                 min-max | process CPU ms (median) | CPU ratio | profiler CPU | wall ms (median) | \
                 wall ratio | per run |",
            );
            push("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
            for c in Config::ALL {
                if let Some(row) = workload_row(r, c) {
                    push(&row);
                }
            }
            if !r.warnings.is_empty() {
                push("");
                push("Warnings printed during the runs:");
                for w in &r.warnings {
                    push(&format!("- {w}"));
                }
            }
        }
        push("");
        push("### Startup");
        push("");
        push(
            "`bench/programs/Empty.cs` (prints one line and exits), each configuration run in \
             turn; the differences are medians of the per-iteration differences to `none`. \"to \
             Main\" is the time from starting the process until the program's line arrives.",
        );
        push("");
        for line in startup_table(&rt.startup) {
            push(&line);
        }
        push("");
        push("### Where the time goes");
        push("");
        for line in where_time_goes(rt) {
            push(&line);
        }
        push("");
    }
    out
}

/// One configuration's row of a workload's table.
fn workload_row(r: &WorkloadResults, c: Config) -> Option<String> {
    let work = r.work(c);
    let (m, (lo, hi)) = (median(&work)?, min_max(&work)?);
    let ratios = r.ratios(c);
    let none = c == Config::None;
    let (ratio, range) = if none {
        (
            "1".to_string(),
            format!("spread {:.1}%", (hi - lo) / m * 100.0),
        )
    } else {
        (
            median(&ratios).map_or("-".into(), |x| format!("{x:.3}x")),
            min_max(&ratios).map_or("-".into(), |(a, b)| format!("{a:.3}-{b:.3}")),
        )
    };
    let cpu = median(&r.cpu(c)).map_or("-".into(), |x| format!("{x:.1}"));
    let cpu_ratio = if none {
        "1".to_string()
    } else {
        r.median_cpu_ratio(c)
            .map_or("-".into(), |x| format!("{x:.3}x"))
    };
    let own = r
        .profiler_share(c)
        .map_or(String::new(), |s| format!("{:.2}%", s * 100.0));
    let wall = median(&r.wall(c)).unwrap_or(f64::NAN);
    let wall_ratio = if none {
        "1".to_string()
    } else {
        median(&r.wall_ratios(c)).map_or("-".into(), |x| format!("{x:.3}x"))
    };
    Some(format!(
        "| `{}` | {m:.1} | {lo:.1} | {hi:.1} | {ratio} | {range} | {cpu} | {cpu_ratio} | {own} | \
         {wall:.0} | {wall_ratio} | {} |",
        c.name(),
        per_run(r.runs(c))
    ))
}

fn startup_table(startup: &StartupResults) -> Vec<String> {
    let mut lines = vec![
        "| configuration | to Main (median ms) | diff | wall (median ms) | diff | wall min-max |"
            .to_string(),
        "|---|--:|--:|--:|--:|--:|".to_string(),
    ];
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
        lines.push(format!(
            "| {} | {ready:.1} | {dr} | {wall:.1} | {dw} | {lo:.0}-{hi:.0} |",
            how.name()
        ));
    }
    lines
}

/// Trace mode against its floor, sampling against its floor, startup by part.
fn where_time_goes(rt: &RuntimeResults) -> Vec<String> {
    let mut lines = Vec::new();
    let floors: Vec<(&str, f64, f64)> = rt
        .workloads
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
        lines.push(
            "Trace mode against `hooks-floor`, the same program with enter/leave hooks that are \
             a single `ret`: the floor is what the runtime's hooks cost by themselves (a call \
             into the hook at every method entry and exit, and the runtime giving up \
             precompiled framework code once hooks are on); the rest is clrprof's own work (call \
             tree updates in its hooks, the sampler)."
                .to_string(),
        );
        lines.push(String::new());
        lines.push("| workload | trace | hooks-floor | clrprof's share |".to_string());
        lines.push("|---|--:|--:|--:|".to_string());
        for (name, trace, floor) in floors {
            // Keep a rounded zero from printing as -0.00.
            let own = if (trace - floor).abs() < 0.005 {
                0.0
            } else {
                trace - floor
            };
            lines.push(format!(
                "| `{name}` | {trace:.2}x | {floor:.2}x | {own:+.2}x |"
            ));
        }
        lines.push(String::new());
    }
    let sampling: Vec<String> = rt
        .workloads
        .iter()
        .filter_map(|r| {
            let ours = r.median_cpu_delta(Config::Sample1000)?;
            let floor = r.median_cpu_delta(Config::SampleFloor1000)?;
            let own = r
                .profiler_share(Config::Sample1000)
                .map_or("-".into(), |s| format!("{:.2}%", s * 100.0));
            Some(format!(
                "| `{}` | +{ours:.1} ms | +{floor:.1} ms | {own} |",
                r.name
            ))
        })
        .collect();
    if !sampling.is_empty() {
        lines.push(
            "Sample mode at 1 kHz against `signal-floor-1000`, the same per-thread CPU clocks \
             with a handler that only keeps them going: the extra process CPU time (over the \
             unprofiled run) of each, and the agent's own CPU as its trace reports it (signal \
             handlers and sampler thread) as a share of the process's. The floor is the kernel \
             delivering a signal and returning from it, which no signal-based sampler avoids."
                .to_string(),
        );
        lines.push(String::new());
        lines.push(
            "| workload | sample-1000 extra CPU | signal-floor-1000 extra CPU | agent's own CPU |"
                .to_string(),
        );
        lines.push("|---|--:|--:|--:|".to_string());
        lines.extend(sampling);
        lines.push(String::new());
    }
    if let (Some(all), Some(agent)) = (
        rt.startup.wall_delta(Startup::ClrprofNone),
        rt.startup.wall_delta(Startup::AgentOnly),
    ) {
        let cli = all - agent;
        lines.push(if cli.abs() < 1.0 {
            format!(
                "Startup: the agent alone adds {agent:+.1} ms to an empty program and `clrprof \
                 record` {all:+.1} ms in all: the CLI itself adds nothing measurable."
            )
        } else {
            format!(
                "Startup: the agent alone adds {agent:+.1} ms to an empty program; `clrprof \
                 record` adds {all:+.1} ms in all, so {cli:+.1} ms are the CLI's (its own start, \
                 waiting for the agent, noticing that the program exited, finishing the trace). \
                 The same CLI time is in the `wall` of every clrprof configuration above."
            )
        });
    }
    lines
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
    let per_sample = median(
        &runs
            .iter()
            .filter_map(|r| r.sampler_us_per_sample)
            .collect::<Vec<_>>(),
    )
    .map_or(String::new(), |us| format!(", sampler {us:.1} us/sample"));
    let served: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(r.requests? as f64 * 1e3 / r.work_ms.max(1e-9)))
        .collect();
    let per_request: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(r.cpu_ms? * 1e3 / (r.requests? as f64).max(1.0)))
        .collect();
    let server = match (median(&served), median(&per_request)) {
        (Some(rps), Some(us)) => format!("{rps:.0} req/s, {us:.1} us CPU/request; "),
        _ => String::new(),
    };
    if let Some(m) = median(&samples) {
        format!("{server}{m:.0} samples{per_sample}")
    } else if let Some(m) = median(&bytes) {
        format!("{server}{:.1} MB nettrace", m / 1e6)
    } else {
        server.trim_end_matches("; ").to_string()
    }
}

/// Today's date, `YYYY-MM-DD`, in UTC.
pub fn today() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
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
