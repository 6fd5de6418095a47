//! The process's exit status: glibc's `on_exit` hands the handlers it runs the status passed
//! to `exit` (returning from `main` included), which no profiler callback tells.

use std::sync::OnceLock;

/// What runs at exit, with the exit status.
static AT_EXIT: OnceLock<fn(i32)> = OnceLock::new();

/// Runs `f` with the exit status when the process calls `exit` (or returns from `main`);
/// not when it is killed, crashes or calls `_exit`. Only the first call registers anything.
/// Returns whether `f` will run.
pub fn on_exit(f: fn(i32)) -> bool {
    if AT_EXIT.set(f).is_err() {
        return false;
    }
    register()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn register() -> bool {
    unsafe extern "C" {
        fn on_exit(
            function: extern "C" fn(status: libc::c_int, arg: *mut libc::c_void),
            arg: *mut libc::c_void,
        ) -> libc::c_int;
    }
    // SAFETY: glibc's `on_exit(3)` takes a function of this signature and an argument it
    // passes back untouched; `at_exit` ignores the argument, so a null pointer is fine.
    unsafe { on_exit(at_exit, std::ptr::null_mut()) == 0 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn register() -> bool {
    false
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn at_exit(status: libc::c_int, _arg: *mut libc::c_void) {
    // A panic must not unwind into libc's exit.
    let _ = std::panic::catch_unwind(|| {
        if let Some(f) = AT_EXIT.get() {
            f(status);
        }
    });
}
