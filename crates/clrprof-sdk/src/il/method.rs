//! The instruction-level model of a method body: decoding, editing with labels, and encoding
//! with automatic short/long branch forms.

use std::collections::HashMap;

use crate::ids::Token;
use crate::types::IlMapEntry;

use super::instruction::{Instruction, Label, Operand};
use super::opcodes::{OpCode, OperandKind};
use super::{ClauseKind, Encoding, ExceptionClause, IlBody, IlError};

/// What an exception clause does, with its filter as a label.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Handler {
    /// `catch (T)`, with the token of `T`.
    Catch(Token),
    /// A filter block starting at this label; the handler follows it.
    Filter(Label),
    /// `finally`.
    Finally,
    /// `fault`.
    Fault,
    /// Flags the SDK does not name, kept as is.
    Other {
        /// Raw `CorExceptionFlag` bits.
        flags: u32,
        /// Raw class-token-or-filter-offset field.
        value: u32,
    },
}

/// An exception clause whose boundaries are labels (ends are exclusive: the label of the
/// first instruction after the block, or [`Label::END`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Clause {
    /// Kind of handler.
    pub handler: Handler,
    /// First instruction of the protected block.
    pub try_start: Label,
    /// First instruction after the protected block.
    pub try_end: Label,
    /// First instruction of the handler.
    pub handler_start: Label,
    /// First instruction after the handler.
    pub handler_end: Label,
}

/// A method body as a list of instructions.
///
/// Decoding gives every instruction a label and turns branch targets and clause boundaries
/// into labels; inserting instructions never breaks them. Encoding keeps each instruction's
/// form (a long branch stays long, `ldc.i4 1` stays `ldc.i4`) except that a short branch
/// whose target moved out of reach is widened, so decoding and encoding an unmodified body
/// gives back its exact bytes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Method {
    /// Maximum evaluation stack depth.
    pub max_stack: u16,
    /// StandAloneSig token of the locals; `Token(0)` for none.
    pub local_var_sig: Token,
    /// Zero-initialise locals.
    pub init_locals: bool,
    /// The code.
    pub instructions: Vec<Instruction>,
    /// Exception clauses, innermost first.
    pub clauses: Vec<Clause>,
    /// Header and exception table forms to write (kept from the decoded body).
    pub encoding: Encoding,
    next_label: u32,
}

/// Where each instruction landed in an encoded body.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Layout {
    /// Offset of each instruction, in order.
    pub offsets: Vec<u32>,
    /// Size of the code.
    pub code_size: u32,
}

fn invalid(offset: usize, what: &'static str) -> IlError {
    IlError::InvalidCode {
        offset: offset as u32,
        what,
    }
}

/// Reads the instructions of `code`, with targets as absolute offsets (not yet labels).
struct RawInstruction {
    offset: u32,
    opcode: OpCode,
    operand: RawOperand,
}

enum RawOperand {
    Plain(Operand),
    Target(i64),
    Switch(Vec<i64>),
}

fn decode_raw(code: &[u8]) -> Result<Vec<RawInstruction>, IlError> {
    let mut out = Vec::with_capacity(code.len() / 2);
    let mut pos = 0usize;
    let take = |pos: usize, n: usize| -> Result<&[u8], IlError> {
        code.get(pos..pos + n)
            .ok_or(invalid(pos, "instruction runs past the end of the code"))
    };
    while pos < code.len() {
        let start = pos;
        let mut value = code[pos] as u16;
        pos += 1;
        if value == 0xFE {
            value = 0xFE00 | take(pos, 1)?[0] as u16;
            pos += 1;
        }
        let opcode = OpCode(value);
        let info = opcode.info().ok_or(invalid(start, "unknown opcode"))?;
        let size = info.operand.size();
        let bytes = take(pos, size)?;
        pos += size;
        let rel = |d: i64, end: usize| end as i64 + d;
        let operand = match info.operand {
            OperandKind::None => RawOperand::Plain(Operand::None),
            OperandKind::I1 => RawOperand::Plain(Operand::I1(bytes[0] as i8)),
            OperandKind::U1 => RawOperand::Plain(Operand::U1(bytes[0])),
            OperandKind::U2 => {
                RawOperand::Plain(Operand::U2(u16::from_le_bytes([bytes[0], bytes[1]])))
            }
            OperandKind::I4 => RawOperand::Plain(Operand::I4(le_i32(bytes))),
            OperandKind::R4 => RawOperand::Plain(Operand::R4(le_i32(bytes) as u32)),
            OperandKind::Token => RawOperand::Plain(Operand::Token(Token(le_i32(bytes) as u32))),
            OperandKind::I8 => RawOperand::Plain(Operand::I8(le_i64(bytes))),
            OperandKind::R8 => RawOperand::Plain(Operand::R8(le_i64(bytes) as u64)),
            OperandKind::ShortBranch => RawOperand::Target(rel(bytes[0] as i8 as i64, pos)),
            OperandKind::Branch => RawOperand::Target(rel(le_i32(bytes) as i64, pos)),
            OperandKind::Switch => {
                let count = le_i32(bytes) as u32 as usize;
                let table_len = count
                    .checked_mul(4)
                    .ok_or(invalid(start, "switch table too large"))?;
                let table = take(pos, table_len)?;
                pos += table_len;
                RawOperand::Switch(
                    table
                        .chunks_exact(4)
                        .map(|c| rel(le_i32(c) as i64, pos))
                        .collect(),
                )
            }
        };
        out.push(RawInstruction {
            offset: start as u32,
            opcode,
            operand,
        });
    }
    Ok(out)
}

fn le_i32(b: &[u8]) -> i32 {
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le_i64(b: &[u8]) -> i64 {
    i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

impl Method {
    /// Decodes a body that starts at `bytes[0]` (header, code, exception table), keeping its
    /// header and exception table forms.
    pub fn parse(bytes: &[u8]) -> Result<Method, IlError> {
        let body = IlBody::parse(bytes)?;
        let mut method = Method::decode(&body)?;
        method.encoding = Encoding::of(bytes).unwrap_or_default();
        Ok(method)
    }

    /// Decodes the code and clauses of `body`. The encoding is the smallest the body allows.
    pub fn decode(body: &IlBody) -> Result<Method, IlError> {
        let raw = decode_raw(&body.code)?;
        let index: HashMap<u32, usize> =
            raw.iter().enumerate().map(|(i, r)| (r.offset, i)).collect();
        let code_len = body.code.len() as i64;
        let label_at = |offset: i64, from: usize| -> Result<Label, IlError> {
            if offset == code_len {
                return Ok(Label::END);
            }
            u32::try_from(offset)
                .ok()
                .and_then(|o| index.get(&o))
                .map(|&i| Label(i as u32))
                .ok_or(invalid(from, "target is not the start of an instruction"))
        };
        let mut instructions = Vec::with_capacity(raw.len());
        for (i, r) in raw.into_iter().enumerate() {
            let at = r.offset as usize;
            let operand = match r.operand {
                RawOperand::Plain(o) => o,
                RawOperand::Target(t) => Operand::Target(label_at(t, at)?),
                RawOperand::Switch(ts) => Operand::Switch(
                    ts.into_iter()
                        .map(|t| label_at(t, at))
                        .collect::<Result<_, _>>()?,
                ),
            };
            instructions.push(Instruction {
                label: Label(i as u32),
                opcode: r.opcode,
                operand,
                original_offset: Some(r.offset),
            });
        }
        let clause_label = |offset: u32, length: Option<u32>| -> Result<Label, IlError> {
            let at = match length {
                Some(l) => offset as i64 + l as i64,
                None => offset as i64,
            };
            label_at(at, offset as usize).map_err(|_| {
                invalid(
                    offset as usize,
                    "exception clause boundary is not the start of an instruction",
                )
            })
        };
        let clauses = body
            .clauses
            .iter()
            .map(|c| {
                let handler = match c.kind {
                    ClauseKind::Catch(t) => Handler::Catch(t),
                    ClauseKind::Filter { filter_offset } => {
                        Handler::Filter(clause_label(filter_offset, None)?)
                    }
                    ClauseKind::Finally => Handler::Finally,
                    ClauseKind::Fault => Handler::Fault,
                    ClauseKind::Other { flags, value } => Handler::Other { flags, value },
                };
                Ok(Clause {
                    handler,
                    try_start: clause_label(c.try_offset, None)?,
                    try_end: clause_label(c.try_offset, Some(c.try_length))?,
                    handler_start: clause_label(c.handler_offset, None)?,
                    handler_end: clause_label(c.handler_offset, Some(c.handler_length))?,
                })
            })
            .collect::<Result<Vec<_>, IlError>>()?;
        let next_label = instructions.len() as u32;
        Ok(Method {
            max_stack: body.max_stack,
            local_var_sig: body.local_var_sig,
            init_locals: body.init_locals,
            instructions,
            clauses,
            encoding: Encoding::default(),
            next_label,
        })
    }

    /// A fresh label, not yet attached to an instruction.
    pub fn new_label(&mut self) -> Label {
        let l = Label(self.next_label);
        self.next_label += 1;
        l
    }

    /// The index of the instruction a label names (`None` for [`Label::END`] or an unknown
    /// label).
    pub fn index_of(&self, label: Label) -> Option<usize> {
        self.instructions.iter().position(|i| i.label == label)
    }

    /// A map from labels to instruction indexes ([`Label::END`] maps to the instruction count).
    pub fn label_indexes(&self) -> HashMap<Label, usize> {
        let mut map: HashMap<Label, usize> = self
            .instructions
            .iter()
            .enumerate()
            .map(|(i, ins)| (ins.label, i))
            .collect();
        map.insert(Label::END, self.instructions.len());
        map
    }

    /// The instructions without their labels, each branch target given as the index of the
    /// instruction it reaches (the instruction count for [`Label::END`], `u32::MAX` for a label
    /// no instruction has): what two methods
    /// must share to do the same, whatever labels each was built with.
    pub fn indexed_instructions(&self) -> Vec<(OpCode, Operand)> {
        let labels = self.label_indexes();
        let index = |l: &Label| Label(labels.get(l).map_or(u32::MAX, |&i| i as u32));
        self.instructions
            .iter()
            .map(|i| {
                let operand = match &i.operand {
                    Operand::Target(l) => Operand::Target(index(l)),
                    Operand::Switch(ls) => Operand::Switch(ls.iter().map(index).collect()),
                    o => o.clone(),
                };
                (i.opcode, operand)
            })
            .collect()
    }

    /// Inserts `code` before the instruction at `index`, which hands its label to the first
    /// inserted instruction: every branch to it, and every clause starting or ending at it,
    /// now reaches the inserted code first (what a probe at the start of a block needs). The
    /// old instruction gets a fresh label. Inserting at the end (`index` = length) appends
    /// after the last instruction; clauses ending at [`Label::END`] then include the new code.
    ///
    /// Returns the index of the old instruction (`index + code.len()`).
    pub fn insert_before(
        &mut self,
        index: usize,
        code: impl IntoIterator<Item = (OpCode, Operand)>,
    ) -> usize {
        let mut new: Vec<Instruction> = code
            .into_iter()
            .map(|(opcode, operand)| Instruction {
                label: Label(0),
                opcode,
                operand,
                original_offset: None,
            })
            .collect();
        for ins in &mut new {
            ins.label = self.new_label();
        }
        let n = new.len();
        if n > 0 && index < self.instructions.len() {
            let fresh = self.new_label();
            let old = std::mem::replace(&mut self.instructions[index].label, fresh);
            new[0].label = old;
        }
        self.instructions.splice(index..index, new);
        index + n
    }

    /// Inserts `code` before the first instruction, to run once each time the method is
    /// entered: unlike [`Method::insert_before`], the first instruction keeps its label, so a
    /// branch back to it (a loop starting at the first instruction) and a `try` starting
    /// there skip the inserted code. Returns the number of instructions inserted.
    pub fn insert_at_entry(&mut self, code: impl IntoIterator<Item = (OpCode, Operand)>) -> usize {
        let n = self.insert_before(0, code);
        if n > 0 && n < self.instructions.len() {
            let inserted = self.instructions[0].label;
            self.instructions[0].label = self.instructions[n].label;
            self.instructions[n].label = inserted;
        }
        n
    }

    /// Computes each instruction's offset, widening short branches whose target is out of
    /// reach (the opcodes of `self` are updated to the forms written).
    pub fn layout(&mut self) -> Result<Layout, IlError> {
        let labels = self.label_indexes();
        let target_index = |l: &Label| -> Result<usize, IlError> {
            labels.get(l).copied().ok_or(IlError::InvalidCode {
                offset: 0,
                what: "branch or clause refers to a label no instruction has",
            })
        };
        // Resolve every target once.
        let mut targets: Vec<Vec<usize>> = Vec::with_capacity(self.instructions.len());
        for ins in &self.instructions {
            let info = ins.opcode.info().ok_or(invalid(0, "unknown opcode"))?;
            if !ins.operand.fits(info.operand) {
                return Err(invalid(0, "operand does not match the opcode"));
            }
            targets.push(match &ins.operand {
                Operand::Target(l) => vec![target_index(l)?],
                Operand::Switch(ls) => ls.iter().map(target_index).collect::<Result<_, _>>()?,
                _ => Vec::new(),
            });
        }
        for c in &self.clauses {
            for l in [c.try_start, c.try_end, c.handler_start, c.handler_end] {
                target_index(&l)?;
            }
            if let Handler::Filter(l) = c.handler {
                target_index(&l)?;
            }
        }
        loop {
            let mut offsets = Vec::with_capacity(self.instructions.len() + 1);
            let mut pos: u64 = 0;
            for ins in &self.instructions {
                offsets.push(pos);
                pos += ins.size() as u64;
            }
            offsets.push(pos);
            if pos > u32::MAX as u64 {
                return Err(IlError::TooLarge {
                    what: "code is larger than 4 GB",
                });
            }
            let mut widened = false;
            for (i, ins) in self.instructions.iter_mut().enumerate() {
                if let Some(long) = ins.opcode.long_form() {
                    let next = offsets[i + 1] as i64;
                    let disp = offsets[targets[i][0]] as i64 - next;
                    if i8::try_from(disp).is_err() {
                        ins.opcode = long;
                        widened = true;
                    }
                }
            }
            if !widened {
                let code_size = offsets.pop().unwrap_or(0) as u32;
                return Ok(Layout {
                    offsets: offsets.into_iter().map(|o| o as u32).collect(),
                    code_size,
                });
            }
        }
    }

    /// Encodes the instructions and clauses into an [`IlBody`] (widening short branches as
    /// needed), with the layout used.
    pub fn to_body(&mut self) -> Result<(IlBody, Layout), IlError> {
        let layout = self.layout()?;
        let labels = self.label_indexes();
        let offset_of = |l: &Label| -> u32 {
            let i = labels[l];
            layout.offsets.get(i).copied().unwrap_or(layout.code_size)
        };
        let mut code = Vec::with_capacity(layout.code_size as usize);
        for (i, ins) in self.instructions.iter().enumerate() {
            ins.opcode.write(&mut code);
            let end = layout
                .offsets
                .get(i + 1)
                .copied()
                .unwrap_or(layout.code_size) as i64;
            match &ins.operand {
                Operand::None => {}
                Operand::I1(v) => code.push(*v as u8),
                Operand::U1(v) => code.push(*v),
                Operand::U2(v) => code.extend_from_slice(&v.to_le_bytes()),
                Operand::I4(v) => code.extend_from_slice(&v.to_le_bytes()),
                Operand::I8(v) => code.extend_from_slice(&v.to_le_bytes()),
                Operand::R4(v) => code.extend_from_slice(&v.to_le_bytes()),
                Operand::R8(v) => code.extend_from_slice(&v.to_le_bytes()),
                Operand::Token(t) => code.extend_from_slice(&t.0.to_le_bytes()),
                Operand::Target(l) => {
                    let disp = offset_of(l) as i64 - end;
                    if ins.opcode.long_form().is_some() {
                        code.push(disp as i8 as u8);
                    } else {
                        code.extend_from_slice(&(disp as i32).to_le_bytes());
                    }
                }
                Operand::Switch(ls) => {
                    code.extend_from_slice(&(ls.len() as u32).to_le_bytes());
                    for l in ls {
                        let disp = offset_of(l) as i64 - end;
                        code.extend_from_slice(&(disp as i32).to_le_bytes());
                    }
                }
            }
        }
        let clauses = self
            .clauses
            .iter()
            .map(|c| {
                let (try_start, handler_start) =
                    (offset_of(&c.try_start), offset_of(&c.handler_start));
                ExceptionClause {
                    kind: match c.handler {
                        Handler::Catch(t) => ClauseKind::Catch(t),
                        Handler::Filter(l) => ClauseKind::Filter {
                            filter_offset: offset_of(&l),
                        },
                        Handler::Finally => ClauseKind::Finally,
                        Handler::Fault => ClauseKind::Fault,
                        Handler::Other { flags, value } => ClauseKind::Other { flags, value },
                    },
                    try_offset: try_start,
                    try_length: offset_of(&c.try_end).wrapping_sub(try_start),
                    handler_offset: handler_start,
                    handler_length: offset_of(&c.handler_end).wrapping_sub(handler_start),
                }
            })
            .collect();
        let body = IlBody {
            max_stack: self.max_stack,
            local_var_sig: self.local_var_sig,
            init_locals: self.init_locals,
            code,
            clauses,
        };
        Ok((body, layout))
    }

    /// Encodes the whole body (header, code, exception table) in [`Method::encoding`]'s forms
    /// where the body allows them.
    pub fn encode(&mut self) -> Result<Vec<u8>, IlError> {
        let (body, _) = self.to_body()?;
        body.encode_with(self.encoding)
    }

    /// The map from original IL offsets to offsets in `layout` (of this method, after
    /// editing) for `SetILInstrumentedCodeMap`: each original instruction maps to the start of
    /// the inserted code right before it, if any, so a breakpoint on it also covers what was
    /// inserted for it. Sorted by both offsets.
    pub fn il_map(&self, layout: &Layout) -> Vec<IlMapEntry> {
        let mut map = Vec::new();
        let mut run_start: Option<u32> = None;
        for (ins, &offset) in self.instructions.iter().zip(&layout.offsets) {
            match ins.original_offset {
                None => {
                    run_start.get_or_insert(offset);
                }
                Some(old) => {
                    map.push(IlMapEntry {
                        old_offset: old,
                        new_offset: run_start.take().unwrap_or(offset),
                    });
                }
            }
        }
        map
    }
}
