//! The runtime as a whole: version, event masks, detaching, and the obsolete in-process
//! debugging methods.

use core::ffi::c_void;
use core::fmt;
use core::ptr;

use clrprof_sys::*;

use super::{ProfilerInfo, ok};
use crate::com::ComPtr;
use crate::error::Result;
use crate::flags::{EventMask, HighEventMask};
use crate::wide::read_wide;

/// Which runtime `GetRuntimeInformation` describes (`COR_PRF_RUNTIME_TYPE`). An open set:
/// values this SDK does not know are kept.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuntimeType(pub u32);

impl RuntimeType {
    /// The .NET Framework (`COR_PRF_DESKTOP_CLR`).
    pub const DESKTOP_CLR: RuntimeType = RuntimeType(COR_PRF_DESKTOP_CLR);
    /// .NET Core / .NET 5+ (`COR_PRF_CORE_CLR`).
    pub const CORE_CLR: RuntimeType = RuntimeType(COR_PRF_CORE_CLR);

    /// The constant's name, or `None` for an unknown value.
    pub fn name(self) -> Option<&'static str> {
        match self {
            RuntimeType::DESKTOP_CLR => Some("DESKTOP_CLR"),
            RuntimeType::CORE_CLR => Some("CORE_CLR"),
            _ => None,
        }
    }
}

impl fmt::Debug for RuntimeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "RuntimeType::{name}"),
            None => write!(f, "RuntimeType({})", self.0),
        }
    }
}

/// What `GetRuntimeInformation` reports.
///
/// CoreCLR 3.1 reports 4.0.30319.0 and `"v4.0.30319"` here (the version of the product it
/// descends from), not 3.1.x; .NET 5 and later report their real major, minor and patch
/// numbers.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RuntimeInformation {
    /// Distinguishes runtimes in one process (the `ClrInstanceID` of runtime events).
    pub clr_instance_id: u16,
    /// Desktop CLR or CoreCLR.
    pub runtime_type: RuntimeType,
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Build (patch) number.
    pub build: u16,
    /// QFE (hotfix) number; always 0 on CoreCLR.
    pub qfe: u16,
    /// The product version string (`"v4.0.30319"` on CoreCLR 3.1).
    pub version_string: String,
}

impl ProfilerInfo {
    /// The runtime's type and version (`ICorProfilerInfo3::GetRuntimeInformation`).
    /// From a callback or a profiler thread.
    pub fn get_runtime_information(&self) -> Result<RuntimeInformation> {
        const M: &str = "ICorProfilerInfo3::GetRuntimeInformation";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let (mut id, mut kind, mut major, mut minor, mut build, mut qfe) = (0u16, 0u32, 0, 0, 0, 0);
        let version_string = read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; every out-param is a valid local; `buf` has `cap` units.
            unsafe {
                (vt.GetRuntimeInformation)(
                    self.this(),
                    &mut id,
                    &mut kind,
                    &mut major,
                    &mut minor,
                    &mut build,
                    &mut qfe,
                    cap,
                    needed,
                    buf,
                )
            }
        })?;
        Ok(RuntimeInformation {
            clr_instance_id: id,
            runtime_type: RuntimeType(kind),
            major,
            minor,
            build,
            qfe,
            version_string,
        })
    }

    /// The current low event mask (`ICorProfilerInfo::GetEventMask`). Any time, any thread.
    pub fn get_event_mask(&self) -> Result<EventMask> {
        const M: &str = "ICorProfilerInfo::GetEventMask";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut events = 0u32;
        // SAFETY: `this` is live; `events` is a valid out-param.
        ok(M, unsafe { (vt.GetEventMask)(self.this(), &mut events) })?;
        Ok(EventMask::from_bits_retain(events))
    }

    /// The current low and high event masks (`ICorProfilerInfo5::GetEventMask2`). Any time,
    /// any thread.
    pub fn get_event_mask2(&self) -> Result<(EventMask, HighEventMask)> {
        const M: &str = "ICorProfilerInfo5::GetEventMask2";
        let vt = self.vt::<ICorProfilerInfo5Vtbl>(5, M)?;
        let (mut low, mut high) = (0u32, 0u32);
        // SAFETY: `this` is live; both out-params are valid locals.
        ok(M, unsafe {
            (vt.GetEventMask2)(self.this(), &mut low, &mut high)
        })?;
        Ok((
            EventMask::from_bits_retain(low),
            HighEventMask::from_bits_retain(high),
        ))
    }

    /// Sets both event masks (`ICorProfilerInfo5::SetEventMask2`). Immutable bits only in
    /// `Initialize`; an attached profiler only `ALLOWABLE_AFTER_ATTACH` bits.
    pub fn set_event_mask2(&self, low: EventMask, high: HighEventMask) -> Result<()> {
        const M: &str = "ICorProfilerInfo5::SetEventMask2";
        let vt = self.vt::<ICorProfilerInfo5Vtbl>(5, M)?;
        // SAFETY: `this` is live; the masks are plain integers.
        ok(M, unsafe {
            (vt.SetEventMask2)(self.this(), low.bits(), high.bits())
        })
    }

    /// Asks the runtime to unload this profiler once no thread is inside it
    /// (`ICorProfilerInfo3::RequestProfilerDetach`); `expected_completion_ms` is how long the
    /// profiler expects its in-flight work to take. Not from inside a callback that would be
    /// blocked by the detach; fails if hooks that forbid detaching (ELT, IL rewriting) are set.
    pub fn request_profiler_detach(&self, expected_completion_ms: u32) -> Result<()> {
        const M: &str = "ICorProfilerInfo3::RequestProfilerDetach";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        // SAFETY: `this` is live.
        ok(M, unsafe {
            (vt.RequestProfilerDetach)(self.this(), expected_completion_ms)
        })
    }

    /// Obsolete (`ICorProfilerInfo::GetInprocInspectionInterface`): CoreCLR returns
    /// `E_NOTIMPL`. Any time.
    pub fn get_inproc_inspection_interface(&self) -> Result<Option<ComPtr<IUnknownVtbl>>> {
        const M: &str = "ICorProfilerInfo::GetInprocInspectionInterface";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `out` is a valid out-param.
        ok(M, unsafe {
            (vt.GetInprocInspectionInterface)(self.this(), &mut out)
        })?;
        // SAFETY: on success `out` is null or an owned `IUnknown*`.
        Ok(unsafe { ComPtr::from_raw(out) })
    }

    /// Obsolete (`ICorProfilerInfo::GetInprocInspectionIThisThread`): CoreCLR returns
    /// `E_NOTIMPL`. Any time.
    pub fn get_inproc_inspection_i_this_thread(&self) -> Result<Option<ComPtr<IUnknownVtbl>>> {
        const M: &str = "ICorProfilerInfo::GetInprocInspectionIThisThread";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut out: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `out` is a valid out-param.
        ok(M, unsafe {
            (vt.GetInprocInspectionIThisThread)(self.this(), &mut out)
        })?;
        // SAFETY: on success `out` is null or an owned `IUnknown*`.
        Ok(unsafe { ComPtr::from_raw(out) })
    }

    /// Obsolete (`ICorProfilerInfo::BeginInprocDebugging`): CoreCLR returns `E_NOTIMPL`.
    /// Returns the profiler context to hand to `end_inproc_debugging`. Any time.
    pub fn begin_inproc_debugging(&self, this_thread_only: bool) -> Result<u32> {
        const M: &str = "ICorProfilerInfo::BeginInprocDebugging";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut context = 0u32;
        // SAFETY: `this` is live; `context` is a valid out-param.
        ok(M, unsafe {
            (vt.BeginInprocDebugging)(self.this(), i32::from(this_thread_only), &mut context)
        })?;
        Ok(context)
    }

    /// Obsolete (`ICorProfilerInfo::EndInprocDebugging`): CoreCLR returns `E_NOTIMPL`.
    /// Any time.
    pub fn end_inproc_debugging(&self, profiler_context: u32) -> Result<()> {
        const M: &str = "ICorProfilerInfo::EndInprocDebugging";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live.
        ok(M, unsafe {
            (vt.EndInprocDebugging)(self.this(), profiler_context)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_type_names() {
        assert_eq!(
            format!("{:?}", RuntimeType::CORE_CLR),
            "RuntimeType::CORE_CLR"
        );
        assert_eq!(format!("{:?}", RuntimeType(7)), "RuntimeType(7)");
        assert_eq!(RuntimeType(1), RuntimeType::DESKTOP_CLR);
    }
}
