//! The SDK's IL model against every method body of real framework assemblies (the pinned
//! runtime's own files): decoding and re-encoding each body gives back its exact bytes, the
//! recomputed max stack matches what the compiler declared, and a copy with a probe inserted
//! at the start of every basic block encodes, decodes back to the same instructions, and keeps
//! its branches and clauses on the same (original) instructions.

#[path = "il_round_trip/ecma335.rs"]
mod ecma335;

use std::collections::BTreeSet;

use clrprof_e2e::Dotnet;
use clrprof_sdk::il::{
    CallSite, Handler, IlBody, Label, Method, OpCode, Operand, asm, basic_blocks, max_stack,
};
use ecma335::{Assembly, METHOD_DEF};

/// The assemblies checked: the core library and a few others with different compilers'
/// habits (large switches, LINQ iterators, regex state machines, generics).
const ASSEMBLIES: &[&str] = &[
    "System.Private.CoreLib.dll",
    "System.Linq.dll",
    "System.Collections.dll",
    "System.Text.RegularExpressions.dll",
    "System.Private.Uri.dll",
    "System.Console.dll",
    "System.Private.Xml.dll",
    "System.Linq.Expressions.dll",
    "Microsoft.CSharp.dll",
    "Microsoft.VisualBasic.Core.dll",
    "System.Data.Common.dll",
];

#[derive(Default, Debug)]
struct Totals {
    bodies: usize,
    instructions: usize,
    clauses: usize,
    fat_headers: usize,
    max_stack_checked: usize,
    opcodes: BTreeSet<u16>,
}

fn check_assembly(name: &str, totals: &mut Totals) {
    let path = Dotnet::get().framework_dir.join(name);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let asm = Assembly::read(data).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut seen_rvas = BTreeSet::new();
    for row in 1..=asm.rows(METHOD_DEF) {
        let rva = asm.cell(METHOD_DEF, row, 0);
        if rva == 0 || !seen_rvas.insert(rva) {
            continue;
        }
        let token = 0x0600_0000 | row;
        let at = asm.offset(rva).unwrap();
        let bytes = &asm.data()[at..];
        let (_, len) = IlBody::parse_prefix(bytes)
            .unwrap_or_else(|e| panic!("{name} {token:#x}: header: {e}"));
        let original = &bytes[..len];
        let mut method =
            Method::parse(original).unwrap_or_else(|e| panic!("{name} {token:#x}: {e}"));
        let encoded = method.encode().unwrap();
        assert_eq!(encoded, original, "{name} {token:#x}: re-encoding differs");

        totals.bodies += 1;
        totals.instructions += method.instructions.len();
        totals.clauses += method.clauses.len();
        totals
            .opcodes
            .extend(method.instructions.iter().map(|i| i.opcode.0));

        // The compiler's declared max stack for fat headers (tiny ones imply 8).
        let computed = max_stack(&method, |_, t| {
            asm.signature(t.0).and_then(CallSite::from_signature)
        })
        .unwrap_or_else(|e| panic!("{name} {token:#x}: max stack: {e}"));
        if original[0] & 3 == 3 {
            totals.fat_headers += 1;
            assert_eq!(
                computed, method.max_stack,
                "{name} {token:#x}: recomputed max stack"
            );
            totals.max_stack_checked += 1;
        } else {
            assert!(
                computed <= 8,
                "{name} {token:#x}: tiny body with stack {computed}"
            );
        }

        // A probe (ldc.i4 <block>; pop) at the start of every basic block.
        let before = method.indexed_instructions();
        let blocks = basic_blocks(&method);
        let mut instrumented = method.clone();
        for (k, block) in blocks.iter().enumerate().rev() {
            instrumented.insert_before(
                block.start,
                [
                    asm::ldc_i4(1000 + k as i32),
                    asm::op(OpCode::POP, Operand::None),
                ],
            );
        }
        let bytes = instrumented.encode().unwrap();
        let reread = Method::parse(&bytes).unwrap();
        let after = reread.indexed_instructions();
        assert_eq!(after.len(), before.len() + 2 * blocks.len());
        // Dropping the probes gives back the original instructions, with every branch,
        // once mapped back, landing on the probe of the block it used to start.
        let probe_at: BTreeSet<usize> = blocks
            .iter()
            .enumerate()
            .map(|(k, b)| b.start + 2 * k)
            .collect();
        let mut original_index = vec![0u32; after.len() + 1];
        let mut kept = Vec::new();
        let mut k = 0u32;
        let mut i = 0;
        while i < after.len() {
            if probe_at.contains(&i) {
                original_index[i] = k;
                original_index[i + 1] = k;
                i += 2;
                continue;
            }
            original_index[i] = k;
            kept.push(after[i].clone());
            k += 1;
            i += 1;
        }
        original_index[after.len()] = k;
        let remap = |l: &Label| -> Label {
            if l.0 as usize >= after.len() {
                *l
            } else {
                Label(original_index[l.0 as usize])
            }
        };
        let kept: Vec<_> = kept
            .into_iter()
            .map(|(op, operand)| {
                let operand = match operand {
                    Operand::Target(l) => Operand::Target(remap(&l)),
                    Operand::Switch(ls) => Operand::Switch(ls.iter().map(remap).collect()),
                    o => o,
                };
                (op, operand)
            })
            .collect();
        // Short branches may have been widened.
        let normalize = |v: &[(OpCode, Operand)]| -> Vec<(OpCode, Operand)> {
            v.iter()
                .map(|(op, o)| (op.long_form().unwrap_or(*op), o.clone()))
                .collect()
        };
        assert_eq!(
            normalize(&kept),
            normalize(&before),
            "{name} {token:#x}: instrumented code"
        );
        assert_eq!(reread.clauses.len(), method.clauses.len());
        for (a, b) in reread.clauses.iter().zip(&method.clauses) {
            let idx = |m: &Method, l: Label| m.label_indexes()[&l];
            // Clause boundaries of the rewritten body start at the probe of the block they
            // used to start (or stay at the end).
            for (x, y) in [
                (a.try_start, b.try_start),
                (a.try_end, b.try_end),
                (a.handler_start, b.handler_start),
                (a.handler_end, b.handler_end),
            ] {
                let new = idx(&reread, x);
                let old = idx(&method, y);
                assert_eq!(
                    original_index[new] as usize, old,
                    "{name} {token:#x}: clause"
                );
                assert!(
                    new == after.len() || probe_at.contains(&new),
                    "{name} {token:#x}: clause boundary not on a probe"
                );
            }
            if let (Handler::Filter(x), Handler::Filter(y)) = (a.handler, b.handler) {
                assert_eq!(original_index[idx(&reread, x)] as usize, idx(&method, y));
            }
        }
    }
}

#[test]
fn framework_method_bodies_round_trip_byte_for_byte() {
    let mut totals = Totals::default();
    for name in ASSEMBLIES {
        let before = totals.bodies;
        check_assembly(name, &mut totals);
        eprintln!("{name}: {} bodies", totals.bodies - before);
    }
    eprintln!("{totals:?}");
    // Tens of thousands of bodies, hundreds of thousands of instructions and thousands of
    // exception clauses; the common prefixes occur.
    assert!(totals.bodies > 40_000, "{totals:?}");
    assert!(totals.max_stack_checked > 15_000, "{totals:?}");
    assert!(totals.clauses > 3_000, "{totals:?}");
    for op in [
        OpCode::SWITCH,
        OpCode::CONSTRAINED,
        OpCode::VOLATILE,
        OpCode::READONLY,
        OpCode::LDC_R8,
        OpCode::LDC_I8,
        OpCode::ENDFILTER,
        OpCode::LEAVE,
        OpCode::BR,
        OpCode::BR_S,
    ] {
        assert!(totals.opcodes.contains(&op.0), "{op} never seen");
    }
    // (C# compilers never write `tail.`, and these assemblies have no `unaligned.` and no `calli`: the
    // SDK's unit tests cover both.)
}
