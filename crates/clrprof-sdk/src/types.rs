//! Typed values the runtime passes to callbacks: reasons, kinds and flag sets.
//!
//! The runtime sends every enumeration as a plain 32-bit integer, and a newer runtime may send
//! a value this SDK has never heard of. So each enumeration here is a `#[repr(transparent)]`
//! newtype over the raw integer with one associated constant per known value, not a Rust
//! `enum`: any integer is a valid value, unknown ones included. `Debug` prints the constant's
//! name (`SuspendReason::FOR_GC`) or, for an unknown value, the number
//! (`SuspendReason(42)`). Combinable values are [`bitflags`] sets.
#![forbid(unsafe_code)]

use core::fmt;

use clrprof_sys as sys;

use crate::ids::ThreadId;

/// Declares an open enumeration: a newtype over the raw integer with named constants.
macro_rules! open_enum {
    (
        $(#[$attr:meta])*
        $name:ident($raw:ty) {
            $( $(#[$vattr:meta])* $variant:ident = $value:expr, )*
        }
    ) => {
        $(#[$attr])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $raw);

        impl $name {
            $( $(#[$vattr])* pub const $variant: $name = $name($value); )*

            /// Every value this SDK knows, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// The constant's name (`"FOR_GC"`), or `None` for a value this SDK does not know.
            pub fn name(self) -> Option<&'static str> {
                $( if self == $name::$variant { return Some(stringify!($variant)); } )*
                None
            }

            /// True when the value is one of the named constants.
            pub fn is_known(self) -> bool {
                self.name().is_some()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => write!(f, concat!(stringify!($name), "::{}"), name),
                    None => write!(f, concat!(stringify!($name), "({})"), self.0),
                }
            }
        }

        impl From<$raw> for $name {
            fn from(raw: $raw) -> Self {
                $name(raw)
            }
        }

        impl From<$name> for $raw {
            fn from(value: $name) -> Self {
                value.0
            }
        }
    };
}

open_enum! {
    /// Why the runtime is suspending managed threads (`RuntimeSuspendStarted`).
    SuspendReason(u32) {
        /// Any other reason.
        OTHER = sys::COR_PRF_SUSPEND_OTHER,
        /// To collect garbage.
        FOR_GC = sys::COR_PRF_SUSPEND_FOR_GC,
        /// To shut an application domain down.
        FOR_APPDOMAIN_SHUTDOWN = sys::COR_PRF_SUSPEND_FOR_APPDOMAIN_SHUTDOWN,
        /// To discard JIT-compiled code.
        FOR_CODE_PITCHING = sys::COR_PRF_SUSPEND_FOR_CODE_PITCHING,
        /// Because the runtime is shutting down.
        FOR_SHUTDOWN = sys::COR_PRF_SUSPEND_FOR_SHUTDOWN,
        /// For an in-process debugger.
        FOR_INPROC_DEBUGGER = sys::COR_PRF_SUSPEND_FOR_INPROC_DEBUGGER,
        /// To prepare for a garbage collection.
        FOR_GC_PREP = sys::COR_PRF_SUSPEND_FOR_GC_PREP,
        /// To install ReJIT'd code.
        FOR_REJIT = sys::COR_PRF_SUSPEND_FOR_REJIT,
        /// Because a profiler called `SuspendRuntime`.
        FOR_PROFILER = sys::COR_PRF_SUSPEND_FOR_PROFILER,
    }
}

open_enum! {
    /// Why a garbage collection started (`GarbageCollectionStarted`).
    GcReason(u32) {
        /// The GC decided to collect by itself.
        OTHER = sys::COR_PRF_GC_OTHER,
        /// `GC.Collect` or `ForceGC` asked for it.
        INDUCED = sys::COR_PRF_GC_INDUCED,
    }
}

open_enum! {
    /// Direction of a managed/unmanaged transition.
    TransitionReason(u32) {
        /// Code calls across the boundary.
        CALL = sys::COR_PRF_TRANSITION_CALL,
        /// Code returns across the boundary.
        RETURN = sys::COR_PRF_TRANSITION_RETURN,
    }
}

open_enum! {
    /// Outcome of a search for precompiled code (`JITCachedFunctionSearchFinished`).
    JitCacheResult(u32) {
        /// Precompiled code was found and will be used.
        FOUND = sys::COR_PRF_CACHED_FUNCTION_FOUND,
        /// No usable precompiled code; the method will be JIT-compiled.
        NOT_FOUND = sys::COR_PRF_CACHED_FUNCTION_NOT_FOUND,
    }
}

open_enum! {
    /// Where a GC root lives (`RootReferences2`).
    GcRootKind(u32) {
        /// Anything not listed below.
        OTHER = sys::COR_PRF_GC_ROOT_OTHER,
        /// A local variable or argument on a thread's stack.
        STACK = sys::COR_PRF_GC_ROOT_STACK,
        /// The finalization queue.
        FINALIZER = sys::COR_PRF_GC_ROOT_FINALIZER,
        /// A GC handle.
        HANDLE = sys::COR_PRF_GC_ROOT_HANDLE,
    }
}

open_enum! {
    /// Kind of GC handle (`ICorProfilerInfo13::CreateHandle`).
    GcHandleType(u32) {
        /// Does not keep the object alive.
        WEAK = sys::COR_PRF_HANDLE_TYPE_WEAK,
        /// Keeps the object alive.
        STRONG = sys::COR_PRF_HANDLE_TYPE_STRONG,
        /// Keeps the object alive and stops it moving.
        PINNED = sys::COR_PRF_HANDLE_TYPE_PINNED,
    }
}

open_enum! {
    /// A GC generation or heap, as numbered by the profiling API.
    GcGeneration(u32) {
        /// Generation 0.
        GEN_0 = sys::COR_PRF_GC_GEN_0,
        /// Generation 1.
        GEN_1 = sys::COR_PRF_GC_GEN_1,
        /// Generation 2.
        GEN_2 = sys::COR_PRF_GC_GEN_2,
        /// The large object heap.
        LARGE_OBJECT_HEAP = sys::COR_PRF_GC_LARGE_OBJECT_HEAP,
        /// The pinned object heap (.NET 5 and later).
        PINNED_OBJECT_HEAP = sys::COR_PRF_GC_PINNED_OBJECT_HEAP,
    }
}

bitflags::bitflags! {
    /// Properties of a GC root (`RootReferences2`). Unknown bits are kept.
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct GcRootFlags: u32 {
        /// The root pins the object.
        const PINNING = sys::COR_PRF_GC_ROOT_PINNING;
        /// A weak reference.
        const WEAKREF = sys::COR_PRF_GC_ROOT_WEAKREF;
        /// The root points inside the object rather than at its start.
        const INTERIOR = sys::COR_PRF_GC_ROOT_INTERIOR;
        /// A reference-counted handle.
        const REFCOUNTED = sys::COR_PRF_GC_ROOT_REFCOUNTED;
        const _ = !0;
    }
}

bitflags::bitflags! {
    /// Properties of an object queued for finalization (`FinalizeableObjectQueued`).
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct FinalizerFlags: u32 {
        /// The object has a critical finalizer.
        const CRITICAL = sys::COR_PRF_FINALIZER_CRITICAL;
        const _ = !0;
    }
}

/// The set of generations a garbage collection covers (`GarbageCollectionStarted`).
///
/// The runtime passes one BOOL per generation; bit `g` of this set is that BOOL for generation
/// `g` (see [`GcGeneration`]). Generations past 31 are dropped.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Generations(u32);

impl Generations {
    /// No generation.
    pub const EMPTY: Generations = Generations(0);

    /// Builds the set from the runtime's per-generation flags (non-zero = collected).
    pub fn from_flags(flags: &[i32]) -> Generations {
        let bits = flags
            .iter()
            .take(32)
            .enumerate()
            .filter(|(_, collected)| **collected != 0)
            .fold(0u32, |acc, (g, _)| acc | (1 << g));
        Generations(bits)
    }

    /// Builds the set from a bit mask (bit `g` = generation `g`).
    pub const fn from_bits(bits: u32) -> Generations {
        Generations(bits)
    }

    /// The bit mask (bit `g` = generation `g`).
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// True when generation `generation` is collected.
    pub const fn contains(self, generation: GcGeneration) -> bool {
        generation.0 < 32 && self.0 & (1 << generation.0) != 0
    }

    /// True when no generation is collected.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The highest collected generation number, e.g. `GEN_2` for a full collection.
    pub fn max_generation(self) -> Option<GcGeneration> {
        (self.0 != 0).then(|| GcGeneration(31 - self.0.leading_zeros()))
    }

    /// The collected generations, lowest first.
    pub fn iter(self) -> impl Iterator<Item = GcGeneration> {
        (0..32u32)
            .filter(move |g| self.0 & (1 << g) != 0)
            .map(GcGeneration)
    }
}

impl fmt::Debug for Generations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Generations")?;
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One entry of an IL offset map: IL at `old_offset` in the original body is now at
/// `new_offset` in the instrumented body.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct IlMapEntry {
    /// Offset in the original IL.
    pub old_offset: u32,
    /// Offset of the same instruction in the new IL.
    pub new_offset: u32,
}

/// An EventPipe provider handle (`EVENTPIPE_PROVIDER`).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EventPipeProviderId(pub usize);

impl fmt::Debug for EventPipeProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventPipeProviderId({:#x})", self.0)
    }
}

/// One EventPipe event delivered to the profiler (`EventPipeEventDelivered`). Everything it
/// borrows is valid only during the callback.
#[derive(Clone, Copy, Debug)]
pub struct EventPipeEvent<'a> {
    /// The provider that wrote the event.
    pub provider: EventPipeProviderId,
    /// The event's id within its provider.
    pub event_id: u32,
    /// The event's version.
    pub event_version: u32,
    /// The event's metadata blob (its name and field descriptions).
    pub metadata: &'a [u8],
    /// The event's payload.
    pub data: &'a [u8],
    /// The activity id, if the runtime gave one.
    pub activity_id: Option<&'a sys::GUID>,
    /// The related activity id, if the runtime gave one.
    pub related_activity_id: Option<&'a sys::GUID>,
    /// The managed thread that wrote the event, or [`ThreadId::NULL`] when it is the thread
    /// the callback runs on: a profiler's session is synchronous, so events arrive on the thread
    /// that writes them, inside the write (on .NET 8.0.4 every event, the runtime's and the
    /// profiler's own, came with `NULL`).
    pub thread: ThreadId,
    /// Instruction pointers of the writing thread's stack, innermost first, when the runtime
    /// gives them (on .NET 8.0.4 it gave none, even for events defined with `need_stack`: walk
    /// the current thread's stack instead).
    pub stack: &'a [usize],
}

/// An assembly reference to declare through
/// [`AssemblyReferenceProvider`](crate::AssemblyReferenceProvider).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct AssemblyReference<'a> {
    /// The simple name, e.g. `"MyProfiler.Helpers"`.
    pub name: &'a str,
    /// Major, minor, build and revision numbers.
    pub version: [u16; 4],
    /// The culture, or `""` for a neutral assembly.
    pub locale: &'a str,
    /// The public key or its token (empty for an unsigned assembly).
    pub public_key_or_token: &'a [u8],
    /// The hash of the assembly (usually empty).
    pub hash: &'a [u8],
    /// `CorAssemblyFlags` of the reference (e.g. `afPublicKey` = 1 when a full key is given).
    pub flags: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_enums_name_known_values_and_keep_unknown_ones() {
        assert_eq!(
            format!("{:?}", SuspendReason::FOR_GC),
            "SuspendReason::FOR_GC"
        );
        assert_eq!(format!("{:?}", SuspendReason(42)), "SuspendReason(42)");
        assert_eq!(SuspendReason(9), SuspendReason::FOR_PROFILER);
        assert!(!SuspendReason(5).is_known());
        assert_eq!(GcReason::INDUCED.name(), Some("INDUCED"));
        assert_eq!(GcRootKind::KNOWN.len(), 4);
        assert_eq!(u32::from(TransitionReason::RETURN), 1);
        assert_eq!(JitCacheResult::from(1), JitCacheResult::NOT_FOUND);
        assert_eq!(
            format!("{:?}", GcHandleType::PINNED),
            "GcHandleType::PINNED"
        );
    }

    #[test]
    fn flag_sets_print_names_and_keep_unknown_bits() {
        let flags = GcRootFlags::from_bits_retain(0x1 | 0x4 | 0x100);
        assert!(flags.contains(GcRootFlags::PINNING | GcRootFlags::INTERIOR));
        assert_eq!(flags.bits(), 0x105);
        assert_eq!(
            format!("{:?}", flags),
            "GcRootFlags(PINNING | INTERIOR | 0x100)"
        );
        assert_eq!(
            format!("{:?}", FinalizerFlags::CRITICAL),
            "FinalizerFlags(CRITICAL)"
        );
        assert_eq!(core::mem::size_of::<GcRootFlags>(), 4);
    }

    #[test]
    fn generations_from_runtime_flags() {
        let g = Generations::from_flags(&[1, 1, 0, 0]);
        assert!(g.contains(GcGeneration::GEN_0));
        assert!(g.contains(GcGeneration::GEN_1));
        assert!(!g.contains(GcGeneration::GEN_2));
        assert_eq!(g.max_generation(), Some(GcGeneration::GEN_1));
        assert_eq!(g.bits(), 0b11);
        assert_eq!(
            format!("{g:?}"),
            "Generations[GcGeneration::GEN_0, GcGeneration::GEN_1]"
        );
        let full = Generations::from_flags(&[1, 1, 1, 1]);
        assert_eq!(full.iter().count(), 4);
        assert!(full.contains(GcGeneration::LARGE_OBJECT_HEAP));
        assert!(Generations::from_flags(&[]).is_empty());
        assert_eq!(Generations::EMPTY.max_generation(), None);
        assert!(!full.contains(GcGeneration(40)));
        assert_eq!(Generations::from_flags(&[0; 40]), Generations::EMPTY);
    }
}
