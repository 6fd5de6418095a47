//! Functions: from tokens and instruction pointers to FunctionIDs and back, dynamic methods,
//! and the lists of JIT-compiled functions.

use core::ffi::c_void;
use core::ptr;

use clrprof_sys::*;

use super::buffers::{from_bool, read_array};
use super::enumerators::{FunctionEnum, JitedFunction, MethodEnum};
use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::ids::{ClassId, FrameInfo, FunctionId, ModuleId, ReJitId, Token};
use crate::wide::read_wide;

/// What `GetFunctionInfo2` reports about a function.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct FunctionInfo2 {
    /// The class the function belongs to; null when it cannot be determined (code shared
    /// between generic instantiations, without a frame to tell which one).
    pub class: ClassId,
    /// The module that defines the function.
    pub module: ModuleId,
    /// The function's MethodDef token.
    pub token: Token,
    /// The ClassIDs of the method's own type arguments (empty unless the method is generic;
    /// without a frame, shared code reports `System.__Canon` for reference types).
    pub type_args: Vec<ClassId>,
}

/// What `GetDynamicFunctionInfo` reports about a method without metadata (IL stub, LCG).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct DynamicFunctionInfo {
    /// The module the runtime attributes the method to.
    pub module: ModuleId,
    /// The method's signature blob (a copy).
    pub signature: Vec<u8>,
    /// A friendly name such as `IL_STUB_PInvoke` or the `DynamicMethod`'s name.
    pub name: String,
}

/// The result of `EnumNgenModuleMethodsInliningThisMethod`.
#[derive(Debug)]
pub struct Inliners {
    /// The methods of the precompiled module that inlined the method.
    pub methods: MethodEnum,
    /// True when some of the module's dependencies are not loaded yet, so the list may be
    /// missing inliners (ask again after more modules load).
    pub incomplete: bool,
}

impl ProfilerInfo {
    /// The function whose code contains `ip` (`ICorProfilerInfo::GetFunctionFromIP`). Any
    /// time, any thread; fails for addresses outside managed code and for dynamic methods
    /// (see `get_function_from_ip3`).
    pub fn get_function_from_ip(&self, ip: usize) -> Result<FunctionId> {
        const M: &str = "ICorProfilerInfo::GetFunctionFromIP";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut function: FunctionID = 0;
        // SAFETY: `this` is live; the runtime only looks `ip` up in its code tables.
        ok(M, unsafe {
            (vt.GetFunctionFromIP)(self.this(), ip as LPCBYTE, &mut function)
        })?;
        Ok(FunctionId(function))
    }

    /// The FunctionID of a non-generic method given its MethodDef or MemberRef token
    /// (`ICorProfilerInfo::GetFunctionFromToken`). Does not load anything: fails with
    /// `E_INVALIDARG` if the runtime has not created the method yet, and with
    /// `CORPROF_E_FUNCTION_IS_PARAMETERIZED` for generic ones. From a callback or a profiler
    /// thread.
    pub fn get_function_from_token(&self, module: ModuleId, token: Token) -> Result<FunctionId> {
        const M: &str = "ICorProfilerInfo::GetFunctionFromToken";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut function: FunctionID = 0;
        // SAFETY: `this` is live; `function` is a valid out-param.
        ok(M, unsafe {
            (vt.GetFunctionFromToken)(self.this(), module.0, token.0, &mut function)
        })?;
        Ok(FunctionId(function))
    }

    /// Class, module, token and type arguments of a function
    /// (`ICorProfilerInfo2::GetFunctionInfo2`). Pass [`FrameInfo::NULL`] unless you have a
    /// frame from an enter/leave hook or a stack walk, which makes the class and type
    /// arguments exact for shared generic code. Any time, any thread.
    pub fn get_function_info2(
        &self,
        function: FunctionId,
        frame: FrameInfo,
    ) -> Result<FunctionInfo2> {
        const M: &str = "ICorProfilerInfo2::GetFunctionInfo2";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let (mut class, mut module, mut token) = (0usize, 0usize, 0u32);
        let type_args = read_array(M, |cap, count, out: *mut ClassID| {
            // SAFETY: `this` is live; out-params are valid locals; `out` is null with
            // `cap == 0` or has `cap` elements.
            unsafe {
                (vt.GetFunctionInfo2)(
                    self.this(),
                    function.0,
                    frame.0,
                    &mut class,
                    &mut module,
                    &mut token,
                    cap,
                    count,
                    out,
                )
            }
        })?;
        Ok(FunctionInfo2 {
            class: ClassId(class),
            module: ModuleId(module),
            token: Token(token),
            type_args: type_args.into_iter().map(ClassId).collect(),
        })
    }

    /// The FunctionID of a method of class `class` instantiated with the method type
    /// arguments `type_args` (empty for non-generic methods), creating it if needed
    /// (`ICorProfilerInfo2::GetFunctionFromTokenAndTypeArgs`). `class` must be the
    /// (instantiated) declaring class: CoreCLR refuses a null one. May trigger a GC and load
    /// types: from a callback that allows it, not during loading of the types involved.
    pub fn get_function_from_token_and_type_args(
        &self,
        module: ModuleId,
        method_def: Token,
        class: ClassId,
        type_args: &[ClassId],
    ) -> Result<FunctionId> {
        const M: &str = "ICorProfilerInfo2::GetFunctionFromTokenAndTypeArgs";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let (count, args) = super::classes::type_args_raw(type_args);
        let mut function: FunctionID = 0;
        // SAFETY: `this` is live; `ClassId` is a transparent `ClassID`, so `args` points at
        // `count` ClassIDs (or is null with 0); `function` is a valid out-param.
        ok(M, unsafe {
            (vt.GetFunctionFromTokenAndTypeArgs)(
                self.this(),
                module.0,
                method_def.0,
                class.0,
                count,
                args,
                &mut function,
            )
        })?;
        Ok(FunctionId(function))
    }

    /// The function and ReJIT version whose code contains `ip`
    /// (`ICorProfilerInfo4::GetFunctionFromIP2`). May trigger a GC: from a callback that
    /// allows it or a profiler thread. Fails for dynamic methods (see `get_function_from_ip3`).
    pub fn get_function_from_ip2(&self, ip: usize) -> Result<JitedFunction> {
        const M: &str = "ICorProfilerInfo4::GetFunctionFromIP2";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        self.jited_function_at(M, vt.GetFunctionFromIP2, ip)
    }

    /// True for methods without metadata: IL stubs, `DynamicMethod`s
    /// (`ICorProfilerInfo8::IsFunctionDynamic`). Any time, any thread.
    pub fn is_function_dynamic(&self, function: FunctionId) -> Result<bool> {
        const M: &str = "ICorProfilerInfo8::IsFunctionDynamic";
        let vt = self.vt::<ICorProfilerInfo8Vtbl>(8, M)?;
        let mut dynamic: BOOL = 0;
        // SAFETY: `this` is live; `dynamic` is a valid out-param.
        ok(M, unsafe {
            (vt.IsFunctionDynamic)(self.this(), function.0, &mut dynamic)
        })?;
        Ok(from_bool(dynamic))
    }

    /// Like `get_function_from_ip2`, but also finds dynamic methods
    /// (`ICorProfilerInfo8::GetFunctionFromIP3`). May trigger a GC: from a callback that
    /// allows it or a profiler thread.
    pub fn get_function_from_ip3(&self, ip: usize) -> Result<JitedFunction> {
        const M: &str = "ICorProfilerInfo8::GetFunctionFromIP3";
        let vt = self.vt::<ICorProfilerInfo8Vtbl>(8, M)?;
        self.jited_function_at(M, vt.GetFunctionFromIP3, ip)
    }

    /// Calls `get`, `GetFunctionFromIP2` or `GetFunctionFromIP3` (named `method`), which take
    /// the same arguments: the function and ReJIT version whose code contains `ip`.
    fn jited_function_at(
        &self,
        method: &'static str,
        get: unsafe extern "system" fn(
            *mut c_void,
            LPCBYTE,
            *mut FunctionID,
            *mut ReJITID,
        ) -> HRESULT,
        ip: usize,
    ) -> Result<JitedFunction> {
        let (mut function, mut rejit) = (0usize, 0usize);
        // SAFETY: `this` is live and `get` is a method of its vtable; the runtime only looks
        // `ip` up in its code tables.
        ok(method, unsafe {
            get(self.this(), ip as LPCBYTE, &mut function, &mut rejit)
        })?;
        Ok(JitedFunction {
            function: FunctionId(function),
            rejit: ReJitId(rejit),
        })
    }

    /// Module, signature and name of a dynamic method
    /// (`ICorProfilerInfo8::GetDynamicFunctionInfo`); `E_INVALIDARG` for methods that have
    /// metadata. Any time, any thread.
    pub fn get_dynamic_function_info(&self, function: FunctionId) -> Result<DynamicFunctionInfo> {
        const M: &str = "ICorProfilerInfo8::GetDynamicFunctionInfo";
        let vt = self.vt::<ICorProfilerInfo8Vtbl>(8, M)?;
        let mut module: ModuleID = 0;
        let mut sig: PCCOR_SIGNATURE = ptr::null();
        let mut sig_len = 0u32;
        let name = read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; out-params are valid locals; `buf` has `cap` units.
            unsafe {
                (vt.GetDynamicFunctionInfo)(
                    self.this(),
                    function.0,
                    &mut module,
                    &mut sig,
                    &mut sig_len,
                    cap,
                    needed,
                    buf,
                )
            }
        })?;
        let signature = if sig.is_null() || sig_len == 0 {
            Vec::new()
        } else {
            // SAFETY: the call succeeded, so `sig` points at the method's `sig_len`-byte
            // signature, which lives as long as the method.
            unsafe { core::slice::from_raw_parts(sig, sig_len as usize) }.to_vec()
        };
        Ok(DynamicFunctionInfo {
            module: ModuleId(module),
            signature,
            name,
        })
    }

    /// A snapshot of every function JIT-compiled so far, ReJIT ids all 0
    /// (`ICorProfilerInfo3::EnumJITedFunctions`). From a callback or a profiler thread.
    pub fn enum_jited_functions(&self) -> Result<FunctionEnum> {
        const M: &str = "ICorProfilerInfo3::EnumJITedFunctions";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `raw` is a valid out-param.
        ok(M, unsafe { (vt.EnumJITedFunctions)(self.this(), &mut raw) })?;
        // SAFETY: on success `raw` is an owned ICorProfilerFunctionEnum.
        unsafe { FunctionEnum::from_raw(M, raw) }
    }

    /// A snapshot of every function JIT-compiled so far, with ReJIT ids
    /// (`ICorProfilerInfo4::EnumJITedFunctions2`). May trigger a GC: from a callback that
    /// allows it or a profiler thread.
    pub fn enum_jited_functions2(&self) -> Result<FunctionEnum> {
        const M: &str = "ICorProfilerInfo4::EnumJITedFunctions2";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `raw` is a valid out-param.
        ok(M, unsafe {
            (vt.EnumJITedFunctions2)(self.this(), &mut raw)
        })?;
        // SAFETY: on success `raw` is an owned ICorProfilerFunctionEnum.
        unsafe { FunctionEnum::from_raw(M, raw) }
    }

    /// The methods of precompiled (ReadyToRun) module `inliners_module` that inlined method
    /// `inlinee` of `inlinee_module`
    /// (`ICorProfilerInfo6::EnumNgenModuleMethodsInliningThisMethod`).
    /// `CORPROF_E_DATAINCOMPLETE` if the module has no inlining table. May trigger a GC: from
    /// a callback that allows it or a profiler thread.
    pub fn enum_ngen_module_methods_inlining_this_method(
        &self,
        inliners_module: ModuleId,
        inlinee_module: ModuleId,
        inlinee: Token,
    ) -> Result<Inliners> {
        const M: &str = "ICorProfilerInfo6::EnumNgenModuleMethodsInliningThisMethod";
        let vt = self.vt::<ICorProfilerInfo6Vtbl>(6, M)?;
        let mut incomplete: BOOL = 0;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; both out-params are valid locals.
        ok(M, unsafe {
            (vt.EnumNgenModuleMethodsInliningThisMethod)(
                self.this(),
                inliners_module.0,
                inlinee_module.0,
                inlinee.0,
                &mut incomplete,
                &mut raw,
            )
        })?;
        // SAFETY: on success `raw` is an owned ICorProfilerMethodEnum.
        let methods = unsafe { MethodEnum::from_raw(M, raw) }?;
        Ok(Inliners {
            methods,
            incomplete: from_bool(incomplete),
        })
    }
}
