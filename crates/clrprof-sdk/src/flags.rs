//! The event masks a profiler sets to choose which callbacks it receives, and the code
//! generation flags of a ReJIT.
//!
//! [`EventMask`] is the low mask (`SetEventMask`, or the first half of `SetEventMask2`);
//! [`HighEventMask`] is the high half of `SetEventMask2`. Flag names are the IDL's without the
//! `COR_PRF_` / `COR_PRF_HIGH_` prefix. Bits this SDK does not name survive every conversion,
//! so a mask read back from a newer runtime is never truncated. The IDL's composite masks
//! (`MONITOR_ALL`, `ALLOWABLE_AFTER_ATTACH`, ...) are associated constants outside the flag
//! list, so that `Debug` always spells a mask out flag by flag.
#![forbid(unsafe_code)]

use clrprof_sys as sys;

bitflags::bitflags! {
    /// The low event mask (`COR_PRF_MONITOR`).
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct EventMask: u32 {
        /// `FunctionUnloadStarted`.
        const MONITOR_FUNCTION_UNLOADS = sys::COR_PRF_MONITOR_FUNCTION_UNLOADS;
        /// `ClassLoad*` and `ClassUnload*`.
        const MONITOR_CLASS_LOADS = sys::COR_PRF_MONITOR_CLASS_LOADS;
        /// `ModuleLoad*`, `ModuleUnload*` and `ModuleAttachedToAssembly`.
        const MONITOR_MODULE_LOADS = sys::COR_PRF_MONITOR_MODULE_LOADS;
        /// `AssemblyLoad*` and `AssemblyUnload*`.
        const MONITOR_ASSEMBLY_LOADS = sys::COR_PRF_MONITOR_ASSEMBLY_LOADS;
        /// `AppDomainCreation*` and `AppDomainShutdown*`.
        const MONITOR_APPDOMAIN_LOADS = sys::COR_PRF_MONITOR_APPDOMAIN_LOADS;
        /// `JITCompilation*`, `JITFunctionPitched` and `JITInlining`.
        const MONITOR_JIT_COMPILATION = sys::COR_PRF_MONITOR_JIT_COMPILATION;
        /// The `Exception*` callbacks, except the CLR catcher ones.
        const MONITOR_EXCEPTIONS = sys::COR_PRF_MONITOR_EXCEPTIONS;
        /// Garbage collection and heap-walk callbacks.
        const MONITOR_GC = sys::COR_PRF_MONITOR_GC;
        /// `ObjectAllocated` (needs [`EventMask::ENABLE_OBJECT_ALLOCATED`] at startup).
        const MONITOR_OBJECT_ALLOCATED = sys::COR_PRF_MONITOR_OBJECT_ALLOCATED;
        /// `ThreadCreated`, `ThreadDestroyed`, `ThreadAssignedToOSThread`, `ThreadNameChanged`.
        const MONITOR_THREADS = sys::COR_PRF_MONITOR_THREADS;
        /// Remoting callbacks (absent from CoreCLR).
        const MONITOR_REMOTING = sys::COR_PRF_MONITOR_REMOTING;
        /// Managed/unmanaged transitions.
        const MONITOR_CODE_TRANSITIONS = sys::COR_PRF_MONITOR_CODE_TRANSITIONS;
        /// Enter/leave/tail-call hooks.
        const MONITOR_ENTERLEAVE = sys::COR_PRF_MONITOR_ENTERLEAVE;
        /// COM-callable wrapper vtable callbacks.
        const MONITOR_CCW = sys::COR_PRF_MONITOR_CCW;
        /// Remoting cookies (implies `MONITOR_REMOTING`).
        const MONITOR_REMOTING_COOKIE = sys::COR_PRF_MONITOR_REMOTING_COOKIE;
        /// Asynchronous remoting (implies `MONITOR_REMOTING`).
        const MONITOR_REMOTING_ASYNC = sys::COR_PRF_MONITOR_REMOTING_ASYNC;
        /// Runtime suspension and resumption callbacks.
        const MONITOR_SUSPENDS = sys::COR_PRF_MONITOR_SUSPENDS;
        /// `JITCachedFunctionSearch*`.
        const MONITOR_CACHE_SEARCHES = sys::COR_PRF_MONITOR_CACHE_SEARCHES;
        /// Allows `RequestReJIT` later; startup only.
        const ENABLE_REJIT = sys::COR_PRF_ENABLE_REJIT;
        /// Obsolete; no effect.
        const ENABLE_INPROC_DEBUGGING = sys::COR_PRF_ENABLE_INPROC_DEBUGGING;
        /// Obsolete; the runtime always keeps IL-to-native maps.
        const ENABLE_JIT_MAPS = sys::COR_PRF_ENABLE_JIT_MAPS;
        /// The JIT inlines nothing.
        const DISABLE_INLINING = sys::COR_PRF_DISABLE_INLINING;
        /// The JIT does not optimize.
        const DISABLE_OPTIMIZATIONS = sys::COR_PRF_DISABLE_OPTIMIZATIONS;
        /// Allows `MONITOR_OBJECT_ALLOCATED`; startup only.
        const ENABLE_OBJECT_ALLOCATED = sys::COR_PRF_ENABLE_OBJECT_ALLOCATED;
        /// `ExceptionCLRCatcher*` (obsolete).
        const MONITOR_CLR_EXCEPTIONS = sys::COR_PRF_MONITOR_CLR_EXCEPTIONS;
        /// Enter/leave hooks can read arguments.
        const ENABLE_FUNCTION_ARGS = sys::COR_PRF_ENABLE_FUNCTION_ARGS;
        /// Leave hooks can read the return value.
        const ENABLE_FUNCTION_RETVAL = sys::COR_PRF_ENABLE_FUNCTION_RETVAL;
        /// Enter/leave hooks get a frame handle.
        const ENABLE_FRAME_INFO = sys::COR_PRF_ENABLE_FRAME_INFO;
        /// Allows `DoStackSnapshot`.
        const ENABLE_STACK_SNAPSHOT = sys::COR_PRF_ENABLE_STACK_SNAPSHOT;
        /// Use profiler-enhanced native images (desktop CLR).
        const USE_PROFILE_IMAGES = sys::COR_PRF_USE_PROFILE_IMAGES;
        /// Obsolete; desktop CLR security.
        const DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST =
            sys::COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST;
        /// Ignore every precompiled (NGen / ReadyToRun) image: JIT everything.
        const DISABLE_ALL_NGEN_IMAGES = sys::COR_PRF_DISABLE_ALL_NGEN_IMAGES;
        const _ = !0;
    }
}

impl EventMask {
    /// No events.
    pub const NONE: EventMask = EventMask::empty();
    /// Every callback class (`COR_PRF_MONITOR_ALL`).
    pub const MONITOR_ALL: EventMask = EventMask::from_bits_retain(sys::COR_PRF_MONITOR_ALL);
    /// The IDL's mask of meaningful bits (`COR_PRF_ALL`).
    pub const ALL: EventMask = EventMask::from_bits_retain(sys::COR_PRF_ALL);
    /// The bits that need profiler-enhanced images (`COR_PRF_REQUIRE_PROFILE_IMAGE`).
    pub const REQUIRE_PROFILE_IMAGE: EventMask =
        EventMask::from_bits_retain(sys::COR_PRF_REQUIRE_PROFILE_IMAGE);
    /// The bits an attached profiler may set (`COR_PRF_ALLOWABLE_AFTER_ATTACH`).
    pub const ALLOWABLE_AFTER_ATTACH: EventMask =
        EventMask::from_bits_retain(sys::COR_PRF_ALLOWABLE_AFTER_ATTACH);
    /// The bits a notification-only profiler may set.
    pub const ALLOWABLE_NOTIFICATION_PROFILER: EventMask =
        EventMask::from_bits_retain(sys::COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER);
    /// The bits that can only be set during `Initialize` (`COR_PRF_MONITOR_IMMUTABLE`).
    pub const MONITOR_IMMUTABLE: EventMask =
        EventMask::from_bits_retain(sys::COR_PRF_MONITOR_IMMUTABLE);
}

bitflags::bitflags! {
    /// The high event mask (`COR_PRF_HIGH_MONITOR`), for `SetEventMask2`.
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct HighEventMask: u32 {
        /// `GetAssemblyReferences`.
        const ADD_ASSEMBLY_REFERENCES = sys::COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES;
        /// `ModuleInMemorySymbolsUpdated`.
        const IN_MEMORY_SYMBOLS_UPDATED = sys::COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED;
        /// `DynamicMethodUnloaded`.
        const MONITOR_DYNAMIC_FUNCTION_UNLOADS = sys::COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS;
        /// Every method is compiled once, fully optimized; startup only.
        const DISABLE_TIERED_COMPILATION = sys::COR_PRF_HIGH_DISABLE_TIERED_COMPILATION;
        /// GC start/finish only, without the costly heap callbacks.
        const BASIC_GC = sys::COR_PRF_HIGH_BASIC_GC;
        /// Moved-reference callbacks for compacting GCs.
        const MONITOR_GC_MOVED_OBJECTS = sys::COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS;
        /// `ObjectAllocated` for large-object-heap allocations only.
        const MONITOR_LARGEOBJECT_ALLOCATED = sys::COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED;
        /// `EventPipeEventDelivered` and `EventPipeProviderCreated`.
        const MONITOR_EVENT_PIPE = sys::COR_PRF_HIGH_MONITOR_EVENT_PIPE;
        /// `ObjectAllocated` for pinned-object-heap allocations.
        const MONITOR_PINNEDOBJECT_ALLOCATED = sys::COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED;
        const _ = !0;
    }
}

impl HighEventMask {
    /// No events.
    pub const NONE: HighEventMask = HighEventMask::empty();
    /// `COR_PRF_HIGH_REQUIRE_PROFILE_IMAGE` (empty).
    pub const REQUIRE_PROFILE_IMAGE: HighEventMask =
        HighEventMask::from_bits_retain(sys::COR_PRF_HIGH_REQUIRE_PROFILE_IMAGE);
    /// The high bits an attached profiler may set.
    pub const ALLOWABLE_AFTER_ATTACH: HighEventMask =
        HighEventMask::from_bits_retain(sys::COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH);
    /// The high bits a notification-only profiler may set.
    pub const ALLOWABLE_NOTIFICATION_PROFILER: HighEventMask =
        HighEventMask::from_bits_retain(sys::COR_PRF_HIGH_ALLOWABLE_NOTIFICATION_PROFILER);
    /// The high bits that can only be set during `Initialize`.
    pub const MONITOR_IMMUTABLE: HighEventMask =
        HighEventMask::from_bits_retain(sys::COR_PRF_HIGH_MONITOR_IMMUTABLE);
}

bitflags::bitflags! {
    /// How the JIT compiles a ReJIT'd method (`ICorProfilerFunctionControl::SetCodegenFlags`).
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct CodegenFlags: u32 {
        /// Inline nothing into the method.
        const DISABLE_INLINING = sys::COR_PRF_CODEGEN_DISABLE_INLINING;
        /// Do not optimize the method.
        const DISABLE_ALL_OPTIMIZATIONS = sys::COR_PRF_CODEGEN_DISABLE_ALL_OPTIMIZATIONS;
        /// Debuggable code: both of the above.
        const DEBUG_INFO = sys::COR_PRF_CODEGEN_DEBUG_INFO;
        const _ = !0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_low_bit_is_named() {
        // Bits 0..=24 and 25..=31 are all defined by the IDL; each must carry a name here.
        let named = EventMask::all()
            .iter_names()
            .fold(0u32, |acc, (_, f)| acc | f.bits());
        assert_eq!(named, u32::MAX);
        assert_eq!(EventMask::MONITOR_ALL.bits(), 0x0107_FFFF);
        assert_eq!(EventMask::ALLOWABLE_AFTER_ATTACH.bits(), 0x1065_02FE);
    }

    #[test]
    fn every_high_bit_is_named() {
        let named = HighEventMask::all()
            .iter_names()
            .fold(0u32, |acc, (_, f)| acc | f.bits());
        assert_eq!(named, 0x1FF);
        assert!(HighEventMask::REQUIRE_PROFILE_IMAGE.is_empty());
        assert_eq!(HighEventMask::ALLOWABLE_AFTER_ATTACH.bits(), 0xF6);
    }

    #[test]
    fn debug_spells_out_flags() {
        let mask = EventMask::MONITOR_JIT_COMPILATION | EventMask::MONITOR_MODULE_LOADS;
        assert_eq!(
            format!("{mask:?}"),
            "EventMask(MONITOR_MODULE_LOADS | MONITOR_JIT_COMPILATION)"
        );
        assert_eq!(
            format!("{:?}", EventMask::MONITOR_REMOTING_COOKIE),
            "EventMask(MONITOR_REMOTING | MONITOR_REMOTING_COOKIE)"
        );
        assert_eq!(
            format!("{:?}", HighEventMask::BASIC_GC),
            "HighEventMask(BASIC_GC)"
        );
        assert_eq!(
            format!("{:?}", HighEventMask::from_bits_retain(0x1000)),
            "HighEventMask(0x1000)"
        );
        assert_eq!(
            format!("{:?}", CodegenFlags::DEBUG_INFO),
            "CodegenFlags(DISABLE_INLINING | DISABLE_ALL_OPTIMIZATIONS)"
        );
    }
}
