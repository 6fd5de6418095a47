//! Finding a module's symbols: Mono's `.mdb` beside it, a portable PDB beside it, or a
//! portable PDB embedded in it, in that order; and saying what was found.

use std::path::Path;

use super::pdb::{self, PdbLocation, PdbProblem, PortablePdb};
use super::{MethodSource, mdb};

/// What symbols a module has.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(
    feature = "serde",
    serde(rename_all = "snake_case", tag = "kind", content = "why")
)]
pub enum SymbolStatus {
    /// Mono's `App.dll.mdb` beside it.
    Mdb,
    /// A portable PDB `App.pdb` beside it.
    PortablePdb,
    /// A portable PDB embedded in it.
    EmbeddedPdb,
    /// None were found.
    None,
    /// `App.pdb` beside it is a Windows PDB, which clrprof does not read.
    WindowsPdb,
    /// Symbols were found but could not be read.
    Unreadable(String),
}

impl SymbolStatus {
    /// Whether source lines come from these symbols.
    pub fn has_lines(&self) -> bool {
        matches!(
            self,
            SymbolStatus::Mdb | SymbolStatus::PortablePdb | SymbolStatus::EmbeddedPdb
        )
    }

    /// For people: `a portable PDB beside it (App.pdb)`, `no symbols: no App.pdb beside it,
    /// none embedded in it, no App.dll.mdb`.
    pub fn describe(&self, module: &Path) -> String {
        let name = |ext: &str| {
            module
                .with_extension(ext)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let mdb = format!(
            "{}.mdb",
            module
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        match self {
            SymbolStatus::Mdb => format!("Mono symbols beside it ({mdb})"),
            SymbolStatus::PortablePdb => format!("a portable PDB beside it ({})", name("pdb")),
            SymbolStatus::EmbeddedPdb => "a portable PDB embedded in it".to_string(),
            SymbolStatus::None => format!(
                "no symbols: no {} beside it, none embedded in it, no {mdb}",
                name("pdb")
            ),
            SymbolStatus::WindowsPdb => format!(
                "{} is a Windows PDB, which clrprof does not read; build with \
                 <DebugType>portable</DebugType> or <DebugType>embedded</DebugType>",
                name("pdb")
            ),
            SymbolStatus::Unreadable(why) => format!("its symbols cannot be read: {why}"),
        }
    }
}

/// A module's symbols, read.
#[derive(Debug, Clone)]
pub struct ModuleSymbols {
    reader: Option<Reader>,
    /// What was found.
    pub status: SymbolStatus,
}

#[derive(Debug, Clone)]
enum Reader {
    Mdb(mdb::SymbolFile),
    Pdb(PortablePdb),
}

impl ModuleSymbols {
    /// Looks for the symbols of the module at `path`.
    pub fn for_module(path: &Path) -> ModuleSymbols {
        if let Some(file) = mdb::SymbolFile::for_module(path) {
            return ModuleSymbols {
                reader: Some(Reader::Mdb(file)),
                status: SymbolStatus::Mdb,
            };
        }
        let (reader, status) = match pdb::for_module(path) {
            Ok(Some((p, PdbLocation::Beside))) => (Some(Reader::Pdb(p)), SymbolStatus::PortablePdb),
            Ok(Some((p, PdbLocation::Embedded))) => {
                (Some(Reader::Pdb(p)), SymbolStatus::EmbeddedPdb)
            }
            Ok(None) => (None, SymbolStatus::None),
            Err(PdbProblem::WindowsPdb) => (None, SymbolStatus::WindowsPdb),
            Err(PdbProblem::Unreadable(why)) => (None, SymbolStatus::Unreadable(why)),
        };
        ModuleSymbols { reader, status }
    }

    /// The source positions of the method with MethodDef `token`.
    pub fn method(&self, token: u32) -> Option<MethodSource> {
        match self.reader.as_ref()? {
            Reader::Mdb(f) => f.method(token),
            Reader::Pdb(p) => p.method(token),
        }
    }
}
