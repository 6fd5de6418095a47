//! The signal that asks for a heap snapshot while recording (`kill -USR2 <pid>`).
//!
//! The handler only counts the request in an atomic and wakes the agent's heap thread with a
//! futex (both async-signal-safe); the heap thread does the work (`heap.rs`).

use core::sync::atomic::{AtomicBool, AtomicU32};

/// The signal: `SIGUSR2` (the runtime uses `SIGRTMIN` and the fault signals, not this one).
#[cfg(unix)]
pub const SNAPSHOT_SIGNAL: i32 = libc::SIGUSR2;

/// Requests received so far.
pub static REQUESTS: AtomicU32 = AtomicU32::new(0);
/// The heap thread's futex word: bumped by every request and by the agent when the heap
/// thread has other work (turning the runtime's heap walk on or off), see [`wake`].
pub static WAKE: AtomicU32 = AtomicU32::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

#[cfg(target_os = "linux")]
extern "C" fn on_snapshot_signal(_signal: i32) {
    REQUESTS.fetch_add(1, core::sync::atomic::Ordering::AcqRel);
    wake();
}

/// Wakes the heap thread (async-signal-safe: an atomic and a futex system call).
pub fn wake() {
    WAKE.fetch_add(1, core::sync::atomic::Ordering::AcqRel);
    super::sys::futex_wake(&WAKE);
}

/// Installs the handler (once). Returns false where there is none.
#[cfg(target_os = "linux")]
pub fn install() -> bool {
    if INSTALLED.swap(true, core::sync::atomic::Ordering::AcqRel) {
        return true;
    }
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; we fill in the
    // handler and flags, and sigaction copies the struct. The handler only touches an atomic
    // and makes a futex system call, which are async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = on_snapshot_signal as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(SNAPSHOT_SIGNAL, &action, core::ptr::null_mut()) == 0
    }
}

/// No snapshot signal off Linux.
#[cfg(not(target_os = "linux"))]
pub fn install() -> bool {
    let _ = &INSTALLED;
    false
}
