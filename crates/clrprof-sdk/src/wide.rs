//! UTF-16 strings out of the runtime: the "ask, then ask again with a big enough buffer" pattern.
//!
//! The caller passes a buffer and its capacity; the runtime writes the full length (NUL
//! included) to an out-param and either truncates the copy (`GetRuntimeInformation`,
//! `GetAppDomainInfo`, the metadata getters) or fails with `ERROR_INSUFFICIENT_BUFFER`
//! (`GetModuleInfo2`, `GetDynamicFunctionInfo`, `GetEnvironmentVariable`). [`read_wide`] handles
//! both: it tries a stack buffer first, which fits almost every name, and retries with a heap
//! buffer of the reported size.

use clrprof_sys::{E_NOT_SUFFICIENT_BUFFER, HRESULT};

use crate::error::{Error, HResult, Result};

fn failed(method: &'static str, hr: HRESULT) -> Error {
    Error::Failed {
        method,
        hr: HResult(hr),
    }
}

/// First-try string buffer, in UTF-16 units; fits nearly every name and path.
const STACK_UNITS: usize = 512;

/// How many times a string may grow between two calls before we give up.
const ATTEMPTS: usize = 4;

/// Reads a string through `f(capacity, &mut needed, buffer)`.
///
/// `f` must behave like the profiling API's string getters: write at most `capacity` units
/// (NUL included) to `buffer`, and report in `needed` the length it wanted. Any other
/// out-params `f` captures hold the values of the last, successful call.
pub(crate) fn read_wide(
    method: &'static str,
    mut f: impl FnMut(u32, &mut u32, *mut u16) -> HRESULT,
) -> Result<String> {
    let mut stack = [0u16; STACK_UNITS];
    let mut needed = 0u32;
    let hr = f(STACK_UNITS as u32, &mut needed, stack.as_mut_ptr());
    if hr >= 0 && needed as usize <= STACK_UNITS {
        return Ok(from_wide(&stack));
    }
    if hr < 0 && hr != E_NOT_SUFFICIENT_BUFFER {
        return Err(failed(method, hr));
    }
    let mut capacity = (needed as usize).max(STACK_UNITS * 2);
    for _ in 0..ATTEMPTS {
        let mut heap = vec![0u16; capacity];
        let mut needed = 0u32;
        let cap = u32::try_from(capacity).map_err(|_| too_long(method, capacity))?;
        let hr = f(cap, &mut needed, heap.as_mut_ptr());
        if hr >= 0 && needed as usize <= capacity {
            return Ok(from_wide(&heap));
        }
        if hr < 0 && hr != E_NOT_SUFFICIENT_BUFFER {
            return Err(failed(method, hr));
        }
        capacity = (needed as usize).max(capacity * 2);
    }
    Err(too_long(method, capacity))
}

fn too_long(method: &'static str, capacity: usize) -> Error {
    Error::InvalidData {
        context: method,
        reason: format!("the string kept growing (last asked for {capacity} UTF-16 units)"),
    }
}

/// Converts UTF-16 up to the first NUL (or the end) into a `String`, replacing invalid units.
pub fn from_wide(units: &[u16]) -> String {
    let end = units.iter().position(|&u| u == 0).unwrap_or(units.len());
    String::from_utf16_lossy(&units[..end])
}

/// Encodes `s` as UTF-16 with a terminating NUL, for APIs that take `LPCWSTR`.
pub fn to_wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(core::iter::once(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A getter that truncates like `GetRuntimeInformation`.
    fn truncating(s: &str) -> impl FnMut(u32, &mut u32, *mut u16) -> HRESULT + '_ {
        move |cap, needed, buf| {
            let w = to_wide(s);
            *needed = w.len() as u32;
            if !buf.is_null() && cap > 0 {
                let n = w.len().min(cap as usize - 1);
                // SAFETY: `buf` has `cap` units; we write `n + 1 <= cap` of them.
                unsafe {
                    core::ptr::copy_nonoverlapping(w.as_ptr(), buf, n);
                    *buf.add(n) = 0;
                }
            }
            0
        }
    }

    /// A getter that refuses short buffers like `GetModuleInfo2`.
    fn refusing(s: &str) -> impl FnMut(u32, &mut u32, *mut u16) -> HRESULT + '_ {
        move |cap, needed, buf| {
            let w = to_wide(s);
            *needed = w.len() as u32;
            if buf.is_null() {
                return 0;
            }
            if (cap as usize) < w.len() {
                return E_NOT_SUFFICIENT_BUFFER;
            }
            // SAFETY: `buf` has `cap >= w.len()` units.
            unsafe { core::ptr::copy_nonoverlapping(w.as_ptr(), buf, w.len()) };
            0
        }
    }

    #[test]
    fn strings_short_and_long_both_conventions() {
        let long = "/very/long/path/".repeat(100);
        for s in ["", "System.Private.CoreLib.dll", long.as_str()] {
            assert_eq!(read_wide("m", truncating(s)).unwrap(), s);
            assert_eq!(read_wide("m", refusing(s)).unwrap(), s);
        }
    }

    #[test]
    fn environment_style_lengths() {
        // GetEnvironmentVariableW: the length without the NUL when it fits, with it otherwise.
        let value = "x".repeat(1500);
        let f = |cap: u32, needed: &mut u32, buf: *mut u16| {
            let w = to_wide(&value);
            if (cap as usize) < w.len() {
                *needed = w.len() as u32;
                return E_NOT_SUFFICIENT_BUFFER;
            }
            // SAFETY: `buf` has `cap >= w.len()` units.
            unsafe { core::ptr::copy_nonoverlapping(w.as_ptr(), buf, w.len()) };
            *needed = w.len() as u32 - 1;
            0
        };
        assert_eq!(read_wide("m", f).unwrap(), value);
    }

    #[test]
    fn string_errors_pass_through() {
        let e = read_wide("ICorProfilerInfo::X", |_, _, _| clrprof_sys::E_INVALIDARG);
        assert!(e.unwrap_err().is(clrprof_sys::E_INVALIDARG));
    }

    #[test]
    fn wide_round_trip() {
        assert_eq!(from_wide(&to_wide("héllo")), "héllo");
        assert_eq!(from_wide(&[0x41, 0, 0x42]), "A");
    }
}
