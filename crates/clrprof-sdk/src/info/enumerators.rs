//! The runtime's enumerator objects (`ICorProfilerThreadEnum`, `...ModuleEnum`,
//! `...FunctionEnum`, `...MethodEnum`, `...ObjectEnum`) as Rust iterators.
//!
//! Each one owns its COM object and fetches elements in batches with `Next`. The runtime
//! builds the whole list when the enumerator is created, so an enumerator is a snapshot: it
//! can be kept and read later, from any thread. Iteration stops at the end or at the first
//! failing `Next` (kept in [`ThreadEnum::last_error`] etc.); use `into_vec` to get that error
//! as a `Result`.

use core::ffi::c_void;

use clrprof_sys::{
    COR_PRF_FUNCTION, COR_PRF_METHOD, HRESULT, ICorProfilerFunctionEnumVtbl,
    ICorProfilerMethodEnumVtbl, ICorProfilerModuleEnumVtbl, ICorProfilerObjectEnumVtbl,
    ICorProfilerThreadEnumVtbl, ModuleID, ObjectID, ThreadID,
};

use crate::com::ComPtr;
use crate::error::{Error, Result, check};
use crate::ids::{FunctionId, ModuleId, ObjectId, ReJitId, ThreadId, Token};

/// Elements fetched per `Next` call.
const BATCH: usize = 64;

/// A JIT-compiled function and the ReJIT version the entry is about (`COR_PRF_FUNCTION`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct JitedFunction {
    /// The function.
    pub function: FunctionId,
    /// Its ReJIT version: 0 for the original code (and always 0 from `EnumJITedFunctions`).
    pub rejit: ReJitId,
}

/// A method named by its module and MethodDef token (`COR_PRF_METHOD`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MethodRef {
    /// The module that defines the method.
    pub module: ModuleId,
    /// The method's MethodDef token.
    pub token: Token,
}

macro_rules! profiler_enum {
    (
        $(#[$doc:meta])*
        $name:ident: $vtbl:ty, $raw:ty => $item:ty, $iface:literal, |$r:ident| $convert:expr
    ) => {
        $(#[$doc])*
        pub struct $name {
            ptr: ComPtr<$vtbl>,
            buf: Vec<$raw>,
            pos: usize,
            finished: bool,
            error: Option<Error>,
        }

        impl $name {
            /// Wraps the enumerator an Info method returned through its out-param, taking
            /// over that reference. Null becomes an error naming `method`.
            ///
            /// # Safety
            /// `raw` must be null or an owned reference to a live
            #[doc = concat!("`", $iface, "`.")]
            pub(crate) unsafe fn from_raw(method: &'static str, raw: *mut c_void) -> Result<Self> {
                // SAFETY: forwarded from the caller: `raw` is an owned reference of this type.
                let ptr = unsafe { ComPtr::<$vtbl>::from_raw(raw) }.ok_or(Error::InvalidData {
                    context: method,
                    reason: "the runtime returned success but no enumerator".to_string(),
                })?;
                Ok($name {
                    ptr,
                    buf: Vec::new(),
                    pos: 0,
                    finished: false,
                    error: None,
                })
            }

            /// Total number of elements (`GetCount`), including those already read.
            pub fn get_count(&self) -> Result<u32> {
                let mut count = 0u32;
                // SAFETY: `ptr` is a live enumerator; `count` is a valid out-param.
                let hr = unsafe { (self.ptr.vtbl().GetCount)(self.ptr.as_raw(), &mut count) };
                check(concat!($iface, "::GetCount"), hr)?;
                Ok(count)
            }

            /// Goes back to the first element (`Reset`).
            pub fn reset(&mut self) -> Result<()> {
                // SAFETY: `ptr` is a live enumerator.
                let hr = unsafe { (self.ptr.vtbl().Reset)(self.ptr.as_raw()) };
                check(concat!($iface, "::Reset"), hr)?;
                self.buf.clear();
                self.pos = 0;
                self.finished = false;
                self.error = None;
                Ok(())
            }

            /// An independent enumerator at the same position (`Clone`).
            pub fn try_clone(&self) -> Result<Self> {
                const METHOD: &str = concat!($iface, "::Clone");
                let mut raw: *mut c_void = core::ptr::null_mut();
                // SAFETY: `ptr` is a live enumerator; `raw` is a valid out-param.
                let hr = unsafe { (self.ptr.vtbl().Clone)(self.ptr.as_raw(), &mut raw) };
                check(METHOD, hr)?;
                // SAFETY: Clone succeeded, so `raw` is an owned reference of the same type.
                let mut clone = unsafe { Self::from_raw(METHOD, raw) }?;
                // The runtime's cursor is past what we buffered; carry the buffer over.
                clone.buf = self.buf.clone();
                clone.pos = self.pos;
                clone.finished = self.finished;
                Ok(clone)
            }

            /// The error that ended iteration early, if any.
            pub fn last_error(&self) -> Option<&Error> {
                self.error.as_ref()
            }

            /// Reads every remaining element, or the error that stopped the reading.
            pub fn into_vec(mut self) -> Result<Vec<$item>> {
                let items: Vec<$item> = self.by_ref().collect();
                match self.error.take() {
                    Some(e) => Err(e),
                    None => Ok(items),
                }
            }

            fn fill(&mut self) {
                self.buf.clear();
                self.buf.resize(BATCH, <$raw>::default());
                self.pos = 0;
                let mut fetched = 0u32;
                // SAFETY: `ptr` is a live enumerator; `buf` has room for `BATCH` elements.
                let hr: HRESULT = unsafe {
                    (self.ptr.vtbl().Next)(
                        self.ptr.as_raw(),
                        BATCH as u32,
                        self.buf.as_mut_ptr(),
                        &mut fetched,
                    )
                };
                if let Err(e) = check(concat!($iface, "::Next"), hr) {
                    self.error = Some(e);
                    self.buf.clear();
                    self.finished = true;
                    return;
                }
                let fetched = (fetched as usize).min(BATCH);
                self.buf.truncate(fetched);
                if fetched < BATCH {
                    self.finished = true;
                }
            }
        }

        impl Iterator for $name {
            type Item = $item;

            fn next(&mut self) -> Option<$item> {
                if self.pos == self.buf.len() {
                    if self.finished {
                        return None;
                    }
                    self.fill();
                    if self.buf.is_empty() {
                        return None;
                    }
                }
                let $r = self.buf[self.pos];
                self.pos += 1;
                Some($convert)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("ptr", &self.ptr)
                    .field("buffered", &(self.buf.len() - self.pos))
                    .field("finished", &self.finished)
                    .finish()
            }
        }
    };
}

profiler_enum! {
    /// The managed threads alive when `EnumThreads` was called.
    ThreadEnum: ICorProfilerThreadEnumVtbl, ThreadID => ThreadId, "ICorProfilerThreadEnum",
    |raw| ThreadId(raw)
}

profiler_enum! {
    /// The modules loaded when `EnumModules` was called.
    ModuleEnum: ICorProfilerModuleEnumVtbl, ModuleID => ModuleId, "ICorProfilerModuleEnum",
    |raw| ModuleId(raw)
}

profiler_enum! {
    /// The functions JIT-compiled so far (`EnumJITedFunctions`, `EnumJITedFunctions2`).
    FunctionEnum: ICorProfilerFunctionEnumVtbl, COR_PRF_FUNCTION => JitedFunction,
    "ICorProfilerFunctionEnum",
    |raw| JitedFunction { function: FunctionId(raw.functionId), rejit: ReJitId(raw.reJitId) }
}

profiler_enum! {
    /// Methods as (module, token) pairs (`EnumNgenModuleMethodsInliningThisMethod`).
    MethodEnum: ICorProfilerMethodEnumVtbl, COR_PRF_METHOD => MethodRef, "ICorProfilerMethodEnum",
    |raw| MethodRef { module: ModuleId(raw.moduleId), token: Token(raw.methodId) }
}

profiler_enum! {
    /// Object ids (`EnumModuleFrozenObjects`, `EnumerateNonGCObjects`).
    ObjectEnum: ICorProfilerObjectEnumVtbl, ObjectID => ObjectId, "ICorProfilerObjectEnum",
    |raw| ObjectId(raw)
}

#[cfg(test)]
mod tests {
    //! A fake `ICorProfilerThreadEnum` over a fixed list, to test batching, reset and clone.

    use super::*;
    use clrprof_sys::{E_FAIL, E_NOINTERFACE, IUnknownVtbl, S_FALSE, S_OK, ULONG};
    use std::sync::atomic::{AtomicU32, Ordering};

    #[repr(C)]
    struct Fake {
        vtbl: *const ICorProfilerThreadEnumVtbl,
        refs: AtomicU32,
        items: Vec<usize>,
        pos: usize,
        fail_at: Option<usize>,
    }

    fn fake(this: *mut c_void) -> &'static mut Fake {
        // SAFETY: the tests only pass pointers made by `new_fake`, alive until the last Release.
        unsafe { &mut *this.cast::<Fake>() }
    }

    unsafe extern "system" fn qi(
        _: *mut c_void,
        _: *const clrprof_sys::GUID,
        out: *mut *mut c_void,
    ) -> HRESULT {
        // SAFETY: `out` is a valid out-param per the COM contract.
        unsafe { *out = core::ptr::null_mut() };
        E_NOINTERFACE
    }
    unsafe extern "system" fn add_ref(this: *mut c_void) -> ULONG {
        fake(this).refs.fetch_add(1, Ordering::SeqCst) + 1
    }
    unsafe extern "system" fn release(this: *mut c_void) -> ULONG {
        let left = fake(this).refs.fetch_sub(1, Ordering::SeqCst) - 1;
        if left == 0 {
            // SAFETY: the last reference is gone; the box was leaked by `new_fake`.
            drop(unsafe { Box::from_raw(this.cast::<Fake>()) });
        }
        left
    }
    unsafe extern "system" fn skip(this: *mut c_void, n: ULONG) -> HRESULT {
        let f = fake(this);
        f.pos = (f.pos + n as usize).min(f.items.len());
        S_OK
    }
    unsafe extern "system" fn reset(this: *mut c_void) -> HRESULT {
        fake(this).pos = 0;
        S_OK
    }
    unsafe extern "system" fn clone(this: *mut c_void, out: *mut *mut c_void) -> HRESULT {
        let f = fake(this);
        let copy = new_fake(f.items.clone(), f.fail_at);
        fake(copy).pos = f.pos;
        // SAFETY: `out` is a valid out-param.
        unsafe { *out = copy };
        S_OK
    }
    unsafe extern "system" fn get_count(this: *mut c_void, out: *mut ULONG) -> HRESULT {
        // SAFETY: `out` is a valid out-param.
        unsafe { *out = fake(this).items.len() as ULONG };
        S_OK
    }
    unsafe extern "system" fn next(
        this: *mut c_void,
        celt: ULONG,
        ids: *mut ThreadID,
        fetched: *mut ULONG,
    ) -> HRESULT {
        let f = fake(this);
        if f.fail_at.is_some_and(|at| f.pos >= at) {
            return E_FAIL;
        }
        let n = (f.items.len() - f.pos).min(celt as usize);
        for i in 0..n {
            // SAFETY: the caller gave room for `celt >= n` elements.
            unsafe { *ids.add(i) = f.items[f.pos + i] };
        }
        f.pos += n;
        // SAFETY: `fetched` is a valid out-param.
        unsafe { *fetched = n as ULONG };
        if n == celt as usize { S_OK } else { S_FALSE }
    }

    static VTBL: ICorProfilerThreadEnumVtbl = ICorProfilerThreadEnumVtbl {
        base__: IUnknownVtbl {
            QueryInterface: qi,
            AddRef: add_ref,
            Release: release,
        },
        Skip: skip,
        Reset: reset,
        Clone: clone,
        GetCount: get_count,
        Next: next,
    };

    fn new_fake(items: Vec<usize>, fail_at: Option<usize>) -> *mut c_void {
        Box::into_raw(Box::new(Fake {
            vtbl: &VTBL,
            refs: AtomicU32::new(1),
            items,
            pos: 0,
            fail_at,
        }))
        .cast()
    }

    fn thread_enum(items: Vec<usize>, fail_at: Option<usize>) -> ThreadEnum {
        // SAFETY: `new_fake` returns an owned reference to a fake thread enumerator.
        unsafe { ThreadEnum::from_raw("test", new_fake(items, fail_at)) }.unwrap()
    }

    #[test]
    fn iterates_across_batches() {
        let items: Vec<usize> = (1..=150).collect();
        let e = thread_enum(items.clone(), None);
        assert_eq!(e.get_count().unwrap(), 150);
        let got: Vec<usize> = e.map(|t| t.0).collect();
        assert_eq!(got, items);
        assert!(thread_enum(vec![], None).next().is_none());
        let exact: Vec<usize> = (0..BATCH).collect();
        assert_eq!(
            thread_enum(exact.clone(), None).into_vec().unwrap().len(),
            exact.len()
        );
    }

    #[test]
    fn reset_and_clone_keep_positions() {
        let mut e = thread_enum((1..=100).collect(), None);
        assert_eq!(e.next(), Some(ThreadId(1)));
        assert_eq!(e.next(), Some(ThreadId(2)));
        let c = e.try_clone().unwrap();
        let rest: Vec<usize> = c.map(|t| t.0).collect();
        assert_eq!(rest, (3..=100).collect::<Vec<_>>());
        assert_eq!(e.next(), Some(ThreadId(3)));
        e.reset().unwrap();
        assert_eq!(e.next(), Some(ThreadId(1)));
    }

    #[test]
    fn errors_stop_iteration_and_surface_in_into_vec() {
        let mut e = thread_enum((1..=100).collect(), Some(64));
        assert_eq!(e.by_ref().count(), 64);
        assert!(e.last_error().unwrap().is(E_FAIL));
        let err = thread_enum((1..=100).collect(), Some(64))
            .into_vec()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ICorProfilerThreadEnum::Next failed: 0x80004005 E_FAIL"
        );
    }

    #[test]
    fn null_enumerator_is_an_error() {
        // SAFETY: null is allowed.
        let e = unsafe {
            ThreadEnum::from_raw("ICorProfilerInfo4::EnumThreads", core::ptr::null_mut())
        };
        assert!(matches!(e, Err(Error::InvalidData { .. })));
    }
}
