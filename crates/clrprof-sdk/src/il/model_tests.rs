//! Tests of the instruction-level model.

use super::asm::{ldc_i4, op};
use super::*;
use crate::ids::Token;

/// A fat body around `code` with the given clauses, max stack 8.
fn fat(code: &[u8], clauses: Vec<ExceptionClause>) -> Vec<u8> {
    IlBody {
        max_stack: 8,
        local_var_sig: Token(0x1100_0001),
        init_locals: true,
        code: code.to_vec(),
        clauses,
    }
    .encode()
    .unwrap()
}

fn no_calls(_: OpCode, _: Token) -> Option<CallSite> {
    None
}

#[test]
fn decodes_every_operand_kind_and_round_trips() {
    #[rustfmt::skip]
    let code = [
        0x00,                               // nop
        0x1F, 0xFE,                         // ldc.i4.s -2
        0x20, 0x78, 0x56, 0x34, 0x12,       // ldc.i4 0x12345678
        0x21, 1, 2, 3, 4, 5, 6, 7, 8,       // ldc.i8
        0x22, 0x00, 0x00, 0xC0, 0x7F,       // ldc.r4 NaN
        0x23, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, // ldc.r8 1.0
        0x0E, 0x05,                         // ldarg.s 5
        0xFE, 0x0C, 0x34, 0x12,             // ldloc 0x1234
        0x72, 0x01, 0x00, 0x00, 0x70,       // ldstr 0x70000001
        0xFE, 0x12, 0x01,                   // unaligned. 1
        0xFE, 0x13,                         // volatile.
        0x4A,                               // ldind.i4
        0x45, 2, 0, 0, 0, 0, 0, 0, 0, 0xF2, 0xFF, 0xFF, 0xFF, // switch (+0, -14)
        0x2B, 0xFE,                         // br.s -2 (itself)
        0x38, 0, 0, 0, 0,                   // br +0
        0x2A,                               // ret
    ];
    let bytes = fat(&code, vec![]);
    let mut m = Method::parse(&bytes).unwrap();
    let ops: Vec<_> = m.instructions.iter().map(|i| i.opcode).collect();
    assert_eq!(
        ops,
        [
            OpCode::NOP,
            OpCode::LDC_I4_S,
            OpCode::LDC_I4,
            OpCode::LDC_I8,
            OpCode::LDC_R4,
            OpCode::LDC_R8,
            OpCode::LDARG_S,
            OpCode::LDLOC,
            OpCode::LDSTR,
            OpCode::UNALIGNED,
            OpCode::VOLATILE,
            OpCode::LDIND_I4,
            OpCode::SWITCH,
            OpCode::BR_S,
            OpCode::BR,
            OpCode::RET
        ]
    );
    assert_eq!(m.instructions[1].operand, Operand::I1(-2));
    assert_eq!(
        m.instructions[3].operand,
        Operand::I8(0x0807_0605_0403_0201)
    );
    assert_eq!(m.instructions[4].operand, Operand::R4(0x7FC0_0000));
    assert_eq!(m.instructions[7].operand, Operand::U2(0x1234));
    assert_eq!(
        m.instructions[8].operand,
        Operand::Token(Token(0x7000_0001))
    );
    // switch at 48, 13 bytes: its targets are the br.s right after it (61) and ldind.i4 (47).
    let labels = m.label_indexes();
    let Operand::Switch(ts) = &m.instructions[12].operand else {
        panic!()
    };
    assert_eq!(labels[&ts[0]], 13);
    assert_eq!(m.instructions[labels[&ts[1]]].original_offset, Some(47));
    assert_eq!(
        m.instructions[13].operand,
        Operand::Target(m.instructions[13].label)
    );
    assert_eq!(m.encode().unwrap(), bytes);
}

#[test]
fn invalid_code_is_refused() {
    let bad = |code: &[u8]| Method::decode(&IlBody::new(code.to_vec())).unwrap_err();
    assert!(matches!(
        bad(&[0x24]),
        IlError::InvalidCode {
            offset: 0,
            what: "unknown opcode"
        }
    ));
    assert!(matches!(
        bad(&[0x00, 0xFE]),
        IlError::InvalidCode { offset: 2, .. }
    ));
    assert!(matches!(
        bad(&[0x20, 1, 2]),
        IlError::InvalidCode { offset: 1, .. }
    ));
    // br.s into the middle of ldc.i4.
    assert!(matches!(
        bad(&[0x2B, 0x01, 0x20, 0, 0, 0, 0]),
        IlError::InvalidCode {
            offset: 0,
            what: "target is not the start of an instruction"
        }
    ));
    // A switch whose count runs past the code.
    assert!(matches!(
        bad(&[0x45, 0xFF, 0xFF, 0xFF, 0xFF]),
        IlError::InvalidCode { .. }
    ));
    // A branch to the very end is allowed (a label at the end of the code).
    let m = Method::decode(&IlBody::new(vec![0x2B, 0x00])).unwrap();
    assert_eq!(m.instructions[0].operand, Operand::Target(Label::END));
}

#[test]
fn inserting_widens_short_branches_and_moves_labels() {
    // 0: ldc.i4.0; 1: brfalse.s +1 -> 4 (ret); 3: nop; 4: ret
    let mut m = Method::decode(&IlBody::new(vec![0x16, 0x2C, 0x01, 0x00, 0x2A])).unwrap();
    // 200 nops before the nop, so that the target `ret` moves out of the short form's reach.
    m.insert_before(2, (0..200).map(|_| op(OpCode::NOP, Operand::None)));
    let (body, layout) = m.to_body().unwrap();
    assert_eq!(m.instructions[1].opcode, OpCode::BRFALSE);
    assert_eq!(&body.code[1..6], &[0x39, 201, 0, 0, 0]);
    assert_eq!(body.code.len(), 1 + 5 + 201 + 1);
    assert_eq!(layout.offsets[203], 207);
    // A probe inserted before the ret takes its label: the branch now lands on the probe.
    let ret = m.instructions.len() - 1;
    let old_ret_label = m.instructions[ret].label;
    m.insert_before(ret, [ldc_i4(1000), op(OpCode::POP, Operand::None)]);
    assert_eq!(m.instructions[ret].label, old_ret_label);
    assert_eq!(m.instructions[ret].opcode, OpCode::LDC_I4);
    let (body, layout) = m.to_body().unwrap();
    assert_eq!(&body.code[1..6], &[0x39, 201, 0, 0, 0]);
    assert_eq!(body.code[207], 0x20);
    // IL map: the original ret (old 4) maps to the probe before it; the nop (old 3) to the
    // 200 inserted nops before it.
    let map = m.il_map(&layout);
    let pairs: Vec<_> = map.iter().map(|e| (e.old_offset, e.new_offset)).collect();
    assert_eq!(pairs, [(0, 0), (1, 1), (3, 6), (4, 207)]);
}

#[test]
fn backward_branches_widen_and_clauses_follow() {
    // try { 0: nop; 1: leave.s -> 5 } finally { 3: nop; 4: endfinally } 5: br.s -> 0 (loop)
    let code = [0x00, 0xDE, 0x02, 0x00, 0xDC, 0x2B, 0xF9];
    let clause = ExceptionClause {
        kind: ClauseKind::Finally,
        try_offset: 0,
        try_length: 3,
        handler_offset: 3,
        handler_length: 2,
    };
    let bytes = fat(&code, vec![clause]);
    let mut m = Method::parse(&bytes).unwrap();
    assert_eq!(m.encode().unwrap(), bytes);
    // A probe at the start of the try (index 0) and of the handler (index 3 -> 2 + probe).
    let probe = || vec![ldc_i4(7), op(OpCode::POP, Operand::None)];
    let at = m.insert_before(0, probe());
    assert_eq!(at, 2);
    m.insert_before(4, probe());
    m.insert_before(0, (0..130).map(|_| op(OpCode::NOP, Operand::None)));
    let (body, _) = m.to_body().unwrap();
    // The loop branch is now long; the try starts at the 130 nops (they took the label of
    // the old first instruction); the handler starts at its probe.
    let last = m.instructions.last().unwrap();
    assert_eq!(last.opcode, OpCode::BR);
    assert_eq!(
        body.clauses[0],
        ExceptionClause {
            kind: ClauseKind::Finally,
            try_offset: 0,
            try_length: 130 + 2 + 3,
            handler_offset: 135,
            handler_length: 2 + 2,
        }
    );
    assert_eq!(&body.code[139..144], &[0x38, 0x70, 0xFF, 0xFF, 0xFF]);
    // The leave still lands on the br.
    assert_eq!(&body.code[133..135], &[0xDE, 0x04]);
}

#[test]
fn basic_blocks_follow_branches_clauses_and_prefixes() {
    // 0 ldarg.0; 1 switch(2) -> A, B; 14 br.s C
    // A 16: ldc.i4.1; 17 pop; 18 br.s C
    // B 20: tail. 22 call tok; 27 ret
    // C 28: ret
    #[rustfmt::skip]
    let code = [
        0x02,
        0x45, 2, 0, 0, 0, 2, 0, 0, 0, 6, 0, 0, 0,
        0x2B, 0x0C,
        0x17, 0x26, 0x2B, 0x08,
        0xFE, 0x14, 0x28, 1, 0, 0, 0x06, 0x2A,
        0x2A,
    ];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    let blocks = basic_blocks(&m);
    let starts: Vec<_> = blocks
        .iter()
        .map(|b| m.instructions[b.start].original_offset.unwrap())
        .collect();
    assert_eq!(starts, [0, 14, 16, 20, 28]);
    assert_eq!(blocks[3], BasicBlock { start: 6, end: 9 });
    // Max stack: ldarg.0 (1); the call takes 0 args (static, returns int32) -> 1.
    let sig = [0x00, 0x00, 0x08];
    let site = CallSite::from_signature(&sig).unwrap();
    assert_eq!(
        site,
        CallSite {
            params: 0,
            has_this: false,
            returns_value: true
        }
    );
    assert_eq!(max_stack(&m, |_, _| Some(site)), Ok(1));
    assert!(matches!(
        max_stack(&m, no_calls),
        Err(IlError::InvalidCode { offset: 22, .. })
    ));

    // Clause boundaries start blocks, and a filter starts one too.
    // try { 0 nop; 1 leave.s 10 } filter { 3 ldnull; 4 cgt.un; 6 endfilter }
    // handler { 8 leave.s 10 } 10 ret
    let code = [
        0x00, 0xDE, 0x07, 0x14, 0xFE, 0x03, 0xFE, 0x11, 0xDE, 0x00, 0x2A,
    ];
    let clause = ExceptionClause {
        kind: ClauseKind::Filter { filter_offset: 3 },
        try_offset: 0,
        try_length: 3,
        handler_offset: 8,
        handler_length: 2,
    };
    let m = Method::parse(&fat(&code, vec![clause])).unwrap();
    let starts: Vec<_> = basic_blocks(&m)
        .iter()
        .map(|b| m.instructions[b.start].original_offset.unwrap())
        .collect();
    assert_eq!(starts, [0, 3, 8, 10]);
    // The filter starts with the exception on the stack and pushes 1 more.
    assert_eq!(max_stack(&m, no_calls), Ok(2));
}

#[test]
fn max_stack_follows_calls_joins_and_errors() {
    // ldarg.0 ldarg.1 ldarg.2 callvirt (this + 2 params, returns) dup add ret
    let code = [0x02, 0x03, 0x04, 0x6F, 1, 0, 0, 0x0A, 0x25, 0x58, 0x2A];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    let sig = [0x20, 0x02, 0x08, 0x08, 0x08];
    assert_eq!(max_stack(&m, |_, _| CallSite::from_signature(&sig)), Ok(3));
    // newobj with 2 params: pops 2, pushes 1; a void instance call pops 3 and pushes nothing.
    let code = [0x02, 0x03, 0x73, 1, 0, 0, 0x06, 0x26, 0x2A];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    assert_eq!(
        max_stack(&m, |_, _| CallSite::from_signature(&[0x20, 2, 1, 8, 8])),
        Ok(2)
    );
    // Ternary join: both paths reach the join with depth 1.
    // 0 ldarg.0; 1 brtrue.s 5; 3 ldc.i4.1; 4 br.s 6? -> use: 3 ldc.i4.1; 4 br.s +1 -> 7; 6 ldc.i4.2; 7 ret
    let code = [0x02, 0x2D, 0x03, 0x17, 0x2B, 0x01, 0x18, 0x2A];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    assert_eq!(max_stack(&m, no_calls), Ok(1));
    // Mismatched depths at a join, and underflow.
    let code = [0x02, 0x2D, 0x01, 0x17, 0x2A];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    assert!(matches!(
        max_stack(&m, no_calls),
        Err(IlError::InvalidCode {
            offset: 4,
            what: "paths reach an instruction with different stack depths"
        })
    ));
    let m = Method::decode(&IlBody::new(vec![0x26, 0x2A])).unwrap();
    assert!(matches!(
        max_stack(&m, no_calls),
        Err(IlError::InvalidCode { offset: 0, .. })
    ));
    // Unreachable code after a throw is analysed from an empty stack.
    let m = Method::decode(&IlBody::new(vec![
        0x14, 0x7A, 0x17, 0x18, 0x19, 0x26, 0x26, 0x26, 0x2A,
    ]))
    .unwrap();
    assert_eq!(max_stack(&m, no_calls), Ok(3));
    // Signatures: generic with a custom modifier on a void return; explicit this.
    assert_eq!(
        CallSite::from_signature(&[0x30, 0x01, 0x02, 0x1F, 0x09, 0x01, 0x08, 0x08]),
        Some(CallSite {
            params: 2,
            has_this: true,
            returns_value: false
        })
    );
    assert!(
        !CallSite::from_signature(&[0x60, 0x00, 0x01])
            .unwrap()
            .has_this
    );
    assert_eq!(CallSite::from_signature(&[0x00]), None);
}

#[test]
fn encoding_keeps_forms_and_grows_when_needed() {
    // A fat header around a body that would fit a tiny one stays fat.
    let fat_bytes = [0x03, 0x30, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x2A];
    let mut m = Method::parse(&fat_bytes).unwrap();
    assert_eq!(m.encoding.header, HeaderFormat::Fat);
    assert_eq!(m.encode().unwrap(), fat_bytes);
    // A tiny body grows into a fat one when it passes 63 bytes.
    let mut m = Method::parse(&[0x06, 0x2A]).unwrap();
    m.insert_before(0, (0..63).map(|_| op(OpCode::NOP, Operand::None)));
    let bytes = m.encode().unwrap();
    assert_eq!(HeaderFormat::of(&bytes), Some(HeaderFormat::Fat));
    assert_eq!(bytes.len(), 12 + 64);
    // Fat clauses that would fit small ones stay fat.
    let body = IlBody {
        clauses: vec![ExceptionClause {
            kind: ClauseKind::Fault,
            try_offset: 0,
            try_length: 1,
            handler_offset: 1,
            handler_length: 1,
        }],
        ..IlBody::new(vec![0x00, 0xDC, 0x2A])
    };
    let fat_eh = body
        .encode_with(Encoding {
            header: HeaderFormat::Fat,
            fat_clauses: true,
        })
        .unwrap();
    assert_eq!(fat_eh[16], 0x41);
    assert!(Encoding::of(&fat_eh).unwrap().fat_clauses);
    assert_eq!(Method::parse(&fat_eh).unwrap().encode().unwrap(), fat_eh);
    assert_eq!(body.encode().unwrap()[16], 0x01);
}

#[test]
fn appending_locals() {
    assert_eq!(
        append_local(&[], &[0x0A]).unwrap(),
        (vec![0x07, 0x01, 0x0A], 0)
    );
    assert_eq!(
        append_local(&[0x07, 0x02, 0x08, 0x0E], &[0x0A]).unwrap(),
        (vec![0x07, 0x03, 0x08, 0x0E, 0x0A], 2)
    );
    // 127 -> 128 locals: the count grows to two bytes.
    let mut sig = vec![0x07, 0x7F];
    sig.extend(std::iter::repeat_n(0x08, 127));
    let (new, index) = append_local(&sig, &[0x0A]).unwrap();
    assert_eq!(index, 127);
    assert_eq!(&new[..3], &[0x07, 0x80, 0x80]);
    assert_eq!(new.len(), 3 + 128);
    assert!(append_local(&[0x06, 0x00], &[0x08]).is_err());
}

#[test]
fn calli_pops_the_function_pointer_too() {
    // ldarg.0 ldarg.1 ldftn tok calli sig(int32(int32, int32)) ret
    let code = [
        0x02, 0x03, 0xFE, 0x06, 1, 0, 0, 0x06, 0x29, 1, 0, 0, 0x11, 0x2A,
    ];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    let site = |op: OpCode, _| match op {
        OpCode::CALLI => CallSite::from_signature(&[0x00, 0x02, 0x08, 0x08, 0x08]),
        _ => None,
    };
    assert_eq!(max_stack(&m, site), Ok(3));
    // 3 in, 1 out: a following `pop pop` would underflow.
    let code = [
        0x02, 0x03, 0xFE, 0x06, 1, 0, 0, 0x06, 0x29, 1, 0, 0, 0x11, 0x26, 0x26, 0x2A,
    ];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    assert!(matches!(
        max_stack(&m, site),
        Err(IlError::InvalidCode {
            offset: 14,
            what: "evaluation stack underflow"
        })
    ));
}

mod properties {
    use super::*;
    use crate::il::Instruction;
    use proptest::prelude::*;

    /// A random instruction: any opcode, with a random operand of its kind; branch targets are
    /// instruction indexes (`count` is the number of instructions, an index of `count` is the
    /// end of the code).
    fn instruction(count: usize) -> impl Strategy<Value = (OpCode, Operand)> {
        (
            proptest::sample::select(ALL_OPCODES),
            any::<u64>(),
            proptest::collection::vec(0..=count, 0..6),
        )
            .prop_map(move |(opcode, bits, targets)| {
                let operand = match opcode.info().unwrap().operand {
                    OperandKind::None => Operand::None,
                    OperandKind::I1 => Operand::I1(bits as i8),
                    OperandKind::U1 => Operand::U1(bits as u8),
                    OperandKind::U2 => Operand::U2(bits as u16),
                    OperandKind::I4 => Operand::I4(bits as i32),
                    OperandKind::I8 => Operand::I8(bits as i64),
                    OperandKind::R4 => Operand::R4(bits as u32),
                    OperandKind::R8 => Operand::R8(bits),
                    OperandKind::Token => Operand::Token(Token(bits as u32)),
                    OperandKind::ShortBranch | OperandKind::Branch => {
                        Operand::Target(Label(bits as u32 % (count as u32 + 1)))
                    }
                    OperandKind::Switch => {
                        Operand::Switch(targets.into_iter().map(|t| Label(t as u32)).collect())
                    }
                };
                (opcode, operand)
            })
    }

    /// A method whose instruction `i` has label `i` ([`Label::END`] for index `count`).
    fn method() -> impl Strategy<Value = Method> {
        (1usize..60)
            .prop_flat_map(|n| proptest::collection::vec(instruction(n), n))
            .prop_map(|code| {
                let n = code.len() as u32;
                let fix = |l: Label| if l.0 == n { Label::END } else { l };
                let mut m = Method::decode(&IlBody::new(vec![])).unwrap();
                m.instructions = code
                    .into_iter()
                    .enumerate()
                    .map(|(i, (opcode, operand))| Instruction {
                        label: Label(i as u32),
                        opcode,
                        operand: match operand {
                            Operand::Target(l) => Operand::Target(fix(l)),
                            Operand::Switch(ls) => {
                                Operand::Switch(ls.into_iter().map(fix).collect())
                            }
                            o => o,
                        },
                        original_offset: None,
                    })
                    .collect();
                for _ in 0..n {
                    m.new_label();
                }
                m
            })
    }

    /// Instructions with targets as indexes, short branches written as their long forms.
    fn shape(m: &Method) -> Vec<(OpCode, Operand)> {
        m.indexed_instructions()
            .into_iter()
            .map(|(op, operand)| (op.long_form().unwrap_or(op), operand))
            .collect()
    }

    proptest! {
        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            // Whatever decodes re-encodes to the same code, and its analyses do not panic.
            if let Ok(mut m) = Method::decode(&IlBody::new(bytes.clone())) {
                let _ = basic_blocks(&m);
                let _ = max_stack(&m, |_, _| CallSite::from_signature(&[0, 0, 1]));
                prop_assert_eq!(m.to_body().unwrap().0.code, bytes);
            }
        }

        #[test]
        fn encode_decode_keeps_the_code(mut m in method(), nops in proptest::collection::vec((0usize..60, 0usize..200), 0..4)) {
            // Insert runs of nops (pushing targets out of short reach) before random
            // instructions; after encoding (which widens what must be) and decoding, every
            // branch still reaches the same instruction.
            let original = m.instructions.len();
            for (at, n) in nops {
                let at = at % (m.instructions.len() + 1);
                m.insert_before(at, (0..n).map(|_| asm::op(OpCode::NOP, Operand::None)));
            }
            let (body, _) = m.to_body().unwrap();
            let decoded = Method::decode(&body).unwrap();
            prop_assert_eq!(shape(&decoded), shape(&m));
            prop_assert!(decoded.instructions.len() >= original);
            // Re-encoding the decoded body gives the same bytes.
            let mut again = decoded;
            prop_assert_eq!(again.to_body().unwrap().0, body);
        }
    }
}

#[test]
fn block_counters() {
    #[rustfmt::skip]
    let code = [
        0x02,                            // 0 ldarg.0
        0x2D, 0x09,                      // 1 brtrue.s -> 12 (the ret)
        0x16, 0x26,                      // 3 ldc.i4.0; 4 pop
        0xFE, 0x14, 0x28, 1, 0, 0, 0x0A, // 5 tail. call 0x0A000001
        0x2A,                            // 12 ret
    ];
    let m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    // Basic blocks (instruction indexes): [0, 2), [2, 6), [6, 7): the ret is a branch target.
    let starts: Vec<usize> = basic_blocks(&m).iter().map(|b| b.start).collect();
    assert_eq!(starts, [0, 2, 6]);
    // The ret after the tail call joins the call's block: no probe may separate them.
    let blocks = counters::probed_blocks(&m);
    assert_eq!(
        blocks,
        [
            BasicBlock { start: 0, end: 2 },
            BasicBlock { start: 2, end: 7 }
        ]
    );
    assert_eq!(
        counters::block_ranges(&m, &blocks).unwrap(),
        [(0, 3), (3, 13)]
    );

    // Counters in the blocks of `return x ? 1 : 2;`.
    let mut m = Method::parse(&[0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A]).unwrap();
    let blocks = counters::probed_blocks(&m);
    let cells = counters::leak_counters(blocks.len());
    counters::add_block_counters(&mut m, &blocks, cells);
    assert_eq!(m.max_stack, 8 + counters::PROBE_STACK);
    let (body, _) = m.to_body().unwrap();
    let probe = |cell: &std::sync::atomic::AtomicU64| {
        let mut p = vec![0x21];
        p.extend_from_slice(&(cell.as_ptr() as u64).to_le_bytes());
        p.extend_from_slice(&[0xE0, 0x25, 0x4C, 0x17, 0x6A, 0x58, 0x55]);
        p
    };
    let expected = [
        probe(&cells[0]),
        vec![0x02, 0x2C, 18],
        probe(&cells[1]),
        vec![0x17, 0x2A],
        probe(&cells[2]),
        vec![0x18, 0x2A],
    ]
    .concat();
    assert_eq!(body.code, expected);
}

#[test]
fn entry_code_is_not_a_loop_target() {
    // IL_0: ldarg.0; IL_1: brtrue.s IL_0 (a loop back to the first instruction); IL_3: ret
    let mut m = Method::decode(&IlBody::new(vec![0x02, 0x2D, 0xFD, 0x2A])).unwrap();
    let n = m.insert_at_entry([
        op(OpCode::NOP, Operand::None),
        op(OpCode::NOP, Operand::None),
    ]);
    assert_eq!(n, 2);
    let (body, _) = m.to_body().unwrap();
    // The branch still goes back to the ldarg.0 (now at offset 2), not to the entry code.
    assert_eq!(body.code, [0x00, 0x00, 0x02, 0x2D, 0xFD, 0x2A]);
    // insert_before, by contrast, puts the code in the loop.
    let mut m = Method::decode(&IlBody::new(vec![0x02, 0x2D, 0xFD, 0x2A])).unwrap();
    m.insert_before(0, [op(OpCode::NOP, Operand::None)]);
    assert_eq!(m.to_body().unwrap().0.code, [0x00, 0x02, 0x2D, 0xFC, 0x2A]);
}

#[test]
fn call_counters_count_entries_and_call_sites() {
    #[rustfmt::skip]
    let code = [
        0x02,                               // 0 ldarg.0
        0x2C, 0x03,                         // 1 brfalse.s -> 6
        0x17,                               // 3 ldc.i4.1
        0x2B, 0x01,                         // 4 br.s -> 7 (the call: a join with an argument)
        0x18,                               // 6 ldc.i4.2
        0x28, 1, 0, 0, 0x06,                // 7 call 0x06000001
        0x73, 2, 0, 0, 0x0A,                // 12 newobj 0x0A000002
        0x26,                               // 17 pop
        0x02,                               // 18 ldarg.0
        0xFE, 0x14, 0x6F, 3, 0, 0, 0x0A,    // 19 tail. callvirt 0x0A000003
        0x2A,                               // 26 ret
    ];
    let mut m = Method::decode(&IlBody::new(code.to_vec())).unwrap();
    let found = calls::calls(&m);
    let shape: Vec<(usize, usize, OpCode, u32)> = found
        .iter()
        .map(|c| (c.at, c.index, c.opcode, c.token.0))
        .collect();
    assert_eq!(
        shape,
        [
            (5, 5, OpCode::CALL, 0x0600_0001),
            (6, 6, OpCode::NEWOBJ, 0x0A00_0002),
            (9, 10, OpCode::CALLVIRT, 0x0A00_0003),
        ]
    );

    // Shared counters: an increment at the entry and before each call (before its prefix).
    let cells = [0x1000usize, 0x2000, 0x3000, 0x4000];
    let mut shared = m.clone();
    calls::add_shared_call_counters(&mut shared, &found, &cells);
    assert_eq!(shared.max_stack, 8 + counters::PROBE_STACK);
    let (body, _) = shared.to_body().unwrap();
    let probe = |cell: usize| {
        let mut p = vec![0x21];
        p.extend_from_slice(&(cell as u64).to_le_bytes());
        p.extend_from_slice(&[0xE0, 0x25, 0x4C, 0x17, 0x6A, 0x58, 0x55]);
        p
    };
    let expected = [
        probe(0x1000),
        vec![0x02, 0x2C, 0x03, 0x17, 0x2B, 0x01, 0x18],
        probe(0x2000),
        vec![0x28, 1, 0, 0, 0x06],
        probe(0x3000),
        vec![0x73, 2, 0, 0, 0x0A, 0x26, 0x02],
        probe(0x4000),
        vec![0xFE, 0x14, 0x6F, 3, 0, 0, 0x0A, 0x2A],
    ]
    .concat();
    assert_eq!(
        body.code, expected,
        "the br.s to the call now reaches its probe"
    );

    // Per-thread counters: the entry finds the thread's base, each probe adds to base[k].
    let c = calls::ThreadCounters {
        table: 0x7f00_0000_0000,
        first: 0x5500_0000_0040,
        base_local: 3,
        address_local: 4,
    };
    calls::add_thread_call_counters(&mut m, &found, &c);
    let ops: Vec<OpCode> = m.instructions.iter().map(|i| i.opcode).collect();
    let entry = calls::thread_base(&c).len() + calls::thread_increment(3, 0).len();
    assert_eq!(
        ops[entry],
        OpCode::LDARG_0,
        "the original code follows the entry code"
    );
    assert_eq!(
        &m.instructions[..entry]
            .iter()
            .filter_map(|i| match i.operand {
                Operand::I8(v) => Some(v),
                _ => None,
            })
            .collect::<Vec<_>>(),
        &[0x7f00_0000_0000, 0x5500_0000_0040]
    );
    // The probe of the third call (counter 3, at byte 24) comes before `tail.`.
    let tail = ops.iter().position(|&o| o == OpCode::TAIL).unwrap();
    let probe3 = calls::thread_increment(3, 3);
    assert_eq!(probe3.len(), 9);
    let before: Vec<(OpCode, Operand)> = m.instructions[tail - probe3.len()..tail]
        .iter()
        .map(|i| (i.opcode, i.operand.clone()))
        .collect();
    assert_eq!(before, probe3);
    assert_eq!(before[1], (OpCode::LDC_I4_S, Operand::I1(24)));
    // It encodes, and decodes back to the same instructions.
    let (body, _) = m.to_body().unwrap();
    let decoded = Method::decode(&body).unwrap();
    let again: Vec<OpCode> = decoded.instructions.iter().map(|i| i.opcode).collect();
    assert_eq!(again, ops);
    let depth = max_stack(&m, |_, _| {
        Some(CallSite {
            params: 0,
            has_this: true,
            returns_value: true,
        })
    })
    .unwrap();
    assert!(depth <= m.max_stack, "{depth} > {}", m.max_stack);
}
