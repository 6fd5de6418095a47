//! The registry of profiled threads: a fixed array of slots, one per live managed thread.
//!
//! A thread registers itself (from `ThreadCreated`, which the runtime calls on the new thread,
//! or from its first hooked call) and finds its slot again through an initial-exec TLS slot,
//! which the signal handler can read. The sampler thread walks the array; only the sampler
//! frees a slot, one tick after the thread was marked dead, so it never reads a slot that is
//! being reused under it. Nothing here allocates or locks.

use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::cct::ThreadState;
use super::{sys, tls};

/// How many threads can be profiled at once.
pub const MAX_THREADS: usize = 1024;
/// Deepest native stack the signal handler records.
pub const MAX_FRAMES: usize = 256;
/// Bytes of stack the signal handler copies when it interrupts native code (for unwinding
/// with call frame information on the sampler thread).
pub const STACK_COPY_BYTES: usize = 16 << 10;

const FREE: u8 = 0;
const LIVE: u8 = 1;
const DEAD: u8 = 2;

/// One profiled thread.
pub struct ThreadSlot {
    /// Kernel thread id; 0 while the slot is free.
    pub tid: AtomicU32,
    state: AtomicU8,
    /// The runtime's ThreadID, once known.
    pub managed_id: AtomicUsize,
    /// The thread's stack, `[stack_lo, stack_hi)`; 0 if unknown.
    pub stack_lo: AtomicUsize,
    /// See `stack_lo`.
    pub stack_hi: AtomicUsize,
    /// The thread's calling context tree (trace mode), null until its first hooked call.
    pub trace: AtomicPtr<ThreadState>,
    /// Capture protocol: the sampler bumps `request` and signals; the handler records the
    /// stack and sets `done = request`.
    pub request: AtomicU32,
    /// See `request`.
    pub done: AtomicU32,
    /// Number of valid entries in `frames`.
    pub depth: AtomicU32,
    /// Instruction pointer, then return addresses, innermost first.
    pub frames: [AtomicUsize; MAX_FRAMES],
    /// rip, rsp and rbp at the interruption.
    pub regs: [AtomicUsize; 3],
    /// A buffer of [`STACK_COPY_BYTES`] for the stack copy (reserved on first registration).
    pub copy: AtomicPtr<u8>,
    /// Bytes copied from rsp at the last capture (0: none, the frame-pointer walk is complete).
    pub copy_len: AtomicUsize,
}

impl ThreadSlot {
    const fn new() -> ThreadSlot {
        ThreadSlot {
            tid: AtomicU32::new(0),
            state: AtomicU8::new(FREE),
            managed_id: AtomicUsize::new(0),
            stack_lo: AtomicUsize::new(0),
            stack_hi: AtomicUsize::new(0),
            trace: AtomicPtr::new(core::ptr::null_mut()),
            request: AtomicU32::new(0),
            done: AtomicU32::new(0),
            depth: AtomicU32::new(0),
            frames: [const { AtomicUsize::new(0) }; MAX_FRAMES],
            regs: [const { AtomicUsize::new(0) }; 3],
            copy: AtomicPtr::new(core::ptr::null_mut()),
            copy_len: AtomicUsize::new(0),
        }
    }

    /// True while the thread is alive and registered.
    pub fn is_live(&self) -> bool {
        self.state.load(Ordering::Acquire) == LIVE
    }

    /// True once the thread ended but the sampler has not released the slot yet.
    pub fn is_dead(&self) -> bool {
        self.state.load(Ordering::Acquire) == DEAD
    }

    /// The thread's trace-mode state, if it has one.
    pub fn trace_state(&self) -> Option<&'static ThreadState> {
        let p = self.trace.load(Ordering::Acquire);
        // SAFETY: trace states are leaked boxes (see `cct`), freed only by the sampler after
        // it released this slot, so a non-null pointer read from a used slot is live.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Marks the thread as ended; the sampler releases the slot on its next tick.
    pub fn mark_dead(&self) {
        self.state.store(DEAD, Ordering::Release);
    }

    /// Frees the slot for another thread. Only the sampler (or shutdown) calls this.
    pub fn release(&self) {
        self.trace.store(core::ptr::null_mut(), Ordering::Release);
        self.managed_id.store(0, Ordering::Relaxed);
        self.state.store(FREE, Ordering::Release);
        self.tid.store(0, Ordering::Release);
    }
}

/// Every slot.
pub static SLOTS: [ThreadSlot; MAX_THREADS] = [const { ThreadSlot::new() }; MAX_THREADS];

/// Threads that could not be registered because every slot was taken.
pub static THREADS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// The calling thread's slot, registering the thread first if needed. `None` when every slot
/// is taken (counted in [`THREADS_DROPPED`]).
pub fn register_current(managed_id: usize) -> Option<&'static ThreadSlot> {
    if let Some(slot) = current() {
        if managed_id != 0 {
            slot.managed_id.store(managed_id, Ordering::Relaxed);
        }
        return Some(slot);
    }
    let slot = take_slot(sys::gettid(), managed_id, || {
        sys::current_stack_bounds().unwrap_or((0, 0))
    })?;
    tls::set_thread_slot(slot as *const ThreadSlot as usize);
    Some(slot)
}

/// Registers thread `tid` from another thread: threads that were already running when the
/// agent attached, which the runtime never announces. Its stack bounds stay unknown (0) until
/// the sampler learns them from the stack pointer of its first capture; the thread itself
/// takes the slot in the signal handler ([`claim_adopted`]). False if the thread is already
/// registered or every slot is taken.
pub fn adopt(tid: u32, managed_id: usize) -> bool {
    if tid == 0 || used().any(|s| s.tid.load(Ordering::Acquire) == tid) {
        return false;
    }
    take_slot(tid, managed_id, || (0, 0)).is_some()
}

/// Takes a free slot for thread `tid` and makes it live, with the stack bounds `bounds`
/// gives (low, high; 0 when unknown). `None`, counted in [`THREADS_DROPPED`], if every slot
/// is taken.
fn take_slot(
    tid: u32,
    managed_id: usize,
    bounds: impl FnOnce() -> (usize, usize),
) -> Option<&'static ThreadSlot> {
    let Some(slot) = SLOTS.iter().find(|slot| {
        slot.tid
            .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) else {
        THREADS_DROPPED.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    let (lo, hi) = bounds();
    slot.stack_lo.store(lo, Ordering::Relaxed);
    slot.stack_hi.store(hi, Ordering::Relaxed);
    slot.managed_id.store(managed_id, Ordering::Relaxed);
    slot.request.store(0, Ordering::Relaxed);
    slot.done.store(0, Ordering::Relaxed);
    slot.copy_len.store(0, Ordering::Relaxed);
    if slot.copy.load(Ordering::Relaxed).is_null() {
        slot.copy
            .store(sys::reserve_zeroed(STACK_COPY_BYTES), Ordering::Release);
    }
    slot.state.store(LIVE, Ordering::Release);
    Some(slot)
}

/// In the signal handler of a thread without a slot: the slot [`adopt`] reserved for it, which
/// it makes its own (TLS). Only a slot whose stack is still unknown is taken: one with known
/// bounds and no TLS pointing at it belonged to an earlier thread with the same id. No
/// allocation, no lock: async-signal-safe.
pub fn claim_adopted() -> Option<&'static ThreadSlot> {
    let tid = sys::gettid();
    let slot = SLOTS.iter().find(|s| {
        s.is_live()
            && s.tid.load(Ordering::Acquire) == tid
            && s.stack_hi.load(Ordering::Acquire) == 0
    })?;
    tls::set_thread_slot(slot as *const ThreadSlot as usize);
    Some(slot)
}

/// The calling thread's slot, if it is registered.
pub fn current() -> Option<&'static ThreadSlot> {
    let p = tls::thread_slot();
    // SAFETY: the TLS slot only ever holds null or the address of an element of `SLOTS`.
    (p != 0).then(|| unsafe { &*(p as *const ThreadSlot) })
}

/// Marks the calling thread's slot dead and forgets it (its TLS slot is cleared).
pub fn unregister_current() {
    if let Some(slot) = current() {
        slot.mark_dead();
        tls::set_thread_slot(0);
    }
}

/// The live slot of the managed thread `managed_id`, if any.
pub fn find_managed(managed_id: usize) -> Option<&'static ThreadSlot> {
    if managed_id == 0 {
        return None;
    }
    SLOTS
        .iter()
        .find(|s| s.is_live() && s.managed_id.load(Ordering::Relaxed) == managed_id)
}

/// Every slot in use (live or dead-but-not-released).
pub fn used() -> impl Iterator<Item = &'static ThreadSlot> {
    SLOTS
        .iter()
        .filter(|s| s.tid.load(Ordering::Acquire) != 0 && s.state.load(Ordering::Acquire) != FREE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_find_and_release() {
        std::thread::spawn(|| {
            let slot = register_current(0x77).expect("slot");
            assert!(slot.is_live());
            assert_eq!(slot.tid.load(Ordering::Relaxed), sys::gettid());
            assert!(core::ptr::eq(current().unwrap(), slot));
            assert!(
                core::ptr::eq(register_current(0x78).unwrap(), slot),
                "idempotent"
            );
            assert!(core::ptr::eq(find_managed(0x78).unwrap(), slot));
            assert!(slot.stack_hi.load(Ordering::Relaxed) > slot.stack_lo.load(Ordering::Relaxed));
            unregister_current();
            assert!(current().is_none());
            assert!(slot.is_dead());
            assert!(used().any(|s| core::ptr::eq(s, slot)));
            slot.release();
            assert!(!used().any(|s| core::ptr::eq(s, slot)));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_adopted_thread_claims_its_slot_once() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(sys::gettid()).unwrap();
            go_rx.recv().unwrap();
            assert!(current().is_none());
            let slot = claim_adopted().expect("adopted");
            assert!(core::ptr::eq(current().unwrap(), slot));
            assert_eq!(slot.managed_id.load(Ordering::Relaxed), 0x99);
            unregister_current();
            slot.release();
        });
        let tid = rx.recv().unwrap();
        assert!(adopt(tid, 0x99));
        assert!(!adopt(tid, 0x99), "already registered");
        go_tx.send(()).unwrap();
        worker.join().unwrap();
        // A slot whose stack is known is not claimed by a thread that merely has its id.
        std::thread::spawn(|| {
            let tid = sys::gettid();
            assert!(adopt(tid, 1));
            let slot = SLOTS
                .iter()
                .find(|s| s.tid.load(Ordering::Relaxed) == tid)
                .unwrap();
            slot.stack_hi.store(1, Ordering::Relaxed);
            assert!(claim_adopted().is_none());
            slot.release();
        })
        .join()
        .unwrap();
    }
}
