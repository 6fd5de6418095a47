//! A method's source annotated line by line with its share of a line profile: the model that
//! `report --source` prints and the HTML report's source view draws.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use super::{HIDDEN_LINE, LineProfile, Place, SourceLines, source_path};
use crate::trace::LoadedTrace;

/// One source line of a method and what the profile puts on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceViewLine {
    /// The line's number, from 1.
    pub line: u32,
    /// Its text (empty when the file cannot be read).
    pub text: String,
    /// The value of the stacks whose innermost managed frame was on this line.
    #[serde(rename = "self")]
    pub self_value: u64,
    /// The value of the stacks with this line on them.
    #[serde(rename = "total")]
    pub total_value: u64,
}

/// A method's source, first to last line its symbols name, with the profile's values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceView {
    /// The method (`Type.Method(args)`).
    pub method: String,
    /// The source file (after remapping).
    pub file: String,
    /// Whether the file could be read (else the lines have no text).
    pub readable: bool,
    /// The method's lines, in order.
    pub lines: Vec<SourceViewLine>,
    /// Its self value at no line (code of no IL, or an unknown place).
    pub elsewhere: u64,
    /// Its self value: of the stacks with it innermost of their managed frames.
    #[serde(rename = "self")]
    pub self_value: u64,
    /// The value of every stack with the method on it.
    pub total: u64,
}

/// The rows of `p` that are `function`'s, by line: (self, total); and its self value at no
/// line.
fn values_by_line(p: &LineProfile, function: u64) -> (HashMap<u32, (u64, u64)>, u64) {
    let mut by_line: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut elsewhere = 0;
    for row in p.rows.iter().filter(|r| r.function == function) {
        match row.place {
            Place::Line { line, .. } => {
                let e = by_line.entry(line).or_default();
                e.0 += row.self_value;
                e.1 += row.total_value;
            }
            _ => elsewhere += row.self_value,
        }
    }
    (by_line, elsewhere)
}

/// `function`'s source annotated with `p`; `None` when its module has no symbols for it.
pub fn source_view(
    trace: &LoadedTrace,
    p: &LineProfile,
    function: u64,
    lines: &mut SourceLines,
) -> Option<SourceView> {
    let source = lines.method_source(&trace.names, function).cloned()?;
    let method = p
        .rows
        .iter()
        .find(|r| r.function == function)
        .map(|r| r.method.clone())
        .unwrap_or_default();
    let module_dir = trace
        .names
        .functions
        .get(&function)
        .and_then(|f| trace.names.modules.get(&f.module))
        .and_then(|m| Path::new(&m.path).parent().map(Path::to_path_buf));
    let file = source_path(&lines.roots, &source.file, module_dir.as_deref())
        .to_string_lossy()
        .into_owned();
    let visible = source.points.iter().filter(|pt| pt.line != HIDDEN_LINE);
    let first = visible.clone().map(|pt| pt.line).min().unwrap_or(1);
    let last = visible.map(|pt| pt.line).max().unwrap_or(first);
    let (by_line, elsewhere) = values_by_line(p, function);
    let self_value = elsewhere + by_line.values().map(|v| v.0).sum::<u64>();
    let text = lines.file_lines(&file).map(<[String]>::to_vec);
    let rows = (first..=last)
        .map(|line| {
            let (self_value, total_value) = by_line.get(&line).copied().unwrap_or_default();
            SourceViewLine {
                line,
                text: text
                    .as_ref()
                    .and_then(|t| t.get(line as usize - 1))
                    .cloned()
                    .unwrap_or_default(),
                self_value,
                total_value,
            }
        })
        .collect();
    Some(SourceView {
        method,
        file,
        readable: text.is_some(),
        lines: rows,
        elsewhere,
        self_value,
        total: p.method_total(function),
    })
}
