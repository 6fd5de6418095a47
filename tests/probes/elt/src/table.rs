//! A fixed-size, lock-free table of enter/leave/tail-call counts keyed by a nonzero word
//! (a FunctionID, or a dense client id). Never allocates: it is a static array, and the hook
//! path is a few atomic operations.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Number of slots (a power of two); far more than the functions a test program runs.
pub const SLOTS: usize = 1 << 15;

/// The counts of one key.
pub struct Slot {
    key: AtomicUsize,
    pub enter: AtomicU64,
    pub leave: AtomicU64,
    pub tailcall: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            key: AtomicUsize::new(0),
            enter: AtomicU64::new(0),
            leave: AtomicU64::new(0),
            tailcall: AtomicU64::new(0),
        }
    }

    /// The key, 0 for an unused slot.
    pub fn key(&self) -> usize {
        self.key.load(Ordering::Acquire)
    }
}

/// Counts keyed by arbitrary words, found by open addressing.
pub struct Table {
    slots: [Slot; SLOTS],
    overflow: AtomicU64,
}

impl Table {
    pub const fn new() -> Table {
        Table {
            slots: [const { Slot::new() }; SLOTS],
            overflow: AtomicU64::new(0),
        }
    }

    /// The slot of `key` (nonzero), claimed on first use; `None` when the table is full.
    pub fn slot(&self, key: usize) -> Option<&Slot> {
        let mut i = hash(key) & (SLOTS - 1);
        for _ in 0..SLOTS {
            let slot = &self.slots[i];
            let current = slot.key.load(Ordering::Acquire);
            if current == key {
                return Some(slot);
            }
            if current == 0 {
                match slot
                    .key
                    .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return Some(slot),
                    Err(winner) if winner == key => return Some(slot),
                    Err(_) => {}
                }
            }
            i = (i + 1) & (SLOTS - 1);
        }
        self.overflow.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// The slot at `index` (for tables indexed directly by a dense client id).
    pub fn at(&self, index: usize) -> Option<&Slot> {
        self.slots.get(index)
    }

    /// Gives the slot at `index` the key `key`; false if `index` is out of range.
    pub fn set_key(&self, index: usize, key: usize) -> bool {
        match self.slots.get(index) {
            Some(slot) => {
                slot.key.store(key, Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// Hook calls that found no room.
    pub fn overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }

    /// The used slots.
    pub fn used(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(|s| s.key() != 0)
    }
}

fn hash(key: usize) -> usize {
    // Fibonacci hashing: FunctionIDs are pointers with low bits in common.
    (key as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(29) as usize
}
