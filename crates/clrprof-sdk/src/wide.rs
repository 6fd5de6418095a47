//! UTF-16 strings out of the runtime: the "ask, then ask again with a big enough buffer" pattern.
//!
//! Name lengths returned by the profiling and metadata APIs count the terminating NUL
//! (runtime-facts). [`read_wide`] first tries a stack buffer, which fits almost every name, and
//! only calls again with a heap buffer of the reported size when the name did not fit.

use clrprof_sys::HRESULT;

use crate::error::{Result, check};

/// Length of the first-try buffer, in UTF-16 units.
const STACK_UNITS: usize = 512;

/// Reads a string through `f(capacity, &mut needed, buffer)`, which must behave like the
/// profiling API's name getters: write at most `capacity` units including the NUL, and store
/// the full length including the NUL in `needed`.
pub(crate) fn read_wide(
    method: &'static str,
    mut f: impl FnMut(u32, &mut u32, *mut u16) -> HRESULT,
) -> Result<String> {
    let mut stack = [0u16; STACK_UNITS];
    let mut needed = 0u32;
    check(
        method,
        f(STACK_UNITS as u32, &mut needed, stack.as_mut_ptr()),
    )?;
    if (needed as usize) <= STACK_UNITS {
        return Ok(from_wide(&stack[..needed as usize]));
    }
    let mut heap = vec![0u16; needed as usize];
    let mut again = 0u32;
    check(method, f(needed, &mut again, heap.as_mut_ptr()))?;
    let len = (again as usize).min(heap.len());
    Ok(from_wide(&heap[..len]))
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

    fn fake_getter(name: &str) -> impl FnMut(u32, &mut u32, *mut u16) -> HRESULT + '_ {
        move |cap, needed, buf| {
            let w = to_wide(name);
            *needed = w.len() as u32;
            if !buf.is_null() && cap as usize >= w.len() {
                // SAFETY: the test passes a buffer of `cap` units and we write `w.len() <= cap`.
                unsafe { core::ptr::copy_nonoverlapping(w.as_ptr(), buf, w.len()) };
            }
            0
        }
    }

    #[test]
    fn short_and_long_names() {
        assert_eq!(
            read_wide("m", fake_getter("System.String")).unwrap(),
            "System.String"
        );
        let long = "N".repeat(2000);
        assert_eq!(read_wide("m", fake_getter(&long)).unwrap(), long);
        assert_eq!(read_wide("m", fake_getter("")).unwrap(), "");
    }

    #[test]
    fn wide_round_trip() {
        assert_eq!(from_wide(&to_wide("héllo")), "héllo");
        assert_eq!(from_wide(&[0x41, 0, 0x42]), "A");
    }
}
