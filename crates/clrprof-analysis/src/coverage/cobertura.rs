//! Cobertura XML (the `coverage-04.dtd` format CI services read, valid against that DTD): packages are assemblies,
//! classes are types, and each method lists its lines (with symbols) and its blocks as
//! conditions of the lines they start on. Rates are line rates where there are lines and
//! block rates otherwise.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{CoverageReport, MethodCoverage};

/// Escapes text for an XML attribute.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// (covered, total) lines of some methods, or blocks where none has lines.
fn counts<'a>(
    methods: impl Iterator<Item = &'a MethodCoverage> + Clone,
) -> (usize, usize, usize, usize) {
    let lines = methods.clone().map(|m| m.lines.len()).sum();
    let lines_hit = methods
        .clone()
        .map(|m| m.lines.values().filter(|&&h| h > 0).count())
        .sum();
    let blocks = methods.clone().map(|m| m.blocks.len()).sum();
    let blocks_hit = methods.map(MethodCoverage::covered_blocks).sum();
    (lines_hit, lines, blocks_hit, blocks)
}

fn rate(hit: usize, all: usize) -> String {
    if all == 0 {
        "1".into()
    } else {
        format!("{:.4}", hit as f64 / all as f64)
    }
}

fn rates<'a>(methods: impl Iterator<Item = &'a MethodCoverage> + Clone) -> String {
    let (lh, l, bh, b) = counts(methods);
    let (lh, l) = if l == 0 { (bh, b) } else { (lh, l) };
    format!(
        "line-rate=\"{}\" branch-rate=\"{}\"",
        rate(lh, l),
        rate(bh, b)
    )
}

pub(super) fn render(r: &CoverageReport) -> String {
    // No DOCTYPE: readers would try to fetch the DTD from the network.
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let (lh, l, bh, b) = counts(r.methods.iter());
    let _ = writeln!(
        out,
        "<coverage {} lines-covered=\"{lh}\" lines-valid=\"{l}\" branches-covered=\"{bh}\" branches-valid=\"{b}\" complexity=\"0\" version=\"clrprof {}\" timestamp=\"0\">",
        rates(r.methods.iter()),
        env!("CARGO_PKG_VERSION")
    );
    out.push_str("  <sources>\n    <source>.</source>\n  </sources>\n  <packages>\n");
    let mut packages: BTreeMap<&str, BTreeMap<&str, Vec<&MethodCoverage>>> = BTreeMap::new();
    for m in &r.methods {
        packages
            .entry(&m.assembly)
            .or_default()
            .entry(&m.type_name)
            .or_default()
            .push(m);
    }
    for (package, classes) in &packages {
        let all = classes.values().flatten().copied();
        let _ = writeln!(
            out,
            "    <package name=\"{}\" {} complexity=\"0\">\n      <classes>",
            xml(package),
            rates(all)
        );
        for (class, methods) in classes {
            let file = methods
                .iter()
                .find_map(|m| m.source.as_deref())
                .unwrap_or(&methods[0].module_path);
            let _ = writeln!(
                out,
                "        <class name=\"{}\" filename=\"{}\" {} complexity=\"0\">\n          <methods>",
                xml(class),
                xml(file),
                rates(methods.iter().copied())
            );
            for m in methods {
                let _ = writeln!(
                    out,
                    "            <method name=\"{}\" signature=\"{}\" {} complexity=\"0\">",
                    xml(&m.method_name),
                    xml(&m.signature),
                    rates(std::iter::once(*m))
                );
                out.push_str("              <lines>\n");
                write_lines(&mut out, m, "                ");
                out.push_str("              </lines>\n            </method>\n");
            }
            out.push_str("          </methods>\n          <lines>\n");
            for m in methods {
                write_lines(&mut out, m, "            ");
            }
            out.push_str("          </lines>\n        </class>\n");
        }
        out.push_str("      </classes>\n    </package>\n");
    }
    out.push_str("  </packages>\n</coverage>\n");
    out
}

/// A method's `<line>` elements; a line where blocks start is a branch line with its blocks
/// as conditions.
fn write_lines(out: &mut String, m: &MethodCoverage, indent: &str) {
    for (&line, &hits) in &m.lines {
        let blocks: Vec<_> = m.blocks.iter().filter(|b| b.line == Some(line)).collect();
        if blocks.len() > 1 {
            let hit = blocks.iter().filter(|b| b.hits > 0).count();
            let _ = writeln!(
                out,
                "{indent}<line number=\"{line}\" hits=\"{hits}\" branch=\"true\" condition-coverage=\"{}% ({hit}/{})\"/>",
                (100 * hit) / blocks.len(),
                blocks.len()
            );
        } else {
            let _ = writeln!(
                out,
                "{indent}<line number=\"{line}\" hits=\"{hits}\" branch=\"false\"/>"
            );
        }
    }
}
