//! What the runs measured, kept by runtime, workload and configuration, and what is derived
//! from it (per-round ratios, the profiler's own CPU).

use super::configs::{Config, Startup};
use super::features::Measured;
use super::runner::Run;
use super::stats::{median, per_round_deltas, per_round_ratios};

/// Everything measured on one runtime.
pub struct RuntimeResults {
    /// The runtime's version, e.g. `8.0.4`.
    pub version: String,
    pub workloads: Vec<WorkloadResults>,
    pub startup: StartupResults,
}

/// The feature benchmarks measured on one runtime.
pub struct RuntimeFeatures {
    /// The runtime's version, e.g. `8.0.4`.
    pub version: String,
    pub measured: Vec<Measured>,
}

/// All runs of one workload, by configuration, in round order.
pub struct WorkloadResults {
    pub name: String,
    pub runs: Vec<Vec<Run>>,
    /// A server workload's extra runs of the configurations its CPU-per-request target
    /// compares (see [`super::SERVER_PASSES`]), by configuration, in the order they ran: the
    /// k-th of each configuration ran in the same pass.
    pub server_runs: Vec<Vec<Run>>,
    pub warnings: Vec<String>,
}

impl WorkloadResults {
    /// No runs yet, for `name`.
    pub fn new(name: &str) -> WorkloadResults {
        WorkloadResults {
            name: name.to_string(),
            runs: vec![Vec::new(); Config::ALL.len()],
            server_runs: vec![Vec::new(); Config::ALL.len()],
            warnings: Vec::new(),
        }
    }

    pub fn runs(&self, config: Config) -> &[Run] {
        &self.runs[config_index(config)]
    }

    pub fn work(&self, config: Config) -> Vec<f64> {
        self.runs(config).iter().map(|r| r.work_ms).collect()
    }

    pub fn wall(&self, config: Config) -> Vec<f64> {
        self.runs(config).iter().map(|r| r.wall_ms).collect()
    }

    /// The process CPU time of each run (ms), where the program reported it.
    pub fn cpu(&self, config: Config) -> Vec<f64> {
        self.runs(config).iter().filter_map(|r| r.cpu_ms).collect()
    }

    /// Per-round ratios of `config`'s work time to the unprofiled run of the same round.
    pub fn ratios(&self, config: Config) -> Vec<f64> {
        per_round_ratios(&self.work(config), &self.work(Config::None))
    }

    pub fn wall_ratios(&self, config: Config) -> Vec<f64> {
        per_round_ratios(&self.wall(config), &self.wall(Config::None))
    }

    /// Per-round ratios of `config`'s process CPU time to the unprofiled run's.
    pub fn cpu_ratios(&self, config: Config) -> Vec<f64> {
        per_round_ratios(&self.cpu(config), &self.cpu(Config::None))
    }

    pub fn median_ratio(&self, config: Config) -> Option<f64> {
        median(&self.ratios(config))
    }

    pub fn median_cpu_ratio(&self, config: Config) -> Option<f64> {
        median(&self.cpu_ratios(config))
    }

    /// The extra process CPU time of `config` over the unprofiled run of the same round (ms),
    /// median over the rounds.
    pub fn median_cpu_delta(&self, config: Config) -> Option<f64> {
        median(&per_round_deltas(
            &self.cpu(config),
            &self.cpu(Config::None),
        ))
    }

    /// The process CPU per request served (us) of each run of a server workload: the
    /// matrix's runs, then the extra passes'.
    pub fn cpu_per_request(&self, config: Config) -> Vec<f64> {
        self.runs(config)
            .iter()
            .chain(&self.server_runs[config_index(config)])
            .filter_map(|r| Some(r.cpu_ms? * 1e3 / (r.requests? as f64).max(1.0)))
            .collect()
    }

    /// The ratios of `config`'s CPU per request to the unprofiled run's of the same pass
    /// (see [`Self::cpu_per_request`]).
    pub fn cpu_per_request_ratios(&self, config: Config) -> Vec<f64> {
        per_round_ratios(
            &self.cpu_per_request(config),
            &self.cpu_per_request(Config::None),
        )
    }

    /// [`Self::cpu_per_request_ratios`], median.
    pub fn median_cpu_per_request_ratio(&self, config: Config) -> Option<f64> {
        median(&self.cpu_per_request_ratios(config))
    }

    /// The sampler thread's CPU per sample (us), median over the runs.
    pub fn sampler_us_per_sample(&self, config: Config) -> Option<f64> {
        let per: Vec<f64> = self
            .runs(config)
            .iter()
            .filter_map(|r| r.sampler_us_per_sample)
            .collect();
        median(&per)
    }

    /// The profiler's own CPU as its trace reports it (signal handlers, sampler and writer
    /// threads, from the agent's start), as a share of the program's CPU time over the same
    /// window (the process's from its start, less the profiler's), median over the rounds.
    /// Both sides cover the whole run: the work's CPU alone left out the runtime's start and a
    /// server's warm-up, whose profiler CPU the counters hold (`HttpServer` warms up for 3 s
    /// before its 4 timed seconds).
    pub fn profiler_share(&self, config: Config) -> Option<f64> {
        let shares: Vec<f64> = self
            .runs(config)
            .iter()
            .filter_map(|r| {
                let profiler = r.profiler_cpu_ms?;
                Some(profiler / (r.process_cpu_ms? - profiler))
            })
            .collect();
        median(&shares)
    }
}

pub fn config_index(config: Config) -> usize {
    Config::ALL
        .iter()
        .position(|c| *c == config)
        .expect("every config is in ALL")
}

/// Startup measurements: per configuration, time to `Main` and whole-process wall time.
pub struct StartupResults {
    pub ready: Vec<Vec<f64>>,
    pub wall: Vec<Vec<f64>>,
}

impl StartupResults {
    pub fn index(s: Startup) -> usize {
        Startup::ALL
            .iter()
            .position(|x| *x == s)
            .expect("every startup config is in ALL")
    }

    /// Median of the per-run differences to `none` (runs are paired by iteration).
    pub fn wall_delta(&self, s: Startup) -> Option<f64> {
        median(&per_round_deltas(
            &self.wall[Self::index(s)],
            &self.wall[Self::index(Startup::None)],
        ))
    }

    pub fn ready_delta(&self, s: Startup) -> Option<f64> {
        median(&per_round_deltas(
            &self.ready[Self::index(s)],
            &self.ready[Self::index(Startup::None)],
        ))
    }
}
