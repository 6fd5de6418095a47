//! [`ProfilerInfo`]: the runtime's ICorProfilerInfo interface, at the highest version it has.
//!
//! At `Initialize` the SDK asks the runtime for ICorProfilerInfo15, then 14, ... down to 1, and
//! keeps the first one it gets. Each wrapper method knows the version that introduced it and
//! returns [`Error::NotSupported`] on an older runtime instead of reading past the end of its
//! vtable. Methods are grouped by topic in the submodules; all are `&self` and callable from
//! any thread the API allows.

use ::core::ffi::c_void;

use clrprof_sys::*;

use crate::com::ComPtr;
use crate::error::{Error, Result, check};

// General ICorProfilerInfo methods, by topic.
mod buffers;
mod classes;
mod code;
mod core;
mod enumerators;
mod environment;
mod eventpipe;
mod functions;
mod modules;
mod runtime;
mod threads;

pub use self::core::{FunctionInfo, ModuleInfo};
pub use classes::{ArrayClassInfo, ClassIdInfo, ClassInfo2};
pub use code::{CodeInfo, IlOffset, IlToNativeMap};
pub use enumerators::{
    FunctionEnum, JitedFunction, MethodEnum, MethodRef, ModuleEnum, ObjectEnum, ThreadEnum,
};
pub use eventpipe::{
    EventPipeEventDesc, EventPipeEventId, EventPipeLevel, EventPipeParamDesc, EventPipeParamType,
    EventPipeProviderConfig, EventPipeSessionId,
};
pub use functions::{DynamicFunctionInfo, FunctionInfo2, Inliners};
pub use modules::{AppDomainInfo, AssemblyInfo, ModuleFlags, ModuleInfo2};
pub use runtime::{RuntimeInformation, RuntimeType};
pub use threads::{ClauseType, ExceptionClauseInfo, ThreadHandle};

// IL bodies, ReJIT, objects and the GC heap, static fields.
mod heap;
mod il;
mod rejit;
mod statics;

pub use heap::{
    ArrayObjectInfo, ClassLayout, FieldOffset, GenerationRange, NonGcHeapRange, ObjectReference,
    StringLayout, StringLayout2, read_reference_field,
};
pub use il::MethodMalloc;
pub use rejit::RejitFlags;
pub use statics::{ReferenceStatic, StaticKind, holds_reference};

/// The runtime's ICorProfilerInfo (the highest version it answered to).
#[derive(Clone, Debug)]
pub struct ProfilerInfo {
    /// Points at the object through its highest implemented interface; every lower version's
    /// vtable is a prefix of it.
    ptr: ComPtr<ICorProfilerInfoVtbl>,
    version: u32,
}

/// The interface ids, lowest version first.
const INFO_IIDS: [GUID; 15] = [
    IID_ICorProfilerInfo,
    IID_ICorProfilerInfo2,
    IID_ICorProfilerInfo3,
    IID_ICorProfilerInfo4,
    IID_ICorProfilerInfo5,
    IID_ICorProfilerInfo6,
    IID_ICorProfilerInfo7,
    IID_ICorProfilerInfo8,
    IID_ICorProfilerInfo9,
    IID_ICorProfilerInfo10,
    IID_ICorProfilerInfo11,
    IID_ICorProfilerInfo12,
    IID_ICorProfilerInfo13,
    IID_ICorProfilerInfo14,
    IID_ICorProfilerInfo15,
];

/// The highest ICorProfilerInfo version this SDK knows.
pub const MAX_INFO_VERSION: u32 = INFO_IIDS.len() as u32;

impl ProfilerInfo {
    /// Finds the highest ICorProfilerInfo version behind the `IUnknown` given to `Initialize`.
    ///
    /// # Safety
    /// `unknown` must be the live `IUnknown*` the runtime passed to `Initialize` or
    /// `InitializeForAttach`.
    pub unsafe fn from_unknown(unknown: *mut c_void) -> Result<Self> {
        // SAFETY: the caller guarantees `unknown` is a live IUnknown; we take our own reference.
        let unk: ComPtr<IUnknownVtbl> =
            unsafe { ComPtr::from_borrowed(unknown) }.ok_or(Error::Failed {
                method: "Initialize",
                hr: crate::error::HResult(hresult::E_POINTER),
            })?;
        let mut last_err = None;
        for (i, iid) in INFO_IIDS.iter().enumerate().rev() {
            match unk.query::<ICorProfilerInfoVtbl>(iid) {
                Ok(ptr) => {
                    return Ok(ProfilerInfo {
                        ptr,
                        version: i as u32 + 1,
                    });
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or(Error::Failed {
            method: "IUnknown::QueryInterface",
            hr: crate::error::HResult(hresult::E_NOINTERFACE),
        }))
    }

    /// The highest ICorProfilerInfo version the runtime implements (1..=15).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Every ICorProfilerInfo version (1..=15) the runtime's object answers `QueryInterface`
    /// for, each asked on its own, lowest first. A runtime answers a contiguous range from 1
    /// up to [`ProfilerInfo::version`] (CoreCLR 3.1: 1..=11).
    pub fn versions_answered(&self) -> Vec<u32> {
        (1..=MAX_INFO_VERSION)
            .filter(|v| {
                self.ptr
                    .query::<IUnknownVtbl>(&INFO_IIDS[*v as usize - 1])
                    .is_ok()
            })
            .collect()
    }

    /// The raw interface pointer (of version [`ProfilerInfo::version`]), for calls the SDK
    /// does not wrap. It stays valid while `self` lives.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_raw()
    }

    /// The vtable of version `required`, or `NotSupported` naming `method`.
    ///
    /// `V` must be the vtable type of `ICorProfilerInfo{required}` (or of a lower version):
    /// every wrapper passes its own interface's vtable type and version.
    pub(crate) fn vt<V>(&self, required: u32, method: &'static str) -> Result<&V> {
        if self.version < required {
            return Err(Error::NotSupported {
                method,
                required,
                available: self.version,
            });
        }
        // SAFETY: the object implements ICorProfilerInfo{self.version}, whose vtable extends
        // every lower version's vtable; `required <= self.version` and the caller passes the
        // vtable type of version `required`, so `V` is a prefix of the real vtable.
        Ok(unsafe { self.ptr.vtbl_as::<V>() })
    }

    /// `this` for vtable calls.
    pub(crate) fn this(&self) -> *mut c_void {
        self.ptr.as_raw()
    }
}

/// Shorthand used by the wrappers: turn an HRESULT into `Result<()>`.
pub(crate) fn ok(method: &'static str, hr: HRESULT) -> Result<()> {
    check(method, hr).map(|_| ())
}
