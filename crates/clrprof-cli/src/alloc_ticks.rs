//! `record --alloc ticks` and `attach --alloc`: allocation samples from the runtime's own `GCAllocationTick`
//! events instead of the profiling API's `ObjectAllocated` callback (which sends every
//! allocation through the runtime's slow path).
//!
//! Who reads them is the agent's decision, which it sends right after its `SessionStart`
//! ([`TickReader`]): where the runtime offers in-process EventPipe sessions
//! (`ICorProfilerInfo12`, .NET 5 and later) the agent reads the ticks itself, with its own
//! stacks of the allocating threads, and writes them among its records (the agent's
//! `alloc_ticks.rs`); nothing is left to do here, and the program needs no diagnostics socket.
//! Otherwise (CoreCLR 3.1) the CLI reads them over the diagnostics socket:
//!
//! A thread waits for the program's diagnostics socket and starts an EventPipe session with
//! the runtime provider's GC keyword at verbose level (`event_session.rs`): the runtime then
//! writes a `GCAllocationTick` (with the allocating thread's managed stack) each time about
//! 100 KB have been allocated on a heap. When the program exits (or `attach` stops the
//! session at the detach), the runtime writes the method rundown (every method's code range
//! and name) and closes the stream. The CLI then turns each
//! tick into an `Allocation` record flagged [`Allocation::TICK`]: the tick's type stands for
//! the bytes allocated since the previous tick. Instruction pointers are mapped to the
//! rundown's methods, whose ids are the profiling API's `FunctionID`s, so frames the agent
//! already named keep the agent's names; types and methods it did not name get definitions
//! from the events' own names.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clrprof_ipc::message::{u32_at, u64_at};
use clrprof_ipc::nettrace::{self, EventMetadata, utf16z_at};
use clrprof_trace::protocol::{ALLOCATION_TICK_BYTES, TickReader};
use clrprof_trace::{Allocation, ClassDef, Counter, FrameKind, FunctionDef, Record, StackDef};

use crate::event_session::{EventSession, RUNTIME};

/// The provider of the rundown the runtime writes when a session ends.
pub(crate) const RUNDOWN: &str = "Microsoft-Windows-DotNETRuntimeRundown";
/// `GCKeyword`.
const GC_KEYWORD: u64 = 0x1;
/// Verbose: `GCAllocationTick` is a verbose event.
const VERBOSE: u32 = 5;
/// `GCAllocationTick` (versions 2 and 3 on .NET Core 3.x).
const ALLOCATION_TICK: u32 = 10;
/// `MethodDCEndVerbose`: a method's code range and names, in the rundown.
pub(crate) const METHOD_DC_END_VERBOSE: u32 = 144;

/// What the agent defined, so the tick records reuse its names and avoid its stack ids.
#[derive(Debug, Default)]
pub(crate) struct AgentIds {
    pub(crate) classes: HashSet<u64>,
    pub(crate) functions: HashSet<u64>,
    pub(crate) max_stack: u32,
    pub(crate) start_unix_ns: u64,
}

impl AgentIds {
    /// Notes a record of the agent's stream.
    pub(crate) fn observe(&mut self, record: &Record) {
        match record {
            Record::ClassDef(c) => {
                self.classes.insert(c.id);
            }
            Record::FunctionDef(f) => {
                self.functions.insert(f.id);
            }
            Record::StackDef(s) => self.max_stack = self.max_stack.max(s.id),
            Record::SessionStart(s) => self.start_unix_ns = s.start_unix_ns,
            _ => {}
        }
    }
}

/// Whether `record` is one [`AgentIds`] needs.
pub(crate) fn is_definition(record: &Record) -> bool {
    matches!(
        record,
        Record::ClassDef(_)
            | Record::FunctionDef(_)
            | Record::StackDef(_)
            | Record::SessionStart(_)
    )
}

/// Starts the thread that reads the allocation ticks if the agent leaves them to the CLI:
/// `reader` says who reads them once the agent sent it ([`TickReader`]). `exited` tells the
/// thread to give up waiting.
pub(crate) fn start(
    pid: u32,
    exited: Arc<AtomicBool>,
    reader: impl Fn() -> Option<TickReader> + Send + 'static,
) -> std::io::Result<EventSession> {
    let cli_reads = move || reader().map(|r| r == TickReader::Cli);
    EventSession::start(pid, exited, cli_reads, GC_KEYWORD, VERBOSE)
}

/// Which events the conversion needs.
fn wanted(m: &EventMetadata) -> bool {
    (m.provider == RUNTIME && m.event_id == ALLOCATION_TICK)
        || (m.provider == RUNDOWN && m.event_id == METHOD_DC_END_VERBOSE)
}

/// A `GCAllocationTick`'s payload (versions 2 and 3 share the fields used here).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tick {
    bytes: u64,
    large: bool,
    type_id: u64,
    type_name: String,
}

/// Version 2 and 3: u32 amount, u32 kind (0 small, 1 large object heap), u16 runtime
/// instance, u64 amount, pointer type id, NUL-terminated UTF-16 type name, u32 heap index
/// (then, in version 3, the object's address).
fn parse_tick(payload: &[u8], pointer: usize) -> Option<Tick> {
    let kind = u32_at(payload, 4)?;
    let bytes = u64_at(payload, 10)?;
    let type_id = pointer_at(payload, 18, pointer)?;
    let mut at = 18 + pointer;
    let type_name = utf16z_at(payload, &mut at)?;
    Some(Tick {
        bytes,
        large: kind == 1,
        type_id,
        type_name,
    })
}

/// A method from the rundown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Method {
    pub(crate) id: u64,
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) token: u32,
    pub(crate) type_name: String,
    pub(crate) name: String,
    pub(crate) signature: String,
}

/// `MethodDCEndVerbose` (versions 0 to 2): u64 method id, u64 module id, u64 code start, u32
/// code size, u32 token, u32 flags, namespace (the declaring type), name, signature.
pub(crate) fn parse_method(payload: &[u8]) -> Option<Method> {
    let mut at = 36;
    let type_name = utf16z_at(payload, &mut at)?;
    let name = utf16z_at(payload, &mut at)?;
    let signature = utf16z_at(payload, &mut at)?;
    Some(Method {
        id: u64_at(payload, 0)?,
        start: u64_at(payload, 16)?,
        size: u64::from(u32_at(payload, 24)?),
        token: u32_at(payload, 28)?,
        type_name,
        name,
        signature,
    })
}

fn pointer_at(b: &[u8], at: usize, pointer: usize) -> Option<u64> {
    if pointer == 4 {
        u32_at(b, at).map(u64::from)
    } else {
        u64_at(b, at)
    }
}

/// What the conversion found, for the user.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TickSummary {
    /// Ticks turned into records.
    pub ticks: u64,
    /// Ticks whose payload could not be read.
    pub unreadable: u64,
    /// Stack frames no rundown method contained (left out of the stacks).
    pub unresolved_frames: u64,
    /// Why the stream was incomplete, if it was.
    pub incomplete: Option<String>,
}

/// Turns a session's stream into trace records: definitions first, then the allocations.
pub(crate) fn tick_records(bytes: &[u8], agent: &AgentIds) -> (Vec<Record>, TickSummary) {
    let trace = nettrace::parse(bytes, wanted);
    let mut summary = TickSummary {
        incomplete: trace.incomplete.clone(),
        ..TickSummary::default()
    };
    let pointer = trace.trace.map_or(8, |t| t.pointer_size as usize);
    let is = |e: &nettrace::Event, provider: &str, id: u32| {
        trace
            .metadata_of(e)
            .is_some_and(|m| m.provider == provider && m.event_id == id)
    };
    let mut methods: Vec<Method> = trace
        .events
        .iter()
        .filter(|e| is(e, RUNDOWN, METHOD_DC_END_VERBOSE))
        .filter_map(|e| parse_method(&e.payload))
        .filter(|m| m.size > 0)
        .collect();
    methods.sort_by_key(|m| m.start);
    let mut out = Vec::new();
    let mut defined_classes = HashSet::new();
    let mut defined_functions = HashSet::new();
    let mut stacks = StackInterner::new(agent.max_stack);
    let mut allocations = Vec::new();
    for e in trace
        .events
        .iter()
        .filter(|e| is(e, RUNTIME, ALLOCATION_TICK))
    {
        let Some(tick) = parse_tick(&e.payload, pointer) else {
            summary.unreadable += 1;
            continue;
        };
        summary.ticks += 1;
        if !agent.classes.contains(&tick.type_id) && defined_classes.insert(tick.type_id) {
            out.push(Record::ClassDef(ClassDef {
                id: tick.type_id,
                module: 0,
                token: 0,
                name: csharp_type_name(&tick.type_name),
            }));
        }
        // Innermost first; each address is a return address (or the point of a call), so the
        // byte before it is inside the calling method.
        let mut frames = Vec::new();
        for &ip in trace.stack_of(e) {
            match method_at(&methods, ip.saturating_sub(1)) {
                Some(m) => {
                    if !agent.functions.contains(&m.id) && defined_functions.insert(m.id) {
                        out.push(Record::FunctionDef(FunctionDef {
                            id: m.id,
                            class: 0,
                            module: 0,
                            token: m.token,
                            type_name: csharp_type_name(&m.type_name),
                            method_name: m.name.clone(),
                            signature: csharp_signature(&m.name, &m.signature),
                        }));
                    }
                    frames.push(m.id);
                }
                None => summary.unresolved_frames += 1,
            }
        }
        let stack = stacks.intern(&frames, &mut out);
        let ts = trace.trace.map_or(0, |t| {
            let since_sync = e.timestamp.saturating_sub(t.sync_timestamp) as u128 * 1_000_000_000
                / u128::from(t.frequency.max(1));
            (u128::from(t.sync_unix_ns) + since_sync)
                .saturating_sub(u128::from(agent.start_unix_ns))
                .min(u128::from(u64::MAX)) as u64
        });
        let mut flags = Allocation::TICK;
        if tick.large {
            flags |= Allocation::LARGE_OBJECT_HEAP;
        }
        if tick.type_name.ends_with(']') {
            flags |= Allocation::ARRAY;
        }
        allocations.push(Record::Allocation(Allocation {
            ts,
            tid: u32::try_from(e.thread_id).unwrap_or(0),
            class: tick.type_id,
            size: tick.bytes,
            stack,
            interval: ALLOCATION_TICK_BYTES,
            flags,
            array_length: 0,
        }));
    }
    out.extend(allocations);
    for (name, value) in [
        ("allocation_ticks_unreadable", summary.unreadable),
        (
            "allocation_ticks_unresolved_frames",
            summary.unresolved_frames,
        ),
    ] {
        out.push(Record::Counter(Counter {
            ts: 0,
            name: name.into(),
            value,
        }));
    }
    (out, summary)
}

/// The method whose code contains `ip`.
pub(crate) fn method_at(methods: &[Method], ip: u64) -> Option<&Method> {
    let i = methods.partition_point(|m| m.start <= ip);
    let m = methods.get(i.checked_sub(1)?)?;
    (ip - m.start < m.size).then_some(m)
}

/// Stack tree nodes for the tick stacks, numbered after the agent's.
pub(crate) struct StackInterner {
    nodes: HashMap<(u32, u64), u32>,
    next: u32,
}

impl StackInterner {
    pub(crate) fn new(after: u32) -> StackInterner {
        StackInterner {
            nodes: HashMap::new(),
            next: after.saturating_add(1),
        }
    }

    /// The node of `frames` (innermost first), defining the nodes that are new.
    pub(crate) fn intern(&mut self, frames: &[u64], out: &mut Vec<Record>) -> u32 {
        let mut parent = 0;
        for &frame in frames.iter().rev() {
            parent = match self.nodes.get(&(parent, frame)) {
                Some(&id) => id,
                None => {
                    let id = self.next;
                    self.next = self.next.saturating_add(1);
                    self.nodes.insert((parent, frame), id);
                    out.push(Record::StackDef(StackDef {
                        id,
                        parent,
                        frame_kind: FrameKind::Managed,
                        frame,
                        il: Default::default(),
                    }));
                    id
                }
            };
        }
        parent
    }
}

/// The C# keyword of a runtime type name, or of an IL signature's type.
fn csharp_alias(name: &str) -> Option<&'static str> {
    Some(match name {
        "System.Boolean" | "bool" => "bool",
        "System.Byte" | "uint8" | "unsigned int8" => "byte",
        "System.SByte" | "int8" => "sbyte",
        "System.Char" | "char" | "wchar" => "char",
        "System.Int16" | "int16" => "short",
        "System.UInt16" | "uint16" | "unsigned int16" => "ushort",
        "System.Int32" | "int32" => "int",
        "System.UInt32" | "uint32" | "unsigned int32" => "uint",
        "System.Int64" | "int64" => "long",
        "System.UInt64" | "uint64" | "unsigned int64" => "ulong",
        "System.Single" | "float32" => "float",
        "System.Double" | "float64" => "double",
        "System.Decimal" => "decimal",
        "System.String" | "string" => "string",
        "System.Object" | "object" => "object",
        "System.IntPtr" | "native int" => "IntPtr",
        "System.UIntPtr" | "native unsigned int" => "UIntPtr",
        "void" => "void",
        // The placeholder of shared generic code, written as the agent writes it.
        "System.__Canon" => "__Canon",
        _ => return None,
    })
}

/// A runtime type name as the agent writes it: `System.Int32[]` is `int[]`,
/// ``System.Collections.Generic.List`1[System.String]`` is
/// `System.Collections.Generic.List<string>`.
pub(crate) fn csharp_type_name(name: &str) -> String {
    let name = name.trim();
    // Array suffixes: `[]`, `[,]`, `[][]`.
    if let Some(open) = array_suffix_start(name) {
        return format!("{}{}", csharp_type_name(&name[..open]), &name[open..]);
    }
    if let Some(tick) = name.find('`')
        && let Some(open) = name[tick..].find('[').map(|i| tick + i)
        && name.ends_with(']')
    {
        let args: Vec<String> = split_top_level(&name[open + 1..name.len() - 1])
            .into_iter()
            .map(|a| csharp_type_name(a.trim_matches(|c| c == '[' || c == ']')))
            .collect();
        return format!("{}<{}>", &name[..tick], args.join(", "));
    }
    let plain = name.split('`').next().unwrap_or(name);
    csharp_alias(plain).map_or_else(|| plain.to_string(), str::to_string)
}

/// Where a trailing run of array brackets (`[]`, `[,]`) starts, if the name ends with one.
fn array_suffix_start(name: &str) -> Option<usize> {
    let mut end = name.len();
    let mut start = None;
    while name[..end].ends_with(']') {
        let open = name[..end].rfind('[')?;
        if !name[open + 1..end - 1].chars().all(|c| c == ',') {
            break;
        }
        start = Some(open);
        end = open;
    }
    start
}

/// Splits at the commas not inside brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut from = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '<' | '(' => depth += 1,
            ']' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    if !s.is_empty() {
        parts.push(&s[from..]);
    }
    parts
}

/// The parameter list of a rundown signature (`void  (int32,class System.String)`) as the
/// agent writes it: `(int, string)`.
pub(crate) fn csharp_parameters(signature: &str) -> String {
    let Some(open) = signature.find('(') else {
        return String::new();
    };
    let inner = signature[open + 1..].trim_end().trim_end_matches(')');
    let params: Vec<String> = split_top_level(inner)
        .into_iter()
        .map(csharp_signature_type)
        .collect();
    format!("({})", params.join(", "))
}

/// The signature of method `method` as the agent writes it: the parameters, and for a
/// conversion operator (`op_Implicit`, `op_Explicit`, which C# overloads by return type)
/// its return type too: `(Money) -> int`.
pub(crate) fn csharp_signature(method: &str, signature: &str) -> String {
    let params = csharp_parameters(signature);
    if !matches!(method, "op_Implicit" | "op_Explicit") {
        return params;
    }
    let Some(open) = signature.find('(') else {
        return params;
    };
    let ret = signature[..open].trim();
    let ret = ret.strip_prefix("instance ").unwrap_or(ret);
    format!("{params} -> {}", csharp_signature_type(ret))
}

/// One type of a rundown signature (`class System.String`, `valuetype Money`, `uint8[]`,
/// `int64&`) as the agent writes it (`string`, `Money`, `byte[]`, `ref long`).
fn csharp_signature_type(t: &str) -> String {
    let t = t.trim();
    let t = t
        .strip_prefix("class ")
        .or_else(|| t.strip_prefix("valuetype "))
        .unwrap_or(t);
    let (base, suffix) = match array_suffix_start(t) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let (base, by_ref) = match base.strip_suffix('&') {
        Some(b) => (b, "ref "),
        None => (base, ""),
    };
    let base = csharp_alias(base).map_or_else(|| base.to_string(), str::to_string);
    format!("{by_ref}{base}{suffix}")
}

/// The ticks per type, for tests and the summary line: bytes by type name.
#[cfg(test)]
fn bytes_by_type(records: &[Record]) -> std::collections::BTreeMap<String, u64> {
    let names: HashMap<u64, String> = records
        .iter()
        .filter_map(|r| match r {
            Record::ClassDef(c) => Some((c.id, c.name.clone())),
            _ => None,
        })
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for r in records {
        if let Record::Allocation(a) = r {
            *out.entry(names[&a.class].clone()).or_default() += a.size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend_from_slice(&[0, 0]);
        v
    }

    fn tick_payload(bytes: u64, kind: u32, type_id: u64, name: &str) -> Vec<u8> {
        let mut v = (bytes as u32).to_le_bytes().to_vec();
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(&7u16.to_le_bytes());
        v.extend_from_slice(&bytes.to_le_bytes());
        v.extend_from_slice(&type_id.to_le_bytes());
        v.extend(utf16z(name));
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&0xdead_0000u64.to_le_bytes());
        v
    }

    #[test]
    fn reads_a_version_3_tick() {
        let p = tick_payload(104_664, 1, 0x7f00_1234, "System.Byte[]");
        assert_eq!(
            parse_tick(&p, 8),
            Some(Tick {
                bytes: 104_664,
                large: true,
                type_id: 0x7f00_1234,
                type_name: "System.Byte[]".into()
            })
        );
        for len in 0..p.len() - 12 {
            assert_eq!(parse_tick(&p[..len], 8), None, "{len}");
        }
    }

    #[test]
    fn reads_a_rundown_method() {
        let mut p = Vec::new();
        for v in [0x11u64, 0x22, 0x4000] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        for v in [0x80u32, 0x0600_0002, 0] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend(utf16z("Memory.Program"));
        p.extend(utf16z("Churn"));
        p.extend(utf16z("void  (int32)"));
        p.extend_from_slice(&7u16.to_le_bytes());
        let m = parse_method(&p).unwrap();
        assert_eq!(
            m,
            Method {
                id: 0x11,
                start: 0x4000,
                size: 0x80,
                token: 0x0600_0002,
                type_name: "Memory.Program".into(),
                name: "Churn".into(),
                signature: "void  (int32)".into(),
            }
        );
        let methods = [m];
        assert_eq!(method_at(&methods, 0x3fff), None);
        assert_eq!(method_at(&methods, 0x4000).map(|m| m.id), Some(0x11));
        assert_eq!(method_at(&methods, 0x407f).map(|m| m.id), Some(0x11));
        assert_eq!(method_at(&methods, 0x4080), None);
    }

    #[test]
    fn names_follow_the_agent() {
        assert_eq!(csharp_type_name("System.Int32[]"), "int[]");
        assert_eq!(csharp_type_name("System.Byte[,][]"), "byte[,][]");
        assert_eq!(csharp_type_name("Memory.Small"), "Memory.Small");
        assert_eq!(
            csharp_type_name("System.Collections.Generic.Dictionary`2[System.String,System.Int32]"),
            "System.Collections.Generic.Dictionary<string, int>"
        );
        assert_eq!(csharp_parameters("void  (int32)"), "(int)");
        assert_eq!(
            csharp_parameters("instance class System.String  (class System.String,uint8[],int64&)"),
            "(string, byte[], ref long)"
        );
        assert_eq!(csharp_parameters("void  ()"), "()");
        assert_eq!(
            csharp_parameters("class System.String  (unsigned int32,int32)"),
            "(uint, int)"
        );
        assert_eq!(
            csharp_type_name("System.Collections.Generic.List`1[System.Int32]"),
            "System.Collections.Generic.List<int>"
        );
        // Shared generic code, and conversion operators with their return type.
        assert_eq!(
            csharp_type_name(
                "System.Collections.Generic.Dictionary`2[System.__Canon,System.Int32]"
            ),
            "System.Collections.Generic.Dictionary<__Canon, int>"
        );
        assert_eq!(
            csharp_signature("op_Implicit", "int32  (valuetype Money)"),
            "(Money) -> int"
        );
        assert_eq!(
            csharp_signature("op_Explicit", "class System.String  (valuetype Money)"),
            "(Money) -> string"
        );
        assert_eq!(
            csharp_signature("Parse", "int32  (class System.String)"),
            "(string)"
        );
    }

    #[test]
    fn stacks_are_numbered_after_the_agents_and_shared() {
        let mut out = Vec::new();
        let mut s = StackInterner::new(41);
        let a = s.intern(&[3, 2, 1], &mut out);
        let b = s.intern(&[4, 2, 1], &mut out);
        assert_eq!(s.intern(&[3, 2, 1], &mut out), a);
        assert_eq!((a, b), (44, 45));
        let defs: Vec<(u32, u32, u64)> = out
            .iter()
            .map(|r| match r {
                Record::StackDef(d) => (d.id, d.parent, d.frame),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(defs, [(42, 0, 1), (43, 42, 2), (44, 43, 3), (45, 43, 4)]);
        assert_eq!(s.intern(&[], &mut out), 0);
    }

    #[test]
    fn a_stream_that_is_not_nettrace_gives_no_records_and_says_why() {
        let (records, summary) = tick_records(b"not a trace", &AgentIds::default());
        assert!(summary.incomplete.is_some());
        assert_eq!(summary.ticks, 0);
        assert!(bytes_by_type(&records).is_empty());
    }
}
