//! Writing to a module's metadata (`IMetaDataEmit`): what IL rewriting needs to add local
//! variables (a StandAloneSig token for a new local signature).

use core::ffi::c_void;

use clrprof_sys as sys;

use crate::com::ComPtr;
use crate::error::{Error, Result, check};
use crate::ids::{ModuleId, Token};
use crate::info::ProfilerInfo;

/// A module's metadata writer (`IMetaDataEmit`), from [`ProfilerInfo::get_module_metadata_emit`].
#[derive(Clone, Debug)]
pub struct MetaDataEmit {
    ptr: ComPtr<sys::IMetaDataEmitVtbl>,
}

impl MetaDataEmit {
    /// `IMetaDataEmit::GetTokenFromSig`: the StandAloneSig token of `signature` (a local
    /// variable signature, e.g. from [`crate::il::append_local`], or a method signature for
    /// `calli`), added to the module's metadata if it is not there yet.
    pub fn get_token_from_sig(&self, signature: &[u8]) -> Result<Token> {
        const M: &str = "IMetaDataEmit::GetTokenFromSig";
        let len = u32::try_from(signature.len()).map_err(|_| Error::InvalidData {
            context: M,
            reason: "signature larger than 4 GB".into(),
        })?;
        let mut token: sys::mdSignature = 0;
        // SAFETY: `ptr` is a live IMetaDataEmit; the signature is `len` readable bytes and
        // `token` a valid out-param, for the duration of the call.
        check(M, unsafe {
            (self.ptr.vtbl().GetTokenFromSig)(
                self.ptr.as_raw(),
                signature.as_ptr(),
                len,
                &mut token,
            )
        })?;
        Ok(Token(token))
    }

    /// The raw `IMetaDataEmit*`.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_raw()
    }
}

impl ProfilerInfo {
    /// `ICorProfilerInfo::GetModuleMetaData(ofRead | ofWrite, IID_IMetaDataEmit)`: the
    /// module's metadata writer. Changes are best made in `ModuleLoadFinished`, before code
    /// that uses them is compiled. `Ok(None)` for a module without metadata.
    pub fn get_module_metadata_emit(&self, module: ModuleId) -> Result<Option<MetaDataEmit>> {
        const M: &str = "ICorProfilerInfo::GetModuleMetaData";
        let vt = self.vt::<sys::ICorProfilerInfoVtbl>(1, M)?;
        let mut out: *mut c_void = core::ptr::null_mut();
        // SAFETY: `this` is the live ICorProfilerInfo; the IID and `out` are valid for the call.
        check(M, unsafe {
            (vt.GetModuleMetaData)(
                self.this(),
                module.0,
                sys::ofRead | sys::ofWrite,
                &sys::IID_IMetaDataEmit,
                &mut out,
            )
        })?;
        // SAFETY: on success `out` is null or an owned reference to an IMetaDataEmit.
        Ok(unsafe { ComPtr::from_raw(out) }.map(|ptr| MetaDataEmit { ptr }))
    }
}
