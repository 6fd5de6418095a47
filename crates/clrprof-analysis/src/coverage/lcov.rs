//! lcov tracefile (the input of `genhtml`): per source file, functions (`FN`, `FNDA`), lines
//! (`DA`) and blocks (`BRDA`, one "branch" per basic block on the line of its first sequence
//! point). Methods without symbols have no source file and are left out: lcov has no place
//! for them.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{CoverageReport, MethodCoverage};

pub(super) fn render(r: &CoverageReport) -> String {
    let mut by_file: BTreeMap<&str, Vec<&MethodCoverage>> = BTreeMap::new();
    for m in &r.methods {
        if let Some(source) = &m.source {
            by_file.entry(source).or_default().push(m);
        }
    }
    let mut out = String::new();
    for (file, methods) in by_file {
        let _ = writeln!(out, "TN:\nSF:{file}");
        for m in &methods {
            let first = m.lines.keys().next().copied().unwrap_or(1);
            let _ = writeln!(out, "FN:{first},{}", m.display_name());
        }
        for m in &methods {
            let _ = writeln!(out, "FNDA:{},{}", m.calls(), m.display_name());
        }
        let hit = methods.iter().filter(|m| m.calls() > 0).count();
        let _ = writeln!(out, "FNF:{}\nFNH:{hit}", methods.len());
        let mut lines: BTreeMap<u32, u64> = BTreeMap::new();
        for m in &methods {
            for (&line, &hits) in &m.lines {
                let e = lines.entry(line).or_insert(0);
                *e = (*e).max(hits);
            }
        }
        let mut branches = (0, 0);
        for (k, m) in methods.iter().enumerate() {
            let first = m.lines.keys().next().copied().unwrap_or(1);
            for (i, b) in m.blocks.iter().enumerate() {
                // The line of the block's first sequence point, else the method's first line.
                let line = b.line.unwrap_or(first);
                let _ = writeln!(out, "BRDA:{line},{k},{i},{}", b.hits);
                branches.0 += 1;
                branches.1 += usize::from(b.hits > 0);
            }
        }
        let _ = writeln!(out, "BRF:{}\nBRH:{}", branches.0, branches.1);
        for (line, hits) in &lines {
            let _ = writeln!(out, "DA:{line},{hits}");
        }
        let covered = lines.values().filter(|&&h| h > 0).count();
        let _ = writeln!(out, "LF:{}\nLH:{covered}\nend_of_record", lines.len());
    }
    out
}
