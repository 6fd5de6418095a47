//! Writing to a module's metadata (`IMetaDataEmit`): what IL rewriting needs to add local
//! variables (a StandAloneSig token for a new local signature), fields to types not loaded yet,
//! and references to members of generic instantiations.

use core::ffi::c_void;

use clrprof_sys as sys;

use crate::com::ComPtr;
use crate::error::{Error, Result, check};
use crate::ids::{ModuleId, Token};
use crate::info::ProfilerInfo;
use crate::wide::to_wide;

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
        let call = self.ptr.vtbl().GetTokenFromSig;
        self.signature_token("IMetaDataEmit::GetTokenFromSig", call, signature)
    }

    /// `IMetaDataEmit::GetTokenFromTypeSpec`: the TypeSpec token of `signature` (a type
    /// signature, e.g. a generic instantiation), added to the module's metadata if needed.
    pub fn get_token_from_type_spec(&self, signature: &[u8]) -> Result<Token> {
        let call = self.ptr.vtbl().GetTokenFromTypeSpec;
        self.signature_token("IMetaDataEmit::GetTokenFromTypeSpec", call, signature)
    }

    /// The token `call` (`GetTokenFromSig` or `GetTokenFromTypeSpec`) gives for `signature`.
    fn signature_token(
        &self,
        context: &'static str,
        call: SignatureToken,
        signature: &[u8],
    ) -> Result<Token> {
        let len = sig_len(context, signature)?;
        let mut token: sys::mdToken = 0;
        // SAFETY: `call` is a method of the live IMetaDataEmit `ptr`; the signature is `len`
        // readable bytes and `token` a valid out-param, for the duration of the call.
        check(context, unsafe {
            call(self.ptr.as_raw(), signature.as_ptr(), len, &mut token)
        })?;
        Ok(Token(token))
    }

    /// `IMetaDataEmit::DefineMemberRef`: a MemberRef token for the member `name` with
    /// `signature` of `parent` (a TypeRef, TypeSpec, ModuleRef or MethodDef).
    pub fn define_member_ref(&self, parent: Token, name: &str, signature: &[u8]) -> Result<Token> {
        const M: &str = "IMetaDataEmit::DefineMemberRef";
        let len = sig_len(M, signature)?;
        let name = to_wide(name);
        let mut token: sys::mdMemberRef = 0;
        // SAFETY: `ptr` is a live IMetaDataEmit; `name` is NUL-terminated UTF-16, the signature
        // `len` readable bytes and `token` a valid out-param, for the duration of the call.
        check(M, unsafe {
            (self.ptr.vtbl().DefineMemberRef)(
                self.ptr.as_raw(),
                parent.0,
                name.as_ptr(),
                signature.as_ptr(),
                len,
                &mut token,
            )
        })?;
        Ok(Token(token))
    }

    /// `IMetaDataEmit::DefineField`: a new field `name` of the TypeDef `type_def`, with the
    /// field attributes `flags` (`CorFieldAttr`) and field `signature`. Safe to do only before
    /// the runtime loads the type: in `ModuleLoadFinished`, for a module without precompiled
    /// code that uses the type's layout.
    pub fn define_field(
        &self,
        type_def: Token,
        name: &str,
        flags: u32,
        signature: &[u8],
    ) -> Result<Token> {
        const M: &str = "IMetaDataEmit::DefineField";
        let len = sig_len(M, signature)?;
        let name = to_wide(name);
        let mut token: sys::mdFieldDef = 0;
        // SAFETY: `ptr` is a live IMetaDataEmit; `name` is NUL-terminated UTF-16, the signature
        // `len` readable bytes (no constant value: null and 0) and `token` a valid out-param,
        // for the duration of the call.
        check(M, unsafe {
            (self.ptr.vtbl().DefineField)(
                self.ptr.as_raw(),
                type_def.0,
                name.as_ptr(),
                flags,
                signature.as_ptr(),
                len,
                0,
                core::ptr::null(),
                0,
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

/// `IMetaDataEmit::GetTokenFromSig` and `GetTokenFromTypeSpec`: a signature to its token.
type SignatureToken = unsafe extern "system" fn(
    *mut c_void,
    sys::PCCOR_SIGNATURE,
    sys::ULONG,
    *mut sys::mdToken,
) -> sys::HRESULT;

/// A signature's length as the metadata API takes it.
fn sig_len(context: &'static str, signature: &[u8]) -> Result<u32> {
    u32::try_from(signature.len()).map_err(|_| Error::InvalidData {
        context,
        reason: "signature larger than 4 GB".into(),
    })
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
