//! Instructions: an opcode and its operand, with branch targets as [`Label`]s.

use crate::ids::Token;

use super::opcodes::{OpCode, OperandKind};

/// Names an instruction (or the end of the code, [`Label::END`]) independently of its offset,
/// so branches and exception clauses stay right while instructions are inserted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Label(pub u32);

impl Label {
    /// The offset just past the last instruction (where a try or handler ending with the code
    /// ends).
    pub const END: Label = Label(u32::MAX);
}

/// An instruction's operand.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Operand {
    /// No operand.
    None,
    /// `ldc.i4.s`.
    I1(i8),
    /// `ldarg.s`, `ldloc.s`, ..., `unaligned.`, `no.`.
    U1(u8),
    /// `ldarg`, `ldloc`, ....
    U2(u16),
    /// `ldc.i4`.
    I4(i32),
    /// `ldc.i8`.
    I8(i64),
    /// `ldc.r4`, as its bits (so every NaN survives a round trip).
    R4(u32),
    /// `ldc.r8`, as its bits.
    R8(u64),
    /// A metadata token.
    Token(Token),
    /// A branch target.
    Target(Label),
    /// `switch` targets.
    Switch(Vec<Label>),
}

impl Operand {
    /// True when the operand's form matches `kind`.
    pub fn fits(&self, kind: OperandKind) -> bool {
        matches!(
            (self, kind),
            (Operand::None, OperandKind::None)
                | (Operand::I1(_), OperandKind::I1)
                | (Operand::U1(_), OperandKind::U1)
                | (Operand::U2(_), OperandKind::U2)
                | (Operand::I4(_), OperandKind::I4)
                | (Operand::I8(_), OperandKind::I8)
                | (Operand::R4(_), OperandKind::R4)
                | (Operand::R8(_), OperandKind::R8)
                | (Operand::Token(_), OperandKind::Token)
                | (
                    Operand::Target(_),
                    OperandKind::Branch | OperandKind::ShortBranch
                )
                | (Operand::Switch(_), OperandKind::Switch)
        )
    }
}

/// One IL instruction.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Instruction {
    /// Its label (what branches and clauses refer to).
    pub label: Label,
    /// The opcode. A short branch whose target ends up too far is written in its long form.
    pub opcode: OpCode,
    /// The operand, of the kind the opcode takes.
    pub operand: Operand,
    /// Its offset in the body it was decoded from; `None` for inserted instructions.
    pub original_offset: Option<u32>,
}

impl Instruction {
    /// The size of the instruction with its opcode as is.
    pub fn size(&self) -> usize {
        let operand = match &self.operand {
            Operand::Switch(targets) => 4 + 4 * targets.len(),
            _ => self.opcode.info().map_or(0, |i| i.operand.size()),
        };
        self.opcode.size() + operand
    }
}

/// An instruction to insert, before it has a label: `op(OpCode::LDC_I8, Operand::I8(x))`.
pub fn op(opcode: OpCode, operand: Operand) -> (OpCode, Operand) {
    (opcode, operand)
}

/// The shortest `ldc.i4` form for `value`.
pub fn ldc_i4(value: i32) -> (OpCode, Operand) {
    match value {
        -1 => (OpCode::LDC_I4_M1, Operand::None),
        0..=8 => (OpCode(OpCode::LDC_I4_0.0 + value as u16), Operand::None),
        -128..=127 => (OpCode::LDC_I4_S, Operand::I1(value as i8)),
        _ => (OpCode::LDC_I4, Operand::I4(value)),
    }
}
