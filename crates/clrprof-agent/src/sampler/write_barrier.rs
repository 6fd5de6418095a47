//! The runtime's copy of its write barriers.
//!
//! Every reference a program stores into the heap runs the runtime's write barrier, code of
//! `libcoreclr` (between its `JIT_PatchedCodeStart` and `JIT_PatchedCodeLast`) that the
//! runtime patches as the GC's heap changes. With W^X (the default since .NET 7) the runtime
//! cannot patch its own library's code, so at startup it copies that code into executable
//! memory of its own and runs the copy: the first block of its double-mapped executable
//! memory (file offset 0 of its `memfd:doublemapper`), allocated before any other code. Nothing
//! names the copy: the profiling API knows no method there, the runtime's perf map lists no
//! stub, and libcoreclr's symbols (where it has any: 3.1.23's do, 8.0.4's do not) name the
//! original. Measured: 2.6-2.9% of the `Regex` benchmark's CPU on .NET 8.0.4 ran there, one
//! nameless `[runtime stub]` before.
//!
//! That block is taken for the copy only if its content says so: its first bytes, compared in
//! windows of 16 (those with a few distinct bytes at least), are found in libcoreclr's
//! executable code at one offset for at least [`MIN_VOTES`] windows (not every window: the
//! constants the runtime patched in differ from the library's). Code the runtime generates
//! (methods, stubs) is not found there at one offset. The block is looked for once, when
//! the sampler first meets anonymous code that nothing else names. A frame in the copy is then
//! described as the libcoreclr code it was copied from (its module, and the function that
//! holds that code there), and named by libcoreclr's symbols where it has them, else
//! [`WRITE_BARRIER`].

use crate::recorder::sys;
use crate::unwind::ModuleMap;

/// The name of the copy's frames where libcoreclr's symbols name nothing there.
pub const WRITE_BARRIER: &str = "[write barrier]";
/// How many windows of the block must be found in libcoreclr at one offset.
pub const MIN_VOTES: usize = 3;
/// The bytes of the block compared.
const COMPARED: usize = 512;
/// A window's length, and the step between windows.
const WINDOW: usize = 16;
const STEP: usize = 8;
/// Windows with fewer distinct bytes (padding, zeros) are not compared.
const MIN_DISTINCT: usize = 6;
/// At most this many windows are searched for (each one is a scan of libcoreclr's code).
const MAX_WINDOWS: usize = 12;
/// At most this many places of one window in libcoreclr count.
const MAX_PLACES: usize = 4;
/// How much of the block is taken for the copy (the write barriers are some hundreds of
/// bytes; the rest of the block is unused).
const COPY_REACH: usize = 4096;

/// Where the runtime's copy of its write barriers is, once looked for.
#[derive(Default)]
pub struct WriteBarrierCopy {
    found: Option<Option<Found>>,
}

/// The copy: its addresses, and where in libcoreclr (as mapped) the code it holds lies.
struct Found {
    start: usize,
    end: usize,
    original: usize,
}

impl WriteBarrierCopy {
    /// If `ip` lies in the runtime's copy of its write barriers, the address in libcoreclr
    /// of the code it holds there; the first call looks for the copy in `modules`.
    pub fn original_of(&mut self, ip: usize, modules: &ModuleMap) -> Option<usize> {
        let found = self.found.get_or_insert_with(|| look(modules)).as_ref()?;
        (found.start <= ip && ip < found.end).then(|| found.original + (ip - found.start))
    }
}

/// Finds the runtime's copy of its write barriers in this process: the head of its
/// double-mapped memory, compared with libcoreclr's code as its file holds it (both as the
/// module map knows them: no memory map is read, no file mapped again).
fn look(modules: &ModuleMap) -> Option<Found> {
    let (start, end) = modules.double_mapped_head()?;
    let mut head = [0u8; COMPARED];
    let readable = head.len().min(end.saturating_sub(start));
    if !sys::read_process_memory(start, &mut head[..readable]) {
        return None;
    }
    let (coreclr, code) = modules.module_code("libcoreclr.so")?;
    let at = copied_from(&head[..readable], code)?;
    Some(Found {
        start,
        end: end.min(start.saturating_add(COPY_REACH)),
        original: coreclr + at,
    })
}

/// Where in `code` the bytes of `block` were copied from: the offset at which at least
/// [`MIN_VOTES`] of its windows are found. Each window is looked for in `code` (a scan) only
/// until a place of it is found where enough of the windows after it are found too.
fn copied_from(block: &[u8], code: &[u8]) -> Option<usize> {
    let windows: Vec<(usize, &[u8])> = (0..block.len().saturating_sub(WINDOW - 1))
        .step_by(STEP)
        .map(|at| (at, &block[at..at + WINDOW]))
        .filter(|(_, w)| distinct(w) >= MIN_DISTINCT)
        .take(MAX_WINDOWS)
        .collect();
    windows.iter().enumerate().find_map(|(i, &(at, window))| {
        memchr::memmem::find_iter(code, window)
            .take(MAX_PLACES)
            .filter_map(|place| place.checked_sub(at))
            .find(|&base| {
                let found_there = |&&(at, w): &&(usize, &[u8])| {
                    code.get(base + at..base + at + WINDOW) == Some(w)
                };
                windows[i..].iter().filter(found_there).count() >= MIN_VOTES
            })
    })
}

/// How many different byte values `window` holds.
fn distinct(window: &[u8]) -> usize {
    let mut seen = [false; 256];
    for &b in window {
        seen[usize::from(b)] = true;
    }
    seen.iter().filter(|&&s| s).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that look like code: no two windows alike.
    fn code(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn a_copy_with_patched_constants_is_found_at_one_offset() {
        let library = code(64 << 10, 1);
        let mut copy = library[30_000..30_000 + 400].to_vec();
        // Constants patched in every 40 bytes: most windows still match.
        for at in (10..copy.len()).step_by(40) {
            copy[at..at + 8].copy_from_slice(&0x7f12_3456_7800u64.to_le_bytes());
        }
        copy.resize(COMPARED, 0);
        assert_eq!(copied_from(&copy, &library), Some(30_000));
    }

    #[test]
    fn other_code_and_padding_are_not() {
        let library = code(64 << 10, 1);
        assert_eq!(copied_from(&code(COMPARED, 2), &library), None);
        assert_eq!(copied_from(&[0xcc; COMPARED], &library), None);
        // A template repeated through a page (as the runtime lays out its precode stubs)
        // matches the library once per repetition, each at another offset.
        let template = &library[1000..1024];
        let page: Vec<u8> = template.iter().copied().cycle().take(COMPARED).collect();
        assert_eq!(copied_from(&page, &library), None);
    }
}
