//! The callback object the runtime holds as its ICorProfilerCallback: `IUnknown`, one shim per
//! callback of ICorProfilerCallback 1..11, and the vtable that holds them.

use core::ffi::c_void;
use core::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};

use clrprof_sys::{self as sys, BOOL, GUID, HRESULT, ULONG};

use crate::callback::Profiler;
use crate::com::ComPtr;
use crate::error::{Error, HResult};
use crate::ids::*;
use crate::info::ProfilerInfo;
use crate::types::*;
use crate::wide::from_wide;

use super::{
    ComObject, add_ref, flag, guid, query_interface, release, run, run_out, slice, wide_cstr,
};
use crate::callback_interfaces::{AssemblyReferenceProvider, FunctionControl};

// ---------------------------------------------------------------------------------------------
// The callback object
// ---------------------------------------------------------------------------------------------

/// The COM object the runtime holds as its ICorProfilerCallback.
#[repr(C)]
pub(super) struct CallbackObject<P: Profiler> {
    /// Must stay the first field: a COM interface pointer points at its vtable pointer.
    pub(super) vtbl: &'static sys::ICorProfilerCallback11Vtbl,
    pub(super) refs: AtomicU32,
    pub(super) profiler: &'static P,
}

/// The interfaces the callback object answers, all with the same pointer.
const CALLBACK_IIDS: [GUID; 12] = [
    sys::IID_IUnknown,
    sys::IID_ICorProfilerCallback,
    sys::IID_ICorProfilerCallback2,
    sys::IID_ICorProfilerCallback3,
    sys::IID_ICorProfilerCallback4,
    sys::IID_ICorProfilerCallback5,
    sys::IID_ICorProfilerCallback6,
    sys::IID_ICorProfilerCallback7,
    sys::IID_ICorProfilerCallback8,
    sys::IID_ICorProfilerCallback9,
    sys::IID_ICorProfilerCallback10,
    sys::IID_ICorProfilerCallback11,
];

/// Bit `n` is set once the runtime asked the callback object for `ICorProfilerCallback{n}`
/// (bit 0: `IUnknown`), through `CreateInstance` or `QueryInterface`.
static VERSIONS_ASKED: AtomicU32 = AtomicU32::new(0);

/// The `ICorProfilerCallback` versions the runtime asked the profiler's callback object for
/// (through `CreateInstance` and `QueryInterface`) since the process started, lowest first.
/// The object answers every version with the same pointer; the highest version asked is the
/// one the runtime uses: CoreCLR 3.1 asks for 2 (`CreateInstance`) then 9, newer runtimes for
/// newer versions. A version the runtime never asks for is never called.
pub fn callback_versions_asked() -> Vec<u32> {
    let bits = VERSIONS_ASKED.load(Ordering::Relaxed);
    (1..CALLBACK_IIDS.len() as u32)
        .filter(|v| bits & (1 << v) != 0)
        .collect()
}

/// The profiler behind a callback object pointer.
///
/// # Safety
/// `this` must be null or point at a `CallbackObject<P>` that lives for the rest of the
/// process (every callback object does: it sits in an [`Export`](super::Export) static).
unsafe fn profiler_of<P: Profiler>(this: *mut c_void) -> Option<&'static P> {
    // SAFETY: the caller guarantees `this` is null or a live `CallbackObject<P>`.
    unsafe { this.cast::<CallbackObject<P>>().as_ref() }.map(|object| object.profiler)
}

/// Declares a callback shim: `shim! { name(raw args) |p| body }`. `this` becomes
/// `p: &'static P`, then `body` (which evaluates to `Result<()>`) runs under [`run`].
macro_rules! shim {
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) |$p:ident| $body:expr) => {
        unsafe extern "system" fn $name<P: Profiler>(this: *mut c_void $(, $arg: $ty)*) -> HRESULT {
            // SAFETY: the runtime calls our vtable only with the pointer it got from
            // QueryInterface/CreateInstance, which is a `CallbackObject<P>` in a static.
            let Some($p) = (unsafe { profiler_of::<P>(this) }) else {
                return sys::E_POINTER;
            };
            run(move || $body)
        }
    };
}

impl<P: Profiler> ComObject for CallbackObject<P> {
    fn refs(&self) -> &AtomicU32 {
        &self.refs
    }

    /// Every version of `ICorProfilerCallback`, each one asked for noted in
    /// [`VERSIONS_ASKED`].
    fn answers(iid: &GUID) -> bool {
        let Some(version) = CALLBACK_IIDS.iter().position(|known| known == iid) else {
            return false;
        };
        VERSIONS_ASKED.fetch_or(1 << version, Ordering::Relaxed);
        true
    }
}

// ----- ICorProfilerCallback -----

unsafe extern "system" fn initialize<P: Profiler>(
    this: *mut c_void,
    unknown: *mut c_void,
) -> HRESULT {
    // SAFETY: as in `shim!`.
    let Some(p) = (unsafe { profiler_of::<P>(this) }) else {
        return sys::E_POINTER;
    };
    run(|| {
        // SAFETY: the runtime passes its live IUnknown to Initialize (null is rejected inside).
        let info = unsafe { ProfilerInfo::from_unknown(unknown) }?;
        p.initialize(info)
    })
}

shim! { shutdown() |p| p.shutdown() }
shim! { app_domain_creation_started(id: sys::AppDomainID) |p| {
    p.app_domain_creation_started(AppDomainId(id))
}}
shim! { app_domain_creation_finished(id: sys::AppDomainID, hr: HRESULT) |p| {
    p.app_domain_creation_finished(AppDomainId(id), HResult(hr))
}}
shim! { app_domain_shutdown_started(id: sys::AppDomainID) |p| {
    p.app_domain_shutdown_started(AppDomainId(id))
}}
shim! { app_domain_shutdown_finished(id: sys::AppDomainID, hr: HRESULT) |p| {
    p.app_domain_shutdown_finished(AppDomainId(id), HResult(hr))
}}
shim! { assembly_load_started(id: sys::AssemblyID) |p| p.assembly_load_started(AssemblyId(id)) }
shim! { assembly_load_finished(id: sys::AssemblyID, hr: HRESULT) |p| {
    p.assembly_load_finished(AssemblyId(id), HResult(hr))
}}
shim! { assembly_unload_started(id: sys::AssemblyID) |p| p.assembly_unload_started(AssemblyId(id)) }
shim! { assembly_unload_finished(id: sys::AssemblyID, hr: HRESULT) |p| {
    p.assembly_unload_finished(AssemblyId(id), HResult(hr))
}}
shim! { module_load_started(id: sys::ModuleID) |p| p.module_load_started(ModuleId(id)) }
shim! { module_load_finished(id: sys::ModuleID, hr: HRESULT) |p| {
    p.module_load_finished(ModuleId(id), HResult(hr))
}}
shim! { module_unload_started(id: sys::ModuleID) |p| p.module_unload_started(ModuleId(id)) }
shim! { module_unload_finished(id: sys::ModuleID, hr: HRESULT) |p| {
    p.module_unload_finished(ModuleId(id), HResult(hr))
}}
shim! { module_attached_to_assembly(module: sys::ModuleID, assembly: sys::AssemblyID) |p| {
    p.module_attached_to_assembly(ModuleId(module), AssemblyId(assembly))
}}
shim! { class_load_started(id: sys::ClassID) |p| p.class_load_started(ClassId(id)) }
shim! { class_load_finished(id: sys::ClassID, hr: HRESULT) |p| {
    p.class_load_finished(ClassId(id), HResult(hr))
}}
shim! { class_unload_started(id: sys::ClassID) |p| p.class_unload_started(ClassId(id)) }
shim! { class_unload_finished(id: sys::ClassID, hr: HRESULT) |p| {
    p.class_unload_finished(ClassId(id), HResult(hr))
}}
shim! { function_unload_started(id: sys::FunctionID) |p| p.function_unload_started(FunctionId(id)) }
shim! { jit_compilation_started(id: sys::FunctionID, safe: BOOL) |p| {
    p.jit_compilation_started(FunctionId(id), flag(safe))
}}
shim! { jit_compilation_finished(id: sys::FunctionID, hr: HRESULT, safe: BOOL) |p| {
    p.jit_compilation_finished(FunctionId(id), HResult(hr), flag(safe))
}}

unsafe extern "system" fn jit_cached_function_search_started<P: Profiler>(
    this: *mut c_void,
    id: sys::FunctionID,
    use_cached: *mut BOOL,
) -> HRESULT {
    // SAFETY: as in `shim!`.
    let Some(p) = (unsafe { profiler_of::<P>(this) }) else {
        return sys::E_POINTER;
    };
    // SAFETY: the runtime passes a writable BOOL (or null, which is skipped).
    unsafe {
        run_out(use_cached, || {
            p.jit_cached_function_search_started(FunctionId(id))
        })
    }
}

shim! { jit_cached_function_search_finished(
    id: sys::FunctionID,
    result: sys::COR_PRF_JIT_CACHE,
) |p| {
    p.jit_cached_function_search_finished(FunctionId(id), JitCacheResult(result))
}}
shim! { jit_function_pitched(id: sys::FunctionID) |p| p.jit_function_pitched(FunctionId(id)) }

unsafe extern "system" fn jit_inlining<P: Profiler>(
    this: *mut c_void,
    caller: sys::FunctionID,
    callee: sys::FunctionID,
    should_inline: *mut BOOL,
) -> HRESULT {
    // SAFETY: as in `shim!`.
    let Some(p) = (unsafe { profiler_of::<P>(this) }) else {
        return sys::E_POINTER;
    };
    // SAFETY: the runtime passes a writable BOOL (or null, which is skipped).
    unsafe {
        run_out(should_inline, || {
            p.jit_inlining(FunctionId(caller), FunctionId(callee))
        })
    }
}

shim! { thread_created(id: sys::ThreadID) |p| p.thread_created(ThreadId(id)) }
shim! { thread_destroyed(id: sys::ThreadID) |p| p.thread_destroyed(ThreadId(id)) }
shim! { thread_assigned_to_os_thread(id: sys::ThreadID, os: sys::DWORD) |p| {
    p.thread_assigned_to_os_thread(ThreadId(id), os)
}}
shim! { remoting_client_invocation_started() | p | p.remoting_client_invocation_started() }
shim! { remoting_client_sending_message(cookie: *mut GUID, is_async: BOOL) |p| {
    // SAFETY: the runtime passes null or a valid cookie for the duration of the call.
    p.remoting_client_sending_message(unsafe { guid(cookie) }, flag(is_async))
}}
shim! { remoting_client_receiving_reply(cookie: *mut GUID, is_async: BOOL) |p| {
    // SAFETY: the runtime passes null or a valid cookie for the duration of the call.
    p.remoting_client_receiving_reply(unsafe { guid(cookie) }, flag(is_async))
}}
shim! { remoting_client_invocation_finished() | p | p.remoting_client_invocation_finished() }
shim! { remoting_server_receiving_message(cookie: *mut GUID, is_async: BOOL) |p| {
    // SAFETY: the runtime passes null or a valid cookie for the duration of the call.
    p.remoting_server_receiving_message(unsafe { guid(cookie) }, flag(is_async))
}}
shim! { remoting_server_invocation_started() | p | p.remoting_server_invocation_started() }
shim! { remoting_server_invocation_returned() | p | p.remoting_server_invocation_returned() }
shim! { remoting_server_sending_reply(cookie: *mut GUID, is_async: BOOL) |p| {
    // SAFETY: the runtime passes null or a valid cookie for the duration of the call.
    p.remoting_server_sending_reply(unsafe { guid(cookie) }, flag(is_async))
}}
shim! { unmanaged_to_managed_transition(
    id: sys::FunctionID,
    reason: sys::COR_PRF_TRANSITION_REASON,
) |p| {
    p.unmanaged_to_managed_transition(FunctionId(id), TransitionReason(reason))
}}
shim! { managed_to_unmanaged_transition(
    id: sys::FunctionID,
    reason: sys::COR_PRF_TRANSITION_REASON,
) |p| {
    p.managed_to_unmanaged_transition(FunctionId(id), TransitionReason(reason))
}}
shim! { runtime_suspend_started(reason: sys::COR_PRF_SUSPEND_REASON) |p| {
    p.runtime_suspend_started(SuspendReason(reason))
}}
shim! { runtime_suspend_finished() | p | p.runtime_suspend_finished() }
shim! { runtime_suspend_aborted() | p | p.runtime_suspend_aborted() }
shim! { runtime_resume_started() | p | p.runtime_resume_started() }
shim! { runtime_resume_finished() | p | p.runtime_resume_finished() }
shim! { runtime_thread_suspended(id: sys::ThreadID) |p| p.runtime_thread_suspended(ThreadId(id)) }
shim! { runtime_thread_resumed(id: sys::ThreadID) |p| p.runtime_thread_resumed(ThreadId(id)) }
shim! { moved_references(
    count: ULONG,
    old: *const sys::ObjectID,
    new: *const sys::ObjectID,
    lengths: *const ULONG,
) |p| {
    let n = count as usize;
    // SAFETY: the runtime passes three arrays of `count` elements valid during the call;
    // `ObjectId` is a transparent `ObjectID`.
    let (old, new, lengths) = unsafe { (slice(old, n), slice(new, n), slice(lengths, n)) };
    p.moved_references(old, new, lengths)
}}
shim! { object_allocated(object: sys::ObjectID, class: sys::ClassID) |p| {
    p.object_allocated(ObjectId(object), ClassId(class))
}}
shim! { objects_allocated_by_class(
    count: ULONG,
    classes: *const sys::ClassID,
    objects: *const ULONG,
) |p| {
    let n = count as usize;
    // SAFETY: two arrays of `count` elements valid during the call; `ClassId` is a
    // transparent `ClassID`.
    let (classes, objects) = unsafe { (slice(classes, n), slice(objects, n)) };
    p.objects_allocated_by_class(classes, objects)
}}
shim! { object_references(
    object: sys::ObjectID,
    class: sys::ClassID,
    count: ULONG,
    refs: *const sys::ObjectID,
) |p| {
    // SAFETY: an array of `count` ObjectIDs valid during the call.
    let refs = unsafe { slice(refs, count as usize) };
    p.object_references(ObjectId(object), ClassId(class), refs)
}}
shim! { root_references(count: ULONG, roots: *const sys::ObjectID) |p| {
    // SAFETY: an array of `count` ObjectIDs valid during the call.
    p.root_references(unsafe { slice(roots, count as usize) })
}}
shim! { exception_thrown(object: sys::ObjectID) |p| p.exception_thrown(ObjectId(object)) }
shim! { exception_search_function_enter(id: sys::FunctionID) |p| {
    p.exception_search_function_enter(FunctionId(id))
}}
shim! { exception_search_function_leave() | p | p.exception_search_function_leave() }
shim! { exception_search_filter_enter(id: sys::FunctionID) |p| {
    p.exception_search_filter_enter(FunctionId(id))
}}
shim! { exception_search_filter_leave() | p | p.exception_search_filter_leave() }
shim! { exception_search_catcher_found(id: sys::FunctionID) |p| {
    p.exception_search_catcher_found(FunctionId(id))
}}
shim! { exception_os_handler_enter(_unused: sys::UINT_PTR) |p| p.exception_os_handler_enter() }
shim! { exception_os_handler_leave(_unused: sys::UINT_PTR) |p| p.exception_os_handler_leave() }
shim! { exception_unwind_function_enter(id: sys::FunctionID) |p| {
    p.exception_unwind_function_enter(FunctionId(id))
}}
shim! { exception_unwind_function_leave() | p | p.exception_unwind_function_leave() }
shim! { exception_unwind_finally_enter(id: sys::FunctionID) |p| {
    p.exception_unwind_finally_enter(FunctionId(id))
}}
shim! { exception_unwind_finally_leave() | p | p.exception_unwind_finally_leave() }
shim! { exception_catcher_enter(id: sys::FunctionID, object: sys::ObjectID) |p| {
    p.exception_catcher_enter(FunctionId(id), ObjectId(object))
}}
shim! { exception_catcher_leave() | p | p.exception_catcher_leave() }
shim! { com_classic_vtable_created(
    class: sys::ClassID,
    iid: sys::REFGUID,
    vtable: *mut c_void,
    slots: ULONG,
) |p| {
    // SAFETY: the runtime passes null or a valid IID for the duration of the call.
    let iid = unsafe { guid(iid) };
    p.com_classic_vtable_created(ClassId(class), iid, vtable as usize, slots)
}}
shim! { com_classic_vtable_destroyed(
    class: sys::ClassID,
    iid: sys::REFGUID,
    vtable: *mut c_void,
) |p| {
    // SAFETY: the runtime passes null or a valid IID for the duration of the call.
    let iid = unsafe { guid(iid) };
    p.com_classic_vtable_destroyed(ClassId(class), iid, vtable as usize)
}}
shim! { exception_clr_catcher_found() | p | p.exception_clr_catcher_found() }
shim! { exception_clr_catcher_execute() | p | p.exception_clr_catcher_execute() }

// ----- ICorProfilerCallback2 -----

shim! { thread_name_changed(id: sys::ThreadID, len: ULONG, name: *const sys::WCHAR) |p| {
    // SAFETY: `len` UTF-16 units (not NUL-terminated) valid during the call.
    let name = from_wide(unsafe { slice::<u16, u16>(name, len as usize) });
    p.thread_name_changed(ThreadId(id), &name)
}}
shim! { garbage_collection_started(
    count: sys::INT,
    collected: *const BOOL,
    reason: sys::COR_PRF_GC_REASON,
) |p| {
    let n = usize::try_from(count).unwrap_or(0);
    // SAFETY: an array of `count` BOOLs valid during the call.
    let generations = Generations::from_flags(unsafe { slice::<BOOL, i32>(collected, n) });
    p.garbage_collection_started(generations, GcReason(reason))
}}
shim! { surviving_references(
    count: ULONG,
    starts: *const sys::ObjectID,
    lengths: *const ULONG,
) |p| {
    let n = count as usize;
    // SAFETY: two arrays of `count` elements valid during the call.
    let (starts, lengths) = unsafe { (slice(starts, n), slice(lengths, n)) };
    p.surviving_references(starts, lengths)
}}
shim! { garbage_collection_finished() | p | p.garbage_collection_finished() }
shim! { finalizeable_object_queued(flags: sys::DWORD, object: sys::ObjectID) |p| {
    p.finalizeable_object_queued(FinalizerFlags::from_bits_retain(flags), ObjectId(object))
}}
shim! { root_references2(
    count: ULONG,
    roots: *const sys::ObjectID,
    kinds: *const sys::COR_PRF_GC_ROOT_KIND,
    flags: *const sys::COR_PRF_GC_ROOT_FLAGS,
    ids: *const sys::UINT_PTR,
) |p| {
    let n = count as usize;
    // SAFETY: four arrays of `count` elements valid during the call; `GcRootKind` and
    // `GcRootFlags` are transparent `u32`s for which every value is valid.
    let (roots, kinds, flags, ids) =
        unsafe { (slice(roots, n), slice(kinds, n), slice(flags, n), slice(ids, n)) };
    p.root_references2(roots, kinds, flags, ids)
}}
shim! { handle_created(handle: sys::GCHandleID, object: sys::ObjectID) |p| {
    p.handle_created(GcHandleId(handle), ObjectId(object))
}}
shim! { handle_destroyed(handle: sys::GCHandleID) |p| p.handle_destroyed(GcHandleId(handle)) }

// ----- ICorProfilerCallback3 -----

unsafe extern "system" fn initialize_for_attach<P: Profiler>(
    this: *mut c_void,
    unknown: *mut c_void,
    data: *mut c_void,
    len: sys::UINT,
) -> HRESULT {
    // SAFETY: as in `shim!`.
    let Some(p) = (unsafe { profiler_of::<P>(this) }) else {
        return sys::E_POINTER;
    };
    run(|| {
        // SAFETY: the runtime passes its live IUnknown (null is rejected inside).
        let info = unsafe { ProfilerInfo::from_unknown(unknown) }?;
        // SAFETY: `len` bytes of client data valid during the call.
        let data = unsafe { slice::<u8, u8>(data.cast_const().cast(), len as usize) };
        p.initialize_for_attach(info, data)
    })
}

shim! { profiler_attach_complete() | p | p.profiler_attach_complete() }
shim! { profiler_detach_succeeded() | p | p.profiler_detach_succeeded() }

// ----- ICorProfilerCallback4 -----

shim! { rejit_compilation_started(id: sys::FunctionID, rejit: sys::ReJITID, safe: BOOL) |p| {
    p.rejit_compilation_started(FunctionId(id), ReJitId(rejit), flag(safe))
}}
shim! { get_rejit_parameters(
    module: sys::ModuleID,
    method: sys::mdMethodDef,
    control: *mut c_void,
) |p| {
    // SAFETY: the runtime passes a live ICorProfilerFunctionControl (or null, refused);
    // `from_borrowed` takes a reference of our own.
    let control = unsafe { ComPtr::from_borrowed(control) }
        .map(|ptr| FunctionControl { ptr })
        .ok_or(Error::Failed {
            method: "ICorProfilerCallback4::GetReJITParameters",
            hr: HResult(sys::E_POINTER),
        })?;
    p.get_rejit_parameters(ModuleId(module), Token(method), &control)
}}
shim! { rejit_compilation_finished(
    id: sys::FunctionID,
    rejit: sys::ReJITID,
    hr: HRESULT,
    safe: BOOL,
) |p| {
    p.rejit_compilation_finished(FunctionId(id), ReJitId(rejit), HResult(hr), flag(safe))
}}
shim! { rejit_error(
    module: sys::ModuleID,
    method: sys::mdMethodDef,
    id: sys::FunctionID,
    hr: HRESULT,
) |p| {
    p.rejit_error(ModuleId(module), Token(method), FunctionId(id), HResult(hr))
}}
shim! { moved_references2(
    count: ULONG,
    old: *const sys::ObjectID,
    new: *const sys::ObjectID,
    lengths: *const sys::SIZE_T,
) |p| {
    let n = count as usize;
    // SAFETY: three arrays of `count` elements valid during the call.
    let (old, new, lengths) = unsafe { (slice(old, n), slice(new, n), slice(lengths, n)) };
    p.moved_references2(old, new, lengths)
}}
shim! { surviving_references2(
    count: ULONG,
    starts: *const sys::ObjectID,
    lengths: *const sys::SIZE_T,
) |p| {
    let n = count as usize;
    // SAFETY: two arrays of `count` elements valid during the call.
    let (starts, lengths) = unsafe { (slice(starts, n), slice(lengths, n)) };
    p.surviving_references2(starts, lengths)
}}

// ----- ICorProfilerCallback5 -----

shim! { conditional_weak_table_element_references(
    count: ULONG,
    keys: *const sys::ObjectID,
    values: *const sys::ObjectID,
    handles: *const sys::GCHandleID,
) |p| {
    let n = count as usize;
    // SAFETY: three arrays of `count` elements valid during the call.
    let (keys, values, handles) = unsafe { (slice(keys, n), slice(values, n), slice(handles, n)) };
    p.conditional_weak_table_element_references(keys, values, handles)
}}

// ----- ICorProfilerCallback6 -----

shim! { get_assembly_references(path: *const sys::WCHAR, provider: *mut c_void) |p| {
    // SAFETY: the runtime passes a NUL-terminated path (or null) valid during the call.
    let path = unsafe { wide_cstr(path) };
    // SAFETY: the runtime passes a live ICorProfilerAssemblyReferenceProvider (or null,
    // refused); `from_borrowed` takes a reference of our own.
    let provider = unsafe { ComPtr::from_borrowed(provider) }
        .map(|ptr| AssemblyReferenceProvider { ptr })
        .ok_or(Error::Failed {
            method: "ICorProfilerCallback6::GetAssemblyReferences",
            hr: HResult(sys::E_POINTER),
        })?;
    p.get_assembly_references(&path, &provider)
}}

// ----- ICorProfilerCallback7 -----

shim! { module_in_memory_symbols_updated(id: sys::ModuleID) |p| {
    p.module_in_memory_symbols_updated(ModuleId(id))
}}

// ----- ICorProfilerCallback8 -----

shim! { dynamic_method_jit_compilation_started(
    id: sys::FunctionID,
    safe: BOOL,
    header: sys::LPCBYTE,
    len: ULONG,
) |p| {
    // SAFETY: `len` bytes of IL header and body valid during the call.
    let header = unsafe { slice::<u8, u8>(header, len as usize) };
    p.dynamic_method_jit_compilation_started(FunctionId(id), flag(safe), header)
}}
shim! { dynamic_method_jit_compilation_finished(id: sys::FunctionID, hr: HRESULT, safe: BOOL) |p| {
    p.dynamic_method_jit_compilation_finished(FunctionId(id), HResult(hr), flag(safe))
}}

// ----- ICorProfilerCallback9 -----

shim! { dynamic_method_unloaded(id: sys::FunctionID) |p| p.dynamic_method_unloaded(FunctionId(id)) }

// ----- ICorProfilerCallback10 -----

shim! { event_pipe_event_delivered(
    provider: sys::EVENTPIPE_PROVIDER,
    event_id: sys::DWORD,
    event_version: sys::DWORD,
    metadata_len: ULONG,
    metadata: sys::LPCBYTE,
    data_len: ULONG,
    data: sys::LPCBYTE,
    activity: sys::LPCGUID,
    related_activity: sys::LPCGUID,
    thread: sys::ThreadID,
    frames: ULONG,
    stack: *const sys::UINT_PTR,
) |p| {
    // SAFETY: every pointer is null or valid for its stated length during the call.
    let event = unsafe {
        EventPipeEvent {
            provider: EventPipeProviderId(provider),
            event_id,
            event_version,
            metadata: slice(metadata, metadata_len as usize),
            data: slice(data, data_len as usize),
            activity_id: activity.as_ref(),
            related_activity_id: related_activity.as_ref(),
            thread: ThreadId(thread),
            stack: slice(stack, frames as usize),
        }
    };
    p.event_pipe_event_delivered(&event)
}}
shim! { event_pipe_provider_created(provider: sys::EVENTPIPE_PROVIDER) |p| {
    p.event_pipe_provider_created(EventPipeProviderId(provider))
}}

// ----- ICorProfilerCallback11 -----

unsafe extern "system" fn load_as_notification_only<P: Profiler>(
    this: *mut c_void,
    notification_only: *mut BOOL,
) -> HRESULT {
    // SAFETY: as in `shim!`.
    let Some(p) = (unsafe { profiler_of::<P>(this) }) else {
        return sys::E_POINTER;
    };
    // SAFETY: the runtime passes a writable BOOL (or null, which is skipped).
    unsafe { run_out(notification_only, || p.load_as_notification_only()) }
}

/// Holds the static vtable of the callback object for profiler type `P`.
pub(super) struct CallbackVtbl<P>(PhantomData<fn() -> P>);

impl<P: Profiler> CallbackVtbl<P> {
    /// The complete vtable; every lower version's vtable is a prefix of it.
    pub(super) const VTBL: sys::ICorProfilerCallback11Vtbl = sys::ICorProfilerCallback11Vtbl {
        base__: Self::V10,
        LoadAsNotificationOnly: load_as_notification_only::<P>,
    };

    const V10: sys::ICorProfilerCallback10Vtbl = sys::ICorProfilerCallback10Vtbl {
        base__: Self::V9,
        EventPipeEventDelivered: event_pipe_event_delivered::<P>,
        EventPipeProviderCreated: event_pipe_provider_created::<P>,
    };

    const V9: sys::ICorProfilerCallback9Vtbl = sys::ICorProfilerCallback9Vtbl {
        base__: Self::V8,
        DynamicMethodUnloaded: dynamic_method_unloaded::<P>,
    };

    const V8: sys::ICorProfilerCallback8Vtbl = sys::ICorProfilerCallback8Vtbl {
        base__: Self::V7,
        DynamicMethodJITCompilationStarted: dynamic_method_jit_compilation_started::<P>,
        DynamicMethodJITCompilationFinished: dynamic_method_jit_compilation_finished::<P>,
    };

    const V7: sys::ICorProfilerCallback7Vtbl = sys::ICorProfilerCallback7Vtbl {
        base__: Self::V6,
        ModuleInMemorySymbolsUpdated: module_in_memory_symbols_updated::<P>,
    };

    const V6: sys::ICorProfilerCallback6Vtbl = sys::ICorProfilerCallback6Vtbl {
        base__: Self::V5,
        GetAssemblyReferences: get_assembly_references::<P>,
    };

    const V5: sys::ICorProfilerCallback5Vtbl = sys::ICorProfilerCallback5Vtbl {
        base__: Self::V4,
        ConditionalWeakTableElementReferences: conditional_weak_table_element_references::<P>,
    };

    const V4: sys::ICorProfilerCallback4Vtbl = sys::ICorProfilerCallback4Vtbl {
        base__: Self::V3,
        ReJITCompilationStarted: rejit_compilation_started::<P>,
        GetReJITParameters: get_rejit_parameters::<P>,
        ReJITCompilationFinished: rejit_compilation_finished::<P>,
        ReJITError: rejit_error::<P>,
        MovedReferences2: moved_references2::<P>,
        SurvivingReferences2: surviving_references2::<P>,
    };

    const V3: sys::ICorProfilerCallback3Vtbl = sys::ICorProfilerCallback3Vtbl {
        base__: Self::V2,
        InitializeForAttach: initialize_for_attach::<P>,
        ProfilerAttachComplete: profiler_attach_complete::<P>,
        ProfilerDetachSucceeded: profiler_detach_succeeded::<P>,
    };

    const V2: sys::ICorProfilerCallback2Vtbl = sys::ICorProfilerCallback2Vtbl {
        base__: Self::V1,
        ThreadNameChanged: thread_name_changed::<P>,
        GarbageCollectionStarted: garbage_collection_started::<P>,
        SurvivingReferences: surviving_references::<P>,
        GarbageCollectionFinished: garbage_collection_finished::<P>,
        FinalizeableObjectQueued: finalizeable_object_queued::<P>,
        RootReferences2: root_references2::<P>,
        HandleCreated: handle_created::<P>,
        HandleDestroyed: handle_destroyed::<P>,
    };

    const V1: sys::ICorProfilerCallbackVtbl = sys::ICorProfilerCallbackVtbl {
        base__: sys::IUnknownVtbl {
            QueryInterface: query_interface::<CallbackObject<P>>,
            AddRef: add_ref::<CallbackObject<P>>,
            Release: release::<CallbackObject<P>>,
        },
        Initialize: initialize::<P>,
        Shutdown: shutdown::<P>,
        AppDomainCreationStarted: app_domain_creation_started::<P>,
        AppDomainCreationFinished: app_domain_creation_finished::<P>,
        AppDomainShutdownStarted: app_domain_shutdown_started::<P>,
        AppDomainShutdownFinished: app_domain_shutdown_finished::<P>,
        AssemblyLoadStarted: assembly_load_started::<P>,
        AssemblyLoadFinished: assembly_load_finished::<P>,
        AssemblyUnloadStarted: assembly_unload_started::<P>,
        AssemblyUnloadFinished: assembly_unload_finished::<P>,
        ModuleLoadStarted: module_load_started::<P>,
        ModuleLoadFinished: module_load_finished::<P>,
        ModuleUnloadStarted: module_unload_started::<P>,
        ModuleUnloadFinished: module_unload_finished::<P>,
        ModuleAttachedToAssembly: module_attached_to_assembly::<P>,
        ClassLoadStarted: class_load_started::<P>,
        ClassLoadFinished: class_load_finished::<P>,
        ClassUnloadStarted: class_unload_started::<P>,
        ClassUnloadFinished: class_unload_finished::<P>,
        FunctionUnloadStarted: function_unload_started::<P>,
        JITCompilationStarted: jit_compilation_started::<P>,
        JITCompilationFinished: jit_compilation_finished::<P>,
        JITCachedFunctionSearchStarted: jit_cached_function_search_started::<P>,
        JITCachedFunctionSearchFinished: jit_cached_function_search_finished::<P>,
        JITFunctionPitched: jit_function_pitched::<P>,
        JITInlining: jit_inlining::<P>,
        ThreadCreated: thread_created::<P>,
        ThreadDestroyed: thread_destroyed::<P>,
        ThreadAssignedToOSThread: thread_assigned_to_os_thread::<P>,
        RemotingClientInvocationStarted: remoting_client_invocation_started::<P>,
        RemotingClientSendingMessage: remoting_client_sending_message::<P>,
        RemotingClientReceivingReply: remoting_client_receiving_reply::<P>,
        RemotingClientInvocationFinished: remoting_client_invocation_finished::<P>,
        RemotingServerReceivingMessage: remoting_server_receiving_message::<P>,
        RemotingServerInvocationStarted: remoting_server_invocation_started::<P>,
        RemotingServerInvocationReturned: remoting_server_invocation_returned::<P>,
        RemotingServerSendingReply: remoting_server_sending_reply::<P>,
        UnmanagedToManagedTransition: unmanaged_to_managed_transition::<P>,
        ManagedToUnmanagedTransition: managed_to_unmanaged_transition::<P>,
        RuntimeSuspendStarted: runtime_suspend_started::<P>,
        RuntimeSuspendFinished: runtime_suspend_finished::<P>,
        RuntimeSuspendAborted: runtime_suspend_aborted::<P>,
        RuntimeResumeStarted: runtime_resume_started::<P>,
        RuntimeResumeFinished: runtime_resume_finished::<P>,
        RuntimeThreadSuspended: runtime_thread_suspended::<P>,
        RuntimeThreadResumed: runtime_thread_resumed::<P>,
        MovedReferences: moved_references::<P>,
        ObjectAllocated: object_allocated::<P>,
        ObjectsAllocatedByClass: objects_allocated_by_class::<P>,
        ObjectReferences: object_references::<P>,
        RootReferences: root_references::<P>,
        ExceptionThrown: exception_thrown::<P>,
        ExceptionSearchFunctionEnter: exception_search_function_enter::<P>,
        ExceptionSearchFunctionLeave: exception_search_function_leave::<P>,
        ExceptionSearchFilterEnter: exception_search_filter_enter::<P>,
        ExceptionSearchFilterLeave: exception_search_filter_leave::<P>,
        ExceptionSearchCatcherFound: exception_search_catcher_found::<P>,
        ExceptionOSHandlerEnter: exception_os_handler_enter::<P>,
        ExceptionOSHandlerLeave: exception_os_handler_leave::<P>,
        ExceptionUnwindFunctionEnter: exception_unwind_function_enter::<P>,
        ExceptionUnwindFunctionLeave: exception_unwind_function_leave::<P>,
        ExceptionUnwindFinallyEnter: exception_unwind_finally_enter::<P>,
        ExceptionUnwindFinallyLeave: exception_unwind_finally_leave::<P>,
        ExceptionCatcherEnter: exception_catcher_enter::<P>,
        ExceptionCatcherLeave: exception_catcher_leave::<P>,
        COMClassicVTableCreated: com_classic_vtable_created::<P>,
        COMClassicVTableDestroyed: com_classic_vtable_destroyed::<P>,
        ExceptionCLRCatcherFound: exception_clr_catcher_found::<P>,
        ExceptionCLRCatcherExecute: exception_clr_catcher_execute::<P>,
    };
}
