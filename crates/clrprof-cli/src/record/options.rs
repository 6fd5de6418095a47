//! What to record, independent of the command-line syntax: the options, the filter of the
//! tree's processes, and the event categories.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clrprof_trace::EventCategory;
use clrprof_trace::config::{
    AgentConfig, AllocMode, CpuClockChoice, HeapSnapshots, Mode, NativeNames,
};
use clrprof_trace::protocol;

/// What to record, independent of the command-line syntax.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The CPU profiling mode.
    pub mode: Mode,
    /// Event categories.
    pub events: EventChoice,
    /// Sampling rate.
    pub rate: u32,
    /// Sample mode's wall-clock rate (`None`: the agent's default).
    pub wall_rate: Option<u32>,
    /// Sample mode's per-thread CPU clock (`None`: the agent's choice).
    pub cpu_clock: Option<CpuClockChoice>,
    /// Keep JIT inlining.
    pub inline: bool,
    /// Call tree node budget.
    pub max_nodes: u64,
    /// Allocations with stacks (`None`: none). The runtime's allocation ticks are read by the
    /// agent through an in-process EventPipe session where the runtime offers one, else by the
    /// CLI over the diagnostics socket (see `alloc_ticks.rs`).
    pub alloc: Option<AllocMode>,
    /// Mean sampling interval of `--alloc sampled`, in bytes (`None`: the agent's default).
    pub alloc_interval: Option<u64>,
    /// Lock contention from the runtime's contention events.
    pub contention: bool,
    /// Heap snapshots (`None`: none).
    pub heap_snapshot: Option<HeapSnapshots>,
    /// The size of each of the agent's two record buffers, in KiB (`None`: the agent's
    /// default).
    pub buffer_kib: Option<u32>,
    /// Trace file.
    pub output: PathBuf,
    /// The agent library.
    pub agent: PathBuf,
    /// Program and arguments.
    pub command: Vec<String>,
    /// The agent's settings that the fields above do not choose (coverage, count mode's
    /// assemblies).
    pub base: AgentConfig,
    /// Print the closing summary line.
    pub summary: bool,
    /// Which processes of the tree to record.
    pub processes: ProcessFilter,
    /// More variables for the program (export mode's, for a trace beside the export).
    pub env: Vec<(&'static str, String)>,
}

/// Which .NET processes of the recorded tree `record` records: each one's agent connects and
/// says which process it is; the others run without the profiler.
#[derive(Debug, Clone, Default)]
pub struct ProcessFilter {
    /// Only the process `record` started (`--no-children`).
    pub no_children: bool,
    /// Only these process ids (`--pid-filter`; with `names`, either matches).
    pub pids: Vec<u32>,
    /// Only the processes whose command line contains one of these (`--name-filter`).
    pub names: Vec<String>,
}

impl ProcessFilter {
    /// Whether to record process `hello`, `root` being the pid of the process `record`
    /// started.
    pub fn records(&self, hello: &protocol::Hello, root: u32) -> bool {
        if self.no_children && hello.pid != root {
            return false;
        }
        if self.pids.is_empty() && self.names.is_empty() {
            return true;
        }
        self.pids.contains(&hello.pid)
            || self
                .names
                .iter()
                .any(|n| hello.command_line.contains(n.as_str()))
    }
}

impl RecordOptions {
    /// Records `command` in `mode` with `agent` into `output`: no events, 1000 Hz, inlining
    /// kept, a one-node call tree budget, no allocations or heap snapshots, no extra agent
    /// settings, and the closing summary line. Callers override what differs.
    pub(crate) fn new(mode: Mode, output: PathBuf, agent: PathBuf, command: Vec<String>) -> Self {
        Self {
            mode,
            events: EventChoice::default(),
            rate: 1000,
            wall_rate: None,
            cpu_clock: None,
            inline: true,
            max_nodes: 1,
            alloc: None,
            alloc_interval: None,
            contention: false,
            heap_snapshot: None,
            buffer_kib: None,
            output,
            agent,
            command,
            base: AgentConfig::default(),
            summary: true,
            processes: ProcessFilter::default(),
            env: Vec::new(),
        }
    }

    /// Whether allocations come from the runtime's allocation ticks rather than from
    /// `ObjectAllocated`.
    pub(crate) fn alloc_ticks(&self) -> bool {
        self.alloc == Some(AllocMode::Ticks)
    }

    /// What the agent is asked to do: `base` with every choice above, `--events all` being
    /// every cheap category ([`is_cheap`]).
    pub(crate) fn agent_config(&self) -> AgentConfig {
        let mut c = self.base.clone();
        c.mode = self.mode;
        c.rate_hz = self.rate;
        c.inline = self.inline;
        c.max_nodes = self.max_nodes;
        c.wall_rate_hz = self.wall_rate.or(c.wall_rate_hz);
        if let Some(clock) = self.cpu_clock {
            c.cpu_clock = Some(clock);
        }
        for category in self.events.categories(is_cheap) {
            if !c.events.contains(&category) {
                c.events.push(category);
            }
        }
        if let Some(alloc) = self.alloc {
            c.alloc = alloc;
        }
        if let Some(bytes) = self.alloc_interval {
            c.alloc_interval = bytes;
        }
        if self.contention {
            c.contention = true;
        }
        if let Some(h) = self.heap_snapshot {
            c.heap_snapshots = h;
        }
        if let Some(kib) = self.buffer_kib {
            c.buffer_bytes = (kib as usize) << 10;
        }
        if !c.also_export {
            // Native functions are named here, from their modules' files, as their frames
            // arrive (see `record::native_names`): out of the program's process. Profiles the
            // agent exports itself need the names in them.
            c.native_names = NativeNames::Reader;
        }
        c
    }
}

/// The runtime event categories asked for (`--events`): those named, and whether `all` was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventChoice {
    /// The categories named, in the order given, each once.
    pub named: Vec<EventCategory>,
    /// Whether `all` was named.
    pub all: bool,
}

impl EventChoice {
    /// Reads `--events`' names: categories, `all`, and `none` (`record` records `gc` unless
    /// told). An unknown name is an error that lists the known ones.
    pub(crate) fn parse(names: &[String]) -> Result<EventChoice> {
        let mut choice = EventChoice::default();
        for name in names {
            if name == "none" {
                continue;
            } else if name == "all" {
                choice.all = true;
            } else if let Some(category) = EventCategory::parse(name) {
                if !choice.named.contains(&category) {
                    choice.named.push(category);
                }
            } else {
                let known: Vec<&str> = EventCategory::all().iter().map(|c| c.name()).collect();
                bail!(
                    "unknown event category `{name}`; choose from {}, all, or none",
                    known.join(", ")
                );
            }
        }
        Ok(choice)
    }

    /// The categories to record: those named; with `all`, in the format's order, also every
    /// category `all_means` keeps.
    pub(crate) fn categories(
        &self,
        all_means: impl Fn(EventCategory) -> bool,
    ) -> Vec<EventCategory> {
        if !self.all {
            return self.named.clone();
        }
        EventCategory::all()
            .iter()
            .copied()
            .filter(|c| all_means(*c) || self.named.contains(c))
            .collect()
    }
}

/// Whether `--events all` means `category`: every category that is cheap. Heap references
/// (every reference of every object at each collection) are recorded only when asked for by
/// name.
pub(crate) fn is_cheap(category: EventCategory) -> bool {
    category != EventCategory::HeapRefs
}

/// Warnings for choices that make a very large trace or a much slower program, said before
/// the program starts.
pub(crate) fn costly_choices(opts: &RecordOptions) -> Vec<String> {
    let mut out = Vec::new();
    if opts.events.named.contains(&EventCategory::HeapRefs) {
        out.push(
            "`heap-refs` events record every reference of every object at each garbage \
             collection: expect a very large trace (hundreds of MB for a small program) and a \
             much slower program; `--heap-snapshot at-exit` gives the object graph once"
                .to_string(),
        );
    }
    if opts.alloc == Some(AllocMode::All) {
        out.push(
            "`--alloc all` records every allocation with its stack: allocation-heavy code runs \
             15 to 80 times slower (see BENCHMARKS.md) and the trace grows with every object; \
             `--alloc` (ticks, the default) or `--alloc sampled` estimate at a fraction of that"
                .to_string(),
        );
    }
    if opts.heap_snapshot == Some(HeapSnapshots::EveryGc(1)) {
        out.push(
            "`--heap-snapshot every-gc` walks and writes the whole heap at every collection, \
             gen0 ones included: expect a very large trace and long pauses; a number N takes \
             every N-th collection, `on-signal` costs nothing until a snapshot is asked for"
                .to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_process_filter_picks_by_root_pid_and_command_line() {
        let hello = |pid, cmd: &str| protocol::Hello {
            pid,
            parent_pid: 1,
            command_line: cmd.into(),
        };
        let all = ProcessFilter::default();
        assert!(all.records(&hello(7, "dotnet a.dll"), 5));
        let root_only = ProcessFilter {
            no_children: true,
            ..ProcessFilter::default()
        };
        assert!(root_only.records(&hello(5, "dotnet a.dll"), 5));
        assert!(!root_only.records(&hello(7, "dotnet a.dll"), 5));
        let some = ProcessFilter {
            no_children: false,
            pids: vec![9],
            names: vec!["testhost".into()],
        };
        assert!(some.records(&hello(9, "dotnet sdk.dll"), 5));
        assert!(some.records(&hello(8, "dotnet testhost.dll --port 1"), 5));
        assert!(!some.records(&hello(5, "dotnet sdk.dll"), 5));
    }

    #[test]
    fn all_is_every_cheap_category_and_heap_refs_only_by_name() {
        let all = EventChoice::parse(&names(&["all"])).unwrap();
        let config = |events: &EventChoice| {
            RecordOptions {
                events: events.clone(),
                ..RecordOptions::new(Mode::None, "t".into(), "a".into(), Vec::new())
            }
            .agent_config()
            .events
        };
        let every = config(&all);
        assert_eq!(every.len(), EventCategory::all().len() - 1);
        assert!(!every.contains(&EventCategory::HeapRefs));
        assert!(every.contains(&EventCategory::Transition));
        let with = EventChoice::parse(&names(&["heap-refs", "all"])).unwrap();
        assert_eq!(config(&with), EventCategory::all());
        let some = EventChoice::parse(&names(&["gc", "jit", "gc"])).unwrap();
        assert_eq!(config(&some), [EventCategory::Gc, EventCategory::Jit]);
        let err = EventChoice::parse(&names(&["gc", "nope"])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown event category `nope`; choose from runtime, "),
            "{err}"
        );
        let opts = RecordOptions {
            events: with,
            ..RecordOptions::new(Mode::None, "t".into(), "a".into(), Vec::new())
        };
        assert_eq!(costly_choices(&opts).len(), 1);
        assert!(costly_choices(&opts)[0].starts_with("`heap-refs` events"));
    }

    #[test]
    fn the_agent_is_asked_for_the_typed_choices() {
        let opts = RecordOptions {
            cpu_clock: Some(CpuClockChoice::Timer),
            alloc: Some(AllocMode::All),
            heap_snapshot: Some(HeapSnapshots::EveryGc(1)),
            contention: true,
            ..RecordOptions::new(Mode::Count, "t".into(), "a".into(), Vec::new())
        };
        let c = opts.agent_config();
        assert_eq!(c.mode, Mode::Count);
        assert_eq!(c.cpu_clock, Some(CpuClockChoice::Timer));
        assert_eq!(c.alloc, AllocMode::All);
        assert_eq!(c.heap_snapshots, HeapSnapshots::EveryGc(1));
        assert!(c.contention);
        // Native functions are named by the CLI, unless the agent exports profiles too.
        assert_eq!(c.native_names, NativeNames::Reader);
        assert_eq!(
            c.encode(),
            "version=1;mode=count;rate=1000;cpu_clock=timer;max_nodes=1;alloc=all;\
             heap_snapshot=every-gc;contention=1;native_names=reader"
        );
        let exporting = RecordOptions {
            base: AgentConfig {
                also_export: true,
                ..AgentConfig::default()
            },
            ..opts.clone()
        };
        assert_eq!(exporting.agent_config().native_names, NativeNames::Agent);
        let warnings = costly_choices(&opts);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("`--alloc all`"));
        assert!(warnings[1].starts_with("`--heap-snapshot every-gc`"));
        // Every N-th collection with N = 1 is every collection, however it was spelled.
        assert_eq!(
            HeapSnapshots::parse("1").map(HeapSnapshots::spelling),
            Some("every-gc".into())
        );
    }
}
