//! The agent's configuration, read from environment variables set by `clrprof record`.
//!
//! - `CLRPROF_SESSION`: path of the Unix socket the CLI listens on; the trace is streamed there.
//! - `CLRPROF_OUTPUT`: a file to write the trace to directly (profiling without the CLI).
//! - `CLRPROF_CONFIG`: `key=value` pairs separated by `;`:
//!   `mode=sample|trace|count|none`, `events=jit,gc,...|all`, `rate=HZ`, `wall_rate=HZ`,
//!   `inline=1|0`, `max_nodes=N`, `buffer_kb=N`, `alloc=off|sampled|all|ticks`, `alloc_interval=BYTES`, `contention=1|0`,
//!   `heap_snapshot=at-exit|every-gc|N|on-signal`, `coverage=1`, `cover_include=A,B`,
//!   `cover_exclude=A,B` (assembly names, see `coverage.rs`), `count_include=A,B`,
//!   `count_exclude=A,B` (count mode's assemblies, see `count.rs`), `cpu_clock=perf|timer`
//!   (sample mode: use this per-thread CPU clock or none), `handler_floor=1` (benchmarks only:
//!   sample mode's signals with an empty handler and no sampler work, the floor any
//!   signal-based sampler pays), `count_layout=thread|shared` (benchmarks only: count mode's
//!   counters per thread, the default, or shared by all threads, see `count.rs`).
//!
//! Unknown keys and bad values are reported back to the CLI as warnings, never fatal: the
//! profiled program must run whatever the configuration says.

use clrprof_trace::EventCategory;

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
    /// A random sample, picked by bytes (see `alloc.rs`).
    Sampled,
    /// Every allocation.
    All,
    /// The runtime's allocation ticks: read by the agent through an in-process EventPipe
    /// session where the runtime offers one (`alloc_ticks.rs`), else by the CLI.
    Ticks,
}

/// Which per-thread CPU clock sample mode uses, when asked for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuClockChoice {
    /// A perf task-clock event per thread.
    Perf,
    /// A POSIX timer on each thread's CPU-time clock.
    Timer,
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

/// The parsed configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// CPU profiling mode.
    pub mode: Mode,
    /// Event categories to record.
    pub events: Vec<EventCategory>,
    /// Sampling rate in Hz (both modes sample): sample mode's CPU samples per second of a
    /// thread's CPU time, trace mode's ticks.
    pub rate_hz: u32,
    /// Sample mode's wall-clock samples per second and thread; `None`: the lower of `rate_hz`
    /// and [`DEFAULT_WALL_RATE_HZ`].
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
    /// Lock contention: every contended `Monitor.Enter` from the runtime's contention events
    /// (`contention.rs`).
    pub contention: bool,
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
    /// The configuration string as given.
    pub raw: String,
    /// Problems found while parsing, for the CLI to show.
    pub warnings: Vec<String>,
}

/// Sample mode's wall-clock rate unless asked otherwise: every 10 ms is as fine as blocked
/// time needs, and keeps the sampler's cost independent of the CPU rate.
pub const DEFAULT_WALL_RATE_HZ: u32 = 100;

/// The default mean sampling interval of `alloc=sampled`, in bytes.
pub const DEFAULT_ALLOC_INTERVAL: u64 = 128 << 10;

impl Default for Config {
    fn default() -> Self {
        Config {
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
            coverage: false,
            cpu_clock: None,
            handler_floor: false,
            cover_include: Vec::new(),
            cover_exclude: Vec::new(),
            count_include: Vec::new(),
            count_exclude: Vec::new(),
            count_layout: CountLayout::Thread,
            raw: String::new(),
            warnings: Vec::new(),
        }
    }
}

impl Config {
    /// Parses a `CLRPROF_CONFIG` value.
    pub fn parse(raw: &str) -> Config {
        let mut c = Config {
            raw: raw.to_string(),
            ..Config::default()
        };
        for item in raw.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            match key.trim() {
                "mode" => match value {
                    "sample" => c.mode = Mode::Sample,
                    "trace" => c.mode = Mode::Trace,
                    "count" => c.mode = Mode::Count,
                    "none" => c.mode = Mode::None,
                    other => c
                        .warnings
                        .push(format!("unknown mode `{other}`, sampling instead")),
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
                            c.warnings
                                .push(format!("unknown event category `{name}`, ignored"));
                        }
                    }
                }
                "rate" => match value.parse::<u32>() {
                    Ok(hz) if (1..=20_000).contains(&hz) => c.rate_hz = hz,
                    _ => c.warnings.push(format!(
                        "bad sampling rate `{value}`, using {} Hz",
                        c.rate_hz
                    )),
                },
                "wall_rate" => match value.parse::<u32>() {
                    Ok(hz) if (1..=20_000).contains(&hz) => c.wall_rate_hz = Some(hz),
                    _ => c
                        .warnings
                        .push(format!("bad wall-clock sampling rate `{value}`, ignored")),
                },
                "inline" => c.inline = value != "0",
                "max_nodes" => match value.parse::<u64>() {
                    Ok(n) if n > 0 => c.max_nodes = n,
                    _ => c.warnings.push(format!("bad max_nodes `{value}`")),
                },
                "buffer_kb" => match value.parse::<usize>() {
                    Ok(kb) if (64..=1 << 20).contains(&kb) => c.buffer_bytes = kb << 10,
                    _ => c.warnings.push(format!("bad buffer_kb `{value}`")),
                },
                "alloc" => match value {
                    "off" => c.alloc = AllocMode::Off,
                    "sampled" => c.alloc = AllocMode::Sampled,
                    "all" => c.alloc = AllocMode::All,
                    "ticks" => c.alloc = AllocMode::Ticks,
                    other => c
                        .warnings
                        .push(format!("unknown allocation mode `{other}`, ignored")),
                },
                "alloc_interval" => match value.parse::<u64>() {
                    Ok(n) if (1..=1 << 40).contains(&n) => c.alloc_interval = n,
                    _ => c.warnings.push(format!(
                        "bad alloc_interval `{value}`, using {} bytes",
                        c.alloc_interval
                    )),
                },
                "heap_snapshot" => match value {
                    "off" => c.heap_snapshots = HeapSnapshots::Off,
                    "at-exit" => c.heap_snapshots = HeapSnapshots::AtExit,
                    "every-gc" => c.heap_snapshots = HeapSnapshots::EveryGc(1),
                    "on-signal" => c.heap_snapshots = HeapSnapshots::OnSignal,
                    n => match n.parse::<u32>() {
                        Ok(n) if n > 0 => c.heap_snapshots = HeapSnapshots::EveryGc(n),
                        _ => c
                            .warnings
                            .push(format!("bad heap_snapshot `{value}`, no snapshots")),
                    },
                },
                "coverage" => c.coverage = value != "0",
                "contention" => c.contention = value != "0",
                "cpu_clock" => match value {
                    "perf" => c.cpu_clock = Some(CpuClockChoice::Perf),
                    "timer" => c.cpu_clock = Some(CpuClockChoice::Timer),
                    _ => c.warnings.push(format!(
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
                    _ => c.warnings.push(format!(
                        "unknown count layout `{value}` (thread or shared), ignored"
                    )),
                },
                other => c
                    .warnings
                    .push(format!("unknown setting `{other}`, ignored")),
            }
        }
        c
    }

    /// True if the category was asked for.
    pub fn wants(&self, category: EventCategory) -> bool {
        self.events.contains(&category)
    }
}

impl Config {
    /// Sample mode's wall-clock samples per second and thread.
    pub fn wall_rate(&self) -> u32 {
        self.wall_rate_hz
            .unwrap_or(self.rate_hz.min(DEFAULT_WALL_RATE_HZ))
    }
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

    #[test]
    fn parses_coverage_settings() {
        let c = Config::parse("mode=none;coverage=1;cover_include=App, Lib;cover_exclude=Tests");
        assert!(c.coverage);
        assert_eq!(c.cover_include, ["App", "Lib"]);
        assert_eq!(c.cover_exclude, ["Tests"]);
        assert!(c.warnings.is_empty());
        assert!(!Config::parse("").coverage);
    }

    #[test]
    fn parses_count_settings() {
        let c = Config::parse(
            "mode=count;count_include=App,System.Private.CoreLib;count_exclude=Tests",
        );
        assert_eq!(c.mode, Mode::Count);
        assert!(c.mode.samples() && Mode::Sample.samples() && !Mode::Trace.samples());
        assert_eq!(c.count_include, ["App", "System.Private.CoreLib"]);
        assert_eq!(c.count_exclude, ["Tests"]);
        assert_eq!(c.count_layout, CountLayout::Thread);
        assert!(c.warnings.is_empty());
        let c = Config::parse("mode=count;count_layout=shared");
        assert_eq!(c.count_layout, CountLayout::Shared);
        assert_eq!(Config::parse("count_layout=x").warnings.len(), 1);
    }

    #[test]
    fn parses_settings() {
        let c = Config::parse("mode=trace;events=jit,gc;rate=250;inline=0;max_nodes=10");
        assert_eq!(c.mode, Mode::Trace);
        assert_eq!(c.events, vec![EventCategory::Jit, EventCategory::Gc]);
        assert_eq!(c.rate_hz, 250);
        assert!(!c.inline);
        assert_eq!(c.max_nodes, 10);
        assert_eq!(c.alloc, AllocMode::Off);
        assert!(c.warnings.is_empty());
        let c = Config::parse("alloc=sampled;alloc_interval=4096");
        assert_eq!((c.alloc, c.alloc_interval), (AllocMode::Sampled, 4096));
        assert_eq!(Config::parse("alloc=all").alloc, AllocMode::All);
        assert_eq!(Config::parse("alloc=ticks").alloc, AllocMode::Ticks);
        let snapshots = |v: &str| Config::parse(&format!("heap_snapshot={v}")).heap_snapshots;
        assert_eq!(snapshots("at-exit"), HeapSnapshots::AtExit);
        assert_eq!(snapshots("every-gc"), HeapSnapshots::EveryGc(1));
        assert_eq!(snapshots("3"), HeapSnapshots::EveryGc(3));
        assert_eq!(snapshots("on-signal"), HeapSnapshots::OnSignal);
        assert_eq!(snapshots("0"), HeapSnapshots::Off);
        assert_eq!(
            Config::parse("alloc=some;alloc_interval=0").warnings.len(),
            2
        );
    }

    #[test]
    fn all_events_and_defaults() {
        let c = Config::parse("events=all");
        assert_eq!(c.mode, Mode::Sample);
        assert_eq!(c.events.len(), EventCategory::all().len());
        assert!(c.wants(EventCategory::Exception));
    }

    #[test]
    fn bad_values_warn_and_keep_defaults() {
        let c = Config::parse("mode=fast;rate=0;events=jit,nope;color=blue");
        assert_eq!(c.mode, Mode::Sample);
        assert_eq!(c.rate_hz, 1000);
        assert_eq!(c.events, vec![EventCategory::Jit]);
        assert_eq!(c.warnings.len(), 4, "{:?}", c.warnings);
    }
}
