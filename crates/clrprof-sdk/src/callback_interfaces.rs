//! Helper interfaces the runtime hands to some callbacks (below both the callbacks that take
//! them and the exported COM object that makes them).

use core::ptr;

use clrprof_sys as sys;

use crate::com::ComPtr;
use crate::error::{Error, Result};
use crate::flags::CodegenFlags;
use crate::info::ok;
use crate::types::*;
use crate::wide::to_wide;

// ---------------------------------------------------------------------------------------------
// Helper interfaces handed to callbacks
// ---------------------------------------------------------------------------------------------

/// How to recompile one method, handed to [`Profiler::get_rejit_parameters`](crate::Profiler::get_rejit_parameters)
/// (`ICorProfilerFunctionControl`). Valid only during that callback.
pub struct FunctionControl {
    pub(crate) ptr: ComPtr<sys::ICorProfilerFunctionControlVtbl>,
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

/// Lets [`Profiler::get_assembly_references`](crate::Profiler::get_assembly_references) declare extra assembly references
/// (`ICorProfilerAssemblyReferenceProvider`). Valid only during that callback.
pub struct AssemblyReferenceProvider {
    pub(crate) ptr: ComPtr<sys::ICorProfilerAssemblyReferenceProviderVtbl>,
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
