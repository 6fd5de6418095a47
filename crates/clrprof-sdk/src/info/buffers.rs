//! The two ways the profiling API hands back variable-sized results, wrapped once.
//!
//! Strings are read with [`crate::wide::read_wide`].
//!
//! Arrays: a first call with capacity 0 and a null array reports the count, a second call
//! fills an array of that size. [`read_array`] does that, and retries if the count grew in
//! between (a method got a new code version, a thread started). [`read_array_with_room`]
//! first offers room for a usual count, for getters that cost the runtime real work on each
//! call (it decodes a method's debug information anew to count its IL-to-native map).

use core::ptr;

use clrprof_sys::{E_NOT_SUFFICIENT_BUFFER, HRESULT};

use crate::error::{Error, HResult, Result};

/// How many times a result may grow between two calls before we give up.
const ATTEMPTS: usize = 4;

fn failed(method: &'static str, hr: HRESULT) -> Error {
    Error::Failed {
        method,
        hr: HResult(hr),
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
    fill(method, needed, f)
}

/// Reads an array as [`read_array`] does, with a first call that offers room for `room`
/// elements instead of asking for the count: where they suffice, that one call is all.
pub(crate) fn read_array_with_room<T: Copy + Default>(
    method: &'static str,
    room: u32,
    mut f: impl FnMut(u32, &mut u32, *mut T) -> HRESULT,
) -> Result<Vec<T>> {
    match attempt(method, room, &mut f)? {
        Ok(items) => Ok(items),
        Err(next) => fill(method, next, f),
    }
}

/// Fills an array of `needed` elements, and a larger one while the count grows.
fn fill<T: Copy + Default>(
    method: &'static str,
    mut needed: u32,
    mut f: impl FnMut(u32, &mut u32, *mut T) -> HRESULT,
) -> Result<Vec<T>> {
    for _ in 0..ATTEMPTS {
        if needed == 0 {
            return Ok(Vec::new());
        }
        match attempt(method, needed, &mut f)? {
            Ok(items) => return Ok(items),
            Err(next) => needed = next,
        }
    }
    Err(Error::InvalidData {
        context: method,
        reason: format!("the array kept growing (last count {needed})"),
    })
}

/// One call with room for `capacity` elements: the array if it fit, else how many to make
/// room for next.
fn attempt<T: Copy + Default>(
    method: &'static str,
    capacity: u32,
    f: &mut impl FnMut(u32, &mut u32, *mut T) -> HRESULT,
) -> Result<core::result::Result<Vec<T>, u32>> {
    let mut items = vec![T::default(); capacity as usize];
    let mut count = 0u32;
    let hr = f(capacity, &mut count, items.as_mut_ptr());
    if hr >= 0 && count <= capacity {
        items.truncate(count as usize);
        return Ok(Ok(items));
    }
    if hr < 0 && hr != E_NOT_SUFFICIENT_BUFFER {
        return Err(failed(method, hr));
    }
    Ok(Err(count.max(capacity.saturating_mul(2))))
}

/// Converts a Win32 `BOOL` to `bool`.
pub(crate) fn from_bool(b: i32) -> bool {
    b != 0
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A getter over `data` that copies what fits and reports how many there are; counts
    /// its calls.
    fn getter(data: &[u32], calls: &mut u32) -> impl FnMut(u32, &mut u32, *mut u32) -> HRESULT {
        move |cap, count, out| {
            *calls += 1;
            let n = data.len().min(cap as usize);
            if !out.is_null() {
                // SAFETY: `out` has `cap >= n` elements.
                unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), out, n) };
            }
            *count = data.len() as u32;
            0
        }
    }

    #[test]
    fn arrays_with_room_take_one_call_where_they_fit() {
        for len in [0, 5, 8] {
            let data: Vec<u32> = (0..len).collect();
            let mut calls = 0;
            let v = read_array_with_room("m", 8, getter(&data, &mut calls)).unwrap();
            assert_eq!(v, data);
            assert_eq!(calls, 1);
        }
    }

    #[test]
    fn arrays_with_too_little_room_are_asked_for_again() {
        let data: Vec<u32> = (0..20).collect();
        let mut calls = 0;
        let v = read_array_with_room("m", 8, getter(&data, &mut calls)).unwrap();
        assert_eq!(v, data);
        assert_eq!(calls, 2);
    }
}
