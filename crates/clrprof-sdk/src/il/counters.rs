//! Block counters: a probe at the start of every basic block that adds 1 to a `u64` in
//! memory the profiler owns, for coverage and block profiling.
//!
//! The probe is `ldc.i8 <counter address>; conv.u; dup; ldind.i8; ldc.i4.1; conv.i8; add;
//! stind.i8`: no call, no metadata token (so it needs no metadata changes and works in any
//! module), nothing the program can observe. It needs 3 stack slots on top of what the block
//! starts with, so the body's max stack grows by 3. The increment is a plain load-add-store,
//! not an atomic one: two threads entering the same block at the same instant may count once.
//! Single-threaded code counts exactly.
//!
//! A block counts how many times control entered it at its first instruction, whether it then
//! ran to its end or left early by an exception. The `ret` after a `tail.`-prefixed call can
//! have no probe of its own (nothing may come between them): it belongs to the block of the
//! call.

use std::sync::atomic::AtomicU64;

use super::IlError;
use super::blocks::{BasicBlock, basic_blocks};
use super::instruction::{Operand, ldc_i4, op};
use super::method::Method;
use super::opcodes::OpCode;

/// Stack slots a counter probe needs on top of what its block starts with.
pub const PROBE_STACK: u16 = 3;

/// The blocks of `method` that get a probe: its basic blocks, except that a `ret` right after
/// a `tail.`-prefixed call stays in the call's block.
pub fn probed_blocks(method: &Method) -> Vec<BasicBlock> {
    let mut out: Vec<BasicBlock> = Vec::new();
    for b in basic_blocks(method) {
        let after_tail_call = b.start >= 2
            && method.instructions[b.start].opcode == OpCode::RET
            && method.instructions[b.start - 2].opcode == OpCode::TAIL;
        match out.last_mut() {
            Some(last) if after_tail_call => last.end = b.end,
            _ => out.push(b),
        }
    }
    out
}

/// The IL range (start, end offsets in the decoded body) of each block of an unmodified
/// `method`.
pub fn block_ranges(method: &Method, blocks: &[BasicBlock]) -> Result<Vec<(u32, u32)>, IlError> {
    let code_end = method.clone().layout()?.code_size;
    let offset = |i: usize| {
        method
            .instructions
            .get(i)
            .and_then(|ins| ins.original_offset)
            .unwrap_or(code_end)
    };
    Ok(blocks
        .iter()
        .map(|b| (offset(b.start), offset(b.end)))
        .collect())
}

/// The probe that increments the counter at `address`.
pub fn increment(address: usize) -> [(OpCode, Operand); 8] {
    let [dup, load, one, widen, add, store] = add_one_at_address();
    [
        op(OpCode::LDC_I8, Operand::I8(address as i64)),
        op(OpCode::CONV_U, Operand::None),
        dup,
        load,
        one,
        widen,
        add,
        store,
    ]
}

/// Adds 1 to the `i64` counter whose address is on top of the stack (and pops the address):
/// `dup; ldind.i8; ldc.i4.1; conv.i8; add; stind.i8`, a plain load-add-store.
pub(crate) fn add_one_at_address() -> [(OpCode, Operand); 6] {
    [
        op(OpCode::DUP, Operand::None),
        op(OpCode::LDIND_I8, Operand::None),
        ldc_i4(1),
        op(OpCode::CONV_I8, Operand::None),
        op(OpCode::ADD, Operand::None),
        op(OpCode::STIND_I8, Operand::None),
    ]
}

/// Inserts at the start of each of `blocks` (of `method` before this call) a probe that
/// increments the matching counter, and raises the max stack by [`PROBE_STACK`].
///
/// The counters must outlive every compiled version of the method: in practice, memory that
/// is never freed (`Box::leak`).
pub fn add_block_counters(
    method: &mut Method,
    blocks: &[BasicBlock],
    counters: &'static [AtomicU64],
) {
    assert_eq!(blocks.len(), counters.len(), "one counter per block");
    for (b, counter) in blocks.iter().zip(counters).rev() {
        method.insert_before(b.start, increment(counter.as_ptr() as usize));
    }
    method.max_stack = method.max_stack.saturating_add(PROBE_STACK);
}

/// `n` zeroed counters that are never freed.
pub fn leak_counters(n: usize) -> &'static [AtomicU64] {
    Box::leak((0..n).map(|_| AtomicU64::new(0)).collect())
}
