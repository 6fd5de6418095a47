//! The line views for people and programs: the top lines (`report --lines`, text and JSON)
//! and a method's annotated source (`report --source`).

use std::collections::HashMap;
use std::io::Write;

use super::source_view::source_view;
use super::{LineMeasure, LineProfile, SourceLines};
use crate::Error;
use crate::trace::LoadedTrace;

/// The share `part` is of `whole`, as `58.1%`.
fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".to_string();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// Cuts `text` to at most `width` characters, with `…` where it was cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// What the profile cannot show, for both writers.
fn notes(p: &LineProfile) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = &p.unpositioned {
        out.push(why.clone());
    }
    for (module, why) in &p.without_lines {
        out.push(format!(
            "{module}: {why}; its frames show IL offsets instead of lines"
        ));
    }
    out.push(
        "code the JIT inlined counts for the line of the call in the method it was inlined \
         into (the runtime's maps have no lines for it)"
            .to_string(),
    );
    out
}

/// `report --lines`: the lines with the most of the profile's measure, `top` of them.
pub fn write_lines_text(p: &LineProfile, top: usize, out: &mut dyn Write) -> Result<(), Error> {
    let m = p.measure;
    writeln!(
        out,
        "Source lines by {}: {} in managed code (the shares are of it), {} with no managed frame",
        m.describe(),
        m.format(p.total),
        m.format(p.unattributed)
    )?;
    for note in notes(p) {
        writeln!(out, "note: {note}")?;
    }
    if p.rows.is_empty() {
        writeln!(out, "Nothing to show: no stack has a managed frame")?;
        return Ok(());
    }
    let (self_head, total_head) = match m {
        LineMeasure::Cpu => ("Self CPU", "Total CPU"),
        LineMeasure::AllocatedBytes => ("Self bytes", "Total bytes"),
        LineMeasure::LockWait => ("Self wait", "Total wait"),
        LineMeasure::Throws => ("Self", "Total"),
    };
    writeln!(
        out,
        "\n{:>7} {:>11} {:>7} {:>11}  {:<24} {:<36} Source",
        "Self%", self_head, "Total%", total_head, "Line", "Method"
    )?;
    for row in p.rows.iter().filter(|r| r.self_value > 0).take(top) {
        writeln!(
            out,
            "{:>7} {:>11} {:>7} {:>11}  {:<24} {:<36} {}",
            share(row.self_value, p.total),
            m.format(row.self_value),
            share(row.total_value, p.total),
            m.format(row.total_value),
            fit(&row.place.describe(), 24),
            fit(&row.method, 36),
            fit(row.text.as_deref().unwrap_or(""), 60)
        )?;
    }
    Ok(())
}

/// `report --lines --format json`.
pub fn write_lines_json(p: &LineProfile, pretty: bool, out: &mut dyn Write) -> Result<(), Error> {
    let v = serde_json::json!({
        "lines": {
            "measure": p.measure,
            "unit": p.measure.unit(),
            "total": p.total,
            "unattributed": p.unattributed,
            "positions_recorded": p.positions_recorded,
            "notes": notes(p),
            "rows": p.rows,
        }
    });
    crate::output::write_json(&v, pretty, out)
}

/// `report --source METHOD`: the source of the method whose name contains `method` (the one
/// with the most of the measure, if several do), each line with its share of the managed
/// total.
pub fn write_source_text(
    trace: &LoadedTrace,
    p: &LineProfile,
    method: &str,
    lines: &mut SourceLines,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut candidates: HashMap<u64, (u64, String)> = HashMap::new();
    for row in p.rows.iter().filter(|r| r.method.contains(method)) {
        let c = candidates
            .entry(row.function)
            .or_insert((0, row.method.clone()));
        c.0 = p.method_total(row.function);
    }
    let Some((&function, (cpu, name))) = candidates
        .iter()
        .max_by_key(|(f, (cpu, name))| (*cpu, std::cmp::Reverse((*name).clone()), **f))
    else {
        return Err(Error::NoSuchMethod(format!(
            "--source {method}: no method with {} has `{method}` in its name",
            match p.measure {
                LineMeasure::Cpu => "CPU samples",
                LineMeasure::AllocatedBytes => "allocations",
                LineMeasure::LockWait => "lock waits",
                LineMeasure::Throws => "throws",
            }
        )));
    };
    let others = candidates.len() - 1;
    writeln!(
        out,
        "{name}: {} of {} with it on the stack ({} of the managed total){}",
        p.measure.format(*cpu),
        p.measure.describe(),
        share(*cpu, p.total),
        if others > 0 {
            format!("; {others} other methods match `{method}`, give more of the name")
        } else {
            String::new()
        }
    )?;
    let Some(view) = source_view(trace, p, function, lines) else {
        writeln!(
            out,
            "no source lines for it (its module has no symbols); by IL offset:"
        )?;
        for row in p.rows.iter().filter(|r| r.function == function) {
            writeln!(
                out,
                "{:>7} {:>7}  {}",
                share(row.self_value, p.total),
                share(row.total_value, p.total),
                row.place.describe()
            )?;
        }
        return Ok(());
    };
    let (first, last) = (
        view.lines.first().map_or(1, |l| l.line),
        view.lines.last().map_or(1, |l| l.line),
    );
    writeln!(out, "{}, lines {first}-{last}", view.file)?;
    if !view.readable {
        writeln!(
            out,
            "note: {} cannot be read here (give --source-root FROM=TO if the sources moved)",
            view.file
        )?;
    }
    writeln!(
        out,
        "\n{:>7} {:>7} {:>6}  Source",
        "Self%", "Total%", "Line"
    )?;
    for l in &view.lines {
        let shown = |v: u64| {
            if v == 0 {
                String::new()
            } else {
                share(v, p.total)
            }
        };
        writeln!(
            out,
            "{:>7} {:>7} {:>6}  {}",
            shown(l.self_value),
            shown(l.total_value),
            l.line,
            l.text
        )?;
    }
    if view.elsewhere > 0 {
        writeln!(
            out,
            "\n{} of its self {} is at no line (code of no IL, or an unknown place)",
            p.measure.format(view.elsewhere),
            p.measure.describe()
        )?;
    }
    Ok(())
}
