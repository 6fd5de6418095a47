//! Reading a trace file into a [`LoadedTrace`]: names, events summary and the CPU profile.
//!
//! One pass over the records: definitions go into [`Names`], events are aggregated on the fly
//! (so traces with millions of events need no memory per event), samples and call tree nodes
//! are kept (they are small and fixed-size). Ids are resolved only at the end, so definitions
//! may come before or after the records that use them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use clrprof_trace::config::{AgentConfig, Mode};
use clrprof_trace::{
    CallTreeNode, FrameKind as TraceFrameKind, Header, Message, ProcessDef, ProcessExit, ReadError,
    Reader, Record, RecordKind, RecordingEnd, Sample as TraceSample, SamplerInfo, SessionEnd,
    SessionStart, StackDef, ThreadDef, ThreadState,
};

use crate::events::{EventSummary, EventSummaryBuilder};
use crate::integrity::Integrity;
use crate::memory::records::{HeapKeep, MemoryRecords};
pub use crate::names::Names;
use crate::runtime::{RuntimeBuilder, RuntimeViews};

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
    /// What the agent was asked to record: the session's configuration, decoded once
    /// (`None` without a `SessionStart`, or with an empty configuration).
    pub config: Option<AgentConfig>,
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
    /// What symbol files named, when [`crate::native::name_frames`] was asked to.
    pub native_naming: Option<crate::native_naming::NativeNaming>,
    /// What reading found cut, damaged or unreadable, and left out.
    pub integrity: Integrity,
    /// How stacks of async continuations are shown in every profile built from this trace
    /// (logical unless asked otherwise).
    pub stack_view: crate::stack_frames::StackView,
    /// Whether profiles built from this trace give managed frames their source lines, and
    /// where source files are (`None`: no lines, the default).
    pub source_lines: Option<crate::lines::SourceRoots>,
    /// Where the stacks of every profile built from this trace start (every frame unless
    /// asked otherwise; `report` starts them at the managed entry).
    pub stack_start: crate::stack_start::StackStart,
    pub(crate) stacks: HashMap<u32, StackDef>,
    /// The stacks of work the runtime did only for the profiler (see [`crate::induced`]):
    /// the profiler's cost, left out of the program's figures.
    pub(crate) induced: HashSet<u32>,
    /// Exceptions thrown, counted per throw-site stack: its managed frames innermost first,
    /// each with its IL position (format 1.9; unknown before).
    pub throw_sites: HashMap<Vec<(u64, clrprof_trace::IlPosition)>, u64>,
    /// Each stack whose frames are those of an earlier stack at other IL positions, to that
    /// stack (format 1.9: a function called from two places of its caller is two nodes):
    /// views by stack of functions count them as one ([`LoadedTrace::functions_stack`]).
    pub(crate) same_functions: HashMap<u32, u32>,
    pub(crate) samples: Vec<TraceSample>,
    /// Samples summed per thread, stack and state ([`SampleDetail::Summed`]).
    pub(crate) summed: HashMap<(u32, u32, u8), SummedSamples>,
    /// Each thread's CPU samples by the clock that took them (format 1.8).
    pub(crate) clocks: HashMap<u32, crate::sampling::ClockTally>,
    last_sample_ts: u64,
    pub(crate) call_tree: Vec<CallTreeNode>,
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
pub(crate) struct SummedSamples {
    pub(crate) count: u64,
    pub(crate) cpu_ns: u64,
    pub(crate) sys_ns: u64,
    pub(crate) mode_known_cpu_ns: u64,
    pub(crate) wall_ns: u64,
    pub(crate) first_ts: u64,
    pub(crate) last_ts: u64,
}

/// The CPU of a sample that tells whether the thread was in the kernel: a CPU sample of a perf
/// event that counts kernel time (format 1.8).
pub(crate) fn mode_known_cpu_ns(s: &TraceSample) -> u64 {
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
                config: None,
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
                stack_start: crate::stack_start::StackStart::default(),
                stacks: HashMap::new(),
                induced: HashSet::new(),
                throw_sites: HashMap::new(),
                same_functions: HashMap::new(),
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
            Record::SessionStart(s) => {
                t.config = (!s.config.is_empty()).then(|| AgentConfig::decode(&s.config).config);
                t.session = Some(s);
            }
            Record::SessionEnd(s) => t.session_end = Some(s),
            Record::RecordingEnd(r) => t.recording_end = Some(r),
            Record::Counter(c) => {
                t.counters.insert(c.name, c.value);
            }
            Record::Message(m) => t.messages.push(m),
            Record::SamplerInfo(i) => t.sampler = Some(i),
            Record::ThreadOsName(n) => {
                t.names
                    .thread_os_names
                    .insert(n.tid, crate::threads::whole_os_name(&n.name));
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
            Record::ExceptionInfo(i) => {
                let path = i
                    .stack
                    .iter()
                    .enumerate()
                    .map(|(k, &f)| {
                        let il = i.stack_il.get(k).copied().unwrap_or_default();
                        (f, il)
                    })
                    .collect();
                *t.throw_sites.entry(path).or_default() += 1;
                self.runtime.exception_info(i);
            }
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
        t.same_functions = crate::stack_frames::same_functions(&t.stacks);
        t.events = events.finish(&t.names, &t.memory.gcs, &t.counters);
        t.runtime = runtime.finish(&t.names, &t.memory.gcs);
        t.runtime.events_lost = t.events.lost.clone();
        // A thread the program did not name goes by the kernel's name (the runtime names its
        // threads there since .NET 6), else `main` for the process's first thread.
        let pid = t.session.as_ref().map_or(0, |s| s.pid);
        for life in &mut t.runtime.threads {
            if life.name.is_empty() {
                life.name = match t.names.thread_os_names.get(&life.tid) {
                    Some(os) if !os.is_empty() => os.clone(),
                    _ if life.tid == pid && pid != 0 => "main".into(),
                    _ => String::new(),
                };
            }
        }
        t
    }
}

impl LoadedTrace {
    /// True if the agent reported its session's end (the program did not crash).
    pub fn ended_cleanly(&self) -> bool {
        self.session_end.is_some()
    }

    /// The CPU mode the session was recorded in: its configuration's; without one (a trace
    /// written without the CLI), trace mode if there are call trees, else sample mode.
    pub fn mode(&self) -> Mode {
        match &self.config {
            Some(config) => config.mode,
            None if self.call_tree.is_empty() => Mode::Sample,
            None => Mode::Trace,
        }
    }

    /// A counter's last value (0 if never written).
    pub fn counter(&self, name: clrprof_trace::counters::CounterName) -> u64 {
        self.counters.get(name.as_str()).copied().unwrap_or(0)
    }

    /// The CPU the profiler used on thread `tid` beside its samples (0 if not written).
    pub fn thread_profiler_cpu_ns(&self, tid: u32) -> u64 {
        let name = format!(
            "{}{tid}",
            clrprof_trace::counters::THREAD_PROFILER_CPU_PREFIX
        );
        self.counters.get(&name).copied().unwrap_or(0)
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

    /// The first stack with the same frames as trace stack `id`, whatever their IL positions.
    pub fn functions_stack(&self, id: u32) -> u32 {
        self.same_functions.get(&id).copied().unwrap_or(id)
    }

    /// Starts the stacks of `p` where [`LoadedTrace::stack_start`] says.
    pub(crate) fn start_stacks(&self, p: &mut crate::Profile) {
        if self.stack_start == crate::stack_start::StackStart::ManagedEntry {
            crate::stack_start::start_at_managed_entry(p);
        }
    }

    /// The frames of a stack, innermost first, with their kinds and ids.
    pub(crate) fn stack_path(&self, id: u32) -> Vec<(TraceFrameKind, u64)> {
        crate::stack_frames::stack_path(&self.stacks, id)
    }

    /// A trace frame's name, as the profile's frames name it.
    pub(crate) fn frame_name(&self, frame: (TraceFrameKind, u64)) -> String {
        crate::stack_frames::frame_name(&self.names, frame)
    }

    /// Builds a profile of this trace's program (see [`Self::describe_program`]), its stacks
    /// starting where the trace was asked to start them.
    pub(crate) fn finish_profile(&self, b: crate::ProfileBuilder) -> crate::Profile {
        let mut p = b.build();
        self.describe_program(&mut p);
        self.start_stacks(&mut p);
        p
    }

    /// Says on `p` which program it is a profile of: its pid, start, name, duration and
    /// thread names.
    pub(crate) fn describe_program(&self, p: &mut crate::Profile) {
        if let Some(s) = &self.session {
            p.pid = s.pid;
            p.start_unix_ns = s.start_unix_ns;
            p.name = crate::file_names::program_name(&s.command_line);
        }
        p.duration_ns = self.duration_ns();
        let pid = p.pid;
        crate::threads::name_threads(p, |tid| self.names.thread_os_names.get(&tid).cloned(), pid);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use clrprof_trace::{FunctionDef, NativeFrameDef, NativeModuleDef, SessionStart, Writer};

    use super::*;
    use crate::model::ProfileKind;

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

    /// A recording whose `SessionStart` carries `config`, then `records`.
    fn with_config(config: &str, records: &[Record]) -> LoadedTrace {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.write(&Record::SessionStart(SessionStart {
            config: config.into(),
            ..SessionStart::default()
        }))
        .unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        read(w.get_ref().as_slice()).unwrap()
    }

    #[test]
    fn the_session_configuration_is_read_once_into_its_types() {
        let t = with_config(
            "version=1;mode=count;rate=250;alloc=ticks;contention=1",
            &[],
        );
        let config = t.config.as_ref().unwrap();
        assert_eq!(
            (config.mode, config.rate_hz, config.alloc, config.contention),
            (
                Mode::Count,
                250,
                clrprof_trace::config::AllocMode::Ticks,
                true
            )
        );
        assert_eq!(t.mode(), Mode::Count);
        let p = crate::profile::of(&t);
        assert_eq!(p.kind, ProfileKind::Count);
        assert_eq!(p.sample_interval_ns, 4_000_000);
        // No CPU profiling: a profile of samples, if any.
        let t = with_config("version=1;mode=none;rate=1000", &[]);
        assert_eq!(t.mode(), Mode::None);
        assert_eq!(crate::profile::of(&t).kind, ProfileKind::Sample);
        // Without a configuration (written without the CLI), the records say.
        let t = with_config("", &[]);
        assert_eq!((t.config.as_ref(), t.mode()), (None, Mode::Sample));
        let t = with_config("", &[node(1, 0, 0x100, 1)]);
        assert_eq!(t.mode(), Mode::Trace);
        assert_eq!(crate::profile::of(&t).kind, ProfileKind::Trace);
        assert_eq!(trace(Vec::new(), &[]).mode(), Mode::Trace);
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
        let p = crate::profile::of(&t);
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
