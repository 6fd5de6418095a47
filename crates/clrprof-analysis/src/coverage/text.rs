//! The text report: one section per method, one line per block.

use std::fmt::Write;

use super::CoverageReport;

pub(super) fn render(r: &CoverageReport) -> String {
    let mut out = String::new();
    let (blocks, covered) = r.block_totals();
    let _ = writeln!(
        out,
        "Coverage: {covered} of {blocks} blocks entered ({:.1}%), {} methods",
        percent(covered, blocks),
        r.methods.len()
    );
    for m in &r.methods {
        let _ = writeln!(
            out,
            "\n{} [{}] {}/{} blocks, {} calls",
            m.display_name(),
            m.assembly,
            m.covered_blocks(),
            m.blocks.len(),
            m.calls()
        );
        for b in &m.blocks {
            let _ = writeln!(
                out,
                "  IL_{:04X}..IL_{:04X} {:>10}",
                b.il_start, b.il_end, b.hits
            );
        }
        if let Some(source) = &m.source {
            let lines: Vec<String> = m.lines.iter().map(|(l, h)| format!("{l}:{h}")).collect();
            let _ = writeln!(out, "  {source}: {}", lines.join(" "));
        }
    }
    out
}

/// `part` of `all` in percent (0 for nothing).
pub(super) fn percent(part: usize, all: usize) -> f64 {
    crate::top::percent(part as u64, all as u64)
}
