//! What the conversions of the CLI's EventPipe streams share (`alloc_ticks.rs`,
//! `contention.rs`): the stacks EventPipe attached to the runtime's events turned into the
//! trace's managed stacks, and the events' timestamps into the trace's clock.
//!
//! Each stack is a list of instruction pointers, innermost first. They are mapped to the
//! methods of the rundown the runtime writes when the session ends (`MethodDCEndVerbose`:
//! every method's code range and names), whose ids are the profiling API's `FunctionID`s, so
//! frames the agent already named keep the agent's names; the others get a `FunctionDef`
//! named from the rundown, spelled as the agent spells names from metadata
//! (`clrprof_events::csharp`). Stack nodes are numbered after the agent's.

use std::collections::HashSet;

use clrprof_events::csharp::{il_signature, runtime_type};
use clrprof_events::rundown::MethodDcEndVerbose;
use clrprof_events::{Payload, PointerSize};
use clrprof_ipc::nettrace::{Event, EventMetadata, Nettrace};
use clrprof_trace::{FrameKind, FunctionDef, Record, StackNodes};

use crate::event_session::AgentIds;

/// Whether `m` describes the rundown's methods.
pub(crate) fn is_rundown_method(m: &EventMetadata) -> bool {
    MethodDcEndVerbose::is(&m.provider, m.event_id)
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
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) token: u32,
    /// The declaring type (``System.Collections.Generic.List`1[System.__Canon]``).
    pub(crate) type_name: String,
    pub(crate) name: String,
    /// IL's spelling (`void  (int32,class System.String)`).
    pub(crate) signature: String,
}

impl Method {
    fn from_rundown(m: &MethodDcEndVerbose<'_>) -> Method {
        Method {
            id: m.method_id(),
            start: m.method_start_address(),
            size: u64::from(m.method_size()),
            token: m.method_token(),
            type_name: m.method_namespace().to_string_lossy(),
            name: m.method_name().to_string_lossy(),
            signature: m.method_signature().to_string_lossy(),
        }
    }

    /// The method's definition, named as the agent names methods from metadata: the
    /// declaring type and the parameters in C#, the declaring type's arguments in place of
    /// its generic parameters.
    pub(crate) fn definition(&self) -> FunctionDef {
        let declaring = runtime_type(&self.type_name);
        FunctionDef {
            id: self.id,
            class: 0,
            module: 0,
            token: self.token,
            signature: il_signature(&self.name, &self.signature, &declaring.type_args, &[]),
            type_name: declaring.name,
            method_name: self.name.clone(),
        }
    }
}

/// The rundown's methods that have code, by start address.
pub(crate) fn rundown_methods(trace: &Nettrace) -> Vec<Method> {
    let mut methods: Vec<Method> = trace
        .events
        .iter()
        .filter_map(|e| read_event::<MethodDcEndVerbose<'_>>(trace, e)?.ok())
        .map(|m| Method::from_rundown(&m))
        .filter(|m| m.size > 0)
        .collect();
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
            // calling method.
            match method_at(&self.methods, ip.saturating_sub(1)) {
                Some(m) => {
                    if !self.agent.functions.contains(&m.id) && self.defined.insert(m.id) {
                        out.push(Record::FunctionDef(m.definition()));
                    }
                    frames.push(m.id);
                }
                None => self.unresolved_frames += 1,
            }
        }
        self.nodes.path(FrameKind::Managed, &frames, |def| {
            out.push(Record::StackDef(def))
        })
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
            type_name: type_name.into(),
            name: name.into(),
            signature: signature.into(),
        }
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
        .definition();
        assert_eq!(
            (d.id, d.token, d.class, d.module),
            (0x11, 0x0600_0002, 0, 0)
        );
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
        .definition();
        assert_eq!(
            d.type_name,
            "System.Collections.Generic.Dictionary<__Canon, int>"
        );
        assert_eq!(
            d.signature,
            "(__Canon, int, System.Collections.Generic.InsertionBehavior)"
        );
        let d = method("Money", "op_Implicit", "int32  (value class Money)").definition();
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
        let defined: Vec<u64> = out
            .iter()
            .filter_map(|r| match r {
                Record::FunctionDef(f) => Some(f.id),
                _ => None,
            })
            .collect();
        assert_eq!(defined, [0x22]);
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
