//! Enumerations and flag sets of `corprof.idl`.
//!
//! A C enum is passed and stored as a 32-bit integer, so every IDL enum becomes a `u32` type
//! alias (or `i32` where the IDL gives negative values) plus one `pub const` per enumerator,
//! with the IDL's names, as `idl_enum!` declares them. Enumerators the IDL defines as
//! combinations of others are written the same way here, and their numeric values are pinned
//! by the tests at the bottom.

idl_enum! {
    /// Special values of `COR_DEBUG_IL_TO_NATIVE_MAP::ilOffset` (compare after a cast to `i32`).
    CorDebugIlToNativeMappingTypes: i32 {
        /// The native range has no IL offset.
        NO_MAPPING = -1;
        /// The native range is the method's prolog.
        PROLOG = -2;
        /// The native range is an epilog.
        EPILOG = -3;
    }
}

idl_enum! {
    /// `infoFlags` of `ICorProfilerInfo2::DoStackSnapshot`.
    COR_PRF_SNAPSHOT_INFO: u32 {
        COR_PRF_SNAPSHOT_DEFAULT = 0x0;
        /// Pass a register context to the callback for every frame.
        COR_PRF_SNAPSHOT_REGISTER_CONTEXT = 0x1;
        /// EBP-chain walk; x86 only.
        COR_PRF_SNAPSHOT_X86_OPTIMIZED = 0x2;
    }
}

idl_enum! {
    /// Kinds of static field (bits may be combined), from `GetStaticFieldInfo`.
    COR_PRF_STATIC_TYPE: u32 {
        COR_PRF_FIELD_NOT_A_STATIC = 0x0;
        COR_PRF_FIELD_APP_DOMAIN_STATIC = 0x1;
        COR_PRF_FIELD_THREAD_STATIC = 0x2;
        COR_PRF_FIELD_CONTEXT_STATIC = 0x4;
        COR_PRF_FIELD_RVA_STATIC = 0x8;
    }
}

idl_enum! {
    /// The low event mask (`SetEventMask`, `dwEventsLow` of `SetEventMask2`).
    COR_PRF_MONITOR: u32 {
        COR_PRF_MONITOR_NONE = 0x0000_0000;
        COR_PRF_MONITOR_FUNCTION_UNLOADS = 0x0000_0001;
        COR_PRF_MONITOR_CLASS_LOADS = 0x0000_0002;
        COR_PRF_MONITOR_MODULE_LOADS = 0x0000_0004;
        COR_PRF_MONITOR_ASSEMBLY_LOADS = 0x0000_0008;
        COR_PRF_MONITOR_APPDOMAIN_LOADS = 0x0000_0010;
        COR_PRF_MONITOR_JIT_COMPILATION = 0x0000_0020;
        COR_PRF_MONITOR_EXCEPTIONS = 0x0000_0040;
        COR_PRF_MONITOR_GC = 0x0000_0080;
        COR_PRF_MONITOR_OBJECT_ALLOCATED = 0x0000_0100;
        COR_PRF_MONITOR_THREADS = 0x0000_0200;
        /// Remoting does not exist in CoreCLR.
        COR_PRF_MONITOR_REMOTING = 0x0000_0400;
        COR_PRF_MONITOR_CODE_TRANSITIONS = 0x0000_0800;
        COR_PRF_MONITOR_ENTERLEAVE = 0x0000_1000;
        COR_PRF_MONITOR_CCW = 0x0000_2000;
        COR_PRF_MONITOR_REMOTING_COOKIE = 0x0000_4000 | COR_PRF_MONITOR_REMOTING;
        COR_PRF_MONITOR_REMOTING_ASYNC = 0x0000_8000 | COR_PRF_MONITOR_REMOTING;
        COR_PRF_MONITOR_SUSPENDS = 0x0001_0000;
        COR_PRF_MONITOR_CACHE_SEARCHES = 0x0002_0000;
        /// Needed at startup to use `RequestReJIT`/`RequestRevert`.
        COR_PRF_ENABLE_REJIT = 0x0004_0000;
        /// Deprecated: no effect.
        COR_PRF_ENABLE_INPROC_DEBUGGING = 0x0008_0000;
        /// Deprecated: IL-to-native maps are always kept.
        COR_PRF_ENABLE_JIT_MAPS = 0x0010_0000;
        COR_PRF_DISABLE_INLINING = 0x0020_0000;
        COR_PRF_DISABLE_OPTIMIZATIONS = 0x0040_0000;
        /// Must be set at startup for `COR_PRF_MONITOR_OBJECT_ALLOCATED` to be usable later.
        COR_PRF_ENABLE_OBJECT_ALLOCATED = 0x0080_0000;
        COR_PRF_MONITOR_CLR_EXCEPTIONS = 0x0100_0000;
        /// Every callback-class bit (not the ENABLE_/DISABLE_ modifiers above bit 24).
        COR_PRF_MONITOR_ALL = 0x0107_FFFF;
        COR_PRF_ENABLE_FUNCTION_ARGS = 0x0200_0000;
        COR_PRF_ENABLE_FUNCTION_RETVAL = 0x0400_0000;
        COR_PRF_ENABLE_FRAME_INFO = 0x0800_0000;
        COR_PRF_ENABLE_STACK_SNAPSHOT = 0x1000_0000;
        COR_PRF_USE_PROFILE_IMAGES = 0x2000_0000;
        COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST = 0x4000_0000;
        COR_PRF_DISABLE_ALL_NGEN_IMAGES = 0x8000_0000;
        /// The IDL's "valid bits" mask; note that it leaves out bits 28 and 29
        /// (ENABLE_STACK_SNAPSHOT, USE_PROFILE_IMAGES).
        COR_PRF_ALL = 0x8FFF_FFFF;
        /// The bits that need profiler-enhanced native images.
        COR_PRF_REQUIRE_PROFILE_IMAGE = COR_PRF_USE_PROFILE_IMAGES
            | COR_PRF_MONITOR_CODE_TRANSITIONS
            | COR_PRF_MONITOR_ENTERLEAVE;
        /// The bits a profiler loaded by attach may set.
        COR_PRF_ALLOWABLE_AFTER_ATTACH = COR_PRF_MONITOR_THREADS
            | COR_PRF_MONITOR_MODULE_LOADS
            | COR_PRF_MONITOR_ASSEMBLY_LOADS
            | COR_PRF_MONITOR_APPDOMAIN_LOADS
            | COR_PRF_ENABLE_STACK_SNAPSHOT
            | COR_PRF_MONITOR_GC
            | COR_PRF_MONITOR_SUSPENDS
            | COR_PRF_MONITOR_CLASS_LOADS
            | COR_PRF_MONITOR_EXCEPTIONS
            | COR_PRF_MONITOR_JIT_COMPILATION
            | COR_PRF_DISABLE_INLINING
            | COR_PRF_DISABLE_OPTIMIZATIONS
            | COR_PRF_ENABLE_REJIT;
        /// The bits a notification-only profiler (`LoadAsNotificationOnly`) may set.
        COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER = COR_PRF_MONITOR_FUNCTION_UNLOADS
            | COR_PRF_MONITOR_CLASS_LOADS
            | COR_PRF_MONITOR_MODULE_LOADS
            | COR_PRF_MONITOR_ASSEMBLY_LOADS
            | COR_PRF_MONITOR_APPDOMAIN_LOADS
            | COR_PRF_MONITOR_JIT_COMPILATION
            | COR_PRF_MONITOR_EXCEPTIONS
            | COR_PRF_MONITOR_OBJECT_ALLOCATED
            | COR_PRF_MONITOR_THREADS
            | COR_PRF_MONITOR_CODE_TRANSITIONS
            | COR_PRF_MONITOR_CCW
            | COR_PRF_MONITOR_SUSPENDS
            | COR_PRF_MONITOR_CACHE_SEARCHES
            | COR_PRF_DISABLE_INLINING
            | COR_PRF_DISABLE_OPTIMIZATIONS
            | COR_PRF_ENABLE_OBJECT_ALLOCATED
            | COR_PRF_MONITOR_CLR_EXCEPTIONS
            | COR_PRF_ENABLE_STACK_SNAPSHOT
            | COR_PRF_USE_PROFILE_IMAGES
            | COR_PRF_DISABLE_ALL_NGEN_IMAGES;
        /// The bits that can only be set during `Initialize`.
        COR_PRF_MONITOR_IMMUTABLE = COR_PRF_MONITOR_CODE_TRANSITIONS
            | COR_PRF_MONITOR_REMOTING
            | COR_PRF_MONITOR_REMOTING_COOKIE
            | COR_PRF_MONITOR_REMOTING_ASYNC
            | COR_PRF_ENABLE_INPROC_DEBUGGING
            | COR_PRF_ENABLE_JIT_MAPS
            | COR_PRF_ENABLE_OBJECT_ALLOCATED
            | COR_PRF_ENABLE_FUNCTION_ARGS
            | COR_PRF_ENABLE_FUNCTION_RETVAL
            | COR_PRF_ENABLE_FRAME_INFO
            | COR_PRF_USE_PROFILE_IMAGES
            | COR_PRF_DISABLE_TRANSPARENCY_CHECKS_UNDER_FULL_TRUST
            | COR_PRF_DISABLE_ALL_NGEN_IMAGES;
    }
}

idl_enum! {
    /// The high event mask (`dwEventsHigh` of `SetEventMask2`).
    COR_PRF_HIGH_MONITOR: u32 {
        COR_PRF_HIGH_MONITOR_NONE = 0x0000_0000;
        /// Not checked by CoreCLR.
        COR_PRF_HIGH_ADD_ASSEMBLY_REFERENCES = 0x0000_0001;
        COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED = 0x0000_0002;
        COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS = 0x0000_0004;
        COR_PRF_HIGH_DISABLE_TIERED_COMPILATION = 0x0000_0008;
        COR_PRF_HIGH_BASIC_GC = 0x0000_0010;
        /// MovedReferences/MovedReferences2 for compacting GCs only.
        COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS = 0x0000_0020;
        COR_PRF_HIGH_REQUIRE_PROFILE_IMAGE = 0;
        /// ObjectAllocated for allocations above the LOH threshold.
        COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED = 0x0000_0040;
        COR_PRF_HIGH_MONITOR_EVENT_PIPE = 0x0000_0080;
        /// ObjectAllocated for allocations on the pinned object heap.
        COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED = 0x0000_0100;
        /// The high bits a profiler loaded by attach may set.
        COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH = COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED
            | COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS
            | COR_PRF_HIGH_BASIC_GC
            | COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS
            | COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED
            | COR_PRF_HIGH_MONITOR_EVENT_PIPE;
        /// The high bits a notification-only profiler may set.
        COR_PRF_HIGH_ALLOWABLE_NOTIFICATION_PROFILER = COR_PRF_HIGH_IN_MEMORY_SYMBOLS_UPDATED
            | COR_PRF_HIGH_MONITOR_DYNAMIC_FUNCTION_UNLOADS
            | COR_PRF_HIGH_DISABLE_TIERED_COMPILATION
            | COR_PRF_HIGH_BASIC_GC
            | COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS
            | COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED
            | COR_PRF_HIGH_MONITOR_EVENT_PIPE;
        /// The high bits that can only be set during `Initialize`.
        COR_PRF_HIGH_MONITOR_IMMUTABLE = COR_PRF_HIGH_DISABLE_TIERED_COMPILATION;
    }
}

idl_enum! {
    /// Reserved ID values (compare after widening: the IDs themselves are pointer-sized).
    COR_PRF_MISC: u32 {
        /// AssemblyID reported by `GetModuleInfo` before the module is attached to an assembly.
        PROFILER_PARENT_UNKNOWN = 0xFFFF_FFFD;
        /// ClassID of globals that belong to no class.
        PROFILER_GLOBAL_CLASS = 0xFFFF_FFFE;
        /// ModuleID of globals that belong to no module.
        PROFILER_GLOBAL_MODULE = 0xFFFF_FFFF;
    }
}

idl_enum! {
    /// Result of a cached (precompiled) function search; FOUND is 0.
    COR_PRF_JIT_CACHE: u32 {
        COR_PRF_CACHED_FUNCTION_FOUND = 0;
        COR_PRF_CACHED_FUNCTION_NOT_FOUND = 1;
    }
}

idl_enum! {
    /// Why a managed/unmanaged transition callback fired.
    COR_PRF_TRANSITION_REASON: u32 {
        COR_PRF_TRANSITION_CALL = 0;
        COR_PRF_TRANSITION_RETURN = 1;
    }
}

idl_enum! {
    /// Why the runtime is being suspended (`RuntimeSuspendStarted`); 5 is unused.
    COR_PRF_SUSPEND_REASON: u32 {
        COR_PRF_SUSPEND_OTHER = 0;
        COR_PRF_SUSPEND_FOR_GC = 1;
        COR_PRF_SUSPEND_FOR_APPDOMAIN_SHUTDOWN = 2;
        COR_PRF_SUSPEND_FOR_CODE_PITCHING = 3;
        COR_PRF_SUSPEND_FOR_SHUTDOWN = 4;
        COR_PRF_SUSPEND_FOR_INPROC_DEBUGGER = 6;
        COR_PRF_SUSPEND_FOR_GC_PREP = 7;
        COR_PRF_SUSPEND_FOR_REJIT = 8;
        /// Suspension requested by `ICorProfilerInfo10::SuspendRuntime`.
        COR_PRF_SUSPEND_FOR_PROFILER = 9;
    }
}

idl_enum! {
    /// Which runtime `GetRuntimeInformation` describes.
    COR_PRF_RUNTIME_TYPE: u32 {
        COR_PRF_DESKTOP_CLR = 0x1;
        COR_PRF_CORE_CLR = 0x2;
    }
}

idl_enum! {
    /// `dwRejitFlags` of `RequestReJITWithInliners`.
    COR_PRF_REJIT_FLAGS: u32 {
        COR_PRF_REJIT_BLOCK_INLINING = 0x1;
        /// Also call GetReJITParameters for methods rejitted because they inline a requested one.
        COR_PRF_REJIT_INLINING_CALLBACKS = 0x2;
    }
}

idl_enum! {
    /// Type of one EventPipe event parameter (`COR_PRF_EVENTPIPE_PARAM_DESC::type`); 2 is unused.
    COR_PRF_EVENTPIPE_PARAM_TYPE: u32 {
        COR_PRF_EVENTPIPE_OBJECT = 1;
        COR_PRF_EVENTPIPE_BOOLEAN = 3;
        COR_PRF_EVENTPIPE_CHAR = 4;
        COR_PRF_EVENTPIPE_SBYTE = 5;
        COR_PRF_EVENTPIPE_BYTE = 6;
        COR_PRF_EVENTPIPE_INT16 = 7;
        COR_PRF_EVENTPIPE_UINT16 = 8;
        COR_PRF_EVENTPIPE_INT32 = 9;
        COR_PRF_EVENTPIPE_UINT32 = 10;
        COR_PRF_EVENTPIPE_INT64 = 11;
        COR_PRF_EVENTPIPE_UINT64 = 12;
        COR_PRF_EVENTPIPE_SINGLE = 13;
        COR_PRF_EVENTPIPE_DOUBLE = 14;
        COR_PRF_EVENTPIPE_DECIMAL = 15;
        COR_PRF_EVENTPIPE_DATETIME = 16;
        COR_PRF_EVENTPIPE_GUID = 17;
        COR_PRF_EVENTPIPE_STRING = 18;
        COR_PRF_EVENTPIPE_ARRAY = 19;
    }
}

idl_enum! {
    /// EventPipe verbosity levels.
    COR_PRF_EVENTPIPE_LEVEL: u32 {
        COR_PRF_EVENTPIPE_LOGALWAYS = 0;
        COR_PRF_EVENTPIPE_CRITICAL = 1;
        COR_PRF_EVENTPIPE_ERROR = 2;
        COR_PRF_EVENTPIPE_WARNING = 3;
        COR_PRF_EVENTPIPE_INFORMATIONAL = 4;
        COR_PRF_EVENTPIPE_VERBOSE = 5;
    }
}

idl_enum! {
    /// Kind of GC handle made by `ICorProfilerInfo13::CreateHandle`.
    COR_PRF_HANDLE_TYPE: u32 {
        COR_PRF_HANDLE_TYPE_WEAK = 0x1;
        COR_PRF_HANDLE_TYPE_STRONG = 0x2;
        COR_PRF_HANDLE_TYPE_PINNED = 0x3;
    }
}

idl_enum! {
    /// Where a GC root lives (`RootReferences2`).
    COR_PRF_GC_ROOT_KIND: u32 {
        COR_PRF_GC_ROOT_STACK = 1;
        COR_PRF_GC_ROOT_FINALIZER = 2;
        COR_PRF_GC_ROOT_HANDLE = 3;
        COR_PRF_GC_ROOT_OTHER = 0;
    }
}

idl_enum! {
    /// Properties of a GC root (`RootReferences2`), combinable.
    COR_PRF_GC_ROOT_FLAGS: u32 {
        COR_PRF_GC_ROOT_PINNING = 0x1;
        COR_PRF_GC_ROOT_WEAKREF = 0x2;
        /// The root points into the object, not at its start.
        COR_PRF_GC_ROOT_INTERIOR = 0x4;
        COR_PRF_GC_ROOT_REFCOUNTED = 0x8;
    }
}

idl_enum! {
    /// `finalizerFlags` of `FinalizeableObjectQueued`.
    COR_PRF_FINALIZER_FLAGS: u32 {
        COR_PRF_FINALIZER_CRITICAL = 0x1;
    }
}

idl_enum! {
    /// GC generation numbers, also the index into `GarbageCollectionStarted`'s array.
    COR_PRF_GC_GENERATION: u32 {
        COR_PRF_GC_GEN_0 = 0;
        COR_PRF_GC_GEN_1 = 1;
        COR_PRF_GC_GEN_2 = 2;
        COR_PRF_GC_LARGE_OBJECT_HEAP = 3;
        COR_PRF_GC_PINNED_OBJECT_HEAP = 4;
    }
}

idl_enum! {
    /// Kind of exception clause in `COR_PRF_EX_CLAUSE_INFO`.
    COR_PRF_CLAUSE_TYPE: u32 {
        COR_PRF_CLAUSE_NONE = 0;
        COR_PRF_CLAUSE_FILTER = 1;
        COR_PRF_CLAUSE_CATCH = 2;
        COR_PRF_CLAUSE_FINALLY = 3;
    }
}

idl_enum! {
    /// Why a GC happened (`GarbageCollectionStarted`).
    COR_PRF_GC_REASON: u32 {
        /// Induced by `GC.Collect`.
        COR_PRF_GC_INDUCED = 1;
        COR_PRF_GC_OTHER = 0;
    }
}

idl_enum! {
    /// Bits of `pdwModuleFlags` from `GetModuleInfo2`.
    COR_PRF_MODULE_FLAGS: u32 {
        COR_PRF_MODULE_DISK = 0x0000_0001;
        COR_PRF_MODULE_NGEN = 0x0000_0002;
        COR_PRF_MODULE_DYNAMIC = 0x0000_0004;
        COR_PRF_MODULE_COLLECTIBLE = 0x0000_0008;
        /// A resource-only module: it has no metadata.
        COR_PRF_MODULE_RESOURCE = 0x0000_0010;
        /// Flat (not mapped) layout: PE RVAs need translating before use.
        COR_PRF_MODULE_FLAT_LAYOUT = 0x0000_0020;
        COR_PRF_MODULE_WINDOWS_RUNTIME = 0x0000_0040;
    }
}

idl_enum! {
    /// `ICorProfilerFunctionControl::SetCodegenFlags` values (DEBUG_INFO is 1 | 2, as in the IDL).
    COR_PRF_CODEGEN_FLAGS: u32 {
        COR_PRF_CODEGEN_DISABLE_INLINING = 0x0001;
        COR_PRF_CODEGEN_DISABLE_ALL_OPTIMIZATIONS = 0x0002;
        COR_PRF_CODEGEN_DEBUG_INFO = 0x0003;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The composite masks, as numbers worked out by hand from their IDL definitions.
    #[test]
    fn composite_masks() {
        assert_eq!(COR_PRF_MONITOR_REMOTING_COOKIE, 0x4400);
        assert_eq!(COR_PRF_MONITOR_REMOTING_ASYNC, 0x8400);
        assert_eq!(COR_PRF_REQUIRE_PROFILE_IMAGE, 0x2000_1800);
        assert_eq!(COR_PRF_ALLOWABLE_AFTER_ATTACH, 0x1065_02FE);
        assert_eq!(COR_PRF_ALLOWABLE_NOTIFICATION_PROFILER, 0xB1E3_2B7F);
        assert_eq!(COR_PRF_MONITOR_IMMUTABLE, 0xEE98_CC00);
        assert_eq!(COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH, 0xF6);
        assert_eq!(COR_PRF_HIGH_ALLOWABLE_NOTIFICATION_PROFILER, 0xFE);
        assert_eq!(COR_PRF_HIGH_MONITOR_IMMUTABLE, 0x8);
    }

    /// MONITOR_ALL is bits 0..=18 and 24: every MONITOR_* class plus ENABLE_REJIT (bit 18).
    /// COR_PRF_ALL leaves out bits 28 and 29 (STACK_SNAPSHOT, USE_PROFILE_IMAGES), as in the IDL.
    #[test]
    fn monitor_all_and_all() {
        let classes = COR_PRF_MONITOR_FUNCTION_UNLOADS
            | COR_PRF_MONITOR_CLASS_LOADS
            | COR_PRF_MONITOR_MODULE_LOADS
            | COR_PRF_MONITOR_ASSEMBLY_LOADS
            | COR_PRF_MONITOR_APPDOMAIN_LOADS
            | COR_PRF_MONITOR_JIT_COMPILATION
            | COR_PRF_MONITOR_EXCEPTIONS
            | COR_PRF_MONITOR_GC
            | COR_PRF_MONITOR_OBJECT_ALLOCATED
            | COR_PRF_MONITOR_THREADS
            | COR_PRF_MONITOR_REMOTING
            | COR_PRF_MONITOR_CODE_TRANSITIONS
            | COR_PRF_MONITOR_ENTERLEAVE
            | COR_PRF_MONITOR_CCW
            | COR_PRF_MONITOR_REMOTING_COOKIE
            | COR_PRF_MONITOR_REMOTING_ASYNC
            | COR_PRF_MONITOR_SUSPENDS
            | COR_PRF_MONITOR_CACHE_SEARCHES
            | COR_PRF_ENABLE_REJIT
            | COR_PRF_MONITOR_CLR_EXCEPTIONS;
        assert_eq!(classes, COR_PRF_MONITOR_ALL);
        assert_eq!(
            COR_PRF_ALL & COR_PRF_DISABLE_ALL_NGEN_IMAGES,
            COR_PRF_DISABLE_ALL_NGEN_IMAGES
        );
        assert_eq!(COR_PRF_ALL & COR_PRF_USE_PROFILE_IMAGES, 0);
        assert_eq!(COR_PRF_ALL & COR_PRF_ENABLE_STACK_SNAPSHOT, 0);
    }
}
