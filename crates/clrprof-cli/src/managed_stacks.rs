//! What the conversions of the CLI's EventPipe streams share (`alloc_ticks.rs`,
//! `contention.rs`): the stacks EventPipe attached to the runtime's events turned into the
//! trace's managed stacks, and the events' timestamps into the trace's clock.
//!
//! Each stack is a list of instruction pointers, innermost first. They are mapped to the
//! methods of the rundown the runtime writes when the session ends (`MethodDCEndVerbose`:
//! every method's code range and names), whose ids are the profiling API's `FunctionID`s, so
//! frames the agent already named keep the agent's names; the others get a `FunctionDef`
//! named from the rundown, spelled as the agent spells names from metadata
//! (`clrprof_events::csharp`). Each frame carries its IL position, from the native-to-IL map
//! the rundown writes for each code version just before the version's method event
//! (`MethodDCEndILToNativeMap`), as the agent's frames do. Stack nodes are numbered after the
//! agent's.

use std::collections::{HashMap, HashSet};

use clrprof_events::csharp::{il_signature, runtime_type};
use clrprof_events::rundown::{MethodDcEndVerbose, MethodIlToNativeMap, ModuleDcEnd};
use clrprof_events::{Payload, PointerSize};
use clrprof_ipc::nettrace::{Event, EventMetadata, Nettrace};
use clrprof_trace::{FrameKind, FunctionDef, IlPosition, ModuleDef, Record, StackNodes};

use crate::event_session::AgentIds;

/// Whether `m` describes the rundown's methods, their native-to-IL maps or their modules.
pub(crate) fn is_rundown_method(m: &EventMetadata) -> bool {
    MethodDcEndVerbose::is(&m.provider, m.event_id)
        || MethodIlToNativeMap::is(&m.provider, m.event_id)
        || ModuleDcEnd::is(&m.provider, m.event_id)
}

/// The rundown's modules by `ModuleID`: a definition for each, its file from the rundown.
pub(crate) fn rundown_modules(trace: &Nettrace) -> HashMap<u64, ModuleDef> {
    trace
        .events
        .iter()
        .filter_map(|e| read_event::<ModuleDcEnd<'_>>(trace, e)?.ok())
        .map(|m| {
            let path = m.module_il_path().to_string_lossy();
            let assembly_name = std::path::Path::new(&path)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (
                m.module_id(),
                ModuleDef {
                    id: m.module_id(),
                    assembly: m.assembly_id(),
                    base_address: 0,
                    path,
                    assembly_name,
                },
            )
        })
        .collect()
}

/// The pointer size of the process that wrote a stream (8 if it does not say).
pub(crate) fn pointer_size(trace: &Nettrace) -> PointerSize {
    PointerSize::from_bytes(trace.trace.map_or(8, |t| t.pointer_size))
}

/// Reads `event`'s payload as a `P`, if its metadata says it is one: `None` for another
/// event, `Some(Err)` for a payload that does not read.
pub(crate) fn read_event<'a, P: Payload<'a>>(
    trace: &Nettrace,
    event: &'a Event,
) -> Option<Result<P, clrprof_events::PayloadError>> {
    let m = trace.metadata_of(event)?;
    P::is(&m.provider, m.event_id).then(|| P::read(m.version, &event.payload, pointer_size(trace)))
}

/// A method of the rundown, its names as the runtime wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Method {
    pub(crate) id: u64,
    /// Its module's `ModuleID`.
    pub(crate) module: u64,
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) token: u32,
    /// The declaring type (``System.Collections.Generic.List`1[System.__Canon]``).
    pub(crate) type_name: String,
    pub(crate) name: String,
    /// IL's spelling (`void  (int32,class System.String)`).
    pub(crate) signature: String,
    /// The code version's native-to-IL map: (native offset where the entry's code starts, IL
    /// offset), by native offset; empty when the rundown gave none.
    pub(crate) il_map: Vec<(u32, u32)>,
}

impl Method {
    fn from_rundown(m: &MethodDcEndVerbose<'_>) -> Method {
        Method {
            id: m.method_id(),
            module: m.module_id(),
            start: m.method_start_address(),
            size: u64::from(m.method_size()),
            token: m.method_token(),
            type_name: m.method_namespace().to_string_lossy(),
            name: m.method_name().to_string_lossy(),
            signature: m.method_signature().to_string_lossy(),
            il_map: Vec::new(),
        }
    }

    /// Where in its IL the code at `ip` is (for a caller, its return address less one: the
    /// call): the map entry whose code starts last at or before it.
    pub(crate) fn il_position(&self, ip: u64) -> IlPosition {
        const NO_MAPPING: u32 = 0xFFFF_FFFF;
        const PROLOG: u32 = 0xFFFF_FFFE;
        const EPILOG: u32 = 0xFFFF_FFFD;
        let Some(offset) = ip
            .checked_sub(self.start)
            .and_then(|o| u32::try_from(o).ok())
        else {
            return IlPosition::Unknown;
        };
        let i = self.il_map.partition_point(|&(native, _)| native <= offset);
        match i.checked_sub(1).map(|i| self.il_map[i].1) {
            None | Some(NO_MAPPING) => IlPosition::Unknown,
            Some(PROLOG) => IlPosition::At(0),
            Some(EPILOG) => IlPosition::Epilogue,
            Some(il) => IlPosition::At(il),
        }
    }

    /// The method's definition, named as the agent names methods from metadata: the
    /// declaring type and the parameters in C#, the declaring type's arguments in place of
    /// its generic parameters; in its module if that is defined (its symbols then give the
    /// method's lines), else in none.
    pub(crate) fn definition(&self, module_defined: bool) -> FunctionDef {
        let declaring = runtime_type(&self.type_name);
        FunctionDef {
            id: self.id,
            class: 0,
            module: if module_defined { self.module } else { 0 },
            token: self.token,
            signature: il_signature(&self.name, &self.signature, &declaring.type_args, &[]),
            type_name: declaring.name,
            method_name: self.name.clone(),
        }
    }
}

/// The rundown's methods that have code, by start address, each code version with the
/// native-to-IL map the rundown wrote just before it (same method, same ReJIT version).
pub(crate) fn rundown_methods(trace: &Nettrace) -> Vec<Method> {
    let mut maps: HashMap<(u64, u64), Vec<(u32, u32)>> = HashMap::new();
    let mut methods: Vec<Method> = Vec::new();
    for event in &trace.events {
        if let Some(Ok(map)) = read_event::<MethodIlToNativeMap<'_>>(trace, event) {
            if map.method_extent() == 0 {
                let mut entries: Vec<(u32, u32)> =
                    map.entries().map(|(il, native)| (native, il)).collect();
                entries.sort_by_key(|&(native, _)| native);
                maps.insert((map.method_id(), map.rejit_id()), entries);
            }
            continue;
        }
        if let Some(Ok(m)) = read_event::<MethodDcEndVerbose<'_>>(trace, event) {
            let mut method = Method::from_rundown(&m);
            if let Some(map) = maps.remove(&(method.id, m.rejit_id().unwrap_or(0))) {
                method.il_map = map;
            }
            if method.size > 0 {
                methods.push(method);
            }
        }
    }
    methods.sort_by_key(|m| m.start);
    methods
}

/// The method whose code contains `ip`.
pub(crate) fn method_at(methods: &[Method], ip: u64) -> Option<&Method> {
    let i = methods.partition_point(|m| m.start <= ip);
    let m = methods.get(i.checked_sub(1)?)?;
    (ip - m.start < m.size).then_some(m)
}

/// Turns EventPipe's stacks into the trace's: nodes numbered after the agent's, and a
/// definition for each method the agent did not name.
pub(crate) struct ManagedStacks<'a> {
    methods: Vec<Method>,
    /// The rundown's modules not defined yet (by the agent or here).
    modules: HashMap<u64, ModuleDef>,
    /// The modules defined here.
    modules_written: HashSet<u64>,
    agent: &'a AgentIds,
    defined: HashSet<u64>,
    nodes: StackNodes,
    unresolved_frames: u64,
}

impl<'a> ManagedStacks<'a> {
    /// The stacks of `trace`'s events, with its rundown's methods.
    pub(crate) fn new(trace: &Nettrace, agent: &'a AgentIds) -> ManagedStacks<'a> {
        ManagedStacks {
            methods: rundown_methods(trace),
            modules: rundown_modules(trace)
                .into_iter()
                .filter(|(id, _)| !agent.modules.contains(id))
                .collect(),
            modules_written: HashSet::new(),
            agent,
            defined: HashSet::new(),
            nodes: StackNodes::after(agent.max_stack),
            unresolved_frames: 0,
        }
    }

    /// The stack node of `ips` (return addresses, innermost first), pushing the definitions
    /// of its new methods and nodes to `out`. An address in no method is left out (counted).
    pub(crate) fn intern(&mut self, ips: &[u64], out: &mut Vec<Record>) -> u32 {
        let mut frames = Vec::with_capacity(ips.len());
        for &ip in ips {
            // A return address (or the point of a call): the byte before it is inside the
            // calling method, on the call's line.
            let call = ip.saturating_sub(1);
            match method_at(&self.methods, call) {
                Some(m) => {
                    if !self.agent.functions.contains(&m.id) && self.defined.insert(m.id) {
                        // Its module first, from the rundown, unless the agent defined it.
                        if let Some(module) = self.modules.remove(&m.module) {
                            self.modules_written.insert(module.id);
                            out.push(Record::ModuleDef(module));
                        }
                        let module_defined = self.agent.modules.contains(&m.module)
                            || self.modules_written.contains(&m.module);
                        out.push(Record::FunctionDef(m.definition(module_defined)));
                    }
                    frames.push((m.id, m.il_position(call)));
                }
                None => self.unresolved_frames += 1,
            }
        }
        let mut parent = 0;
        for &(frame, il) in frames.iter().rev() {
            let (id, def) = self.nodes.node(parent, FrameKind::Managed, frame, il);
            if let Some(def) = def {
                out.push(Record::StackDef(def));
            }
            parent = id;
        }
        parent
    }

    /// Frames in no method of the rundown so far.
    pub(crate) fn unresolved_frames(&self) -> u64 {
        self.unresolved_frames
    }
}

/// A stream's timestamps on the trace's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamClock {
    sync_timestamp: u64,
    frequency: u64,
    sync_unix_ns: u64,
    session_start_unix_ns: u64,
}

impl StreamClock {
    /// The clock of `trace`, for a trace whose session started at `agent.start_unix_ns`.
    pub(crate) fn new(trace: &Nettrace, agent: &AgentIds) -> StreamClock {
        let (sync_timestamp, frequency, sync_unix_ns) = trace.trace.map_or((0, 1, 0), |t| {
            (t.sync_timestamp, t.frequency.max(1), t.sync_unix_ns)
        });
        StreamClock {
            sync_timestamp,
            frequency,
            sync_unix_ns,
            session_start_unix_ns: agent.start_unix_ns,
        }
    }

    /// `ticks` of the stream's clock in nanoseconds.
    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000_000 / u128::from(self.frequency)).min(u128::from(u64::MAX))
            as u64
    }

    /// The time of `timestamp` in the trace: nanoseconds since the session started.
    pub(crate) fn session_ts(&self, timestamp: u64) -> u64 {
        let since_sync = self.ns(timestamp.saturating_sub(self.sync_timestamp));
        self.sync_unix_ns
            .saturating_add(since_sync)
            .saturating_sub(self.session_start_unix_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(type_name: &str, name: &str, signature: &str) -> Method {
        Method {
            id: 0x11,
            start: 0x4000,
            size: 0x80,
            token: 0x0600_0002,
            module: 0x77,
            il_map: Vec::new(),
            type_name: type_name.into(),
            name: name.into(),
            signature: signature.into(),
        }
    }

    #[test]
    fn addresses_find_their_il_offsets_in_the_code_versions_map() {
        let m = Method {
            il_map: vec![
                (0, 0xFFFF_FFFE),
                (0x12, 0),
                (0x30, 0x10),
                (0x48, 0xFFFF_FFFF),
                (0x50, 0xFFFF_FFFD),
            ],
            ..method("T", "M", "void  ()")
        };
        assert_eq!(m.il_position(0x4000), IlPosition::At(0), "the prologue");
        assert_eq!(m.il_position(0x4012), IlPosition::At(0));
        assert_eq!(m.il_position(0x402f), IlPosition::At(0));
        assert_eq!(m.il_position(0x4030), IlPosition::At(0x10));
        assert_eq!(m.il_position(0x4048), IlPosition::Unknown, "code of no IL");
        assert_eq!(m.il_position(0x4057), IlPosition::Epilogue);
        assert_eq!(
            m.il_position(0x3fff),
            IlPosition::Unknown,
            "before the code"
        );
        let without = method("T", "M", "void  ()");
        assert_eq!(without.il_position(0x4030), IlPosition::Unknown, "no map");
    }

    #[test]
    fn methods_by_address() {
        let methods = [method("Memory.Program", "Churn", "void  (int32)")];
        assert_eq!(method_at(&methods, 0x3fff), None);
        assert_eq!(method_at(&methods, 0x4000).map(|m| m.id), Some(0x11));
        assert_eq!(method_at(&methods, 0x407f).map(|m| m.id), Some(0x11));
        assert_eq!(method_at(&methods, 0x4080), None);
        assert_eq!(method_at(&[], 0x4000), None);
    }

    #[test]
    fn methods_are_named_as_the_agent_names_them() {
        let d = method(
            "Memory.Program",
            "Named",
            "int64  (int32,int,value class Memory.Pair,class System.Collections.Generic.List`1<class System.String>)",
        )
        .definition(false);
        assert_eq!(
            (d.id, d.token, d.class, d.module),
            (0x11, 0x0600_0002, 0, 0),
            "an undefined module is none"
        );
        let in_module = method("Memory.Program", "Named", "void  ()").definition(true);
        assert_eq!(in_module.module, 0x77, "a defined module");
        assert_eq!(d.type_name, "Memory.Program");
        assert_eq!(d.method_name, "Named");
        assert_eq!(
            d.signature,
            "(int, nint, Memory.Pair, System.Collections.Generic.List<string>)"
        );
        // Shared generic code: the declaring type's arguments stand for its parameters.
        let d = method(
            "System.Collections.Generic.Dictionary`2[System.__Canon,System.Int32]",
            "TryInsert",
            "instance bool  (!0,!1,value class System.Collections.Generic.InsertionBehavior)",
        )
        .definition(false);
        assert_eq!(
            d.type_name,
            "System.Collections.Generic.Dictionary<__Canon, int>"
        );
        assert_eq!(
            d.signature,
            "(__Canon, int, System.Collections.Generic.InsertionBehavior)"
        );
        let d = method("Money", "op_Implicit", "int32  (value class Money)").definition(false);
        assert_eq!(d.signature, "(Money) -> int");
    }

    #[test]
    fn frames_the_agent_named_are_not_named_again() {
        let agent = AgentIds {
            functions: [0x11].into(),
            max_stack: 9,
            ..AgentIds::default()
        };
        let mut stacks = ManagedStacks {
            methods: vec![
                method("A", "F", "void  ()"),
                Method {
                    id: 0x22,
                    start: 0x5000,
                    ..method("B", "G", "void  ()")
                },
            ],
            modules: [(
                0x77,
                ModuleDef {
                    id: 0x77,
                    path: "/app/B.dll".into(),
                    ..ModuleDef::default()
                },
            )]
            .into(),
            modules_written: HashSet::new(),
            agent: &agent,
            defined: HashSet::new(),
            nodes: StackNodes::after(agent.max_stack),
            unresolved_frames: 0,
        };
        let mut out = Vec::new();
        // Innermost first: G called F; 0x9000 is in no method.
        let node = stacks.intern(&[0x5001, 0x9000, 0x4010], &mut out);
        assert_eq!(node, 11);
        assert_eq!(stacks.unresolved_frames(), 1);
        // G's module first, from the rundown (the agent did not define it), then G in it.
        let defined: Vec<(&str, u64, u64)> = out
            .iter()
            .filter_map(|r| match r {
                Record::ModuleDef(m) => Some(("module", m.id, 0)),
                Record::FunctionDef(f) => Some(("function", f.id, f.module)),
                _ => None,
            })
            .collect();
        assert_eq!(defined, [("module", 0x77, 0), ("function", 0x22, 0x77)]);
        out.clear();
        assert_eq!(stacks.intern(&[0x5001, 0x4010], &mut out), 11);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn timestamps_on_the_traces_clock() {
        let clock = StreamClock {
            sync_timestamp: 1_000,
            frequency: 1_000_000,
            sync_unix_ns: 5_000_000_000,
            session_start_unix_ns: 4_000_000_000,
        };
        assert_eq!(clock.ns(3), 3_000);
        assert_eq!(clock.session_ts(1_000), 1_000_000_000);
        assert_eq!(clock.session_ts(2_000), 1_001_000_000);
        // Before the sync point: the sync point.
        assert_eq!(clock.session_ts(0), 1_000_000_000);
    }
}
