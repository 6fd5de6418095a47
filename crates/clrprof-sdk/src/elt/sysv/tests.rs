//! Proves the register contract of every trampoline without a runtime: a harness loads known
//! values into every register, calls the trampoline like JIT'd code would (aligned, and
//! deliberately misaligned), and records every register afterwards; the handler destroys
//! every register the C ABI lets it destroy.

use core::arch::{asm, naked_asm};
use core::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::super::*;
use super::*;

/// Registers before or after a call. `gpr` is indexed by the hardware encoding (rax 0, rcx 1,
/// rdx 2, rbx 3, rsp 4, rbp 5, rsi 6, rdi 7, r8 8 ... r15 15); slot 4 (rsp) receives the
/// stack pointer after the call and slot 5 (rbp) the stack pointer just before it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Regs {
    gpr: [u64; 16],
    xmm: [[u64; 2]; 16],
}

const RAX: usize = 0;
const RCX: usize = 1;
const RDX: usize = 2;
const RBX: usize = 3;
const RSP_AFTER: usize = 4;
const RSP_BEFORE: usize = 5;
const RSI: usize = 6;
const RDI: usize = 7;
const R8: usize = 8;
const R9: usize = 9;
const R12: usize = 12;
const R13: usize = 13;
const R14: usize = 14;
const R15: usize = 15;

/// Loads `input` into every register, calls `target` with `rsp` 16-byte aligned minus
/// `misalign` at the call, and stores every register into `output`.
///
/// # Safety
/// `target` must return normally preserving rbp and rsp; `input`/`output` must be valid.
#[unsafe(naked)]
unsafe extern "C" fn call_with_regs(
    _target: usize,
    _input: *const Regs,
    _output: *mut Regs,
    _misalign: usize,
) {
    // SAFETY: test harness. Saves the callee-saved registers, keeps target and output in its
    // rbp frame (rbp survives the call: the code under test must preserve it), and restores
    // everything before returning.
    naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "push rdx",
        "push rdi",
        "sub rsp, 8",
        "sub rsp, rcx",
        "mov qword ptr [rdx + 40], rsp",
        "movups xmm0, xmmword ptr [rsi + 128]",
        "movups xmm1, xmmword ptr [rsi + 144]",
        "movups xmm2, xmmword ptr [rsi + 160]",
        "movups xmm3, xmmword ptr [rsi + 176]",
        "movups xmm4, xmmword ptr [rsi + 192]",
        "movups xmm5, xmmword ptr [rsi + 208]",
        "movups xmm6, xmmword ptr [rsi + 224]",
        "movups xmm7, xmmword ptr [rsi + 240]",
        "movups xmm8, xmmword ptr [rsi + 256]",
        "movups xmm9, xmmword ptr [rsi + 272]",
        "movups xmm10, xmmword ptr [rsi + 288]",
        "movups xmm11, xmmword ptr [rsi + 304]",
        "movups xmm12, xmmword ptr [rsi + 320]",
        "movups xmm13, xmmword ptr [rsi + 336]",
        "movups xmm14, xmmword ptr [rsi + 352]",
        "movups xmm15, xmmword ptr [rsi + 368]",
        "mov rax, qword ptr [rsi + 0]",
        "mov rcx, qword ptr [rsi + 8]",
        "mov rdx, qword ptr [rsi + 16]",
        "mov rbx, qword ptr [rsi + 24]",
        "mov rdi, qword ptr [rsi + 56]",
        "mov r8, qword ptr [rsi + 64]",
        "mov r9, qword ptr [rsi + 72]",
        "mov r10, qword ptr [rsi + 80]",
        "mov r11, qword ptr [rsi + 88]",
        "mov r12, qword ptr [rsi + 96]",
        "mov r13, qword ptr [rsi + 104]",
        "mov r14, qword ptr [rsi + 112]",
        "mov r15, qword ptr [rsi + 120]",
        "mov rsi, qword ptr [rsi + 48]",
        "call qword ptr [rbp - 56]",
        "push rax",
        "mov rax, qword ptr [rbp - 48]",
        "mov qword ptr [rax + 8], rcx",
        "mov qword ptr [rax + 16], rdx",
        "mov qword ptr [rax + 24], rbx",
        "mov qword ptr [rax + 48], rsi",
        "mov qword ptr [rax + 56], rdi",
        "mov qword ptr [rax + 64], r8",
        "mov qword ptr [rax + 72], r9",
        "mov qword ptr [rax + 80], r10",
        "mov qword ptr [rax + 88], r11",
        "mov qword ptr [rax + 96], r12",
        "mov qword ptr [rax + 104], r13",
        "mov qword ptr [rax + 112], r14",
        "mov qword ptr [rax + 120], r15",
        "movups xmmword ptr [rax + 128], xmm0",
        "movups xmmword ptr [rax + 144], xmm1",
        "movups xmmword ptr [rax + 160], xmm2",
        "movups xmmword ptr [rax + 176], xmm3",
        "movups xmmword ptr [rax + 192], xmm4",
        "movups xmmword ptr [rax + 208], xmm5",
        "movups xmmword ptr [rax + 224], xmm6",
        "movups xmmword ptr [rax + 240], xmm7",
        "movups xmmword ptr [rax + 256], xmm8",
        "movups xmmword ptr [rax + 272], xmm9",
        "movups xmmword ptr [rax + 288], xmm10",
        "movups xmmword ptr [rax + 304], xmm11",
        "movups xmmword ptr [rax + 320], xmm12",
        "movups xmmword ptr [rax + 336], xmm13",
        "movups xmmword ptr [rax + 352], xmm14",
        "movups xmmword ptr [rax + 368], xmm15",
        "pop rbx",
        "mov qword ptr [rax + 0], rbx",
        "mov qword ptr [rax + 32], rsp",
        "lea rsp, [rbp - 40]",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
    )
}

/// Returns `rsp` as it is on entry to this function (pointing at the return address).
#[unsafe(naked)]
extern "C" fn rsp_at_entry() -> usize {
    // SAFETY: reads rsp into the return register; touches nothing else.
    naked_asm!("mov rax, rsp", "ret")
}

/// Serializes the tests: they share the handler statics.
static LOCK: Mutex<()> = Mutex::new(());
static LAST_ID: AtomicUsize = AtomicUsize::new(0);
static LAST_SP: AtomicUsize = AtomicUsize::new(0);
static LAST_ELT: AtomicUsize = AtomicUsize::new(0);
static CALLEE_RSP: AtomicUsize = AtomicUsize::new(0);
const GARBAGE: u64 = 0x5a5a_5a5a_5a5a_5a5a;

/// Destroys every register the C ABI lets a function destroy.
fn clobber_everything_volatile() {
    // SAFETY: writes only registers declared clobbered by `clobber_abi("C")`.
    unsafe {
        asm!(
            "mov rax, {garbage}",
            "mov rcx, rax",
            "mov rdx, rax",
            "mov rsi, rax",
            "mov rdi, rax",
            "mov r8, rax",
            "mov r9, rax",
            "mov r10, rax",
            "mov r11, rax",
            "pcmpeqd xmm0, xmm0",
            "pcmpeqd xmm1, xmm1",
            "pcmpeqd xmm2, xmm2",
            "pcmpeqd xmm3, xmm3",
            "pcmpeqd xmm4, xmm4",
            "pcmpeqd xmm5, xmm5",
            "pcmpeqd xmm6, xmm6",
            "pcmpeqd xmm7, xmm7",
            "pcmpeqd xmm8, xmm8",
            "pcmpeqd xmm9, xmm9",
            "pcmpeqd xmm10, xmm10",
            "pcmpeqd xmm11, xmm11",
            "pcmpeqd xmm12, xmm12",
            "pcmpeqd xmm13, xmm13",
            "pcmpeqd xmm14, xmm14",
            "pcmpeqd xmm15, xmm15",
            garbage = const GARBAGE,
            clobber_abi("C"),
        )
    }
}

fn fast_handler(id: ClientId, sp: CallerSp) {
    LAST_ID.store(id.0, Ordering::SeqCst);
    LAST_SP.store(sp.0, Ordering::SeqCst);
    CALLEE_RSP.store(rsp_at_entry(), Ordering::SeqCst);
    clobber_everything_volatile();
}

fn panicking_handler(id: ClientId, _sp: CallerSp) {
    LAST_ID.store(id.0, Ordering::SeqCst);
    clobber_everything_volatile();
    panic!("handler panic (expected by the test)");
}

fn info_handler(id: ClientId, elt: EltInfo) {
    LAST_ID.store(id.0, Ordering::SeqCst);
    LAST_ELT.store(elt.0, Ordering::SeqCst);
    CALLEE_RSP.store(rsp_at_entry(), Ordering::SeqCst);
    clobber_everything_volatile();
}

/// Distinct values in every register.
fn pattern() -> Regs {
    let mut r = Regs::default();
    for (i, g) in r.gpr.iter_mut().enumerate() {
        *g = (i as u64 + 1).wrapping_mul(0x1111_1111_1111_1111) ^ 0x0123_4567;
    }
    for (i, x) in r.xmm.iter_mut().enumerate() {
        // High halves differ from low halves, so a 64-bit-only save would be caught.
        x[0] = 0x4059_0000_0000_0000 + i as u64; // ~100.0 as f64, varied
        x[1] = 0xC0DE_0000_0000_0000 | ((i as u64) << 8);
    }
    r
}

fn call(target: usize, input: &Regs, misalign: usize) -> Regs {
    let mut out = Regs::default();
    // SAFETY: `target` is one of the trampolines under test, which return normally and
    // preserve rbp and rsp (that is what is being tested; a failure would crash the test).
    unsafe { call_with_regs(target, input, &mut out, misalign) };
    out
}

#[track_caller]
fn assert_kept(input: &Regs, out: &Regs, gprs: &[usize], xmms: core::ops::Range<usize>) {
    for &g in gprs {
        assert_eq!(out.gpr[g], input.gpr[g], "gpr {g} not preserved");
    }
    for x in xmms {
        assert_eq!(out.xmm[x], input.xmm[x], "xmm{x} not preserved");
    }
    assert_eq!(out.gpr[RSP_AFTER], out.gpr[RSP_BEFORE], "rsp not restored");
}

const CALLEE_SAVED: [usize; 5] = [RBX, R12, R13, R14, R15];

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn enter_trampoline_keeps_arguments_and_passes_r14() {
    let _guard = lock();
    store_fast(&ENTER_HANDLER, Some(fast_handler));
    let mut input = pattern();
    input.gpr[R14] = 0xE17E_0001;
    input.gpr[R15] = 0x7FFE_5000;
    input.gpr[RDI] = 0xBAD; // the id is in r14, not rdi
    for misalign in [0, 8] {
        LAST_ID.store(0, Ordering::SeqCst);
        let out = call(enter_trampoline as *const () as usize, &input, misalign);
        assert_eq!(LAST_ID.load(Ordering::SeqCst), 0xE17E_0001);
        assert_eq!(
            LAST_SP.load(Ordering::SeqCst),
            0x7FFE_5000,
            "caller SP from r15"
        );
        assert_eq!(
            CALLEE_RSP.load(Ordering::SeqCst) % 16,
            8,
            "misaligned call into Rust"
        );
        assert_kept(&input, &out, &[RCX, RDX, RSI, RDI, R8, R9], 0..8);
        assert_kept(&input, &out, &CALLEE_SAVED, 0..0);
        // Control: the handler really destroyed what enter may lose, and the harness sees it.
        assert_eq!(out.xmm[8], [u64::MAX, u64::MAX]);
    }
    store_fast(&ENTER_HANDLER, None);
}

#[test]
fn leave_and_tailcall_trampolines_keep_return_registers_and_pass_rdi() {
    let _guard = lock();
    for (slot, target) in [
        (&LEAVE_HANDLER, leave_trampoline as *const () as usize),
        (&TAILCALL_HANDLER, tailcall_trampoline as *const () as usize),
    ] {
        store_fast(slot, Some(fast_handler));
        let mut input = pattern();
        input.gpr[RDI] = 0x1EAE_0002;
        input.gpr[RSI] = 0x7FFE_6000;
        input.gpr[R14] = 0xBAD; // r14 often still holds the enter id: must not be used
        for misalign in [0, 8] {
            LAST_ID.store(0, Ordering::SeqCst);
            let out = call(target, &input, misalign);
            assert_eq!(LAST_ID.load(Ordering::SeqCst), 0x1EAE_0002);
            assert_eq!(
                LAST_SP.load(Ordering::SeqCst),
                0x7FFE_6000,
                "caller SP from rsi"
            );
            assert_eq!(CALLEE_RSP.load(Ordering::SeqCst) % 16, 8);
            assert_kept(&input, &out, &[RAX, RDX], 0..2);
            assert_kept(&input, &out, &CALLEE_SAVED, 0..0);
            assert_eq!(out.xmm[2], [u64::MAX, u64::MAX]);
        }
        store_fast(slot, None);
    }
}

#[test]
fn null_handlers_return_at_once() {
    let _guard = lock();
    store_fast(&ENTER_HANDLER, None);
    store_fast(&LEAVE_HANDLER, None);
    store_fast(&TAILCALL_HANDLER, None);
    store_info(&ENTER_INFO_HANDLER, None);
    let input = pattern();
    let all_but = |scratch: usize| -> Vec<usize> {
        (0..16)
            .filter(|&g| g != scratch && g != RSP_AFTER && g != RSP_BEFORE)
            .collect()
    };
    let out = call(enter_trampoline as *const () as usize, &input, 0);
    assert_kept(&input, &out, &all_but(RAX), 0..16);
    let out = call(leave_trampoline as *const () as usize, &input, 0);
    assert_kept(&input, &out, &all_but(RCX), 0..16);
    let out = call(tailcall_trampoline as *const () as usize, &input, 8);
    assert_kept(&input, &out, &all_but(RCX), 0..16);
    let out = call(enter_with_info_wrapper as *const () as usize, &input, 0);
    assert_kept(&input, &out, &all_but(RDX), 0..16);
}

#[test]
fn with_info_wrappers_keep_xmm0_to_7_and_pass_id_and_elt() {
    let _guard = lock();
    for (slot, target) in [
        (
            &ENTER_INFO_HANDLER,
            enter_with_info_wrapper as *const () as usize,
        ),
        (
            &LEAVE_INFO_HANDLER,
            leave_with_info_wrapper as *const () as usize,
        ),
        (
            &TAILCALL_INFO_HANDLER,
            tailcall_with_info_wrapper as *const () as usize,
        ),
    ] {
        store_info(slot, Some(info_handler));
        let mut input = pattern();
        input.gpr[RDI] = 0x1D_0003;
        input.gpr[RSI] = 0xE170_0004;
        for misalign in [0, 8] {
            let out = call(target, &input, misalign);
            assert_eq!(LAST_ID.load(Ordering::SeqCst), 0x1D_0003);
            assert_eq!(LAST_ELT.load(Ordering::SeqCst), 0xE170_0004);
            assert_eq!(CALLEE_RSP.load(Ordering::SeqCst) % 16, 8);
            assert_kept(&input, &out, &CALLEE_SAVED, 0..8);
            assert_eq!(out.xmm[8], [u64::MAX, u64::MAX]);
        }
        store_info(slot, None);
    }
}

#[test]
fn a_panicking_handler_is_caught_and_registers_survive() {
    let _guard = lock();
    store_fast(&LEAVE_HANDLER, Some(panicking_handler));
    let mut input = pattern();
    input.gpr[RDI] = 0x9A41C;
    let before = stats().handler_panics;
    let out = call(leave_trampoline as *const () as usize, &input, 0);
    assert_eq!(stats().handler_panics, before + 1);
    assert_eq!(LAST_ID.load(Ordering::SeqCst), 0x9A41C);
    assert_kept(&input, &out, &[RAX, RDX], 0..2);
    assert_kept(&input, &out, &CALLEE_SAVED, 0..0);
    store_fast(&LEAVE_HANDLER, None);
}
