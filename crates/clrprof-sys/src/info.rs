//! `ICorProfilerInfo` … `ICorProfilerInfo15`: the interfaces the runtime implements and the
//! profiler calls (QueryInterface the IUnknown given to `Initialize` for the version wanted).
//!
//! Each vtable extends the previous one, methods in the IDL's order, with the IDL's method and
//! parameter names. Parameter conventions: interface pointers are `*mut c_void` (out-params
//! receiving one are `*mut *mut c_void`); `[in]` arrays are `*const T`; `[out]` and `[in, out]`
//! arrays and pointers are `*mut T`; a function-pointer parameter is `Option<F>` (the same
//! layout as a nullable C function pointer), since the IDL lets most hooks be null.

use core::ffi::c_void;

use crate::com_vtable;
use crate::consts::*;
use crate::structs::*;
use crate::types::*;
use crate::vtable::IUnknownVtbl;

/// Win32 `HANDLE` (only `GetHandleFromThread` uses it).
type HANDLE = *mut c_void;

com_vtable! {
    /// ICorProfilerInfo: the .NET 1.0 interface (IDs, names, event mask, IL bodies, metadata).
    pub struct ICorProfilerInfoVtbl("ICorProfilerInfo"): IUnknownVtbl {
        fn GetClassFromObject(objectId: ObjectID, pClassId: *mut ClassID) -> HRESULT;
        /// Does not work for generic types: use `GetClassFromTokenAndTypeArgs`.
        fn GetClassFromToken(moduleId: ModuleID, typeDef: mdTypeDef, pClassId: *mut ClassID) -> HRESULT;
        /// Superseded by `GetCodeInfo2`.
        fn GetCodeInfo(functionId: FunctionID, pStart: *mut LPCBYTE, pcSize: *mut ULONG) -> HRESULT;
        fn GetEventMask(pdwEvents: *mut DWORD) -> HRESULT;
        fn GetFunctionFromIP(ip: LPCBYTE, pFunctionId: *mut FunctionID) -> HRESULT;
        /// Does not work for generic functions: use `GetFunctionFromTokenAndTypeArgs`.
        fn GetFunctionFromToken(moduleId: ModuleID, token: mdToken, pFunctionId: *mut FunctionID) -> HRESULT;
        /// The caller must `DuplicateHandle` the returned handle before using it (Windows).
        fn GetHandleFromThread(threadId: ThreadID, phThread: *mut HANDLE) -> HRESULT;
        /// Obsolete (fails for objects over 4 GB): use `GetObjectSize2`.
        fn GetObjectSize(objectId: ObjectID, pcSize: *mut ULONG) -> HRESULT;
        /// S_OK for an array class (out-params filled), S_FALSE otherwise.
        fn IsArrayClass(
            classId: ClassID,
            pBaseElemType: *mut CorElementType,
            pBaseClassId: *mut ClassID,
            pcRank: *mut ULONG,
        ) -> HRESULT;
        fn GetThreadInfo(threadId: ThreadID, pdwWin32ThreadId: *mut DWORD) -> HRESULT;
        /// CORPROF_E_NOT_MANAGED_THREAD on runtime-internal threads.
        fn GetCurrentThreadID(pThreadId: *mut ThreadID) -> HRESULT;
        fn GetClassIDInfo(classId: ClassID, pModuleId: *mut ModuleID, pTypeDefToken: *mut mdTypeDef) -> HRESULT;
        /// `*pClassId` may be 0 for functions of generic classes: see `GetFunctionInfo2`.
        fn GetFunctionInfo(
            functionId: FunctionID,
            pClassId: *mut ClassID,
            pModuleId: *mut ModuleID,
            pToken: *mut mdToken,
        ) -> HRESULT;
        /// `dwEvents` is a combination of `COR_PRF_MONITOR` flags.
        fn SetEventMask(dwEvents: DWORD) -> HRESULT;
        /// Deprecated V1 hooks; only from `Initialize`.
        fn SetEnterLeaveFunctionHooks(
            pFuncEnter: Option<FunctionEnter>,
            pFuncLeave: Option<FunctionLeave>,
            pFuncTailcall: Option<FunctionTailcall>,
        ) -> HRESULT;
        fn SetFunctionIDMapper(pFunc: Option<FunctionIDMapper>) -> HRESULT;
        /// `ppImport` receives the metadata interface `riid` (e.g. IMetaDataImport).
        fn GetTokenAndMetaDataFromFunction(
            functionId: FunctionID,
            riid: REFIID,
            ppImport: *mut *mut c_void,
            pToken: *mut mdToken,
        ) -> HRESULT;
        /// `szName` gets the file name (or metadata scope name); lengths include the NUL.
        fn GetModuleInfo(
            moduleId: ModuleID,
            ppBaseLoadAddress: *mut LPCBYTE,
            cchName: ULONG,
            pcchName: *mut ULONG,
            szName: *mut WCHAR,
            pAssemblyId: *mut AssemblyID,
        ) -> HRESULT;
        /// `dwOpenFlags` is `ofRead` or `ofWrite`; S_FALSE and null `ppOut` for modules without metadata.
        fn GetModuleMetaData(moduleId: ModuleID, dwOpenFlags: DWORD, riid: REFIID, ppOut: *mut *mut c_void) -> HRESULT;
        /// `*ppMethodHeader` points at the method's IL header (tiny or fat), then its IL.
        fn GetILFunctionBody(
            moduleId: ModuleID,
            methodId: mdMethodDef,
            ppMethodHeader: *mut LPCBYTE,
            pcbMethodSize: *mut ULONG,
        ) -> HRESULT;
        /// `ppMalloc` receives an IMethodMalloc.
        fn GetILFunctionBodyAllocator(moduleId: ModuleID, ppMalloc: *mut *mut c_void) -> HRESULT;
        /// The new body must come from the allocator above; only before the method is JIT-compiled.
        fn SetILFunctionBody(moduleId: ModuleID, methodid: mdMethodDef, pbNewILMethodHeader: LPCBYTE) -> HRESULT;
        fn GetAppDomainInfo(
            appDomainId: AppDomainID,
            cchName: ULONG,
            pcchName: *mut ULONG,
            szName: *mut WCHAR,
            pProcessId: *mut ProcessID,
        ) -> HRESULT;
        fn GetAssemblyInfo(
            assemblyId: AssemblyID,
            cchName: ULONG,
            pcchName: *mut ULONG,
            szName: *mut WCHAR,
            pAppDomainId: *mut AppDomainID,
            pModuleId: *mut ModuleID,
        ) -> HRESULT;
        /// Deprecated: always E_NOTIMPL.
        fn SetFunctionReJIT(functionId: FunctionID) -> HRESULT;
        /// Call from a thread with no profiler callback on its stack.
        fn ForceGC() -> HRESULT;
        fn SetILInstrumentedCodeMap(
            functionId: FunctionID,
            fStartJit: BOOL,
            cILMapEntries: ULONG,
            rgILMapEntries: *const COR_IL_MAP,
        ) -> HRESULT;
        /// Deprecated.
        fn GetInprocInspectionInterface(ppicd: *mut *mut c_void) -> HRESULT;
        /// Deprecated.
        fn GetInprocInspectionIThisThread(ppicd: *mut *mut c_void) -> HRESULT;
        fn GetThreadContext(threadId: ThreadID, pContextId: *mut ContextID) -> HRESULT;
        /// Deprecated.
        fn BeginInprocDebugging(fThisThreadOnly: BOOL, pdwProfilerContext: *mut DWORD) -> HRESULT;
        /// Deprecated.
        fn EndInprocDebugging(dwProfilerContext: DWORD) -> HRESULT;
        fn GetILToNativeMapping(
            functionId: FunctionID,
            cMap: ULONG32,
            pcMap: *mut ULONG32,
            map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo2: .NET 2.0 additions (stack snapshots, generics, statics, GC layout).
    pub struct ICorProfilerInfo2Vtbl("ICorProfilerInfo2"): ICorProfilerInfoVtbl {
        /// `thread` 0 is the current thread; `infoFlags` is a `COR_PRF_SNAPSHOT_INFO`.
        fn DoStackSnapshot(
            thread: ThreadID,
            callback: Option<StackSnapshotCallback>,
            infoFlags: ULONG32,
            clientData: *mut c_void,
            context: *const BYTE,
            contextSize: ULONG32,
        ) -> HRESULT;
        /// Deprecated V2 hooks; only from `Initialize`.
        fn SetEnterLeaveFunctionHooks2(
            pFuncEnter: Option<FunctionEnter2>,
            pFuncLeave: Option<FunctionLeave2>,
            pFuncTailcall: Option<FunctionTailcall2>,
        ) -> HRESULT;
        fn GetFunctionInfo2(
            funcId: FunctionID,
            frameInfo: COR_PRF_FRAME_INFO,
            pClassId: *mut ClassID,
            pModuleId: *mut ModuleID,
            pToken: *mut mdToken,
            cTypeArgs: ULONG32,
            pcTypeArgs: *mut ULONG32,
            typeArgs: *mut ClassID,
        ) -> HRESULT;
        fn GetStringLayout(
            pBufferLengthOffset: *mut ULONG,
            pStringLengthOffset: *mut ULONG,
            pBufferOffset: *mut ULONG,
        ) -> HRESULT;
        /// `rFieldOffset` is `[in, out]`; E_INVALIDARG for string and array classes.
        fn GetClassLayout(
            classID: ClassID,
            rFieldOffset: *mut COR_FIELD_OFFSET,
            cFieldOffset: ULONG,
            pcFieldOffset: *mut ULONG,
            pulClassSize: *mut ULONG,
        ) -> HRESULT;
        fn GetClassIDInfo2(
            classId: ClassID,
            pModuleId: *mut ModuleID,
            pTypeDefToken: *mut mdTypeDef,
            pParentClassId: *mut ClassID,
            cNumTypeArgs: ULONG32,
            pcNumTypeArgs: *mut ULONG32,
            typeArgs: *mut ClassID,
        ) -> HRESULT;
        fn GetCodeInfo2(
            functionID: FunctionID,
            cCodeInfos: ULONG32,
            pcCodeInfos: *mut ULONG32,
            codeInfos: *mut COR_PRF_CODE_INFO,
        ) -> HRESULT;
        /// May load the type: risky inside load callbacks.
        fn GetClassFromTokenAndTypeArgs(
            moduleID: ModuleID,
            typeDef: mdTypeDef,
            cTypeArgs: ULONG32,
            typeArgs: *const ClassID,
            pClassID: *mut ClassID,
        ) -> HRESULT;
        /// May load the function: risky inside load callbacks.
        fn GetFunctionFromTokenAndTypeArgs(
            moduleID: ModuleID,
            funcDef: mdMethodDef,
            classId: ClassID,
            cTypeArgs: ULONG32,
            typeArgs: *const ClassID,
            pFunctionID: *mut FunctionID,
        ) -> HRESULT;
        /// `ppEnum` receives an ICorProfilerObjectEnum.
        fn EnumModuleFrozenObjects(moduleID: ModuleID, ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetArrayObjectInfo(
            objectId: ObjectID,
            cDimensions: ULONG32,
            pDimensionSizes: *mut ULONG32,
            pDimensionLowerBounds: *mut INT,
            ppData: *mut *mut BYTE,
        ) -> HRESULT;
        fn GetBoxClassLayout(classId: ClassID, pBufferOffset: *mut ULONG32) -> HRESULT;
        fn GetThreadAppDomain(threadId: ThreadID, pAppDomainId: *mut AppDomainID) -> HRESULT;
        fn GetRVAStaticAddress(classId: ClassID, fieldToken: mdFieldDef, ppAddress: *mut *mut c_void) -> HRESULT;
        fn GetAppDomainStaticAddress(
            classId: ClassID,
            fieldToken: mdFieldDef,
            appDomainId: AppDomainID,
            ppAddress: *mut *mut c_void,
        ) -> HRESULT;
        fn GetThreadStaticAddress(
            classId: ClassID,
            fieldToken: mdFieldDef,
            threadId: ThreadID,
            ppAddress: *mut *mut c_void,
        ) -> HRESULT;
        fn GetContextStaticAddress(
            classId: ClassID,
            fieldToken: mdFieldDef,
            contextId: ContextID,
            ppAddress: *mut *mut c_void,
        ) -> HRESULT;
        fn GetStaticFieldInfo(classId: ClassID, fieldToken: mdFieldDef, pFieldInfo: *mut COR_PRF_STATIC_TYPE) -> HRESULT;
        /// Not callable between GarbageCollectionStarted and GarbageCollectionFinished.
        fn GetGenerationBounds(
            cObjectRanges: ULONG,
            pcObjectRanges: *mut ULONG,
            ranges: *mut COR_PRF_GC_GENERATION_RANGE,
        ) -> HRESULT;
        fn GetObjectGeneration(objectId: ObjectID, range: *mut COR_PRF_GC_GENERATION_RANGE) -> HRESULT;
        /// S_FALSE when no exception clause is active.
        fn GetNotifiedExceptionClauseInfo(pinfo: *mut COR_PRF_EX_CLAUSE_INFO) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo3: .NET 4 additions (attach/detach, ELT3 hooks, runtime information).
    pub struct ICorProfilerInfo3Vtbl("ICorProfilerInfo3"): ICorProfilerInfo2Vtbl {
        /// `ppEnum` receives an ICorProfilerFunctionEnum (reJitId always 0: see `EnumJITedFunctions2`).
        fn EnumJITedFunctions(ppEnum: *mut *mut c_void) -> HRESULT;
        fn RequestProfilerDetach(dwExpectedCompletionMilliseconds: DWORD) -> HRESULT;
        fn SetFunctionIDMapper2(pFunc: Option<FunctionIDMapper2>, clientData: *mut c_void) -> HRESULT;
        fn GetStringLayout2(pStringLengthOffset: *mut ULONG, pBufferOffset: *mut ULONG) -> HRESULT;
        /// Fast-path hooks; only from `Initialize`.
        fn SetEnterLeaveFunctionHooks3(
            pFuncEnter3: Option<FunctionEnter3>,
            pFuncLeave3: Option<FunctionLeave3>,
            pFuncTailcall3: Option<FunctionTailcall3>,
        ) -> HRESULT;
        /// Slow-path hooks (need ARGS/RETVAL/FRAME_INFO flags); only from `Initialize`.
        fn SetEnterLeaveFunctionHooks3WithInfo(
            pFuncEnter3WithInfo: Option<FunctionEnter3WithInfo>,
            pFuncLeave3WithInfo: Option<FunctionLeave3WithInfo>,
            pFuncTailcall3WithInfo: Option<FunctionTailcall3WithInfo>,
        ) -> HRESULT;
        /// `*pcbArgumentInfo` is the buffer size in, the size needed out.
        fn GetFunctionEnter3Info(
            functionId: FunctionID,
            eltInfo: COR_PRF_ELT_INFO,
            pFrameInfo: *mut COR_PRF_FRAME_INFO,
            pcbArgumentInfo: *mut ULONG,
            pArgumentInfo: *mut COR_PRF_FUNCTION_ARGUMENT_INFO,
        ) -> HRESULT;
        fn GetFunctionLeave3Info(
            functionId: FunctionID,
            eltInfo: COR_PRF_ELT_INFO,
            pFrameInfo: *mut COR_PRF_FRAME_INFO,
            pRetvalRange: *mut COR_PRF_FUNCTION_ARGUMENT_RANGE,
        ) -> HRESULT;
        fn GetFunctionTailcall3Info(
            functionId: FunctionID,
            eltInfo: COR_PRF_ELT_INFO,
            pFrameInfo: *mut COR_PRF_FRAME_INFO,
        ) -> HRESULT;
        /// `ppEnum` receives an ICorProfilerModuleEnum.
        fn EnumModules(ppEnum: *mut *mut c_void) -> HRESULT;
        /// Any out-param may be null, but `pcchVersionString` must be set when `szVersionString` is.
        fn GetRuntimeInformation(
            pClrInstanceId: *mut USHORT,
            pRuntimeType: *mut COR_PRF_RUNTIME_TYPE,
            pMajorVersion: *mut USHORT,
            pMinorVersion: *mut USHORT,
            pBuildNumber: *mut USHORT,
            pQFEVersion: *mut USHORT,
            cchVersionString: ULONG,
            pcchVersionString: *mut ULONG,
            szVersionString: *mut WCHAR,
        ) -> HRESULT;
        fn GetThreadStaticAddress2(
            classId: ClassID,
            fieldToken: mdFieldDef,
            appDomainId: AppDomainID,
            threadId: ThreadID,
            ppAddress: *mut *mut c_void,
        ) -> HRESULT;
        fn GetAppDomainsContainingModule(
            moduleId: ModuleID,
            cAppDomainIds: ULONG32,
            pcAppDomainIds: *mut ULONG32,
            appDomainIds: *mut AppDomainID,
        ) -> HRESULT;
        /// `GetModuleInfo` plus `COR_PRF_MODULE_FLAGS` in `*pdwModuleFlags`.
        fn GetModuleInfo2(
            moduleId: ModuleID,
            ppBaseLoadAddress: *mut LPCBYTE,
            cchName: ULONG,
            pcchName: *mut ULONG,
            szName: *mut WCHAR,
            pAssemblyId: *mut AssemblyID,
            pdwModuleFlags: *mut DWORD,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo4: .NET 4.5 additions (ReJIT, thread enumeration, 64-bit object sizes).
    pub struct ICorProfilerInfo4Vtbl("ICorProfilerInfo4"): ICorProfilerInfo3Vtbl {
        /// `ppEnum` receives an ICorProfilerThreadEnum.
        fn EnumThreads(ppEnum: *mut *mut c_void) -> HRESULT;
        /// Call on a thread before it uses ReJIT or suspension APIs, to avoid deadlocks.
        fn InitializeCurrentThread() -> HRESULT;
        /// Needs `COR_PRF_ENABLE_REJIT`; per-method errors arrive through `ReJITError`.
        fn RequestReJIT(cFunctions: ULONG, moduleIds: *const ModuleID, methodIds: *const mdMethodDef) -> HRESULT;
        fn RequestRevert(
            cFunctions: ULONG,
            moduleIds: *const ModuleID,
            methodIds: *const mdMethodDef,
            status: *mut HRESULT,
        ) -> HRESULT;
        fn GetCodeInfo3(
            functionID: FunctionID,
            reJitId: ReJITID,
            cCodeInfos: ULONG32,
            pcCodeInfos: *mut ULONG32,
            codeInfos: *mut COR_PRF_CODE_INFO,
        ) -> HRESULT;
        fn GetFunctionFromIP2(ip: LPCBYTE, pFunctionId: *mut FunctionID, pReJitId: *mut ReJITID) -> HRESULT;
        fn GetReJITIDs(
            functionId: FunctionID,
            cReJitIds: ULONG,
            pcReJitIds: *mut ULONG,
            reJitIds: *mut ReJITID,
        ) -> HRESULT;
        fn GetILToNativeMapping2(
            functionId: FunctionID,
            reJitId: ReJITID,
            cMap: ULONG32,
            pcMap: *mut ULONG32,
            map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
        ) -> HRESULT;
        /// `ppEnum` receives an ICorProfilerFunctionEnum with ReJIT IDs.
        fn EnumJITedFunctions2(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetObjectSize2(objectId: ObjectID, pcSize: *mut SIZE_T) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo5: the high event mask (`COR_PRF_HIGH_MONITOR`).
    pub struct ICorProfilerInfo5Vtbl("ICorProfilerInfo5"): ICorProfilerInfo4Vtbl {
        fn GetEventMask2(pdwEventsLow: *mut DWORD, pdwEventsHigh: *mut DWORD) -> HRESULT;
        /// `dwEventsLow`: `COR_PRF_MONITOR` flags; `dwEventsHigh`: `COR_PRF_HIGH_MONITOR` flags.
        fn SetEventMask2(dwEventsLow: DWORD, dwEventsHigh: DWORD) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo6: inliners of a method in NGen/ReadyToRun images.
    pub struct ICorProfilerInfo6Vtbl("ICorProfilerInfo6"): ICorProfilerInfo5Vtbl {
        /// `ppEnum` receives an ICorProfilerMethodEnum.
        fn EnumNgenModuleMethodsInliningThisMethod(
            inlinersModuleId: ModuleID,
            inlineeModuleId: ModuleID,
            inlineeMethodId: mdMethodDef,
            incompleteData: *mut BOOL,
            ppEnum: *mut *mut c_void,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo7: applying emitted metadata, in-memory symbols.
    pub struct ICorProfilerInfo7Vtbl("ICorProfilerInfo7"): ICorProfilerInfo6Vtbl {
        fn ApplyMetaData(moduleId: ModuleID) -> HRESULT;
        fn GetInMemorySymbolsLength(moduleId: ModuleID, pCountSymbolBytes: *mut DWORD) -> HRESULT;
        fn ReadInMemorySymbols(
            moduleId: ModuleID,
            symbolsReadOffset: DWORD,
            pSymbolBytes: *mut BYTE,
            countSymbolBytes: DWORD,
            pCountSymbolBytesRead: *mut DWORD,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo8: dynamic methods (IL stubs, LCG) that have no metadata.
    pub struct ICorProfilerInfo8Vtbl("ICorProfilerInfo8"): ICorProfilerInfo7Vtbl {
        fn IsFunctionDynamic(functionId: FunctionID, isDynamic: *mut BOOL) -> HRESULT;
        /// Like `GetFunctionFromIP2`, but also for dynamic methods.
        fn GetFunctionFromIP3(ip: LPCBYTE, functionId: *mut FunctionID, pReJitId: *mut ReJITID) -> HRESULT;
        fn GetDynamicFunctionInfo(
            functionId: FunctionID,
            moduleId: *mut ModuleID,
            ppvSig: *mut PCCOR_SIGNATURE,
            pbSig: *mut ULONG,
            cchName: ULONG,
            pcchName: *mut ULONG,
            wszName: *mut WCHAR,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo9: native code versions (tiered compilation).
    pub struct ICorProfilerInfo9Vtbl("ICorProfilerInfo9"): ICorProfilerInfo8Vtbl {
        fn GetNativeCodeStartAddresses(
            functionID: FunctionID,
            reJitId: ReJITID,
            cCodeStartAddresses: ULONG32,
            pcCodeStartAddresses: *mut ULONG32,
            codeStartAddresses: *mut UINT_PTR,
        ) -> HRESULT;
        fn GetILToNativeMapping3(
            pNativeCodeStartAddress: UINT_PTR,
            cMap: ULONG32,
            pcMap: *mut ULONG32,
            map: *mut COR_DEBUG_IL_TO_NATIVE_MAP,
        ) -> HRESULT;
        fn GetCodeInfo4(
            pNativeCodeStartAddress: UINT_PTR,
            cCodeInfos: ULONG32,
            pcCodeInfos: *mut ULONG32,
            codeInfos: *mut COR_PRF_CODE_INFO,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo10: object references, ReJIT with inliners, runtime suspension.
    pub struct ICorProfilerInfo10Vtbl("ICorProfilerInfo10"): ICorProfilerInfo9Vtbl {
        fn EnumerateObjectReferences(
            objectId: ObjectID,
            callback: Option<ObjectReferenceCallback>,
            clientData: *mut c_void,
        ) -> HRESULT;
        fn IsFrozenObject(objectId: ObjectID, pbFrozen: *mut BOOL) -> HRESULT;
        fn GetLOHObjectSizeThreshold(pThreshold: *mut DWORD) -> HRESULT;
        /// `dwRejitFlags` is a combination of `COR_PRF_REJIT_FLAGS`.
        fn RequestReJITWithInliners(
            dwRejitFlags: DWORD,
            cFunctions: ULONG,
            moduleIds: *const ModuleID,
            methodIds: *const mdMethodDef,
        ) -> HRESULT;
        /// Suspends the runtime without a GC; no allocation or locking until `ResumeRuntime`.
        fn SuspendRuntime() -> HRESULT;
        fn ResumeRuntime() -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo11: environment variables of the managed process.
    pub struct ICorProfilerInfo11Vtbl("ICorProfilerInfo11"): ICorProfilerInfo10Vtbl {
        fn GetEnvironmentVariable(
            szName: *const WCHAR,
            cchValue: ULONG,
            pcchValue: *mut ULONG,
            szValue: *mut WCHAR,
        ) -> HRESULT;
        /// A null `szValue` deletes the variable.
        fn SetEnvironmentVariable(szName: *const WCHAR, szValue: *const WCHAR) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo12: in-process EventPipe sessions and providers.
    pub struct ICorProfilerInfo12Vtbl("ICorProfilerInfo12"): ICorProfilerInfo11Vtbl {
        fn EventPipeStartSession(
            cProviderConfigs: u32,
            pProviderConfigs: *const COR_PRF_EVENTPIPE_PROVIDER_CONFIG,
            requestRundown: BOOL,
            pSession: *mut EVENTPIPE_SESSION,
        ) -> HRESULT;
        /// `providerConfig` is passed by value, as in the IDL.
        fn EventPipeAddProviderToSession(
            session: EVENTPIPE_SESSION,
            providerConfig: COR_PRF_EVENTPIPE_PROVIDER_CONFIG,
        ) -> HRESULT;
        fn EventPipeStopSession(session: EVENTPIPE_SESSION) -> HRESULT;
        fn EventPipeCreateProvider(providerName: *const WCHAR, pProvider: *mut EVENTPIPE_PROVIDER) -> HRESULT;
        fn EventPipeGetProviderInfo(
            provider: EVENTPIPE_PROVIDER,
            cchName: ULONG,
            pcchName: *mut ULONG,
            providerName: *mut WCHAR,
        ) -> HRESULT;
        fn EventPipeDefineEvent(
            provider: EVENTPIPE_PROVIDER,
            eventName: *const WCHAR,
            eventID: u32,
            keywords: u64,
            eventVersion: u32,
            level: u32,
            opcode: u8,
            needStack: BOOL,
            cParamDescs: u32,
            pParamDescs: *const COR_PRF_EVENTPIPE_PARAM_DESC,
            pEvent: *mut EVENTPIPE_EVENT,
        ) -> HRESULT;
        fn EventPipeWriteEvent(
            event: EVENTPIPE_EVENT,
            cData: u32,
            data: *const COR_PRF_EVENT_DATA,
            pActivityId: LPCGUID,
            pRelatedActivityId: LPCGUID,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo13: GC handles owned by the profiler.
    pub struct ICorProfilerInfo13Vtbl("ICorProfilerInfo13"): ICorProfilerInfo12Vtbl {
        fn CreateHandle(object: ObjectID, r#type: COR_PRF_HANDLE_TYPE, pHandle: *mut ObjectHandleID) -> HRESULT;
        fn DestroyHandle(handle: ObjectHandleID) -> HRESULT;
        fn GetObjectIDFromHandle(handle: ObjectHandleID, pObject: *mut ObjectID) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo14: the non-GC (frozen) heap, EventPipe providers with enable callbacks.
    pub struct ICorProfilerInfo14Vtbl("ICorProfilerInfo14"): ICorProfilerInfo13Vtbl {
        /// `ppEnum` receives an ICorProfilerObjectEnum.
        fn EnumerateNonGCObjects(ppEnum: *mut *mut c_void) -> HRESULT;
        fn GetNonGCHeapBounds(
            cObjectRanges: ULONG,
            pcObjectRanges: *mut ULONG,
            ranges: *mut COR_PRF_NONGC_HEAP_RANGE,
        ) -> HRESULT;
        fn EventPipeCreateProvider2(
            providerName: *const WCHAR,
            pCallback: Option<EventPipeProviderCallback>,
            pProvider: *mut EVENTPIPE_PROVIDER,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerInfo15: walking every object of the GC heap.
    pub struct ICorProfilerInfo15Vtbl("ICorProfilerInfo15"): ICorProfilerInfo14Vtbl {
        /// Suspends the runtime itself unless the caller already did (`SuspendRuntime`).
        fn EnumerateGCHeapObjects(callback: Option<ObjectCallback>, callbackState: *mut c_void) -> HRESULT;
    }
}
