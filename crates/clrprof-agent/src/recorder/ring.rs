//! A thread's queue of stack captures: written by the sampling signal handler on the thread
//! itself, read by the sampler thread.
//!
//! CPU samples arrive whenever the thread's CPU clock passes a period, while the sampler works
//! on its own schedule, so each thread has a small ring of [`RING`] captures: one producer
//! (the handler; a second sampling signal waits while the handler runs, so it never runs
//! twice at once on a thread) and one consumer (the sampler). The producer writes the entry at
//! `head` only while fewer than [`RING`] entries are unread, then publishes it by moving
//! `head` (release); the consumer reads entries below `head` (acquire) and frees them by
//! moving `tail` (release). A capture that finds the ring full is dropped and counted. The
//! entries live in one lazily committed anonymous mapping per thread slot, reserved the first
//! time the slot is used and never freed (pages are touched only as captures use them).

use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::sys;

/// Deepest stack the signal handler's frame-pointer walk records, and the deepest stack a
/// sample keeps.
pub const MAX_FRAMES: usize = 256;

/// Captures a thread can hold before the sampler reads them. A thread that computes at 1 kHz
/// takes 50 between two wall-clock ticks (every 50 ms by default), so the sampler is woken
/// (see [`WAKE_AT`]) about every 24 ms of such a thread's CPU. With 16 captures it was woken
/// every 8 ms, and going to sleep and being woken cost it as much as it did meanwhile
/// (sampler CPU per sample at 1 kHz, medians of 5 runs: `Fib` 14.7 us against 11.2 with 32,
/// `Alloc` 18.4 against 14.8, `Realistic` 26.4 against 19.9). The entries are committed as
/// they are used: the process's resident memory grew by 0.4 MB or less on the benchmark
/// programs. A capture may so wait 24 ms to be named: a dynamic method collected meanwhile is
/// named from the code ranges its unload callback left (see `sampler::gone_code`), since the
/// runtime no longer knows its addresses by then.
pub const RING: usize = 32;
/// A handler that leaves this many captures unread wakes the sampler before its next tick,
/// leaving 8 free (8 ms of the thread's CPU at 1 kHz) for the sampler to get a core on a busy
/// machine before captures are dropped.
pub const WAKE_AT: usize = RING - 8;
/// Bytes of stack the handler copies when it interrupts native code (for unwinding with call
/// frame information on the sampler thread).
pub const STACK_COPY_BYTES: usize = 16 << 10;

/// `Capture::flags`: the thread's CPU clock passed a period.
pub const CPU: u32 = 1;
/// `Capture::flags`: the sampler asked where the thread is (a wall-clock stack).
pub const ASKED: u32 = 2;
/// `Capture::flags`: the CPU sample came from the thread's perf event.
pub const BY_PERF: u32 = 4;
/// `Capture::flags`: the CPU sample came from the thread's CPU-time timer.
pub const BY_TIMER: u32 = 8;
/// `Capture::flags`: the perf event's period ended while the thread ran in the kernel (the
/// signal came on its return to user space); known only with [`MODE_KNOWN`].
pub const IN_KERNEL: u32 = 16;
/// `Capture::flags`: the perf event told whether its period ended in user or kernel mode.
pub const MODE_KNOWN: u32 = 32;

/// One stack capture, as the handler left it.
#[repr(C)]
pub struct Capture {
    /// [`CPU`] and/or [`ASKED`].
    pub flags: u32,
    /// Entries of `frames`, `fps` and `saved` the frame-pointer walk filled.
    pub depth: u32,
    /// `CLOCK_MONOTONIC` when the handler started.
    pub ts: u64,
    /// The thread's CPU clock when the handler started.
    pub cpu_enter: u64,
    /// The thread's CPU clock when the handler was done (its own cost is the difference).
    pub cpu_exit: u64,
    /// The thread's CPU clock where the period that sent this signal ended, if known and
    /// before `cpu_enter` (a perf event's period that ended in the kernel); else
    /// `cpu_enter`. What the sample weighs is counted up to there.
    pub cpu_due: u64,
    /// The thread's CPU clock when its latest capture before this one was dropped (the ring
    /// was full; 0 if none was): the CPU up to there went unsampled.
    pub dropped_at: u64,
    /// rip, rsp and rbp at the interruption.
    pub regs: [usize; 3],
    /// The async chain the thread had resumed (`async_chains`; 0: none).
    pub async_chain: u32,

    /// Bytes of `copy` holding the stack from rsp up (0: the walk alone describes it).
    pub copy_len: usize,
    /// `frames[0]` is rip, then the return addresses the frame-pointer walk found.
    pub frames: [usize; MAX_FRAMES],
    /// `fps[i]` is the frame pointer whose frame record held `frames[i]` (`fps[0]` is 0).
    pub fps: [usize; MAX_FRAMES],
    /// `saved[i]` is the saved frame pointer that record held (the word at `fps[i]`).
    pub saved: [usize; MAX_FRAMES],
    /// The top of the stack, when the thread was interrupted in native code.
    pub copy: [u8; STACK_COPY_BYTES],
}

/// The ring of one thread slot.
pub struct CaptureRing {
    head: AtomicU32,
    tail: AtomicU32,
    entries: AtomicPtr<Capture>,
    /// Captures dropped because the ring was full.
    pub dropped: AtomicU64,
    /// The thread's CPU clock when the latest capture was dropped (written by the handler).
    pub dropped_at: AtomicU64,
}

impl CaptureRing {
    /// An empty ring without memory yet.
    pub const fn new() -> CaptureRing {
        CaptureRing {
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            entries: AtomicPtr::new(core::ptr::null_mut()),
            dropped: AtomicU64::new(0),
            dropped_at: AtomicU64::new(0),
        }
    }

    /// Reserves the entries (once per slot; not async-signal-safe). False if memory could not
    /// be reserved: the thread's captures are then all dropped.
    pub fn reserve(&self) -> bool {
        if !self.entries.load(Ordering::Acquire).is_null() {
            return true;
        }
        let p = sys::reserve_zeroed(RING * core::mem::size_of::<Capture>()).cast::<Capture>();
        if p.is_null() {
            return false;
        }
        self.entries.store(p, Ordering::Release);
        true
    }

    /// Forgets every unread capture. Only while no handler can write (a slot being taken).
    pub fn clear(&self) {
        let head = self.head.load(Ordering::Acquire);
        self.tail.store(head, Ordering::Release);
        self.dropped.store(0, Ordering::Relaxed);
        self.dropped_at.store(0, Ordering::Relaxed);
    }

    /// Captures not read yet.
    pub fn len(&self) -> usize {
        let head = self.head.load(Ordering::Acquire);
        head.wrapping_sub(self.tail.load(Ordering::Acquire)) as usize
    }

    /// True if no capture waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Producer (the handler): the next free entry, or `None` when the ring is full or has no
    /// memory. Fill it, then [`Self::publish`]. Async-signal-safe.
    ///
    /// # Safety
    /// Only the slot's own thread may call this, never twice without a `publish` in between,
    /// and never concurrently with itself (the sampling signal is blocked while its handler
    /// runs).
    pub unsafe fn next_free(&self) -> Option<*mut Capture> {
        let entries = self.entries.load(Ordering::Acquire);
        if entries.is_null() {
            return None;
        }
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) as usize >= RING {
            return None;
        }
        // SAFETY: the index is below RING and the mapping holds RING captures.
        Some(unsafe { entries.add(head as usize % RING) })
    }

    /// Producer: makes the entry [`Self::next_free`] gave readable. Returns how many captures
    /// are now unread. Async-signal-safe.
    pub fn publish(&self) -> usize {
        let head = self.head.load(Ordering::Relaxed).wrapping_add(1);
        self.head.store(head, Ordering::Release);
        head.wrapping_sub(self.tail.load(Ordering::Acquire)) as usize
    }

    /// Consumer (the sampler): the oldest unread capture, if any; [`Self::pop`] it when done.
    pub fn oldest(&self) -> Option<&Capture> {
        let entries = self.entries.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Relaxed);
        if entries.is_null() || tail == self.head.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the entry at `tail` was published (head moved past it with release, which
        // we acquired above) and the producer does not write it again until `pop` moves the
        // tail past it; the mapping is never freed.
        Some(unsafe { &*entries.add(tail as usize % RING) })
    }

    /// Consumer: frees the oldest capture for the producer.
    pub fn pop(&self) {
        let tail = self.tail.load(Ordering::Relaxed).wrapping_add(1);
        self.tail.store(tail, Ordering::Release);
    }
}

impl Default for CaptureRing {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_drains_and_drops_when_full() {
        let ring = CaptureRing::new();
        // SAFETY: single-threaded test: this thread is the only producer.
        assert!(unsafe { ring.next_free() }.is_none(), "no memory yet");
        assert!(ring.reserve());
        for i in 0..RING {
            // SAFETY: as above.
            let entry = unsafe { ring.next_free() }.expect("room");
            // SAFETY: the entry is ours until published.
            unsafe { (*entry).ts = i as u64 };
            assert_eq!(ring.publish(), i + 1);
        }
        // SAFETY: as above.
        assert!(unsafe { ring.next_free() }.is_none(), "full");
        for i in 0..RING {
            assert_eq!(ring.oldest().expect("unread").ts, i as u64);
            ring.pop();
        }
        assert!(ring.oldest().is_none());
        assert!(ring.is_empty());
    }

    #[test]
    fn clearing_forgets_the_captures_and_drops_of_the_slots_earlier_use() {
        let ring = CaptureRing::new();
        assert!(ring.reserve());
        // SAFETY: single-threaded test: this thread is the only producer.
        let entry = unsafe { ring.next_free() }.expect("room");
        // SAFETY: the entry is ours until published.
        unsafe { (*entry).ts = 7 };
        ring.publish();
        ring.dropped.store(3, Ordering::Relaxed);
        ring.dropped_at.store(1_234_567, Ordering::Relaxed);
        ring.clear();
        assert!(ring.is_empty() && ring.oldest().is_none());
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 0);
        // A later thread's first capture must not count CPU as missed up to a drop of the
        // slot's earlier thread.
        assert_eq!(ring.dropped_at.load(Ordering::Relaxed), 0);
    }
}
