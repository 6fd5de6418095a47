//! Count mode's counter memory (see `count.rs` and the SDK's `il::calls`): one block of
//! counters per thread, and the page table through which instrumented code finds its
//! thread's block from a stack address.
//!
//! - **The table** has one `i64` per 4 KiB page of the 47-bit user address space (2^35
//!   entries, 256 GiB of address space reserved read-only and without swap reservation):
//!   the offset, from the default block, of the block of the thread whose stack holds the
//!   page. Untouched pages of the table read as zero, the default block, and cost no memory;
//!   the pages that hold a thread's entries (8 bytes per 4 KiB of its stack) are made
//!   writable when the thread registers.
//! - **A block** is [`BLOCK_COUNTERS`] counters (32 MiB of address space, zero pages until
//!   written). The default block takes the counts of threads the agent does not know (and, in
//!   the shared layout, of every thread). A block of a thread that ended is cleared (its pages
//!   returned to the system) and given to the next thread.
//!
//! Counters are written by JIT-compiled code with plain loads and stores and read here with
//! atomic loads of the same aligned words.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Counters in a block.
pub const BLOCK_COUNTERS: usize = 1 << 22;
/// Bytes of a block.
const BLOCK_BYTES: usize = BLOCK_COUNTERS * 8;
/// Pages of the 47-bit user address space: entries of the table.
const TABLE_ENTRIES: usize = 1 << 35;
/// The size of a page, and of the stack range one entry stands for.
const PAGE: usize = 4096;
/// The most of a stack the table maps (a main thread may report a huge stack when its limit
/// is unlimited); deeper pages count in the default block.
const MAX_STACK: usize = 256 << 20;

/// A block of counters.
#[derive(Debug)]
pub struct Block {
    addr: usize,
}

impl Block {
    /// Its address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Reads `n` counters from counter `first` into `out` (cleared first). Counters past the
    /// block's end read as 0.
    pub fn read(&self, first: usize, n: usize, out: &mut Vec<u64>) {
        out.clear();
        for i in first..first.saturating_add(n) {
            if i >= BLOCK_COUNTERS {
                out.push(0);
                continue;
            }
            // SAFETY: `i` is below BLOCK_COUNTERS, so the word is inside the block's mapping,
            // which is never unmapped; it is 8-byte aligned (the mapping is page-aligned).
            // Instrumented code writes it with plain 8-byte stores, which an atomic load of the
            // same aligned word reads whole.
            let cell = unsafe { AtomicU64::from_ptr((self.addr + i * 8) as *mut u64) };
            out.push(cell.load(Ordering::Relaxed));
        }
    }
}

/// The table and the blocks.
#[derive(Debug)]
pub struct CounterMemory {
    table: usize,
    default_block: Block,
    /// Blocks of threads that ended, cleared, for the next threads.
    free: Mutex<Vec<Block>>,
}

impl CounterMemory {
    /// Reserves the table and the default block; `None` if the system refuses the address
    /// space.
    pub fn reserve() -> Option<CounterMemory> {
        let table = sys::map(TABLE_ENTRIES * 8, false)?;
        let default_block = Block {
            addr: sys::map(BLOCK_BYTES, true)?,
        };
        Some(CounterMemory {
            table,
            default_block,
            free: Mutex::new(Vec::new()),
        })
    }

    /// The table's address.
    pub fn table(&self) -> usize {
        self.table
    }

    /// The default block.
    pub fn default_block(&self) -> &Block {
        &self.default_block
    }

    /// A zeroed block for a new thread; `None` if the system refuses the address space.
    pub fn new_block(&self) -> Option<Block> {
        if let Some(b) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(b);
        }
        sys::map(BLOCK_BYTES, true).map(|addr| Block { addr })
    }

    /// Gives back the block of a thread that ended (its counts were read): zeroed, it will
    /// serve another thread.
    pub fn recycle(&self, block: Block) {
        sys::clear(block.addr, BLOCK_BYTES);
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(block);
    }

    /// The table entry of `block`: its offset from the default block.
    fn offset(&self, block: &Block) -> i64 {
        block.addr.wrapping_sub(self.default_block.addr) as i64
    }

    /// The entries of the pages of the stack `[lo, hi)` (at most [`MAX_STACK`] below `hi`).
    fn entries(&self, lo: usize, hi: usize) -> Option<(usize, usize)> {
        let top = 1usize << 47;
        if hi <= lo || hi > top {
            return None;
        }
        let lo = lo.max(hi.saturating_sub(MAX_STACK));
        Some((lo / PAGE, hi.div_ceil(PAGE)))
    }

    /// Makes the pages of the stack `[lo, hi)` point at `block`: instrumented code running
    /// on that stack counts there. False if the table's pages could not be made writable.
    pub fn map_stack(&self, lo: usize, hi: usize, block: &Block) -> bool {
        let Some((first, end)) = self.entries(lo, hi) else {
            return false;
        };
        let start = self.table + first * 8;
        let bytes = (end - first) * 8;
        if !sys::make_writable(start, bytes) {
            return false;
        }
        let offset = self.offset(block);
        for e in first..end {
            // SAFETY: `e` is below TABLE_ENTRIES (`end` is at most 2^47 / PAGE), so the entry
            // is inside the table's mapping, which is never unmapped; its page was just made
            // writable; it is 8-byte aligned.
            let entry = unsafe { AtomicI64::from_ptr((self.table + e * 8) as *mut i64) };
            entry.store(offset, Ordering::Release);
        }
        true
    }

    /// Points the pages of the stack `[lo, hi)` that still point at `block` back at the
    /// default block (another thread may have taken the pages over since).
    pub fn unmap_stack(&self, lo: usize, hi: usize, block: &Block) {
        let Some((first, end)) = self.entries(lo, hi) else {
            return;
        };
        let offset = self.offset(block);
        for e in first..end {
            // SAFETY: as in `map_stack`; these pages were made writable when the stack was
            // mapped.
            let entry = unsafe { AtomicI64::from_ptr((self.table + e * 8) as *mut i64) };
            let _ = entry.compare_exchange(offset, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

#[cfg(target_os = "linux")]
mod sys {
    /// Maps `bytes` of zeroed private memory, without swap reservation (pages cost nothing
    /// until written), writable or read-only.
    pub fn map(bytes: usize, writable: bool) -> Option<usize> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: an anonymous private mapping with no fixed address has no preconditions.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                bytes,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(p as usize)
    }

    /// Makes the pages holding `[addr, addr + bytes)` of a mapping of [`map`] writable.
    pub fn make_writable(addr: usize, bytes: usize) -> bool {
        let page = super::PAGE;
        let start = addr / page * page;
        let end = (addr + bytes).div_ceil(page) * page;
        // SAFETY: the range lies inside one of our own mappings (the caller's contract);
        // adding write access to it changes nothing any other code relies on.
        unsafe {
            libc::mprotect(
                start as *mut libc::c_void,
                end - start,
                libc::PROT_READ | libc::PROT_WRITE,
            ) == 0
        }
    }

    /// Returns the pages of `[addr, addr + bytes)`, a writable mapping of [`map`], to the
    /// system: they read as zero again.
    pub fn clear(addr: usize, bytes: usize) {
        // SAFETY: the range is one of our own private anonymous mappings; MADV_DONTNEED on it
        // only replaces its contents with zero pages.
        unsafe {
            libc::madvise(addr as *mut libc::c_void, bytes, libc::MADV_DONTNEED);
        }
    }
}

/// Count mode needs Linux's memory mappings; elsewhere nothing is reserved.
#[cfg(not(target_os = "linux"))]
mod sys {
    pub fn map(_bytes: usize, _writable: bool) -> Option<usize> {
        None
    }
    pub fn make_writable(_addr: usize, _bytes: usize) -> bool {
        false
    }
    pub fn clear(_addr: usize, _bytes: usize) {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_stack_finds_its_block_through_the_table() {
        let m = CounterMemory::reserve().expect("address space");
        let b = m.new_block().unwrap();
        let (lo, hi) = (0x7f12_3456_0000usize, 0x7f12_3466_0000usize);
        assert!(m.map_stack(lo, hi, &b));
        let entry = |addr: usize| {
            // SAFETY: the entry of a 47-bit address is inside the table's mapping.
            unsafe { AtomicI64::from_ptr((m.table() + (addr >> 12) * 8) as *mut i64) }
                .load(Ordering::Relaxed)
        };
        let offset = b.addr() as i64 - m.default_block().addr() as i64;
        assert_eq!(entry(lo), offset);
        assert_eq!(entry(hi - 1), offset);
        assert_eq!(entry(hi), 0, "the page above the stack is no one's");
        assert_eq!(entry(lo - 1), 0);
        // A block reads its counters; the default block is another.
        let cell = (b.addr() + 16) as *mut u64;
        // SAFETY: counter 2 of a block just mapped writable.
        unsafe { cell.write(41) };
        let mut out = Vec::new();
        b.read(1, 3, &mut out);
        assert_eq!(out, [0, 41, 0]);
        m.default_block().read(2, 1, &mut out);
        assert_eq!(out, [0]);
        // Unmapping restores the default; recycling clears the block.
        m.unmap_stack(lo, hi, &b);
        assert_eq!(entry(lo), 0);
        m.recycle(b);
        let again = m.new_block().unwrap();
        again.read(2, 1, &mut out);
        assert_eq!(out, [0]);
    }
}
