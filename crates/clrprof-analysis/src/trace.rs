//! Reading a trace file into a [`LoadedTrace`]: names, events summary and the CPU profile.
//!
//! One pass over the records: definitions go into [`Names`], events are aggregated on the fly
//! (so traces with millions of events need no memory per event), samples and call tree nodes
//! are kept (they are small and fixed-size). Ids are resolved only at the end, so definitions
//! may come before or after the records that use them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use clrprof_trace::{
    CallTreeNode, FrameKind as TraceFrameKind, Header, Message, ProcessDef, ProcessExit, ReadError,
    Reader, Record, RecordKind, RecordingEnd, Sample as TraceSample, SamplerInfo, SessionEnd,
    SessionStart, StackCut, StackDef, ThreadDef, ThreadState,
};

use crate::builder::ProfileBuilder;
use crate::events::{EventSummary, EventSummaryBuilder, file_name};
use crate::integrity::Integrity;
use crate::memory::{HeapKeep, MemoryRecords};
use crate::model::{
    CallNodeRecord, CallTree, FrameIndex, FrameKind, Mode, Profile, Sample, SampleKind, StackIndex,
};
pub use crate::names::Names;
use crate::runtime::{RuntimeBuilder, RuntimeViews};
use crate::sampling::{EndedEarly, SamplingInfo, ThreadRate};
use crate::stack_frames::ModelStacks;

/// Why a trace could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a readable trace.
    #[error("{path}: {source}")]
    Read {
        /// The path given.
        path: String,
        /// What the reader found.
        source: ReadError,
    },
}

/// A trace, read and summarized.
#[derive(Debug)]
pub struct LoadedTrace {
    /// The file header.
    pub header: Header,
    /// What the agent said when it started.
    pub session: Option<SessionStart>,
    /// What the agent said when it stopped (missing if the program crashed).
    pub session_end: Option<SessionEnd>,
    /// What the CLI said when the recording ended (for a process of a process tree: when
    /// that process ended).
    pub recording_end: Option<RecordingEnd>,
    /// The status the process passed to `exit`, as its agent saw it (format 1.5).
    pub process_exit: Option<ProcessExit>,
    /// The last value of each agent counter.
    pub counters: BTreeMap<String, u64>,
    /// Diagnostics from the agent.
    pub messages: Vec<Message>,
    /// Every definition.
    pub names: Names,
    /// The events, summarized.
    pub events: EventSummary,
    /// Exceptions, JIT, loads, threads, native calls, suspensions, and their timeline.
    pub runtime: RuntimeViews,
    /// Records read.
    pub records: u64,
    /// Records of kinds this version does not know (from a newer minor version).
    pub unknown_records: u64,
    /// Allocations, collections and suspensions, for the memory reports.
    pub memory: MemoryRecords,
    /// Basic-block hit counts of the methods instrumented for coverage.
    pub coverage: Vec<clrprof_trace::CoverageMethod>,
    /// Contended lock acquisitions (`record --contention`), in the order recorded.
    pub contention: Vec<clrprof_trace::Contention>,
    /// How sample mode sampled (format 1.2).
    pub sampler: Option<SamplerInfo>,
    /// Count mode's counted methods and counts (format 1.4).
    pub counts: crate::counts::CountRecords,
    /// What symbol files named, when [`LoadedTrace::name_native_frames`] was asked to.
    pub native_naming: Option<crate::native::NativeNaming>,
    /// What reading found cut, damaged or unreadable, and left out.
    pub integrity: Integrity,
    /// How stacks of async continuations are shown in every profile built from this trace
    /// (logical unless asked otherwise).
    pub stack_view: crate::stack_frames::StackView,
    /// Whether profiles built from this trace give managed frames their source lines, and
    /// where source files are (`None`: no lines, the default).
    pub source_lines: Option<crate::lines::SourceRoots>,
    pub(crate) stacks: HashMap<u32, StackDef>,
    /// The stacks of work the runtime did only for the profiler (see [`crate::induced`]):
    /// the profiler's cost, left out of the program's figures.
    pub(crate) induced: HashSet<u32>,
    pub(crate) samples: Vec<TraceSample>,
    /// Samples summed per thread, stack and state ([`SampleDetail::Summed`]).
    summed: HashMap<(u32, u32, u8), SummedSamples>,
    /// Each thread's CPU samples by the clock that took them (format 1.8).
    clocks: HashMap<u32, crate::sampling::ClockTally>,
    last_sample_ts: u64,
    call_tree: Vec<CallTreeNode>,
}

/// How the loader keeps a trace's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SampleDetail {
    /// Every sample with its time: what timelines need (Chrome, speedscope's time order).
    /// Memory grows with the number of samples.
    #[default]
    Each,
    /// The samples of each thread summed per stack and state: what every aggregate view needs
    /// (tables, call trees, flame graphs, pprof). Memory grows with the number of distinct
    /// stacks, not with the number of samples, so that any trace loads in bounded memory.
    Summed,
}

/// Samples of one thread with one stack and state, summed.
#[derive(Debug, Clone, Copy)]
struct SummedSamples {
    count: u64,
    cpu_ns: u64,
    sys_ns: u64,
    mode_known_cpu_ns: u64,
    wall_ns: u64,
    first_ts: u64,
    last_ts: u64,
}

/// The CPU of a sample that tells whether the thread was in the kernel: a CPU sample of a perf
/// event that counts kernel time (format 1.8).
fn mode_known_cpu_ns(s: &TraceSample) -> u64 {
    if s.state == ThreadState::Cpu && s.clock == clrprof_trace::SampleClock::Perf {
        s.cpu_ns
    } else {
        0
    }
}

/// Loads the trace at `path`.
pub fn load(path: &Path) -> Result<LoadedTrace, LoadError> {
    load_with(path, HeapKeep::Last)
}

/// Loads the trace at `path`, keeping the objects of the heap snapshots `heap` names (the
/// others are counted only, so that a trace with many snapshots loads in bounded memory).
pub fn load_with(path: &Path, heap: HeapKeep) -> Result<LoadedTrace, LoadError> {
    load_with_progress(path, heap, SampleDetail::Each, &mut |_, _| {})
}

/// Loads the trace at `path` as [`load_with`] does, keeping its samples as `detail` says and
/// telling `progress` the bytes read so far and the file's size every few thousand records.
pub fn load_with_progress(
    path: &Path,
    heap: HeapKeep,
    detail: SampleDetail,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<LoadedTrace, LoadError> {
    read_file(path, progress, |input, done| {
        read_progress(input, heap, detail, done)
    })
}

/// Opens the trace at `path` and reads it with `read`, which is told the bytes read so far
/// (passed on to `progress` with the file's size); errors name the file.
fn read_file<T>(
    path: &Path,
    progress: &mut dyn FnMut(u64, u64),
    read: impl FnOnce(std::io::BufReader<std::fs::File>, &mut dyn FnMut(u64)) -> Result<T, ReadError>,
) -> Result<T, LoadError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| LoadError::Open {
        path: shown.clone(),
        source,
    })?;
    let size = file.metadata().map_or(0, |m| m.len());
    read(
        std::io::BufReader::with_capacity(1 << 20, file),
        &mut |done| progress(done, size),
    )
    .map_err(|source| LoadError::Read {
        path: shown,
        source,
    })
}

/// Reads a trace from any byte source.
pub fn read(input: impl Read) -> Result<LoadedTrace, ReadError> {
    read_with(input, HeapKeep::Last)
}

/// Reads a trace from any byte source, keeping the heap snapshots `heap` names.
///
/// A trace that is cut short or damaged is read as far as it can be trusted: what was left
/// out is in [`LoadedTrace::integrity`]. Only a trace that cannot be read at all (not a trace,
/// a newer major version, an input that fails) is an error.
pub fn read_with(input: impl Read, heap: HeapKeep) -> Result<LoadedTrace, ReadError> {
    read_progress(input, heap, SampleDetail::Each, &mut |_| {})
}

/// Reads a trace from any byte source, keeping its samples as `detail` says.
pub fn read_detail(
    input: impl Read,
    heap: HeapKeep,
    detail: SampleDetail,
) -> Result<LoadedTrace, ReadError> {
    read_progress(input, heap, detail, &mut |_| {})
}

/// One process of a trace: a trace of `clrprof record` (format 3.x) holds one per process of
/// the recorded process tree; older traces hold one, without a [`ProcessDef`].
#[derive(Debug)]
pub struct ProcessTrace {
    /// The process (pid, parent, command line), if the trace says.
    pub process: Option<ProcessDef>,
    /// What was recorded in it.
    pub trace: LoadedTrace,
}

impl ProcessTrace {
    /// The process's id: its `Process` record's, else its agent's `SessionStart`'s (0 if
    /// neither is there).
    pub fn pid(&self) -> u32 {
        self.process
            .as_ref()
            .map(|p| p.pid)
            .or(self.trace.session.as_ref().map(|s| s.pid))
            .unwrap_or(0)
    }

    /// Its command line, as the `Process` record or the agent's `SessionStart` says.
    pub fn command_line(&self) -> &str {
        self.process
            .as_ref()
            .map(|p| p.command_line.as_str())
            .or(self.trace.session.as_ref().map(|s| s.command_line.as_str()))
            .unwrap_or("")
    }

    /// Whether the process filter left it out (it ran without the profiler).
    pub fn left_out(&self) -> bool {
        self.process.as_ref().is_some_and(|p| p.left_out != 0)
    }

    /// How it ended, in words: `exit code 0`, `killed by SIGSEGV`, `ended without an exit
    /// status (crashed or killed)`, `still running when the recording ended`.
    pub fn ending(&self) -> String {
        process_ending(&self.trace)
    }
}

/// How the process of `t` ended, in words.
pub fn process_ending(t: &LoadedTrace) -> String {
    match (&t.recording_end, &t.process_exit) {
        (Some(r), _) if r.signal != 0 => crate::ending::program_end(-1, r.signal),
        (Some(r), _) if r.exit_code >= 0 => format!("exit code {}", r.exit_code),
        (_, Some(e)) => format!("exit code {}", e.exit_code),
        (Some(_), None) if t.session_end.is_some() => {
            "shut the runtime down, then ended without an exit status (killed, or `_exit`)"
                .to_string()
        }
        (Some(_), None) => "ended without an exit status (crashed or killed)".to_string(),
        (None, _) => "still running when the recording ended".to_string(),
    }
}

/// Reads every process of a trace from any byte source (see [`ProcessTrace`]), keeping the
/// heap snapshots `heap` names and the samples as `detail` says. The processes come in the
/// order of their numbers; a trace without sections is one process.
///
/// What the reader found damaged or cut is the file's: each process's
/// [`LoadedTrace::integrity`] holds all of it.
pub fn read_processes(
    input: impl Read,
    heap: HeapKeep,
    detail: SampleDetail,
) -> Result<Vec<ProcessTrace>, ReadError> {
    read_all(input, heap, detail, &mut |_| {})
}

/// Loads every process of the trace at `path` as [`read_processes`] does, telling `progress`
/// the bytes read so far and the file's size every few thousand records.
pub fn load_processes(
    path: &Path,
    heap: HeapKeep,
    detail: SampleDetail,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<ProcessTrace>, LoadError> {
    read_file(path, progress, |input, done| {
        read_all(input, heap, detail, done)
    })
}

fn read_progress(
    input: impl Read,
    heap: HeapKeep,
    detail: SampleDetail,
    progress: &mut dyn FnMut(u64),
) -> Result<LoadedTrace, ReadError> {
    let all = read_all(input, heap.clone(), detail, progress)?;
    // A caller that wants one trace gets the first process (the one `record` started);
    // `report` reads all of them with `read_processes`.
    Ok(match all.into_iter().next() {
        Some(first) => first.trace,
        None => Loader::new(Header::FILE, heap, detail).finish(Integrity::new(false)),
    })
}

fn read_all(
    input: impl Read,
    heap: HeapKeep,
    detail: SampleDetail,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<ProcessTrace>, ReadError> {
    let mut reader = Reader::new(input)?;
    if heap == HeapKeep::None {
        reader.skip_payloads(&[RecordKind::HEAP_OBJECT, RecordKind::HEAP_ROOT]);
    }
    let header = reader.header();
    let mut integrity = Integrity::new(header.blocked());
    // Process number -> its loader; a trace without sections is process 1.
    let mut loaders: BTreeMap<u32, Loader> = BTreeMap::new();
    let mut current = 1u32;
    let mut records = 0u64;
    while let Some(record) = reader.next() {
        let record = match record {
            Ok(record) => record,
            Err(e) => {
                integrity.add(e)?;
                continue;
            }
        };
        records += 1;
        if records.is_multiple_of(4096) {
            progress(reader.bytes_read());
        }
        integrity.saw_ts(record.ts());
        if let Record::Section(s) = record {
            current = s.process;
            continue;
        }
        loaders
            .entry(current)
            .or_insert_with(|| Loader::new(header, heap.clone(), detail))
            .add(record);
    }
    integrity.finish(reader.block_stats());
    progress(reader.bytes_read());
    if loaders.is_empty() {
        loaders.insert(1, Loader::new(header, heap, detail));
    }
    Ok(loaders
        .into_values()
        .map(|l| {
            let process = l.process.clone();
            ProcessTrace {
                process,
                trace: l.finish(integrity.clone()),
            }
        })
        .collect())
}

/// Reads the records of one process into a [`LoadedTrace`].
struct Loader {
    t: LoadedTrace,
    events: EventSummaryBuilder,
    runtime: RuntimeBuilder,
    detail: SampleDetail,
    process: Option<ProcessDef>,
}

impl Loader {
    fn new(header: Header, heap: HeapKeep, detail: SampleDetail) -> Loader {
        Loader {
            t: LoadedTrace {
                header,
                session: None,
                session_end: None,
                recording_end: None,
                process_exit: None,
                counters: BTreeMap::new(),
                messages: Vec::new(),
                names: Names::default(),
                events: EventSummary::default(),
                runtime: RuntimeViews::default(),
                records: 0,
                unknown_records: 0,
                memory: MemoryRecords::keeping(heap),
                coverage: Vec::new(),
                contention: Vec::new(),
                sampler: None,
                counts: crate::counts::CountRecords::default(),
                native_naming: None,
                integrity: Integrity::new(header.blocked()),
                stack_view: crate::stack_frames::StackView::default(),
                source_lines: None,
                stacks: HashMap::new(),
                induced: HashSet::new(),
                samples: Vec::new(),
                summed: HashMap::new(),
                clocks: HashMap::new(),
                last_sample_ts: 0,
                call_tree: Vec::new(),
            },
            events: EventSummaryBuilder::default(),
            runtime: RuntimeBuilder::default(),
            detail,
            process: None,
        }
    }

    fn add(&mut self, record: Record) {
        let t = &mut self.t;
        t.records += 1;
        match record {
            Record::SessionStart(s) => t.session = Some(s),
            Record::SessionEnd(s) => t.session_end = Some(s),
            Record::RecordingEnd(r) => t.recording_end = Some(r),
            Record::Counter(c) => {
                t.counters.insert(c.name, c.value);
            }
            Record::Message(m) => t.messages.push(m),
            Record::SamplerInfo(i) => t.sampler = Some(i),
            Record::ThreadOsName(n) => {
                t.names.thread_os_names.insert(n.tid, n.name);
            }
            Record::AppDomainDef(d) => {
                t.names.app_domains.insert(d.id, d.name);
            }
            Record::AssemblyDef(a) => {
                t.names.assemblies.insert(a.id, a);
            }
            Record::ModuleDef(m) => {
                t.names.modules.insert(m.id, m);
            }
            Record::ClassDef(c) => {
                t.names.classes.insert(c.id, c);
            }
            Record::FunctionDef(f) => {
                let next = t.names.defined_order.len();
                t.names.defined_order.entry(f.id).or_insert(next);
                t.names.functions.insert(f.id, f);
            }
            Record::ThreadDef(d) => {
                if !d.name.is_empty() && d.managed_id != 0 {
                    t.names.thread_names.insert(d.managed_id, d.name.clone());
                }
                if d.tid != 0 {
                    let name = if d.name.is_empty() {
                        t.names
                            .threads
                            .get(&d.tid)
                            .map(|old| old.name.clone())
                            .unwrap_or_default()
                    } else {
                        d.name.clone()
                    };
                    t.names.threads.insert(d.tid, ThreadDef { name, ..d });
                }
            }
            Record::NativeFrameDef(n) => t.names.add_native(n),
            Record::NativeModuleDef(m) => {
                t.names.native_modules.insert(m.id, m);
            }
            Record::StackDef(s) => {
                t.stacks.insert(s.id, s);
            }
            Record::Event(e) => {
                t.memory.event(&e);
                self.events.add(&e);
                self.runtime.event(&e);
            }
            Record::ExceptionInfo(i) => self.runtime.exception_info(i),
            Record::NativeTargetDef(n) => {
                t.names.native_targets.insert(n.function, n);
            }
            Record::Allocation(a) => t.memory.allocation(a),
            Record::Contention(c) => {
                self.runtime.contention(&c);
                t.contention.push(c);
            }
            Record::GcGenerations(g) => t.memory.generations(g),
            Record::HeapSnapshot(h) => t.memory.heap_snapshot(&h),
            Record::HeapObject(o) => t.memory.heap_object(&o),
            Record::HeapRoot(r) => t.memory.heap_root(&r),
            Record::HeapSnapshotEnd(e) => t.memory.heap_snapshot_end(&e),
            Record::HeapGenerations(g) => t.memory.heap_generations(&g),
            Record::HeapStatic(r) => t.memory.heap_static(&r),
            Record::AllocatedByClass(a) => t.memory.allocated_by_class(&a),
            Record::Sample(s) => {
                t.last_sample_ts = t.last_sample_ts.max(s.ts);
                if s.state == ThreadState::Cpu {
                    t.clocks.entry(s.tid).or_default().add(s.clock, s.cpu_ns);
                }
                match self.detail {
                    SampleDetail::Each => t.samples.push(s),
                    SampleDetail::Summed => {
                        let e = t.summed.entry((s.tid, s.stack, s.state.to_u8())).or_insert(
                            SummedSamples {
                                count: 0,
                                cpu_ns: 0,
                                sys_ns: 0,
                                mode_known_cpu_ns: 0,
                                wall_ns: 0,
                                first_ts: s.ts,
                                last_ts: s.ts,
                            },
                        );
                        e.count += 1;
                        e.cpu_ns = e.cpu_ns.saturating_add(s.cpu_ns);
                        e.sys_ns = e.sys_ns.saturating_add(s.sys_ns);
                        e.mode_known_cpu_ns =
                            e.mode_known_cpu_ns.saturating_add(mode_known_cpu_ns(&s));
                        e.wall_ns = e.wall_ns.saturating_add(s.wall_ns);
                        e.first_ts = e.first_ts.min(s.ts);
                        e.last_ts = e.last_ts.max(s.ts);
                    }
                }
            }
            Record::CallTreeNode(n) => t.call_tree.push(n),
            Record::CoverageMethod(m) => t.coverage.push(m),
            Record::CountedMethod(m) => t.counts.methods.push(m),
            Record::CallCounts(c) => t.counts.counts.push(c),
            // Passed over on purpose (`HeapKeep::None`), not unknown.
            Record::Unknown { kind, .. }
                if kind == RecordKind::HEAP_OBJECT || kind == RecordKind::HEAP_ROOT => {}
            Record::Unknown { .. } => t.unknown_records += 1,
            // Sections are the file's framing (read_processes); the process is the reader's.
            Record::Section(_) => {}
            Record::ProcessDef(p) => self.process = Some(p),
            Record::ProcessExit(e) => t.process_exit = Some(e),
        }
    }

    fn finish(self, integrity: Integrity) -> LoadedTrace {
        let Loader {
            mut t,
            events,
            runtime,
            ..
        } = self;
        let header = t.header;
        t.integrity = integrity;
        // `record` ends every trace it writes with a RecordingEnd; an attach ends with the
        // agent's detach.
        t.integrity.unfinished = header.blocked()
            && t.recording_end.is_none()
            && t.session_end.as_ref().is_none_or(|e| e.reason != "detach");
        t.integrity.header_only = t.records == 0 && t.integrity.cut.is_none();
        t.names.number_bodies();
        t.induced = crate::induced::induced_stacks(&t.names, &t.stacks);
        t.events = events.finish(&t.names, &t.memory.gcs, &t.counters);
        t.runtime = runtime.finish(&t.names, &t.memory.gcs);
        t.runtime.events_lost = t.events.lost.clone();
        t
    }
}

impl LoadedTrace {
    /// True if the agent reported its session's end (the program did not crash).
    pub fn ended_cleanly(&self) -> bool {
        self.session_end.is_some()
    }

    /// The CPU mode the session was recorded in (`sample`, `trace` or `none`).
    pub fn mode_name(&self) -> &str {
        let config = self
            .session
            .as_ref()
            .map(|s| s.config.as_str())
            .unwrap_or("");
        config
            .split(';')
            .find_map(|kv| kv.trim().strip_prefix("mode="))
            .unwrap_or(if self.call_tree.is_empty() {
                "sample"
            } else {
                "trace"
            })
    }

    /// A counter's last value (0 if never written).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// True if the trace has CPU data (samples or call trees).
    pub fn has_cpu_data(&self) -> bool {
        !self.samples.is_empty() || !self.summed.is_empty() || !self.call_tree.is_empty()
    }

    /// Length of the recording in nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        let from_samples = self.last_sample_ts;
        let from_end = self.session_end.as_ref().map_or(0, |e| e.ts);
        let from_cli = self.recording_end.as_ref().map_or(0, |r| r.duration_ns);
        from_end.max(from_samples).max(from_cli)
    }

    /// Every sample's thread, trace stack, state and CPU, whether kept one by one or summed
    /// (a summed entry once, with its sum), the runtime's work for the profiler left out.
    pub(crate) fn sample_weights(&self) -> impl Iterator<Item = (u32, u32, ThreadState, u64)> + '_ {
        let each = self
            .samples
            .iter()
            .map(|s| (s.tid, s.stack, s.state, s.cpu_ns));
        let summed = self
            .summed
            .iter()
            .map(|(&(tid, stack, state), s)| (tid, stack, ThreadState::from_u8(state), s.cpu_ns));
        each.chain(summed).filter(|&(_, stack, state, _)| {
            !(state == ThreadState::Cpu && self.induced.contains(&stack))
        })
    }

    /// The wall-clock samples kept summed ([`SampleDetail::Summed`]): thread, stack, state
    /// and wall time, CPU samples left out.
    pub(crate) fn summed_wall(&self) -> impl Iterator<Item = (u32, u32, ThreadState, u64)> + '_ {
        self.summed
            .iter()
            .map(|(&(tid, stack, state), s)| (tid, stack, ThreadState::from_u8(state), s.wall_ns))
            .filter(|&(_, _, state, wall_ns)| state != ThreadState::Cpu && wall_ns > 0)
    }

    /// The CPU profile: samples (both modes) and exact call trees (trace mode).
    pub fn profile(&self) -> Profile {
        let mode = match self.mode_name() {
            "trace" => Mode::Trace,
            "count" => Mode::Count,
            _ => Mode::Sample,
        };
        let mut b = ProfileBuilder::new(mode);
        let names = &self.names;
        let mut model = ModelStacks::new(names, &self.stacks, self.stack_view);
        if let Some(roots) = &self.source_lines {
            model = model.with_lines(roots.clone());
        }

        // Names the program gave its threads; the others are named at the end.
        let thread_name = |tid: u32| -> String { names.name_of_tid(tid) };

        // Sample mode since format 1.2 takes CPU and wall-clock samples apart.
        let split = matches!(mode, Mode::Sample | Mode::Count) && self.sampler.is_some();
        // Summed samples in the order they were first seen, as each sample would come.
        let mut summed: Vec<(&(u32, u32, u8), &SummedSamples)> = self.summed.iter().collect();
        summed.sort_unstable_by_key(|(key, s)| (s.first_ts, **key));
        let each = self.samples.iter().map(|s| {
            let one = SummedSamples {
                count: 1,
                cpu_ns: s.cpu_ns,
                sys_ns: s.sys_ns,
                mode_known_cpu_ns: mode_known_cpu_ns(s),
                wall_ns: s.wall_ns,
                first_ts: s.ts,
                last_ts: s.ts,
            };
            ((s.tid, s.stack, s.state.to_u8()), one)
        });
        let all = each.chain(summed.into_iter().map(|(k, s)| (*k, *s)));
        // CPU the runtime spent on work it did only for the profiler: the profiler's.
        let mut induced_cpu_ns = 0u64;
        for ((tid, stack_id, state), s) in all {
            if state == ThreadState::Cpu.to_u8() && self.induced.contains(&stack_id) {
                induced_cpu_ns = induced_cpu_ns.saturating_add(s.cpu_ns);
                continue;
            }
            let stack = model.stack(&mut b, stack_id);
            let thread = b.thread(tid, &thread_name(tid));
            let kind = match ThreadState::from_u8(state) {
                ThreadState::Cpu => SampleKind::Cpu,
                _ if split => SampleKind::Wall,
                _ => SampleKind::Tick,
            };
            b.add_sample(
                thread,
                Sample {
                    time_ns: s.last_ts,
                    stack,
                    cpu_ns: s.cpu_ns,
                    sys_ns: s.sys_ns.min(s.cpu_ns),
                    mode_known_cpu_ns: s.mode_known_cpu_ns,
                    wall_ns: s.wall_ns,
                    kind,
                    count: s.count,
                    ..Sample::default()
                },
            );
        }

        let mut by_thread: BTreeMap<u32, Vec<CallNodeRecord>> = BTreeMap::new();
        for n in &self.call_tree {
            let frame = model.frame(&mut b, TraceFrameKind::Managed, n.function);
            by_thread.entry(n.tid).or_default().push(CallNodeRecord {
                id: u64::from(n.node),
                parent: (n.parent != 0).then_some(u64::from(n.parent)),
                frame,
                calls: n.calls,
                self_samples: n.self_samples,
                self_cpu_ns: n.self_cpu_ns,
                self_wall_ns: n.self_wall_ns,
            });
        }
        for (tid, records) in by_thread {
            let (tree, dropped) = CallTree::from_records(&records);
            let thread = b.thread(tid, &thread_name(tid));
            b.set_call_tree(thread, tree);
            if dropped > 0 {
                b.note(format!(
                    "{dropped} call tree nodes of thread {tid} were inconsistent and dropped"
                ));
            }
        }

        if mode == Mode::Count {
            struct Namer<'n, 't> {
                model: &'n mut ModelStacks<'t>,
                names: &'n Names,
            }
            impl crate::counts::CountNames for Namer<'_, '_> {
                fn function_frame(&mut self, b: &mut ProfileBuilder, function: u64) -> FrameIndex {
                    self.model.frame(b, TraceFrameKind::Managed, function)
                }
                fn module_file(&self, module: u64) -> String {
                    self.names
                        .modules
                        .get(&module)
                        .map(|m| file_name(&m.path))
                        .unwrap_or_default()
                }
            }
            let mut namer = Namer {
                model: &mut model,
                names,
            };
            let (assemblies, dropped) = crate::counts::add_to_profile(
                &self.counts,
                &mut b,
                &mut namer,
                &mut |b: &mut ProfileBuilder, tid: u32| {
                    if tid == 0 {
                        b.thread(0, "[threads the profiler did not see start]")
                    } else {
                        b.thread(tid, &thread_name(tid))
                    }
                },
            );
            let counted: Vec<String> = assemblies
                .iter()
                .map(|(a, n)| format!("{a} ({n} methods)"))
                .collect();
            b.note(if counted.is_empty() {
                "count mode counted no calls: no method of a counted assembly was compiled (--include names the assemblies to count)".to_string()
            } else {
                format!(
                    "calls counted in {}; calls of other assemblies' methods are counted only at the counted methods' call sites",
                    counted.join(", ")
                )
            });
            if dropped > 0 {
                b.note(format!(
                    "{dropped} call count records named no counted method and were dropped"
                ));
            }
        }

        for (counter, what) in [
            (
                "count_methods_failed",
                "methods of counted assemblies could not get call counters (see the warnings): their calls are not counted",
            ),
            (
                "samples_dropped",
                "samples were dropped (the agent's buffer was full or a thread did not answer in time)",
            ),
            (
                "stacks_truncated",
                "stacks were deeper than the agent records and were cut",
            ),
            (
                "call_tree_nodes_dropped",
                "call paths were not recorded because the call tree node budget was spent (raise it with --max-nodes)",
            ),
            (
                "calls_unrecorded",
                "calls were not recorded (node budget or shadow stack limit)",
            ),
        ] {
            let n = self.counter(counter);
            if n > 0 {
                b.note(format!("{n} {what}"));
            }
        }
        if mode == Mode::Trace && !self.events.inlined.is_empty() {
            b.note(format!(
                "{} methods were inlined by the JIT and are counted as part of their callers; record with --no-inline to count every call",
                self.events.inlined.iter().map(|i| &i.callee).collect::<std::collections::BTreeSet<_>>().len()
            ));
        }
        if mode == Mode::Trace
            && let Some(note) = self.unhooked_generated_note()
        {
            b.note(note);
        }
        if !self.ended_cleanly() {
            b.note("the program ended without shutting the profiler down (crash or kill): data after the agent's last flush is missing");
        }

        let mut p = b.build();
        if let Some(s) = &self.session {
            p.pid = s.pid;
            p.start_unix_ns = s.start_unix_ns;
            p.name = s
                .command_line
                .split_whitespace()
                .find(|w| w.ends_with(".dll"))
                .map(file_name)
                .unwrap_or_default();
            if !s.config.is_empty() {
                let rate = clrprof_trace::config::AgentConfig::decode(&s.config)
                    .config
                    .rate_hz;
                p.sample_interval_ns = 1_000_000_000 / u64::from(rate.max(1));
            }
        }
        p.duration_ns = self.duration_ns();
        p.samples_dropped = self.counter("samples_dropped");
        p.ended = self
            .recording_end
            .as_ref()
            .map(|r| crate::ending::program_end(r.exit_code, r.signal));
        let pid = self.session.as_ref().map_or(0, |s| s.pid);
        crate::threads::name_threads(&mut p, |tid| names.thread_os_names.get(&tid).cloned(), pid);
        if let Some(info) = self.sampler.as_ref().filter(|_| mode == Mode::Sample) {
            let mut sampling = summarize_sampling(
                &p,
                (&info.cpu_clock, info.cpu_rate_hz, info.wall_rate_hz),
                |name| self.counter(name),
                &self.clocks,
            );
            sampling.induced_cpu_ns = induced_cpu_ns;
            p.sampling = Some(sampling);
        }
        p
    }

    /// The frames of a stack, innermost first, with their kinds and ids.
    pub(crate) fn stack_path(&self, id: u32) -> Vec<(TraceFrameKind, u64)> {
        crate::stack_frames::stack_path(&self.stacks, id)
    }

    /// A trace frame's name, as the profile's frames name it.
    pub(crate) fn frame_name(&self, frame: (TraceFrameKind, u64)) -> String {
        crate::stack_frames::frame_name(&self.names, frame)
    }
}

impl LoadedTrace {
    /// Trace mode: the methods generated at run time (dynamic methods, IL stubs) that the
    /// agent saw compiled but that are in no call tree. The runtime calls no enter/leave hooks
    /// for them, so their time is their callers' self time: say so, and name them.
    fn unhooked_generated_note(&self) -> Option<String> {
        let in_trees: HashSet<u64> = self.call_tree.iter().map(|n| n.function).collect();
        let mut unhooked: Vec<String> = self
            .names
            .functions
            .keys()
            .filter(|&&id| self.names.is_generated(id) && !in_trees.contains(&id))
            .map(|&id| self.names.function(id))
            .collect();
        if unhooked.is_empty() {
            return None;
        }
        unhooked.sort();
        const SHOWN: usize = 10;
        let more = unhooked.len().saturating_sub(SHOWN);
        let mut list = unhooked[..unhooked.len().min(SHOWN)].join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        Some(format!(
            "{} methods generated at run time ran without enter/leave hooks (the runtime calls none for them): their calls are not counted and their time is in their callers' self time; sample mode names them. They are: {list}",
            unhooked.len()
        ))
    }
}

/// The sampling facts of `profile`, given the trace's `SamplerInfo` fields and a counter
/// reader.
fn summarize_sampling(
    profile: &Profile,
    (cpu_clock, cpu_rate_hz, wall_rate_hz): (&str, u32, u32),
    counter: impl Fn(&str) -> u64,
    clocks: &HashMap<u32, crate::sampling::ClockTally>,
) -> SamplingInfo {
    let mut cpu_samples = 0u64;
    let mut wall_samples = 0u64;
    let mut program_cpu_ns = 0u64;
    let mut rates = Vec::new();
    let mut cut_of: HashMap<StackIndex, Option<usize>> = HashMap::new();
    let mut ended: BTreeMap<usize, u64> = BTreeMap::new();
    let mut samples = 0u64;
    // The CPU of missed samples, and the CPU after a thread's last sample, stand under
    // markers of their own: CPU, but neither a sample taken nor a stack that ended early.
    let markers = [StackCut::Missed, StackCut::Unsampled].map(crate::threads::stack_cut_name);
    let is_missed = |stack: Option<StackIndex>| {
        stack.is_some_and(|s| {
            let frames = profile.stack_frames(s);
            frames.len() == 1 && markers.contains(&profile.frame(frames[0]).name)
        })
    };
    for t in &profile.threads {
        let (mut cpu, mut n) = (0u64, 0u64);
        for s in &t.samples {
            // Every sample record counts, the ones carrying missed CPU too.
            samples += s.count;
            if s.kind == SampleKind::Cpu && is_missed(s.stack) {
                cpu += s.cpu_ns;
                continue;
            }
            match s.kind {
                SampleKind::Cpu => {
                    cpu_samples += s.count;
                    n += s.count;
                    // Saturating: a damaged 1.x trace can hold any value.
                    cpu = cpu.saturating_add(s.cpu_ns);
                }
                SampleKind::Wall => wall_samples += s.count,
                SampleKind::Tick | SampleKind::Alloc => {}
            }
            if let Some(stack) = s.stack {
                let cut = *cut_of.entry(stack).or_insert_with(|| {
                    let root = *profile.stack_frames(stack).first()?;
                    (profile.frame(root).kind == FrameKind::Truncated).then_some(root.index())
                });
                if let Some(frame) = cut {
                    *ended.entry(frame).or_default() += s.count;
                }
            }
        }
        program_cpu_ns = program_cpu_ns.saturating_add(cpu);
        if n > 0 {
            let by_clock = clocks.get(&t.tid).copied().unwrap_or_default();
            rates.push(ThreadRate {
                tid: t.tid,
                name: t.name.clone(),
                cpu_ns: cpu,
                samples: n,
                rate_hz: n as f64 / (cpu as f64 / 1e9).max(1e-9),
                perf_cpu_share: by_clock.perf_cpu_share(),
            });
        }
    }
    rates.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
    rates.truncate(3);
    // Records that carry the CPU of missed samples on a thread's stacks are CPU samples
    // in the trace, not samples taken.
    let cpu_samples = cpu_samples.saturating_sub(counter("missed_carriers"));
    let mut ended_early_by_reason: Vec<EndedEarly> = ended
        .iter()
        .map(|(&frame, &n)| EndedEarly {
            reason: profile.frames[frame].name.clone(),
            samples: n,
        })
        .collect();
    ended_early_by_reason.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.reason.cmp(&b.reason)));
    let all_clocks = clocks
        .values()
        .fold(crate::sampling::ClockTally::default(), |a, b| a.merged(b));
    SamplingInfo {
        cpu_clock: cpu_clock.to_owned(),
        by_clock: all_clocks,
        clock_upgrades: counter("clock_upgrades"),
        clock_downgrades: counter("clock_downgrades"),
        cpu_rate_hz,
        cpu_rate_reached_hz: if program_cpu_ns == 0 {
            0.0
        } else {
            cpu_samples as f64 / (program_cpu_ns as f64 / 1e9)
        },
        busiest_threads: rates,
        wall_rate_hz,
        cpu_samples,
        wall_samples,
        samples_missed: counter("samples_missed"),
        cpu_missed_ns: counter("cpu_missed_ns"),
        cpu_unsampled_ns: counter("cpu_unsampled_ns"),
        missed_carriers: counter("missed_carriers"),
        questions: counter("sampler_questions"),
        program_cpu_ns,
        handler_cpu_ns: counter("handler_cpu_ns"),
        sampler_cpu_ns: counter("sampler_cpu_ns"),
        symbols_cpu_ns: counter("symbols_cpu_ns"),
        agent_cpu_ns: counter("agent_cpu_ns"),
        induced_cpu_ns: 0,
        ended_early: ended.values().sum(),
        samples,
        ended_early_by_reason,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use clrprof_trace::{FunctionDef, NativeFrameDef, NativeModuleDef, SessionStart, Writer};

    use super::*;

    const MODULE: u64 = 0x7f00_0000_3000;
    const OTHER_MODULE: u64 = 0x7f00_0000_3100;

    fn function(id: u64, module: u64, token: u32, type_name: &str, method: &str) -> Record {
        Record::FunctionDef(FunctionDef {
            id,
            module,
            token,
            type_name: type_name.into(),
            method_name: method.into(),
            signature: "(A, B)".into(),
            ..FunctionDef::default()
        })
    }

    fn node(node: u32, parent: u32, function: u64, calls: u64) -> Record {
        Record::CallTreeNode(CallTreeNode {
            tid: 7,
            node,
            parent,
            function,
            calls,
            ..CallTreeNode::default()
        })
    }

    /// A trace-mode recording whose definitions are `defs` and whose thread calls each
    /// function in `calls` from a root `Main`.
    fn trace(defs: Vec<Record>, calls: &[(u64, u64)]) -> LoadedTrace {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.write(&Record::SessionStart(SessionStart {
            config: "mode=trace".into(),
            ..SessionStart::default()
        }))
        .unwrap();
        for d in &defs {
            w.write(d).unwrap();
        }
        w.write(&node(1, 0, 0x100, 1)).unwrap();
        for (i, &(f, n)) in calls.iter().enumerate() {
            w.write(&node(i as u32 + 2, 1, f, n)).unwrap();
        }
        read(w.get_ref().as_slice()).unwrap()
    }

    #[test]
    fn distinct_bodies_with_one_name_stay_apart() {
        // Three shared bodies of one method whose instantiations the agent did not know
        // (same module and token, different FunctionIDs), and the same method in another
        // module (a second load of the assembly), which stays one entry with its namesake.
        let t = trace(
            vec![
                function(0x100, MODULE, 0x0600_0001, "Program", "Main"),
                function(0x230, MODULE, 0x0600_0002, "Two<A, B>", "M"),
                function(0x210, MODULE, 0x0600_0002, "Two<A, B>", "M"),
                function(0x220, MODULE, 0x0600_0002, "Two<A, B>", "M"),
                function(0x300, OTHER_MODULE, 0x0600_0002, "Two<A, B>", "M"),
            ],
            &[(0x210, 3), (0x220, 4), (0x230, 5), (0x300, 6)],
        );
        assert_eq!(t.names.function(0x100), "Program.Main(A, B)");
        assert_eq!(t.names.function(0x210), "Two<A, B>.M(A, B) #1");
        assert_eq!(t.names.function(0x220), "Two<A, B>.M(A, B) #2");
        assert_eq!(t.names.function(0x230), "Two<A, B>.M(A, B) #3");
        assert_eq!(t.names.function(0x300), "Two<A, B>.M(A, B)");
        let p = t.profile();
        let calls_of = |name: &str| -> u64 {
            let tree = p.threads[0].call_tree.as_ref().unwrap();
            tree.nodes
                .iter()
                .filter(|n| p.frame(n.frame).name == name)
                .map(|n| n.calls)
                .sum()
        };
        assert_eq!(calls_of("Two<A, B>.M(A, B) #1"), 3);
        assert_eq!(calls_of("Two<A, B>.M(A, B) #2"), 4);
        assert_eq!(calls_of("Two<A, B>.M(A, B) #3"), 5);
        assert_eq!(calls_of("Two<A, B>.M(A, B)"), 6);
    }

    #[test]
    fn bodies_with_their_own_names_are_not_numbered() {
        let t = trace(
            vec![
                function(0x210, MODULE, 0x0600_0002, "Two<int, __Canon>", "M"),
                function(0x220, MODULE, 0x0600_0002, "Two<__Canon, int>", "M"),
            ],
            &[],
        );
        assert!(
            t.names.body_numbers.is_empty(),
            "{:?}",
            t.names.body_numbers
        );
        assert_eq!(t.names.function(0x210), "Two<int, __Canon>.M(A, B)");
    }

    #[test]
    fn generated_bodies_named_alike_are_numbered_in_the_order_they_came() {
        // Two compiled expressions the runtime names alike; the second was defined first.
        let t = trace(
            vec![
                function(0x410, MODULE, 0, "DynamicClass", "lambda_method"),
                function(0x400, MODULE, 0, "DynamicClass", "lambda_method"),
                function(0x500, MODULE, 0, "DynamicClass", "dyn_1"),
            ],
            &[],
        );
        assert!(t.names.is_generated(0x400) && t.names.is_generated(0x500));
        assert_eq!(
            t.names.function(0x410),
            "DynamicClass.lambda_method(A, B) #1"
        );
        assert_eq!(
            t.names.function(0x400),
            "DynamicClass.lambda_method(A, B) #2"
        );
        assert_eq!(t.names.function(0x500), "DynamicClass.dyn_1(A, B)");
    }

    const CORECLR: &str = "/dotnet/shared/Microsoft.NETCore.App/8.0.4/libcoreclr.so";

    fn frame(id: u64, library: &str, symbol: &str, module: u64, function: u64) -> Record {
        Record::NativeFrameDef(NativeFrameDef {
            id,
            address: 0x7f00_0000_0000 + function,
            library: library.into(),
            symbol: symbol.into(),
            module,
            function,
        })
    }

    /// Native frames of each kind: 1 named, 2 and 3 by their function's start in a stripped
    /// library, 4 a library alone (before format 1.3), 5 nothing known.
    pub(crate) fn native_trace() -> LoadedTrace {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in [
            Record::NativeModuleDef(NativeModuleDef {
                id: 1,
                path: CORECLR.into(),
                build_id: "00c0ffee".into(),
            }),
            frame(1, CORECLR, "coreclr_execute_assembly", 1, 0x1000),
            frame(2, CORECLR, "", 1, 0x1f_2a30),
            frame(3, CORECLR, "", 1, 0x1f_3000),
            frame(4, "/lib/libfoo.so", "", 0, 0),
            frame(5, "", "", 0, 0),
        ] {
            w.write(&r).unwrap();
        }
        read(w.get_ref().as_slice()).unwrap()
    }

    #[test]
    fn later_ids_of_one_native_function_are_that_function() {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in [
            frame(1, CORECLR, "", 1, 0x1f_2a30),
            frame(2, CORECLR, "coreclr_execute_assembly", 1, 0x1000),
            // Defined after the module was read: the same functions as 1 and 2, and a new one.
            frame(7, CORECLR, "", 1, 0x1f_2a30),
            frame(8, CORECLR, "coreclr_execute_assembly", 1, 0x1000),
            frame(9, CORECLR, "", 1, 0x1f_3000),
        ] {
            w.write(&r).unwrap();
        }
        let t = read(w.get_ref().as_slice()).unwrap();
        assert_eq!(t.names.native_id(7), 1);
        assert_eq!(t.names.native_id(8), 2);
        assert_eq!(t.names.native_id(9), 9);
        assert_eq!(t.names.native_frame(7), t.names.native_frame(1));
        assert_eq!(t.names.native_frame(8).0, "coreclr_execute_assembly");
        let mut ids: Vec<u64> = t.names.natives.keys().copied().collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 9], "one frame per function");
    }

    #[test]
    fn native_frames_are_named_by_symbol_then_function_start_then_library() {
        let t = native_trace();
        let name = |id| t.names.native_frame(id);
        assert_eq!(
            name(1),
            ("coreclr_execute_assembly".into(), "libcoreclr.so".into())
        );
        assert_eq!(
            name(2),
            ("libcoreclr.so!+0x1f2a30".into(), "libcoreclr.so".into())
        );
        assert_eq!(name(3).0, "libcoreclr.so!+0x1f3000");
        assert_eq!(name(4), ("[libfoo.so]".into(), "libfoo.so".into()));
        assert_eq!(name(5), ("[native code]".into(), String::new()));
        assert_eq!(t.names.native_modules[&1].build_id, "00c0ffee");
    }
}
