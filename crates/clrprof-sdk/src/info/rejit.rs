//! ReJIT: recompiling methods that already ran, with new IL, and reverting them.
//!
//! The flow (needs [`EventMask::ENABLE_REJIT`](crate::EventMask) set in `Initialize`):
//! 1. [`ProfilerInfo::request_rejit`] for some (module, MethodDef) pairs, from a thread that
//!    runs no managed code and is not inside a callback (a thread of the profiler's own that
//!    called [`ProfilerInfo::initialize_current_thread`] first).
//! 2. The runtime calls `GetReJITParameters` once per method with a [`FunctionControl`]:
//!    supply the new body with [`FunctionControl::set_il_body`] (and codegen flags).
//! 3. The next call of the method compiles and runs the new version
//!    (`ReJITCompilationStarted`/`Finished`); frames already running keep the old code.
//!    Failures arrive through `ReJITError`.
//! 4. [`ProfilerInfo::request_revert`] goes back to the original IL.
//!
//! Inlining: a caller compiled with the method inlined keeps the old code. Either block
//! inlining of the method ([`RejitFlags::BLOCK_INLINING`] with
//! [`ProfilerInfo::request_rejit_with_inliners`], which also re-JITs existing inliners) or
//! track `JITInlining` and re-JIT the callers too. The runtime tracks inliners unless the
//! process runs with `COMPlus_ProfApi_RejitOnAttach=0` (exactly this case on Linux); then
//! `request_rejit_with_inliners` fails with `CORPROF_E_REJIT_INLINING_DISABLED`.
//!
//! `GetReJITParameters` comes when the new version is first called, on the calling thread;
//! a method that is only ever run inlined never gets there.

use bitflags::bitflags;
use clrprof_sys::{
    COR_IL_MAP, HRESULT, ICorProfilerInfo4Vtbl, ICorProfilerInfo7Vtbl, ICorProfilerInfo10Vtbl,
    ICorProfilerInfoVtbl, ModuleID, ReJITID, TRUE, mdMethodDef,
};

use super::enumerators::MethodRef;
use super::{ProfilerInfo, ok};
use crate::callback_interfaces::FunctionControl;
use crate::error::{Error, HResult, Result};
use crate::ids::{FunctionId, ModuleId, ReJitId};
use crate::il::IlBody;
use crate::types::IlMapEntry;

bitflags! {
    /// Options of [`ProfilerInfo::request_rejit_with_inliners`] (`COR_PRF_REJIT_FLAGS`).
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct RejitFlags: u32 {
        /// The new versions of the methods are not inlined into any caller.
        const BLOCK_INLINING = clrprof_sys::COR_PRF_REJIT_BLOCK_INLINING;
        /// Send `JITInlining` callbacks for methods inlined into the re-JIT'd code.
        const INLINING_CALLBACKS = clrprof_sys::COR_PRF_REJIT_INLINING_CALLBACKS;
        const _ = !0;
    }
}

/// Splits method references into the two parallel arrays the API takes.
fn split(
    method: &'static str,
    methods: &[MethodRef],
) -> Result<(u32, Vec<ModuleID>, Vec<mdMethodDef>)> {
    let count = u32::try_from(methods.len()).map_err(|_| Error::InvalidData {
        context: method,
        reason: format!("{} methods are too many for one request", methods.len()),
    })?;
    let modules = methods.iter().map(|m| m.module.0).collect();
    let tokens = methods.iter().map(|m| m.token.0).collect();
    Ok((count, modules, tokens))
}

fn il_map(method: &'static str, map: &[IlMapEntry]) -> Result<(u32, Vec<COR_IL_MAP>)> {
    let count = u32::try_from(map.len()).map_err(|_| Error::InvalidData {
        context: method,
        reason: format!("{} map entries are too many", map.len()),
    })?;
    let entries = map
        .iter()
        .map(|e| COR_IL_MAP {
            oldOffset: e.old_offset,
            newOffset: e.new_offset,
            fAccurate: TRUE,
        })
        .collect();
    Ok((count, entries))
}

impl ProfilerInfo {
    /// Tells the debugger how IL offsets of the original body map to the instrumented one
    /// (`ICorProfilerInfo::SetILInstrumentedCodeMap`); `start_jit` is true on the first call
    /// for a function. Entries sorted by both offsets. From `JITCompilationStarted`.
    pub fn set_il_instrumented_code_map(
        &self,
        function: FunctionId,
        start_jit: bool,
        map: &[IlMapEntry],
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo::SetILInstrumentedCodeMap";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let (count, entries) = il_map(M, map)?;
        // SAFETY: `this` is live; `entries` holds `count` initialised entries for the call.
        ok(M, unsafe {
            (vt.SetILInstrumentedCodeMap)(
                self.this(),
                function.0,
                i32::from(start_jit),
                count,
                entries.as_ptr(),
            )
        })
    }

    /// The .NET 1 way to request a re-JIT (`ICorProfilerInfo::SetFunctionReJIT`). Obsolete:
    /// the runtime always answers `E_NOTIMPL`; use [`ProfilerInfo::request_rejit`].
    pub fn set_function_rejit(&self, function: FunctionId) -> Result<()> {
        const M: &str = "ICorProfilerInfo::SetFunctionReJIT";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live; the argument is by value.
        ok(M, unsafe { (vt.SetFunctionReJIT)(self.this(), function.0) })
    }

    /// Asks the runtime to re-JIT `methods` (`ICorProfilerInfo4::RequestReJIT`). Success
    /// means the requests were accepted; per-method failures arrive in `ReJITError`. Needs
    /// `ENABLE_REJIT`; call from a profiler thread (see the module documentation), not from
    /// a callback. An empty list does nothing.
    pub fn request_rejit(&self, methods: &[MethodRef]) -> Result<()> {
        const M: &str = "ICorProfilerInfo4::RequestReJIT";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        if methods.is_empty() {
            return Ok(());
        }
        let (count, modules, tokens) = split(M, methods)?;
        // SAFETY: `this` is live; both arrays hold `count` elements for the call.
        ok(M, unsafe {
            (vt.RequestReJIT)(self.this(), count, modules.as_ptr(), tokens.as_ptr())
        })
    }

    /// Goes back to the original IL of `methods` for future calls
    /// (`ICorProfilerInfo4::RequestRevert`). Returns one status per method, in order (S_OK,
    /// or why that method could not be reverted). Same threading rules as
    /// [`ProfilerInfo::request_rejit`]. An empty list does nothing.
    pub fn request_revert(&self, methods: &[MethodRef]) -> Result<Vec<HResult>> {
        const M: &str = "ICorProfilerInfo4::RequestRevert";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        if methods.is_empty() {
            return Ok(Vec::new());
        }
        let (count, modules, tokens) = split(M, methods)?;
        let mut status: Vec<HRESULT> = vec![0; methods.len()];
        // SAFETY: `this` is live; the input arrays and the status array hold `count`
        // elements each for the call.
        ok(M, unsafe {
            (vt.RequestRevert)(
                self.this(),
                count,
                modules.as_ptr(),
                tokens.as_ptr(),
                status.as_mut_ptr(),
            )
        })?;
        Ok(status.into_iter().map(HResult).collect())
    }

    /// The IL versions of a function that exist (`ICorProfilerInfo4::GetReJITIDs`): 0 for the
    /// original IL, one more id per ReJIT (kept after a revert). May take locks: not while
    /// the runtime is suspended.
    pub fn get_rejit_ids(&self, function: FunctionId) -> Result<Vec<ReJitId>> {
        const M: &str = "ICorProfilerInfo4::GetReJITIDs";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        // This method refuses a zero-sized buffer, so start with a small one.
        let mut ids: Vec<ReJITID> = vec![0; 8];
        for _ in 0..4 {
            let cap = u32::try_from(ids.len()).unwrap_or(u32::MAX);
            let mut count = 0u32;
            // SAFETY: `this` is live; `ids` holds `cap` elements; `count` is a valid local.
            ok(M, unsafe {
                (vt.GetReJITIDs)(self.this(), function.0, cap, &mut count, ids.as_mut_ptr())
            })?;
            if count <= cap {
                ids.truncate(count as usize);
                return Ok(ids.into_iter().map(ReJitId).collect());
            }
            ids = vec![0; count as usize];
        }
        Err(Error::InvalidData {
            context: M,
            reason: "the number of ReJIT versions kept growing".to_string(),
        })
    }

    /// Like [`ProfilerInfo::request_rejit`], and also re-JITs every method that has inlined
    /// one of `methods` (`ICorProfilerInfo10::RequestReJITWithInliners`). `flags` must include
    /// [`RejitFlags::BLOCK_INLINING`] (`E_INVALIDARG` otherwise). The runtime re-JITs the
    /// inliners with their current IL, without asking `GetReJITParameters` for them.
    pub fn request_rejit_with_inliners(
        &self,
        flags: RejitFlags,
        methods: &[MethodRef],
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo10::RequestReJITWithInliners";
        let vt = self.vt::<ICorProfilerInfo10Vtbl>(10, M)?;
        if methods.is_empty() {
            return Ok(());
        }
        let (count, modules, tokens) = split(M, methods)?;
        // SAFETY: `this` is live; both arrays hold `count` elements for the call.
        ok(M, unsafe {
            (vt.RequestReJITWithInliners)(
                self.this(),
                flags.bits(),
                count,
                modules.as_ptr(),
                tokens.as_ptr(),
            )
        })
    }

    /// Makes metadata added with `IMetaDataEmit::Define*` after `ModuleLoadFinished` usable
    /// (`ICorProfilerInfo7::ApplyMetaData`). Call it before new IL refers to the new tokens.
    pub fn apply_metadata(&self, module: ModuleId) -> Result<()> {
        const M: &str = "ICorProfilerInfo7::ApplyMetaData";
        let vt = self.vt::<ICorProfilerInfo7Vtbl>(7, M)?;
        // SAFETY: `this` is live; the argument is by value.
        ok(M, unsafe { (vt.ApplyMetaData)(self.this(), module.0) })
    }
}

impl FunctionControl {
    /// Encodes `body` and supplies it as the new version's IL
    /// ([`FunctionControl::set_il_function_body`]; the runtime copies it).
    pub fn set_il_body(&self, body: &IlBody) -> Result<()> {
        self.set_il_function_body(&body.encode()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Token;

    #[test]
    fn flags_match_the_idl() {
        assert_eq!(RejitFlags::BLOCK_INLINING.bits(), 1);
        assert_eq!(RejitFlags::INLINING_CALLBACKS.bits(), 2);
    }

    #[test]
    fn requests_are_split_in_order() {
        let methods = [
            MethodRef {
                module: ModuleId(0x10),
                token: Token(0x0600_0001),
            },
            MethodRef {
                module: ModuleId(0x20),
                token: Token(0x0600_0002),
            },
        ];
        let (count, modules, tokens) = split("m", &methods).unwrap();
        assert_eq!(count, 2);
        assert_eq!(modules, [0x10, 0x20]);
        assert_eq!(tokens, [0x0600_0001, 0x0600_0002]);
        let (n, map) = il_map(
            "m",
            &[IlMapEntry {
                old_offset: 0,
                new_offset: 5,
            }],
        )
        .unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            map[0],
            COR_IL_MAP {
                oldOffset: 0,
                newOffset: 5,
                fAccurate: TRUE
            }
        );
    }
}
