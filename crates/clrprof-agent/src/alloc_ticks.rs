//! `--alloc ticks` where the runtime offers in-process EventPipe sessions
//! (`ICorProfilerInfo12`, .NET 5 and later): the runtime's own `GCAllocationTick` events,
//! delivered to the agent's `EventPipeEventDelivered`, become `Allocation` records flagged
//! [`Allocation::TICK`], as the CLI makes them from the diagnostics socket on older runtimes.
//!
//! The runtime writes a tick each time it has handed out about 100 KiB on a heap since the
//! previous one, naming the type of the object being allocated at that moment
//! (docs/memory-profiling.md). A profiler's session is synchronous: the runtime
//! calls `EventPipeEventDelivered` inside the write, on the writing thread, and for this event
//! that is the allocating thread, inside the allocation. The event names its thread as null,
//! "the thread you are on" (a thread id equal to the current one means the same). There the
//! agent walks the thread's managed stack itself, exactly as for `ObjectAllocated`
//! (`DoStackSnapshot` on the current thread: the innermost frame is the allocating method).
//! An event delivered on another thread would get the stack EventPipe attached to it, mapped
//! to functions, or none (counted; .NET 8.0.4 delivers every tick on the allocating thread and
//! attaches no stacks to a profiler's session).
//!
//! No `ObjectAllocated` callback is asked for, so allocations stay on the runtime's fast path;
//! no diagnostics socket, method rundown or conversion in the CLI is needed. The callback does
//! not block beyond the stack table's short lock and never grows memory without bound: the
//! record goes into the transport's fixed buffer and is dropped and counted
//! (`allocations_dropped`) when that is full.
//!
//! Whether the agent or the CLI reads the ticks is decided by asking for the session (the SDK
//! finds the interfaces by QueryInterface, so a runtime without `ICorProfilerInfo12` refuses
//! it with `NotSupported`), and told to the CLI with [`TickReader`].

use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_sdk::info::EventPipeLevel;
use clrprof_sdk::{ClassId, EventPipeEvent, FunctionId};
use clrprof_trace::Allocation;
use clrprof_trace::protocol::{ALLOCATION_TICK_BYTES, TickReader};

use crate::config::AllocMode;
use crate::recorder::sys;
use crate::runtime_events::{RuntimeSession, is_runtime_provider};
use crate::session::Session;
use crate::stacks::ManagedFrame;

/// `GCKeyword`: garbage collections and, at verbose level, the allocation ticks.
const GC_KEYWORD: u64 = 0x1;
/// The event id of `GCAllocationTick` (every version).
const ALLOCATION_TICK: u32 = 10;
/// Deepest stack taken from an event's own frames.
const MAX_EVENT_FRAMES: usize = 256;

/// The agent's EventPipe session, once started.
static SESSION: RuntimeSession = RuntimeSession::new("allocation ticks");

/// What happened to the ticks, written into the trace.
struct TickStats {
    /// Ticks delivered to the agent.
    delivered: AtomicU64,
    /// Ticks whose payload could not be read (dropped).
    unreadable: AtomicU64,
    /// Ticks delivered on another thread than the allocating one.
    other_thread: AtomicU64,
    /// Frames of an event's own stack that are in no managed function (left out).
    unresolved_frames: AtomicU64,
}

static STATS: TickStats = TickStats {
    delivered: AtomicU64::new(0),
    unreadable: AtomicU64::new(0),
    other_thread: AtomicU64::new(0),
    unresolved_frames: AtomicU64::new(0),
};

/// The counters, for `Session::write_counters`: with `alloc=ticks`, who reads the ticks, and
/// what became of them when the agent does.
pub fn counters(s: &Session) -> Vec<(&'static str, u64)> {
    let Some(reader) = reader(s) else {
        return Vec::new();
    };
    let mut counters = vec![(TickReader::COUNTER, reader.value())];
    if reader == TickReader::Agent {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        counters.extend([
            ("allocation_ticks", load(&STATS.delivered)),
            ("allocation_ticks_unreadable", load(&STATS.unreadable)),
            ("allocation_ticks_other_thread", load(&STATS.other_thread)),
            (
                "allocation_ticks_unresolved_frames",
                load(&STATS.unresolved_frames),
            ),
        ]);
    }
    counters
}

/// Who reads the ticks (`None` without `alloc=ticks`).
fn reader(s: &Session) -> Option<TickReader> {
    (s.config.alloc == AllocMode::Ticks).then(|| {
        if reads_ticks() {
            TickReader::Agent
        } else {
            TickReader::Cli
        }
    })
}

/// With `alloc=ticks`: starts the in-process session (the runtime provider's GC keyword at
/// verbose level, where the ticks are); says who reads the ticks, for the CLI (`None` without
/// `alloc=ticks`).
pub fn start(s: &Session) -> Option<TickReader> {
    if s.config.alloc != AllocMode::Ticks {
        return None;
    }
    // An attach after a detach counts its own ticks.
    for counter in [
        &STATS.delivered,
        &STATS.unreadable,
        &STATS.other_thread,
        &STATS.unresolved_frames,
    ] {
        counter.store(0, Ordering::Relaxed);
    }
    SESSION.start(s, GC_KEYWORD, EventPipeLevel::VERBOSE);
    reader(s)
}

/// Whether the agent reads the ticks (its session started).
pub fn reads_ticks() -> bool {
    SESSION.started()
}

/// Stops the session, if one runs (at shutdown).
pub fn stop(s: &Session) {
    SESSION.stop(s);
}

/// Handles one event of the agent's session: a `GCAllocationTick` becomes an `Allocation`.
pub fn event_delivered(s: &Session, event: &EventPipeEvent<'_>) {
    if event.event_id != ALLOCATION_TICK
        || s.config.alloc != AllocMode::Ticks
        || !is_runtime_provider(s, event.provider)
    {
        return;
    }
    STATS.delivered.fetch_add(1, Ordering::Relaxed);
    let Some(tick) = AllocationTick::read(event.event_version, event.data) else {
        STATS.unreadable.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let on_this_thread = event.thread.is_null()
        || matches!(s.info.get_current_thread_id(), Ok(t) if t == event.thread);
    let stack = if on_this_thread {
        crate::alloc::current_stack(s)
    } else {
        STATS.other_thread.fetch_add(1, Ordering::Relaxed);
        event_stack(s, event.stack)
    };
    let class = ClassId(tick.type_id as usize);
    s.defs.class(&s.info, &s.out, class);
    let mut flags = Allocation::TICK;
    if tick.allocation_kind == AllocationKind::LARGE {
        flags |= Allocation::LARGE_OBJECT_HEAP;
    }
    if matches!(s.info.is_array_class(class), Ok(Some(_))) {
        flags |= Allocation::ARRAY;
    }
    crate::alloc::write(
        s,
        &Allocation {
            ts: s.now(),
            tid: sys::gettid(),
            class: class.as_u64(),
            size: tick.allocation_amount64,
            stack,
            interval: ALLOCATION_TICK_BYTES,
            flags,
            array_length: 0,
        },
    );
}

/// The stack EventPipe attached to an event (return addresses, innermost first), as managed
/// functions; addresses in no managed function are left out and counted.
fn event_stack(s: &Session, ips: &[usize]) -> u32 {
    let mut frames = [ManagedFrame::default(); MAX_EVENT_FRAMES];
    let mut depth = 0;
    for &ip in ips {
        if depth == frames.len() {
            break;
        }
        // A return address: the byte before it is inside the calling method.
        match s.info.get_function_from_ip(ip.saturating_sub(1)) {
            Ok(f) if f != FunctionId::NULL => {
                frames[depth] = ManagedFrame { function: f.0, ip };
                depth += 1;
            }
            _ => {
                STATS.unresolved_frames.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let truncated = depth == frames.len() && ips.len() > depth;
    crate::alloc::intern_managed(s, &frames[..depth], truncated)
}

/// `AllocationKind` of `GCAllocationTick` (the manifest's `GCAllocationKindMap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationKind(pub u32);

impl AllocationKind {
    /// The small object heap.
    pub const SMALL: AllocationKind = AllocationKind(0);
    /// The large object heap.
    pub const LARGE: AllocationKind = AllocationKind(1);
    /// The pinned object heap (.NET 5 and later).
    pub const PINNED: AllocationKind = AllocationKind(2);
}

/// A `GCAllocationTick` payload, field by field as the runtime's manifest
/// (`src/coreclr/vm/ClrEtwAll.man`) lays out its templates:
///
/// - version 2: `AllocationAmount` u32, `AllocationKind` u32, `ClrInstanceID` u16,
///   `AllocationAmount64` u64, `TypeID` pointer, `TypeName` NUL-terminated UTF-16,
///   `HeapIndex` u32;
/// - version 3 (CoreCLR 3.1) adds `Address` (pointer);
/// - version 4 (.NET 7 and later; .NET 8.0.4 sends it) adds `ObjectSize` (u64).
///
/// Pointers have the process's size: the agent reads events of its own process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationTick<'a> {
    /// Bytes since the previous tick, truncated to 32 bits.
    pub allocation_amount: u32,
    /// The heap of the allocation.
    pub allocation_kind: AllocationKind,
    /// The runtime instance.
    pub clr_instance_id: u16,
    /// Bytes handed out since the previous tick on this heap: what the tick stands for.
    pub allocation_amount64: u64,
    /// The allocated object's type: its `TypeHandle`, the profiling API's `ClassID`.
    pub type_id: u64,
    /// The type's name as the runtime formats it (`System.Int32[]`), UTF-16LE without its NUL.
    pub type_name: &'a [u8],
    /// The GC heap (0 with workstation GC).
    pub heap_index: u32,
    /// The object's address (version 3 and later).
    pub address: Option<u64>,
    /// The object's size in bytes (version 4 and later).
    pub object_size: Option<u64>,
}

impl<'a> AllocationTick<'a> {
    /// Reads a payload of `version`; `None` for versions before 2 (no type) or a payload too
    /// short for its version.
    pub fn read(version: u32, payload: &'a [u8]) -> Option<AllocationTick<'a>> {
        if version < 2 {
            return None;
        }
        let mut r = Fields { payload, at: 0 };
        let allocation_amount = r.u32()?;
        let allocation_kind = AllocationKind(r.u32()?);
        let clr_instance_id = r.u16()?;
        let allocation_amount64 = r.u64()?;
        let type_id = r.pointer()?;
        let type_name = r.utf16z()?;
        let heap_index = r.u32()?;
        let address = if version >= 3 {
            Some(r.pointer()?)
        } else {
            None
        };
        let object_size = if version >= 4 { Some(r.u64()?) } else { None };
        Some(AllocationTick {
            allocation_amount,
            allocation_kind,
            clr_instance_id,
            allocation_amount64,
            type_id,
            type_name,
            heap_index,
            address,
            object_size,
        })
    }
}

/// Reads little-endian fields in order, without allocating.
pub(crate) struct Fields<'a> {
    payload: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    /// Fields from the start of `payload`.
    pub(crate) fn new(payload: &'a [u8]) -> Fields<'a> {
        Fields { payload, at: 0 }
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take().map(u8::from_le_bytes)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.payload.get(self.at..self.at.checked_add(N)?)?;
        self.at += N;
        bytes.try_into().ok()
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    pub(crate) fn pointer(&mut self) -> Option<u64> {
        match size_of::<usize>() {
            4 => self.u32().map(u64::from),
            _ => self.u64(),
        }
    }

    /// A NUL-terminated UTF-16 string: its bytes without the NUL.
    pub(crate) fn utf16z(&mut self) -> Option<&'a [u8]> {
        let rest = self.payload.get(self.at..)?;
        let len = rest.chunks_exact(2).position(|c| c == [0, 0])? * 2;
        self.at += len + 2;
        Some(&rest[..len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend_from_slice(&[0, 0]);
        v
    }

    /// A version-4 payload as .NET 8 writes it.
    fn v4(amount: u64, kind: u32, type_id: u64, name: &str, size: u64) -> Vec<u8> {
        let mut p = (amount as u32).to_le_bytes().to_vec();
        p.extend_from_slice(&kind.to_le_bytes());
        p.extend_from_slice(&7u16.to_le_bytes());
        p.extend_from_slice(&amount.to_le_bytes());
        p.extend_from_slice(&type_id.to_le_bytes());
        p.extend(utf16z(name));
        p.extend_from_slice(&3u32.to_le_bytes());
        p.extend_from_slice(&0x7f00_dead_0000u64.to_le_bytes());
        p.extend_from_slice(&size.to_le_bytes());
        p
    }

    #[test]
    fn reads_every_field_of_a_version_4_tick() {
        let p = v4(104_664, 1, 0x7f00_1234, "System.Byte[]", 4_024);
        let tick = AllocationTick::read(4, &p).unwrap();
        assert_eq!(tick.allocation_amount, 104_664);
        assert_eq!(tick.allocation_kind, AllocationKind::LARGE);
        assert_eq!(tick.clr_instance_id, 7);
        assert_eq!(tick.allocation_amount64, 104_664);
        assert_eq!(tick.type_id, 0x7f00_1234);
        assert_eq!(tick.type_name, &utf16z("System.Byte[]")[..26]);
        assert_eq!(tick.heap_index, 3);
        assert_eq!(tick.address, Some(0x7f00_dead_0000));
        assert_eq!(tick.object_size, Some(4_024));
    }

    #[test]
    fn older_versions_have_fewer_fields_and_cut_payloads_are_refused() {
        let p = v4(104_664, 0, 0x7f00_1234, "Memory.Small", 32);
        let v3 = AllocationTick::read(3, &p[..p.len() - 8]).unwrap();
        assert_eq!((v3.address, v3.object_size), (Some(0x7f00_dead_0000), None));
        assert_eq!(v3.allocation_kind, AllocationKind::SMALL);
        let v2 = AllocationTick::read(2, &p[..p.len() - 16]).unwrap();
        assert_eq!((v2.address, v2.heap_index), (None, 3));
        // Every shorter payload misses a field of its version.
        for (version, full) in [(4, p.len()), (3, p.len() - 8), (2, p.len() - 16)] {
            for len in 0..full {
                assert_eq!(AllocationTick::read(version, &p[..len]), None, "{len}");
            }
        }
        // Versions 0 and 1 name no type.
        assert_eq!(AllocationTick::read(1, &p), None);
    }
}
