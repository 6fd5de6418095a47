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
//! `cover_exclude=A,B`, `count_include=A,B`, `count_exclude=A,B`, and for benchmarks only
//! `handler_floor=1` (sample mode's signals with an empty handler and no sampler work) and
//! `count_layout=thread|shared` (count mode's counters per thread or shared).
//!
//! Decoding never fails: the profiled program must run whatever the configuration says.
//! Unknown keys, bad values and a configuration of a newer version give warnings (which the
//! agent sends to the CLI) and the defaults.

use crate::EventCategory;

/// The version of the configuration this crate writes. A decoder of this version reads every
/// older one; a newer one is read as far as its keys are known, with a warning.
pub const CONFIG_VERSION: u32 = 1;

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

impl Mode {
    /// Whether the mode takes sample mode's CPU and wall-clock samples (sample and count).
    pub fn samples(self) -> bool {
        matches!(self, Mode::Sample | Mode::Count)
    }

    /// The mode's name on the command line and in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sample => "sample",
            Mode::Trace => "trace",
            Mode::Count => "count",
            Mode::None => "none",
        }
    }

    /// The mode called `name`.
    pub fn from_name(name: &str) -> Option<Mode> {
        [Mode::Sample, Mode::Trace, Mode::Count, Mode::None]
            .into_iter()
            .find(|m| m.name() == name)
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

impl AllocMode {
    /// The method's name on the command line and in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            AllocMode::Off => "off",
            AllocMode::Sampled => "sampled",
            AllocMode::All => "all",
            AllocMode::Ticks => "ticks",
        }
    }

    /// The method called `name`.
    pub fn from_name(name: &str) -> Option<AllocMode> {
        [
            AllocMode::Off,
            AllocMode::Sampled,
            AllocMode::All,
            AllocMode::Ticks,
        ]
        .into_iter()
        .find(|m| m.name() == name)
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

impl CpuClockChoice {
    /// The clock's name on the command line and in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            CpuClockChoice::Perf => "perf",
            CpuClockChoice::Timer => "timer",
        }
    }
}

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

    /// The choice `text` spells, if any.
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

/// Sample mode's highest wall-clock rate unless asked otherwise: every 10 ms is as fine as
/// blocked time needs, and keeps the sampler's cost independent of the CPU rate.
pub const DEFAULT_WALL_RATE_HZ: u32 = 100;

/// Sample mode's wall-clock rate unless asked otherwise, for a CPU rate of `rate_hz`: a fifth
/// of it (as async-profiler's defaults, 100 Hz of CPU and 20 Hz of wall clock), at most
/// [`DEFAULT_WALL_RATE_HZ`]. A wall-clock tick costs the sampler a look at every thread (a
/// `/proc` read for each that ran since the last one): a low CPU rate asks for a low cost.
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
        }
    }
}

/// A decoded configuration and what was wrong with its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The configuration: the defaults where the text said nothing usable.
    pub config: AgentConfig,
    /// The version the text says it is (0: written before configurations had versions).
    pub version: u32,
    /// Problems, for the user.
    pub warnings: Vec<String>,
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

    /// The configuration as the agent reads it: `version=1;mode=sample;rate=1000;...`, every
    /// setting that differs from the default (mode and rate always). An assembly name holding
    /// `,`, `;` or `=` cannot be written; see [`is_assembly_name`].
    pub fn encode(&self) -> String {
        let d = AgentConfig::default();
        let mut kv: Vec<(&str, String)> = vec![
            ("version", CONFIG_VERSION.to_string()),
            ("mode", self.mode.name().into()),
            ("rate", self.rate_hz.to_string()),
        ];
        if let Some(hz) = self.wall_rate_hz {
            kv.push(("wall_rate", hz.to_string()));
        }
        if let Some(clock) = self.cpu_clock {
            kv.push(("cpu_clock", clock.name().into()));
        }
        if !self.events.is_empty() {
            let names: Vec<&str> = self.events.iter().map(|c| c.name()).collect();
            kv.push(("events", names.join(",")));
        }
        if self.inline != d.inline {
            kv.push(("inline", u8::from(self.inline).to_string()));
        }
        if self.max_nodes != d.max_nodes {
            kv.push(("max_nodes", self.max_nodes.to_string()));
        }
        if self.buffer_bytes != d.buffer_bytes {
            kv.push(("buffer_kb", (self.buffer_bytes >> 10).to_string()));
        }
        if self.alloc != d.alloc {
            kv.push(("alloc", self.alloc.name().into()));
        }
        if self.alloc_interval != d.alloc_interval {
            kv.push(("alloc_interval", self.alloc_interval.to_string()));
        }
        if self.heap_snapshots != d.heap_snapshots {
            kv.push(("heap_snapshot", self.heap_snapshots.spelling()));
        }
        if self.contention {
            kv.push(("contention", "1".into()));
        }
        if !self.async_chains {
            kv.push(("async", "0".into()));
        }
        if self.coverage {
            kv.push(("coverage", "1".into()));
        }
        if self.handler_floor {
            kv.push(("handler_floor", "1".into()));
        }
        for (key, names) in [
            ("cover_include", &self.cover_include),
            ("cover_exclude", &self.cover_exclude),
            ("count_include", &self.count_include),
            ("count_exclude", &self.count_exclude),
        ] {
            if !names.is_empty() {
                kv.push((key, names.join(",")));
            }
        }
        if self.count_layout == CountLayout::Shared {
            kv.push(("count_layout", "shared".into()));
        }
        kv.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Reads a configuration written by [`encode`](Self::encode) (of this or any version) or by
    /// hand. Never fails: see the module's documentation.
    pub fn decode(raw: &str) -> Decoded {
        let mut c = AgentConfig::default();
        let mut version = 0;
        let mut warnings = Vec::new();
        for item in raw.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let value = value.trim();
            match key.trim() {
                "version" => match value.parse::<u32>() {
                    Ok(v) => {
                        version = v;
                        if v > CONFIG_VERSION {
                            warnings.push(format!(
                                "the configuration is of version {v}, from a newer clrprof than this agent (version {CONFIG_VERSION}); settings it does not know are ignored"
                            ));
                        }
                    }
                    Err(_) => warnings.push(format!("bad configuration version `{value}`")),
                },
                "mode" => match Mode::from_name(value) {
                    Some(m) => c.mode = m,
                    None => warnings.push(format!("unknown mode `{value}`, sampling instead")),
                },
                "events" => {
                    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        if name == "all" {
                            c.events = EventCategory::all().to_vec();
                        } else if let Some(cat) = EventCategory::parse(name) {
                            if !c.events.contains(&cat) {
                                c.events.push(cat);
                            }
                        } else {
                            warnings.push(format!("unknown event category `{name}`, ignored"));
                        }
                    }
                }
                "rate" => match value.parse::<u32>() {
                    Ok(hz) if RATE_HZ.contains(&hz) => c.rate_hz = hz,
                    _ => warnings.push(format!(
                        "bad sampling rate `{value}`, using {} Hz",
                        c.rate_hz
                    )),
                },
                "wall_rate" => match value.parse::<u32>() {
                    Ok(hz) if RATE_HZ.contains(&hz) => c.wall_rate_hz = Some(hz),
                    _ => warnings.push(format!("bad wall-clock sampling rate `{value}`, ignored")),
                },
                "inline" => c.inline = value != "0",
                "max_nodes" => match value.parse::<u64>() {
                    Ok(n) if n > 0 => c.max_nodes = n,
                    _ => warnings.push(format!("bad max_nodes `{value}`")),
                },
                "buffer_kb" => match value.parse::<usize>() {
                    Ok(kb) if BUFFER_KIB.contains(&kb) => c.buffer_bytes = kb << 10,
                    _ => warnings.push(format!("bad buffer_kb `{value}`")),
                },
                "alloc" => match AllocMode::from_name(value) {
                    Some(a) => c.alloc = a,
                    None => warnings.push(format!("unknown allocation mode `{value}`, ignored")),
                },
                "alloc_interval" => match value.parse::<u64>() {
                    Ok(n) if (1..=1 << 40).contains(&n) => c.alloc_interval = n,
                    _ => warnings.push(format!(
                        "bad alloc_interval `{value}`, using {} bytes",
                        c.alloc_interval
                    )),
                },
                "heap_snapshot" => match HeapSnapshots::parse(value) {
                    Some(h) => c.heap_snapshots = h,
                    None => warnings.push(format!("bad heap_snapshot `{value}`, no snapshots")),
                },
                "coverage" => c.coverage = value != "0",
                "contention" => c.contention = value != "0",
                "async" => c.async_chains = value != "0",
                "cpu_clock" => match value {
                    "perf" => c.cpu_clock = Some(CpuClockChoice::Perf),
                    "timer" => c.cpu_clock = Some(CpuClockChoice::Timer),
                    _ => warnings.push(format!(
                        "unknown CPU clock `{value}` (perf or timer), ignored"
                    )),
                },
                "handler_floor" => c.handler_floor = value != "0",
                "cover_include" => c.cover_include = names(value),
                "cover_exclude" => c.cover_exclude = names(value),
                "count_include" => c.count_include = names(value),
                "count_exclude" => c.count_exclude = names(value),
                "count_layout" => match value {
                    "thread" => c.count_layout = CountLayout::Thread,
                    "shared" => c.count_layout = CountLayout::Shared,
                    _ => warnings.push(format!(
                        "unknown count layout `{value}` (thread or shared), ignored"
                    )),
                },
                other => warnings.push(format!("unknown setting `{other}`, ignored")),
            }
        }
        Decoded {
            config: c,
            version,
            warnings,
        }
    }
}

/// Whether `name` can stand in an assembly list of the configuration: not empty, and without
/// the separators `,`, `;` and `=`.
pub fn is_assembly_name(name: &str) -> bool {
    !name.is_empty() && !name.contains([',', ';', '='])
}

/// A comma-separated list of names.
fn names(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(raw: &str) -> AgentConfig {
        let d = AgentConfig::decode(raw);
        assert!(d.warnings.is_empty(), "{raw}: {:?}", d.warnings);
        d.config
    }

    #[test]
    fn every_setting_survives_encoding() {
        let c = AgentConfig {
            mode: Mode::Count,
            events: vec![EventCategory::Jit, EventCategory::Gc],
            rate_hz: 250,
            wall_rate_hz: Some(50),
            inline: false,
            max_nodes: 10,
            buffer_bytes: 64 << 10,
            alloc: AllocMode::Ticks,
            alloc_interval: 4096,
            heap_snapshots: HeapSnapshots::EveryGc(3),
            contention: true,
            async_chains: false,
            coverage: true,
            cpu_clock: Some(CpuClockChoice::Timer),
            handler_floor: true,
            cover_include: vec!["App".into(), "Lib".into()],
            cover_exclude: vec!["Tests".into()],
            count_include: vec!["System.Private.CoreLib".into()],
            count_exclude: vec!["X".into()],
            count_layout: CountLayout::Shared,
        };
        let text = c.encode();
        assert!(text.starts_with("version=1;mode=count;rate=250;"), "{text}");
        let d = AgentConfig::decode(&text);
        assert_eq!(d.config, c);
        assert_eq!(d.version, CONFIG_VERSION);
        assert!(d.warnings.is_empty());
        for h in [
            HeapSnapshots::Off,
            HeapSnapshots::AtExit,
            HeapSnapshots::EveryGc(1),
            HeapSnapshots::OnSignal,
        ] {
            assert_eq!(HeapSnapshots::parse(&h.spelling()), Some(h));
        }
        let d = AgentConfig::default();
        assert_eq!(d.encode(), "version=1;mode=sample;rate=1000");
        assert_eq!(decode(&d.encode()), d);
    }

    #[test]
    fn reads_what_earlier_clis_wrote() {
        // Before versions: no `version` key.
        let d = AgentConfig::decode("mode=trace;events=jit,gc;rate=250;inline=0;max_nodes=10");
        assert_eq!(d.version, 0);
        assert!(d.warnings.is_empty());
        let c = d.config;
        assert_eq!(c.mode, Mode::Trace);
        assert_eq!(c.events, vec![EventCategory::Jit, EventCategory::Gc]);
        assert_eq!((c.rate_hz, c.inline, c.max_nodes), (250, false, 10));
        assert_eq!(
            decode("events=all").events.len(),
            EventCategory::all().len()
        );
        assert_eq!(
            decode("heap_snapshot=every-gc").heap_snapshots,
            HeapSnapshots::EveryGc(1)
        );
        assert_eq!(
            decode("coverage=1;cover_include=App, Lib").cover_include,
            ["App", "Lib"]
        );
    }

    #[test]
    fn bad_values_and_newer_versions_warn_and_keep_defaults() {
        let d = AgentConfig::decode("mode=fast;rate=0;events=jit,nope;color=blue");
        assert_eq!(d.config.mode, Mode::Sample);
        assert_eq!(d.config.rate_hz, 1000);
        assert_eq!(d.config.events, vec![EventCategory::Jit]);
        assert_eq!(d.warnings.len(), 4, "{:?}", d.warnings);
        let d = AgentConfig::decode("version=2;mode=trace;shiny=1");
        assert_eq!(d.config.mode, Mode::Trace);
        assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
        assert!(d.warnings[0].contains("newer clrprof"));
        assert_eq!(
            AgentConfig::decode("alloc=some;alloc_interval=0;heap_snapshot=0;count_layout=x")
                .warnings
                .len(),
            4
        );
    }

    #[test]
    fn assembly_names() {
        assert!(is_assembly_name("System.Private.CoreLib"));
        for bad in ["", "a,b", "a;b", "a=b"] {
            assert!(!is_assembly_name(bad));
        }
    }
}
