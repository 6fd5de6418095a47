//! Call counters: a counter at a method's entry and one before each call it makes, for exact
//! counts of calls per function and per call site (`clrprof record --mode count`).
//!
//! - **Entry**: code inserted before the method's first instruction that does not take over
//!   its label ([`Method::insert_at_entry`]), so a loop back to the first instruction does
//!   not count again.
//! - **Call sites**: a probe right before every `call`, `callvirt` and `newobj` (before their
//!   prefixes: `constrained.`, `tail.`, ...), taking over the call's label so that every path
//!   to the call runs it. A call site counts when the call is about to be made: calls that
//!   throw (from the callee, or before it is entered) count, code that throws before the call
//!   does not.
//!
//! Two layouts of the counters:
//!
//! - **Per thread** ([`add_thread_call_counters`]): each thread increments its own block of
//!   counters, so counts are exact whatever the threads do and no cache line is shared between
//!   threads. At entry the method finds its thread's block from the address of one of its own
//!   locals (a stack address: threads have disjoint stacks) through a table that has one
//!   `i64` entry per 4 KiB page of the address space (47-bit user addresses: 2^35 entries),
//!   holding the offset of the block of the thread whose stack holds that page from a default
//!   block (entry 0, the default, for pages of no known thread):
//!
//!   ```text
//!   base = block0 + slot + table[(&local mod 2^47) >> 12]
//!   ```
//!
//!   and keeps it in a local; each probe is then `base[k] += 1`. Two locals (`native int`)
//!   are needed: the base, and a local whose address is taken.
//! - **Shared** ([`add_shared_call_counters`]): one counter per site for all threads, a plain
//!   load-add-store at a fixed address ([`counters::increment`]): cheaper, but two threads
//!   counting the same site at the same instant may count once.
//!
//! Either way the increments are plain loads and stores (no atomic instruction, no call), and
//! the max stack grows by [`PROBE_STACK`].

use super::counters::{self, PROBE_STACK};
use super::instruction::{Operand, ldc_i4, op};
use super::method::Method;
use super::opcodes::{Flow, OpCode};
use crate::ids::Token;

/// A call instruction of a method.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Call {
    /// Index of the first instruction of the call: its first prefix, or the call itself.
    pub at: usize,
    /// Index of the `call`, `callvirt` or `newobj` instruction.
    pub index: usize,
    /// Which of the three.
    pub opcode: OpCode,
    /// The method it names (MethodDef, MemberRef or MethodSpec).
    pub token: Token,
}

/// The `call`, `callvirt` and `newobj` instructions of `method`, in code order (`calli` and
/// `jmp` name no method and are left out).
pub fn calls(method: &Method) -> Vec<Call> {
    let ins = &method.instructions;
    let mut out = Vec::new();
    for (index, i) in ins.iter().enumerate() {
        if !matches!(i.opcode, OpCode::CALL | OpCode::CALLVIRT | OpCode::NEWOBJ) {
            continue;
        }
        let Operand::Token(token) = i.operand else {
            continue;
        };
        let mut at = index;
        while at > 0
            && ins[at - 1]
                .opcode
                .info()
                .is_some_and(|info| info.flow == Flow::Prefix)
        {
            at -= 1;
        }
        out.push(Call {
            at,
            index,
            opcode: i.opcode,
            token,
        });
    }
    out
}

/// Where the per-thread counters are, for [`add_thread_call_counters`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ThreadCounters {
    /// Address of the page table: 2^35 `i64` offsets, one per 4 KiB page of the address space.
    pub table: usize,
    /// Address of this method's first counter in the default block (the block of offset 0);
    /// the same counter of another thread is at this address plus the thread's offset.
    pub first: usize,
    /// Index of a `native int` local that holds the base.
    pub base_local: u16,
    /// Index of a `native int` local whose address is taken (its value is not used).
    pub address_local: u16,
}

fn ldloc(index: u16) -> (OpCode, Operand) {
    match u8::try_from(index) {
        Ok(i) => op(OpCode::LDLOC_S, Operand::U1(i)),
        Err(_) => op(OpCode::LDLOC, Operand::U2(index)),
    }
}

fn stloc(index: u16) -> (OpCode, Operand) {
    match u8::try_from(index) {
        Ok(i) => op(OpCode::STLOC_S, Operand::U1(i)),
        Err(_) => op(OpCode::STLOC, Operand::U2(index)),
    }
}

fn ldloca(index: u16) -> (OpCode, Operand) {
    match u8::try_from(index) {
        Ok(i) => op(OpCode::LDLOCA_S, Operand::U1(i)),
        Err(_) => op(OpCode::LDLOCA, Operand::U2(index)),
    }
}

/// The entry code of the per-thread layout: finds the calling thread's counters and keeps
/// their address (this method's first counter) in the base local.
pub fn thread_base(c: &ThreadCounters) -> Vec<(OpCode, Operand)> {
    vec![
        // (&local << 17) >> 29: the page number of a 47-bit address; << 3: its entry.
        ldloca(c.address_local),
        op(OpCode::CONV_U, Operand::None),
        ldc_i4(17),
        op(OpCode::SHL, Operand::None),
        ldc_i4(29),
        op(OpCode::SHR_UN, Operand::None),
        ldc_i4(3),
        op(OpCode::SHL, Operand::None),
        op(OpCode::LDC_I8, Operand::I8(c.table as i64)),
        op(OpCode::CONV_U, Operand::None),
        op(OpCode::ADD, Operand::None),
        op(OpCode::LDIND_I, Operand::None),
        op(OpCode::LDC_I8, Operand::I8(c.first as i64)),
        op(OpCode::CONV_U, Operand::None),
        op(OpCode::ADD, Operand::None),
        stloc(c.base_local),
    ]
}

/// The probe that adds 1 to counter `k` (from 0) of the per-thread layout.
pub fn thread_increment(base_local: u16, k: u32) -> Vec<(OpCode, Operand)> {
    let mut code = vec![ldloc(base_local)];
    if k > 0 {
        code.push(ldc_i4((k * 8) as i32));
        code.push(op(OpCode::ADD, Operand::None));
    }
    code.extend(counters::add_one_at_address());
    code
}

/// Most counters one method may have in the per-thread layout (the offsets of its probes are
/// `i32`): its entry and its call sites.
pub const MAX_COUNTERS: usize = (i32::MAX / 8) as usize;

/// Adds per-thread call counters to `method`: counter 0 counts entries, counter `1 + i` the
/// calls of `calls[i]` (from [`calls`] on `method` before this call). The two locals of
/// `c` must exist (append them to the local signature first, see
/// [`append_local`](super::append_local)).
pub fn add_thread_call_counters(method: &mut Method, calls: &[Call], c: &ThreadCounters) {
    assert!(calls.len() < MAX_COUNTERS, "too many call sites");
    for (i, call) in calls.iter().enumerate().rev() {
        method.insert_before(call.at, thread_increment(c.base_local, i as u32 + 1));
    }
    let mut entry = thread_base(c);
    entry.extend(thread_increment(c.base_local, 0));
    method.insert_at_entry(entry);
    method.max_stack = method.max_stack.saturating_add(PROBE_STACK);
}

/// Adds shared call counters to `method`: `cells[0]` counts entries, `cells[1 + i]` the calls
/// of `calls[i]`, each with a plain increment at its address (see the module documentation).
/// The cells must outlive every compiled version of the method (never freed, in practice).
pub fn add_shared_call_counters(method: &mut Method, calls: &[Call], cells: &[usize]) {
    assert_eq!(
        cells.len(),
        calls.len() + 1,
        "one cell per site and the entry"
    );
    for (call, &cell) in calls.iter().zip(&cells[1..]).rev() {
        method.insert_before(call.at, counters::increment(cell));
    }
    method.insert_at_entry(counters::increment(cells[0]));
    method.max_stack = method.max_stack.saturating_add(PROBE_STACK);
}
