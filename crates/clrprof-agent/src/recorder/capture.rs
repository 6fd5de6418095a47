//! Sample mode's stack capture: a signal handler that records the interrupted thread's stack.
//!
//! `SIGPROF` reaches a thread for one of two reasons, which the handler tells apart by the
//! signal's `siginfo` and the slot's question counter:
//!
//! - its CPU clock passed a period (a perf overflow or a CPU-time timer, see
//!   [`super::cpu_clock`]): a CPU sample, taken where the CPU is being spent; a timer is set
//!   again here (and a perf event's period drawn again now and then);
//! - the sampler asked where the thread is (`tgkill`, after bumping the slot's `asked`
//!   counter): the stack of a thread that blocked where the sampler has not seen it block yet.
//!
//! The handler finds its slot through the initial-exec TLS slot (a thread adopted after an
//! attach, or found in `/proc`, finds it by its thread id the first time, see
//! `threads::claim_adopted`), reads the thread's CPU clock, records the interrupted registers
//! and walks the frame-pointer chain (JIT-compiled code on Linux x86-64 links RBP frames; so
//! does libcoreclr), bounded by the thread's own stack, into the next free entry of the
//! slot's capture ring, remembering where each frame record was, and copies the top of the
//! stack for the sampler's unwinder. It reads the CPU clock
//! again at the end: the difference is the profiler's own cost, never the program's. It
//! allocates nothing, takes no lock, calls nothing of the runtime, and reads only memory
//! between the interrupted stack pointer and the top of the thread's stack, which is mapped.
//! Names are resolved later on the sampler thread, never in the handler.
//!
//! CoreCLR uses SIGRTMIN for its own thread suspension and the fault signals for exceptions;
//! `SIGPROF` is free. Handlers are installed with `SA_RESTART`; the runtime's own waits loop
//! on `EINTR`.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use super::cpu_clock::{self, Origin};
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use super::ring::{
    ASKED, BY_PERF, BY_TIMER, CPU, Capture, IN_KERNEL, MODE_KNOWN, STACK_COPY_BYTES, WAKE_AT,
};
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use super::threads::{self, ThreadSlot};

/// The signal used for sampling.
#[cfg(unix)]
pub const SAMPLE_SIGNAL: i32 = libc::SIGPROF;
#[cfg(not(unix))]
pub const SAMPLE_SIGNAL: i32 = 0;

/// Benchmarks only: the handler sees to the clock and returns, capturing nothing (see
/// `handler_floor` in the agent's configuration).
static FLOOR: AtomicBool = AtomicBool::new(false);

/// Perf events' signals that reached their thread after it had left the user instruction
/// where the period ended.
pub static PERF_SIGNALS_LATE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Makes the handler an empty one that only sees to the thread's clock (or a real one again).
pub fn set_floor(on: bool) {
    FLOOR.store(on, Ordering::Release);
}

/// The sampler's wake-up word: a handler whose thread's ring is nearly full bumps it and wakes
/// the sampler, which otherwise sleeps until its next wall-clock tick.
pub static WAKE: AtomicU32 = AtomicU32::new(0);

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Handlers running now, on any thread: [`uninstall`] waits for them to end, so that none
/// publishes a capture into a slot after the session ending emptied it.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
static RUNNING: AtomicU32 = AtomicU32::new(0);

/// How long [`uninstall`] waits for running handlers (a thread preempted inside one).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
const RUNNING_WAIT_NS: u64 = 2_000_000_000;

/// The handler that was in place before ours, restored by [`uninstall`].
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
static PREVIOUS: std::sync::Mutex<Option<libc::sigaction>> = std::sync::Mutex::new(None);

/// Installs the sampling signal handler (once). Returns false if the platform has none.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub fn install() -> bool {
    let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
    if INSTALLED.load(Ordering::Acquire) {
        return true;
    }
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; we fill in the
    // handler and flags, and sigaction copies the struct and writes the old one into `old`.
    let installed = unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = on_sample_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        let mut old: libc::sigaction = core::mem::zeroed();
        let ok = libc::sigaction(SAMPLE_SIGNAL, &action, &mut old) == 0;
        if ok {
            *previous = Some(old);
        }
        ok
    };
    INSTALLED.store(installed, Ordering::Release);
    installed
}

/// Puts back the handler that was there before [`install`], once nothing sends the signal any
/// more (the sampler thread has stopped). Signals still pending on threads that did not
/// answer are discarded first (by ignoring the signal for a moment), so none of them reaches
/// the restored handler, whose default action would end the process.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub fn uninstall() {
    let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(old) = previous.take() else {
        return;
    };
    // SAFETY: both structs are valid sigactions (a zeroed one with SIG_IGN is "ignore, empty
    // mask"); setting SIG_IGN discards pending instances of the signal (POSIX).
    unsafe {
        let mut ignore: libc::sigaction = core::mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&mut ignore.sa_mask);
        libc::sigaction(SAMPLE_SIGNAL, &ignore, core::ptr::null_mut());
        libc::sigaction(SAMPLE_SIGNAL, &old, core::ptr::null_mut());
    }
    // A handler that started before may still be running (its thread preempted inside it,
    // which machine load makes last milliseconds): the caller frees the thread slots next,
    // and a capture published after that stayed in the freed slot's ring, read by the next
    // attached session as its own.
    let deadline = super::sys::monotonic_ns() + RUNNING_WAIT_NS;
    while RUNNING.load(Ordering::Acquire) != 0 && super::sys::monotonic_ns() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    INSTALLED.store(false, Ordering::Release);
}

/// Signal sampling exists only on x86-64 Linux.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub fn install() -> bool {
    let _ = &INSTALLED;
    false
}

/// Nothing to restore where there is no signal sampling.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub fn uninstall() {}

/// Asks `slot`'s thread where it is: bumps its question counter and sends it the sampling
/// signal. Returns false if the thread is gone (or there are no signals on this platform).
pub fn ask(slot: &super::threads::ThreadSlot) -> bool {
    slot.asked.fetch_add(1, Ordering::AcqRel);
    super::sys::signal_thread(slot.tid.load(Ordering::Relaxed), SAMPLE_SIGNAL)
}

/// True once `slot` answered its latest question.
pub fn answered(slot: &super::threads::ThreadSlot) -> bool {
    slot.answered.load(Ordering::Acquire) == slot.asked.load(Ordering::Acquire)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" fn on_sample_signal(
    _signal: i32,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    RUNNING.fetch_add(1, Ordering::AcqRel);
    // SAFETY: errno is thread-local; we restore it so the interrupted code sees no change.
    let errno = unsafe { *libc::__errno_location() };
    // A slot reached through a stale TLS pointer (a thread whose end was announced on
    // another thread, its slot since given to a new thread; or a slot of an earlier attached
    // session) is not this thread's: the thread then takes the slot the sampler adopted for it.
    if let Some(slot) = threads::current_or_adopted()
        && !context.is_null()
    {
        let si_code = if info.is_null() {
            0
        } else {
            // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers.
            unsafe { (*info).si_code }
        };
        // SAFETY: the kernel passes a valid ucontext_t for SA_SIGINFO handlers.
        let gregs = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext.gregs };
        let regs = [
            gregs[libc::REG_RIP as usize] as usize,
            gregs[libc::REG_RSP as usize] as usize,
            gregs[libc::REG_RBP as usize] as usize,
        ];
        // While this is set, the sampler frees none of the slot's clock's resources (see
        // `cpu_clock::retire`): set before the clock is read, cleared after its last use.
        slot.in_handler.store(1, Ordering::SeqCst);
        on_signal(slot, cpu_clock::origin(si_code), regs);
        slot.in_handler.store(0, Ordering::SeqCst);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    RUNNING.fetch_sub(1, Ordering::AcqRel);
}

/// The handler's work for its thread's slot, given the signal's origin and the interrupted
/// rip, rsp and rbp.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn on_signal(slot: &ThreadSlot, origin: Origin, regs: [usize; 3]) {
    let cpu_enter = super::sys::own_cpu_ns();
    let ts = super::sys::monotonic_ns();
    let armed = cpu_clock::Armed::of(slot);
    // The clock the slot holds is seen to once the stack is captured (a timer set again, a
    // perf event's period drawn again now and then: `cpu_clock::after_signal`), and the
    // handler's CPU is read after that, so that it is the profiler's cost too. A perf event
    // runs on through the handler: a period that ends inside it (a few in a thousand at 1 kHz)
    // brings its signal as the handler returns, a sample of the same place that stands for
    // the little CPU since this handler ended.
    let mut ours = armed.filter(|armed| match armed.kind {
        cpu_clock::ClockKind::PerfTaskClock => origin == Origin::Perf,
        cpu_clock::ClockKind::ThreadCpuTimer => origin == Origin::Timer,
    });
    let keep_clock_going = |armed| cpu_clock::after_signal(slot, armed, cpu_enter);
    if FLOOR.load(Ordering::Relaxed) {
        if let Some(armed) = ours {
            keep_clock_going(armed);
        }
        return;
    }
    let asked = slot.asked.load(Ordering::Acquire);
    let was_asked = asked != slot.answered.load(Ordering::Relaxed);
    let cpu = match origin {
        Origin::Perf | Origin::Timer => true,
        Origin::Sent => false,
        // The kernel could not queue the details: a clock's signal unless a question waits.
        Origin::Unknown => !was_asked && armed.is_some(),
    };
    let mut cpu_due = cpu_enter;
    let by = match origin {
        Origin::Perf => {
            BY_PERF
                | match ours.and_then(|armed| Some((armed, cpu_clock::perf_period_end(slot)?))) {
                    Some((armed, end)) if end.in_kernel => {
                        if let Some(due) = cpu_clock::perf_period_end_cpu(armed, end, cpu_enter) {
                            cpu_due = due;
                        }
                        MODE_KNOWN | IN_KERNEL
                    }
                    Some((_, end)) => {
                        if end.ip != regs[0] {
                            PERF_SIGNALS_LATE.fetch_add(1, Ordering::Relaxed);
                        }
                        MODE_KNOWN
                    }
                    None => 0,
                }
        }
        Origin::Timer => BY_TIMER,
        Origin::Sent | Origin::Unknown => 0,
    };
    let flags = if cpu { CPU | by } else { 0 } | if was_asked { ASKED } else { 0 };
    if flags != 0 {
        // SAFETY: this is the slot's own thread (checked by the caller), in its sampling
        // signal handler, which the kernel never runs twice at once on one thread.
        match unsafe { slot.ring.next_free() } {
            Some(entry) => {
                // SAFETY: `next_free` hands out an entry no one else touches until published.
                let entry = unsafe { &mut *entry };
                fill(slot, entry, regs);
                entry.flags = flags;
                entry.ts = ts;
                entry.cpu_enter = cpu_enter;
                entry.cpu_due = cpu_due;
                entry.dropped_at = slot.ring.dropped_at.load(Ordering::Relaxed);
                if let Some(armed) = ours.take() {
                    keep_clock_going(armed);
                }
                entry.cpu_exit = super::sys::own_cpu_ns();
                if slot.ring.publish() == WAKE_AT {
                    WAKE.fetch_add(1, Ordering::AcqRel);
                    super::sys::futex_wake(&WAKE);
                }
            }
            None => {
                slot.ring.dropped.fetch_add(1, Ordering::Relaxed);
                if cpu {
                    slot.ring.dropped_at.store(cpu_due, Ordering::Relaxed);
                }
            }
        }
    }
    if was_asked {
        slot.answered.store(asked, Ordering::Release);
    }
    if let Some(armed) = ours {
        keep_clock_going(armed);
    }
}

/// Records the stack of the interrupted thread into `entry`: the frame-pointer walk, and a
/// copy of the stack top when the thread was in native code.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn fill(slot: &ThreadSlot, entry: &mut Capture, regs: [usize; 3]) {
    let [rip, rsp, rbp] = regs;
    let lo = slot.stack_lo.load(Ordering::Relaxed);
    let hi = slot.stack_hi.load(Ordering::Relaxed);
    // Walk only a stack known to hold the stack pointer (an adopted thread's bounds are
    // learnt from its first capture).
    let hi = if lo <= rsp && rsp < hi { hi } else { 0 };
    let records = Records {
        frames: &mut entry.frames,
        fps: &mut entry.fps,
        saved: &mut entry.saved,
    };
    let mut depth = walk(rip, rsp, rbp, hi, records, 0);
    entry.regs = regs;
    // Copy the top of the stack: native code may not keep frame pointers, and managed methods
    // without a frame pointer keep their return address at an offset from RSP; the sampler
    // unwinds both from what the stack held now, not from what it holds when it gets there.
    entry.copy_len = if hi != 0 {
        let n = (hi - rsp).min(STACK_COPY_BYTES);
        // SAFETY: `[rsp, rsp + n)` lies within this thread's mapped stack (checked against its
        // bounds above), the entry's buffer holds STACK_COPY_BYTES >= n bytes, and the two do
        // not overlap (the ring is a separate mapping).
        unsafe { core::ptr::copy_nonoverlapping(rsp as *const u8, entry.copy.as_mut_ptr(), n) };
        n
    } else {
        0
    };
    // Native code that uses RBP for data stops the walk at once; frames deeper than the copy
    // would then be read from memory the thread may have reused by the time the sampler gets
    // there. Find the first frame record whose link leaves the copy, and keep the chain from
    // there too: the words of every record read here are what the stack held now.
    let copy_top = rsp + entry.copy_len;
    let reached = depth > 1 && entry.fps[depth - 1] + 16 > copy_top;
    if entry.copy_len == STACK_COPY_BYTES
        && !reached
        && depth < entry.frames.len()
        && let Some(anchor) = anchor_beyond(&entry.copy[..entry.copy_len], rsp, hi)
    {
        let records = Records {
            frames: &mut entry.frames,
            fps: &mut entry.fps,
            saved: &mut entry.saved,
        };
        depth = walk_records(anchor, hi, records, depth);
    }
    entry.depth = depth as u32;
    entry.async_chain = super::chains::resumed_chain(super::tls::async_state());
}

/// The address (in `[rsp, rsp + copy.len())`) of the highest frame record in the copy whose
/// saved frame pointer lies above the copy, in the stack, and whose return address is not a
/// stack address: where the chain beyond the copy starts.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn anchor_beyond(copy: &[u8], rsp: usize, hi: usize) -> Option<usize> {
    let top = rsp + copy.len();
    let word = |off: usize| -> usize {
        let mut b = [0u8; 8];
        b.copy_from_slice(&copy[off..off + 8]);
        usize::from_le_bytes(b)
    };
    (0..copy.len().saturating_sub(16) / 8).rev().find_map(|k| {
        let off = k * 8;
        let (next, ret) = (word(off), word(off + 8));
        let plausible = next >= top
            && next.is_multiple_of(8)
            && next <= hi.saturating_sub(16)
            && ret > 0x10000
            && !(rsp..hi).contains(&ret);
        plausible.then_some(rsp + off)
    })
}

/// Where the handler's walk writes the frame records it reads: `frames[i]` the return address
/// found in the record at `fps[i]`, `saved[i]` the frame pointer saved there. Entry 0 holds the
/// interrupted instruction pointer (its `fps` and `saved` are 0).
struct Records<'a> {
    frames: &'a mut [usize],
    fps: &'a mut [usize],
    saved: &'a mut [usize],
}

impl Records<'_> {
    fn capacity(&self) -> usize {
        self.frames.len().min(self.fps.len()).min(self.saved.len())
    }
}

/// Walks the frame-pointer chain from (rip, rsp, rbp) without leaving `[rsp, stack_hi)`,
/// recording `rip` at `start`, then each frame record. Returns the number of entries filled.
/// (Used by the x86-64 Linux signal handler; elsewhere only by the tests.)
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
fn walk(
    rip: usize,
    rsp: usize,
    rbp: usize,
    stack_hi: usize,
    records: Records<'_>,
    start: usize,
) -> usize {
    if start >= records.capacity() {
        return start;
    }
    records.frames[start] = rip;
    records.fps[start] = 0;
    records.saved[start] = 0;
    if stack_hi <= rsp || rbp < rsp {
        return start + 1;
    }
    walk_records(rbp, stack_hi, records, start + 1)
}

/// Follows frame records from `fp` upwards without leaving the stack below `stack_hi`, filling
/// `records` from index `n`. Returns the number of entries filled.
fn walk_records(mut fp: usize, stack_hi: usize, records: Records<'_>, mut n: usize) -> usize {
    let cap = records.capacity();
    let floor = fp;
    while n < cap {
        // A frame record is two words at `fp`: saved caller RBP, then the return address.
        if fp < floor || !fp.is_multiple_of(8) || fp > stack_hi.saturating_sub(16) {
            break;
        }
        // SAFETY: `floor <= fp` and `fp + 16 <= stack_hi`: the two words lie in the part of
        // the thread's stack above the interrupted stack pointer (callers check that `floor`
        // is at or above it), which is mapped.
        let (next, ret) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if ret == 0 {
            break;
        }
        records.frames[n] = ret;
        records.fps[n] = fp;
        records.saved[n] = next;
        n += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_follows_a_fake_chain_and_stays_in_bounds() {
        // A fake stack: three frames linked upwards, then a zero return address.
        let mut stack = vec![0usize; 32];
        let base = stack.as_mut_ptr() as usize;
        let at = |i: usize| base + i * 8;
        stack[4] = at(10); // frame at 4 -> next frame at 10
        stack[5] = 0x1111;
        stack[10] = at(20);
        stack[11] = 0x2222;
        stack[20] = at(40); // points past the end: the walk must stop there
        stack[21] = 0x3333;
        let (mut frames, mut fps, mut saved) = ([0usize; 8], [0usize; 8], [0usize; 8]);
        macro_rules! records {
            () => {
                Records {
                    frames: &mut frames,
                    fps: &mut fps,
                    saved: &mut saved,
                }
            };
        }
        // Unknown stack top: only the instruction pointer.
        assert_eq!(walk(0x9999, at(0), at(4), 0, records!(), 0), 1);
        // A frame pointer below the stack pointer is not followed.
        assert_eq!(walk(0x9999, at(8), at(4), at(32), records!(), 0), 1);
        let n = walk(0x9999, at(0), at(4), at(32), records!(), 0);
        assert_eq!(frames[..n], [0x9999, 0x1111, 0x2222, 0x3333]);
        assert_eq!(fps[..n], [0, at(4), at(10), at(20)]);
        assert_eq!(saved[..n], [0, at(10), at(20), at(40)]);
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn a_thread_captures_its_own_stack_when_asked() {
        assert!(install());
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            let slot = threads::register_current(0).unwrap();
            tx.send(slot as *const ThreadSlot as usize).unwrap();
            // Keep running (and, in a debug build, keep frame pointers) until told to stop.
            while done_rx.try_recv().is_err() {
                std::hint::black_box(0u64);
            }
            threads::unregister_current();
        });
        // SAFETY: the worker sent the address of an element of the static SLOTS array.
        let slot: &ThreadSlot = unsafe { &*(rx.recv().unwrap() as *const ThreadSlot) };
        assert!(ask(slot));
        let start = std::time::Instant::now();
        while !answered(slot) && start.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(answered(slot), "the handler answered");
        let capture = slot.ring.oldest().expect("a capture");
        assert_eq!(capture.flags, ASKED, "asked, not a CPU sample");
        assert!(capture.depth >= 1 && capture.frames[0] != 0);
        assert!(capture.cpu_exit >= capture.cpu_enter && capture.cpu_enter > 0);
        slot.ring.pop();
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        slot.release();
    }
}
