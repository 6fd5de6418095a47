//! Sample mode's stack capture: a signal sent to one thread, which records its own stack.
//!
//! The sampler thread bumps a thread slot's `request` counter and sends it `SIGPROF`. The
//! handler, running on the sampled thread, finds its slot through the initial-exec TLS slot
//! (a thread adopted after an attach finds it by its thread id the first time, see
//! `threads::claim_adopted`), records the interrupted instruction pointer and walks the
//! frame-pointer chain (JIT-compiled code on Linux x86-64 always links RBP frames; so does
//! libcoreclr), bounded by the thread's own stack, into the slot's fixed array; then it publishes `done = request` and wakes the
//! sampler with a futex. The handler allocates nothing, takes no lock and reads only memory
//! between the interrupted stack pointer and the top of the thread's stack, which is mapped.
//! Names are resolved later on the sampler thread, never in the handler.
//!
//! CoreCLR uses SIGRTMIN for its own thread suspension and the fault signals for exceptions;
//! `SIGPROF` is free. Handlers are installed with `SA_RESTART`; the runtime's own waits loop
//! on `EINTR`.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use super::threads;
use super::threads::{MAX_FRAMES, STACK_COPY_BYTES, ThreadSlot};

/// The signal used for sampling.
#[cfg(unix)]
pub const SAMPLE_SIGNAL: i32 = libc::SIGPROF;
#[cfg(not(unix))]
const SAMPLE_SIGNAL: i32 = 0;

/// How many native code ranges the handler can tell apart.
const MAX_RANGES: usize = 512;

/// The address ranges of native libraries (code without frame pointers may live there),
/// published by the sampler thread and read by the signal handler without a lock: two tables,
/// the sampler fills the inactive one and then flips [`ACTIVE_RANGES`].
static RANGES: [[AtomicUsize; 2 * MAX_RANGES]; 2] =
    [const { [const { AtomicUsize::new(0) }; 2 * MAX_RANGES] }; 2];
static RANGE_COUNT: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
static ACTIVE_RANGES: AtomicUsize = AtomicUsize::new(0);

/// Publishes the native code ranges (sorted, non-overlapping `[start, end)`), for the handler
/// to decide when to copy the stack. Only the sampler thread calls this.
pub fn publish_native_ranges(ranges: &[(usize, usize)]) {
    let next = 1 - ACTIVE_RANGES.load(Ordering::Acquire);
    let n = ranges.len().min(MAX_RANGES);
    for (i, &(start, end)) in ranges.iter().take(n).enumerate() {
        RANGES[next][2 * i].store(start, Ordering::Relaxed);
        RANGES[next][2 * i + 1].store(end, Ordering::Relaxed);
    }
    RANGE_COUNT[next].store(n, Ordering::Release);
    ACTIVE_RANGES.store(next, Ordering::Release);
}

/// True if `addr` lies in a published native range. Async-signal-safe (a binary search over
/// atomics).
pub fn in_native_code(addr: usize) -> bool {
    let table = ACTIVE_RANGES.load(Ordering::Acquire);
    let n = RANGE_COUNT[table].load(Ordering::Acquire);
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let start = RANGES[table][2 * mid].load(Ordering::Relaxed);
        let end = RANGES[table][2 * mid + 1].load(Ordering::Relaxed);
        if addr < start {
            hi = mid;
        } else if addr >= end {
            lo = mid + 1;
        } else {
            return true;
        }
    }
    false
}

/// What the handler saw: registers and the stack copy (empty when the frame-pointer walk in
/// `slot.frames` is complete on its own).
pub fn copied(slot: &ThreadSlot) -> ([usize; 3], &[u8]) {
    let regs = [0, 1, 2].map(|i| slot.regs[i].load(Ordering::Relaxed));
    let len = slot.copy_len.load(Ordering::Acquire).min(STACK_COPY_BYTES);
    let buf = slot.copy.load(Ordering::Acquire);
    if buf.is_null() || len == 0 {
        return (regs, &[]);
    }
    // SAFETY: `buf` is this slot's buffer of STACK_COPY_BYTES, never freed; the handler wrote
    // `len` bytes before publishing `done` (Release), which the caller observed (Acquire) in
    // `answered`; the handler does not write again until the next request.
    (regs, unsafe { core::slice::from_raw_parts(buf, len) })
}

/// Captures of the current tick not answered yet. The sampler sets it before sending its
/// signals; each handler counts down, and only the one that reaches zero wakes the sampler (one
/// system call per tick rather than one per thread). A late answer to an earlier tick can make
/// it miss the mark, so the sampler never waits on it for long at a time.
pub static PENDING: AtomicU32 = AtomicU32::new(0);

/// Starts a tick of `n` captures.
pub fn begin_tick(n: usize) {
    PENDING.store(n as u32, Ordering::Release);
}

static INSTALLED: AtomicBool = AtomicBool::new(false);

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

/// Asks `slot`'s thread for its stack. Returns false if the thread is gone (or there are no
/// signals on this platform).
pub fn request(slot: &ThreadSlot) -> bool {
    slot.request.fetch_add(1, Ordering::AcqRel);
    super::sys::signal_thread(slot.tid.load(Ordering::Relaxed), SAMPLE_SIGNAL)
}

/// True once `slot` answered its latest request.
pub fn answered(slot: &ThreadSlot) -> bool {
    slot.done.load(Ordering::Acquire) == slot.request.load(Ordering::Acquire)
}

/// Appends `slot`'s captured frames (innermost first) to `out`.
pub fn frames(slot: &ThreadSlot, out: &mut Vec<usize>) {
    let n = (slot.depth.load(Ordering::Acquire) as usize).min(MAX_FRAMES);
    out.extend(
        slot.frames
            .iter()
            .take(n)
            .map(|f| f.load(Ordering::Relaxed)),
    );
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" fn on_sample_signal(
    _signal: i32,
    _info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: errno is thread-local; we restore it so the interrupted code sees no change.
    let errno = unsafe { *libc::__errno_location() };
    if let Some(slot) = threads::current().or_else(threads::claim_adopted) {
        let request = slot.request.load(Ordering::Acquire);
        if slot.done.load(Ordering::Relaxed) != request && !context.is_null() {
            // SAFETY: the kernel passes a valid ucontext_t for SA_SIGINFO handlers.
            let gregs = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext.gregs };
            let rip = gregs[libc::REG_RIP as usize] as usize;
            let rsp = gregs[libc::REG_RSP as usize] as usize;
            let rbp = gregs[libc::REG_RBP as usize] as usize;
            let lo = slot.stack_lo.load(Ordering::Relaxed);
            let hi = slot.stack_hi.load(Ordering::Relaxed);
            // Walk only a stack known to hold the stack pointer (an adopted thread's bounds
            // are learnt from its first capture).
            let hi = if lo <= rsp && rsp < hi { hi } else { 0 };
            let depth = walk(rip, rsp, rbp, hi, &slot.frames);
            slot.depth.store(depth as u32, Ordering::Release);
            for (reg, value) in slot.regs.iter().zip([rip, rsp, rbp]) {
                reg.store(value, Ordering::Relaxed);
            }
            // Native code may not keep frame pointers: copy the top of the stack so that the
            // sampler can unwind it with the library's call frame information.
            let buf = slot.copy.load(Ordering::Relaxed);
            let copy_len = if !buf.is_null() && lo <= rsp && rsp < hi && in_native_code(rip) {
                let n = (hi - rsp).min(STACK_COPY_BYTES);
                // SAFETY: `[rsp, rsp + n)` lies within this thread's mapped stack (checked
                // against its bounds above), `buf` holds STACK_COPY_BYTES >= n bytes, and the
                // two do not overlap (the buffer is a separate mapping).
                unsafe { core::ptr::copy_nonoverlapping(rsp as *const u8, buf, n) };
                n
            } else {
                0
            };
            slot.copy_len.store(copy_len, Ordering::Release);
            slot.done.store(request, Ordering::Release);
            if PENDING.fetch_sub(1, Ordering::AcqRel) == 1 {
                super::sys::futex_wake(&PENDING);
            }
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Walks the frame-pointer chain from (rip, rsp, rbp) without leaving `[rsp, stack_hi)`.
/// (Used by the x86-64 Linux signal handler; elsewhere only by the tests.)
/// Records `rip` then each return address; returns the number recorded.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
fn walk(
    rip: usize,
    rsp: usize,
    rbp: usize,
    stack_hi: usize,
    out: &[core::sync::atomic::AtomicUsize],
) -> usize {
    let Some(first) = out.first() else { return 0 };
    first.store(rip, Ordering::Relaxed);
    let mut n = 1;
    if stack_hi <= rsp {
        return n;
    }
    let mut fp = rbp;
    while n < out.len() {
        // A frame record is two words at `fp`: saved caller RBP, then the return address.
        if fp < rsp || !fp.is_multiple_of(8) || fp > stack_hi.saturating_sub(16) {
            break;
        }
        // SAFETY: `rsp <= fp` and `fp + 16 <= stack_hi`: the two words lie in the part of the
        // thread's stack above the interrupted stack pointer, which is mapped.
        let (next, ret) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if ret == 0 {
            break;
        }
        out[n].store(ret, Ordering::Relaxed);
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
    use core::sync::atomic::AtomicUsize;

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
        let out: Vec<AtomicUsize> = (0..8).map(|_| AtomicUsize::new(0)).collect();
        let n = walk(0x9999, at(0), at(4), at(32), &out);
        let got: Vec<usize> = out[..n].iter().map(|a| a.load(Ordering::Relaxed)).collect();
        assert_eq!(got, vec![0x9999, 0x1111, 0x2222, 0x3333]);
        // Unknown stack top: only the instruction pointer.
        assert_eq!(walk(0x9999, at(0), at(4), 0, &out), 1);
        // A frame pointer below the stack pointer is not followed.
        assert_eq!(walk(0x9999, at(8), at(4), at(32), &out), 1);
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn a_thread_captures_its_own_stack_on_request() {
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
        begin_tick(1);
        assert!(request(slot));
        let start = std::time::Instant::now();
        while !answered(slot) && start.elapsed().as_secs() < 5 {
            super::super::sys::futex_wait(&PENDING, PENDING.load(Ordering::Acquire), 10_000_000);
        }
        assert!(answered(slot), "the handler answered");
        let mut buf = Vec::new();
        frames(slot, &mut buf);
        let n = buf.len();
        assert!(
            n >= 1 && buf[0] != 0,
            "captured at least the instruction pointer"
        );
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        slot.release();
    }
}
