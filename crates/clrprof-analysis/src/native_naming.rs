//! What the symbol files given to a report named: kept by the loaded trace, said in the
//! report's header (the naming itself is in [`crate::native`]).

use serde::Serialize;

use crate::units::count;

/// What the symbol files named (the report's header says it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NativeNaming {
    /// Native frames (one per function) named from symbol files.
    pub named: u64,
    /// Native frames of a known library still without a name: no symbol file of their
    /// module's build, no symbol at their address in it, or no function address in the trace
    /// (written before format 1.3, or code without unwind information).
    pub unnamed: u64,
    /// The symbol files that named frames, by path.
    pub files: Vec<SymbolFileUse>,
    /// Files given (not found in a directory) whose build id is no module's of the trace.
    pub unmatched: Vec<String>,
}

/// One symbol file that named frames.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolFileUse {
    /// The file.
    pub path: String,
    /// The file name of the module it named frames of, e.g. `libcoreclr.so`.
    pub module: String,
    /// The build id they share, in hexadecimal.
    pub build_id: String,
    /// How many frames it named.
    pub frames: u64,
}

impl NativeNaming {
    /// One line for a report's header: `1,234 native frames named from symbol files
    /// (libcoreclr.so: 1,230 from /sym/libcoreclr.so.dbg), 4 unnamed`.
    pub fn summary(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|f| format!("{}: {} from {}", f.module, count(f.frames), f.path))
            .collect();
        let mut line = format!(
            "{} native frames named from symbol files",
            count(self.named)
        );
        if !files.is_empty() {
            line.push_str(&format!(" ({})", files.join("; ")));
        }
        line.push_str(&format!(", {} unnamed", count(self.unnamed)));
        for path in &self.unmatched {
            line.push_str(&format!("; {path} matches no module of the trace"));
        }
        line
    }
}
