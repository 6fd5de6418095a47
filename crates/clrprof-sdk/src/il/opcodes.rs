//! Every IL opcode of ECMA-335 Partition III: its encoding, operand, control flow and stack
//! effect.
//!
//! An [`OpCode`] is the opcode's value: one byte, or `0xFE` followed by a second byte (stored
//! as `0xFE00 | second`). [`OpCode::info`] gives its [`OpInfo`]; values that are not opcodes
//! have none.

use core::fmt;

/// What follows an opcode in the code stream.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum OperandKind {
    /// Nothing.
    None,
    /// A signed byte (`ldc.i4.s`).
    I1,
    /// An unsigned byte: argument or local index (`ldarg.s`), alignment (`unaligned.`) or
    /// check flags (`no.`).
    U1,
    /// An unsigned 16-bit argument or local index (`ldarg`).
    U2,
    /// A 32-bit integer (`ldc.i4`).
    I4,
    /// A 64-bit integer (`ldc.i8`).
    I8,
    /// A 32-bit float (`ldc.r4`).
    R4,
    /// A 64-bit float (`ldc.r8`).
    R8,
    /// A metadata token (method, field, type, string, signature or any of them for `ldtoken`).
    Token,
    /// A branch target, signed byte displacement from the next instruction.
    ShortBranch,
    /// A branch target, 32-bit displacement from the next instruction.
    Branch,
    /// `switch`: a 32-bit count, then that many 32-bit displacements.
    Switch,
}

impl OperandKind {
    /// Bytes of the operand (for `Switch`, the count only).
    pub const fn size(self) -> usize {
        match self {
            OperandKind::None => 0,
            OperandKind::I1 | OperandKind::U1 | OperandKind::ShortBranch => 1,
            OperandKind::U2 => 2,
            OperandKind::I4
            | OperandKind::R4
            | OperandKind::Token
            | OperandKind::Branch
            | OperandKind::Switch => 4,
            OperandKind::I8 | OperandKind::R8 => 8,
        }
    }
}

/// How an instruction passes control on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Flow {
    /// To the next instruction.
    Next,
    /// To the next instruction, after a call.
    Call,
    /// A prefix: part of the next instruction.
    Prefix,
    /// `break`: to the next instruction, after the debugger.
    Break,
    /// Unconditionally to its target (`br`, `leave`).
    Branch,
    /// To its target(s) or the next instruction (`brtrue`, `switch`).
    CondBranch,
    /// Out of the method or handler (`ret`, `endfinally`, `endfilter`, `jmp`).
    Return,
    /// Raises an exception (`throw`, `rethrow`).
    Throw,
}

impl Flow {
    /// True when the next instruction is not reached by falling through.
    pub const fn ends_block_without_fallthrough(self) -> bool {
        matches!(self, Flow::Branch | Flow::Return | Flow::Throw)
    }
}

/// Stack slots an instruction pops or pushes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StackCount {
    /// A fixed number.
    Fixed(u8),
    /// Depends on the method signature of the operand (calls, `newobj`, `calli`).
    Call,
    /// `ret`, `leave`, `endfinally`: empties the stack (`ret` pops the return value).
    All,
}

/// The description of one opcode.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct OpInfo {
    /// ILAsm name, e.g. `ldc.i4.s`.
    pub name: &'static str,
    /// The opcode.
    pub opcode: OpCode,
    /// Its operand.
    pub operand: OperandKind,
    /// Its control flow.
    pub flow: Flow,
    /// Slots popped.
    pub pops: StackCount,
    /// Slots pushed.
    pub pushes: StackCount,
}

/// An IL opcode value: `0x00..=0xFF`, or `0xFE00 | b` for the two-byte opcodes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpCode(pub u16);

impl OpCode {
    /// Bytes of the opcode itself (1 or 2).
    pub const fn size(self) -> usize {
        if self.0 > 0xFF { 2 } else { 1 }
    }

    /// Appends the opcode's bytes.
    pub fn write(self, out: &mut Vec<u8>) {
        if self.0 > 0xFF {
            out.push(0xFE);
        }
        out.push(self.0 as u8);
    }

    /// The long form of a short branch (`br.s` -> `br`), or `None` when this is not one.
    pub const fn long_form(self) -> Option<OpCode> {
        match self.0 {
            0x2B..=0x37 => Some(OpCode(self.0 + 0x0D)),
            0xDE => Some(OpCode::LEAVE),
            _ => None,
        }
    }

    /// The short form of a long branch (`br` -> `br.s`), or `None` when this is not one.
    pub const fn short_form(self) -> Option<OpCode> {
        match self.0 {
            0x38..=0x44 => Some(OpCode(self.0 - 0x0D)),
            0xDD => Some(OpCode::LEAVE_S),
            _ => None,
        }
    }
}

impl fmt::Debug for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.info() {
            Some(info) => f.write_str(info.name),
            None => write!(f, "OpCode({:#x})", self.0),
        }
    }
}

impl fmt::Display for OpCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

macro_rules! opcodes {
    ($( $id:ident = $value:literal, $name:literal, $operand:ident, $flow:ident, $pops:expr, $pushes:expr; )*) => {
        impl OpCode {
            $(
                #[doc = concat!("`", $name, "`")]
                pub const $id: OpCode = OpCode($value);
            )*

            /// The opcode's description; `None` for a value that is not an opcode.
            pub const fn info(self) -> Option<&'static OpInfo> {
                match self.0 {
                    $( $value => Some(&OpInfo {
                        name: $name,
                        opcode: OpCode($value),
                        operand: OperandKind::$operand,
                        flow: Flow::$flow,
                        pops: $pops,
                        pushes: $pushes,
                    }), )*
                    _ => None,
                }
            }
        }

        /// Every opcode, in value order.
        pub const ALL: &[OpCode] = &[$( OpCode($value) ),*];
    };
}

const P0: StackCount = StackCount::Fixed(0);
const P1: StackCount = StackCount::Fixed(1);
const P2: StackCount = StackCount::Fixed(2);
const P3: StackCount = StackCount::Fixed(3);
const VAR: StackCount = StackCount::Call;
const ALL_: StackCount = StackCount::All;

opcodes! {
    NOP = 0x00, "nop", None, Next, P0, P0;
    BREAK = 0x01, "break", None, Break, P0, P0;
    LDARG_0 = 0x02, "ldarg.0", None, Next, P0, P1;
    LDARG_1 = 0x03, "ldarg.1", None, Next, P0, P1;
    LDARG_2 = 0x04, "ldarg.2", None, Next, P0, P1;
    LDARG_3 = 0x05, "ldarg.3", None, Next, P0, P1;
    LDLOC_0 = 0x06, "ldloc.0", None, Next, P0, P1;
    LDLOC_1 = 0x07, "ldloc.1", None, Next, P0, P1;
    LDLOC_2 = 0x08, "ldloc.2", None, Next, P0, P1;
    LDLOC_3 = 0x09, "ldloc.3", None, Next, P0, P1;
    STLOC_0 = 0x0A, "stloc.0", None, Next, P1, P0;
    STLOC_1 = 0x0B, "stloc.1", None, Next, P1, P0;
    STLOC_2 = 0x0C, "stloc.2", None, Next, P1, P0;
    STLOC_3 = 0x0D, "stloc.3", None, Next, P1, P0;
    LDARG_S = 0x0E, "ldarg.s", U1, Next, P0, P1;
    LDARGA_S = 0x0F, "ldarga.s", U1, Next, P0, P1;
    STARG_S = 0x10, "starg.s", U1, Next, P1, P0;
    LDLOC_S = 0x11, "ldloc.s", U1, Next, P0, P1;
    LDLOCA_S = 0x12, "ldloca.s", U1, Next, P0, P1;
    STLOC_S = 0x13, "stloc.s", U1, Next, P1, P0;
    LDNULL = 0x14, "ldnull", None, Next, P0, P1;
    LDC_I4_M1 = 0x15, "ldc.i4.m1", None, Next, P0, P1;
    LDC_I4_0 = 0x16, "ldc.i4.0", None, Next, P0, P1;
    LDC_I4_1 = 0x17, "ldc.i4.1", None, Next, P0, P1;
    LDC_I4_2 = 0x18, "ldc.i4.2", None, Next, P0, P1;
    LDC_I4_3 = 0x19, "ldc.i4.3", None, Next, P0, P1;
    LDC_I4_4 = 0x1A, "ldc.i4.4", None, Next, P0, P1;
    LDC_I4_5 = 0x1B, "ldc.i4.5", None, Next, P0, P1;
    LDC_I4_6 = 0x1C, "ldc.i4.6", None, Next, P0, P1;
    LDC_I4_7 = 0x1D, "ldc.i4.7", None, Next, P0, P1;
    LDC_I4_8 = 0x1E, "ldc.i4.8", None, Next, P0, P1;
    LDC_I4_S = 0x1F, "ldc.i4.s", I1, Next, P0, P1;
    LDC_I4 = 0x20, "ldc.i4", I4, Next, P0, P1;
    LDC_I8 = 0x21, "ldc.i8", I8, Next, P0, P1;
    LDC_R4 = 0x22, "ldc.r4", R4, Next, P0, P1;
    LDC_R8 = 0x23, "ldc.r8", R8, Next, P0, P1;
    DUP = 0x25, "dup", None, Next, P1, P2;
    POP = 0x26, "pop", None, Next, P1, P0;
    JMP = 0x27, "jmp", Token, Return, P0, P0;
    CALL = 0x28, "call", Token, Call, VAR, VAR;
    CALLI = 0x29, "calli", Token, Call, VAR, VAR;
    RET = 0x2A, "ret", None, Return, ALL_, P0;
    BR_S = 0x2B, "br.s", ShortBranch, Branch, P0, P0;
    BRFALSE_S = 0x2C, "brfalse.s", ShortBranch, CondBranch, P1, P0;
    BRTRUE_S = 0x2D, "brtrue.s", ShortBranch, CondBranch, P1, P0;
    BEQ_S = 0x2E, "beq.s", ShortBranch, CondBranch, P2, P0;
    BGE_S = 0x2F, "bge.s", ShortBranch, CondBranch, P2, P0;
    BGT_S = 0x30, "bgt.s", ShortBranch, CondBranch, P2, P0;
    BLE_S = 0x31, "ble.s", ShortBranch, CondBranch, P2, P0;
    BLT_S = 0x32, "blt.s", ShortBranch, CondBranch, P2, P0;
    BNE_UN_S = 0x33, "bne.un.s", ShortBranch, CondBranch, P2, P0;
    BGE_UN_S = 0x34, "bge.un.s", ShortBranch, CondBranch, P2, P0;
    BGT_UN_S = 0x35, "bgt.un.s", ShortBranch, CondBranch, P2, P0;
    BLE_UN_S = 0x36, "ble.un.s", ShortBranch, CondBranch, P2, P0;
    BLT_UN_S = 0x37, "blt.un.s", ShortBranch, CondBranch, P2, P0;
    BR = 0x38, "br", Branch, Branch, P0, P0;
    BRFALSE = 0x39, "brfalse", Branch, CondBranch, P1, P0;
    BRTRUE = 0x3A, "brtrue", Branch, CondBranch, P1, P0;
    BEQ = 0x3B, "beq", Branch, CondBranch, P2, P0;
    BGE = 0x3C, "bge", Branch, CondBranch, P2, P0;
    BGT = 0x3D, "bgt", Branch, CondBranch, P2, P0;
    BLE = 0x3E, "ble", Branch, CondBranch, P2, P0;
    BLT = 0x3F, "blt", Branch, CondBranch, P2, P0;
    BNE_UN = 0x40, "bne.un", Branch, CondBranch, P2, P0;
    BGE_UN = 0x41, "bge.un", Branch, CondBranch, P2, P0;
    BGT_UN = 0x42, "bgt.un", Branch, CondBranch, P2, P0;
    BLE_UN = 0x43, "ble.un", Branch, CondBranch, P2, P0;
    BLT_UN = 0x44, "blt.un", Branch, CondBranch, P2, P0;
    SWITCH = 0x45, "switch", Switch, CondBranch, P1, P0;
    LDIND_I1 = 0x46, "ldind.i1", None, Next, P1, P1;
    LDIND_U1 = 0x47, "ldind.u1", None, Next, P1, P1;
    LDIND_I2 = 0x48, "ldind.i2", None, Next, P1, P1;
    LDIND_U2 = 0x49, "ldind.u2", None, Next, P1, P1;
    LDIND_I4 = 0x4A, "ldind.i4", None, Next, P1, P1;
    LDIND_U4 = 0x4B, "ldind.u4", None, Next, P1, P1;
    LDIND_I8 = 0x4C, "ldind.i8", None, Next, P1, P1;
    LDIND_I = 0x4D, "ldind.i", None, Next, P1, P1;
    LDIND_R4 = 0x4E, "ldind.r4", None, Next, P1, P1;
    LDIND_R8 = 0x4F, "ldind.r8", None, Next, P1, P1;
    LDIND_REF = 0x50, "ldind.ref", None, Next, P1, P1;
    STIND_REF = 0x51, "stind.ref", None, Next, P2, P0;
    STIND_I1 = 0x52, "stind.i1", None, Next, P2, P0;
    STIND_I2 = 0x53, "stind.i2", None, Next, P2, P0;
    STIND_I4 = 0x54, "stind.i4", None, Next, P2, P0;
    STIND_I8 = 0x55, "stind.i8", None, Next, P2, P0;
    STIND_R4 = 0x56, "stind.r4", None, Next, P2, P0;
    STIND_R8 = 0x57, "stind.r8", None, Next, P2, P0;
    ADD = 0x58, "add", None, Next, P2, P1;
    SUB = 0x59, "sub", None, Next, P2, P1;
    MUL = 0x5A, "mul", None, Next, P2, P1;
    DIV = 0x5B, "div", None, Next, P2, P1;
    DIV_UN = 0x5C, "div.un", None, Next, P2, P1;
    REM = 0x5D, "rem", None, Next, P2, P1;
    REM_UN = 0x5E, "rem.un", None, Next, P2, P1;
    AND = 0x5F, "and", None, Next, P2, P1;
    OR = 0x60, "or", None, Next, P2, P1;
    XOR = 0x61, "xor", None, Next, P2, P1;
    SHL = 0x62, "shl", None, Next, P2, P1;
    SHR = 0x63, "shr", None, Next, P2, P1;
    SHR_UN = 0x64, "shr.un", None, Next, P2, P1;
    NEG = 0x65, "neg", None, Next, P1, P1;
    NOT = 0x66, "not", None, Next, P1, P1;
    CONV_I1 = 0x67, "conv.i1", None, Next, P1, P1;
    CONV_I2 = 0x68, "conv.i2", None, Next, P1, P1;
    CONV_I4 = 0x69, "conv.i4", None, Next, P1, P1;
    CONV_I8 = 0x6A, "conv.i8", None, Next, P1, P1;
    CONV_R4 = 0x6B, "conv.r4", None, Next, P1, P1;
    CONV_R8 = 0x6C, "conv.r8", None, Next, P1, P1;
    CONV_U4 = 0x6D, "conv.u4", None, Next, P1, P1;
    CONV_U8 = 0x6E, "conv.u8", None, Next, P1, P1;
    CALLVIRT = 0x6F, "callvirt", Token, Call, VAR, VAR;
    CPOBJ = 0x70, "cpobj", Token, Next, P2, P0;
    LDOBJ = 0x71, "ldobj", Token, Next, P1, P1;
    LDSTR = 0x72, "ldstr", Token, Next, P0, P1;
    NEWOBJ = 0x73, "newobj", Token, Call, VAR, P1;
    CASTCLASS = 0x74, "castclass", Token, Next, P1, P1;
    ISINST = 0x75, "isinst", Token, Next, P1, P1;
    CONV_R_UN = 0x76, "conv.r.un", None, Next, P1, P1;
    UNBOX = 0x79, "unbox", Token, Next, P1, P1;
    THROW = 0x7A, "throw", None, Throw, P1, P0;
    LDFLD = 0x7B, "ldfld", Token, Next, P1, P1;
    LDFLDA = 0x7C, "ldflda", Token, Next, P1, P1;
    STFLD = 0x7D, "stfld", Token, Next, P2, P0;
    LDSFLD = 0x7E, "ldsfld", Token, Next, P0, P1;
    LDSFLDA = 0x7F, "ldsflda", Token, Next, P0, P1;
    STSFLD = 0x80, "stsfld", Token, Next, P1, P0;
    STOBJ = 0x81, "stobj", Token, Next, P2, P0;
    CONV_OVF_I1_UN = 0x82, "conv.ovf.i1.un", None, Next, P1, P1;
    CONV_OVF_I2_UN = 0x83, "conv.ovf.i2.un", None, Next, P1, P1;
    CONV_OVF_I4_UN = 0x84, "conv.ovf.i4.un", None, Next, P1, P1;
    CONV_OVF_I8_UN = 0x85, "conv.ovf.i8.un", None, Next, P1, P1;
    CONV_OVF_U1_UN = 0x86, "conv.ovf.u1.un", None, Next, P1, P1;
    CONV_OVF_U2_UN = 0x87, "conv.ovf.u2.un", None, Next, P1, P1;
    CONV_OVF_U4_UN = 0x88, "conv.ovf.u4.un", None, Next, P1, P1;
    CONV_OVF_U8_UN = 0x89, "conv.ovf.u8.un", None, Next, P1, P1;
    CONV_OVF_I_UN = 0x8A, "conv.ovf.i.un", None, Next, P1, P1;
    CONV_OVF_U_UN = 0x8B, "conv.ovf.u.un", None, Next, P1, P1;
    BOX = 0x8C, "box", Token, Next, P1, P1;
    NEWARR = 0x8D, "newarr", Token, Next, P1, P1;
    LDLEN = 0x8E, "ldlen", None, Next, P1, P1;
    LDELEMA = 0x8F, "ldelema", Token, Next, P2, P1;
    LDELEM_I1 = 0x90, "ldelem.i1", None, Next, P2, P1;
    LDELEM_U1 = 0x91, "ldelem.u1", None, Next, P2, P1;
    LDELEM_I2 = 0x92, "ldelem.i2", None, Next, P2, P1;
    LDELEM_U2 = 0x93, "ldelem.u2", None, Next, P2, P1;
    LDELEM_I4 = 0x94, "ldelem.i4", None, Next, P2, P1;
    LDELEM_U4 = 0x95, "ldelem.u4", None, Next, P2, P1;
    LDELEM_I8 = 0x96, "ldelem.i8", None, Next, P2, P1;
    LDELEM_I = 0x97, "ldelem.i", None, Next, P2, P1;
    LDELEM_R4 = 0x98, "ldelem.r4", None, Next, P2, P1;
    LDELEM_R8 = 0x99, "ldelem.r8", None, Next, P2, P1;
    LDELEM_REF = 0x9A, "ldelem.ref", None, Next, P2, P1;
    STELEM_I = 0x9B, "stelem.i", None, Next, P3, P0;
    STELEM_I1 = 0x9C, "stelem.i1", None, Next, P3, P0;
    STELEM_I2 = 0x9D, "stelem.i2", None, Next, P3, P0;
    STELEM_I4 = 0x9E, "stelem.i4", None, Next, P3, P0;
    STELEM_I8 = 0x9F, "stelem.i8", None, Next, P3, P0;
    STELEM_R4 = 0xA0, "stelem.r4", None, Next, P3, P0;
    STELEM_R8 = 0xA1, "stelem.r8", None, Next, P3, P0;
    STELEM_REF = 0xA2, "stelem.ref", None, Next, P3, P0;
    LDELEM = 0xA3, "ldelem", Token, Next, P2, P1;
    STELEM = 0xA4, "stelem", Token, Next, P3, P0;
    UNBOX_ANY = 0xA5, "unbox.any", Token, Next, P1, P1;
    CONV_OVF_I1 = 0xB3, "conv.ovf.i1", None, Next, P1, P1;
    CONV_OVF_U1 = 0xB4, "conv.ovf.u1", None, Next, P1, P1;
    CONV_OVF_I2 = 0xB5, "conv.ovf.i2", None, Next, P1, P1;
    CONV_OVF_U2 = 0xB6, "conv.ovf.u2", None, Next, P1, P1;
    CONV_OVF_I4 = 0xB7, "conv.ovf.i4", None, Next, P1, P1;
    CONV_OVF_U4 = 0xB8, "conv.ovf.u4", None, Next, P1, P1;
    CONV_OVF_I8 = 0xB9, "conv.ovf.i8", None, Next, P1, P1;
    CONV_OVF_U8 = 0xBA, "conv.ovf.u8", None, Next, P1, P1;
    REFANYVAL = 0xC2, "refanyval", Token, Next, P1, P1;
    CKFINITE = 0xC3, "ckfinite", None, Next, P1, P1;
    MKREFANY = 0xC6, "mkrefany", Token, Next, P1, P1;
    LDTOKEN = 0xD0, "ldtoken", Token, Next, P0, P1;
    CONV_U2 = 0xD1, "conv.u2", None, Next, P1, P1;
    CONV_U1 = 0xD2, "conv.u1", None, Next, P1, P1;
    CONV_I = 0xD3, "conv.i", None, Next, P1, P1;
    CONV_OVF_I = 0xD4, "conv.ovf.i", None, Next, P1, P1;
    CONV_OVF_U = 0xD5, "conv.ovf.u", None, Next, P1, P1;
    ADD_OVF = 0xD6, "add.ovf", None, Next, P2, P1;
    ADD_OVF_UN = 0xD7, "add.ovf.un", None, Next, P2, P1;
    MUL_OVF = 0xD8, "mul.ovf", None, Next, P2, P1;
    MUL_OVF_UN = 0xD9, "mul.ovf.un", None, Next, P2, P1;
    SUB_OVF = 0xDA, "sub.ovf", None, Next, P2, P1;
    SUB_OVF_UN = 0xDB, "sub.ovf.un", None, Next, P2, P1;
    ENDFINALLY = 0xDC, "endfinally", None, Return, ALL_, P0;
    LEAVE = 0xDD, "leave", Branch, Branch, ALL_, P0;
    LEAVE_S = 0xDE, "leave.s", ShortBranch, Branch, ALL_, P0;
    STIND_I = 0xDF, "stind.i", None, Next, P2, P0;
    CONV_U = 0xE0, "conv.u", None, Next, P1, P1;
    ARGLIST = 0xFE00, "arglist", None, Next, P0, P1;
    CEQ = 0xFE01, "ceq", None, Next, P2, P1;
    CGT = 0xFE02, "cgt", None, Next, P2, P1;
    CGT_UN = 0xFE03, "cgt.un", None, Next, P2, P1;
    CLT = 0xFE04, "clt", None, Next, P2, P1;
    CLT_UN = 0xFE05, "clt.un", None, Next, P2, P1;
    LDFTN = 0xFE06, "ldftn", Token, Next, P0, P1;
    LDVIRTFTN = 0xFE07, "ldvirtftn", Token, Next, P1, P1;
    LDARG = 0xFE09, "ldarg", U2, Next, P0, P1;
    LDARGA = 0xFE0A, "ldarga", U2, Next, P0, P1;
    STARG = 0xFE0B, "starg", U2, Next, P1, P0;
    LDLOC = 0xFE0C, "ldloc", U2, Next, P0, P1;
    LDLOCA = 0xFE0D, "ldloca", U2, Next, P0, P1;
    STLOC = 0xFE0E, "stloc", U2, Next, P1, P0;
    LOCALLOC = 0xFE0F, "localloc", None, Next, P1, P1;
    ENDFILTER = 0xFE11, "endfilter", None, Return, P1, P0;
    UNALIGNED = 0xFE12, "unaligned.", U1, Prefix, P0, P0;
    VOLATILE = 0xFE13, "volatile.", None, Prefix, P0, P0;
    TAIL = 0xFE14, "tail.", None, Prefix, P0, P0;
    INITOBJ = 0xFE15, "initobj", Token, Next, P1, P0;
    CONSTRAINED = 0xFE16, "constrained.", Token, Prefix, P0, P0;
    CPBLK = 0xFE17, "cpblk", None, Next, P3, P0;
    INITBLK = 0xFE18, "initblk", None, Next, P3, P0;
    NO = 0xFE19, "no.", U1, Prefix, P0, P0;
    RETHROW = 0xFE1A, "rethrow", None, Throw, P0, P0;
    SIZEOF = 0xFE1C, "sizeof", Token, Next, P0, P1;
    REFANYTYPE = 0xFE1D, "refanytype", None, Next, P1, P1;
    READONLY = 0xFE1E, "readonly.", None, Prefix, P0, P0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        // ECMA-335 Partition III defines 219 opcodes (including the 6 prefixes).
        assert_eq!(ALL.len(), 219);
        let mut names = std::collections::HashSet::new();
        for (i, &op) in ALL.iter().enumerate() {
            let info = op.info().unwrap();
            assert_eq!(info.opcode, op);
            assert!(names.insert(info.name), "duplicate {}", info.name);
            if i > 0 {
                assert!(ALL[i - 1] < op, "not sorted at {}", info.name);
            }
            let branchy = matches!(
                info.operand,
                OperandKind::Branch | OperandKind::ShortBranch | OperandKind::Switch
            );
            assert_eq!(
                branchy,
                matches!(info.flow, Flow::Branch | Flow::CondBranch),
                "{}",
                info.name
            );
            assert_eq!(
                info.flow == Flow::Prefix,
                info.name.ends_with('.'),
                "{}",
                info.name
            );
        }
        for b in 0u16..=0xFF {
            // Only the two-byte escape and the reserved range are missing from the one-byte space.
            let missing = OpCode(b).info().is_none();
            let expected = matches!(b, 0x24 | 0x77 | 0x78 | 0xA6..=0xB2 | 0xBB..=0xC1 | 0xC4 | 0xC5 | 0xC7..=0xCF | 0xE1..=0xFF);
            assert_eq!(missing, expected, "{b:#x}");
        }
    }

    #[test]
    fn short_and_long_branches_pair_up() {
        let mut pairs = 0;
        for &op in ALL {
            let info = op.info().unwrap();
            if info.operand == OperandKind::ShortBranch {
                let long = op.long_form().unwrap();
                let long_info = long.info().unwrap();
                assert_eq!(long_info.operand, OperandKind::Branch);
                assert_eq!(long_info.name, info.name.trim_end_matches(".s"));
                assert_eq!(long.short_form(), Some(op));
                pairs += 1;
            } else {
                assert_eq!(op.long_form(), None, "{}", info.name);
            }
        }
        assert_eq!(pairs, 14);
        assert_eq!(OpCode::SWITCH.short_form(), None);
        assert_eq!(format!("{:?}", OpCode::LDC_I4_S), "ldc.i4.s");
        assert_eq!(format!("{}", OpCode(0xFE1B)), "OpCode(0xfe1b)");
    }
}
