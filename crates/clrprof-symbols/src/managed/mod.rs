//! Source lines of managed methods: where each IL offset of a method is in its source file,
//! from the module's symbols (Mono's `.mdb` beside the assembly, a portable PDB beside it or
//! embedded in it: [`ModuleSymbols`]). Read by `clrprof report` (lines, coverage) and by the
//! agent in export mode (the lines of exported frames).
//!
//! - [`pe`]: the parts of a PE image a reader of .NET assemblies needs (sections, CLI header,
//!   debug directory), through `object`'s PE reader.
//! - [`pdb`]: portable PDBs, beside the assembly or embedded in it.
//! - [`mdb`]: Mono's `.mdb` symbol files.
//! - [`module`]: finding a module's symbols, and saying what was found.

pub mod mdb;
pub mod module;
pub mod pdb;
pub mod pe;

pub use module::{ModuleSymbols, SymbolStatus};

/// The line of sequence points that hide compiler-generated code between statements.
pub const HIDDEN_LINE: u32 = 0x00fe_efee;

/// Where a source line starts in a method's IL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SequencePoint {
    /// IL offset.
    pub il_offset: u32,
    /// 1-based line.
    pub line: u32,
}

/// Source positions of one method.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MethodSource {
    /// The source file.
    pub file: String,
    /// Its sequence points.
    pub points: Vec<SequencePoint>,
}

impl MethodSource {
    /// The line of IL offset `offset` (`None`: the epilogue, the method's last line): that of
    /// the last sequence point at or before it, hidden points skipped.
    pub fn line_at(&self, offset: Option<u32>) -> Option<u32> {
        let visible = self.points.iter().filter(|p| p.line != HIDDEN_LINE);
        match offset {
            Some(offset) => visible
                .filter(|p| p.il_offset <= offset)
                .max_by_key(|p| p.il_offset)
                .map(|p| p.line),
            None => visible.max_by_key(|p| p.il_offset).map(|p| p.line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(s.line_at(Some(0)), Some(10));
        assert_eq!(s.line_at(Some(0x0b)), Some(11));
        assert_eq!(s.line_at(Some(0x0c)), Some(12));
        assert_eq!(s.line_at(Some(0x12)), Some(12), "hidden points are skipped");
        assert_eq!(s.line_at(Some(0x40)), Some(14));
        assert_eq!(s.line_at(None), Some(14), "the epilogue is the last line");
        assert_eq!(source(&[]).line_at(Some(3)), None);
    }
}
