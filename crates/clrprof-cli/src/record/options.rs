//! What to record, independent of the command-line syntax: the options, the filter of the
//! tree's processes, and the event categories.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clrprof_trace::config::{AgentConfig, AllocMode, CpuClockChoice, HeapSnapshots, Mode};
use clrprof_trace::protocol;

/// What to record, independent of the command-line syntax.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// `sample`, `trace` or `none`.
    pub mode: &'static str,
    /// Event categories.
    pub events: Vec<String>,
    /// Sampling rate.
    pub rate: u32,
    /// Sample mode's wall-clock rate (`None`: the agent's default).
    pub wall_rate: Option<u32>,
    /// Sample mode's per-thread CPU clock, `perf` or `timer` (`None`: the agent's choice).
    pub cpu_clock: Option<&'static str>,
    /// Keep JIT inlining.
    pub inline: bool,
    /// Call tree node budget.
    pub max_nodes: u64,
    /// Allocations with stacks: `None`, `Some("sampled")`, `Some("all")` or `Some("ticks")`
    /// (the runtime's allocation ticks: read by the agent through an in-process EventPipe
    /// session where the runtime offers one, else by the CLI over the diagnostics socket; see
    /// `alloc_ticks.rs`).
    pub alloc: Option<&'static str>,
    /// Mean sampling interval of `--alloc sampled`, in bytes (`None`: the agent's default).
    pub alloc_interval: Option<u64>,
    /// Lock contention from the runtime's contention events.
    pub contention: bool,
    /// Heap snapshots: `at-exit`, `every-gc` or N.
    pub heap_snapshot: Option<String>,
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
    pub(crate) fn new(
        mode: &'static str,
        output: PathBuf,
        agent: PathBuf,
        command: Vec<String>,
    ) -> Self {
        Self {
            mode,
            events: Vec::new(),
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
        }
    }

    /// Whether allocations come from the runtime's allocation ticks rather than from
    /// `ObjectAllocated`.
    pub(super) fn alloc_ticks(&self) -> bool {
        self.alloc == Some("ticks")
    }

    /// What the agent is asked to do: `base` with every choice above.
    pub(crate) fn agent_config(&self) -> AgentConfig {
        let mut c = self.base.clone();
        c.mode = Mode::from_name(self.mode).unwrap_or(c.mode);
        c.rate_hz = self.rate;
        c.inline = self.inline;
        c.max_nodes = self.max_nodes;
        c.wall_rate_hz = self.wall_rate.or(c.wall_rate_hz);
        if let Some(clock) = self.cpu_clock {
            c.cpu_clock = [CpuClockChoice::Perf, CpuClockChoice::Timer]
                .into_iter()
                .find(|k| k.name() == clock);
        }
        // `all` is every cheap category (see `expand_events`); the names were validated.
        for category in expand_events(&self.events)
            .iter()
            .filter_map(|e| clrprof_trace::EventCategory::parse(e))
        {
            if !c.events.contains(&category) {
                c.events.push(category);
            }
        }
        if let Some(alloc) = self.alloc.and_then(AllocMode::from_name) {
            c.alloc = alloc;
        }
        if let Some(bytes) = self.alloc_interval {
            c.alloc_interval = bytes;
        }
        if self.contention {
            c.contention = true;
        }
        if let Some(h) = self.heap_snapshot.as_deref().and_then(HeapSnapshots::parse) {
            c.heap_snapshots = h;
        }
        if let Some(kib) = self.buffer_kib {
            c.buffer_bytes = (kib as usize) << 10;
        }
        c
    }
}

/// The categories `--events all` means: every category that is cheap. Heap references (every
/// reference of every object at each collection) are recorded only when asked for by name.
pub(crate) fn all_cheap_categories() -> impl Iterator<Item = clrprof_trace::EventCategory> {
    clrprof_trace::EventCategory::all()
        .iter()
        .copied()
        .filter(|c| *c != clrprof_trace::EventCategory::HeapRefs)
}

/// Replaces `all` by the categories it means ([`all_cheap_categories`]), keeping any other
/// category named (`all,heap-refs`), each once, in the order of the format.
pub(super) fn expand_events(events: &[String]) -> Vec<String> {
    if !events.iter().any(|e| e == "all") {
        return events.to_vec();
    }
    clrprof_trace::EventCategory::all()
        .iter()
        .filter(|c| {
            all_cheap_categories().any(|cheap| cheap == **c) || events.iter().any(|e| e == c.name())
        })
        .map(|c| c.name().to_string())
        .collect()
}

/// Warnings for choices that make a very large trace or a much slower program, said before
/// the program starts.
pub(crate) fn costly_choices(opts: &RecordOptions) -> Vec<String> {
    let mut out = Vec::new();
    if opts.events.iter().any(|e| e == "heap-refs") {
        out.push(
            "`heap-refs` events record every reference of every object at each garbage \
             collection: expect a very large trace (hundreds of MB for a small program) and a \
             much slower program; `--heap-snapshot at-exit` gives the object graph once"
                .to_string(),
        );
    }
    if opts.alloc == Some("all") {
        out.push(
            "`--alloc all` records every allocation with its stack: allocation-heavy code runs \
             15 to 80 times slower (see BENCHMARKS.md) and the trace grows with every object; \
             `--alloc` (ticks, the default) or `--alloc sampled` estimate at a fraction of that"
                .to_string(),
        );
    }
    if opts.heap_snapshot.as_deref() == Some("every-gc") {
        out.push(
            "`--heap-snapshot every-gc` walks and writes the whole heap at every collection, \
             gen0 ones included: expect a very large trace and long pauses; a number N takes \
             every N-th collection, `on-signal` costs nothing until a snapshot is asked for"
                .to_string(),
        );
    }
    out
}

/// The `--events` that records no runtime event (`record` records `gc` unless told).
pub(crate) const NO_EVENTS: &str = "none";

pub(crate) fn validate_events(events: &[String]) -> Result<()> {
    for e in events {
        if e != "all" && e != NO_EVENTS && clrprof_trace::EventCategory::parse(e).is_none() {
            let known: Vec<&str> = clrprof_trace::EventCategory::all()
                .iter()
                .map(|c| c.name())
                .collect();
            bail!(
                "unknown event category `{e}`; choose from {}, all, or none",
                known.join(", ")
            );
        }
    }
    Ok(())
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
        let all = expand_events(&names(&["all"]));
        assert_eq!(all.len(), clrprof_trace::EventCategory::all().len() - 1);
        assert!(!all.iter().any(|e| e == "heap-refs"));
        assert!(all.iter().any(|e| e == "transition"));
        let with = expand_events(&names(&["heap-refs", "all"]));
        assert_eq!(with.len(), clrprof_trace::EventCategory::all().len());
        assert_eq!(expand_events(&names(&["gc"])), names(&["gc"]));
        let opts = RecordOptions {
            events: with,
            ..RecordOptions::new("none", "t".into(), "a".into(), Vec::new())
        };
        assert_eq!(costly_choices(&opts).len(), 1);
        assert!(costly_choices(&opts)[0].starts_with("`heap-refs` events"));
    }
}
