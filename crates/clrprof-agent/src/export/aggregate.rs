//! The record stream, read back into one period's profiles.
//!
//! Export mode does not gather anything of its own: the agent's transport hands the same
//! encoded records a trace would hold to an [`Aggregator`], which decodes them with the trace
//! format's [`StreamDecoder`], keeps the definitions for the process's whole life (functions,
//! classes, modules, native frames, the nodes of the stack tree: a period after the first still
//! needs the names the agent sent once) and adds every sample, allocation tick, lock wait and
//! thrown exception to the current period's [`PeriodProfiles`], whose stack tables are bounded.
//!
//! The agent gives ids the runtime reuses (unloaded modules, collected dynamic methods) a new
//! trace id per life and defines it again (see `crate::defs`): a definition replaces the one
//! of the same id, so every frame is named as it was when it was sampled.
//!
//! Managed frames carry their source file and line where their module's symbols give them
//! ([`FrameLines`]).

use std::path::Path;

use clrprof_export::{Frame, PeriodProfiles, ProfileType, SamplingPeriod};
use clrprof_trace::IlPosition;
use clrprof_trace::config::{ExportProfile, ExportSettings};
use clrprof_trace::{
    Allocation, Contention, ExceptionInfo, FrameKind, MessageLevel, Record, Sample, StackCut,
    StreamDecoder, ThreadState, callbacks,
};
use rustc_hash::FxHashMap;

use super::lines::FrameLines;

/// Thrown exceptions whose `ExceptionThrown` event (which names the exception's type) has not
/// arrived yet; past this many the oldest is added without its type.
const PENDING_EXCEPTIONS: usize = 64;

/// The agent's errors said on standard error in export mode, at most (the first ones).
const ERRORS_TOLD: usize = 16;

/// The count every profile carries of the modules whose symbols the agent looked for so far
/// (for the lines of their frames).
pub const SYMBOL_MODULES_READ: &str = "clrprof.symbol_modules_read";
/// The count every profile carries of the microseconds the agent spent finding and reading
/// symbols so far (on its own thread, not the program's).
pub const SYMBOL_READING_US: &str = "clrprof.symbol_reading_us";

/// What the process is, from the stream's `SessionStart`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFacts {
    /// The runtime's version, e.g. `8.0.4` (empty if unknown).
    pub runtime_version: String,
}

/// Counters of what could not be used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AggregateCounts {
    /// Records added to a profile.
    pub added: u64,
    /// Samples, allocations, waits or exceptions whose stack named a node never defined
    /// (added with the frames that were known).
    pub unknown_nodes: u64,
    /// Whether the stream could not be decoded any further (nothing more is aggregated).
    pub stream_failed: bool,
}

/// The definitions the stream gave, for the process's whole life.
#[derive(Default)]
struct Definitions {
    /// Function id -> its name and module id.
    functions: FxHashMap<u64, (String, u64)>,
    /// Class id -> its name and module id.
    classes: FxHashMap<u64, (String, u64)>,
    /// Module id -> its file name.
    modules: FxHashMap<u64, String>,
    /// Native frame id -> its frame.
    natives: FxHashMap<u64, Frame>,
    /// Stack node -> its caller's node, its frame's kind and id, and a managed frame's IL
    /// position.
    nodes: FxHashMap<u32, (u32, FrameKind, u64, IlPosition)>,
    /// The source lines of managed frames.
    lines: FrameLines,
}

impl Definitions {
    fn module_name(&self, module: u64) -> String {
        self.modules.get(&module).cloned().unwrap_or_default()
    }

    /// Function `id` at `il`, with its source line when its symbols give one.
    fn function(&mut self, id: u64, il: IlPosition) -> Frame {
        let frame = match self.functions.get(&id) {
            Some((name, module)) => Frame::new(name.clone(), self.module_name(*module)),
            None => return Frame::new(format!("[function {id:#x}]"), ""),
        };
        match self.lines.line(id, il) {
            Some((file, line)) => frame.at(file, line),
            None => frame,
        }
    }

    fn class(&self, id: u64) -> Frame {
        match self.classes.get(&id) {
            Some((name, module)) => Frame::new(name.clone(), self.module_name(*module)),
            None => Frame::new(format!("[class {id:#x}]"), ""),
        }
    }

    /// The frames of stack node `leaf`, root first; `false` if a node was not defined.
    fn stack(&mut self, leaf: u32, out: &mut Vec<Frame>) -> bool {
        out.clear();
        let mut node = leaf;
        let mut complete = true;
        // A stack tree's nodes point to earlier nodes; the bound only guards against a
        // malformed stream.
        for _ in 0..4096 {
            if node == 0 {
                break;
            }
            let Some(&(parent, kind, frame, il)) = self.nodes.get(&node) else {
                complete = false;
                break;
            };
            match kind {
                FrameKind::Managed => {
                    let f = self.function(frame, il);
                    out.push(f);
                }
                FrameKind::Native => out.push(
                    self.natives
                        .get(&frame)
                        .cloned()
                        .unwrap_or_else(|| Frame::new(format!("[native {frame:#x}]"), "")),
                ),
                FrameKind::Truncated => out.push(Frame::new(
                    format!("[{}]", StackCut::from_u64(frame).describe()),
                    "",
                )),
                // The threads' own stacks: async callers and their markers are left out.
                FrameKind::AsyncCaller | FrameKind::Await | FrameKind::Other(_) => {}
            }
            node = parent;
        }
        out.reverse();
        complete
    }
}

/// One thrown exception waiting for its type.
struct PendingException {
    object: u64,
    stack: Vec<Frame>,
}

/// Decodes the agent's record stream and aggregates it into periods.
pub struct Aggregator {
    decoder: StreamDecoder,
    defs: Definitions,
    period: PeriodProfiles,
    max_stacks: usize,
    wanted: [bool; 5],
    periods: [Option<SamplingPeriod>; 5],
    session: Option<SessionFacts>,
    pending: Vec<PendingException>,
    counts: AggregateCounts,
    scratch: Vec<Frame>,
    /// The agent's errors (messages of level 2) not yet said, and how many were.
    errors: Vec<String>,
    errors_taken: usize,
}

fn type_of(p: ExportProfile) -> ProfileType {
    match p {
        ExportProfile::Cpu => ProfileType::Cpu,
        ExportProfile::Wall => ProfileType::Wall,
        ExportProfile::Alloc => ProfileType::Allocations,
        ExportProfile::Lock => ProfileType::Lock,
        ExportProfile::Exceptions => ProfileType::Exceptions,
    }
}

impl Aggregator {
    /// An aggregator for `settings`, whose first period starts at `start_unix_nano`; CPU
    /// samples come every `1/cpu_rate_hz` s of CPU time and wall-clock samples every
    /// `1/wall_rate_hz` s; each type keeps at most `max_stacks` stacks per period.
    pub fn new(
        settings: &ExportSettings,
        cpu_rate_hz: u32,
        wall_rate_hz: u32,
        max_stacks: usize,
        start_unix_nano: u64,
    ) -> Aggregator {
        let mut wanted = [false; 5];
        for &p in &settings.profiles {
            wanted[type_of(p) as usize] = true;
        }
        let every = |hz: u32| 1_000_000_000 / i64::from(hz.max(1));
        let mut periods = [None; 5];
        periods[ProfileType::Cpu as usize] = Some(ProfileType::Cpu.period(every(cpu_rate_hz)));
        periods[ProfileType::Wall as usize] = Some(ProfileType::Wall.period(every(wall_rate_hz)));
        let mut a = Aggregator {
            decoder: StreamDecoder::new(),
            defs: Definitions {
                lines: FrameLines::new(settings.source_roots.clone()),
                ..Definitions::default()
            },
            period: PeriodProfiles::new(start_unix_nano, 0, max_stacks),
            max_stacks,
            wanted,
            periods,
            session: None,
            pending: Vec::new(),
            counts: AggregateCounts::default(),
            scratch: Vec::new(),
            errors: Vec::new(),
            errors_taken: 0,
        };
        a.set_periods();
        a
    }

    fn set_periods(&mut self) {
        for t in ProfileType::ALL {
            if let Some(p) = self.periods[t as usize] {
                self.period.set_period(t, p);
            }
        }
    }

    /// What the stream's `SessionStart` said, once it came.
    pub fn session(&self) -> Option<&SessionFacts> {
        self.session.as_ref()
    }

    /// The counters.
    pub fn counts(&self) -> AggregateCounts {
        self.counts
    }

    /// The agent's errors the stream carried since the last call (with no `clrprof` process to
    /// show them, export mode says them on standard error), the first 16 in all.
    pub fn take_errors(&mut self) -> Vec<String> {
        let errors = std::mem::take(&mut self.errors);
        self.errors_taken += errors.len();
        errors
    }

    /// Takes the current period, which ends at `end_unix_nano`, and starts the next one there.
    pub fn take_period(&mut self, end_unix_nano: u64) -> PeriodProfiles {
        let waiting = std::mem::take(&mut self.pending);
        for e in waiting {
            self.add_exception(e.stack, None);
        }
        let next = PeriodProfiles::new(end_unix_nano, 0, self.max_stacks);
        let mut done = std::mem::replace(&mut self.period, next);
        self.set_periods();
        let start = done.start_unix_nano();
        done.set_duration(end_unix_nano.saturating_sub(start));
        let lines = self.defs.lines.counts();
        done.set_counter(SYMBOL_MODULES_READ, lines.modules_read);
        done.set_counter(
            SYMBOL_READING_US,
            u64::try_from(lines.reading.as_micros()).unwrap_or(u64::MAX),
        );
        done
    }

    /// Reads more of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.counts.stream_failed {
            return;
        }
        self.decoder.push(bytes);
        loop {
            let record = match self.decoder.next_record() {
                None => break,
                Some(Ok(raw)) => raw.record,
                // A corrupt payload of a well-framed record is skipped; anything else ends
                // the stream.
                Some(Err(_)) => {
                    if self.decoder.has_failed() {
                        self.counts.stream_failed = true;
                        break;
                    }
                    continue;
                }
            };
            self.record(record);
        }
    }

    fn wants(&self, t: ProfileType) -> bool {
        self.wanted[t as usize]
    }

    fn record(&mut self, record: Record) {
        match record {
            Record::SessionStart(s) => {
                let version = s
                    .runtime
                    .strip_prefix("CoreCLR")
                    .unwrap_or(&s.runtime)
                    .trim()
                    .to_string();
                self.session = Some(SessionFacts {
                    runtime_version: version,
                });
            }
            Record::ModuleDef(m) => {
                self.defs.lines.define_module(m.id, &m.path);
                let name = Path::new(&m.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or(m.path);
                self.defs.modules.insert(m.id, name);
            }
            Record::FunctionDef(f) => {
                let name = if f.type_name.is_empty() {
                    format!("{}{}", f.method_name, f.signature)
                } else {
                    format!("{}.{}{}", f.type_name, f.method_name, f.signature)
                };
                self.defs.lines.define_function(f.id, f.module, f.token);
                self.defs.functions.insert(f.id, (name, f.module));
            }
            Record::ClassDef(c) => {
                self.defs.classes.insert(c.id, (c.name, c.module));
            }
            Record::NativeFrameDef(n) => {
                let library = Path::new(&n.library)
                    .file_name()
                    .map(|l| l.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let frame = if n.symbol.is_empty() {
                    Frame::new(format!("[{library}]"), library)
                } else {
                    Frame::new(n.symbol, library)
                };
                self.defs.natives.insert(n.id, frame);
            }
            Record::StackDef(s) => {
                self.defs
                    .nodes
                    .insert(s.id, (s.parent, s.frame_kind, s.frame, s.il));
            }
            Record::Message(m)
                if matches!(m.level, MessageLevel::Error | MessageLevel::Other(_))
                    && self.errors_taken + self.errors.len() < ERRORS_TOLD =>
            {
                self.errors.push(m.text);
            }
            Record::Sample(s) => self.sample(&s),
            Record::Allocation(a) => self.allocation(&a),
            Record::Contention(c) => self.contention(&c),
            Record::ExceptionInfo(e) => self.exception_info(e),
            Record::Event(e) => {
                if let Some(thrown) = callbacks::ExceptionThrown::of(&e)
                    && let Some(i) = self.pending.iter().position(|p| p.object == thrown.object)
                {
                    let p = self.pending.remove(i);
                    let leaf = (thrown.class != 0).then(|| self.defs.class(thrown.class));
                    self.add_exception(p.stack, leaf);
                }
            }
            _ => {}
        }
    }

    /// Adds a sample of `t` with the stack of node `stack` and, if given, one more frame on
    /// top (an allocated type).
    fn add(&mut self, t: ProfileType, stack: u32, leaf: Option<Frame>, values: &[i64]) {
        let mut frames = std::mem::take(&mut self.scratch);
        if !self.defs.stack(stack, &mut frames) {
            self.counts.unknown_nodes += 1;
        }
        if frames.is_empty() && leaf.is_none() {
            frames.push(Frame::new("[no stack]", ""));
        }
        frames.extend(leaf);
        if self.period.add(t, &frames, values).is_ok() {
            self.counts.added += 1;
        }
        self.scratch = frames;
    }

    fn sample(&mut self, s: &Sample) {
        let (t, value) = match s.state {
            ThreadState::Cpu => (ProfileType::Cpu, s.cpu_ns),
            ThreadState::Running | ThreadState::Blocked => (ProfileType::Wall, s.wall_ns),
            ThreadState::Other(_) => return,
        };
        if self.wants(t) && value > 0 {
            self.add(t, s.stack, None, &[value.min(i64::MAX as u64) as i64]);
        }
    }

    fn allocation(&mut self, a: &Allocation) {
        if !self.wants(ProfileType::Allocations) {
            return;
        }
        // A tick stands for the bytes allocated since the previous one; how many objects
        // they were the runtime does not say. A recorded allocation is one object.
        let objects = if a.flags & Allocation::TICK != 0 {
            0
        } else {
            1
        };
        let leaf = self.defs.class(a.class);
        self.add(
            ProfileType::Allocations,
            a.stack,
            Some(leaf),
            &[a.size.min(i64::MAX as u64) as i64, objects],
        );
    }

    fn contention(&mut self, c: &Contention) {
        if self.wants(ProfileType::Lock) {
            let delay = c.duration_ns.min(i64::MAX as u64) as i64;
            self.add(ProfileType::Lock, c.stack, None, &[delay, 1]);
        }
    }

    fn exception_info(&mut self, e: ExceptionInfo) {
        if !self.wants(ProfileType::Exceptions) {
            return;
        }
        // Innermost first in the record, with each frame's IL position when known.
        let mut stack: Vec<Frame> = e
            .stack
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                let il = e.stack_il.get(i).copied().unwrap_or(IlPosition::Unknown);
                self.defs.function(f, il)
            })
            .collect();
        stack.reverse();
        if self.pending.len() >= PENDING_EXCEPTIONS {
            let oldest = self.pending.remove(0);
            self.add_exception(oldest.stack, None);
        }
        self.pending.push(PendingException {
            object: e.object,
            stack,
        });
    }

    fn add_exception(&mut self, mut stack: Vec<Frame>, exception_type: Option<Frame>) {
        stack.extend(exception_type);
        if stack.is_empty() {
            stack.push(Frame::new("[no stack]", ""));
        }
        if self
            .period
            .add(ProfileType::Exceptions, &stack, &[1])
            .is_ok()
        {
            self.counts.added += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_trace::{
        ClassDef, Event, FunctionDef, ModuleDef, NativeFrameDef, SessionStart, StackDef, Writer,
    };

    fn settings(profiles: &[ExportProfile]) -> ExportSettings {
        let mut s = ExportSettings::new("http://c", "svc");
        s.profiles = profiles.to_vec();
        s
    }

    fn function(id: u64, ty: &str, method: &str, module: u64) -> Record {
        Record::FunctionDef(FunctionDef {
            id,
            module,
            type_name: ty.into(),
            method_name: method.into(),
            signature: "()".into(),
            ..Default::default()
        })
    }

    fn node(id: u32, parent: u32, kind: FrameKind, frame: u64) -> Record {
        Record::StackDef(StackDef {
            id,
            parent,
            frame_kind: kind,
            frame,
            ..Default::default()
        })
    }

    /// The stream of `records`, header first, cut into pieces of `piece` bytes.
    fn feed(a: &mut Aggregator, records: &[Record], piece: usize) {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        for chunk in w.into_inner().chunks(piece) {
            a.push(chunk);
        }
    }

    fn names(p: &PeriodProfiles, t: ProfileType) -> Vec<(Vec<String>, Vec<i64>)> {
        p.profile(t)
            .stacks()
            .map(|s| {
                let frames = s
                    .frames
                    .iter()
                    .map(|&i| {
                        let f = &p.frames()[i as usize];
                        format!("{}@{}", f.function, f.module)
                    })
                    .collect();
                (frames, s.values.clone())
            })
            .collect()
    }

    fn definitions() -> Vec<Record> {
        vec![
            Record::SessionStart(SessionStart {
                runtime: "CoreCLR 8.0.4".into(),
                ..Default::default()
            }),
            Record::ModuleDef(ModuleDef {
                id: 7,
                path: "/app/Shop.dll".into(),
                ..Default::default()
            }),
            function(1, "Shop.Program", "Main", 7),
            function(2, "Shop.Program", "Hot", 7),
            Record::NativeFrameDef(NativeFrameDef {
                id: 9,
                library: "/usr/lib/libc.so.6".into(),
                symbol: "memcpy".into(),
                ..Default::default()
            }),
            Record::ClassDef(ClassDef {
                id: 30,
                module: 7,
                name: "Shop.Order".into(),
                ..Default::default()
            }),
            node(1, 0, FrameKind::Managed, 1),
            node(2, 1, FrameKind::Managed, 2),
            node(3, 2, FrameKind::Native, 9),
        ]
    }

    #[test]
    fn every_kind_of_record_lands_in_its_profile_with_named_frames() {
        let mut a = Aggregator::new(&settings(ExportProfile::ALL), 100, 20, 64, 1_000);
        let mut records = definitions();
        let sample = |stack, state, cpu_ns, wall_ns| {
            Record::Sample(Sample {
                stack,
                state,
                cpu_ns,
                wall_ns,
                ..Default::default()
            })
        };
        records.extend([
            sample(3, ThreadState::Cpu, 10_000_000, 0),
            sample(3, ThreadState::Cpu, 20_000_000, 0),
            sample(2, ThreadState::Blocked, 0, 50_000_000),
            Record::Allocation(Allocation {
                class: 30,
                size: 100_000,
                stack: 2,
                flags: Allocation::TICK,
                ..Default::default()
            }),
            Record::Contention(Contention {
                duration_ns: 5_000,
                stack: 1,
                ..Default::default()
            }),
            Record::ExceptionInfo(ExceptionInfo {
                object: 0xe1,
                stack: vec![2, 1],
                ..Default::default()
            }),
            Record::Event(Event::new(
                0,
                1,
                clrprof_trace::EventKind::EXCEPTION_THROWN,
                &[0xe1, 30, 2],
            )),
            // Thrown again: its event lost, it is added without a type at the period's end.
            Record::ExceptionInfo(ExceptionInfo {
                object: 0xe2,
                stack: vec![2, 1],
                ..Default::default()
            }),
        ]);
        feed(&mut a, &records, 7);
        assert_eq!(a.session().unwrap().runtime_version, "8.0.4");
        let p = a.take_period(16_000);
        assert_eq!((p.start_unix_nano(), p.duration_nano()), (1_000, 15_000));
        let main = "Shop.Program.Main()@Shop.dll".to_string();
        let hot = "Shop.Program.Hot()@Shop.dll".to_string();
        assert_eq!(
            names(&p, ProfileType::Cpu),
            [(
                vec![main.clone(), hot.clone(), "memcpy@libc.so.6".into()],
                vec![30_000_000]
            )]
        );
        assert_eq!(
            p.profile(ProfileType::Cpu).period().unwrap().every,
            10_000_000
        );
        assert_eq!(
            names(&p, ProfileType::Wall),
            [(vec![main.clone(), hot.clone()], vec![50_000_000])]
        );
        assert_eq!(
            names(&p, ProfileType::Allocations),
            [(
                vec![main.clone(), hot.clone(), "Shop.Order@Shop.dll".into()],
                vec![100_000, 0]
            )]
        );
        assert_eq!(
            names(&p, ProfileType::Lock),
            [(vec![main.clone()], vec![5_000, 1])]
        );
        assert_eq!(
            names(&p, ProfileType::Exceptions),
            [
                (
                    vec![main.clone(), hot.clone(), "Shop.Order@Shop.dll".into()],
                    vec![1]
                ),
                (vec![main.clone(), hot.clone()], vec![1]),
            ]
        );
        assert_eq!(a.counts().added, 7);
        assert_eq!(a.counts().unknown_nodes, 0);

        // The next period keeps the definitions and starts empty.
        feed_more(&mut a, &[sample(2, ThreadState::Cpu, 1, 0)]);
        let p = a.take_period(31_000);
        assert_eq!(p.start_unix_nano(), 16_000);
        assert_eq!(names(&p, ProfileType::Cpu), [(vec![main, hot], vec![1])]);
        assert!(p.profile(ProfileType::Wall).stacks().next().is_none());
    }

    /// More records of a stream whose header was already read.
    fn feed_more(a: &mut Aggregator, records: &[Record]) {
        let mut bytes = Vec::new();
        for r in records {
            r.encode(&mut bytes);
        }
        a.push(&bytes);
    }

    #[test]
    fn profiles_not_asked_for_are_not_gathered_and_unknown_nodes_are_counted() {
        let mut a = Aggregator::new(&settings(&[ExportProfile::Cpu]), 100, 1, 64, 0);
        let mut records = definitions();
        records.push(Record::Sample(Sample {
            stack: 2,
            state: ThreadState::Running,
            wall_ns: 5,
            ..Default::default()
        }));
        records.push(Record::Sample(Sample {
            stack: 77,
            state: ThreadState::Cpu,
            cpu_ns: 5,
            ..Default::default()
        }));
        feed(&mut a, &records, 1 << 20);
        let p = a.take_period(1);
        assert_eq!(
            p.present().map(|(t, _)| t).collect::<Vec<_>>(),
            [ProfileType::Cpu]
        );
        assert_eq!(
            names(&p, ProfileType::Cpu),
            [(vec!["[no stack]@".to_string()], vec![5])]
        );
        assert_eq!(a.counts().unknown_nodes, 1);
    }

    #[test]
    fn a_reused_id_is_named_as_its_latest_definition() {
        let mut a = Aggregator::new(&settings(&[ExportProfile::Cpu]), 100, 1, 64, 0);
        let mut records = definitions();
        records.push(function(2, "Shop.Dynamic", "lambda_method", 7));
        records.push(Record::Sample(Sample {
            stack: 2,
            state: ThreadState::Cpu,
            cpu_ns: 5,
            ..Default::default()
        }));
        feed(&mut a, &records, 3);
        let p = a.take_period(1);
        assert_eq!(
            names(&p, ProfileType::Cpu)[0].0[1],
            "Shop.Dynamic.lambda_method()@Shop.dll"
        );
    }

    #[test]
    fn the_agent_s_errors_are_taken_once_and_its_warnings_not_at_all() {
        use clrprof_trace::Message;
        let mut a = Aggregator::new(&settings(&[ExportProfile::Cpu]), 100, 1, 64, 0);
        let message = |level, text: &str| {
            Record::Message(Message {
                ts: 0,
                level,
                text: text.into(),
            })
        };
        feed(
            &mut a,
            &[
                message(MessageLevel::Warning, "a warning"),
                message(MessageLevel::Error, "the runtime refused the event mask"),
            ],
            5,
        );
        assert_eq!(a.take_errors(), ["the runtime refused the event mask"]);
        assert!(a.take_errors().is_empty());
        let many: Vec<Record> = (0..20)
            .map(|i| message(MessageLevel::Error, &format!("e{i}")))
            .collect();
        feed_more(&mut a, &many);
        assert_eq!(a.take_errors().len(), 15);
        feed_more(&mut a, &many);
        assert!(a.take_errors().is_empty());
    }

    #[test]
    fn a_stream_that_is_not_a_trace_stops_aggregating() {
        let mut a = Aggregator::new(&settings(&[ExportProfile::Cpu]), 100, 1, 64, 0);
        a.push(b"GET / HTTP/1.1\r\n\r\n");
        assert!(a.counts().stream_failed);
        a.push(b"more");
        assert!(a.take_period(1).is_empty());
    }
}
