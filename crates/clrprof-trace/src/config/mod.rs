//! What the CLI asks the agent to record: one typed, versioned configuration that both ends
//! use.
//!
//! `clrprof record` builds an [`AgentConfig`] and hands its [`encode`](AgentConfig::encode)d
//! form to the agent (the `CLRPROF_CONFIG` environment variable at startup, the attach
//! request's client data after an attach); the agent [`decode`](AgentConfig::decode)s it into
//! the same type. On the wire it is `key=value` pairs separated by `;`, starting with
//! `version=N` ([`CONFIG_VERSION`]), so that a person can read it in a trace's `SessionStart`
//! and write one by hand to run the agent without the CLI. The keys:
//!
//! `mode=sample|trace|count|none`, `events=jit,gc,...|all`, `rate=HZ`, `wall_rate=HZ`,
//! `cpu_clock=perf|timer`, `inline=1|0`, `max_nodes=N`, `buffer_kb=N`,
//! `alloc=off|sampled|all|ticks`, `alloc_interval=BYTES`, `contention=1`, `async=0`,
//! `heap_snapshot=off|at-exit|every-gc|N|on-signal`, `coverage=1`, `cover_include=A,B`,
//! `cover_exclude=A,B`, `count_include=A,B`, `count_exclude=A,B`, `native_names=agent|reader`
//! (who names native functions: the agent, or the CLI that reads its stream), and for
//! benchmarks only
//! `handler_floor=1` (sample mode's signals with an empty handler and no sampler work) and
//! `count_layout=thread|shared` (count mode's counters per thread or shared).
//!
//! Export mode's settings ([`ExportSettings`]) are not part of the wire form: they come from
//! the `CLRPROF_EXPORT_*` environment variables alone (see [`ExportSettings::from_env`]).
//! `also_export=1` asks a recording's agent to export too, with those variables' settings
//! (`clrprof record --export URL -o FILE`: a trace beside the exported profiles).
//!
//! Decoding never fails: the profiled program must run whatever the configuration says.
//! Unknown keys, bad values and a configuration of a newer version give warnings (which the
//! agent sends to the CLI) and the defaults.

use crate::EventCategory;

#[cfg(feature = "clap")]
mod command_line;
mod wire;

pub use wire::Decoded;

/// The version of the configuration this crate writes. A decoder of this version reads every
/// older one; a newer one is read as far as its keys are known, with a warning.
pub const CONFIG_VERSION: u32 = 1;

/// Gives a setting's values their one name each, on the command line and in the
/// configuration: `ALL` (every value, in the order the command line lists them), `name` and
/// `from_name`.
macro_rules! named_values {
    ($setting:ident { $($value:ident => $name:literal),+ $(,)? }) => {
        impl $setting {
            /// Every value, in the order the command line lists them.
            pub const ALL: &'static [$setting] = &[$($setting::$value),+];

            /// The value's name on the command line and in the configuration.
            pub fn name(self) -> &'static str {
                match self {
                    $($setting::$value => $name),+
                }
            }

            /// The value called `name`, if any.
            pub fn from_name(name: &str) -> Option<$setting> {
                match name {
                    $($name => Some($setting::$value),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $setting {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

mod export;
mod source_roots;

pub use source_roots::{BadSourceRoot, SourceRoots};

pub use export::{
    DEFAULT_CPU_RATE_HZ, DEFAULT_PERIOD, ExportAuth, ExportProfile, ExportProtocol, ExportSettings,
    LabelsError, ProfilesError, SettingsError,
};

/// Export mode's environment variables (see [`ExportSettings::from_env`]).
pub mod export_env {
    pub use super::export::{
        ENV_BASIC_AUTH, ENV_BEARER_TOKEN, ENV_CPU_RATE, ENV_ENDPOINT, ENV_LABELS,
        ENV_OTEL_SERVICE_NAME, ENV_PERIOD, ENV_PROFILES, ENV_PROTOCOL, ENV_SERVICE,
        ENV_SOURCE_ROOTS, ENV_TENANT, ENV_VERSION, VARIABLE_PREFIX, VARIABLES, parse_labels,
        parse_period, parse_profiles,
    };
}

/// What to collect about CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// CPU samples every `1/rate` s of each thread's CPU time, and wall-clock samples of
    /// every thread at `wall_rate` Hz.
    Sample,
    /// Exact call counts through enter/leave hooks, with sampled time.
    Trace,
    /// Sample mode, plus exact call counts from counters added to the IL of the methods the
    /// JIT compiles (calls per function and per call site).
    Count,
    /// Only the selected runtime events.
    None,
}

named_values!(Mode {
    Sample => "sample",
    Trace => "trace",
    Count => "count",
    None => "none",
});

impl Mode {
    /// Whether the mode takes sample mode's CPU and wall-clock samples (sample and count).
    pub fn samples(self) -> bool {
        matches!(self, Mode::Sample | Mode::Count)
    }
}

/// How count mode lays its counters out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountLayout {
    /// A block of counters per thread: exact, no cache line shared between threads.
    Thread,
    /// One counter per site for all threads (benchmarks only): concurrent increments of one
    /// counter may count once.
    Shared,
}

named_values!(CountLayout {
    Thread => "thread",
    Shared => "shared",
});

/// Who names the functions of native modules (in samples' and events' stacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeNames {
    /// The agent, from each module's symbol table, read in the program's process: a trace
    /// the agent writes itself, and exported profiles, need the names in them.
    Agent,
    /// The reader of the agent's stream (`clrprof record` and `attach`): the agent sends each
    /// frame's module (path and GNU build id) and function start, and the reader names it from
    /// the module's file, out of the program's process.
    Reader,
}

named_values!(NativeNames {
    Agent => "agent",
    Reader => "reader",
});

/// Which allocations to record with their stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocMode {
    /// None.
    Off,
    /// A random sample, picked by bytes.
    Sampled,
    /// Every allocation.
    All,
    /// The runtime's allocation ticks: read by the agent through an in-process EventPipe
    /// session where the runtime offers one, else by the CLI.
    Ticks,
}

named_values!(AllocMode {
    Off => "off",
    Sampled => "sampled",
    All => "all",
    Ticks => "ticks",
});

impl AllocMode {
    /// Whether the method needs the runtime's allocation callback (`ObjectAllocated`), which
    /// only a profiler loaded at startup gets; the ticks come from the runtime's events.
    pub fn needs_allocation_callback(self) -> bool {
        matches!(self, AllocMode::Sampled | AllocMode::All)
    }
}

/// Which per-thread CPU clock sample mode uses, when asked for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuClockChoice {
    /// A perf task-clock event per thread.
    Perf,
    /// A POSIX timer on each thread's CPU-time clock.
    Timer,
}

named_values!(CpuClockChoice {
    Perf => "perf",
    Timer => "timer",
});

/// When to take heap snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapSnapshots {
    /// Never.
    Off,
    /// Once, in a collection forced at shutdown.
    AtExit,
    /// In every N-th collection (1 = every one).
    EveryGc(u32),
    /// Only when asked with the snapshot signal (`SIGUSR2`).
    OnSignal,
}

impl HeapSnapshots {
    /// The choice as the command line and the configuration spell it: `at-exit`, `every-gc`,
    /// `N`, `on-signal` or `off`.
    pub fn spelling(self) -> String {
        match self {
            HeapSnapshots::Off => "off".into(),
            HeapSnapshots::AtExit => "at-exit".into(),
            HeapSnapshots::EveryGc(1) => "every-gc".into(),
            HeapSnapshots::EveryGc(n) => n.to_string(),
            HeapSnapshots::OnSignal => "on-signal".into(),
        }
    }

    /// The choice `text` spells, if any (a number of collections is 1 or more).
    pub fn parse(text: &str) -> Option<HeapSnapshots> {
        match text {
            "off" => Some(HeapSnapshots::Off),
            "at-exit" => Some(HeapSnapshots::AtExit),
            "every-gc" => Some(HeapSnapshots::EveryGc(1)),
            "on-signal" => Some(HeapSnapshots::OnSignal),
            n => n
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .map(HeapSnapshots::EveryGc),
        }
    }
}

impl std::fmt::Display for HeapSnapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.spelling())
    }
}

/// Sample mode's highest wall-clock rate unless asked otherwise: a tick every 50 ms, as
/// async-profiler's wall clock by default. A tick costs the sampler a look at every thread
/// (its CPU clock read, and a `/proc` read for each that ran since the last one), which a
/// server pays per thread whatever its load: at 100 Hz those looks cost `HttpServer` about 3%
/// more CPU per request (10 interleaved rounds at the default CPU rate: 1.079x with ticks at
/// 100 Hz, 1.045x at 20 Hz, 1.049x with no wall ticks at all). Blocked time stays whole at
/// any rate (a wait is charged from the tick that finds it to the tick that sees it over);
/// only its ends are resolved to the tick.
pub const DEFAULT_WALL_RATE_HZ: u32 = 20;

/// Sample mode's wall-clock rate unless asked otherwise, for a CPU rate of `rate_hz`: a fifth
/// of it (as async-profiler's defaults, 100 Hz of CPU and 20 Hz of wall clock), at most
/// [`DEFAULT_WALL_RATE_HZ`].
pub fn default_wall_rate(rate_hz: u32) -> u32 {
    (rate_hz / 5).clamp(1, DEFAULT_WALL_RATE_HZ)
}

/// The default mean sampling interval of `alloc=sampled`, in bytes.
pub const DEFAULT_ALLOC_INTERVAL: u64 = 128 << 10;

/// The sampling rates the agent accepts, in Hz.
pub const RATE_HZ: std::ops::RangeInclusive<u32> = 1..=20_000;

/// The record buffer sizes the agent accepts, in KiB.
pub const BUFFER_KIB: std::ops::RangeInclusive<usize> = 64..=1 << 20;

/// Everything the agent is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// CPU profiling mode.
    pub mode: Mode,
    /// Event categories to record.
    pub events: Vec<EventCategory>,
    /// Sampling rate in Hz: sample mode's CPU samples per second of a thread's CPU time,
    /// trace mode's ticks.
    pub rate_hz: u32,
    /// Sample mode's wall-clock samples per second and thread; `None`:
    /// [`default_wall_rate`] of `rate_hz`.
    pub wall_rate_hz: Option<u32>,
    /// Let the JIT inline (trace mode reports inlined calls under their caller).
    pub inline: bool,
    /// Trace mode: maximum number of call tree nodes, all threads together.
    pub max_nodes: u64,
    /// Size of each of the agent's two record buffers.
    pub buffer_bytes: usize,
    /// Allocations to record.
    pub alloc: AllocMode,
    /// `sampled`: the mean number of bytes allocated between two samples.
    pub alloc_interval: u64,
    /// Heap snapshots.
    pub heap_snapshots: HeapSnapshots,
    /// Lock contention: every contended `Monitor.Enter` from the runtime's contention events.
    pub contention: bool,
    /// Sample mode: async call chains (probes in the program's async state machines, see
    /// docs/cpu-profiling.md); on unless turned off (`async=0`).
    pub async_chains: bool,
    /// Count basic-block hits of JIT-compiled methods (`clrprof coverage`).
    pub coverage: bool,
    /// Sample mode: the per-thread CPU clock to use (`None`: the best available).
    pub cpu_clock: Option<CpuClockChoice>,
    /// Sample mode, benchmarks only: arm the CPU clocks with a handler that only re-arms them,
    /// and take no samples: what the signals alone cost.
    pub handler_floor: bool,
    /// Coverage: only these assemblies (empty: every assembly outside the framework).
    pub cover_include: Vec<String>,
    /// Coverage: never these assemblies.
    pub cover_exclude: Vec<String>,
    /// Count mode: only these assemblies (empty: every assembly outside the framework).
    pub count_include: Vec<String>,
    /// Count mode: never these assemblies.
    pub count_exclude: Vec<String>,
    /// Count mode: how the counters are laid out.
    pub count_layout: CountLayout,
    /// Export mode (continuous profiling): the agent ships a profile of every period itself.
    /// Read from the environment only ([`ExportSettings::from_env`]), never written in the
    /// configuration's wire form.
    pub export: Option<ExportSettings>,
    /// A recording that exports too: the agent writes the trace and also ships the profiles
    /// of what it records, with the settings of the `CLRPROF_EXPORT_*` variables.
    pub also_export: bool,
    /// Who names native functions.
    pub native_names: NativeNames,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            mode: Mode::Sample,
            events: Vec::new(),
            rate_hz: 1000,
            wall_rate_hz: None,
            inline: true,
            max_nodes: 2_000_000,
            buffer_bytes: 4 << 20,
            alloc: AllocMode::Off,
            alloc_interval: DEFAULT_ALLOC_INTERVAL,
            heap_snapshots: HeapSnapshots::Off,
            contention: false,
            async_chains: true,
            coverage: false,
            cpu_clock: None,
            handler_floor: false,
            cover_include: Vec::new(),
            cover_exclude: Vec::new(),
            count_include: Vec::new(),
            count_exclude: Vec::new(),
            count_layout: CountLayout::Thread,
            export: None,
            also_export: false,
            native_names: NativeNames::Agent,
        }
    }
}

impl AgentConfig {
    /// Sample mode's wall-clock samples per second and thread.
    pub fn wall_rate(&self) -> u32 {
        self.wall_rate_hz.unwrap_or(default_wall_rate(self.rate_hz))
    }

    /// True if the category was asked for.
    pub fn wants(&self, category: EventCategory) -> bool {
        self.events.contains(&category)
    }
}

/// Whether `name` can stand in an assembly list of the configuration: not empty, and without
/// the separators `,`, `;` and `=`.
pub fn is_assembly_name(name: &str) -> bool {
    !name.is_empty() && !name.contains([',', ';', '='])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_has_one_name_that_reads_back() {
        fn check<T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display>(
            all: &[T],
            name: fn(T) -> &'static str,
            from_name: fn(&str) -> Option<T>,
        ) {
            let mut names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
            for &v in all {
                assert_eq!(from_name(name(v)), Some(v));
                assert_eq!(v.to_string(), name(v));
            }
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), all.len(), "{all:?}");
            assert_eq!(from_name("nope"), None);
        }
        check(Mode::ALL, Mode::name, Mode::from_name);
        check(AllocMode::ALL, AllocMode::name, AllocMode::from_name);
        check(
            CpuClockChoice::ALL,
            CpuClockChoice::name,
            CpuClockChoice::from_name,
        );
        check(CountLayout::ALL, CountLayout::name, CountLayout::from_name);
        check(NativeNames::ALL, NativeNames::name, NativeNames::from_name);
        assert_eq!(
            Mode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>(),
            ["sample", "trace", "count", "none"]
        );
        for h in [
            HeapSnapshots::Off,
            HeapSnapshots::AtExit,
            HeapSnapshots::EveryGc(1),
            HeapSnapshots::EveryGc(7),
            HeapSnapshots::OnSignal,
        ] {
            assert_eq!(HeapSnapshots::parse(&h.spelling()), Some(h));
            assert_eq!(h.to_string(), h.spelling());
        }
        assert_eq!(HeapSnapshots::parse("1"), Some(HeapSnapshots::EveryGc(1)));
        for bad in ["0", "-1", "never", ""] {
            assert_eq!(HeapSnapshots::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn assembly_names() {
        assert!(is_assembly_name("System.Private.CoreLib"));
        for bad in ["", "a,b", "a;b", "a=b"] {
            assert!(!is_assembly_name(bad));
        }
    }
}
