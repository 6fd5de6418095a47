//! The few ICorProfilerInfo methods almost every profiler needs: the event mask, and which
//! module and class a function belongs to.

use clrprof_sys::{ICorProfilerInfoVtbl, LPCBYTE};

use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::flags::EventMask;
use crate::ids::{AssemblyId, ClassId, FunctionId, ModuleId, Token};
use crate::wide::read_wide;

/// What `GetFunctionInfo` reports about a function.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FunctionInfo {
    /// The class that declares it; null for some methods of generic classes (use
    /// `get_function_info2` with a frame to get the instantiation).
    pub class: ClassId,
    /// The module holding its metadata.
    pub module: ModuleId,
    /// Its MethodDef token in that module.
    pub token: Token,
}

/// What `GetModuleInfo` reports about a module.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ModuleInfo {
    /// Where the module's image is loaded (0 for dynamic modules).
    pub base_address: usize,
    /// The file's full path; for modules without a file, the metadata scope name.
    pub name: String,
    /// The assembly the module belongs to (`PROFILER_PARENT_UNKNOWN` before
    /// `ModuleAttachedToAssembly`).
    pub assembly: AssemblyId,
}

impl ProfilerInfo {
    /// Chooses which callbacks the runtime makes (`ICorProfilerInfo::SetEventMask`). Immutable
    /// bits only during `Initialize`; an attached profiler only `ALLOWABLE_AFTER_ATTACH` bits.
    pub fn set_event_mask(&self, mask: EventMask) -> Result<()> {
        const M: &str = "ICorProfilerInfo::SetEventMask";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live; the mask is a plain integer.
        ok(M, unsafe { (vt.SetEventMask)(self.this(), mask.bits()) })
    }

    /// The class, module and token of a function (`ICorProfilerInfo::GetFunctionInfo`).
    pub fn get_function_info(&self, function: FunctionId) -> Result<FunctionInfo> {
        const M: &str = "ICorProfilerInfo::GetFunctionInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let (mut class, mut module, mut token) = (0usize, 0usize, 0u32);
        // SAFETY: `this` is live; the three out-params are valid locals.
        ok(M, unsafe {
            (vt.GetFunctionInfo)(self.this(), function.0, &mut class, &mut module, &mut token)
        })?;
        Ok(FunctionInfo {
            class: ClassId(class),
            module: ModuleId(module),
            token: Token(token),
        })
    }

    /// The path, load address and assembly of a module (`ICorProfilerInfo::GetModuleInfo`).
    /// Usable from `ModuleLoadFinished` on.
    pub fn get_module_info(&self, module: ModuleId) -> Result<ModuleInfo> {
        const M: &str = "ICorProfilerInfo::GetModuleInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut base: LPCBYTE = core::ptr::null();
        let mut assembly = 0usize;
        let name = read_wide(M, |capacity, needed, buffer| {
            // SAFETY: `this` is live; `buffer` holds `capacity` units and the other
            // out-params are valid locals.
            unsafe {
                (vt.GetModuleInfo)(
                    self.this(),
                    module.0,
                    &mut base,
                    capacity,
                    needed,
                    buffer,
                    &mut assembly,
                )
            }
        })?;
        Ok(ModuleInfo {
            base_address: base as usize,
            name,
            assembly: AssemblyId(assembly),
        })
    }
}
