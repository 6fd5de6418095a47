//! The small helper interfaces of `corprof.idl` (enumerators, IL allocator, ReJIT control,
//! assembly-reference provider) and COM's IClassFactory, through which the runtime creates the
//! profiler.
//!
//! `Next` methods write up to `celt` elements into a caller-provided array and report the
//! number written in `*pceltFetched`.

use core::ffi::c_void;

use crate::com_vtable;
use crate::structs::{
    COR_IL_MAP, COR_PRF_ASSEMBLY_REFERENCE_INFO, COR_PRF_FUNCTION, COR_PRF_METHOD,
};
use crate::types::*;
use crate::vtable::IUnknownVtbl;

com_vtable! {
    /// IClassFactory: returned by `DllGetClassObject`; the runtime calls `CreateInstance` to get
    /// the profiler.
    pub struct IClassFactoryVtbl("IClassFactory"): IUnknownVtbl {
        /// `pUnkOuter` is an aggregating IUnknown (null from the runtime).
        fn CreateInstance(
            pUnkOuter: *mut c_void,
            riid: REFIID,
            ppvObject: *mut *mut c_void,
        ) -> HRESULT;
        fn LockServer(fLock: BOOL) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerFunctionControl: how to recompile one method, handed to `GetReJITParameters`.
    pub struct ICorProfilerFunctionControlVtbl("ICorProfilerFunctionControl"): IUnknownVtbl {
        /// `flags` is a combination of `COR_PRF_CODEGEN_FLAGS`.
        fn SetCodegenFlags(flags: DWORD) -> HRESULT;
        /// The new method body: `cbNewILMethodHeader` bytes of header followed by IL.
        fn SetILFunctionBody(cbNewILMethodHeader: ULONG, pbNewILMethodHeader: LPCBYTE) -> HRESULT;
        /// Not implemented by the runtime (E_NOTIMPL).
        fn SetILInstrumentedCodeMap(
            cILMapEntries: ULONG,
            rgILMapEntries: *const COR_IL_MAP,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerAssemblyReferenceProvider: lets `GetAssemblyReferences` declare extra
    /// references.
    pub struct ICorProfilerAssemblyReferenceProviderVtbl("ICorProfilerAssemblyReferenceProvider"):
        IUnknownVtbl
    {
        fn AddAssemblyReference(
            pAssemblyRefInfo: *const COR_PRF_ASSEMBLY_REFERENCE_INFO,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerObjectEnum: enumerates ObjectIDs (frozen or non-GC-heap objects).
    pub struct ICorProfilerObjectEnumVtbl("ICorProfilerObjectEnum"): IUnknownVtbl {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        /// `ppEnum` receives another ICorProfilerObjectEnum.
        fn Clone(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, objects: *mut ObjectID, pceltFetched: *mut ULONG) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerFunctionEnum: enumerates JIT-compiled functions.
    pub struct ICorProfilerFunctionEnumVtbl("ICorProfilerFunctionEnum"): IUnknownVtbl {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        /// `ppEnum` receives another ICorProfilerFunctionEnum.
        fn Clone(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, ids: *mut COR_PRF_FUNCTION, pceltFetched: *mut ULONG) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerModuleEnum: enumerates loaded modules.
    pub struct ICorProfilerModuleEnumVtbl("ICorProfilerModuleEnum"): IUnknownVtbl {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        /// `ppEnum` receives another ICorProfilerModuleEnum.
        fn Clone(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, ids: *mut ModuleID, pceltFetched: *mut ULONG) -> HRESULT;
    }
}

com_vtable! {
    /// IMethodMalloc: deprecated allocator for IL bodies given to `SetILFunctionBody`; memory is
    /// never freed.
    pub struct IMethodMallocVtbl("IMethodMalloc"): IUnknownVtbl {
        /// Returns the block, or null on failure (this method returns a pointer, not an HRESULT).
        fn Alloc(cb: ULONG) -> *mut c_void;
    }
}

com_vtable! {
    /// ICorProfilerMethodEnum: enumerates methods as (module, token) pairs.
    pub struct ICorProfilerMethodEnumVtbl("ICorProfilerMethodEnum"): IUnknownVtbl {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        /// `ppEnum` receives another ICorProfilerMethodEnum.
        fn Clone(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, elements: *mut COR_PRF_METHOD, pceltFetched: *mut ULONG) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerThreadEnum: enumerates managed threads.
    pub struct ICorProfilerThreadEnumVtbl("ICorProfilerThreadEnum"): IUnknownVtbl {
        fn Skip(celt: ULONG) -> HRESULT;
        fn Reset() -> HRESULT;
        /// `ppEnum` receives another ICorProfilerThreadEnum.
        fn Clone(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetCount(pcelt: *mut ULONG) -> HRESULT;
        fn Next(celt: ULONG, ids: *mut ThreadID, pceltFetched: *mut ULONG) -> HRESULT;
    }
}
