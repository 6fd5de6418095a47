//! The registry of profiled threads: a fixed array of slots, one per live managed thread.
//!
//! A thread registers itself (from `ThreadCreated`, which the runtime calls on the new thread,
//! or from its first hooked call) and finds its slot again through an initial-exec TLS slot,
//! which the signal handler can read. The sampler thread walks the array; only the sampler
//! frees a slot, one tick after the thread was marked dead, so it never reads a slot that is
//! being reused under it. Nothing here allocates or locks.

use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::ring::CaptureRing;
use super::{sys, tls};

/// How many threads can be profiled at once.
pub const MAX_THREADS: usize = 1024;

/// `ThreadSlot::clock` values besides an armed clock (whose encoding `cpu_clock` owns; it is
/// never one of these).
const CLOCK_NONE: u64 = 0;
const CLOCK_BUSY: u64 = u64::MAX;
const CLOCK_FAILED: u64 = u64::MAX - 1;

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
    /// The thread's calling context tree (trace mode), null until its first hooked call: a
    /// `cct::ThreadState`, read through `cct::state_of` (the slots know nothing of trace mode).
    pub trace: AtomicPtr<()>,
    /// The thread's CPU clock (sample mode), as `cpu_clock` encodes it.
    clock: AtomicU64,
    /// The ring buffer of the thread's perf event, where the kernel says where each period
    /// ended (`cpu_clock::perf_period_end`); 0 without one. Published before the clock,
    /// unmapped only once no handler of the thread can be reading it.
    pub perf_ring: AtomicUsize,
    /// 1 while the thread runs its sampling signal handler.
    pub in_handler: AtomicU32,
    /// The thread's CPU time when its clock was armed: where its first CPU sample counts from.
    pub cpu_at_arm: AtomicU64,
    /// The thread's random generator for its sampling periods (see `cpu_clock::next_period`).
    pub rng: AtomicU64,
    /// The thread's CPU time at which its CPU-time timer's next signal is due (0: not known),
    /// so that the handler can set each period from the schedule rather than from when it ran
    /// (see `cpu_clock::schedule_next`).
    pub due_cpu: AtomicU64,
    /// A perf event's signals left before its period changes (see `cpu_clock::after_signal`).
    pub stretch_left: AtomicU32,
    /// The period of a perf event's next stretch, the mirror of its last draw around the
    /// mean (0: a new draw is due).
    pub mirror_ns: AtomicU64,
    /// Wall-clock questions: the sampler bumps `asked` and signals the thread; the handler
    /// captures the stack (flag `ASKED`) and sets `answered = asked`.
    pub asked: AtomicU32,
    /// See `asked`.
    pub answered: AtomicU32,
    /// Captures waiting for the sampler.
    pub ring: CaptureRing,
    /// `CLOCK_MONOTONIC` when the slot was taken (the thread registered or was adopted).
    pub born_at: AtomicU64,
    /// `CLOCK_MONOTONIC` when the thread was marked as ended (0 while it lives).
    pub died_at: AtomicU64,
    /// The thread's CPU time when it was marked as ended on itself (0: not known).
    pub cpu_at_death: AtomicU64,
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
            clock: AtomicU64::new(CLOCK_NONE),
            perf_ring: AtomicUsize::new(0),
            in_handler: AtomicU32::new(0),
            cpu_at_arm: AtomicU64::new(0),
            rng: AtomicU64::new(1),
            due_cpu: AtomicU64::new(0),
            stretch_left: AtomicU32::new(0),
            mirror_ns: AtomicU64::new(0),
            asked: AtomicU32::new(0),
            answered: AtomicU32::new(0),
            ring: CaptureRing::new(),
            born_at: AtomicU64::new(0),
            died_at: AtomicU64::new(0),
            cpu_at_death: AtomicU64::new(0),
        }
    }

    /// The encoded armed clock, if the slot has one. Async-signal-safe.
    pub fn clock(&self) -> Option<u64> {
        let value = self.clock.load(Ordering::Acquire);
        (![CLOCK_NONE, CLOCK_BUSY, CLOCK_FAILED].contains(&value)).then_some(value)
    }

    /// Claims the right to arm this slot's clock: true once per slot use, for the first
    /// caller (the thread itself at registration, or the sampler).
    pub fn begin_arming(&self) -> bool {
        self.clock
            .compare_exchange(CLOCK_NONE, CLOCK_BUSY, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Ends [`Self::begin_arming`] with the encoded clock, or `None` if it could not be armed
    /// (the slot is then not tried again).
    pub fn finish_arming(&self, clock: Option<u64>) {
        let value = clock
            .filter(|v| ![CLOCK_NONE, CLOCK_BUSY, CLOCK_FAILED].contains(v))
            .unwrap_or(CLOCK_FAILED);
        self.clock.store(value, Ordering::Release);
    }

    /// Replaces the armed clock `old` with `new` (both encoded): false if the slot no longer
    /// holds `old`.
    pub fn replace_clock(&self, old: u64, new: u64) -> bool {
        self.clock
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the armed clock away (to disarm it): `None` if there was none.
    pub fn take_clock(&self) -> Option<u64> {
        let value = self.clock()?;
        self.clock
            .compare_exchange(value, CLOCK_NONE, Ordering::AcqRel, Ordering::Relaxed)
            .ok()?;
        Some(value)
    }

    /// True while the thread is alive and registered.
    pub fn is_live(&self) -> bool {
        self.state.load(Ordering::Acquire) == LIVE
    }

    /// True while no thread holds the slot.
    pub fn is_free(&self) -> bool {
        self.state.load(Ordering::Acquire) == FREE
    }

    /// True once the thread ended but the sampler has not released the slot yet.
    pub fn is_dead(&self) -> bool {
        self.state.load(Ordering::Acquire) == DEAD
    }

    /// Marks the thread as ended (now); the sampler releases the slot on its next tick.
    pub fn mark_dead(&self) {
        if self.tid.load(Ordering::Acquire) == sys::gettid() {
            self.cpu_at_death
                .store(sys::own_cpu_ns(), Ordering::Release);
        }
        self.died_at.store(sys::monotonic_ns(), Ordering::Release);
        self.state.store(DEAD, Ordering::Release);
    }

    /// Frees the slot for another thread. Only the sampler (or shutdown) calls this, after
    /// disarming its clock.
    pub fn release(&self) {
        self.clock.store(CLOCK_NONE, Ordering::Release);
        self.trace.store(core::ptr::null_mut(), Ordering::Release);
        self.managed_id.store(0, Ordering::Relaxed);
        self.state.store(FREE, Ordering::Release);
        self.tid.store(0, Ordering::Release);
    }
}

/// Every slot.
pub static SLOTS: [ThreadSlot; MAX_THREADS] = [const { ThreadSlot::new() }; MAX_THREADS];

/// One past the highest slot ever taken: slots are taken lowest first, so the ones in use sit
/// below it.
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);

/// The slots that are or were in use (a prefix of [`SLOTS`]). Async-signal-safe.
pub fn in_use() -> &'static [ThreadSlot] {
    &SLOTS[..HIGH_WATER.load(Ordering::Acquire).min(MAX_THREADS)]
}

/// Threads that could not be registered because every slot was taken.
pub static THREADS_DROPPED: AtomicU64 = AtomicU64::new(0);

/// The agent's own threads (sampler, writer, control, snapshot signal), which are never
/// profiled: what they cost is the profiler's, reported apart.
static AGENT_THREADS: [AtomicU32; 8] = [const { AtomicU32::new(0) }; 8];

/// Marks the calling thread as one of the agent's own until the returned guard is dropped
/// (keep it for the thread's whole life).
fn mark_agent_thread() -> AgentThread {
    let tid = sys::gettid();
    AGENT_THREADS.iter().any(|t| {
        t.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    AgentThread(tid)
}

/// Starts one of the agent's own threads, named `name`, running `f`: it is marked as the
/// agent's (see [`mark_agent_thread`]) before this returns, so that the sampler, which adopts
/// every thread of the process it finds unmarked, never takes it for the program's (it used
/// to, now and then, in the instant between the thread's start and its marking itself: its
/// CPU was then sampled as the program's).
pub fn spawn_agent_thread<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    let (marked, wait) = std::sync::mpsc::sync_channel::<()>(1);
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _own = mark_agent_thread();
            let _ = marked.send(());
            f()
        })?;
    // An error means the thread ended (it panicked) before it could say so.
    let _ = wait.recv();
    Ok(handle)
}

/// One of the agent's own threads, see [`mark_agent_thread`].
#[must_use = "the thread is the agent's only while the guard lives"]
pub struct AgentThread(u32);

impl Drop for AgentThread {
    fn drop(&mut self) {
        for t in &AGENT_THREADS {
            let _ = t.compare_exchange(self.0, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

/// True if `tid` is one of the agent's own threads.
pub fn is_agent_thread(tid: u32) -> bool {
    tid != 0
        && AGENT_THREADS
            .iter()
            .any(|t| t.load(Ordering::Acquire) == tid)
}

/// The calling thread's slot, registering the thread first if needed. `None` when every slot
/// is taken (counted in [`THREADS_DROPPED`]).
pub fn register_current(managed_id: usize) -> Option<&'static ThreadSlot> {
    let tid = sys::gettid();
    if let Some(slot) = current() {
        if slot.tid.load(Ordering::Acquire) == tid && !slot.is_free() {
            if managed_id != 0 {
                slot.managed_id.store(managed_id, Ordering::Relaxed);
            }
            return Some(slot);
        }
        // A stale pointer: the slot was released (an earlier attached session ended) or
        // given to another thread since.
        tls::set_thread_slot(0);
    }
    let bounds = || sys::current_stack_bounds().unwrap_or((0, 0));
    let _one_at_a_time = registering();
    // The sampler may have adopted this thread (found in /proc) before it was announced.
    let slot = match claim_adopted() {
        Some(slot) => {
            let (lo, hi) = bounds();
            slot.stack_lo.store(lo, Ordering::Relaxed);
            slot.stack_hi.store(hi, Ordering::Release);
            if managed_id != 0 {
                slot.managed_id.store(managed_id, Ordering::Relaxed);
            }
            slot
        }
        None => take_slot(tid, managed_id, bounds)?,
    };
    tls::set_thread_slot(slot as *const ThreadSlot as usize);
    Some(slot)
}

/// Registers thread `tid` from another thread: threads that were already running when the
/// agent attached, which the runtime never announces. Its stack bounds stay unknown (0) until
/// the sampler learns them from the stack pointer of its first capture; the thread itself
/// takes the slot in the signal handler ([`claim_adopted`]). False if the thread is already
/// registered or every slot is taken.
pub fn adopt(tid: u32, managed_id: usize) -> bool {
    if tid == 0 {
        return false;
    }
    let _one_at_a_time = registering();
    if used().any(|s| s.tid.load(Ordering::Acquire) == tid) {
        return false;
    }
    take_slot(tid, managed_id, || (0, 0)).is_some()
}

/// Held while a thread registers itself or the sampler adopts one: each looks for the other's
/// slot first and then takes one, and without the lock both could look before either took
/// one. The thread then had two slots, each sampled on its own: twice its wall time, half of it
/// in a wait whose questions went to the slot its signal handler does not answer for
/// (measured: 1.6 s of a 1.6 s thread under no stack, once in many runs of 50 threads starting
/// at once). Never taken in a signal handler ([`claim_adopted`] only reads).
fn registering() -> std::sync::MutexGuard<'static, ()> {
    static REGISTERING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    REGISTERING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes a free slot for thread `tid` and makes it live, with the stack bounds `bounds`
/// gives (low, high; 0 when unknown). `None`, counted in [`THREADS_DROPPED`], if every slot
/// is taken.
fn take_slot(
    tid: u32,
    managed_id: usize,
    bounds: impl FnOnce() -> (usize, usize),
) -> Option<&'static ThreadSlot> {
    let Some((index, slot)) = SLOTS.iter().enumerate().find(|(_, slot)| {
        slot.tid
            .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }) else {
        THREADS_DROPPED.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    HIGH_WATER.fetch_max(index + 1, Ordering::AcqRel);
    let (lo, hi) = bounds();
    slot.stack_lo.store(lo, Ordering::Relaxed);
    slot.stack_hi.store(hi, Ordering::Relaxed);
    slot.managed_id.store(managed_id, Ordering::Relaxed);
    slot.asked.store(0, Ordering::Relaxed);
    slot.answered.store(0, Ordering::Relaxed);
    slot.cpu_at_arm.store(0, Ordering::Relaxed);
    slot.ring.clear();
    slot.ring.reserve();
    slot.died_at.store(0, Ordering::Relaxed);
    slot.cpu_at_death.store(0, Ordering::Relaxed);
    slot.born_at.store(sys::monotonic_ns(), Ordering::Relaxed);
    slot.state.store(LIVE, Ordering::Release);
    Some(slot)
}

/// In the signal handler of a thread without a slot: the slot [`adopt`] reserved for it, which
/// it makes its own (TLS). Only a slot whose stack is still unknown is taken: one with known
/// bounds and no TLS pointing at it belonged to an earlier thread with the same id. No
/// allocation, no lock: async-signal-safe.
pub fn claim_adopted() -> Option<&'static ThreadSlot> {
    let tid = sys::gettid();
    let slot = in_use().iter().find(|s| {
        s.is_live()
            && s.tid.load(Ordering::Acquire) == tid
            && s.stack_hi.load(Ordering::Acquire) == 0
    })?;
    tls::set_thread_slot(slot as *const ThreadSlot as usize);
    Some(slot)
}

/// Frees every slot: the end of an
/// attached session. The library stays loaded after a detach, so without this the next attach
/// would inherit each thread's slot as the last session left it: its birth time (wall times
/// counted from the first attach), a wall-clock question the detach left unanswered (the
/// thread never asked again, its samples missed), its ring. The threads' TLS pointers still
/// point at their old slots; [`register_current`] and the signal handler see that a slot is
/// not theirs (freed, or since given to another thread) and register anew. Call only once the
/// sampler has stopped and the signal handler is uninstalled.
pub fn release_all() {
    for slot in in_use() {
        if slot.tid.load(Ordering::Acquire) == 0 {
            continue;
        }
        while slot.ring.oldest().is_some() {
            slot.ring.pop();
        }
        slot.release();
        slot.asked.store(0, Ordering::Relaxed);
        slot.answered.store(0, Ordering::Relaxed);
        slot.born_at.store(0, Ordering::Relaxed);
        slot.died_at.store(0, Ordering::Relaxed);
    }
}

/// The calling thread's slot if the TLS pointer leads to one that is this thread's, else
/// the slot [`adopt`] reserved for it ([`claim_adopted`]). Async-signal-safe.
pub fn current_or_adopted() -> Option<&'static ThreadSlot> {
    match current() {
        Some(slot) if slot.tid.load(Ordering::Acquire) == sys::gettid() => Some(slot),
        _ => claim_adopted(),
    }
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
    in_use()
        .iter()
        .find(|s| s.is_live() && s.managed_id.load(Ordering::Relaxed) == managed_id)
}

/// Every slot in use (live or dead-but-not-released).
pub fn used() -> impl Iterator<Item = &'static ThreadSlot> {
    in_use()
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

    /// The sampler adopts a thread it finds in `/proc` while the thread registers itself (its
    /// start callback): one of the two must see the other. Two slots for one thread gave it
    /// twice its wall time, half of it in a wait the other slot's questions never learnt (the
    /// thread answers for its own slot only).
    #[test]
    fn a_thread_registering_itself_while_adopted_gets_one_slot() {
        for _ in 0..300 {
            let ready = std::sync::Arc::new(std::sync::Barrier::new(2));
            let (tx, rx) = std::sync::mpsc::channel();
            let worker = {
                let ready = std::sync::Arc::clone(&ready);
                std::thread::spawn(move || {
                    tx.send(sys::gettid()).unwrap();
                    ready.wait();
                    register_current(0x61).expect("slot")
                })
            };
            let tid = rx.recv().unwrap();
            ready.wait();
            adopt(tid, 0);
            let slot = worker.join().unwrap();
            let slots = used()
                .filter(|s| s.tid.load(Ordering::Acquire) == tid)
                .count();
            assert_eq!(slots, 1, "slots of thread {tid}");
            slot.release();
        }
    }

    #[test]
    fn a_stale_tls_pointer_leads_to_the_slot_adopted_in_a_later_session() {
        std::thread::spawn(|| {
            let me = sys::gettid();
            // An earlier session: registered, then its slot freed when the session ended.
            let old = register_current(0x51).expect("slot");
            old.release();
            assert!(
                core::ptr::eq(current().unwrap(), old),
                "TLS still points at it"
            );
            // The next session gave the old slot to another thread and adopted this one.
            let other = u32::MAX - 7;
            old.tid.store(other, Ordering::Release);
            old.state.store(LIVE, Ordering::Release);
            assert!(adopt(me, 0x52));
            let slot = current_or_adopted().expect("the adopted slot");
            assert!(!core::ptr::eq(slot, old));
            assert_eq!(slot.tid.load(Ordering::Acquire), me);
            assert_eq!(slot.managed_id.load(Ordering::Relaxed), 0x52);
            assert!(
                core::ptr::eq(current().unwrap(), slot),
                "TLS now points at it"
            );
            // The sampler learns its stack from its first capture; it is still found.
            slot.stack_hi.store(1, Ordering::Release);
            assert!(core::ptr::eq(current_or_adopted().unwrap(), slot));
            unregister_current();
            slot.release();
            old.release();
        })
        .join()
        .unwrap();
    }
}
