//! A global allocator that counts the allocations made while a flag is raised, to prove that
//! a code path allocates nothing (the idea of pprof-rs's test).
//!
//! The flag is process-wide, not per thread: every allocation any thread makes through this
//! library's allocator while it is raised is counted. In the `suspend` scenario nothing else
//! runs Rust code meanwhile (the probe enables no callbacks), so the count is the sampler's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static COUNTING: AtomicBool = AtomicBool::new(false);
static COUNTED: AtomicU64 = AtomicU64::new(0);

/// Delegates to the system allocator, counting allocations while [`counting`] is on.
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` with the same arguments, so `System`'s guarantees
// hold; the counting is a relaxed atomic increment that neither allocates nor panics.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn note() {
    if COUNTING.load(Ordering::Relaxed) {
        COUNTED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Raises (`true`) or lowers the counting flag.
pub fn counting(on: bool) {
    COUNTING.store(on, Ordering::SeqCst);
}

/// Allocations counted so far.
pub fn counted() -> u64 {
    COUNTED.load(Ordering::SeqCst)
}

/// Proves the counter works: one deliberate allocation under the flag must be seen. Returns
/// the number of allocations it saw (at least 1), and leaves the total unchanged.
pub fn self_test() -> u64 {
    let before = counted();
    counting(true);
    let boxed = std::hint::black_box(Box::new([0u8; 64]));
    counting(false);
    drop(boxed);
    let seen = counted() - before;
    COUNTED.fetch_sub(seen, Ordering::SeqCst);
    seen
}
