//! The two ways the profiling API hands back variable-sized results, wrapped once.
//!
//! Strings: the caller passes a buffer and its capacity; the runtime writes the full length
//! (NUL included) to an out-param and either truncates the copy (`GetRuntimeInformation`,
//! `GetAppDomainInfo`) or fails with `ERROR_INSUFFICIENT_BUFFER` (`GetModuleInfo2`,
//! `GetDynamicFunctionInfo`, `GetEnvironmentVariable`). [`read_string`] handles both: it tries
//! a stack buffer first and retries with a heap buffer of the reported size.
//!
//! Arrays: a first call with capacity 0 and a null array reports the count, a second call
//! fills an array of that size. [`read_array`] does that, and retries if the count grew in
//! between (a method got a new code version, a thread started).

use core::ptr;

use clrprof_sys::{E_NOT_SUFFICIENT_BUFFER, HRESULT};

use crate::error::{Error, HResult, Result};
use crate::wide::from_wide;

/// First-try string buffer, in UTF-16 units; fits nearly every name and path.
const STACK_UNITS: usize = 512;

/// How many times a result may grow between two calls before we give up.
const ATTEMPTS: usize = 4;

fn failed(method: &'static str, hr: HRESULT) -> Error {
    Error::Failed {
        method,
        hr: HResult(hr),
    }
}

/// Reads a string through `f(capacity, &mut needed, buffer)`.
///
/// `f` must behave like the profiling API's string getters: write at most `capacity` units
/// (NUL included) to `buffer`, and report in `needed` the length it wanted. Any other
/// out-params `f` captures hold the values of the last, successful call.
pub(crate) fn read_string(
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

/// Reads an array through `f(capacity, &mut count, array)`.
///
/// The first call is `f(0, &mut count, null)`, which the API answers with the number of
/// elements; the second passes an array of that many. `count` on return may be the number
/// copied or the number available; a count larger than the array means "grew, ask again".
pub(crate) fn read_array<T: Copy + Default>(
    method: &'static str,
    mut f: impl FnMut(u32, &mut u32, *mut T) -> HRESULT,
) -> Result<Vec<T>> {
    let mut needed = 0u32;
    let hr = f(0, &mut needed, ptr::null_mut());
    if hr < 0 && hr != E_NOT_SUFFICIENT_BUFFER {
        return Err(failed(method, hr));
    }
    for _ in 0..ATTEMPTS {
        if needed == 0 {
            return Ok(Vec::new());
        }
        let mut items = vec![T::default(); needed as usize];
        let mut count = 0u32;
        let hr = f(needed, &mut count, items.as_mut_ptr());
        if hr >= 0 && count <= needed {
            items.truncate(count as usize);
            return Ok(items);
        }
        if hr < 0 && hr != E_NOT_SUFFICIENT_BUFFER {
            return Err(failed(method, hr));
        }
        needed = count.max(needed.saturating_mul(2));
    }
    Err(Error::InvalidData {
        context: method,
        reason: format!("the array kept growing (last count {needed})"),
    })
}

/// Converts a Win32 `BOOL` to `bool`.
pub(crate) fn from_bool(b: i32) -> bool {
    b != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wide::to_wide;

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
            assert_eq!(read_string("m", truncating(s)).unwrap(), s);
            assert_eq!(read_string("m", refusing(s)).unwrap(), s);
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
        assert_eq!(read_string("m", f).unwrap(), value);
    }

    #[test]
    fn string_errors_pass_through() {
        let e = read_string("ICorProfilerInfo::X", |_, _, _| clrprof_sys::E_INVALIDARG);
        assert!(e.unwrap_err().is(clrprof_sys::E_INVALIDARG));
    }

    #[test]
    fn arrays_query_then_fill() {
        let data = [10usize, 20, 30];
        let mut calls = 0;
        let v = read_array("m", |cap, count, out: *mut usize| {
            calls += 1;
            *count = data.len() as u32;
            if !out.is_null() {
                let n = data.len().min(cap as usize);
                // SAFETY: `out` has `cap >= n` elements.
                unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), out, n) };
            }
            0
        })
        .unwrap();
        assert_eq!(v, data);
        assert_eq!(calls, 2);
        let empty: Vec<u32> = read_array("m", |_, count, _| {
            *count = 0;
            0
        })
        .unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn arrays_that_grow_between_calls() {
        let mut len = 2usize;
        let v = read_array("m", |cap, count, out: *mut u32| {
            let now = len;
            len += 1; // one more element every call
            *count = now as u32;
            if out.is_null() {
                return 0;
            }
            if (cap as usize) < now {
                return E_NOT_SUFFICIENT_BUFFER;
            }
            for i in 0..now {
                // SAFETY: `out` has `cap >= now` elements.
                unsafe { *out.add(i) = i as u32 };
            }
            0
        })
        .unwrap();
        assert_eq!(v, (0..v.len() as u32).collect::<Vec<_>>());
        assert!(v.len() >= 3);
    }
}
