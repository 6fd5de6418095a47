//! Frames of JIT-compiled (and ReadyToRun) code that the frame-pointer rule gets wrong.
//!
//! The JIT gives most methods an RBP frame on x86-64 Linux, and the frame-pointer rule
//! unwinds those. But a method whose frame needs no frame pointer (a small method that calls
//! another, such as the precompiled `WaitHandle.WaitOne()`) only pushes registers and moves RSP:
//! its frame record does not exist, so walking the RBP chain through it skips its caller (the
//! chain goes straight from its callee's record to its caller's caller). And a method
//! interrupted in its prologue or epilogue has a frame record that is not set up yet or already
//! gone.
//!
//! The runtime keeps unwind data for its code, but the profiling API does not hand it out. The
//! JIT's prologues are few and regular, though: optionally `vzeroupper`, `push rbp` and the
//! callee-saved registers, `sub rsp, N` (or `push rax`), then `lea rbp, [rsp+X]` or
//! `mov rbp, rsp` when the method has a frame pointer; epilogues are `add rsp`/`lea rsp`, `pop`s
//! and `ret` (or a tail-call `jmp`). [`decode_prologue`] reads a method's prologue from its first
//! bytes into a [`Shape`]; [`step`] unwinds one frame with it. Anything else (large frames with
//! stack probes, an unknown instruction before the frame is complete) is not decoded, and the
//! frame-pointer rule applies as before.

use super::{FrameAt, MethodShapes, StackReader, Step, Stop};

/// Bytes of a method read to decode its prologue.
pub const PROLOGUE_BYTES: usize = 64;
/// Bytes of code read at an interrupted instruction (to recognize an epilogue) or before a
/// return address (to see the call).
pub const CODE_WINDOW: usize = 32;

/// x86-64 register numbers as instructions encode them.
const RAX: u8 = 0;
const RBP: u8 = 5;

/// A method's frame, as its prologue builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Where the body starts: the prologue's length in bytes.
    pub body: u32,
    /// The prologue makes RBP a frame pointer (the frame record is at RBP in the body).
    pub frame_pointer: bool,
    /// An on-stack-replacement version: its frame sits on its Tier0 frame (see [`osr_step`]).
    pub osr: bool,
    /// Registers the prologue pushes, in order (`pushes[..pushed]`).
    pushes: [u8; 8],
    pushed: u8,
    /// Bytes the prologue moves RSP down by, besides the pushes.
    alloc: u32,
    /// Each instruction's end offset, and the frame size (pushes and allocation) after it, up
    /// to where the frame pointer is set (for an interrupted prologue).
    steps: [(u8, u16); 12],
    nsteps: u8,
}

impl Shape {
    /// Frame size in the body, return address excluded.
    pub fn size(&self) -> u32 {
        8 * u32::from(self.pushed) + self.alloc
    }

    /// Frame size (return address excluded) once the prologue ran up to `offset`, and whether
    /// the frame pointer is set by then.
    fn size_at(&self, offset: u32) -> (u32, bool) {
        if offset >= self.body {
            return (self.size(), self.frame_pointer);
        }
        let done = self.steps[..self.nsteps as usize]
            .iter()
            .take_while(|(end, _)| u32::from(*end) <= offset)
            .last();
        (done.map_or(0, |&(_, size)| u32::from(size)), false)
    }

    /// Where the prologue saved RBP, as an offset from the stack pointer in the body, if it
    /// pushed it without making it the frame pointer.
    fn saved_rbp(&self) -> Option<u32> {
        let i = self.pushes[..self.pushed as usize]
            .iter()
            .position(|&r| r == RBP)?;
        Some(self.alloc + 8 * (u32::from(self.pushed) - 1 - i as u32))
    }
}

/// Decodes the prologue at the start of `code`. `None` when it is not one of the JIT's
/// regular shapes: then nothing is known and the frame-pointer rule applies.
pub fn decode_prologue(code: &[u8]) -> Option<Shape> {
    let mut shape = Shape {
        body: 0,
        frame_pointer: false,
        osr: false,
        pushes: [0; 8],
        pushed: 0,
        alloc: 0,
        steps: [(0, 0); 12],
        nsteps: 0,
    };
    let mut at = 0usize;
    let mut size = 0u32;
    let push = |shape: &mut Shape, reg: u8| -> Option<()> {
        let slot = shape.pushes.get_mut(shape.pushed as usize)?;
        *slot = reg;
        shape.pushed += 1;
        Some(())
    };
    loop {
        let rest = code.get(at..)?;
        let (len, effect) = match rest {
            [0xc5, 0xf8, 0x77, ..] => (3, Effect::None), // vzeroupper
            // An on-stack-replacement method's prologue: `mov rax, [rbp]; push rax` saves the
            // frame pointer of its Tier0 frame's caller (then `mov rbp, rsp`).
            [0x48, 0x8b, 0x45, 0x00, 0x50, ..] if shape.pushed == 0 && size == 0 => {
                shape.osr = true;
                (5, Effect::Push(RBP))
            }
            [0x50, ..] => (1, Effect::Alloc(8)), // push rax: 8 bytes of frame
            [r @ (0x53 | 0x55 | 0x56 | 0x57), ..] => (1, Effect::Push(*r - 0x50)),
            [0x41, r @ 0x54..=0x57, ..] => (2, Effect::Push(*r - 0x50 + 8)),
            [0x48, 0x83, 0xec, imm, ..] => (4, Effect::Alloc(u32::from(*imm))),
            [0x48, 0x81, 0xec, a, b, c, d, ..] => {
                (7, Effect::Alloc(u32::from_le_bytes([*a, *b, *c, *d])))
            }
            // lea rbp, [rsp+disp8] / [rsp+disp32]; mov rbp, rsp (both encodings).
            [0x48, 0x8d, 0x6c, 0x24, _, ..] => (5, Effect::FramePointer),
            [0x48, 0x8d, 0xac, 0x24, _, _, _, _, ..] => (8, Effect::FramePointer),
            [0x48, 0x8b, 0xec, ..] | [0x48, 0x89, 0xe5, ..] => (3, Effect::FramePointer),
            // lea reg, [rsp+disp]: the start of a large frame's stack probe, which moves RSP
            // later in ways not decoded here.
            [0x48 | 0x4c, 0x8d, modrm, 0x24, ..] if modrm & 0x07 == 0x04 => return None,
            _ => break,
        };
        match effect {
            Effect::None => {}
            Effect::Push(reg) => {
                push(&mut shape, reg)?;
                size += 8;
            }
            Effect::Alloc(bytes) => {
                shape.alloc = shape.alloc.checked_add(bytes)?;
                size = size.checked_add(bytes)?;
            }
            Effect::FramePointer => {
                // A frame pointer needs RBP saved first.
                if !shape.pushes[..shape.pushed as usize].contains(&RBP) {
                    return None;
                }
                shape.frame_pointer = true;
            }
        }
        at += len;
        if let Some(step) = shape.steps.get_mut(shape.nsteps as usize) {
            *step = (u8::try_from(at).ok()?, u16::try_from(size).ok()?);
            shape.nsteps += 1;
        }
        if shape.frame_pointer {
            break;
        }
    }
    // Calls need RSP 16-byte aligned: a method that calls has an odd number of 8-byte slots
    // (with the return address, an even one). A frame that is not (a leaf, or a prologue that
    // goes on with something not decoded here) is only trusted when it is empty.
    if !shape.frame_pointer && shape.size() % 16 != 8 && shape.size() != 0 {
        return None;
    }
    shape.body = u32::try_from(at).ok()?;
    Some(shape)
}

/// What one prologue instruction does.
enum Effect {
    None,
    Push(u8),
    Alloc(u32),
    FramePointer,
}

/// Unwinds one managed frame at `at` whose method starts at `start` with `shape`, when the
/// frame-pointer rule would be wrong for it: a method without frame pointer, or the
/// interrupted frame in its prologue or epilogue (`code_at_pc` holds the bytes at `at.pc`).
/// `None` when the frame-pointer rule is right (the body of a method with a frame pointer).
pub(super) fn step(
    shape: &Shape,
    start: usize,
    at: FrameAt,
    code_at_pc: &[u8],
    reader: &mut StackReader<'_>,
    code: &mut dyn MethodShapes,
) -> Option<Step> {
    let offset = u32::try_from(at.pc.checked_sub(start)?).ok()?;
    if at.first {
        if offset < shape.body {
            let (size, fp) = shape.size_at(offset);
            if fp {
                return None;
            }
            return Some(frame_at(reader, at.sp, u64::from(size), None, at.bp));
        }
        if let Some(found) = epilogue(code_at_pc, at, reader) {
            return Some(found);
        }
    }
    if shape.osr && offset >= shape.body {
        return osr_step(at.bp, reader, code);
    }
    if shape.frame_pointer {
        return None;
    }
    if shape.size() == 0 {
        // Nothing decoded: a leaf without any frame, or a prologue this decoder does not
        // know. Only a return address on top of the stack tells which.
        if !at.first {
            return None;
        }
        let ra = reader.read(at.sp)?;
        if !returns_after_a_call(ra, code) {
            return None;
        }
        return Some(Step::Caller {
            ra,
            sp: at.sp + 8,
            bp: at.bp,
        });
    }
    let size = u64::from(shape.size());
    let saved_rbp = shape.saved_rbp().map(u64::from);
    let step = frame_at(reader, at.sp, size, saved_rbp, at.bp);
    // Beyond the handler's copy of the stack, words are read from memory the thread may have
    // used again since the sample (only frame records are kept from the sample): a return
    // address that does not follow a call is such a word, and the frame-pointer rule (which
    // skips this frame's caller, but not into garbage) does better.
    if let Step::Caller { ra, .. } = step
        && !returns_after_a_call(ra, code)
    {
        return None;
    }
    Some(step)
}

/// Whether the code just before `ra` is a call instruction, as before any return address.
fn returns_after_a_call(ra: usize, code: &mut dyn MethodShapes) -> bool {
    ra.checked_sub(CALL_BYTES)
        .and_then(|at| code.code_at(at))
        .is_some_and(|before| follows_a_call(&before[..CALL_BYTES]))
}

/// Unwinds an on-stack-replacement (OSR) frame, in its body with frame pointer `bp`, together
/// with the Tier0 frame it replaced: one frame of the method, as the runtime's own stack walk
/// shows it.
///
/// A method that loops long in its first (Tier0) call moves to an optimized OSR version in the
/// middle of that call: the runtime's patchpoint helper enters the OSR code with RSP 8 bytes
/// below the Tier0 frame's stack pointer (the slot where the call to the helper pushed its
/// return address) and RBP the Tier0 frame's, and the OSR prologue pushes `[rbp]` (the
/// Tier0 frame's saved RBP: its caller's) and makes that its frame record. The frame-pointer
/// rule therefore finds a stale return address into the Tier0 code, then the caller's frame
/// record taken as the Tier0 frame's, and skips the caller. Instead: the Tier0 frame starts at
/// `bp + 16`, and its own prologue's shape says where its return address and saved RBP are.
/// `None` (the frame-pointer rule) if the Tier0 code's shape is not known.
fn osr_step(bp: usize, reader: &mut StackReader<'_>, code: &mut dyn MethodShapes) -> Option<Step> {
    let tier0_pc = reader.read(bp.checked_add(8)?)?;
    let (_, tier0) = code.shape_at(tier0_pc.checked_sub(1)?)?;
    if tier0.osr {
        return None;
    }
    let tier0_sp = bp.checked_add(16)?;
    let saved_rbp = tier0.saved_rbp().map(u64::from);
    Some(frame_at(
        reader,
        tier0_sp,
        u64::from(tier0.size()),
        saved_rbp,
        bp,
    ))
}

/// The longest call instruction [`follows_a_call`] recognizes.
const CALL_BYTES: usize = 8;

/// True if `code`, the [`CALL_BYTES`] bytes just before a return address, ends with a call
/// instruction: direct (`call rel32`), through memory (`call [rip+disp32]`, `call [reg+disp]`)
/// or a register (`call reg`), with or without a REX prefix.
fn follows_a_call(code: &[u8]) -> bool {
    if code.len() < CALL_BYTES {
        return false;
    }
    let at = |back: usize| &code[code.len() - back..];
    let is_call_modrm = |modrm: u8, mode: u8| modrm >> 6 == mode && (modrm >> 3) & 7 == 2;
    let rex = |b: u8| (0x40..=0x4f).contains(&b);
    at(5)[0] == 0xe8
        || (at(6)[0] == 0xff && at(6)[1] == 0x15)
        || (at(2)[0] == 0xff && is_call_modrm(at(2)[1], 3))
        || (rex(at(3)[0]) && at(3)[1] == 0xff && is_call_modrm(at(3)[2], 3))
        || (at(3)[0] == 0xff && is_call_modrm(at(3)[1], 1))
        || (rex(at(4)[0]) && at(4)[1] == 0xff && is_call_modrm(at(4)[2], 1))
        || (at(6)[0] == 0xff && is_call_modrm(at(6)[1], 2))
        || (rex(at(7)[0]) && at(7)[1] == 0xff && is_call_modrm(at(7)[2], 2))
}

/// The caller of a frame of `size` bytes at `sp` (return address just above it), whose RBP is
/// at `sp + saved_rbp` if saved, else still `bp`.
fn frame_at(
    reader: &mut StackReader<'_>,
    sp: usize,
    size: u64,
    saved_rbp: Option<u64>,
    bp: usize,
) -> Step {
    let Some(ra_at) = usize::try_from(size).ok().and_then(|s| sp.checked_add(s)) else {
        return Step::Stop(Stop::BadCfi);
    };
    let Some(ra) = reader.read(ra_at) else {
        return Step::Stop(Stop::Unreadable);
    };
    let bp = match saved_rbp {
        Some(off) => match usize::try_from(off)
            .ok()
            .and_then(|o| sp.checked_add(o))
            .and_then(|a| reader.read(a))
        {
            Some(bp) => bp,
            None => return Step::Stop(Stop::Unreadable),
        },
        None => bp,
    };
    Step::Caller {
        ra,
        sp: ra_at + 8,
        bp,
    }
}

/// If the instructions at the interrupted pc are an epilogue (`add rsp`, `lea rsp, [rbp+X]`,
/// `pop`s, then `ret` or a tail-call `jmp`), the caller's frame after running it.
fn epilogue(code: &[u8], at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step> {
    let mut sp = at.sp;
    let mut bp = at.bp;
    let mut i = 0usize;
    let mut steps = 0;
    loop {
        let rest = code.get(i..)?;
        match rest {
            [0x48, 0x83, 0xc4, imm, ..] => {
                sp = sp.checked_add(usize::from(*imm))?;
                i += 4;
            }
            [0x48, 0x81, 0xc4, a, b, c, d, ..] => {
                sp = sp.checked_add(u32::from_le_bytes([*a, *b, *c, *d]) as usize)?;
                i += 7;
            }
            // lea rsp, [rbp+disp8]
            [0x48, 0x8d, 0x65, d, ..] => {
                sp = bp.checked_add_signed(isize::from(*d as i8))?;
                i += 4;
            }
            [r @ (0x58 | 0x5b | 0x5d | 0x5e | 0x5f), ..] => {
                let value = reader.read(sp)?;
                if *r - 0x58 == RBP {
                    bp = value;
                } else if *r - 0x58 == RAX {
                    // pop rax: the 8 bytes of frame `push rax` reserved.
                }
                sp += 8;
                i += 1;
            }
            [0x41, 0x5c..=0x5f, ..] => {
                reader.read(sp)?;
                sp += 8;
                i += 2;
            }
            // ret, or a tail call: the return address is on top.
            [0xc3, ..] | [0xe9, ..] | [0x48, 0xff, 0xe0..=0xe7, ..] | [0xff, 0xe0..=0xe7, ..] => {
                if steps == 0 && !matches!(rest, [0xc3, ..]) {
                    // A jump with no epilogue before it is just a jump in the body.
                    return None;
                }
                let ra = reader.read(sp)?;
                return Some(Step::Caller { ra, sp: sp + 8, bp });
            }
            _ => return None,
        }
        steps += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_jits_prologues() {
        // push rbp; push rbx; sub rsp, 0x18; lea rbp, [rsp+0x20]: a frame pointer method.
        let fp = decode_prologue(&[
            0x55, 0x53, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8d, 0x6c, 0x24, 0x20, 0x90,
        ])
        .unwrap();
        assert!(fp.frame_pointer);
        assert_eq!(fp.body, 11);
        assert_eq!(fp.size(), 0x28);
        // push rax; mov edi, -1; call ...: a frameless method that calls.
        let small = decode_prologue(&[0x50, 0xbf, 0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(!small.frame_pointer);
        assert_eq!((small.body, small.size()), (1, 8));
        // push rdi; push rsi; push rbx; sub rsp, 0x20: frameless, 0x38 bytes.
        let pushes = decode_prologue(&[0x57, 0x56, 0x53, 0x48, 0x83, 0xec, 0x20, 0x8b]).unwrap();
        assert_eq!(pushes.size(), 0x38);
        assert_eq!(pushes.size_at(0), (0, false));
        assert_eq!(pushes.size_at(2), (16, false));
        // push rbp as a plain callee-saved register (no frame pointer) is found again.
        let rbp_saved = decode_prologue(&[0x55, 0x48, 0x83, 0xec, 0x10, 0x90]).unwrap();
        assert!(!rbp_saved.frame_pointer);
        assert_eq!(rbp_saved.saved_rbp(), Some(0x10));
        // A leaf with no frame at all.
        assert_eq!(decode_prologue(&[0x8b, 0xc7, 0xc3]).unwrap().size(), 0);
        // An on-stack-replacement method: mov rax, [rbp]; push rax; mov rbp, rsp.
        let osr = decode_prologue(&[0x48, 0x8b, 0x45, 0x00, 0x50, 0x48, 0x8b, 0xec, 0x48]).unwrap();
        assert!(osr.frame_pointer && osr.osr);
        assert_eq!((osr.body, osr.size()), (8, 8));
        assert!(!fp.osr && !small.osr);
        // A misaligned frame that goes on with an unknown instruction is not trusted.
        assert!(decode_prologue(&[0x53, 0x48, 0x8d, 0x84, 0x24, 0, 0, 0, 0]).is_none());
        // A frame pointer without RBP pushed is not a JIT prologue.
        assert!(decode_prologue(&[0x48, 0x8b, 0xec]).is_none());
    }

    #[test]
    fn recognizes_calls_before_return_addresses() {
        let before = |tail: &[u8]| {
            let mut code = [0x90u8; CALL_BYTES];
            code[CALL_BYTES - tail.len()..].copy_from_slice(tail);
            follows_a_call(&code)
        };
        assert!(before(&[0xe8, 1, 2, 3, 4])); // call rel32
        assert!(before(&[0xff, 0x15, 1, 2, 3, 4])); // call [rip+disp32]
        assert!(before(&[0xff, 0xd0])); // call rax
        assert!(before(&[0x41, 0xff, 0xd3])); // call r11
        assert!(before(&[0xff, 0x50, 0x08])); // call [rax+8]
        assert!(before(&[0xff, 0x90, 1, 0, 0, 0])); // call [rax+disp32]
        assert!(!before(&[0x48, 0x89, 0xc7])); // mov rdi, rax
        assert!(!before(&[0xff, 0xe0])); // jmp rax
    }
}
