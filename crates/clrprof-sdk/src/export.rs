//! The COM plumbing between the runtime and a [`Profiler`]: the exported entry points, the
//! class factory, the callback object and one shim per callback.
//!
//! # How a profiler gets loaded
//! The runtime `dlopen`s the library and calls `DllGetClassObject(clsid, IID_IClassFactory)`,
//! which [`export_profiler!`](crate::export_profiler) generates. On the returned factory it
//! calls `CreateInstance(null, IID_ICorProfilerCallback2)` and then asks the new object for
//! higher callback versions. The object answers every version from `ICorProfilerCallback` to
//! `ICorProfilerCallback11` with the same pointer: one static vtable laid out as
//! `ICorProfilerCallback11` serves them all, since each version's vtable extends the previous
//! one.
//!
//! # What each shim does
//! Every vtable entry is an `unsafe extern "system"` function that converts its raw arguments
//! (typed ids, `bool`, slices, `&str`; a null pointer is never read, a null array is an empty
//! slice whatever its count), calls the [`Profiler`] method inside
//! [`std::panic::catch_unwind`], writes out-parameters only when the method succeeded, and
//! returns `S_OK`, the error's HRESULT, or `E_FAIL` after a panic. A panic must not unwind
//! into the runtime (that aborts the process), so it is caught, counted
//! ([`panics_caught`]) and dropped.
//!
//! # Why nothing is ever freed
//! The runtime calls back after `Shutdown` (finalizer thread, GC) and even after it released
//! its last reference to the callback object, and a profiler library is not unloaded (except
//! after a detach: then the runtime calls `dlclose` after `ProfilerDetachSucceeded`; glibc keeps
//! a library mapped while threads have its thread-local destructors pending, which is what was
//! observed with clrprof's agent on CoreCLR 3.1.23, and a new attach reuses it and its statics).
//! So the profiler instance, the callback object and the class factory live in the `static`
//! that [`export_profiler!`](crate::export_profiler) declares, for the whole life of the library.
//! Their reference counts are maintained as COM requires, but reaching zero frees nothing:
//! freeing would turn those late callbacks into use-after-free.

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use clrprof_sys::{self as sys, BOOL, GUID, HRESULT, ULONG};

use crate::callback::Profiler;
use crate::com::ComPtr;
use crate::error::{Error, HResult, Result};
use crate::flags::CodegenFlags;
use crate::ids::*;
use crate::info::{ProfilerInfo, ok};
use crate::types::*;
use crate::wide::{from_wide, to_wide};

// ---------------------------------------------------------------------------------------------
// Panics and HRESULTs at the boundary
// ---------------------------------------------------------------------------------------------

static PANICS_CAUGHT: AtomicU64 = AtomicU64::new(0);

/// How many panics the SDK caught at the COM boundary (in callbacks, in the profiler's
/// `Default`, ...) since the process started. Each was turned into `E_FAIL`.
pub fn panics_caught() -> u64 {
    PANICS_CAUGHT.load(Ordering::Relaxed)
}

/// Runs `f`, turning a panic into `E_FAIL`.
fn guarded(f: impl FnOnce() -> HRESULT) -> HRESULT {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(hr) => hr,
        Err(payload) => {
            PANICS_CAUGHT.fetch_add(1, Ordering::Relaxed);
            drop_payload(payload);
            sys::E_FAIL
        }
    }
}

/// Drops a panic payload without letting a panicking `Drop` escape (it is leaked instead).
fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        core::mem::forget(again);
    }
}

/// The HRESULT for an error: its own code if that is a failure, `E_FAIL` otherwise.
fn failure(error: &Error) -> HRESULT {
    match error.hresult().0 {
        hr if hr < 0 => hr,
        _ => sys::E_FAIL,
    }
}

/// Runs a callback body and turns its outcome into an HRESULT.
fn run(f: impl FnOnce() -> Result<()>) -> HRESULT {
    guarded(|| match f() {
        Ok(()) => sys::S_OK,
        Err(e) => failure(&e),
    })
}

/// Runs a callback body whose result goes to a `BOOL` out-parameter, written only on success.
///
/// # Safety
/// `out` must be null or valid for writing a `BOOL`.
unsafe fn run_out(out: *mut BOOL, f: impl FnOnce() -> Result<bool>) -> HRESULT {
    guarded(|| match f() {
        Ok(value) => {
            if !out.is_null() {
                // SAFETY: non-null, and the caller guarantees it is writable.
                unsafe { out.write(if value { sys::TRUE } else { sys::FALSE }) };
            }
            sys::S_OK
        }
        Err(e) => failure(&e),
    })
}

// ---------------------------------------------------------------------------------------------
// Argument conversion
// ---------------------------------------------------------------------------------------------

/// Views `len` elements of type `R` at `ptr` as `&[T]`; null, empty or misaligned arrays
/// become an empty slice.
///
/// # Safety
/// When `ptr` is non-null and `len > 0`, it must point at `len` initialized `R` values that
/// stay valid and unchanged for `'a`, and every bit pattern of `R` must be a valid `T` of the
/// same size and alignment (a `#[repr(transparent)]` newtype of `R`, or `R` itself).
unsafe fn slice<'a, R, T>(ptr: *const R, len: usize) -> &'a [T] {
    const {
        assert!(size_of::<R>() == size_of::<T>() && align_of::<R>() == align_of::<T>());
    }
    if ptr.is_null() || len == 0 || !ptr.cast::<T>().is_aligned() {
        return &[];
    }
    // SAFETY: non-null, aligned, and the caller guarantees `len` valid elements whose layout
    // and bit patterns are valid for `T`.
    unsafe { core::slice::from_raw_parts(ptr.cast::<T>(), len) }
}

/// The GUID behind `p`, or the all-zero GUID for null.
///
/// # Safety
/// `p` must be null or point at a GUID valid for `'a`.
unsafe fn guid<'a>(p: *const GUID) -> &'a GUID {
    static NULL_GUID: GUID = GUID::from_u128(0);
    // SAFETY: the caller guarantees `p` is null or valid.
    unsafe { p.as_ref() }.unwrap_or(&NULL_GUID)
}

/// Reads a NUL-terminated UTF-16 string (lossily); null is the empty string.
///
/// # Safety
/// `p` must be null or point at a NUL-terminated UTF-16 string.
unsafe fn wide_cstr(p: *const u16) -> String {
    if p.is_null() {
        return String::new();
    }
    let mut len = 0;
    // SAFETY: the string is NUL-terminated, so every unit up to and including the NUL is
    // readable.
    while unsafe { *p.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: the `len` units before the NUL are readable and initialized.
    from_wide(unsafe { slice::<u16, u16>(p, len) })
}

fn flag(b: BOOL) -> bool {
    b != 0
}

// ---------------------------------------------------------------------------------------------
// The callback object
// ---------------------------------------------------------------------------------------------

/// The COM object the runtime holds as its ICorProfilerCallback.
#[repr(C)]
struct CallbackObject<P: Profiler> {
    /// Must stay the first field: a COM interface pointer points at its vtable pointer.
    vtbl: &'static sys::ICorProfilerCallback11Vtbl,
    refs: AtomicU32,
    profiler: &'static P,
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

/// The profiler behind a callback object pointer.
///
/// # Safety
/// `this` must be null or point at a `CallbackObject<P>` that lives for the rest of the
/// process (every callback object does: it sits in an [`Export`] static).
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

unsafe extern "system" fn query_interface<P: Profiler>(
    this: *mut c_void,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() {
        return sys::E_POINTER;
    }
    // SAFETY: `ppv` is non-null and COM requires it to be writable.
    unsafe { ppv.write(ptr::null_mut()) };
    // SAFETY: `riid` is null or points at the caller's GUID.
    let Some(iid) = (unsafe { riid.as_ref() }) else {
        return sys::E_POINTER;
    };
    if !CALLBACK_IIDS.contains(iid) {
        return sys::E_NOINTERFACE;
    }
    // SAFETY: `this` is null or our `CallbackObject<P>` (see `shim!`).
    let Some(object) = (unsafe { this.cast::<CallbackObject<P>>().as_ref() }) else {
        return sys::E_POINTER;
    };
    object.refs.fetch_add(1, Ordering::Relaxed);
    // SAFETY: checked non-null and writable above.
    unsafe { ppv.write(this) };
    sys::S_OK
}

unsafe extern "system" fn add_ref<P: Profiler>(this: *mut c_void) -> ULONG {
    // SAFETY: `this` is null or our `CallbackObject<P>` (see `shim!`).
    match unsafe { this.cast::<CallbackObject<P>>().as_ref() } {
        Some(object) => object.refs.fetch_add(1, Ordering::Relaxed).wrapping_add(1),
        None => 0,
    }
}

unsafe extern "system" fn release<P: Profiler>(this: *mut c_void) -> ULONG {
    // SAFETY: `this` is null or our `CallbackObject<P>` (see `shim!`).
    match unsafe { this.cast::<CallbackObject<P>>().as_ref() } {
        // Reaching zero frees nothing: see the module documentation.
        Some(object) => release_count(&object.refs),
        None => 0,
    }
}

/// Decrements a reference count without going below zero; returns the new count.
fn release_count(refs: &AtomicU32) -> ULONG {
    match refs.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| n.checked_sub(1)) {
        Ok(previous) => previous - 1,
        Err(_) => 0,
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
struct CallbackVtbl<P>(PhantomData<fn() -> P>);

impl<P: Profiler> CallbackVtbl<P> {
    /// The complete vtable; every lower version's vtable is a prefix of it.
    const VTBL: sys::ICorProfilerCallback11Vtbl = sys::ICorProfilerCallback11Vtbl {
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
            QueryInterface: query_interface::<P>,
            AddRef: add_ref::<P>,
            Release: release::<P>,
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

// ---------------------------------------------------------------------------------------------
// Helper interfaces handed to callbacks
// ---------------------------------------------------------------------------------------------

/// How to recompile one method, handed to [`Profiler::get_rejit_parameters`]
/// (`ICorProfilerFunctionControl`). Valid only during that callback.
pub struct FunctionControl {
    ptr: ComPtr<sys::ICorProfilerFunctionControlVtbl>,
}

impl FunctionControl {
    /// Sets how the JIT compiles the new version (inlining, optimizations).
    pub fn set_codegen_flags(&self, flags: CodegenFlags) -> Result<()> {
        // SAFETY: `ptr` is a live ICorProfilerFunctionControl; the argument is by value.
        let hr = unsafe { (self.ptr.vtbl().SetCodegenFlags)(self.ptr.as_raw(), flags.bits()) };
        ok("ICorProfilerFunctionControl::SetCodegenFlags", hr)
    }

    /// Supplies the new method body: an IL method header (tiny or fat) followed by the IL and
    /// any extra sections. The runtime copies it.
    pub fn set_il_function_body(&self, body: &[u8]) -> Result<()> {
        let len = u32::try_from(body.len()).map_err(|_| Error::InvalidData {
            context: "ICorProfilerFunctionControl::SetILFunctionBody",
            reason: format!("a method body of {} bytes is too large", body.len()),
        })?;
        // SAFETY: `ptr` is live; `body` is readable for `len` bytes during the call.
        let hr =
            unsafe { (self.ptr.vtbl().SetILFunctionBody)(self.ptr.as_raw(), len, body.as_ptr()) };
        ok("ICorProfilerFunctionControl::SetILFunctionBody", hr)
    }

    /// Tells the debugger how old IL offsets map to the new body's (the runtime currently
    /// answers `E_NOTIMPL`).
    pub fn set_il_instrumented_code_map(&self, map: &[IlMapEntry]) -> Result<()> {
        let entries: Vec<sys::COR_IL_MAP> = map
            .iter()
            .map(|e| sys::COR_IL_MAP {
                oldOffset: e.old_offset,
                newOffset: e.new_offset,
                fAccurate: sys::TRUE,
            })
            .collect();
        let len = u32::try_from(entries.len()).map_err(|_| Error::InvalidData {
            context: "ICorProfilerFunctionControl::SetILInstrumentedCodeMap",
            reason: format!("{} map entries are too many", entries.len()),
        })?;
        // SAFETY: `ptr` is live; `entries` holds `len` initialized entries during the call.
        let hr = unsafe {
            (self.ptr.vtbl().SetILInstrumentedCodeMap)(self.ptr.as_raw(), len, entries.as_ptr())
        };
        ok("ICorProfilerFunctionControl::SetILInstrumentedCodeMap", hr)
    }
}

impl core::fmt::Debug for FunctionControl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("FunctionControl").field(&self.ptr).finish()
    }
}

/// Lets [`Profiler::get_assembly_references`] declare extra assembly references
/// (`ICorProfilerAssemblyReferenceProvider`). Valid only during that callback.
pub struct AssemblyReferenceProvider {
    ptr: ComPtr<sys::ICorProfilerAssemblyReferenceProviderVtbl>,
}

impl AssemblyReferenceProvider {
    /// Declares that the assembly being loaded references `reference`.
    pub fn add_assembly_reference(&self, reference: &AssemblyReference<'_>) -> Result<()> {
        const METHOD: &str = "ICorProfilerAssemblyReferenceProvider::AddAssemblyReference";
        let too_long = |what: &str| Error::InvalidData {
            context: METHOD,
            reason: format!("{what} is too long"),
        };
        let name = to_wide(reference.name);
        let mut locale = to_wide(reference.locale);
        let (locale_ptr, locale_len) = if reference.locale.is_empty() {
            (ptr::null_mut(), 0)
        } else {
            let len = u32::try_from(locale.len()).map_err(|_| too_long("the locale"))?;
            (locale.as_mut_ptr(), len)
        };
        let [major, minor, build, revision] = reference.version;
        let mut metadata = sys::ASSEMBLYMETADATA {
            usMajorVersion: major,
            usMinorVersion: minor,
            usBuildNumber: build,
            usRevisionNumber: revision,
            szLocale: locale_ptr,
            cbLocale: locale_len,
            rProcessor: ptr::null_mut(),
            ulProcessor: 0,
            rOS: ptr::null_mut(),
            ulOS: 0,
        };
        let key_len = u32::try_from(reference.public_key_or_token.len())
            .map_err(|_| too_long("the public key"))?;
        let hash_len = u32::try_from(reference.hash.len()).map_err(|_| too_long("the hash"))?;
        let info = sys::COR_PRF_ASSEMBLY_REFERENCE_INFO {
            pbPublicKeyOrToken: reference.public_key_or_token.as_ptr().cast_mut().cast(),
            cbPublicKeyOrToken: key_len,
            szName: name.as_ptr(),
            pMetaData: &mut metadata,
            pbHashValue: reference.hash.as_ptr().cast_mut().cast(),
            cbHashValue: hash_len,
            dwAssemblyRefFlags: reference.flags,
        };
        // SAFETY: `ptr` is live; `info` and every buffer it points at (`name`, `locale`,
        // `metadata`, the caller's slices) outlive the call, and the runtime only reads them.
        let hr = unsafe { (self.ptr.vtbl().AddAssemblyReference)(self.ptr.as_raw(), &info) };
        ok(METHOD, hr)
    }
}

impl core::fmt::Debug for AssemblyReferenceProvider {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("AssemblyReferenceProvider")
            .field(&self.ptr)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// The class factory and the exported state
// ---------------------------------------------------------------------------------------------

/// The IClassFactory object; it is the first field of an [`Export`].
#[repr(C)]
struct ClassFactory {
    /// Must stay the first field: a COM interface pointer points at its vtable pointer.
    vtbl: &'static sys::IClassFactoryVtbl,
    refs: AtomicU32,
}

/// Everything one exported profiler needs, meant to live in a `static` (which
/// [`export_profiler!`](crate::export_profiler) declares): its CLSID, the class factory, and
/// once created, the profiler instance and its callback object. Nothing in it is ever freed
/// (see the [module documentation](self)).
#[repr(C)]
pub struct Export<P: Profiler> {
    /// Must stay the first field: `CreateInstance` finds the `Export` from the factory pointer.
    factory: ClassFactory,
    clsid: GUID,
    make: fn() -> P,
    instance: OnceLock<P>,
    object: OnceLock<CallbackObject<P>>,
}

impl<P: Profiler> Export<P> {
    /// The state for a profiler with class id `clsid`, created by `make` when the runtime
    /// first asks for it.
    pub const fn new(clsid: GUID, make: fn() -> P) -> Self {
        Export {
            factory: ClassFactory {
                vtbl: const { &FactoryVtbl::<P>::VTBL },
                refs: AtomicU32::new(0),
            },
            clsid,
            make,
            instance: OnceLock::new(),
            object: OnceLock::new(),
        }
    }

    /// The class id this profiler answers to.
    pub fn clsid(&self) -> &GUID {
        &self.clsid
    }

    /// The profiler instance, once the runtime has created it.
    pub fn instance(&self) -> Option<&P> {
        self.instance.get()
    }

    /// The implementation of `DllGetClassObject`: hands out the class factory for our CLSID.
    ///
    /// Returns `CLASS_E_CLASSNOTAVAILABLE` for another CLSID, `E_NOINTERFACE` unless `riid` is
    /// IClassFactory or IUnknown, `E_POINTER` for a null `ppv`. `*ppv` is null on failure.
    ///
    /// # Safety
    /// `rclsid` and `riid` must each be null or point at a GUID; `ppv` must be null or valid
    /// for writing a pointer.
    pub unsafe fn get_class_object(
        &'static self,
        rclsid: *const GUID,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT {
        if ppv.is_null() {
            return sys::E_POINTER;
        }
        // SAFETY: non-null, and the caller guarantees it is writable.
        unsafe { ppv.write(ptr::null_mut()) };
        // SAFETY: the caller guarantees `rclsid` is null or a valid GUID.
        match unsafe { rclsid.as_ref() } {
            Some(clsid) if *clsid == self.clsid => {}
            _ => return sys::CLASS_E_CLASSNOTAVAILABLE,
        }
        let factory = ptr::from_ref(&self.factory).cast_mut().cast::<c_void>();
        // SAFETY: `factory` is our ClassFactory, inside `self` (a static); `riid` and `ppv`
        // are as the caller guaranteed.
        unsafe { factory_query_interface(factory, riid, ppv) }
    }

    /// The callback object, creating the profiler on first use (may panic in `make`).
    fn object(&'static self) -> &'static CallbackObject<P> {
        let profiler = self.instance.get_or_init(self.make);
        self.object.get_or_init(|| CallbackObject {
            vtbl: const { &CallbackVtbl::<P>::VTBL },
            refs: AtomicU32::new(0),
            profiler,
        })
    }
}

impl<P: Profiler> core::fmt::Debug for Export<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Export")
            .field("clsid", &self.clsid)
            .field("created", &self.instance.get().is_some())
            .finish()
    }
}

/// Implemented (by [`export_profiler!`](crate::export_profiler)) for the exported profiler
/// type, so that code outside the callbacks can find the instance: see [`instance`].
pub trait Exported: Profiler + Sized {
    /// The static holding this profiler's COM state.
    fn export() -> &'static Export<Self>;
}

/// The instance of the exported profiler type `P`, once the runtime has created it (from
/// `DllGetClassObject` + `CreateInstance`, before `Initialize`). Costs one atomic load, so it
/// is usable from enter/leave hooks and other free functions.
pub fn instance<P: Exported>() -> Option<&'static P> {
    P::export().instance.get()
}

unsafe extern "system" fn factory_query_interface(
    this: *mut c_void,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() {
        return sys::E_POINTER;
    }
    // SAFETY: non-null, and COM requires it to be writable.
    unsafe { ppv.write(ptr::null_mut()) };
    // SAFETY: `riid` is null or points at the caller's GUID.
    let Some(iid) = (unsafe { riid.as_ref() }) else {
        return sys::E_POINTER;
    };
    if *iid != sys::IID_IUnknown && *iid != sys::IID_IClassFactory {
        return sys::E_NOINTERFACE;
    }
    // SAFETY: the factory vtable is only reachable through our `ClassFactory` objects.
    let Some(factory) = (unsafe { this.cast::<ClassFactory>().as_ref() }) else {
        return sys::E_POINTER;
    };
    factory.refs.fetch_add(1, Ordering::Relaxed);
    // SAFETY: checked non-null and writable above.
    unsafe { ppv.write(this) };
    sys::S_OK
}

unsafe extern "system" fn factory_add_ref(this: *mut c_void) -> ULONG {
    // SAFETY: `this` is null or our `ClassFactory`.
    match unsafe { this.cast::<ClassFactory>().as_ref() } {
        Some(factory) => factory.refs.fetch_add(1, Ordering::Relaxed).wrapping_add(1),
        None => 0,
    }
}

unsafe extern "system" fn factory_release(this: *mut c_void) -> ULONG {
    // SAFETY: `this` is null or our `ClassFactory`.
    match unsafe { this.cast::<ClassFactory>().as_ref() } {
        // The factory is part of a static: nothing to free.
        Some(factory) => release_count(&factory.refs),
        None => 0,
    }
}

unsafe extern "system" fn factory_create_instance<P: Profiler>(
    this: *mut c_void,
    outer: *mut c_void,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    if ppv.is_null() {
        return sys::E_POINTER;
    }
    // SAFETY: non-null, and COM requires it to be writable.
    unsafe { ppv.write(ptr::null_mut()) };
    if !outer.is_null() {
        return sys::CLASS_E_NOAGGREGATION;
    }
    // SAFETY: this vtable belongs to the `ClassFactory` that is the first field of a
    // `#[repr(C)] Export<P>` static, so the factory pointer is also a `&'static Export<P>`.
    let Some(export) = (unsafe { this.cast::<Export<P>>().as_ref::<'static>() }) else {
        return sys::E_POINTER;
    };
    guarded(|| {
        let object = ptr::from_ref(export.object()).cast_mut().cast::<c_void>();
        // SAFETY: `object` is a `CallbackObject<P>` in a static; `riid` and `ppv` come from
        // the caller under COM's rules.
        unsafe { query_interface::<P>(object, riid, ppv) }
    })
}

unsafe extern "system" fn factory_lock_server(_this: *mut c_void, _lock: BOOL) -> HRESULT {
    // The library is never unloaded, so there is nothing to lock.
    sys::S_OK
}

/// Holds the static vtable of the class factory for profiler type `P`.
struct FactoryVtbl<P>(PhantomData<fn() -> P>);

impl<P: Profiler> FactoryVtbl<P> {
    const VTBL: sys::IClassFactoryVtbl = sys::IClassFactoryVtbl {
        base__: sys::IUnknownVtbl {
            QueryInterface: factory_query_interface,
            AddRef: factory_add_ref,
            Release: factory_release,
        },
        CreateInstance: factory_create_instance::<P>,
        LockServer: factory_lock_server,
    };
}

// ---------------------------------------------------------------------------------------------
// CLSIDs and the export macro
// ---------------------------------------------------------------------------------------------

/// Parses a GUID written `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`, with or without braces,
/// hex digits in either case. `None` for anything else.
pub const fn try_parse_guid(text: &str) -> Option<GUID> {
    let bytes = text.as_bytes();
    let (start, end) = match bytes.len() {
        38 if bytes[0] == b'{' && bytes[37] == b'}' => (1, 37),
        36 => (0, 36),
        _ => return None,
    };
    let mut value: u128 = 0;
    let mut i = start;
    while i < end {
        let c = bytes[i];
        match i - start {
            8 | 13 | 18 | 23 => {
                if c != b'-' {
                    return None;
                }
            }
            _ => {
                let digit = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' => c - b'a' + 10,
                    b'A'..=b'F' => c - b'A' + 10,
                    _ => return None,
                };
                value = (value << 4) | digit as u128;
            }
        }
        i += 1;
    }
    Some(GUID::from_u128(value))
}

/// [`try_parse_guid`] for literals: a malformed GUID panics, which in a `const` or `static`
/// initializer is a compile error.
pub const fn parse_guid(text: &str) -> GUID {
    match try_parse_guid(text) {
        Some(guid) => guid,
        None => panic!(
            "malformed GUID: expected XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX, optionally in braces"
        ),
    }
}

/// Exports a [`Profiler`] type from a `cdylib` so the runtime can load it.
///
/// ```
/// #[derive(Default)]
/// struct MyProfiler;
///
/// impl clrprof_sdk::Profiler for MyProfiler {}
///
/// clrprof_sdk::export_profiler!(MyProfiler, "{8A6E1E13-0D6B-4C5F-9E0B-3F1B8C2D4E5A}");
/// # fn main() {}
/// ```
///
/// A malformed CLSID is rejected by the compiler:
///
/// ```compile_fail
/// #[derive(Default)]
/// struct MyProfiler;
///
/// impl clrprof_sdk::Profiler for MyProfiler {}
///
/// clrprof_sdk::export_profiler!(MyProfiler, "{8A6E1E13-0D6B-4C5F-9E0B-3F1B8C2D4E5}");
/// # fn main() {}
/// ```
///
/// The type must implement [`Profiler`] and `Default` (the runtime creates it with
/// `Default::default()` on first use). The CLSID is parsed at compile time: a malformed one
/// does not compile. The macro declares a `static` holding the instance and its COM state,
/// implements [`Exported`] for the type (so [`instance::<MyProfiler>()`](instance) finds it),
/// and exports `DllGetClassObject` and `DllCanUnloadNow` (which always answers `S_FALSE`:
/// the library must stay loaded). Use it once per library.
#[macro_export]
macro_rules! export_profiler {
    ($profiler:ty, $clsid:expr $(,)?) => {
        const _: () = {
            static EXPORT: $crate::export::Export<$profiler> = $crate::export::Export::new(
                $crate::export::parse_guid($clsid),
                <$profiler as ::core::default::Default>::default,
            );

            impl $crate::export::Exported for $profiler {
                fn export() -> &'static $crate::export::Export<Self> {
                    &EXPORT
                }
            }

            /// Called by the runtime to get the class factory of the profiler.
            ///
            /// # Safety
            /// COM's contract: GUID pointers null or valid, `ppv` null or writable.
            #[unsafe(no_mangle)]
            pub unsafe extern "system" fn DllGetClassObject(
                rclsid: *const $crate::sys::GUID,
                riid: *const $crate::sys::GUID,
                ppv: *mut *mut ::core::ffi::c_void,
            ) -> $crate::sys::HRESULT {
                // SAFETY: forwarded from our caller, who follows COM's contract.
                unsafe { EXPORT.get_class_object(rclsid, riid, ppv) }
            }

            /// Always `S_FALSE`: the runtime may call back at any time, so the library stays.
            #[unsafe(no_mangle)]
            pub extern "system" fn DllCanUnloadNow() -> $crate::sys::HRESULT {
                $crate::sys::S_FALSE
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_guids_with_and_without_braces() {
        let g = parse_guid("{8A8CC829-CCF2-49FE-BBAE-0F022228071A}");
        assert_eq!(g, sys::IID_ICorProfilerCallback2);
        assert_eq!(
            parse_guid("8a8cc829-ccf2-49fe-bbae-0f022228071a"),
            sys::IID_ICorProfilerCallback2
        );
        const AT_COMPILE_TIME: GUID = parse_guid("00000001-0000-0000-C000-000000000046");
        assert_eq!(AT_COMPILE_TIME, sys::IID_IClassFactory);
    }

    #[test]
    fn rejects_malformed_guids() {
        for bad in [
            "",
            "{8A8CC829-CCF2-49FE-BBAE-0F022228071A",
            "8A8CC829-CCF2-49FE-BBAE-0F022228071A}",
            "8A8CC829+CCF2-49FE-BBAE-0F022228071A",
            "8A8CC829-CCF2-49FE-BBAE-0F022228071G",
            "8A8CC829-CCF2-49FE-BBAE-0F022228071",
            "{8A8CC829CCF249FEBBAE0F022228071A}",
        ] {
            assert_eq!(try_parse_guid(bad), None, "{bad:?}");
        }
    }

    #[test]
    #[should_panic(expected = "malformed GUID")]
    fn parse_guid_panics_at_run_time_too() {
        parse_guid(std::hint::black_box("not a guid"));
    }

    #[test]
    fn release_never_goes_below_zero() {
        let refs = AtomicU32::new(1);
        assert_eq!(release_count(&refs), 0);
        assert_eq!(release_count(&refs), 0);
        assert_eq!(refs.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn slices_from_null_or_misaligned_pointers_are_empty() {
        // SAFETY: null with any count is allowed by `slice`.
        let s: &[ObjectId] = unsafe { slice(ptr::null::<usize>(), 5) };
        assert!(s.is_empty());
        let words = [1usize, 2, 3];
        // SAFETY: `words` holds 3 elements; ObjectId is a transparent usize.
        let s: &[ObjectId] = unsafe { slice(words.as_ptr(), 3) };
        assert_eq!(s, &[ObjectId(1), ObjectId(2), ObjectId(3)]);
        let bytes = [0u8; 16];
        let odd = bytes.as_ptr().wrapping_add(1).cast::<u32>();
        // SAFETY: misaligned pointers are refused before anything is read.
        let s: &[u32] = unsafe { slice(odd, 2) };
        assert!(s.is_empty());
    }
}
