//! Which line burns it: the CPU, allocated bytes, lock waits and throws of each source line of
//! managed code, from the IL position the
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

mod profile;
mod source_view;
mod text;

pub use profile::{
    LineMeasure, LineProfile, LineRow, alloc_lines, contention_lines, cpu_lines, throw_lines,
};
pub use source_view::{SourceView, SourceViewLine, source_view};
pub use text::{write_lines_json, write_lines_text, write_source_text};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clrprof_trace::IlPosition;
use serde::Serialize;

use crate::names::Names;
use clrprof_symbols::managed::{MethodSource, ModuleSymbols, SymbolStatus};

pub(crate) use clrprof_symbols::managed::HIDDEN_LINE;

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
pub(crate) fn short_file(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

pub use clrprof_trace::config::{BadSourceRoot, SourceRoots};

/// Reads symbols and source files once each.
#[derive(Default)]
pub struct SourceLines {
    pub(crate) roots: SourceRoots,
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

    pub(crate) fn method_source(&mut self, names: &Names, function: u64) -> Option<&MethodSource> {
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
    pub(crate) fn status(&self, names: &Names, function: u64) -> Option<&SymbolStatus> {
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
            Some(source) => match source.line_at(offset) {
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

/// Where the source file the symbols call `file` is: remapped by `roots`; a relative path
/// (a compiler run in the source's directory writes one) is taken from the module's directory,
/// and a file that is not where the symbols say is looked for by its name beside the module
/// (sources shipped with the assembly). As the symbols say when it is nowhere.
pub(crate) fn source_path(roots: &SourceRoots, file: &str, module_dir: Option<&Path>) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

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
