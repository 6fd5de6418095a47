//! Which line burns it: the CPU of each source line of managed code, from the IL position the
//! agent records for every managed frame of a stack (format 1.9: the instruction of the
//! innermost frame, the call of each caller, found in the native-to-IL map of the code
//! version that ran) and the module's symbols (Mono's `.mdb`, a portable PDB beside the
//! assembly or embedded in it: what coverage reads, [`crate::coverage::ModuleSymbols`]).
//!
//! A line's self CPU is the CPU of the samples whose innermost managed frame was on it (native
//! frames below it, the runtime's helpers and system calls, count for the managed line that
//! called them, as a call's cost counts for its caller's line); its total CPU that of the
//! samples with the line anywhere on the stack, once per sample. Code the JIT inlined has no
//! lines of its own in the runtime's maps: it counts for the line of the call in the method it
//! was inlined into. Without symbols a frame's place is its IL offset, never an invented line.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use clrprof_trace::{FrameKind, IlPosition, StackDef, ThreadState};
use serde::Serialize;

use crate::Error;
use crate::coverage::{MethodSource, ModuleSymbols, SymbolStatus};
use crate::names::Names;
use crate::trace::LoadedTrace;
use crate::units::duration;

/// Sequence points of this line are hidden (compiler-generated code between statements).
const HIDDEN_LINE: u32 = 0x00fe_efee;

/// Where a managed frame was, as far as the symbols tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Place {
    /// A line of a source file.
    Line {
        /// The file, as the symbols name it (after `--source-root` remapping).
        file: String,
        /// 1-based.
        line: u32,
    },
    /// An IL offset: the module has no symbols, or they do not cover the method.
    IlOffset {
        /// The offset.
        offset: u32,
    },
    /// Not known (a trace before format 1.9, or code the runtime's map does not cover).
    Unknown,
}

impl Place {
    /// For people: `Program.cs:14`, `IL_002a`, `?`.
    pub fn describe(&self) -> String {
        match self {
            Place::Line { file, line } => format!("{}:{line}", short_file(file)),
            Place::IlOffset { offset } => format!("IL_{offset:04x}"),
            Place::Unknown => "?".to_string(),
        }
    }
}

/// The file name of a path (the whole path is in the JSON report).
fn short_file(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

/// One line of one method, and its CPU.
#[derive(Debug, Clone, Serialize)]
pub struct LineRow {
    /// The method's function id in the trace.
    #[serde(skip)]
    pub function: u64,
    /// The method (`Type.Method(args)`).
    pub method: String,
    /// Its module's file name.
    pub module: String,
    /// Where in it.
    pub place: Place,
    /// The line's text, when the source file was found.
    pub text: Option<String>,
    /// CPU of the samples whose innermost managed frame was here.
    pub self_ns: u64,
    /// CPU of the samples with this line on their stack (once per sample).
    pub total_ns: u64,
}

/// The CPU of a trace's lines.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LineProfile {
    /// Every line with CPU, hottest (self, then total) first.
    pub rows: Vec<LineRow>,
    /// The CPU of every sample with a managed frame: what the shares are of.
    pub total_ns: u64,
    /// CPU samples without any managed frame (native threads, the runtime's own work).
    pub native_only_ns: u64,
    /// Modules with CPU whose frames have no lines, and why (`no symbols: ...`).
    pub without_lines: Vec<(String, String)>,
    /// Whether the trace records IL positions (format 1.9 and later).
    pub positions_recorded: bool,
}

/// Turns `/build/agent/src/App.cs` into `/home/me/src/App.cs` for a rule `/build/agent=/home/me`.
#[derive(Debug, Clone, Default)]
pub struct SourceRoots {
    rules: Vec<(String, PathBuf)>,
}

impl SourceRoots {
    /// Rules `FROM=TO` (the first that matches a path's start applies).
    pub fn parse(rules: &[String]) -> Result<SourceRoots, String> {
        let mut out = SourceRoots::default();
        for rule in rules {
            let Some((from, to)) = rule.split_once('=') else {
                return Err(format!(
                    "`--source-root {rule}`: expected FROM=TO, e.g. /build/src=/home/me/src"
                ));
            };
            out.rules.push((from.to_string(), PathBuf::from(to)));
        }
        Ok(out)
    }

    /// Where `file` (as the symbols name it) is on this machine.
    pub fn map(&self, file: &str) -> PathBuf {
        for (from, to) in &self.rules {
            if let Some(rest) = file.strip_prefix(from.as_str()) {
                return to.join(rest.trim_start_matches(['/', '\\']));
            }
        }
        PathBuf::from(file)
    }
}

/// Reads symbols and source files once each.
#[derive(Default)]
pub struct SourceLines {
    roots: SourceRoots,
    modules: HashMap<u64, ModuleSymbols>,
    methods: HashMap<u64, Option<MethodSource>>,
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceLines {
    /// With `roots` to find source files.
    pub fn new(roots: SourceRoots) -> SourceLines {
        SourceLines {
            roots,
            ..SourceLines::default()
        }
    }

    fn method_source(&mut self, names: &Names, function: u64) -> Option<&MethodSource> {
        if !self.methods.contains_key(&function) {
            let source = names.functions.get(&function).and_then(|f| {
                let module = names.modules.get(&f.module)?;
                let symbols = self
                    .modules
                    .entry(f.module)
                    .or_insert_with(|| ModuleSymbols::for_module(Path::new(&module.path)));
                symbols.method(f.token)
            });
            self.methods.insert(function, source);
        }
        self.methods.get(&function).and_then(Option::as_ref)
    }

    /// What the symbols of `function`'s module are (for the report's note).
    fn status(&self, names: &Names, function: u64) -> Option<&SymbolStatus> {
        let f = names.functions.get(&function)?;
        self.modules.get(&f.module).map(|m| &m.status)
    }

    /// Where `function` was at `il`.
    pub fn place(&mut self, names: &Names, function: u64, il: IlPosition) -> Place {
        let offset = match il {
            IlPosition::Unknown => return Place::Unknown,
            IlPosition::At(offset) => Some(offset),
            IlPosition::Epilogue => None,
        };
        let roots = self.roots.clone();
        let module_dir = names
            .functions
            .get(&function)
            .and_then(|f| names.modules.get(&f.module))
            .and_then(|m| Path::new(&m.path).parent().map(Path::to_path_buf));
        match self.method_source(names, function) {
            Some(source) => match line_at(source, offset) {
                Some(line) => Place::Line {
                    file: source_path(&roots, &source.file, module_dir.as_deref())
                        .to_string_lossy()
                        .into_owned(),
                    line,
                },
                None => offset.map_or(Place::Unknown, |offset| Place::IlOffset { offset }),
            },
            None => offset.map_or(Place::Unknown, |offset| Place::IlOffset { offset }),
        }
    }

    /// The text of `line` of `file` (a path after remapping), if the file can be read.
    pub fn text(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self
            .files
            .entry(PathBuf::from(file))
            .or_insert_with(|| {
                std::fs::read_to_string(file)
                    .ok()
                    .map(|t| t.lines().map(str::to_owned).collect())
            })
            .as_ref()?;
        lines
            .get((line as usize).checked_sub(1)?)
            .map(|l| l.trim().to_string())
    }

    /// Every line of `file`, if it can be read.
    pub fn file_lines(&mut self, file: &str) -> Option<&[String]> {
        self.text(file, 1);
        self.files.get(Path::new(file)).and_then(Option::as_deref)
    }
}

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
    if !p.positions_recorded && p.total_ns > 0 {
        out.push(
            "this trace records no IL positions (a trace before format 1.9): every frame's \
             place is unknown; record it again with this clrprof"
                .to_string(),
        );
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

/// `report --lines`: the hottest lines, `top` of them.
pub fn write_lines_text(p: &LineProfile, top: usize, out: &mut dyn Write) -> Result<(), Error> {
    writeln!(
        out,
        "Source lines by CPU: {} in managed code (the shares are of it), {} in threads' native \
         code only",
        duration(p.total_ns),
        duration(p.native_only_ns)
    )?;
    for note in notes(p) {
        writeln!(out, "note: {note}")?;
    }
    if p.rows.is_empty() {
        writeln!(out, "Nothing to show: no CPU sample has a managed frame")?;
        return Ok(());
    }
    writeln!(
        out,
        "\n{:>7} {:>11} {:>7} {:>11}  {:<24} {:<36} Source",
        "Self%", "Self CPU", "Total%", "Total CPU", "Line", "Method"
    )?;
    for row in p.rows.iter().filter(|r| r.self_ns > 0).take(top) {
        writeln!(
            out,
            "{:>7} {:>11} {:>7} {:>11}  {:<24} {:<36} {}",
            share(row.self_ns, p.total_ns),
            duration(row.self_ns),
            share(row.total_ns, p.total_ns),
            duration(row.total_ns),
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
            "total_ns": p.total_ns,
            "native_only_ns": p.native_only_ns,
            "positions_recorded": p.positions_recorded,
            "notes": notes(p),
            "rows": p.rows,
        }
    });
    crate::output::write_json(&v, pretty, out)
}

/// `report --source METHOD`: the source of the method whose name contains `method` (the one
/// with the most CPU, if several do), each line with its share of the managed CPU.
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
        c.0 = c.0.max(row.total_ns);
    }
    let Some((&function, (cpu, name))) = candidates
        .iter()
        .max_by_key(|(f, (cpu, name))| (*cpu, std::cmp::Reverse((*name).clone()), **f))
    else {
        return Err(Error::NoSuchMethod(format!(
            "--source {method}: no method with CPU samples has `{method}` in its name"
        )));
    };
    let others = candidates.len() - 1;
    let rows: Vec<&LineRow> = p.rows.iter().filter(|r| r.function == function).collect();
    let source = lines.method_source(&trace.names, function).cloned();
    writeln!(
        out,
        "{name}: {} of CPU with it on the stack ({} of the managed CPU){}",
        duration(*cpu),
        share(*cpu, p.total_ns),
        if others > 0 {
            format!("; {others} other methods match `{method}`, give more of the name")
        } else {
            String::new()
        }
    )?;
    let Some(source) = source else {
        writeln!(
            out,
            "no source lines for it (its module has no symbols); by IL offset:"
        )?;
        for row in rows {
            writeln!(
                out,
                "{:>7} {:>7}  {}",
                share(row.self_ns, p.total_ns),
                share(row.total_ns, p.total_ns),
                row.place.describe()
            )?;
        }
        return Ok(());
    };
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
    let mut by_line: HashMap<u32, (u64, u64)> = HashMap::new();
    for row in &rows {
        if let Place::Line { line, .. } = row.place {
            let e = by_line.entry(line).or_default();
            e.0 += row.self_ns;
            e.1 += row.total_ns;
        }
    }
    let text = lines.file_lines(&file).map(<[String]>::to_vec);
    writeln!(out, "{file}, lines {first}-{last}")?;
    if text.is_none() {
        writeln!(
            out,
            "note: {file} cannot be read here (give --source-root FROM=TO if the sources moved)"
        )?;
    }
    writeln!(
        out,
        "\n{:>7} {:>7} {:>6}  Source",
        "Self%", "Total%", "Line"
    )?;
    for line in first..=last {
        let (self_ns, total_ns) = by_line.get(&line).copied().unwrap_or_default();
        let shown = |v: u64| {
            if v == 0 {
                String::new()
            } else {
                share(v, p.total_ns)
            }
        };
        let code = text
            .as_ref()
            .and_then(|t| t.get(line as usize - 1))
            .map_or("", String::as_str);
        writeln!(
            out,
            "{:>7} {:>7} {:>6}  {}",
            shown(self_ns),
            shown(total_ns),
            line,
            code
        )?;
    }
    let elsewhere: u64 = rows
        .iter()
        .filter(|r| !matches!(r.place, Place::Line { .. }))
        .map(|r| r.self_ns)
        .sum();
    if elsewhere > 0 {
        writeln!(
            out,
            "\n{} of its self CPU is at no line (its prologue's code of no IL, or an unknown place)",
            duration(elsewhere)
        )?;
    }
    Ok(())
}

/// Where the source file the symbols call `file` is: remapped by `roots`; a relative path
/// (a compiler run in the source's directory writes one) is taken from the module's directory,
/// and a file that is not where the symbols say is looked for by its name beside the module
/// (sources shipped with the assembly). As the symbols say when it is nowhere.
fn source_path(roots: &SourceRoots, file: &str, module_dir: Option<&Path>) -> PathBuf {
    let mapped = roots.map(file);
    let Some(dir) = module_dir else {
        return mapped;
    };
    let mapped = if mapped.is_relative() {
        dir.join(mapped)
    } else {
        mapped
    };
    if !mapped.exists()
        && let Some(name) = Path::new(file.rsplit(['/', '\\']).next().unwrap_or(file)).file_name()
        && dir.join(name).is_file()
    {
        return dir.join(name);
    }
    mapped
}

/// The line of IL offset `offset` (`None`: the epilogue, the method's last line): that of the
/// last sequence point at or before it, hidden points skipped.
fn line_at(source: &MethodSource, offset: Option<u32>) -> Option<u32> {
    let visible = source.points.iter().filter(|p| p.line != HIDDEN_LINE);
    match offset {
        Some(offset) => visible
            .filter(|p| p.il_offset <= offset)
            .max_by_key(|p| p.il_offset)
            .map(|p| p.line),
        None => visible.max_by_key(|p| p.il_offset).map(|p| p.line),
    }
}

/// The managed frames of trace stack `id`, innermost first: function and IL position.
fn managed_path(defs: &HashMap<u32, StackDef>, id: u32, out: &mut Vec<(u64, IlPosition)>) {
    out.clear();
    let mut cur = id;
    let mut steps = 0;
    while cur != 0 && steps <= defs.len() {
        let Some(def) = defs.get(&cur) else {
            break;
        };
        if def.frame_kind == FrameKind::Managed {
            out.push((def.frame, def.il));
        }
        cur = def.parent;
        steps += 1;
    }
}

/// The CPU of every line of `trace`'s CPU samples, of the threads `tids` only if given.
pub fn cpu_lines(
    trace: &LoadedTrace,
    tids: Option<&[u32]>,
    lines: &mut SourceLines,
) -> LineProfile {
    // Per stack first (a stack's frames are resolved once), then per line.
    let mut by_stack: HashMap<u32, u64> = HashMap::new();
    let mut native_only_ns = 0u64;
    for (sample_tid, stack, state, cpu_ns) in trace.sample_weights() {
        if state != ThreadState::Cpu
            || tids.is_some_and(|t| !t.contains(&sample_tid))
            || cpu_ns == 0
        {
            continue;
        }
        *by_stack.entry(stack).or_default() += cpu_ns;
    }
    let mut rows: HashMap<(u64, Place), (u64, u64)> = HashMap::new();
    let mut total_ns = 0u64;
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut positions_recorded = false;
    let mut stacks: Vec<(u32, u64)> = by_stack.into_iter().collect();
    stacks.sort_unstable();
    for (stack, cpu_ns) in stacks {
        managed_path(&trace.stacks, stack, &mut path);
        if path.is_empty() {
            native_only_ns += cpu_ns;
            continue;
        }
        total_ns += cpu_ns;
        seen.clear();
        for (k, &(function, il)) in path.iter().enumerate() {
            positions_recorded |= il != IlPosition::Unknown;
            let place = lines.place(&trace.names, function, il);
            let row = rows.entry((function, place.clone())).or_default();
            if k == 0 {
                row.0 += cpu_ns;
            }
            if seen.insert((function, place)) {
                row.1 += cpu_ns;
            }
        }
    }
    let mut without_lines: Vec<(String, String)> = Vec::new();
    let mut out: Vec<LineRow> = rows
        .into_iter()
        .map(|((function, place), (self_ns, total_ns))| {
            if !matches!(place, Place::Line { .. })
                && let Some(status) = lines.status(&trace.names, function)
                && !status.has_lines()
            {
                let module = trace.names.function_module(function);
                if !without_lines.iter().any(|(m, _)| *m == module) {
                    let path = trace
                        .names
                        .functions
                        .get(&function)
                        .and_then(|f| trace.names.modules.get(&f.module))
                        .map(|m| m.path.clone())
                        .unwrap_or_default();
                    without_lines.push((module, status.describe(Path::new(&path))));
                }
            }
            let text = match &place {
                Place::Line { file, line } => lines.text(file, *line),
                _ => None,
            };
            LineRow {
                function,
                method: trace.names.function(function),
                module: trace.names.function_module(function),
                place,
                text,
                self_ns,
                total_ns,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (b.self_ns, b.total_ns)
            .cmp(&(a.self_ns, a.total_ns))
            .then_with(|| (&a.method, &a.place).cmp(&(&b.method, &b.place)))
    });
    without_lines.sort();
    LineProfile {
        rows: out,
        total_ns,
        native_only_ns,
        without_lines,
        positions_recorded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage::SequencePoint;

    fn source(points: &[(u32, u32)]) -> MethodSource {
        MethodSource {
            file: "/src/App.cs".into(),
            points: points
                .iter()
                .map(|&(il_offset, line)| SequencePoint { il_offset, line })
                .collect(),
        }
    }

    #[test]
    fn an_il_offset_is_on_the_line_of_the_last_sequence_point_before_it() {
        let s = source(&[
            (0, 10),
            (1, 11),
            (0x0c, 12),
            (0x10, HIDDEN_LINE),
            (0x18, 14),
        ]);
        assert_eq!(line_at(&s, Some(0)), Some(10));
        assert_eq!(line_at(&s, Some(0x0b)), Some(11));
        assert_eq!(line_at(&s, Some(0x0c)), Some(12));
        assert_eq!(
            line_at(&s, Some(0x12)),
            Some(12),
            "hidden points are skipped"
        );
        assert_eq!(line_at(&s, Some(0x40)), Some(14));
        assert_eq!(line_at(&s, None), Some(14), "the epilogue is the last line");
        assert_eq!(line_at(&source(&[]), Some(3)), None);
    }

    #[test]
    fn source_roots_remap_the_start_of_paths() {
        let roots = SourceRoots::parse(&["/build/src=/home/me/app".to_string()]).unwrap();
        assert_eq!(
            roots.map("/build/src/Lib/A.cs"),
            PathBuf::from("/home/me/app/Lib/A.cs")
        );
        assert_eq!(roots.map("/other/B.cs"), PathBuf::from("/other/B.cs"));
        assert!(SourceRoots::parse(&["nope".to_string()]).is_err());
    }

    #[test]
    fn places_read_for_people() {
        let line = Place::Line {
            file: "/src/App.cs".into(),
            line: 14,
        };
        assert_eq!(line.describe(), "App.cs:14");
        assert_eq!(Place::IlOffset { offset: 0x2a }.describe(), "IL_002a");
        assert_eq!(Place::Unknown.describe(), "?");
    }
}
