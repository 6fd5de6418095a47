//! The naked trampolines for x86_64 Linux (System V ABI).
//!
//! # The register contract (CoreCLR 3.1 to .NET 10, from the JIT's source, measured on 3.1)
//!
//! The JIT calls the fast-path hooks with an ordinary `call` through a pointer, 16-byte
//! aligned at the call (so `rsp % 16 == 8` on entry), with `rbp` the method's frame pointer:
//!
//! | hook | id in | caller SP in | must survive | may be destroyed |
//! |---|---|---|---|---|
//! | enter | `r14` | `r15` | `rdi rsi rdx rcx r8 r9`, `xmm0`–`xmm7` (all 128 bits), callee-saved | `rax r10 r11`, `xmm8`–`xmm15` |
//! | leave | `rdi` | `rsi` | `rax rdx`, `xmm0 xmm1` (all 128 bits), callee-saved | `rcx rsi rdi r8`–`r11`, `xmm2`–`xmm15` |
//! | tail call | `rdi` | `rsi` | as leave | as leave |
//!
//! (Callee-saved: `rbx rbp r12`–`r15`, which the Rust code called preserves by itself.)
//! Enter runs at the end of the prolog, before the incoming arguments are moved out of their
//! registers; leave runs after the return value is in place. The slow-path `...WithInfo`
//! hooks are called as C functions by the runtime's helper, which on 3.1 does not restore
//! xmm2–xmm7 afterwards, so the wrappers preserve xmm0–xmm7 themselves.
//!
//! Every trampoline: loads its handler from a static (a null handler returns at once, with no
//! register touched but the scratch one), builds an `rbp` frame (so frame-pointer unwinders
//! see through it), saves its set, aligns `rsp` down to 16 bytes whatever it was on entry,
//! calls the C-ABI shim with (id, handler), restores, and returns. No AVX instructions: only
//! legacy SSE `movups`, which leave the upper halves of the ymm registers alone.

use core::arch::naked_asm;

use clrprof_sys::{COR_PRF_ELT_INFO, FunctionIDOrClientID};

use super::{
    ENTER_HANDLER, ENTER_INFO_HANDLER, LEAVE_HANDLER, LEAVE_INFO_HANDLER, TAILCALL_HANDLER,
    TAILCALL_INFO_HANDLER, run_fast_handler, run_info_handler,
};

/// Saves `xmm0`–`xmm7` (128 bits each, legacy SSE `movups`) to the 128 bytes at `rsp`: part
/// of the template of the trampolines that keep every argument register.
macro_rules! save_xmm0_to_xmm7 {
    () => {
        concat!(
            "movups xmmword ptr [rsp], xmm0\n",
            "movups xmmword ptr [rsp + 16], xmm1\n",
            "movups xmmword ptr [rsp + 32], xmm2\n",
            "movups xmmword ptr [rsp + 48], xmm3\n",
            "movups xmmword ptr [rsp + 64], xmm4\n",
            "movups xmmword ptr [rsp + 80], xmm5\n",
            "movups xmmword ptr [rsp + 96], xmm6\n",
            "movups xmmword ptr [rsp + 112], xmm7\n",
        )
    };
}

/// Restores `xmm0`–`xmm7` from the 128 bytes at `rsp`, as `save_xmm0_to_xmm7!` saved them.
macro_rules! restore_xmm0_to_xmm7 {
    () => {
        concat!(
            "movups xmm0, xmmword ptr [rsp]\n",
            "movups xmm1, xmmword ptr [rsp + 16]\n",
            "movups xmm2, xmmword ptr [rsp + 32]\n",
            "movups xmm3, xmmword ptr [rsp + 48]\n",
            "movups xmm4, xmmword ptr [rsp + 64]\n",
            "movups xmm5, xmmword ptr [rsp + 80]\n",
            "movups xmm6, xmmword ptr [rsp + 96]\n",
            "movups xmm7, xmmword ptr [rsp + 112]\n",
        )
    };
}

/// The SDK's fast-path enter hook: calls [`EltHandlers::enter`](super::EltHandlers) with the id
/// found in `r14` and the caller's stack pointer found in `r15`.
///
/// Saves and restores `rdi rsi rdx rcx r8 r9` and `xmm0`–`xmm7` (128 bits each); uses `rax`
/// as scratch; `rbx rbp r12`–`r15` are preserved (the Rust handler keeps them). It realigns the
/// stack itself, so it works at any `rsp`.
///
/// An agent with its own hand-written fast path may `jmp` here (not `call`) on its slow path,
/// with every register and `rsp` as the JIT left them at the hook's entry; `rax`, `r10`, `r11`
/// and `xmm8`–`xmm15` may hold anything.
///
/// # Safety
/// Only for JIT'd code (through `SetEnterLeaveFunctionHooks3`) or a jump from such a hook:
/// the Rust signature is the IDL's, not the real convention (the id is in `r14`).
#[unsafe(naked)]
pub unsafe extern "system" fn enter_trampoline(_function_id_or_client_id: FunctionIDOrClientID) {
    // SAFETY: register contract of the enter hook (see the module documentation). On entry
    // r14 holds the id; rdi, rsi, rdx, rcx, r8, r9 and xmm0-xmm7 hold the method's arguments
    // and are saved before the call into Rust and restored after it; rax is the only other
    // register written before the frame exists, and the JIT lets the hook destroy it (rdi, rsi
    // and rdx, loaded with the shim's arguments, were saved first; r14 and r15 are only read). The
    // frame is an rbp chain, rsp is aligned down to 16 bytes before `call`, and rsp is
    // restored from rbp, so the return address is found whatever alignment we entered with.
    // The handler static is read through the GOT so the code is valid in any shared object.
    naked_asm!(
        "mov rax, qword ptr [rip + {handler}@GOTPCREL]",
        "mov rax, qword ptr [rax]",
        "test rax, rax",
        "jz 2f",
        "push rbp",
        "mov rbp, rsp",
        "push rdi",
        "push rsi",
        "push rdx",
        "push rcx",
        "push r8",
        "push r9",
        "and rsp, -16",
        "sub rsp, 128",
        save_xmm0_to_xmm7!(),
        "mov rdi, r14",
        "mov rsi, r15",
        "mov rdx, rax",
        "call {run}@PLT",
        restore_xmm0_to_xmm7!(),
        "lea rsp, [rbp - 48]",
        "pop r9",
        "pop r8",
        "pop rcx",
        "pop rdx",
        "pop rsi",
        "pop rdi",
        "pop rbp",
        "2:",
        "ret",
        handler = sym ENTER_HANDLER,
        run = sym run_fast_handler,
    )
}

/// Defines a leave-kind fast-path trampoline (leave and tail call share the contract).
macro_rules! leave_kind_trampoline {
    ($(#[$doc:meta])* $name:ident, $handler:ident) => {
        $(#[$doc])*
        ///
        /// Saves and restores `rax`, `rdx`, `xmm0` and `xmm1` (128 bits each); uses `rcx` as
        /// scratch; `rbx rbp r12`–`r15` are preserved (the Rust handler keeps them). It
        /// realigns the stack itself, so it works at any `rsp`.
        ///
        /// An agent with its own hand-written fast path may `jmp` here (not `call`) on its
        /// slow path, with `rdi`, `rsi`, the return registers and `rsp` as the JIT left them at
        /// the hook's entry; `rcx r8`–`r11` and `xmm2`–`xmm15` may hold anything.
        ///
        /// # Safety
        /// Only for JIT'd code (through `SetEnterLeaveFunctionHooks3`) or a jump from such a
        /// hook: it must preserve registers the C ABI does not, and never returns a value.
        #[unsafe(naked)]
        pub unsafe extern "system" fn $name(_function_id_or_client_id: FunctionIDOrClientID) {
            // SAFETY: register contract of the leave and tail-call hooks (see the module
            // documentation). On entry rdi holds the id and rsi the caller's stack pointer,
            // which are already the shim's first two arguments; rax, rdx (integer return
            // registers) and xmm0, xmm1 (floating-point return registers) are saved before the
            // call into Rust and restored after it (rdx carries the handler only after it was
            // saved); rcx is the only other register written, and the JIT lets the hook
            // destroy it.
            // Frame, alignment and GOT access as in `enter_trampoline`.
            naked_asm!(
                "mov rcx, qword ptr [rip + {handler}@GOTPCREL]",
                "mov rcx, qword ptr [rcx]",
                "test rcx, rcx",
                "jz 2f",
                "push rbp",
                "mov rbp, rsp",
                "push rax",
                "push rdx",
                "mov rdx, rcx",
                "and rsp, -16",
                "sub rsp, 32",
                "movups xmmword ptr [rsp], xmm0",
                "movups xmmword ptr [rsp + 16], xmm1",
                "call {run}@PLT",
                "movups xmm0, xmmword ptr [rsp]",
                "movups xmm1, xmmword ptr [rsp + 16]",
                "lea rsp, [rbp - 16]",
                "pop rdx",
                "pop rax",
                "pop rbp",
                "2:",
                "ret",
                handler = sym $handler,
                run = sym run_fast_handler,
            )
        }
    };
}

leave_kind_trampoline!(
    /// The SDK's fast-path leave hook: calls [`EltHandlers::leave`](super::EltHandlers) with
    /// the id found in `rdi` and the caller's stack pointer found in `rsi`.
    leave_trampoline,
    LEAVE_HANDLER
);

leave_kind_trampoline!(
    /// The SDK's fast-path tail-call hook: calls [`EltHandlers::tailcall`](super::EltHandlers)
    /// with the id found in `rdi` and the caller's stack pointer found in `rsi`.
    tailcall_trampoline,
    TAILCALL_HANDLER
);

/// Defines a slow-path wrapper: a C-ABI function that also preserves xmm0-xmm7.
macro_rules! with_info_wrapper {
    ($(#[$doc:meta])* $name:ident, $handler:ident) => {
        $(#[$doc])*
        ///
        /// A C-ABI function of the `...WithInfo` hook signature that additionally preserves
        /// `xmm0`–`xmm7` (128 bits each), which the runtime's helper on .NET Core 3.1 does not
        /// restore after the call. It realigns the stack itself.
        ///
        /// # Safety
        /// Only for the runtime (through `SetEnterLeaveFunctionHooks3WithInfo`): the handler
        /// it calls may ask the runtime about `elt_info`, which must be the runtime's.
        #[unsafe(naked)]
        pub unsafe extern "system" fn $name(
            _function_id_or_client_id: FunctionIDOrClientID,
            _elt_info: COR_PRF_ELT_INFO,
        ) {
            // SAFETY: a C-ABI function. rdi (id) and rsi (ELT info) are passed on unchanged as
            // the shim's first two arguments and the handler goes in rdx, all three
            // caller-saved. xmm0-xmm7 are saved before the call into Rust and restored after
            // it; callee-saved registers are kept by the Rust code and rbp by our frame.
            // Frame, alignment and GOT access as in `enter_trampoline`.
            naked_asm!(
                "mov rdx, qword ptr [rip + {handler}@GOTPCREL]",
                "mov rdx, qword ptr [rdx]",
                "test rdx, rdx",
                "jz 2f",
                "push rbp",
                "mov rbp, rsp",
                "and rsp, -16",
                "sub rsp, 128",
                save_xmm0_to_xmm7!(),
                "call {run}@PLT",
                restore_xmm0_to_xmm7!(),
                "mov rsp, rbp",
                "pop rbp",
                "2:",
                "ret",
                handler = sym $handler,
                run = sym run_info_handler,
            )
        }
    };
}

with_info_wrapper!(
    /// The SDK's slow-path enter hook: calls [`EltInfoHandlers::enter`](super::EltInfoHandlers).
    enter_with_info_wrapper,
    ENTER_INFO_HANDLER
);

with_info_wrapper!(
    /// The SDK's slow-path leave hook: calls [`EltInfoHandlers::leave`](super::EltInfoHandlers).
    leave_with_info_wrapper,
    LEAVE_INFO_HANDLER
);

with_info_wrapper!(
    /// The SDK's slow-path tail-call hook: calls
    /// [`EltInfoHandlers::tailcall`](super::EltInfoHandlers).
    tailcall_with_info_wrapper,
    TAILCALL_INFO_HANDLER
);

/// A hook that returns at once: no load, no call, nothing but `ret`.
///
/// Registered for enter, leave and tail call (see [`install_noop_hooks`](super::install_noop_hooks)),
/// it measures what the runtime's enter/leave instrumentation costs by itself (the call sites
/// the JIT emits, the frames it must keep, the precompiled code it stops using): the floor under
/// any profiler built on these hooks.
///
/// # Safety
/// Only for the runtime to call (through `SetEnterLeaveFunctionHooks3`); it does nothing.
#[unsafe(naked)]
pub unsafe extern "system" fn noop_hook(_function_id_or_client_id: FunctionIDOrClientID) {
    // SAFETY: touches no register and no memory: it satisfies every hook contract.
    naked_asm!("ret")
}

#[cfg(test)]
mod tests;
