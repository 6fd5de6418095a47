//! Environment variables of the profiled process, as the runtime sees them.

use core::ptr;

use clrprof_sys::*;

use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::wide::read_wide;
use crate::wide::to_wide;

/// `HRESULT_FROM_WIN32(ERROR_ENVVAR_NOT_FOUND)`.
const HR_ENVVAR_NOT_FOUND: HRESULT = HRESULT_FROM_WIN32(203);

impl ProfilerInfo {
    /// The value of environment variable `name`, `None` if it is not set
    /// (`ICorProfilerInfo11::GetEnvironmentVariable`). Reads the runtime's view, which
    /// includes changes made with `set_environment_variable`. Any time, any thread.
    pub fn get_environment_variable(&self, name: &str) -> Result<Option<String>> {
        const M: &str = "ICorProfilerInfo11::GetEnvironmentVariable";
        let vt = self.vt::<ICorProfilerInfo11Vtbl>(11, M)?;
        let wide_name = to_wide(name);
        let value = read_wide(M, |cap, needed, buf| {
            // SAFETY: `this` is live; `wide_name` is NUL-terminated; `buf` has `cap` units.
            unsafe {
                (vt.GetEnvironmentVariable)(self.this(), wide_name.as_ptr(), cap, needed, buf)
            }
        });
        match value {
            Ok(value) => Ok(Some(value)),
            Err(e) if e.is(HR_ENVVAR_NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sets environment variable `name` to `value`, or removes it for `None`
    /// (`ICorProfilerInfo11::SetEnvironmentVariable`). Takes effect for managed code that
    /// reads the environment later, e.g. when called from `Initialize`. Any time.
    pub fn set_environment_variable(&self, name: &str, value: Option<&str>) -> Result<()> {
        const M: &str = "ICorProfilerInfo11::SetEnvironmentVariable";
        let vt = self.vt::<ICorProfilerInfo11Vtbl>(11, M)?;
        let wide_name = to_wide(name);
        let wide_value = value.map(to_wide);
        let value_ptr = wide_value.as_ref().map_or(ptr::null(), |v| v.as_ptr());
        // SAFETY: `this` is live; both strings are NUL-terminated (or the value is null).
        ok(M, unsafe {
            (vt.SetEnvironmentVariable)(self.this(), wide_name.as_ptr(), value_ptr)
        })
    }
}
