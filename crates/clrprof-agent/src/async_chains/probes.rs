//! The IL of the probes in a state machine's `MoveNext`.
//!
//! At entry (before the first instruction, which keeps its label):
//!
//! ```text
//! ldarg.0                      // the state machine (a reference, or the address of a struct)
//! ldarg.0
//! ldfld   <chain field>        // 0 on its first run
//! ldc.i4  <async method index>
//! ldloca  <saved>
//! conv.u
//! ldc.i8  <async_enter>
//! conv.i
//! calli   unmanaged cdecl uint32(uint32, uint32, native int)
//! stfld   <chain field>
//! ```
//!
//! and before every `ret` (taking over its label, so every path to it runs the probe):
//!
//! ```text
//! ldloc   <saved>
//! ldc.i8  <async_leave>
//! conv.i
//! calli   unmanaged cdecl void(uint64)
//! ```
//!
//! A compiler's `MoveNext` catches every exception of the method's body (they go to the
//! task), so it leaves by a `ret`; were one to escape, the thread's state would keep a chain
//! that its next entry or exit replaces, and a sample taken meanwhile is spliced only where
//! that chain's method is on the stack (see `sampler::frames`).

use clrprof_sdk::Token;
use clrprof_sdk::il::asm::{ldc_i4, op};
use clrprof_sdk::il::{Method, OpCode, Operand};

/// Stack slots the entry probe needs (the exit probe needs 2, on the empty stack of a `ret`
/// of a `void` method).
const PROBE_STACK: u16 = 5;

/// `calli unmanaged cdecl uint32(uint32, uint32, native int)`.
pub const ENTER_SIG: [u8; 6] = [0x01, 3, 0x09, 0x09, 0x09, 0x18];
/// `calli unmanaged cdecl void(uint64)`.
pub const LEAVE_SIG: [u8; 4] = [0x01, 1, 0x01, 0x0B];
/// The local the entry probe saves the thread's state in: `uint64`.
pub const SAVED_LOCAL: [u8; 1] = [0x0B];

/// What the probes refer to.
pub struct Probe {
    /// The state machine's chain field (a FieldDef, or a MemberRef of a generic type's own
    /// instantiation).
    pub field: Token,
    /// The async method's index.
    pub method: u32,
    /// The `saved` local.
    pub saved: u16,
    /// StandAloneSig tokens of [`ENTER_SIG`] and [`LEAVE_SIG`].
    pub enter_sig: Token,
    pub leave_sig: Token,
    /// Addresses of the two native functions.
    pub enter: usize,
    pub leave: usize,
}

/// Adds the probes to `method` (a `MoveNext` that returns nothing).
pub fn add_probes(method: &mut Method, p: &Probe) {
    let rets: Vec<usize> = method
        .instructions
        .iter()
        .enumerate()
        .filter(|(_, i)| i.opcode == OpCode::RET)
        .map(|(k, _)| k)
        .collect();
    for &k in rets.iter().rev() {
        method.insert_before(
            k,
            [
                op(OpCode::LDLOC, Operand::U2(p.saved)),
                op(OpCode::LDC_I8, Operand::I8(p.leave as i64)),
                op(OpCode::CONV_I, Operand::None),
                op(OpCode::CALLI, Operand::Token(p.leave_sig)),
            ],
        );
    }
    method.insert_at_entry([
        op(OpCode::LDARG_0, Operand::None),
        op(OpCode::LDARG_0, Operand::None),
        op(OpCode::LDFLD, Operand::Token(p.field)),
        ldc_i4(p.method as i32),
        op(OpCode::LDLOCA, Operand::U2(p.saved)),
        op(OpCode::CONV_U, Operand::None),
        op(OpCode::LDC_I8, Operand::I8(p.enter as i64)),
        op(OpCode::CONV_I, Operand::None),
        op(OpCode::CALLI, Operand::Token(p.enter_sig)),
        op(OpCode::STFLD, Operand::Token(p.field)),
    ]);
    method.max_stack = method.max_stack.max(PROBE_STACK);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `MoveNext` with two returns: `ldarg.0; brfalse.s END; nop; ret; END: ret`.
    fn two_returns() -> Method {
        // Tiny format: (code size << 2) | 2.
        let code = [0x02u8, 0x2C, 0x02, 0x00, 0x2A, 0x2A];
        let mut bytes = vec![((code.len() as u8) << 2) | 2];
        bytes.extend_from_slice(&code);
        Method::parse(&bytes).unwrap()
    }

    #[test]
    fn every_return_restores_and_the_entry_enters() {
        let mut m = two_returns();
        let p = Probe {
            field: Token(0x0400_0007),
            method: 3,
            saved: 2,
            enter_sig: Token(0x1100_0001),
            leave_sig: Token(0x1100_0002),
            enter: 0x1000,
            leave: 0x2000,
        };
        add_probes(&mut m, &p);
        let ops: Vec<OpCode> = m.instructions.iter().map(|i| i.opcode).collect();
        assert_eq!(ops[..10].last(), Some(&OpCode::STFLD));
        assert_eq!(
            ops[9 + 1],
            OpCode::LDARG_0,
            "the original code follows the entry probe"
        );
        let rets = ops.iter().filter(|&&o| o == OpCode::RET).count();
        let leaves = m
            .instructions
            .iter()
            .filter(|i| i.operand == Operand::Token(p.leave_sig))
            .count();
        assert_eq!((rets, leaves), (2, 2));
        for (k, i) in m.instructions.iter().enumerate() {
            if i.opcode == OpCode::RET {
                assert_eq!(m.instructions[k - 1].operand, Operand::Token(p.leave_sig));
            }
        }
        // The branch to the second `ret` now reaches its probe.
        let target = m.instructions.iter().find_map(|i| match i.operand {
            Operand::Target(l) => Some(l),
            _ => None,
        });
        let at = m.index_of(target.unwrap()).unwrap();
        assert_eq!(m.instructions[at].opcode, OpCode::LDLOC);
        assert!(m.max_stack >= 5);
        m.encode().unwrap();
    }
}
