//! Modules, assemblies and application domains.

use core::ffi::c_void;
use core::ptr;

use clrprof_sys::*;

use super::buffers::read_array;
use super::enumerators::ModuleEnum;
use super::{ProfilerInfo, ok};
use crate::error::{Error, HResult, Result};
use crate::ids::{AppDomainId, AssemblyId, ModuleId};
use crate::wide::read_wide;

bitflags::bitflags! {
    /// Properties of a module (`COR_PRF_MODULE_FLAGS`, from `GetModuleInfo2`). Unknown bits
    /// are kept.
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct ModuleFlags: u32 {
        /// Loaded from a file on disk.
        const DISK = COR_PRF_MODULE_DISK;
        /// Precompiled (NGen on .NET Framework, ReadyToRun on CoreCLR).
        const NGEN = COR_PRF_MODULE_NGEN;
        /// Made with Reflection.Emit.
        const DYNAMIC = COR_PRF_MODULE_DYNAMIC;
        /// Belongs to a collectible (unloadable) assembly.
        const COLLECTIBLE = COR_PRF_MODULE_COLLECTIBLE;
        /// A resource-only module: it has no metadata and no code.
        const RESOURCE = COR_PRF_MODULE_RESOURCE;
        /// Loaded flat (as a file image, not mapped): PE RVAs need translating.
        const FLAT_LAYOUT = COR_PRF_MODULE_FLAT_LAYOUT;
        /// A Windows Runtime metadata module.
        const WINDOWS_RUNTIME = COR_PRF_MODULE_WINDOWS_RUNTIME;
        const _ = !0;
    }
}

/// What `GetModuleInfo2` reports about a module.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ModuleInfo2 {
    /// Where the module's image is loaded (0 for dynamic modules).
    pub base_address: usize,
    /// The file's full path; for modules without a file (Reflection.Emit), the metadata
    /// scope name.
    pub name: String,
    /// The assembly the module belongs to.
    pub assembly: AssemblyId,
    /// Disk, ReadyToRun, dynamic, resource, ...
    pub flags: ModuleFlags,
}

/// What `GetAssemblyInfo` reports about an assembly.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AssemblyInfo {
    /// The simple name, e.g. `System.Private.CoreLib`.
    pub name: String,
    /// The application domain it is loaded in.
    pub app_domain: AppDomainId,
    /// The module holding its manifest.
    pub manifest_module: ModuleId,
}

/// What `GetAppDomainInfo` reports about an application domain.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AppDomainInfo {
    /// The friendly name. On CoreCLR the host names the one application domain (`clrhost`
    /// under the `dotnet` host; `DefaultDomain` until it does); the system domain is called
    /// `System.Private.CoreLib.dll`.
    pub name: String,
    /// The id of the process the domain lives in.
    pub process_id: usize,
}

/// `GetInMemorySymbolsLength` and `ReadInMemorySymbols` return this success code
/// (`COR_PRF_MODULE_DYNAMIC`) instead of `CORPROF_E_MODULE_IS_DYNAMIC` for Reflection.Emit
/// modules.
const HR_MODULE_IS_DYNAMIC_QUIRK: HRESULT = COR_PRF_MODULE_DYNAMIC as HRESULT;

fn dynamic_module(method: &'static str) -> Error {
    Error::Failed {
        method,
        hr: HResult(CORPROF_E_MODULE_IS_DYNAMIC),
    }
}

impl ProfilerInfo {
    /// Path, load address, assembly and flags of a module (`ICorProfilerInfo3::GetModuleInfo2`).
    /// Any time; fails with `CORPROF_E_DATAINCOMPLETE` until the module is attached to its
    /// assembly (use it from `ModuleLoadFinished` or later).
    pub fn get_module_info2(&self, module: ModuleId) -> Result<ModuleInfo2> {
        const M: &str = "ICorProfilerInfo3::GetModuleInfo2";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut base: LPCBYTE = ptr::null();
        let mut assembly: AssemblyID = 0;
        let mut flags = 0u32;
        let name = read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; out-params are valid locals; `buf` has `cap` units.
            unsafe {
                (vt.GetModuleInfo2)(
                    self.this(),
                    module.0,
                    &mut base,
                    cap,
                    needed,
                    buf,
                    &mut assembly,
                    &mut flags,
                )
            }
        })?;
        Ok(ModuleInfo2 {
            base_address: base as usize,
            name,
            assembly: AssemblyId(assembly),
            flags: ModuleFlags::from_bits_retain(flags),
        })
    }

    /// Name, application domain and manifest module of an assembly
    /// (`ICorProfilerInfo::GetAssemblyInfo`). From a callback or a profiler thread.
    pub fn get_assembly_info(&self, assembly: AssemblyId) -> Result<AssemblyInfo> {
        const M: &str = "ICorProfilerInfo::GetAssemblyInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut domain: AppDomainID = 0;
        let mut module: ModuleID = 0;
        let name = read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; out-params are valid locals; `buf` has `cap` units.
            unsafe {
                (vt.GetAssemblyInfo)(
                    self.this(),
                    assembly.0,
                    cap,
                    needed,
                    buf,
                    &mut domain,
                    &mut module,
                )
            }
        })?;
        Ok(AssemblyInfo {
            name,
            app_domain: AppDomainId(domain),
            manifest_module: ModuleId(module),
        })
    }

    /// Friendly name and process id of an application domain
    /// (`ICorProfilerInfo::GetAppDomainInfo`). May trigger a GC: from a callback that allows
    /// it (not during GC callbacks) or a profiler thread.
    pub fn get_app_domain_info(&self, app_domain: AppDomainId) -> Result<AppDomainInfo> {
        const M: &str = "ICorProfilerInfo::GetAppDomainInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut process: ProcessID = 0;
        let name = read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; out-params are valid locals; `buf` has `cap` units.
            unsafe {
                (vt.GetAppDomainInfo)(self.this(), app_domain.0, cap, needed, buf, &mut process)
            }
        })?;
        Ok(AppDomainInfo {
            name,
            process_id: process,
        })
    }

    /// The application domains a module is loaded in
    /// (`ICorProfilerInfo3::GetAppDomainsContainingModule`). May trigger a GC: from a callback
    /// that allows it or a profiler thread.
    pub fn get_app_domains_containing_module(&self, module: ModuleId) -> Result<Vec<AppDomainId>> {
        const M: &str = "ICorProfilerInfo3::GetAppDomainsContainingModule";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let ids = read_array(M, |cap, count, out: *mut AppDomainID| {
            // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
            unsafe { (vt.GetAppDomainsContainingModule)(self.this(), module.0, cap, count, out) }
        })?;
        Ok(ids.into_iter().map(AppDomainId).collect())
    }

    /// A snapshot of every loaded module (`ICorProfilerInfo3::EnumModules`). May trigger a GC:
    /// from a callback that allows it or a profiler thread.
    pub fn enum_modules(&self) -> Result<ModuleEnum> {
        const M: &str = "ICorProfilerInfo3::EnumModules";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `raw` is a valid out-param.
        ok(M, unsafe { (vt.EnumModules)(self.this(), &mut raw) })?;
        // SAFETY: on success `raw` is an owned ICorProfilerModuleEnum.
        unsafe { ModuleEnum::from_raw(M, raw) }
    }

    /// Size in bytes of the in-memory symbol stream (PDB) of a module loaded from bytes, 0 if
    /// it has none (`ICorProfilerInfo7::GetInMemorySymbolsLength`). From a callback or a
    /// profiler thread; `CORPROF_E_MODULE_IS_DYNAMIC` for Reflection.Emit modules.
    pub fn get_in_memory_symbols_length(&self, module: ModuleId) -> Result<u32> {
        const M: &str = "ICorProfilerInfo7::GetInMemorySymbolsLength";
        let vt = self.vt::<ICorProfilerInfo7Vtbl>(7, M)?;
        let mut count = 0u32;
        // SAFETY: `this` is live; `count` is a valid out-param.
        let hr = unsafe { (vt.GetInMemorySymbolsLength)(self.this(), module.0, &mut count) };
        if hr == HR_MODULE_IS_DYNAMIC_QUIRK {
            return Err(dynamic_module(M));
        }
        ok(M, hr)?;
        Ok(count)
    }

    /// Copies in-memory symbol bytes starting at `offset` into `buf`; returns how many were
    /// copied, fewer than `buf.len()` at the end of the stream
    /// (`ICorProfilerInfo7::ReadInMemorySymbols`). From a callback or a profiler thread.
    pub fn read_in_memory_symbols(
        &self,
        module: ModuleId,
        offset: u32,
        buf: &mut [u8],
    ) -> Result<usize> {
        const M: &str = "ICorProfilerInfo7::ReadInMemorySymbols";
        let vt = self.vt::<ICorProfilerInfo7Vtbl>(7, M)?;
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let mut read = 0u32;
        // SAFETY: `this` is live; `buf` is writable for `len` bytes; `read` is a valid out-param.
        let hr = unsafe {
            (vt.ReadInMemorySymbols)(
                self.this(),
                module.0,
                offset,
                buf.as_mut_ptr(),
                len,
                &mut read,
            )
        };
        if hr == HR_MODULE_IS_DYNAMIC_QUIRK {
            return Err(dynamic_module(M));
        }
        ok(M, hr)?;
        Ok((read as usize).min(buf.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_flags_print_and_keep_unknown_bits() {
        let f = ModuleFlags::from_bits_retain(0x1 | 0x2 | 0x400);
        assert!(f.contains(ModuleFlags::DISK | ModuleFlags::NGEN));
        assert_eq!(format!("{f:?}"), "ModuleFlags(DISK | NGEN | 0x400)");
        assert_eq!(ModuleFlags::RESOURCE.bits(), 0x10);
    }
}
