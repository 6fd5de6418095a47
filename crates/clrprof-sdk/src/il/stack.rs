//! Maximum evaluation stack depth, recomputed from the instructions.

use crate::ids::Token;
use crate::metadata::signature::read_compressed;

use super::IlError;
use super::instruction::Operand;
use super::method::{Handler, Method};
use super::opcodes::{Flow, OpCode, StackCount};

/// The stack effect of a method signature at a call site.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CallSite {
    /// Number of parameters (all of them, for a vararg call site).
    pub params: u16,
    /// The signature has an implicit `this` (`HASTHIS` without `EXPLICITTHIS`).
    pub has_this: bool,
    /// The return type is not `void`.
    pub returns_value: bool,
}

const SIG_GENERIC: u8 = 0x10;
const SIG_HASTHIS: u8 = 0x20;
const SIG_EXPLICITTHIS: u8 = 0x40;
const ELEMENT_TYPE_VOID: u8 = 0x01;
const ELEMENT_TYPE_CMOD_REQD: u8 = 0x1F;
const ELEMENT_TYPE_CMOD_OPT: u8 = 0x20;

impl CallSite {
    /// Reads a MethodDefSig, MethodRefSig or StandAloneMethodSig blob.
    pub fn from_signature(sig: &[u8]) -> Option<CallSite> {
        let conv = *sig.first()?;
        let mut pos = 1;
        if conv & SIG_GENERIC != 0 {
            pos += read_compressed(sig.get(pos..)?)?.1;
        }
        let (params, len) = read_compressed(sig.get(pos..)?)?;
        pos += len;
        // Custom modifiers may precede the return type.
        while let Some(&b) = sig.get(pos) {
            if b != ELEMENT_TYPE_CMOD_REQD && b != ELEMENT_TYPE_CMOD_OPT {
                break;
            }
            pos += 1 + read_compressed(sig.get(pos + 1..)?)?.1;
        }
        Some(CallSite {
            params: u16::try_from(params).ok()?,
            has_this: conv & SIG_HASTHIS != 0 && conv & SIG_EXPLICITTHIS == 0,
            returns_value: *sig.get(pos)? != ELEMENT_TYPE_VOID,
        })
    }
}

fn invalid(offset: Option<u32>, what: &'static str) -> IlError {
    IlError::InvalidCode {
        offset: offset.unwrap_or(0),
        what,
    }
}

/// The deepest evaluation stack `method` reaches, following every path from the entry and
/// from every handler and filter (which start with the exception on the stack). Code no path
/// reaches is analysed from an empty stack. `call_site` gives the signature of the token of a
/// `call`, `callvirt`, `newobj`, `calli` (a StandAloneSig) or `jmp`.
///
/// Errors on a stack that underflows, on two paths that reach an instruction with different
/// depths, and on a token `call_site` cannot resolve.
pub fn max_stack(
    method: &Method,
    mut call_site: impl FnMut(OpCode, Token) -> Option<CallSite>,
) -> Result<u16, IlError> {
    let n = method.instructions.len();
    let labels = method.label_indexes();
    let mut depth: Vec<Option<u32>> = vec![None; n + 1];
    let mut work: Vec<usize> = Vec::new();
    let mut max = 0u32;
    let seed = |i: usize, d: u32, depth: &mut Vec<Option<u32>>, work: &mut Vec<usize>| {
        if i < n && depth[i].is_none() {
            depth[i] = Some(d);
            work.push(i);
        }
    };
    seed(0, 0, &mut depth, &mut work);
    for c in &method.clauses {
        let on_entry = match c.handler {
            Handler::Catch(_) | Handler::Filter(_) => 1,
            _ => 0,
        };
        if let Some(&i) = labels.get(&c.handler_start) {
            seed(i, on_entry, &mut depth, &mut work);
        }
        if let Handler::Filter(l) = c.handler
            && let Some(&i) = labels.get(&l)
        {
            seed(i, 1, &mut depth, &mut work);
        }
    }
    let mut next_unreached = 0;
    loop {
        while let Some(i) = work.pop() {
            let ins = &method.instructions[i];
            let at = ins.original_offset;
            let info = ins.opcode.info().ok_or(invalid(at, "unknown opcode"))?;
            let d_in = depth[i].unwrap_or(0);
            max = max.max(d_in);
            let mut site = || -> Result<CallSite, IlError> {
                match ins.operand {
                    Operand::Token(t) => call_site(ins.opcode, t),
                    _ => None,
                }
                .ok_or(invalid(at, "call signature unknown"))
            };
            let (pops, pushes) = match (info.pops, info.pushes) {
                (StackCount::Fixed(p), StackCount::Fixed(q)) => (p as u32, q as u32),
                (StackCount::All, _) => (d_in, 0),
                (StackCount::Call, push) => {
                    let s = site()?;
                    let this = u32::from(s.has_this);
                    match ins.opcode {
                        OpCode::NEWOBJ => (s.params as u32, 1),
                        OpCode::CALLI => (s.params as u32 + this + 1, u32::from(s.returns_value)),
                        _ => (
                            s.params as u32 + this,
                            match push {
                                StackCount::Fixed(q) => q as u32,
                                _ => u32::from(s.returns_value),
                            },
                        ),
                    }
                }
                (StackCount::Fixed(p), _) => (p as u32, 0),
            };
            let d_out = d_in
                .checked_sub(pops)
                .ok_or(invalid(at, "evaluation stack underflow"))?
                + pushes;
            max = max.max(d_out);
            let mut successors: Vec<(usize, u32)> = Vec::new();
            let target = |l| labels.get(l).copied().ok_or(invalid(at, "unknown label"));
            match info.flow {
                Flow::Next | Flow::Call | Flow::Break | Flow::Prefix => {
                    successors.push((i + 1, d_out))
                }
                Flow::Branch => {
                    if let Operand::Target(l) = &ins.operand {
                        let leave = matches!(ins.opcode, OpCode::LEAVE | OpCode::LEAVE_S);
                        successors.push((target(l)?, if leave { 0 } else { d_out }));
                    }
                }
                Flow::CondBranch => {
                    match &ins.operand {
                        Operand::Target(l) => successors.push((target(l)?, d_out)),
                        Operand::Switch(ls) => {
                            for l in ls {
                                successors.push((target(l)?, d_out));
                            }
                        }
                        _ => {}
                    }
                    successors.push((i + 1, d_out));
                }
                Flow::Return | Flow::Throw => {}
            }
            for (s, d) in successors {
                if s >= n {
                    continue;
                }
                match depth[s] {
                    None => {
                        depth[s] = Some(d);
                        work.push(s);
                    }
                    Some(existing) if existing != d => {
                        return Err(invalid(
                            method.instructions[s].original_offset,
                            "paths reach an instruction with different stack depths",
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        // Unreachable code: analyse it from an empty stack.
        while next_unreached < n && depth[next_unreached].is_some() {
            next_unreached += 1;
        }
        if next_unreached == n {
            break;
        }
        depth[next_unreached] = Some(0);
        work.push(next_unreached);
    }
    u16::try_from(max).map_err(|_| IlError::TooLarge {
        what: "evaluation stack deeper than 65535",
    })
}
