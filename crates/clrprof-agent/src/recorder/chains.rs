//! Async call chains (see `crate::async_chains`): the chain table and the two functions the
//! probes in the program's `MoveNext` methods call.
//!
//! A chain is a node `(parent chain, async method)`: the async method whose state machine runs
//! and the chain of the one that started it (0: none). Nodes live in one fixed table, interned
//! by their two halves (open addressing, inserted with a compare-and-swap, never removed), so
//! a chain's id is the same for every instance of the same logical path and the table's size
//! bounds the memory: when it is full, new paths get [`OVERFLOW`] and are counted.
//!
//! Each thread's async state is one `u64` in an initial-exec TLS slot (`recorder::tls`), which
//! the sampling signal handler reads: the low half is the chain of the innermost `MoveNext`
//! running on the thread (the parent of a method it starts), the high half the chain of the
//! innermost one that *resumed* (ran after an await): the chain a sample is spliced at.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::tls;

/// The session's chains, once async chains are on.
static TABLE: OnceLock<ChainTable> = OnceLock::new();

/// Creates the session's chain table (once).
pub fn start() {
    let _ = TABLE.get_or_init(ChainTable::new);
}

/// The session's chain table, if async chains are on.
pub fn table() -> Option<&'static ChainTable> {
    TABLE.get()
}

/// Slots of the chain table (a power of two): 512 KiB.
pub const TABLE_LEN: usize = 1 << 16;
/// Slots looked at before a new chain is given up.
const MAX_PROBES: usize = 64;
/// The chain of a path that did not fit in the table.
pub const OVERFLOW: u32 = u32::MAX;

/// The interned chains.
pub struct ChainTable {
    slots: Box<[AtomicU64]>,
    /// Chains that did not fit.
    pub dropped: AtomicU64,
}

impl ChainTable {
    /// An empty table.
    pub fn new() -> ChainTable {
        ChainTable {
            slots: (0..TABLE_LEN).map(|_| AtomicU64::new(0)).collect(),
            dropped: AtomicU64::new(0),
        }
    }

    /// The chain of `method` (an async method's index, at least 1) started by the chain
    /// `parent`. Never allocates, never blocks.
    pub fn intern(&self, parent: u32, method: u32) -> u32 {
        let packed = (u64::from(parent) << 32) | u64::from(method);
        let mask = TABLE_LEN - 1;
        let mut i = (packed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask;
        for _ in 0..MAX_PROBES {
            let current = self.slots[i].load(Ordering::Acquire);
            if current == packed {
                return i as u32 + 1;
            }
            if current == 0 {
                match self.slots[i].compare_exchange(0, packed, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return i as u32 + 1,
                    Err(now) if now == packed => return i as u32 + 1,
                    Err(_) => {}
                }
            }
            i = (i + 1) & mask;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        OVERFLOW
    }

    /// The chain `id`: (its parent chain, its async method), if it is one.
    pub fn node(&self, id: u32) -> Option<(u32, u32)> {
        if id == 0 || id == OVERFLOW {
            return None;
        }
        let v = self.slots.get(id as usize - 1)?.load(Ordering::Acquire);
        (v != 0).then_some(((v >> 32) as u32, v as u32))
    }
}

impl Default for ChainTable {
    fn default() -> Self {
        ChainTable::new()
    }
}

/// The chain a thread with async state `state` had resumed (what its samples are spliced at).
#[inline(always)]
pub fn resumed_chain(state: u64) -> u32 {
    (state >> 32) as u32
}

/// The thread's new async state when a `MoveNext` of chain `chain` starts running on it:
/// resumed (it ran before, `first` false) or started (its first run, within its caller).
fn entered(state: u64, chain: u32, first: bool) -> u64 {
    let resumed = if first { state >> 32 } else { u64::from(chain) };
    (resumed << 32) | u64::from(chain)
}

/// Probe at the entry of an instrumented `MoveNext`: `chain` is its state machine's chain
/// field (0 on its first run), `method` its async method's index. Saves the thread's async
/// state at `saved` (the probe's local, restored by [`async_leave`]), makes the state
/// machine's chain the thread's, and returns it for the field.
///
/// # Safety
/// `saved` must be the address of a writable `u64`: the function is only ever called by the
/// probe, which passes the address of its own local.
pub unsafe extern "C" fn async_enter(chain: u32, method: u32, saved: *mut u64) -> u32 {
    std::panic::catch_unwind(|| {
        let state = tls::async_state();
        // SAFETY: the only caller, the probe, passes the address of its own `uint64` local.
        unsafe { saved.write(state) };
        let first = chain == 0;
        let chain = if first {
            match table() {
                Some(t) => t.intern(state as u32, method),
                None => OVERFLOW,
            }
        } else {
            chain
        };
        tls::set_async_state(entered(state, chain, first));
        chain
    })
    .unwrap_or(OVERFLOW)
}

/// Probe before each `ret` of an instrumented `MoveNext`: restores the async state its entry
/// saved.
pub extern "C" fn async_leave(saved: u64) {
    let _ = std::panic::catch_unwind(|| tls::set_async_state(saved));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_are_interned_by_parent_and_method() {
        let t = ChainTable::new();
        let a = t.intern(0, 1);
        let b = t.intern(a, 2);
        assert_ne!(a, b);
        assert_eq!(t.intern(0, 1), a);
        assert_eq!(t.intern(a, 2), b);
        assert_eq!(t.node(b), Some((a, 2)));
        assert_eq!(t.node(a), Some((0, 1)));
        assert_eq!(t.node(0), None);
        assert_eq!(t.node(OVERFLOW), None);
    }

    #[test]
    fn a_full_table_gives_overflow_and_counts_it() {
        let t = ChainTable::new();
        let mut seen = std::collections::HashSet::new();
        let mut overflowed = 0;
        for m in 1..=(TABLE_LEN as u32 + 10) {
            let id = t.intern(7, m);
            if id == OVERFLOW {
                overflowed += 1;
            } else {
                assert!(seen.insert(id), "id {id} given twice");
            }
        }
        assert!(overflowed >= 10);
        assert_eq!(t.dropped.load(Ordering::Relaxed), overflowed);
    }

    #[test]
    fn entering_tracks_the_running_and_the_resumed_chain() {
        // Started within a resumed chain 5: runs 9, still resumed at 5.
        let s = entered(5 << 32 | 5, 9, true);
        assert_eq!((s as u32, resumed_chain(s)), (9, 5));
        // Resumed: both halves are its chain.
        let s = entered(s, 12, false);
        assert_eq!((s as u32, resumed_chain(s)), (12, 12));
    }
}
