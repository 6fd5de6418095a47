//! The signals that end the process without the runtime's shutdown: `SIGINT` (Ctrl-C),
//! `SIGQUIT` and `SIGHUP`. The runtime handles the first two by running the program's
//! handlers and then, if none cancelled, re-raising the signal with the handler that was
//! there before it, and the process dies without telling the profiler. What the agent had
//! recorded but not yet sent (up to one transport period, 10 ms) was lost: a program
//! interrupted right after it did something lost the record of it.
//!
//! The handler installed here, before the runtime's own, wakes the transport's writer and
//! waits (at most [`MAX_WAIT_NS`]) until it has sent everything recorded so far, then hands
//! the signal on to the handler it replaced, or does what the signal does by default. Called
//! by a handler installed later as the one it replaced (the runtime does that at once for
//! signals it lets the program handle, such as `SIGHUP` with a `PosixSignalRegistration`), it
//! only hands the signal on: the program goes on, and what it does is not this handler's
//! business. It only
//! uses atomics, futexes, `sigaction` and `kill`, which are async-signal-safe; the agent's
//! own threads block these signals, so the writer never waits for itself.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::sys;

/// The signals handled.
#[cfg(target_os = "linux")]
const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP];
/// How long a handler waits for the writer at most.
pub const MAX_WAIT_NS: u64 = 200_000_000;

/// The writer's futex word: bumped to wake it early.
pub static WAKE: AtomicU32 = AtomicU32::new(0);
/// Drains asked for by handlers.
static ASKED: AtomicU32 = AtomicU32::new(0);
/// The latest request the writer has served (all records written before it was asked are
/// sent).
static SERVED: AtomicU32 = AtomicU32::new(0);
/// Whether a writer serves requests (a session is recording).
static SERVING: AtomicBool = AtomicBool::new(false);
static INSTALLED: AtomicBool = AtomicBool::new(false);

#[cfg(target_os = "linux")]
static mut PREVIOUS: [libc::sigaction; 3] = [const {
    // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, no flags, empty mask).
    unsafe { core::mem::zeroed() }
}; 3];

/// The writer: the request it will serve with its next drain (read before draining).
pub fn writer_request() -> u32 {
    ASKED.load(Ordering::Acquire)
}

/// The writer: everything recorded before `request` has been sent.
pub fn writer_served(request: u32) {
    // Only a termination signal's handler waits on SERVED, and only after asking: a drain
    // that served no new request wakes no one (and makes no system call).
    if SERVED.swap(request, Ordering::AcqRel) != request {
        sys::futex_wake(&SERVED);
    }
}

/// The writer: waits up to `timeout_ns` or until a handler (or [`wake_writer`]) wakes it.
pub fn writer_wait(timeout_ns: u64) {
    let seen = WAKE.load(Ordering::Acquire);
    if ASKED.load(Ordering::Acquire) == SERVED.load(Ordering::Acquire) {
        sys::futex_wait(&WAKE, seen, timeout_ns);
    }
}

/// Wakes the writer now.
pub fn wake_writer() {
    WAKE.fetch_add(1, Ordering::AcqRel);
    sys::futex_wake(&WAKE);
}

/// Whether a writer serves the handlers' requests (set when the transport starts, cleared
/// when it stops).
pub fn set_serving(serving: bool) {
    SERVING.store(serving, Ordering::Release);
}

/// Blocks the handled signals on the calling thread (the agent's own threads: the kernel
/// then delivers them to a program thread).
#[cfg(target_os = "linux")]
pub fn block_on_this_thread() {
    // SAFETY: the set is initialized by sigemptyset before use; pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = core::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, core::ptr::null_mut());
    }
}

/// Nothing to block off Linux.
#[cfg(not(target_os = "linux"))]
pub fn block_on_this_thread() {}

#[cfg(target_os = "linux")]
extern "C" fn on_termination_signal(
    signal: i32,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let Some(i) = SIGNALS.iter().position(|&s| s == signal) else {
        return;
    };
    // Called as the handler in place (by the kernel, or re-raised by the runtime after it
    // restored this handler), rather than as the "original" handler of one installed later
    // that handles the signal itself (the runtime calls those at once for SIGHUP, and the
    // program goes on): only then is the process about to end.
    // SAFETY: sigaction with a null new action only fills `current`, a valid out-pointer.
    let in_place = unsafe {
        let mut current: libc::sigaction = core::mem::zeroed();
        libc::sigaction(signal, core::ptr::null(), &mut current) == 0
            && current.sa_sigaction == on_termination_signal as *const () as usize
    };
    if in_place && SERVING.load(Ordering::Acquire) {
        let request = ASKED.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        wake_writer();
        let start = sys::monotonic_ns();
        loop {
            let served = SERVED.load(Ordering::Acquire);
            if served.wrapping_sub(request) as i32 >= 0 {
                break;
            }
            let waited = sys::monotonic_ns().saturating_sub(start);
            if waited >= MAX_WAIT_NS {
                break;
            }
            sys::futex_wait(&SERVED, served, (MAX_WAIT_NS - waited).min(10_000_000));
        }
    }
    // SAFETY: PREVIOUS is written only by `install`, before this handler is installed, and
    // read-only afterwards.
    let previous = unsafe { (*core::ptr::addr_of!(PREVIOUS))[i] };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_IGN {
        return;
    }
    if handler == libc::SIG_DFL {
        if !in_place {
            return; // the handler in place decides what the signal does
        }
        // What the signal does by default (end the process): restore that and raise it again;
        // it is delivered when this handler returns (the signal is blocked while it runs).
        // SAFETY: a zeroed sigaction is SIG_DFL with no flags; sigaction and kill are
        // async-signal-safe.
        unsafe {
            let default: libc::sigaction = core::mem::zeroed();
            libc::sigaction(signal, &default, core::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        return;
    }
    // SAFETY: `handler` is the function the previous sigaction installed, called with the
    // arguments of its kind (three with SA_SIGINFO, else the signal alone), as the kernel
    // would have.
    unsafe {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
                core::mem::transmute(handler);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(i32) = core::mem::transmute(handler);
            f(signal);
        }
    }
}

/// Installs the handler (once per process: it stays when an attached session detaches, and
/// then only hands signals on). Returns false where there is none.
#[cfg(target_os = "linux")]
pub fn install() -> bool {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return true;
    }
    let mut all = true;
    for (i, &signal) in SIGNALS.iter().enumerate() {
        // SAFETY: PREVIOUS[i] is written before the handler that reads it is installed, and
        // `install` runs once; the new sigaction is fully initialized (zeroed, then the
        // handler, flags and an empty mask); sigaction copies both structs.
        unsafe {
            let previous = &mut (*core::ptr::addr_of_mut!(PREVIOUS))[i];
            if libc::sigaction(signal, core::ptr::null(), previous) != 0 {
                all = false;
                continue;
            }
            let mut action: libc::sigaction = core::mem::zeroed();
            action.sa_sigaction = on_termination_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            all &= libc::sigaction(signal, &action, core::ptr::null_mut()) == 0;
        }
    }
    all
}

/// No handler off Linux.
#[cfg(not(target_os = "linux"))]
pub fn install() -> bool {
    let _ = &INSTALLED;
    false
}
