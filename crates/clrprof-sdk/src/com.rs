//! Owning COM interface pointers.
//!
//! [`ComPtr`] holds one reference to a COM object (AddRef on clone, Release on drop) and knows
//! the vtable type it points at. This is the only place where the SDK reads a vtable pointer
//! out of an object; everything else calls through [`ComPtr::vtbl`].

use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;

use clrprof_sys::{GUID, IUnknownVtbl, RawInterface};

use crate::error::{Error, HResult, Result};

/// An owned reference to a COM interface whose vtable is `V`.
pub struct ComPtr<V> {
    ptr: NonNull<RawInterface<V>>,
    _vtbl: PhantomData<*const V>,
}

// SAFETY: the profiling API's interfaces (ICorProfilerInfo*, IMetaDataImport*, enumerators)
// are free-threaded: the runtime documents them as callable from any thread, and their
// reference counts are interlocked.
unsafe impl<V> Send for ComPtr<V> {}
// SAFETY: as above; `ComPtr` itself has no interior state besides the pointer.
unsafe impl<V> Sync for ComPtr<V> {}

impl<V> ComPtr<V> {
    /// Takes ownership of one reference to `raw` (no AddRef). Returns `None` for null.
    ///
    /// # Safety
    /// `raw` must be null or a live COM interface pointer whose vtable starts with the layout
    /// of `V`, and the caller must own the reference it hands over.
    pub unsafe fn from_raw(raw: *mut c_void) -> Option<Self> {
        NonNull::new(raw.cast::<RawInterface<V>>()).map(|ptr| ComPtr {
            ptr,
            _vtbl: PhantomData,
        })
    }

    /// Adds a reference to `raw` and wraps it. Returns `None` for null.
    ///
    /// # Safety
    /// As for [`ComPtr::from_raw`], except that the caller keeps its own reference.
    pub unsafe fn from_borrowed(raw: *mut c_void) -> Option<Self> {
        // SAFETY: forwarded contract: `raw` is a live interface pointer of layout `V`.
        let this = unsafe { Self::from_raw(raw) }?;
        this.unknown_vtbl_add_ref();
        Some(this)
    }

    /// The interface pointer, to pass as `this` to a vtable method.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_ptr().cast()
    }

    /// The vtable.
    pub fn vtbl(&self) -> &V {
        // SAFETY: by construction `ptr` is a live COM object whose first word points at a
        // vtable of layout `V`; the object (and so its static vtable) outlives `self`.
        unsafe { &*(*self.ptr.as_ptr()).vtbl }
    }

    /// Views the same object through a vtable that is a prefix of `V` (a base interface).
    ///
    /// # Safety
    /// `B` must be a layout prefix of `V` (e.g. `ICorProfilerInfoVtbl` of `ICorProfilerInfo5Vtbl`).
    pub unsafe fn vtbl_as<B>(&self) -> &B {
        // SAFETY: the caller guarantees `B` is a prefix of `V`, so reading the vtable as `B`
        // only touches entries that exist.
        unsafe { &*((*self.ptr.as_ptr()).vtbl.cast::<B>()) }
    }

    fn unknown(&self) -> &IUnknownVtbl {
        // SAFETY: every COM vtable starts with IUnknown's three entries.
        unsafe { &*((*self.ptr.as_ptr()).vtbl.cast::<IUnknownVtbl>()) }
    }

    fn unknown_vtbl_add_ref(&self) {
        // SAFETY: `as_raw` is a live interface pointer; AddRef has no preconditions.
        unsafe { (self.unknown().AddRef)(self.as_raw()) };
    }

    /// Asks the object for another interface (`QueryInterface`).
    pub fn query<W>(&self, iid: &GUID) -> Result<ComPtr<W>> {
        let mut out: *mut c_void = core::ptr::null_mut();
        // SAFETY: `as_raw` is live; `iid` and `out` are valid for the duration of the call.
        let hr = unsafe { (self.unknown().QueryInterface)(self.as_raw(), iid, &mut out) };
        if hr < 0 || out.is_null() {
            return Err(Error::Failed {
                method: "IUnknown::QueryInterface",
                hr: HResult(hr),
            });
        }
        // SAFETY: QueryInterface succeeded for `iid`, so `out` is an owned reference to that
        // interface, whose vtable the caller names as `W`.
        Ok(unsafe { ComPtr::from_raw(out) }.expect("checked non-null above"))
    }
}

impl<V> Clone for ComPtr<V> {
    fn clone(&self) -> Self {
        self.unknown_vtbl_add_ref();
        ComPtr {
            ptr: self.ptr,
            _vtbl: PhantomData,
        }
    }
}

impl<V> Drop for ComPtr<V> {
    fn drop(&mut self) {
        // SAFETY: we own one reference; Release gives it back.
        unsafe { (self.unknown().Release)(self.as_raw()) };
    }
}

impl<V> core::fmt::Debug for ComPtr<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ComPtr({:p})", self.ptr)
    }
}
