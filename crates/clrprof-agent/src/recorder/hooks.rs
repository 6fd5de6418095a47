//! Trace mode's enter/leave/tailcall hooks: hand-written fast paths over the CCT.
//!
//! The runtime calls these straight from JIT-compiled code (no wrapper) with a register
//! contract stricter than the C ABI (see `docs/cpu-profiling.md`):
//! - enter: the function id in r14, the caller's stack pointer in r15; the method's argument
//!   registers are live, so only rax, r10 and r11 (and xmm8-15) may be changed;
//! - leave and tailcall: the id in rdi, the caller's stack pointer in rsi; the return value is
//!   live in rax, rdx, xmm0 and xmm1, so only rcx, rsi, rdi and r8-r11 may be changed.
//!
//! The fast paths below stay inside those registers and touch no stack: enter finds the child
//! node through the parent's `last_child` (or, when the parent alternates between callees, the
//! thread's child cache), pushes the caller SP on the shadow stack, counts the call and moves
//! `current`; leave checks the top frame
//! (same function, same caller SP) and moves back. Anything else — a thread's first call, a
//! new call path, a full shadow stack, a mismatch — jumps to the SDK's trampolines, which save
//! every live register and call [`enter_slow`] / [`leave_slow`] in Rust with (id, caller SP).

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use core::arch::naked_asm;

    /// The enter hook (FunctionEnter3 fast path).
    #[unsafe(naked)]
    pub unsafe extern "system" fn enter_fast(_function: usize) {
        // SAFETY: register contract above: reads r14/r15, writes only rax, r10, r11 and flags;
        // every memory access is to this thread's state and nodes, valid while the pointers
        // are non-null; the slow path is a tail jump with all other registers untouched.
        naked_asm!(
            "mov rax, qword ptr [rip + clrprof_tls_thread_state@GOTTPOFF]",
            "mov rax, qword ptr fs:[rax]",
            "test rax, rax",
            "jz 9f",
            "mov r10, qword ptr [rax]",        // current node
            "cmp qword ptr [r10 + 32], r14",   // is the function its last-entered child's?
            "jne 2f",
            "mov r11, qword ptr [r10 + 24]",   // that child
            "jmp 4f",
            "2:",
            // The child cache, two-way set-associative: entry i = ((parent ^ rotl(function, r))
            // * M) >> (64 - bits), then i ^ 1; 32 bytes each (the same hash as
            // `cct::child_cache_index`).
            "mov r11, r14",
            "rol r11, {rotation}",
            "xor r11, r10",
            "imul r11, qword ptr [rip + {multiplier}]",
            "shr r11, {shift}",
            "shl r11, 5",
            "add r11, qword ptr [rax + 24]",
            "cmp qword ptr [r11], r10",        // same parent?
            "jne 6f",
            "cmp qword ptr [r11 + 8], r14",    // same function?
            "je 7f",
            "6:",
            "xor r11, 32",                     // the set's other way, in the same cache line
            "cmp qword ptr [r11], r10",
            "jne 9f",
            "cmp qword ptr [r11 + 8], r14",
            "jne 9f",
            "7:",
            "mov r11, qword ptr [r11 + 16]",   // the child
            "mov qword ptr [r10 + 24], r11",   // remember it
            "mov qword ptr [r10 + 32], r14",
            "4:",
            "mov r10, qword ptr [rax + 8]",    // shadow stack top
            "cmp r10, qword ptr [rax + 16]",   // room left?
            "jae 9f",
            "add r10, 8",
            "mov qword ptr [r10], r15",        // push the caller SP
            "mov qword ptr [rax + 8], r10",
            "inc qword ptr [r11 + 16]",        // count the call
            "mov qword ptr [rax], r11",        // enter the child
            "ret",
            "9:",
            "jmp {slow}",
            slow = sym clrprof_sdk::elt::enter_trampoline,
            multiplier = sym super::super::cct::CHILD_CACHE_MULTIPLIER,
            rotation = const super::super::cct::CHILD_CACHE_ROTATION,
            shift = const 64 - super::super::cct::CHILD_CACHE_BITS,
        )
    }

    /// The leave and tailcall hook (FunctionLeave3 / FunctionTailcall3 fast path).
    #[unsafe(naked)]
    pub unsafe extern "system" fn leave_fast(_function: usize) {
        // SAFETY: register contract above: reads rdi/rsi, writes only rcx, r8, r9 and flags;
        // memory accesses as in `enter_fast`; the slow path is a tail jump with rdi/rsi and
        // the return registers untouched.
        naked_asm!(
            "mov rcx, qword ptr [rip + clrprof_tls_thread_state@GOTTPOFF]",
            "mov rcx, qword ptr fs:[rcx]",
            "test rcx, rcx",
            "jz 8f",
            "mov r8, qword ptr [rcx + 8]",     // shadow stack top
            "cmp qword ptr [r8], rsi",         // same frame?
            "jne 9f",
            "mov r9, qword ptr [rcx]",         // current node
            "cmp qword ptr [r9], rdi",         // same function?
            "jne 9f",
            "sub r8, 8",
            "mov qword ptr [rcx + 8], r8",
            "mov r9, qword ptr [r9 + 8]",      // back to the parent
            "mov qword ptr [rcx], r9",
            "8:",
            "ret",
            "9:",
            "jmp {slow}",
            slow = sym clrprof_sdk::elt::leave_trampoline,
        )
    }

    /// The hooks to register with SetEnterLeaveFunctionHooks3.
    pub fn fast_hooks() -> Option<super::Hooks> {
        Some((enter_fast, leave_fast, leave_fast))
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    /// Trace mode's hooks exist only on x86-64 Linux.
    pub fn fast_hooks() -> Option<super::Hooks> {
        None
    }
}

pub use imp::fast_hooks;

use clrprof_sdk::sys::{FunctionEnter3, FunctionLeave3, FunctionTailcall3};

use super::cct;

/// The (enter, leave, tailcall) hooks.
pub type Hooks = (FunctionEnter3, FunctionLeave3, FunctionTailcall3);

/// Slow path of enter, reached through the SDK's register-saving trampoline.
pub fn enter_slow(function: usize, caller_sp: usize) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(state) = cct::state_for_current_thread() {
            state.enter(function, caller_sp);
        }
    });
}

/// Slow path of leave and tailcall, reached through the SDK's register-saving trampoline.
pub fn leave_slow(function: usize, caller_sp: usize) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(state) = cct::current_state() {
            state.leave(function, caller_sp);
        }
    });
}

/// Registers the hand-written fast hooks with the runtime, with the SDK's register-saving
/// trampolines (calling [`enter_slow`] / [`leave_slow`]) as their slow path.
pub fn install(info: &clrprof_sdk::ProfilerInfo) -> clrprof_sdk::Result<()> {
    use clrprof_sdk::elt;
    let Some((enter, leave, tailcall)) = fast_hooks() else {
        return Err(clrprof_sdk::Error::InvalidData {
            context: "trace mode",
            reason: "enter/leave hooks exist only on Linux x86-64".into(),
        });
    };
    elt::set_handlers(elt::EltHandlers {
        enter: Some(|id, sp| enter_slow(id.0, sp.0)),
        leave: Some(|id, sp| leave_slow(id.0, sp.0)),
        tailcall: Some(|id, sp| leave_slow(id.0, sp.0)),
    });
    // SAFETY: the three hooks are the naked fast paths above, written to the runtime's
    // enter/leave/tailcall register contracts; each falls back to an SDK trampoline.
    unsafe { info.set_enter_leave_function_hooks3(Some(enter), Some(leave), Some(tailcall)) }
}
