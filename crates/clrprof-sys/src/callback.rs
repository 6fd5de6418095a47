//! The callback interfaces ICorProfilerCallback .. ICorProfilerCallback11: the runtime calls
//! these on the profiler.
//!
//! Each version extends the previous one, so one [`ICorProfilerCallback11Vtbl`] laid out in
//! full serves every version the runtime may ask for. Method and parameter names are the IDL's.
//!
//! Parameter conventions: interface pointers are `*mut c_void`; `[in]` arrays (`T name[]` in
//! the IDL) are `*const T`, since the profiler only reads them; other pointers keep the
//! constness the IDL writes.

use core::ffi::c_void;

use crate::com_vtable;
use crate::consts::*;
use crate::types::*;
use crate::vtable::IUnknownVtbl;

com_vtable! {
    /// ICorProfilerCallback: the original (.NET 1.x) set of notifications.
    pub struct ICorProfilerCallbackVtbl("ICorProfilerCallback"): IUnknownVtbl {
        /// First call; `pICorProfilerInfoUnk` is an IUnknown to QI for ICorProfilerInfoN.
        fn Initialize(pICorProfilerInfoUnk: *mut c_void) -> HRESULT;
        fn Shutdown() -> HRESULT;

        fn AppDomainCreationStarted(appDomainId: AppDomainID) -> HRESULT;
        fn AppDomainCreationFinished(appDomainId: AppDomainID, hrStatus: HRESULT) -> HRESULT;
        fn AppDomainShutdownStarted(appDomainId: AppDomainID) -> HRESULT;
        fn AppDomainShutdownFinished(appDomainId: AppDomainID, hrStatus: HRESULT) -> HRESULT;

        fn AssemblyLoadStarted(assemblyId: AssemblyID) -> HRESULT;
        fn AssemblyLoadFinished(assemblyId: AssemblyID, hrStatus: HRESULT) -> HRESULT;
        fn AssemblyUnloadStarted(assemblyId: AssemblyID) -> HRESULT;
        fn AssemblyUnloadFinished(assemblyId: AssemblyID, hrStatus: HRESULT) -> HRESULT;

        fn ModuleLoadStarted(moduleId: ModuleID) -> HRESULT;
        fn ModuleLoadFinished(moduleId: ModuleID, hrStatus: HRESULT) -> HRESULT;
        fn ModuleUnloadStarted(moduleId: ModuleID) -> HRESULT;
        fn ModuleUnloadFinished(moduleId: ModuleID, hrStatus: HRESULT) -> HRESULT;
        /// The module now knows its parent assembly (the IDL capitalises `AssemblyId` here).
        fn ModuleAttachedToAssembly(moduleId: ModuleID, AssemblyId: AssemblyID) -> HRESULT;

        fn ClassLoadStarted(classId: ClassID) -> HRESULT;
        fn ClassLoadFinished(classId: ClassID, hrStatus: HRESULT) -> HRESULT;
        fn ClassUnloadStarted(classId: ClassID) -> HRESULT;
        fn ClassUnloadFinished(classId: ClassID, hrStatus: HRESULT) -> HRESULT;

        fn FunctionUnloadStarted(functionId: FunctionID) -> HRESULT;

        fn JITCompilationStarted(functionId: FunctionID, fIsSafeToBlock: BOOL) -> HRESULT;
        fn JITCompilationFinished(
            functionId: FunctionID,
            hrStatus: HRESULT,
            fIsSafeToBlock: BOOL,
        ) -> HRESULT;
        /// Set `*pbUseCachedFunction = FALSE` to force the method to be JIT-compiled.
        fn JITCachedFunctionSearchStarted(
            functionId: FunctionID,
            pbUseCachedFunction: *mut BOOL,
        ) -> HRESULT;
        fn JITCachedFunctionSearchFinished(
            functionId: FunctionID,
            result: COR_PRF_JIT_CACHE,
        ) -> HRESULT;
        fn JITFunctionPitched(functionId: FunctionID) -> HRESULT;
        /// Set `*pfShouldInline = FALSE` to stop `calleeId` being inlined into `callerId`.
        fn JITInlining(
            callerId: FunctionID,
            calleeId: FunctionID,
            pfShouldInline: *mut BOOL,
        ) -> HRESULT;

        fn ThreadCreated(threadId: ThreadID) -> HRESULT;
        fn ThreadDestroyed(threadId: ThreadID) -> HRESULT;
        fn ThreadAssignedToOSThread(managedThreadId: ThreadID, osThreadId: DWORD) -> HRESULT;

        /// This and the seven Remoting* methods after it are never raised by CoreCLR.
        fn RemotingClientInvocationStarted() -> HRESULT;
        fn RemotingClientSendingMessage(pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT;
        fn RemotingClientReceivingReply(pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT;
        fn RemotingClientInvocationFinished() -> HRESULT;
        fn RemotingServerReceivingMessage(pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT;
        fn RemotingServerInvocationStarted() -> HRESULT;
        fn RemotingServerInvocationReturned() -> HRESULT;
        fn RemotingServerSendingReply(pCookie: *mut GUID, fIsAsync: BOOL) -> HRESULT;

        fn UnmanagedToManagedTransition(
            functionId: FunctionID,
            reason: COR_PRF_TRANSITION_REASON,
        ) -> HRESULT;
        fn ManagedToUnmanagedTransition(
            functionId: FunctionID,
            reason: COR_PRF_TRANSITION_REASON,
        ) -> HRESULT;

        fn RuntimeSuspendStarted(suspendReason: COR_PRF_SUSPEND_REASON) -> HRESULT;
        fn RuntimeSuspendFinished() -> HRESULT;
        fn RuntimeSuspendAborted() -> HRESULT;
        fn RuntimeResumeStarted() -> HRESULT;
        fn RuntimeResumeFinished() -> HRESULT;
        fn RuntimeThreadSuspended(threadId: ThreadID) -> HRESULT;
        fn RuntimeThreadResumed(threadId: ThreadID) -> HRESULT;

        /// Obsolete (lengths truncated to 32 bits); see `MovedReferences2`.
        fn MovedReferences(
            cMovedObjectIDRanges: ULONG,
            oldObjectIDRangeStart: *const ObjectID,
            newObjectIDRangeStart: *const ObjectID,
            cObjectIDRangeLength: *const ULONG,
        ) -> HRESULT;
        fn ObjectAllocated(objectId: ObjectID, classId: ClassID) -> HRESULT;
        fn ObjectsAllocatedByClass(
            cClassCount: ULONG,
            classIds: *const ClassID,
            cObjects: *const ULONG,
        ) -> HRESULT;
        fn ObjectReferences(
            objectId: ObjectID,
            classId: ClassID,
            cObjectRefs: ULONG,
            objectRefIds: *const ObjectID,
        ) -> HRESULT;
        fn RootReferences(cRootRefs: ULONG, rootRefIds: *const ObjectID) -> HRESULT;

        fn ExceptionThrown(thrownObjectId: ObjectID) -> HRESULT;
        fn ExceptionSearchFunctionEnter(functionId: FunctionID) -> HRESULT;
        fn ExceptionSearchFunctionLeave() -> HRESULT;
        fn ExceptionSearchFilterEnter(functionId: FunctionID) -> HRESULT;
        fn ExceptionSearchFilterLeave() -> HRESULT;
        fn ExceptionSearchCatcherFound(functionId: FunctionID) -> HRESULT;
        /// Deprecated.
        fn ExceptionOSHandlerEnter(__unused: UINT_PTR) -> HRESULT;
        /// Deprecated.
        fn ExceptionOSHandlerLeave(__unused: UINT_PTR) -> HRESULT;
        fn ExceptionUnwindFunctionEnter(functionId: FunctionID) -> HRESULT;
        fn ExceptionUnwindFunctionLeave() -> HRESULT;
        fn ExceptionUnwindFinallyEnter(functionId: FunctionID) -> HRESULT;
        fn ExceptionUnwindFinallyLeave() -> HRESULT;
        fn ExceptionCatcherEnter(functionId: FunctionID, objectId: ObjectID) -> HRESULT;
        fn ExceptionCatcherLeave() -> HRESULT;

        fn COMClassicVTableCreated(
            wrappedClassId: ClassID,
            implementedIID: REFGUID,
            pVTable: *mut c_void,
            cSlots: ULONG,
        ) -> HRESULT;
        fn COMClassicVTableDestroyed(
            wrappedClassId: ClassID,
            implementedIID: REFGUID,
            pVTable: *mut c_void,
        ) -> HRESULT;

        /// Deprecated: no longer delivered.
        fn ExceptionCLRCatcherFound() -> HRESULT;
        /// Deprecated: no longer delivered.
        fn ExceptionCLRCatcherExecute() -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback2: .NET 2.0 additions (thread names, GC details, handles).
    pub struct ICorProfilerCallback2Vtbl("ICorProfilerCallback2"): ICorProfilerCallbackVtbl {
        /// `name` holds `cchName` UTF-16 units and is not NUL-terminated.
        fn ThreadNameChanged(threadId: ThreadID, cchName: ULONG, name: *const WCHAR) -> HRESULT;
        /// `generationCollected[g]` is TRUE for each generation `g` collected by this GC.
        fn GarbageCollectionStarted(
            cGenerations: INT,
            generationCollected: *const BOOL,
            reason: COR_PRF_GC_REASON,
        ) -> HRESULT;
        /// Obsolete (lengths truncated to 32 bits); see `SurvivingReferences2`.
        fn SurvivingReferences(
            cSurvivingObjectIDRanges: ULONG,
            objectIDRangeStart: *const ObjectID,
            cObjectIDRangeLength: *const ULONG,
        ) -> HRESULT;
        fn GarbageCollectionFinished() -> HRESULT;
        fn FinalizeableObjectQueued(finalizerFlags: DWORD, objectID: ObjectID) -> HRESULT;
        fn RootReferences2(
            cRootRefs: ULONG,
            rootRefIds: *const ObjectID,
            rootKinds: *const COR_PRF_GC_ROOT_KIND,
            rootFlags: *const COR_PRF_GC_ROOT_FLAGS,
            rootIds: *const UINT_PTR,
        ) -> HRESULT;
        fn HandleCreated(handleId: GCHandleID, initialObjectId: ObjectID) -> HRESULT;
        fn HandleDestroyed(handleId: GCHandleID) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback3: attach and detach.
    pub struct ICorProfilerCallback3Vtbl("ICorProfilerCallback3"): ICorProfilerCallback2Vtbl {
        /// Replaces `Initialize` for an attached profiler; the client data comes from the attach
        /// request.
        fn InitializeForAttach(
            pCorProfilerInfoUnk: *mut c_void,
            pvClientData: *mut c_void,
            cbClientData: UINT,
        ) -> HRESULT;
        fn ProfilerAttachComplete() -> HRESULT;
        fn ProfilerDetachSucceeded() -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback4: ReJIT and 64-bit-safe moved/surviving references.
    pub struct ICorProfilerCallback4Vtbl("ICorProfilerCallback4"): ICorProfilerCallback3Vtbl {
        fn ReJITCompilationStarted(
            functionId: FunctionID,
            rejitId: ReJITID,
            fIsSafeToBlock: BOOL,
        ) -> HRESULT;
        /// `pFunctionControl` is an ICorProfilerFunctionControl for supplying the new IL.
        fn GetReJITParameters(
            moduleId: ModuleID,
            methodId: mdMethodDef,
            pFunctionControl: *mut c_void,
        ) -> HRESULT;
        fn ReJITCompilationFinished(
            functionId: FunctionID,
            rejitId: ReJITID,
            hrStatus: HRESULT,
            fIsSafeToBlock: BOOL,
        ) -> HRESULT;
        fn ReJITError(
            moduleId: ModuleID,
            methodId: mdMethodDef,
            functionId: FunctionID,
            hrStatus: HRESULT,
        ) -> HRESULT;
        fn MovedReferences2(
            cMovedObjectIDRanges: ULONG,
            oldObjectIDRangeStart: *const ObjectID,
            newObjectIDRangeStart: *const ObjectID,
            cObjectIDRangeLength: *const SIZE_T,
        ) -> HRESULT;
        fn SurvivingReferences2(
            cSurvivingObjectIDRanges: ULONG,
            objectIDRangeStart: *const ObjectID,
            cObjectIDRangeLength: *const SIZE_T,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback5: dependent-handle (ConditionalWeakTable) references.
    pub struct ICorProfilerCallback5Vtbl("ICorProfilerCallback5"): ICorProfilerCallback4Vtbl {
        fn ConditionalWeakTableElementReferences(
            cRootRefs: ULONG,
            keyRefIds: *const ObjectID,
            valueRefIds: *const ObjectID,
            rootIds: *const GCHandleID,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback6: assembly reference closure (not raised by CoreCLR).
    pub struct ICorProfilerCallback6Vtbl("ICorProfilerCallback6"): ICorProfilerCallback5Vtbl {
        /// `pAsmRefProvider` is an ICorProfilerAssemblyReferenceProvider.
        fn GetAssemblyReferences(
            wszAssemblyPath: *const WCHAR,
            pAsmRefProvider: *mut c_void,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback7: in-memory symbol updates.
    pub struct ICorProfilerCallback7Vtbl("ICorProfilerCallback7"): ICorProfilerCallback6Vtbl {
        fn ModuleInMemorySymbolsUpdated(moduleId: ModuleID) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback8: JIT of dynamic methods (IL stubs, LCG).
    pub struct ICorProfilerCallback8Vtbl("ICorProfilerCallback8"): ICorProfilerCallback7Vtbl {
        /// `pILHeader` is valid only during the call.
        fn DynamicMethodJITCompilationStarted(
            functionId: FunctionID,
            fIsSafeToBlock: BOOL,
            pILHeader: LPCBYTE,
            cbILHeader: ULONG,
        ) -> HRESULT;
        fn DynamicMethodJITCompilationFinished(
            functionId: FunctionID,
            hrStatus: HRESULT,
            fIsSafeToBlock: BOOL,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback9: unloading of dynamic methods.
    pub struct ICorProfilerCallback9Vtbl("ICorProfilerCallback9"): ICorProfilerCallback8Vtbl {
        fn DynamicMethodUnloaded(functionId: FunctionID) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback10: EventPipe events delivered to the profiler.
    pub struct ICorProfilerCallback10Vtbl("ICorProfilerCallback10"): ICorProfilerCallback9Vtbl {
        /// Every pointer is valid only during the call; `stackFrames` has `numStackFrames` entries.
        fn EventPipeEventDelivered(
            provider: EVENTPIPE_PROVIDER,
            eventId: DWORD,
            eventVersion: DWORD,
            cbMetadataBlob: ULONG,
            metadataBlob: LPCBYTE,
            cbEventData: ULONG,
            eventData: LPCBYTE,
            pActivityId: LPCGUID,
            pRelatedActivityId: LPCGUID,
            eventThread: ThreadID,
            numStackFrames: ULONG,
            stackFrames: *const UINT_PTR,
        ) -> HRESULT;
        fn EventPipeProviderCreated(provider: EVENTPIPE_PROVIDER) -> HRESULT;
    }
}

com_vtable! {
    /// ICorProfilerCallback11: notification-only profilers.
    pub struct ICorProfilerCallback11Vtbl("ICorProfilerCallback11"): ICorProfilerCallback10Vtbl {
        /// Set `*pbNotificationOnly = TRUE` to load as a notification-only profiler.
        fn LoadAsNotificationOnly(pbNotificationOnly: *mut BOOL) -> HRESULT;
    }
}
