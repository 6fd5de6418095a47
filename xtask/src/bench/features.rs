//! The feature benchmarks of `cargo xtask bench`: what a recording feature costs on a workload
//! made to exercise it, measured against the same recording without the feature:
//!
//! - **lock contention** (`record --contention`) on `Contention` (four threads taking one
//!   `lock`), against `sample-100` alone;
//! - **async call chains** (on by default; `record --no-async` turns the agent's async-chain
//!   probes off) on `Async` (clients awaiting chains of nested async methods on the thread
//!   pool), against `sample-100 --no-async`;
//! - **continuous export** (export mode at its defaults, the agent alone, shipping to a
//!   loopback receiver) on `HttpServer` under `wrk`, against no profiler.
//!
//! Both configurations of a workload run once per round, alternating, their order rotating
//! from round to round; the cost is the median of the per-round ratios with / without, for the
//! work time and for the process's CPU time. A configuration whose `clrprof record` option the
//! CLI does not have (yet) is not run: the section says so instead of failing the bench.

use std::process::Command;

use anyhow::{Context, Result};
use clrprof_e2e::Program;

use super::configs::Config;
use super::report::met;
use super::results::RuntimeFeatures;
use super::runner::{Run, Tools, alternate_runs};
use super::stats::{median, min_max, ratio_summary};

/// A recording feature and the workload that exercises it.
pub struct Feature {
    /// What is measured, for the report: `contention tracking`.
    pub name: &'static str,
    /// The `cargo xtask bench` option that runs this benchmark alone.
    pub flag: &'static str,
    /// The workload: `bench/programs/<workload>.cs`.
    pub workload: &'static str,
    /// What the workload does, for the report.
    pub what: &'static str,
    /// The configuration without the feature (the baseline) and with it.
    pub without: Config,
    pub with: Config,
    /// Targets: work time with / without, and (where there is one) process CPU time.
    pub work_max: f64,
    pub cpu_max: Option<f64>,
    /// Pairs of runs per round: more where one run's figure moves by more than the target.
    pub pairs_per_round: usize,
}

/// Target from issue 17: contention tracking costs at most 2% of work time.
pub const CONTENTION: Feature = Feature {
    name: "contention tracking",
    flag: "--contention",
    workload: "Contention",
    what: "4 threads taking one `lock` (Monitor) 2,000,000 times each, a few dozen arithmetic \
           steps inside and a few more outside, most acquisitions succeeding while spinning; \
           once in 2048 the holder stays inside some tens of microseconds, longer than the \
           others spin, so that they block: some hundreds to a few thousand contended waits per \
           second, their number varying from run to run (the table gives the median recorded)",
    without: Config::Sample100,
    with: Config::SampleContention100,
    work_max: 1.02,
    cpu_max: None,
    pairs_per_round: 1,
};

/// Target from issue 17: async call chains cost at most 10% of work time and of CPU time.
pub const ASYNC_CHAINS: Feature = Feature {
    name: "async chains",
    flag: "--async",
    workload: "Async",
    what: "16 clients on the thread pool sending 16,000 requests each, one after the other; a \
           request awaits a chain of three nested async methods doing a little CPU work each, \
           a quarter of them continue on another pool thread after `await Task.Yield()`, one \
           in 512 awaits `Task.Delay(1)`",
    without: Config::SampleNoAsync100,
    with: Config::Sample100,
    work_max: 1.10,
    cpu_max: Some(1.10),
    pairs_per_round: 1,
};

/// Target from the continuous profiling issue: export mode at its defaults costs the server
/// workload at most 1% more CPU per request. `HttpServer`'s load is a fixed request rate for a
/// fixed time (its work time is that time), so its process CPU ratio is its CPU per request's.
/// That server's CPU per request moves by about 5% from one run to the next (see the main
/// matrix's server target), five times the target: its pair runs three times per round, as the
/// main matrix's server target's configurations do.
pub const EXPORT: Feature = Feature {
    name: "continuous export",
    flag: "--export",
    workload: "HttpServer",
    what: "the HTTP server of the main matrix under `wrk` (16 connections, a request 4 ms after \
           each answer), unprofiled and in export mode at its defaults",
    without: Config::None,
    with: Config::Export,
    work_max: 1.02,
    cpu_max: Some(1.01),
    pairs_per_round: 1 + super::SERVER_PASSES,
};

/// The feature benchmarks, in report order.
pub const FEATURES: [&Feature; 3] = [&CONTENTION, &ASYNC_CHAINS, &EXPORT];

/// The runs of one feature's workload on one runtime.
pub struct Measured {
    pub feature: &'static Feature,
    /// The configurations run, the first the baseline of the ratios.
    pub configs: Vec<Config>,
    /// Per configuration (as in `configs`), in round order.
    runs: Vec<Vec<Run>>,
    /// Why nothing was run.
    pub skipped: Option<String>,
}

/// A ratio's median, min and max over the rounds.
type Summary = (f64, f64, f64);

impl Measured {
    fn index(&self, config: Config) -> Option<usize> {
        self.configs.iter().position(|c| *c == config)
    }

    /// A figure of every run of the `i`-th configuration, in round order.
    fn times(&self, i: usize, f: fn(&Run) -> f64) -> Vec<f64> {
        self.runs[i].iter().map(f).collect()
    }

    fn work(&self, i: usize) -> Vec<f64> {
        self.times(i, |r| r.work_ms)
    }

    fn cpu(&self, i: usize) -> Vec<f64> {
        self.times(i, |r| r.cpu_ms.unwrap_or(0.0))
    }

    fn wall(&self, i: usize) -> Vec<f64> {
        self.times(i, |r| r.wall_ms)
    }

    /// Work time and process CPU time of `config` relative to `baseline`, per round.
    fn ratios(&self, config: Config, baseline: Config) -> Option<(Summary, Summary)> {
        let (i, b) = (self.index(config)?, self.index(baseline)?);
        if self.runs[i].is_empty() || self.runs[b].is_empty() {
            return None;
        }
        Some((
            ratio_summary(&self.work(i), &self.work(b)),
            ratio_summary(&self.cpu(i), &self.cpu(b)),
        ))
    }

    /// What the feature costs: with / without, work and process CPU time.
    pub fn cost(&self) -> Option<(Summary, Summary)> {
        self.ratios(self.feature.with, self.feature.without)
    }
}

/// The feature's targets on one runtime: the target, what was measured and whether it is met
/// (`None`: not measured).
pub fn targets(
    feature: &Feature,
    measured: Option<&Measured>,
) -> Vec<(String, Option<(String, bool)>)> {
    let cost = measured.and_then(Measured::cost);
    let pair = format!("{} / {}", feature.with.name(), feature.without.name());
    let mut rows = vec![(
        format!(
            "`{}`: {} ({pair}) work time <= {:.2}x",
            feature.workload, feature.name, feature.work_max
        ),
        cost.map(|((m, lo, hi), _)| (format!("{m:.3}x ({lo:.3}-{hi:.3})"), m <= feature.work_max)),
    )];
    if let Some(max) = feature.cpu_max {
        rows.push((
            format!(
                "`{}`: {} ({pair}) process CPU time <= {max:.2}x",
                feature.workload, feature.name
            ),
            cost.map(|(_, (m, lo, hi))| (format!("{m:.3}x ({lo:.3}-{hi:.3})"), m <= max)),
        ));
    }
    rows
}

/// The rows of the report's Targets table for the feature benchmarks measured on the runtimes
/// of `versions` (its columns, in order): a target, then per runtime what was measured and
/// whether it is met.
pub(super) fn target_rows(versions: &[&str], measured: &[RuntimeFeatures]) -> Vec<String> {
    let mut rows = Vec::new();
    for feature in FEATURES {
        let per_runtime: Vec<_> = versions
            .iter()
            .map(|version| {
                let m = measured
                    .iter()
                    .find(|f| f.version == *version)?
                    .measured
                    .iter()
                    .find(|m| m.feature.workload == feature.workload)?;
                Some(targets(feature, Some(m)))
            })
            .collect();
        if per_runtime.iter().all(Option::is_none) {
            continue;
        }
        for (i, (name, _)) in targets(feature, None).into_iter().enumerate() {
            let mut row = format!("| {name} |");
            for cells in &per_runtime {
                match cells.as_ref().and_then(|c| c[i].1.as_ref()) {
                    Some((text, ok)) => row.push_str(&format!(" {text} | {} |", met(*ok))),
                    None => row.push_str(" - | - |"),
                }
            }
            rows.push(row);
        }
    }
    rows
}

/// The feature benchmarks' targets, for the report's Method section.
pub(super) fn targets_text() -> String {
    let targets: Vec<String> = FEATURES
        .iter()
        .map(|f| {
            let cpu = f
                .cpu_max
                .map_or(String::new(), |c| format!(" and {c:.2}x process CPU time"));
            format!(
                "{} at most {:.2}x work time{cpu} on `{}` (`{}` against `{}`)",
                f.name,
                f.work_max,
                f.workload,
                f.with.name(),
                f.without.name()
            )
        })
        .collect();
    targets.join("; ")
}

/// Runs `feature`'s workload under `configs` (its pair without and with the feature unless
/// other configurations are given), `rounds` times its pairs per round each, alternating.
pub(super) fn measure(
    tools: &Tools,
    feature: &'static Feature,
    program: &Program,
    configs: &[Config],
    rounds: usize,
) -> Result<Measured> {
    let configs = if configs.is_empty() {
        vec![feature.without, feature.with]
    } else {
        configs.to_vec()
    };
    let mut measured = Measured {
        feature,
        runs: vec![Vec::new(); configs.len()],
        configs,
        skipped: None,
    };
    let missing = missing_options(tools, &measured.configs)?;
    if !missing.is_empty() {
        let reason = format!(
            "not measured: `clrprof record` has no {} option yet",
            missing.join(", ")
        );
        println!("bench:   warning: {}: {reason}", feature.workload);
        measured.skipped = Some(reason);
        return Ok(measured);
    }
    let label = feature.workload.to_lowercase();
    let runs = rounds * feature.pairs_per_round;
    measured.runs = alternate_runs(tools, program, &measured.configs, runs, &label)?;
    Ok(measured)
}

/// The `--` options of `configs` that `clrprof record --help` does not list.
fn missing_options(tools: &Tools, configs: &[Config]) -> Result<Vec<String>> {
    let output = Command::new(&tools.clrprof)
        .args(["record", "--help"])
        .output()
        .context("cannot run clrprof record --help")?;
    Ok(missing_in_help(
        &String::from_utf8_lossy(&output.stdout),
        configs,
    ))
}

/// The `--` options of `configs`' `record` arguments that `help` does not name, quoted.
fn missing_in_help(help: &str, configs: &[Config]) -> Vec<String> {
    let listed = |option: &str| {
        help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .any(|word| word == option)
    };
    let mut missing: Vec<&str> = Vec::new();
    for config in configs {
        if config.subcommand() != "record" {
            continue;
        }
        for option in config.clrprof_args().unwrap_or_default() {
            if option.starts_with("--") && !listed(option) && !missing.contains(option) {
                missing.push(option);
            }
        }
    }
    missing.iter().map(|o| format!("`{o}`")).collect()
}

/// The feature benchmarks on one runtime (`runtime` names it), as a Markdown section.
pub(super) fn section(runtime: &str, measured: &[Measured]) -> String {
    let mut out = format!("## Contention and async chains on {runtime}\n\n");
    let more: Vec<String> = FEATURES
        .iter()
        .filter(|f| f.pairs_per_round > 1)
        .map(|f| format!("{} times on `{}`", f.pairs_per_round, f.workload))
        .collect();
    let more = if more.is_empty() {
        String::new()
    } else {
        format!(
            " ({}, whose CPU per request moves by several percent from one run to the next)",
            more.join(", ")
        )
    };
    out.push_str(&format!(
        "What a recording feature costs on a workload made to exercise it, against the same \
         recording without it: both configurations run once per round{more}, alternating, \
         their order rotating from pair to pair; a ratio is the median of the per-pair ratios \
         to the first configuration of the workload (min-max over the pairs), of work time and \
         of the process's CPU time (`cpu_ms`: every thread, the profiler's included). Where the \
         bench starts the program itself (no profiler, or the agent alone), its peak resident \
         memory (`VmHWM`, read when its work is done) is the median over its runs.\n\n",
    ));
    let mut configs: Vec<Config> = Vec::new();
    for m in measured {
        out.push_str(&format!("- `{}`: {}\n", m.feature.workload, m.feature.what));
        for c in &m.configs {
            if !configs.contains(c) {
                configs.push(*c);
            }
        }
    }
    out.push_str("\nConfigurations:\n\n");
    for c in &configs {
        out.push_str(&format!("- `{}`: {}\n", c.name(), c.describe()));
    }
    out.push_str(
        "\n| workload | configuration | work ms (median) | work ratio | min-max | process CPU ms \
         (median) | CPU ratio | min-max | wall ratio | per run |\n\
         |---|---|--:|--:|--:|--:|--:|--:|--:|---|\n",
    );
    for m in measured {
        if let Some(reason) = &m.skipped {
            out.push_str(&format!(
                "| `{}` | {} | - | - | - | - | - | - | - | |\n",
                m.feature.workload, reason
            ));
            continue;
        }
        for (i, c) in m.configs.iter().enumerate() {
            out.push_str(&row(m, i, *c));
        }
    }
    out.push('\n');
    let mut targets_text = String::new();
    for m in measured {
        for (target, cell) in targets(m.feature, Some(m)) {
            let (value, status) =
                cell.map_or(("-".to_string(), "not measured"), |(v, ok)| (v, met(ok)));
            targets_text.push_str(&format!("| {target} | {value} | {status} |\n"));
        }
    }
    out.push_str("| target | median ratio (min-max) | status |\n|---|---|---|\n");
    out.push_str(&targets_text);
    out.push('\n');
    out
}

/// One configuration's row of a workload's table (`i`: its index in `m.configs`).
fn row(m: &Measured, i: usize, c: Config) -> String {
    let name = format!("| `{}` | `{}` |", m.feature.workload, c.name());
    let (work, cpu) = (m.work(i), m.cpu(i));
    let (Some(work_ms), Some(cpu_ms), Some((lo, hi))) =
        (median(&work), median(&cpu), min_max(&work))
    else {
        return format!("{name} - | - | - | - | - | - | - | |\n");
    };
    let waits: Vec<f64> = m.runs[i]
        .iter()
        .filter_map(|r| r.contended_waits.map(|n| n as f64))
        .collect();
    let rss: Vec<f64> = m.runs[i]
        .iter()
        .filter_map(|r| r.peak_rss_kib.map(|k| k as f64))
        .collect();
    let per_run = [
        median(&waits).map(|n| format!("{n:.0} contended waits")),
        median(&rss).map(|k| format!("peak resident memory {:.1} MB", k / 1024.0)),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    if i == 0 {
        return format!(
            "{name} {work_ms:.1} | 1 | spread {:.1}% | {cpu_ms:.1} | 1 | | 1 | {per_run} |\n",
            (hi - lo) / work_ms * 100.0
        );
    }
    let (w, c, wall) = (
        ratio_summary(&work, &m.work(0)),
        ratio_summary(&cpu, &m.cpu(0)),
        ratio_summary(&m.wall(i), &m.wall(0)),
    );
    format!(
        "{name} {work_ms:.1} | {:.3}x | {:.3}-{:.3} | {cpu_ms:.1} | {:.3}x | {:.3}-{:.3} | {:.3}x | \
         {per_run} |\n",
        w.0, w.1, w.2, c.0, c.1, c.2, wall.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::runner::Detail;

    fn run(work_ms: f64, cpu_ms: f64, contended_waits: Option<u64>) -> Run {
        Run {
            work_ms,
            cpu_ms: Some(cpu_ms),
            process_cpu_ms: None,
            profiler_cpu_ms: None,
            contended_waits,
            requests: None,
            sampler_us_per_sample: None,
            peak_rss_kib: None,
            wall_ms: work_ms + 100.0,
            checksum: "1".into(),
            detail: Detail::Nothing,
        }
    }

    /// Three rounds of `feature`'s pair: work and CPU times without and with it.
    fn measured(feature: &'static Feature, without: [f64; 3], with: [f64; 3]) -> Measured {
        let waits = feature.with == Config::SampleContention100;
        Measured {
            feature,
            configs: vec![feature.without, feature.with],
            runs: vec![
                without.iter().map(|&ms| run(ms, 2.0 * ms, None)).collect(),
                with.iter()
                    .map(|&ms| run(ms, 2.0 * ms, waits.then_some(1000)))
                    .collect(),
            ],
            skipped: None,
        }
    }

    #[test]
    fn costs_are_per_round_ratios_with_over_without() {
        let m = measured(
            &CONTENTION,
            [1000.0, 2000.0, 1000.0],
            [1010.0, 2100.0, 1030.0],
        );
        let ((work, lo, hi), (cpu, _, _)) = m.cost().unwrap();
        assert!((work - 1.03).abs() < 1e-9 && (cpu - 1.03).abs() < 1e-9);
        assert!((lo - 1.01).abs() < 1e-9 && (hi - 1.05).abs() < 1e-9);
        let section = section("CoreCLR 8.0.4", &[m]);
        assert!(section.contains("| `Contention` | `sample-100-contention` | 1030.0 | 1.030x"));
        assert!(section.contains("1000 contended waits"));
        assert!(section.contains("work time <= 1.02x | 1.030x (1.010-1.050) | **missed** |"));
    }

    #[test]
    fn options_the_cli_lacks() {
        let pair = [Config::SampleNoAsync100, Config::Sample100];
        let old = "Options:\n      --mode <MODE>  CPU profiling mode\n      --rate <HZ>\n      \
                   --contention   Lock contention\n      --no-asyncs    (not the same)\n";
        assert_eq!(missing_in_help(old, &pair), ["`--no-async`"]);
        let new = format!("{old}      --no-async     Async call chains off\n");
        assert!(missing_in_help(&new, &pair).is_empty());
        assert!(missing_in_help(old, &[CONTENTION.without, CONTENTION.with]).is_empty());
        assert!(
            Config::SampleNoAsync100
                .clrprof_args()
                .unwrap()
                .contains(&"--no-async")
        );
    }

    #[test]
    fn targets_table_rows_by_runtime() {
        let async_chains = measured(&ASYNC_CHAINS, [1000.0; 3], [1050.0; 3]);
        let skipped = Measured {
            feature: &CONTENTION,
            configs: vec![CONTENTION.without, CONTENTION.with],
            runs: vec![Vec::new(), Vec::new()],
            skipped: Some("not measured".into()),
        };
        let by_runtime = [RuntimeFeatures {
            version: "8.0.4".into(),
            measured: vec![skipped, async_chains],
        }];
        let rows = target_rows(&["3.1.23", "8.0.4"], &by_runtime);
        assert_eq!(rows.len(), 3, "{rows:#?}");
        assert!(rows[0].starts_with("| `Contention`: contention tracking"));
        assert!(rows[0].ends_with("| - | - | - | - |"));
        assert!(rows[1].ends_with("| - | - | 1.050x (1.050-1.050) | **met** |"));
        assert!(rows[2].contains("process CPU time <= 1.10x"));
        assert!(target_rows(&["3.1.23"], &by_runtime).is_empty());
    }
}
