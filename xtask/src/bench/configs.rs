//! How a benchmark program is run: the configurations of the main matrix, of the feature
//! benchmarks (contention, async chains) and of the memory and coverage benchmarks, and those
//! of the startup measurement.

use anyhow::{Result, bail};

/// How a workload is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    None,
    Sample100,
    Sample1000,
    /// The agent's per-thread CPU clocks at 1 kHz with a handler that only keeps them going, and
    /// no sampler work: the floor under any signal-based sampler on this machine.
    SampleFloor1000,
    Trace,
    /// `clrprof record --mode count`: sample mode plus call counters in the IL.
    Count,
    HooksFloor,
    EventPipe1000,
    /// Feature benchmarks only (not in [`Config::ALL`]): `sample-100` with lock contention
    /// recorded, and `sample-100` with the agent's async-chain probes turned off.
    SampleContention100,
    SampleNoAsync100,
    /// Memory benchmarks only (not in [`Config::ALL`]).
    AllocSampled,
    AllocAll,
    AllocTicks,
    /// `--alloc` with no method: the default.
    AllocDefault,
    /// Heap snapshot cost: `--heap-snapshot on-signal` with no signal, and `at-exit`.
    HeapOnSignal,
    HeapAtExit,
    /// Coverage benchmarks only (not in [`Config::ALL`]).
    Coverage,
    CoverageCoreLib,
    /// The agreement check only (not in [`Config::ALL`]): Linux `perf record`, to compare
    /// `sample-1000`'s flat profile with.
    Perf1000,
    /// The export benchmark only (not in [`Config::ALL`]): the agent alone in export mode at
    /// its defaults, shipping to a loopback receiver.
    Export,
}

impl Config {
    /// The main matrix, in report order.
    pub const ALL: [Config; 8] = [
        Config::None,
        Config::Sample100,
        Config::Sample1000,
        Config::SampleFloor1000,
        Config::Trace,
        Config::Count,
        Config::HooksFloor,
        Config::EventPipe1000,
    ];

    /// The configurations of the feature, memory and coverage benchmarks (not in
    /// [`Config::ALL`]).
    const OTHERS: [Config; 12] = [
        Config::SampleContention100,
        Config::SampleNoAsync100,
        Config::AllocSampled,
        Config::AllocAll,
        Config::AllocTicks,
        Config::AllocDefault,
        Config::HeapOnSignal,
        Config::HeapAtExit,
        Config::Coverage,
        Config::CoverageCoreLib,
        Config::Perf1000,
        Config::Export,
    ];

    /// Every configuration, to find one by name.
    fn every() -> impl Iterator<Item = Config> {
        Config::ALL.into_iter().chain(Config::OTHERS)
    }

    /// The configurations named (as [`Config::name`] spells them), in the order given.
    pub fn parse_list(names: &[String]) -> Result<Vec<Config>> {
        let mut chosen = Vec::new();
        for name in names {
            let Some(config) = Config::every().find(|c| c.name() == name.trim()) else {
                let all: Vec<&str> = Config::every().map(|c| c.name()).collect();
                bail!(
                    "unknown configuration `{name}`; choose from {}",
                    all.join(", ")
                );
            };
            if !chosen.contains(&config) {
                chosen.push(config);
            }
        }
        Ok(chosen)
    }

    pub fn name(self) -> &'static str {
        match self {
            Config::None => "none",
            Config::Sample100 => "sample-100",
            Config::Sample1000 => "sample-1000",
            Config::SampleFloor1000 => "signal-floor-1000",
            Config::Trace => "trace",
            Config::Count => "count",
            Config::HooksFloor => "hooks-floor",
            Config::EventPipe1000 => "eventpipe-1000",
            Config::SampleContention100 => "sample-100-contention",
            Config::SampleNoAsync100 => "sample-100-no-async",
            Config::AllocSampled => "alloc-sampled",
            Config::AllocAll => "alloc-all",
            Config::AllocTicks => "alloc-ticks",
            Config::AllocDefault => "alloc-default",
            Config::HeapOnSignal => "heap-on-signal",
            Config::HeapAtExit => "heap-at-exit",
            Config::Coverage => "coverage",
            Config::CoverageCoreLib => "coverage-corelib",
            Config::Perf1000 => "perf-1000",
            Config::Export => "export",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Config::None => "no profiler",
            Config::Sample100 => "`clrprof record --mode sample --rate 100`",
            Config::Sample1000 => "`clrprof record --mode sample --rate 1000`",
            Config::SampleFloor1000 => {
                "not a profile: the clrprof agent alone with `mode=sample;rate=1000;\
                 handler_floor=1`: every thread's CPU clock armed at 1 kHz as in `sample-1000`, \
                 but a signal handler that only keeps it going and no sampler work: what the \
                 signals alone cost on this machine, the floor under any signal-based sampler"
            }
            Config::Trace => "`clrprof record --mode trace` (default rate 1000 Hz, inlining kept)",
            Config::Count => {
                "`clrprof record --mode count` (sample mode at 1000 Hz plus exact call counts \
                 from counters in the IL of the workload's assembly, inlining kept)"
            }
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
            Config::SampleContention100 => {
                "`clrprof record --mode sample --rate 100 --contention`: `sample-100` and every \
                 contended lock's wait, stack, type and holder"
            }
            Config::SampleNoAsync100 => {
                "`clrprof record --mode sample --rate 100 --no-async`: `sample-100` without the \
                 agent's async-chain probes"
            }
            Config::AllocSampled => "`clrprof record --mode none --alloc sampled`",
            Config::AllocAll => "`clrprof record --mode none --alloc all`",
            Config::AllocTicks => "`clrprof record --mode none --alloc ticks`",
            Config::AllocDefault => "`clrprof record --mode none --alloc` (the default method)",
            Config::HeapOnSignal => {
                "`clrprof record --mode none --heap-snapshot on-signal`, no snapshot asked for"
            }
            Config::HeapAtExit => "`clrprof record --mode none --heap-snapshot at-exit`",
            Config::Coverage => "`clrprof coverage` (default: the workload's own assembly)",
            Config::CoverageCoreLib => {
                "`clrprof coverage --include WORKLOAD --include System.Private.CoreLib` (the \
                 workload and the framework's core library, precompiled code off)"
            }
            Config::Perf1000 => {
                "not a profiler of ours: Linux `perf record -e task-clock -c 1000000 -g` (one \
                 sample per millisecond of a thread's CPU, in the kernel too), from Debian's \
                 `linux-perf`"
            }
            Config::Export => {
                "export mode (continuous profiling) at its defaults: the agent alone, loaded by \
                 the runtime's variables with `CLRPROF_EXPORT_ENDPOINT` and \
                 `CLRPROF_EXPORT_SERVICE` (CPU at 100 Hz, allocation ticks, locks, exceptions; \
                 a profile every 15 s and at exit), sending OTLP/HTTP to a loopback receiver \
                 that accepts everything"
            }
        }
    }

    /// `clrprof record` arguments before `-o`, or `None` when clrprof is not used.
    pub fn clrprof_args(self) -> Option<&'static [&'static str]> {
        match self {
            Config::None
            | Config::SampleFloor1000
            | Config::HooksFloor
            | Config::EventPipe1000
            | Config::Perf1000
            | Config::Export => None,
            Config::Sample100 => Some(&["--mode", "sample", "--rate", "100"]),
            Config::Sample1000 => Some(&["--mode", "sample", "--rate", "1000"]),
            Config::Trace => Some(&["--mode", "trace"]),
            Config::Count => Some(&["--mode", "count"]),
            Config::SampleContention100 => {
                Some(&["--mode", "sample", "--rate", "100", "--contention"])
            }
            Config::SampleNoAsync100 => Some(&["--mode", "sample", "--rate", "100", "--no-async"]),
            Config::AllocSampled => Some(&["--mode", "none", "--alloc", "sampled"]),
            Config::AllocAll => Some(&["--mode", "none", "--alloc", "all"]),
            Config::AllocTicks => Some(&["--mode", "none", "--alloc", "ticks"]),
            Config::AllocDefault => Some(&["--mode", "none", "--alloc"]),
            Config::HeapOnSignal => Some(&["--mode", "none", "--heap-snapshot", "on-signal"]),
            Config::HeapAtExit => Some(&["--mode", "none", "--heap-snapshot", "at-exit"]),
            Config::Coverage => Some(&[]),
            Config::CoverageCoreLib => Some(&["--include", "System.Private.CoreLib"]),
        }
    }

    /// The agent's configuration, for a configuration that loads the agent without the CLI.
    pub fn agent_only_config(self) -> Option<clrprof_trace::config::AgentConfig> {
        match self {
            Config::SampleFloor1000 => Some(clrprof_trace::config::AgentConfig {
                mode: clrprof_trace::config::Mode::Sample,
                rate_hz: 1000,
                handler_floor: true,
                ..Default::default()
            }),
            _ => None,
        }
    }

    /// The `clrprof` subcommand of a configuration that uses clrprof.
    pub fn subcommand(self) -> &'static str {
        match self {
            Config::Coverage | Config::CoverageCoreLib => "coverage",
            _ => "record",
        }
    }

    /// Whether the configuration samples CPU (and its trace must hold samples).
    pub fn samples_cpu(self) -> bool {
        matches!(
            self,
            Config::Sample100
                | Config::Sample1000
                | Config::Trace
                | Config::Count
                | Config::SampleContention100
                | Config::SampleNoAsync100
        )
    }
}

/// How the empty program is started for the startup measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Startup {
    /// `dotnet Empty.dll`.
    None,
    /// `clrprof record --mode none -- dotnet Empty.dll`.
    ClrprofNone,
    /// The agent loaded through the runtime's variables, writing its trace to a file itself
    /// (`CLRPROF_OUTPUT`), without the CLI: separates the agent's cost from the CLI's.
    AgentOnly,
}

impl Startup {
    pub const ALL: [Startup; 3] = [Startup::None, Startup::ClrprofNone, Startup::AgentOnly];

    pub fn name(self) -> &'static str {
        match self {
            Startup::None => "none",
            Startup::ClrprofNone => "clrprof record --mode none",
            Startup::AgentOnly => "agent only (no CLI), mode=none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_has_its_own_name() {
        for c in Config::every() {
            assert_eq!(Config::parse_list(&[c.name().into()]).unwrap(), [c]);
        }
        let names = [
            "sample-100".to_string(),
            " none".into(),
            "sample-100".into(),
        ];
        assert_eq!(
            Config::parse_list(&names).unwrap(),
            [Config::Sample100, Config::None]
        );
        assert!(Config::parse_list(&["sample-42".into()]).is_err());
    }
}
