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
//!
//! # Files
//! This file holds the boundary (panics, argument conversion), the class factory with the
//! exported state and [`export_profiler!`](crate::export_profiler); `callbacks.rs` the callback
//! object and its shims; the helper interfaces handed to some callbacks are in
//! `crate::callback_interfaces`.

mod callbacks;

pub use crate::callback_interfaces::{AssemblyReferenceProvider, FunctionControl};
pub use callbacks::callback_versions_asked;
use callbacks::{CallbackObject, CallbackVtbl};

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use clrprof_sys::{self as sys, BOOL, GUID, HRESULT, ULONG};

use crate::callback::Profiler;
use crate::error::{Error, Result};
use crate::wide::from_wide;

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
        // SAFETY: the caller guarantees `ppv` is null or writable.
        if let Err(hr) = unsafe { clear_out(ppv) } {
            return hr;
        }
        // SAFETY: the caller guarantees `rclsid` is null or a valid GUID.
        match unsafe { rclsid.as_ref() } {
            Some(clsid) if *clsid == self.clsid => {}
            _ => return sys::CLASS_E_CLASSNOTAVAILABLE,
        }
        let factory = ptr::from_ref(&self.factory).cast_mut().cast::<c_void>();
        // SAFETY: `factory` is our ClassFactory, inside `self` (a static); `riid` and `ppv`
        // are as the caller guaranteed.
        unsafe { query_interface::<ClassFactory>(factory, riid, ppv) }
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

/// One of our COM objects, the class factory or the callback object: a vtable pointer first,
/// then a reference count. Each lives in a static, so their `IUnknown` methods
/// ([`query_interface`], [`add_ref`], [`release`]) count references but never free anything.
trait ComObject {
    /// The object's reference count.
    fn refs(&self) -> &AtomicU32;

    /// Whether `QueryInterface` hands the object out as the interface `iid`.
    fn answers(iid: &GUID) -> bool;
}

impl ComObject for ClassFactory {
    fn refs(&self) -> &AtomicU32 {
        &self.refs
    }

    /// `IUnknown` and `IClassFactory`.
    fn answers(iid: &GUID) -> bool {
        *iid == sys::IID_IUnknown || *iid == sys::IID_IClassFactory
    }
}

/// Clears a COM out-pointer first thing, as COM asks of every method that answers through
/// one: `Err(E_POINTER)` if it is null.
///
/// # Safety
/// `ppv` must be null or valid for writing a pointer.
unsafe fn clear_out(ppv: *mut *mut c_void) -> Result<(), HRESULT> {
    if ppv.is_null() {
        return Err(sys::E_POINTER);
    }
    // SAFETY: non-null, and the caller guarantees it is writable.
    unsafe { ppv.write(ptr::null_mut()) };
    Ok(())
}

/// `IUnknown::QueryInterface` of a `T`: `this` itself, with a reference added, for an
/// interface it [answers](ComObject::answers).
///
/// # Safety
/// `this` must be null or point at a live `T`; `riid` null or a GUID; `ppv` null or valid for
/// writing a pointer.
unsafe extern "system" fn query_interface<T: ComObject>(
    this: *mut c_void,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: the caller guarantees `ppv` is null or writable.
    if let Err(hr) = unsafe { clear_out(ppv) } {
        return hr;
    }
    // SAFETY: the caller guarantees `riid` is null or points at a GUID.
    let Some(iid) = (unsafe { riid.as_ref() }) else {
        return sys::E_POINTER;
    };
    if !T::answers(iid) {
        return sys::E_NOINTERFACE;
    }
    // SAFETY: the caller guarantees `this` is null or a live `T`.
    let Some(object) = (unsafe { this.cast::<T>().as_ref() }) else {
        return sys::E_POINTER;
    };
    object.refs().fetch_add(1, Ordering::Relaxed);
    // SAFETY: checked non-null and writable above.
    unsafe { ppv.write(this) };
    sys::S_OK
}

/// `IUnknown::AddRef` of a `T`: the new count.
///
/// # Safety
/// `this` must be null or point at a live `T`.
unsafe extern "system" fn add_ref<T: ComObject>(this: *mut c_void) -> ULONG {
    // SAFETY: the caller guarantees `this` is null or a live `T`.
    match unsafe { this.cast::<T>().as_ref() } {
        Some(object) => object
            .refs()
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1),
        None => 0,
    }
}

/// `IUnknown::Release` of a `T`: the new count. Reaching zero frees nothing (the object is
/// part of a static: see the module documentation).
///
/// # Safety
/// `this` must be null or point at a live `T`.
unsafe extern "system" fn release<T: ComObject>(this: *mut c_void) -> ULONG {
    // SAFETY: the caller guarantees `this` is null or a live `T`.
    match unsafe { this.cast::<T>().as_ref() } {
        Some(object) => release_count(object.refs()),
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

unsafe extern "system" fn factory_create_instance<P: Profiler>(
    this: *mut c_void,
    outer: *mut c_void,
    riid: *const GUID,
    ppv: *mut *mut c_void,
) -> HRESULT {
    // SAFETY: COM requires `ppv` to be null or writable.
    if let Err(hr) = unsafe { clear_out(ppv) } {
        return hr;
    }
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
        unsafe { query_interface::<CallbackObject<P>>(object, riid, ppv) }
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
            QueryInterface: query_interface::<ClassFactory>,
            AddRef: add_ref::<ClassFactory>,
            Release: release::<ClassFactory>,
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
    use crate::ids::ObjectId;

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
