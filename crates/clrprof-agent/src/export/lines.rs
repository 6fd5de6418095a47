//! The source lines of exported frames: a managed frame's IL position (the instruction of the
//! innermost frame, the call of each caller, as the agent records them for traces) turned
//! into the file and line of the method's source through its module's symbols (a portable
//! PDB beside the assembly or embedded in it, Mono's `.mdb`), read by `clrprof-symbols`
//! exactly as `clrprof report --lines` reads them.
//!
//! A module's symbols are looked for once, when a frame of it is first exported; a method's
//! sequence points are taken from them once. Both are dropped when the stream defines the
//! module or the function again (an id the runtime reused belongs to other code then).
//! Without symbols, or for a position the symbols do not cover, a frame has no line: never an
//! invented one. Code the JIT inlined has no line of its own: it counts for the line of the
//! call in the method it was inlined into. A method's file is named as the source roots of
//! the settings map it (`CLRPROF_EXPORT_SOURCE_ROOTS`), once per method.

use std::path::Path;
use std::time::{Duration, Instant};

use clrprof_symbols::managed::{MethodSource, ModuleSymbols};
use clrprof_trace::IlPosition;
use clrprof_trace::config::SourceRoots;
use rustc_hash::FxHashMap;

/// What reading symbols cost, for the agent's own accounting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Modules whose symbols were looked for.
    pub modules_read: u64,
    /// Of those, modules with symbols that give lines.
    pub modules_with_lines: u64,
    /// The time spent looking for and reading symbols.
    pub reading: Duration,
}

/// One module's path and, once looked for, its symbols.
struct Module {
    path: String,
    symbols: Option<ModuleSymbols>,
}

/// Finds the source line of managed frames.
#[derive(Default)]
pub struct FrameLines {
    modules: FxHashMap<u64, Module>,
    /// Function id -> its module, its MethodDef token and, once taken from the symbols, its
    /// sequence points (`Some(None)`: the symbols do not cover it).
    functions: FxHashMap<u64, (u64, u32, Option<Option<MethodSource>>)>,
    counts: LineCounts,
    /// How the symbols' file names are mapped.
    roots: SourceRoots,
}

impl FrameLines {
    /// Lines whose files are named as `roots` map them.
    pub fn new(roots: SourceRoots) -> FrameLines {
        FrameLines {
            roots,
            ..FrameLines::default()
        }
    }

    /// Module `id` is the assembly at `path` (replacing what an earlier life of the id was).
    pub fn define_module(&mut self, id: u64, path: &str) {
        self.modules.insert(
            id,
            Module {
                path: path.to_string(),
                symbols: None,
            },
        );
        // Sequence points taken from the module's former symbols are no longer its own.
        for (module, _, source) in self.functions.values_mut() {
            if *module == id {
                *source = None;
            }
        }
    }

    /// Function `id` is method `token` of module `module`.
    pub fn define_function(&mut self, id: u64, module: u64, token: u32) {
        self.functions.insert(id, (module, token, None));
    }

    /// The file and line of function `id` at `il`, when its module's symbols say.
    pub fn line(&mut self, id: u64, il: IlPosition) -> Option<(&str, u32)> {
        let offset = match il {
            IlPosition::Unknown => return None,
            IlPosition::At(offset) => Some(offset),
            IlPosition::Epilogue => None,
        };
        let (module, token, source) = self.functions.get_mut(&id)?;
        if source.is_none() {
            let m = self.modules.get_mut(module)?;
            if m.symbols.is_none() {
                let start = Instant::now();
                let symbols = ModuleSymbols::for_module(Path::new(&m.path));
                self.counts.reading += start.elapsed();
                self.counts.modules_read += 1;
                if symbols.status.has_lines() {
                    self.counts.modules_with_lines += 1;
                }
                m.symbols = Some(symbols);
            }
            let mut method = m.symbols.as_ref().and_then(|s| s.method(*token));
            if let Some(method) = method.as_mut().filter(|_| !self.roots.is_empty()) {
                method.file = self.roots.map(&method.file).to_string_lossy().into_owned();
            }
            *source = Some(method);
        }
        let source = source.as_ref()?.as_ref()?;
        let line = source.line_at(offset)?;
        Some((source.file.as_str(), line))
    }

    /// What reading symbols cost so far.
    pub fn counts(&self) -> LineCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_symbols_a_frame_has_no_line() {
        let mut lines = FrameLines::default();
        lines.define_module(1, "/nowhere/App.dll");
        lines.define_function(10, 1, 0x0600_0001);
        assert_eq!(lines.line(10, IlPosition::At(4)), None);
        assert_eq!(lines.line(10, IlPosition::Unknown), None);
        // An undefined function, or one of an undefined module, has none either.
        assert_eq!(lines.line(11, IlPosition::At(4)), None);
        lines.define_function(12, 2, 0x0600_0001);
        assert_eq!(lines.line(12, IlPosition::At(4)), None);
        let counts = lines.counts();
        assert_eq!((counts.modules_read, counts.modules_with_lines), (1, 0));
    }
}
