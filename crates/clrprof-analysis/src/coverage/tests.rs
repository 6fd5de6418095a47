//! Tests of the coverage model, the symbol reader and the outputs.

use super::*;

fn block(il_start: u32, il_end: u32, hits: u64) -> BlockCoverage {
    BlockCoverage {
        il_start,
        il_end,
        hits,
        line: None,
    }
}

fn method(name: &str, blocks: Vec<BlockCoverage>) -> MethodCoverage {
    MethodCoverage {
        assembly: "App".into(),
        module_path: "/app/App.dll".into(),
        type_name: "App.Program".into(),
        method_name: name.into(),
        signature: "(int)".into(),
        token: 0x0600_0001,
        blocks,
        source: None,
        lines: BTreeMap::new(),
    }
}

fn report() -> CoverageReport {
    let mut covered = method(
        "Check",
        vec![block(0, 7, 4), block(7, 9, 1), block(9, 12, 3)],
    );
    covered.apply_source(&MethodSource {
        file: "/src/Program.cs".into(),
        points: vec![
            SequencePoint {
                il_offset: 0,
                line: 10,
            },
            SequencePoint {
                il_offset: 7,
                line: 11,
            },
            // A second point on line 10 in a block with fewer hits: the line keeps the max.
            SequencePoint {
                il_offset: 9,
                line: 10,
            },
            SequencePoint {
                il_offset: 10,
                line: 12,
            },
            // Past the code: ignored.
            SequencePoint {
                il_offset: 40,
                line: 99,
            },
        ],
    });
    let mut never = method("Never<T>", vec![block(0, 5, 0)]);
    never.apply_source(&MethodSource {
        file: "/src/Program.cs".into(),
        points: vec![SequencePoint {
            il_offset: 0,
            line: 20,
        }],
    });
    let no_symbols = method("Generated", vec![block(0, 3, 2)]);
    CoverageReport {
        methods: vec![covered, never, no_symbols],
        symbols: Vec::new(),
    }
}

#[test]
fn lines_take_the_hits_of_their_blocks() {
    let r = report();
    let m = &r.methods[0];
    assert_eq!(m.lines, BTreeMap::from([(10, 4), (11, 1), (12, 3)]));
    assert_eq!(
        m.blocks.iter().map(|b| b.line).collect::<Vec<_>>(),
        [Some(10), Some(11), Some(10)]
    );
    assert_eq!(m.hits_at(8), Some(1));
    assert_eq!(m.hits_at(12), None);
    assert_eq!((m.calls(), m.covered_blocks()), (4, 3));
    assert_eq!(r.block_totals(), (5, 4));
    assert_eq!(r.methods[2].source, None);
}

#[test]
fn lcov_output() {
    assert_eq!(
        report().render(CoverageFormat::Lcov),
        "TN:\nSF:/src/Program.cs\n\
         FN:10,App.Program.Check(int)\nFN:20,App.Program.Never<T>(int)\n\
         FNDA:4,App.Program.Check(int)\nFNDA:0,App.Program.Never<T>(int)\nFNF:2\nFNH:1\n\
         BRDA:10,0,0,4\nBRDA:11,0,1,1\nBRDA:10,0,2,3\nBRDA:20,1,0,0\nBRF:4\nBRH:3\n\
         DA:10,4\nDA:11,1\nDA:12,3\nDA:20,0\nLF:4\nLH:3\nend_of_record\n"
    );
}

#[test]
fn cobertura_output() {
    let xml = report().render(CoverageFormat::Cobertura);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<coverage "));
    // Lines 10, 11, 12 hit and 20 not; blocks: 4 of 5 entered.
    assert!(xml.contains(
        "<coverage line-rate=\"0.7500\" branch-rate=\"0.8000\" lines-covered=\"3\" lines-valid=\"4\" branches-covered=\"4\" branches-valid=\"5\""
    ), "{xml}");
    // Line 10 starts two blocks of Check: a branch line with both conditions covered.
    assert!(xml.contains(
        "<line number=\"10\" hits=\"4\" branch=\"true\" condition-coverage=\"100% (2/2)\"/>"
    ));
    assert!(xml.contains("<method name=\"Never&lt;T&gt;\" signature=\"(int)\""));
    // The class is in the source file of its methods that have one.
    assert!(xml.contains("<class name=\"App.Program\" filename=\"/src/Program.cs\""));
    assert_eq!(xml.matches("<class ").count(), 1);
    assert!(xml.ends_with("</coverage>\n"));
}

#[test]
fn text_and_json_outputs() {
    let text = report().render(CoverageFormat::Text);
    assert!(text.starts_with("Coverage: 4 of 5 blocks entered (80.0%), 3 methods\n"));
    assert!(text.contains(
        "\nApp.Program.Check(int) [App] 3/3 blocks, 4 calls\n  IL_0000..IL_0007          4\n"
    ));
    assert!(text.contains("  /src/Program.cs: 10:4 11:1 12:3\n"));
    let json: serde_json::Value =
        serde_json::from_str(&report().render(CoverageFormat::Json)).unwrap();
    assert_eq!(json["methods"][0]["lines"]["11"], 1);
    assert_eq!(json["methods"][2].get("source"), None);
    assert_eq!(json["methods"][0]["blocks"][2]["line"], 10);
}

/// A symbol file with one method (token 0x06000001) in `A.cs`.
fn mdb(line_program: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&0x45e8_2623_fd7f_a614u64.to_le_bytes());
    d.extend_from_slice(&50u32.to_le_bytes());
    d.extend_from_slice(&0u32.to_le_bytes());
    d.extend_from_slice(&[0; 16]);
    let tables = 32 + 80;
    let source_table = tables + 12;
    let source_data = source_table + 8;
    let lnt = source_data + 5;
    let mut offsets = [0u32; 20];
    offsets[7] = source_table as u32;
    offsets[9] = 1;
    offsets[10] = tables as u32;
    offsets[16] = (-1i32) as u32;
    offsets[17] = 8;
    offsets[18] = 9;
    for v in offsets {
        d.extend_from_slice(&v.to_le_bytes());
    }
    for v in [0x0600_0001u32, 0, lnt as u32] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    for v in [1u32, source_data as u32] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.extend_from_slice(&[4, b'A', b'.', b'c', b's']);
    d.extend_from_slice(line_program);
    d
}

#[test]
fn mdb_line_programs() {
    #[rustfmt::skip]
    let program = [
        3, 9, 1,                      // line += 9 (10); copy: (0, 10)
        9 + 5 * 8 + 3,                // special: offset += 5, line += -1 + 3: (5, 12)
        2, 0xAC, 0x02,                // offset += 300
        3, 0xFD, 0xFF, 0xFF, 0xFF, 0x0F, // line -= 3
        1,                            // copy: (305, 9)
        0, 1, 0x40,                   // hidden on
        9 + 8 + 1,                    // special, hidden: not a row
        0, 1, 0x40,                   // hidden off
        0, 1, 1,                      // end of sequence
    ];
    let file = mdb::SymbolFile::parse(mdb(&program)).unwrap();
    let source = file.method(0x0600_0001).unwrap();
    assert_eq!(source.file, "A.cs");
    let points: Vec<(u32, u32)> = source
        .points
        .iter()
        .map(|p| (p.il_offset, p.line))
        .collect();
    assert_eq!(points, [(0, 10), (5, 12), (305, 9)]);
    assert!(file.method(0x0600_0002).is_none());
    // Not a symbol file; a truncated program.
    assert!(mdb::SymbolFile::parse(vec![0; 200]).is_none());
    let cut = mdb::SymbolFile::parse(mdb(&[3, 9])).unwrap();
    assert!(cut.method(0x0600_0001).is_none());
}
