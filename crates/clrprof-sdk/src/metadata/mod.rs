//! Module metadata: reading it ([`MetaDataImport`]), parsing its signature blobs
//! ([`signature`]), and turning functions and classes into the names C# developers read
//! ([`Namer`]).
//!
//! ```ignore
//! let namer = Namer::new();
//! let name = namer.get_function_name(&info, function_id)?;
//! println!("{}", name.full_name()); // Demo.Box<int>.Put(int, int)
//! ```

use core::ffi::c_void;

use clrprof_sys::{self as sys, mdToken};

use crate::error::{Error, HResult, Result, check};
use crate::ids::{FunctionId, ModuleId, Token};
use crate::info::ProfilerInfo;

pub mod emit;
pub mod import;
pub mod names;
pub mod signature;

pub use emit::MetaDataEmit;
pub use import::{
    AssemblyProps, Constant, FieldProps, GenericParamProps, MemberRefProps, MetaDataAssemblyImport,
    MetaDataImport, MethodProps, MethodSpecProps, ParamProps, PinvokeMap, ScopeProps, TypeDefProps,
    TypeRefProps,
};
pub use names::{CallTarget, FunctionName, Namer};
pub use signature::{
    ArrayShape, CallConv, MethodSig, PropertySig, SigError, SigErrorKind, Signature, TypeSig,
};

impl ProfilerInfo {
    /// `ICorProfilerInfo::GetModuleMetaData`: the module's metadata reader, opened for reading
    /// (`write == false`, `ofRead`) or for reading and writing (`ofWrite`: open it so when
    /// `IMetaDataEmit` is to be asked of the same object, e.g. through
    /// [`MetaDataImport::as_raw`], to add tokens for IL rewriting).
    ///
    /// `Ok(None)` when the module has no metadata (resource modules: the runtime returns
    /// `S_FALSE` and no interface).
    pub fn get_module_metadata(
        &self,
        module: ModuleId,
        write: bool,
    ) -> Result<Option<MetaDataImport>> {
        const METHOD: &str = "ICorProfilerInfo::GetModuleMetaData";
        let vt = self.vt::<sys::ICorProfilerInfoVtbl>(1, METHOD)?;
        let flags = if write { sys::ofWrite } else { sys::ofRead };
        let open = |iid: &sys::GUID| -> Result<(HResult, *mut c_void)> {
            let mut out: *mut c_void = core::ptr::null_mut();
            // SAFETY: `this` is the live ICorProfilerInfo; `iid` and `out` are valid for the
            // duration of the call.
            let hr = unsafe { (vt.GetModuleMetaData)(self.this(), module.0, flags, iid, &mut out) };
            check(METHOD, hr).map(|hr| (hr, out))
        };
        let (out, is_import2) = match open(&sys::IID_IMetaDataImport2) {
            Ok((_, out)) => (out, true),
            Err(e) if e.is(sys::E_NOINTERFACE) => (open(&sys::IID_IMetaDataImport)?.1, false),
            Err(e) => return Err(e),
        };
        // SAFETY: on success `out` is null or an owned reference to the interface asked for.
        Ok(unsafe { MetaDataImport::from_raw(out, is_import2) })
    }

    /// `ICorProfilerInfo::GetTokenAndMetaDataFromFunction`: the metadata reader of the
    /// function's module and its MethodDef token.
    pub fn get_token_and_metadata_from_function(
        &self,
        function: FunctionId,
    ) -> Result<(MetaDataImport, Token)> {
        const METHOD: &str = "ICorProfilerInfo::GetTokenAndMetaDataFromFunction";
        let vt = self.vt::<sys::ICorProfilerInfoVtbl>(1, METHOD)?;
        let call = |iid: &sys::GUID| -> Result<(*mut c_void, mdToken)> {
            let mut out: *mut c_void = core::ptr::null_mut();
            let mut token: mdToken = 0;
            // SAFETY: `this` is the live ICorProfilerInfo; `iid`, `out` and `token` are valid
            // for the duration of the call.
            let hr = unsafe {
                (vt.GetTokenAndMetaDataFromFunction)(
                    self.this(),
                    function.0,
                    iid,
                    &mut out,
                    &mut token,
                )
            };
            check(METHOD, hr).map(|_| (out, token))
        };
        let ((out, token), is_import2) = match call(&sys::IID_IMetaDataImport2) {
            Ok(r) => (r, true),
            Err(e) if e.is(sys::E_NOINTERFACE) => (call(&sys::IID_IMetaDataImport)?, false),
            Err(e) => return Err(e),
        };
        // SAFETY: on success `out` is null or an owned reference to the interface asked for.
        let import = unsafe { MetaDataImport::from_raw(out, is_import2) }.ok_or(Error::Failed {
            method: METHOD,
            hr: HResult(sys::E_POINTER),
        })?;
        Ok((import, Token(token)))
    }
}
