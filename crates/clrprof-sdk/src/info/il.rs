//! IL bodies: reading a method's IL and replacing it before it is first JIT-compiled.
//!
//! The old (non-ReJIT) way to instrument a method: in `ModuleLoadFinished` or
//! `JITCompilationStarted`, read the body with [`ProfilerInfo::get_il_body`], build a new
//! [`IlBody`], and install it with [`ProfilerInfo::replace_il_function_body`]. The change is
//! permanent (the profiler can no longer detach) and only affects code compiled afterwards:
//! a caller already compiled with the method inlined keeps the old IL, so rewrite in
//! `ModuleLoadFinished` (before any caller is compiled) or disable inlining. For changes that
//! can be undone or applied after the method ran, use ReJIT (see `rejit.rs`).

use core::ffi::c_void;
use core::ptr::{self, NonNull};

use clrprof_sys::{ICorProfilerInfoVtbl, IMethodMallocVtbl, LPCBYTE};

use super::{ProfilerInfo, ok};
use crate::com::ComPtr;
use crate::error::{Error, HResult, Result};
use crate::ids::{ModuleId, Token};
use crate::il::{HeaderFormat, IlBody};

/// The IL allocator of one module (`IMethodMalloc`), from
/// [`ProfilerInfo::get_il_function_body_allocator`].
///
/// Memory it hands out is never freed (it lives as long as the process, or the module on
/// runtimes that unload), so slices from [`MethodMalloc::alloc`] stay valid while `self`
/// does, and each call returns a new, disjoint block.
#[derive(Clone, Debug)]
pub struct MethodMalloc {
    ptr: ComPtr<IMethodMallocVtbl>,
}

impl MethodMalloc {
    /// Allocates `size` bytes (uninitialised contents are zeroed here before they are handed
    /// out). Fails with `E_OUTOFMEMORY` when the runtime returns null.
    #[allow(clippy::mut_from_ref)] // every call returns a fresh block nobody else can see
    pub fn alloc(&self, size: usize) -> Result<&mut [u8]> {
        const M: &str = "IMethodMalloc::Alloc";
        if size == 0 {
            return Ok(&mut []);
        }
        let cb = u32::try_from(size).map_err(|_| Error::InvalidData {
            context: M,
            reason: format!("{size} bytes is more than a 32-bit allocation"),
        })?;
        // SAFETY: `ptr` is a live IMethodMalloc; Alloc takes a size and returns a pointer.
        let raw = unsafe { (self.ptr.vtbl().Alloc)(self.ptr.as_raw(), cb) };
        let block = NonNull::new(raw.cast::<u8>()).ok_or(Error::Failed {
            method: M,
            hr: HResult(clrprof_sys::E_OUTOFMEMORY),
        })?;
        // SAFETY: the runtime returned a fresh block of `size` writable bytes that it never
        // frees and never hands out again; zeroing it makes every byte initialised, and the
        // block outlives `self` (the borrow we tie it to).
        unsafe {
            ptr::write_bytes(block.as_ptr(), 0, size);
            Ok(core::slice::from_raw_parts_mut(block.as_ptr(), size))
        }
    }

    /// The raw `IMethodMalloc*`.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_raw()
    }
}

impl ProfilerInfo {
    /// A method's IL body (header, code and exception sections) as the runtime stores it,
    /// copied out (`ICorProfilerInfo::GetILFunctionBody`). `CORPROF_E_FUNCTION_NOT_IL` for
    /// abstract, P/Invoke and runtime-implemented methods. After `set_il_function_body` it
    /// returns the new body (a ReJIT'd version's IL is not returned). Any time after
    /// `ModuleLoadFinished`.
    pub fn get_il_function_body(&self, module: ModuleId, method: Token) -> Result<Vec<u8>> {
        // SAFETY: the slice is copied before this function returns, while the module (being
        // asked about by the caller) is loaded.
        unsafe { self.get_il_function_body_slice(module, method) }.map(<[u8]>::to_vec)
    }

    /// Like [`ProfilerInfo::get_il_function_body`], but borrows the runtime's copy.
    ///
    /// # Safety
    /// The bytes live in the module's image (or in memory the runtime keeps for it): they are
    /// valid until the module is unloaded. The caller chooses `'a` and must not use the slice
    /// after `ModuleUnloadStarted` for `module`. For modules that are never unloaded (the
    /// default load context) any lifetime is fine.
    pub unsafe fn get_il_function_body_slice<'a>(
        &self,
        module: ModuleId,
        method: Token,
    ) -> Result<&'a [u8]> {
        const M: &str = "ICorProfilerInfo::GetILFunctionBody";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut header: LPCBYTE = ptr::null();
        let mut size = 0u32;
        // SAFETY: `this` is live; both out-params are valid locals.
        ok(M, unsafe {
            (vt.GetILFunctionBody)(self.this(), module.0, method.0, &mut header, &mut size)
        })?;
        if header.is_null() {
            return Err(Error::InvalidData {
                context: M,
                reason: "the runtime returned success but no method header".to_string(),
            });
        }
        // SAFETY: on success `header` points at the method's body and `size` is the runtime's
        // own computation of its length (header, code and sections); it stays readable while
        // the module is loaded, which the caller guarantees for `'a`.
        Ok(unsafe { core::slice::from_raw_parts(header, size as usize) })
    }

    /// A method's IL body, parsed ([`ProfilerInfo::get_il_function_body`] + [`IlBody::parse`]).
    pub fn get_il_body(&self, module: ModuleId, method: Token) -> Result<IlBody> {
        // SAFETY: the slice is parsed (copied into the IlBody) before this returns.
        let bytes = unsafe { self.get_il_function_body_slice(module, method) }?;
        Ok(IlBody::parse(bytes)?)
    }

    /// The allocator for new IL bodies of a module (`ICorProfilerInfo::GetILFunctionBodyAllocator`).
    pub fn get_il_function_body_allocator(&self, module: ModuleId) -> Result<MethodMalloc> {
        const M: &str = "ICorProfilerInfo::GetILFunctionBodyAllocator";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `out` is a valid local.
        ok(M, unsafe {
            (vt.GetILFunctionBodyAllocator)(self.this(), module.0, &mut out)
        })?;
        // SAFETY: on success `out` is an owned reference to an IMethodMalloc.
        let ptr = unsafe { ComPtr::from_raw(out) }.ok_or(Error::InvalidData {
            context: M,
            reason: "the runtime returned success but no allocator".to_string(),
        })?;
        Ok(MethodMalloc { ptr })
    }

    /// Replaces a method's IL body (`ICorProfilerInfo::SetILFunctionBody`). Permanent; takes
    /// effect when the method is next JIT-compiled, so call it before the first compilation
    /// (`ModuleLoadFinished`, `JITCompilationStarted`).
    ///
    /// # Safety
    /// `header` must point at a complete, well-formed IL body (4-byte aligned if it has a fat
    /// header) in memory from `module`'s [`MethodMalloc`], which is never freed: the runtime
    /// keeps the pointer and reads the body whenever it compiles the method.
    pub unsafe fn set_il_function_body(
        &self,
        module: ModuleId,
        method: Token,
        header: *const u8,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo::SetILFunctionBody";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live; the caller guarantees `header` is a lasting, valid body.
        ok(M, unsafe {
            (vt.SetILFunctionBody)(self.this(), module.0, method.0, header)
        })
    }

    /// Encodes `body`, copies it into memory from the module's IL allocator (4-byte aligned)
    /// and installs it with `SetILFunctionBody`. Same timing rules as
    /// [`ProfilerInfo::set_il_function_body`].
    pub fn replace_il_function_body(
        &self,
        module: ModuleId,
        method: Token,
        body: &IlBody,
    ) -> Result<()> {
        let bytes = body.encode()?;
        let malloc = self.get_il_function_body_allocator(module)?;
        // Over-allocate so that a fat body can start on a 4-byte boundary whatever the block's
        // alignment (the runtime finds exception sections by aligning addresses).
        let slack = if body.header_format() == HeaderFormat::Fat {
            3
        } else {
            0
        };
        let block = malloc.alloc(bytes.len() + slack)?;
        let skip = if slack == 0 {
            0
        } else {
            block.as_ptr().align_offset(4).min(3)
        };
        let dest = &mut block[skip..skip + bytes.len()];
        dest.copy_from_slice(&bytes);
        // SAFETY: `dest` is a complete body (just encoded) in allocator memory that is never
        // freed, aligned to 4 bytes when it has a fat header.
        unsafe { self.set_il_function_body(module, method, dest.as_ptr()) }
    }
}
