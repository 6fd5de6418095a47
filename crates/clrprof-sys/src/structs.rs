//! Structures and function-pointer types of `corprof.idl` (plus `OSINFO`/`ASSEMBLYMETADATA`
//! from `cor.h`, which the IDL refers to).
//!
//! Structs are `#[repr(C)]` with the IDL's field names. Function-pointer typedefs become
//! `unsafe extern "system" fn` types; where the runtime accepts a null hook, callers wrap them
//! in `Option<...>`, which has the same layout as a nullable C function pointer.

use core::ffi::c_void;

use crate::consts::{COR_PRF_CLAUSE_TYPE, COR_PRF_GC_GENERATION};
use crate::types::*;

/// Operating-system entry of an assembly's metadata (cor.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OSINFO {
    pub dwOSPlatformId: DWORD,
    pub dwOSMajorVersion: DWORD,
    pub dwOSMinorVersion: DWORD,
}

/// Version, locale, processor and OS information of an assembly (cor.h).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ASSEMBLYMETADATA {
    pub usMajorVersion: USHORT,
    pub usMinorVersion: USHORT,
    pub usBuildNumber: USHORT,
    pub usRevisionNumber: USHORT,
    /// Locale buffer; `cbLocale` is its size in wide characters (in/out).
    pub szLocale: LPWSTR,
    pub cbLocale: ULONG,
    /// Processor ID array of `ulProcessor` entries (in/out count).
    pub rProcessor: *mut DWORD,
    pub ulProcessor: ULONG,
    /// OS array of `ulOS` entries (in/out count).
    pub rOS: *mut OSINFO,
    pub ulOS: ULONG,
}

/// One old-to-new IL offset pair for `SetILInstrumentedCodeMap`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_IL_MAP {
    pub oldOffset: ULONG32,
    pub newOffset: ULONG32,
    /// Kept for compatibility with the debugger's copy of this struct.
    pub fAccurate: BOOL,
}

/// One IL offset and the native range compiled from it (`GetILToNativeMapping*`).
///
/// `ilOffset` may hold one of the `CorDebugIlToNativeMappingTypes` values instead.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_DEBUG_IL_TO_NATIVE_MAP {
    pub ilOffset: ULONG32,
    pub nativeStartOffset: ULONG32,
    pub nativeEndOffset: ULONG32,
}

/// A field token and its offset from the ObjectID (`GetClassLayout`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_FIELD_OFFSET {
    pub ridOfField: mdFieldDef,
    pub ulOffset: ULONG,
}

/// A contiguous run of argument memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_FUNCTION_ARGUMENT_RANGE {
    pub startAddress: UINT_PTR,
    pub length: ULONG,
}

/// Where a function's arguments are, left to right.
///
/// Variable-length: `ranges` really has `numRanges` entries; the buffer size is given by the
/// runtime (`pcbArgumentInfo` of `GetFunctionEnter3Info`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_FUNCTION_ARGUMENT_INFO {
    pub numRanges: ULONG,
    pub totalArgumentSize: ULONG,
    pub ranges: [COR_PRF_FUNCTION_ARGUMENT_RANGE; 1],
}

/// One contiguous chunk of native code.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_CODE_INFO {
    pub startAddress: UINT_PTR,
    pub size: SIZE_T,
}

/// A function together with one of its ReJIT versions.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_FUNCTION {
    pub functionId: FunctionID,
    pub reJitId: ReJITID,
}

/// An assembly reference a profiler adds in `GetAssemblyReferences`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_ASSEMBLY_REFERENCE_INFO {
    pub pbPublicKeyOrToken: *mut c_void,
    pub cbPublicKeyOrToken: ULONG,
    pub szName: LPCWSTR,
    pub pMetaData: *mut ASSEMBLYMETADATA,
    pub pbHashValue: *mut c_void,
    pub cbHashValue: ULONG,
    pub dwAssemblyRefFlags: DWORD,
}

/// An IL method: its module and MethodDef token.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct COR_PRF_METHOD {
    pub moduleId: ModuleID,
    pub methodId: mdMethodDef,
}

/// A memory range belonging to one GC generation (`GetGenerationBounds`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_GC_GENERATION_RANGE {
    pub generation: COR_PRF_GC_GENERATION,
    pub rangeStart: ObjectID,
    /// Used length; exact only when asked from a GC start/finish callback.
    pub rangeLength: UINT_PTR,
    pub rangeLengthReserved: UINT_PTR,
}

/// A memory range of the non-GC (frozen) heap (`GetNonGCHeapBounds`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_NONGC_HEAP_RANGE {
    pub rangeStart: ObjectID,
    pub rangeLength: UINT_PTR,
    pub rangeLengthReserved: UINT_PTR,
}

/// The exception clause being run and its frame (`GetNotifiedExceptionClauseInfo`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_EX_CLAUSE_INFO {
    pub clauseType: COR_PRF_CLAUSE_TYPE,
    pub programCounter: UINT_PTR,
    pub framePointer: UINT_PTR,
    /// IA64 backing-store pointer; unused elsewhere.
    pub shadowStackPointer: UINT_PTR,
}

/// One provider to enable in `EventPipeStartSession`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
    pub providerName: *const WCHAR,
    pub keywords: u64,
    pub loggingLevel: u32,
    /// `key=value;` pairs handed to the provider's enable callback, or null.
    pub filterData: *const WCHAR,
}

/// One parameter of an event defined with `EventPipeDefineEvent`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct COR_PRF_EVENTPIPE_PARAM_DESC {
    /// A `COR_PRF_EVENTPIPE_PARAM_TYPE`.
    pub r#type: u32,
    /// Element type when `type` is `COR_PRF_EVENTPIPE_ARRAY`.
    pub elementType: u32,
    pub name: *const WCHAR,
}

/// One payload chunk for `EventPipeWriteEvent`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_EVENT_DATA {
    /// Address of the data, widened to 64 bits.
    pub ptr: u64,
    pub size: u32,
    pub reserved: u32,
}

/// Filter data handed to an `EventPipeProviderCallback`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct COR_PRF_FILTER_DATA {
    pub Ptr: u64,
    pub Size: u32,
    pub Type: u32,
}

/// A GC handle made by `ICorProfilerInfo13::CreateHandle`.
pub type ObjectHandleID = *mut *mut c_void;

/// Maps a FunctionID to the value the ELT hooks receive; `*pbHookFunction = FALSE` skips hooks.
pub type FunctionIDMapper =
    unsafe extern "system" fn(funcId: FunctionID, pbHookFunction: *mut BOOL) -> UINT_PTR;

/// [`FunctionIDMapper`] with the client data given to `SetFunctionIDMapper2`.
pub type FunctionIDMapper2 = unsafe extern "system" fn(
    funcId: FunctionID,
    clientData: *mut c_void,
    pbHookFunction: *mut BOOL,
) -> UINT_PTR;

/// Deprecated V1 enter hook.
pub type FunctionEnter = unsafe extern "system" fn(funcID: FunctionID);
/// Deprecated V1 leave hook.
pub type FunctionLeave = unsafe extern "system" fn(funcID: FunctionID);
/// Deprecated V1 tail-call hook.
pub type FunctionTailcall = unsafe extern "system" fn(funcID: FunctionID);

/// Deprecated V2 enter hook, with frame and argument information.
pub type FunctionEnter2 = unsafe extern "system" fn(
    funcId: FunctionID,
    clientData: UINT_PTR,
    func: COR_PRF_FRAME_INFO,
    argumentInfo: *mut COR_PRF_FUNCTION_ARGUMENT_INFO,
);
/// Deprecated V2 leave hook, with frame and return-value information.
pub type FunctionLeave2 = unsafe extern "system" fn(
    funcId: FunctionID,
    clientData: UINT_PTR,
    func: COR_PRF_FRAME_INFO,
    retvalRange: *mut COR_PRF_FUNCTION_ARGUMENT_RANGE,
);
/// Deprecated V2 tail-call hook.
pub type FunctionTailcall2 =
    unsafe extern "system" fn(funcId: FunctionID, clientData: UINT_PTR, func: COR_PRF_FRAME_INFO);

/// Fast-path enter hook (`SetEnterLeaveFunctionHooks3`).
///
/// JIT'd code calls it without saving any registers first, so the hook must preserve every
/// register it touches (in practice, a naked-asm stub); this type is the IDL's C signature.
pub type FunctionEnter3 = unsafe extern "system" fn(functionIDOrClientID: FunctionIDOrClientID);
/// Fast-path leave hook; same caveat as [`FunctionEnter3`].
pub type FunctionLeave3 = unsafe extern "system" fn(functionIDOrClientID: FunctionIDOrClientID);
/// Fast-path tail-call hook; same caveat as [`FunctionEnter3`].
pub type FunctionTailcall3 = unsafe extern "system" fn(functionIDOrClientID: FunctionIDOrClientID);

/// Slow-path enter hook (`SetEnterLeaveFunctionHooks3WithInfo`); `eltInfo` feeds
/// `GetFunctionEnter3Info`.
pub type FunctionEnter3WithInfo = unsafe extern "system" fn(
    functionIDOrClientID: FunctionIDOrClientID,
    eltInfo: COR_PRF_ELT_INFO,
);
/// Slow-path leave hook; `eltInfo` feeds `GetFunctionLeave3Info`.
pub type FunctionLeave3WithInfo = unsafe extern "system" fn(
    functionIDOrClientID: FunctionIDOrClientID,
    eltInfo: COR_PRF_ELT_INFO,
);
/// Slow-path tail-call hook; `eltInfo` feeds `GetFunctionTailcall3Info`.
pub type FunctionTailcall3WithInfo = unsafe extern "system" fn(
    functionIDOrClientID: FunctionIDOrClientID,
    eltInfo: COR_PRF_ELT_INFO,
);

/// Called by `DoStackSnapshot` once per managed frame (or run of native frames, `funcId == 0`).
///
/// `context` holds `contextSize` bytes of platform CONTEXT, valid only with
/// `COR_PRF_SNAPSHOT_REGISTER_CONTEXT`. Return a failure HRESULT to stop the walk.
pub type StackSnapshotCallback = unsafe extern "system" fn(
    funcId: FunctionID,
    ip: UINT_PTR,
    frameInfo: COR_PRF_FRAME_INFO,
    contextSize: ULONG32,
    context: *mut BYTE,
    clientData: *mut c_void,
) -> HRESULT;

/// Called by `EnumerateObjectReferences` for each reference; return FALSE to stop.
pub type ObjectReferenceCallback = unsafe extern "system" fn(
    root: ObjectID,
    reference: *mut ObjectID,
    clientData: *mut c_void,
) -> BOOL;

/// Called by `EnumerateGCHeapObjects` for each heap object; return FALSE to stop.
pub type ObjectCallback =
    unsafe extern "system" fn(object: ObjectID, callbackState: *mut c_void) -> BOOL;

/// Enable/disable notification of a provider made with `EventPipeCreateProvider2`.
pub type EventPipeProviderCallback = unsafe extern "system" fn(
    source_id: *const u8,
    is_enabled: u32,
    level: u8,
    match_any_keywords: u64,
    match_all_keywords: u64,
    filter_data: *mut COR_PRF_FILTER_DATA,
    callback_data: *mut c_void,
);

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn sizes_on_64_bit() {
        assert_eq!(size_of::<OSINFO>(), 12);
        assert_eq!(size_of::<ASSEMBLYMETADATA>(), 56);
        assert_eq!(offset_of!(ASSEMBLYMETADATA, szLocale), 8);
        assert_eq!(offset_of!(ASSEMBLYMETADATA, rProcessor), 24);
        assert_eq!(offset_of!(ASSEMBLYMETADATA, rOS), 40);
        assert_eq!(size_of::<COR_IL_MAP>(), 12);
        assert_eq!(size_of::<COR_DEBUG_IL_TO_NATIVE_MAP>(), 12);
        assert_eq!(size_of::<COR_FIELD_OFFSET>(), 8);
        assert_eq!(size_of::<COR_PRF_FUNCTION_ARGUMENT_RANGE>(), 16);
        assert_eq!(size_of::<COR_PRF_FUNCTION_ARGUMENT_INFO>(), 24);
        assert_eq!(offset_of!(COR_PRF_FUNCTION_ARGUMENT_INFO, ranges), 8);
        assert_eq!(size_of::<COR_PRF_CODE_INFO>(), 16);
        assert_eq!(size_of::<COR_PRF_FUNCTION>(), 16);
        assert_eq!(size_of::<COR_PRF_ASSEMBLY_REFERENCE_INFO>(), 48);
        assert_eq!(offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, szName), 16);
        assert_eq!(offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, cbHashValue), 40);
        assert_eq!(
            offset_of!(COR_PRF_ASSEMBLY_REFERENCE_INFO, dwAssemblyRefFlags),
            44
        );
        assert_eq!(size_of::<COR_PRF_METHOD>(), 16);
        assert_eq!(size_of::<COR_PRF_GC_GENERATION_RANGE>(), 32);
        assert_eq!(offset_of!(COR_PRF_GC_GENERATION_RANGE, rangeStart), 8);
        assert_eq!(size_of::<COR_PRF_NONGC_HEAP_RANGE>(), 24);
        assert_eq!(size_of::<COR_PRF_EX_CLAUSE_INFO>(), 32);
        assert_eq!(offset_of!(COR_PRF_EX_CLAUSE_INFO, programCounter), 8);
        assert_eq!(size_of::<COR_PRF_EVENTPIPE_PROVIDER_CONFIG>(), 32);
        assert_eq!(
            offset_of!(COR_PRF_EVENTPIPE_PROVIDER_CONFIG, loggingLevel),
            16
        );
        assert_eq!(
            offset_of!(COR_PRF_EVENTPIPE_PROVIDER_CONFIG, filterData),
            24
        );
        assert_eq!(size_of::<COR_PRF_EVENTPIPE_PARAM_DESC>(), 16);
        assert_eq!(offset_of!(COR_PRF_EVENTPIPE_PARAM_DESC, name), 8);
        assert_eq!(size_of::<COR_PRF_EVENT_DATA>(), 16);
        assert_eq!(size_of::<COR_PRF_FILTER_DATA>(), 16);
        assert_eq!(align_of::<COR_PRF_EVENT_DATA>(), 8);
    }

    #[test]
    fn hook_pointers_are_one_word_and_nullable() {
        assert_eq!(size_of::<Option<FunctionEnter3>>(), size_of::<usize>());
        assert_eq!(
            size_of::<Option<FunctionEnter3WithInfo>>(),
            size_of::<usize>()
        );
        assert_eq!(
            size_of::<Option<StackSnapshotCallback>>(),
            size_of::<usize>()
        );
        assert_eq!(
            size_of::<Option<EventPipeProviderCallback>>(),
            size_of::<usize>()
        );
    }
}
