//! Code coverage: the per-block hit counts `clrprof coverage` records, per method and per
//! source line, and their outputs (text, JSON, lcov, Cobertura XML).
//!
//! The agent reports, for each method it instrumented, the IL range and the hit count of each
//! basic block (`CoverageMethod` records). Where the module has symbols (Mono's `.mdb`, see
//! [`mdb`], or a portable PDB beside it or embedded in it, see [`pdb`]), each sequence point (an IL offset where a source line starts) takes the count of
//! the block holding its offset; a line's count is the largest of its sequence points'.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::file_names::file_name;
use crate::trace::LoadedTrace;

mod cobertura;
mod lcov;
mod text;

pub use clrprof_symbols::managed::{
    MethodSource, ModuleSymbols, SequencePoint, SymbolStatus, mdb, pdb,
};

/// One basic block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockCoverage {
    /// IL offset of its first instruction.
    pub il_start: u32,
    /// IL offset after its last instruction.
    pub il_end: u32,
    /// Times it was entered.
    pub hits: u64,
    /// The source line of its first sequence point, when symbols were found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// One method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MethodCoverage {
    /// Assembly (file name without extension).
    pub assembly: String,
    /// Path of its module.
    #[serde(skip)]
    pub module_path: String,
    /// Declaring type, e.g. `Shop.Cart`.
    pub type_name: String,
    /// Method name (with generic arguments of the first instantiation compiled).
    pub method_name: String,
    /// Parameter list, e.g. `(int, string)`.
    pub signature: String,
    /// MethodDef token.
    pub token: u32,
    /// Its blocks in IL order.
    pub blocks: Vec<BlockCoverage>,
    /// Source file, when symbols were found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Hits per source line, when symbols were found.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lines: BTreeMap<u32, u64>,
}

impl MethodCoverage {
    /// `Type.Method(args)`.
    pub fn display_name(&self) -> String {
        if self.type_name.is_empty() {
            format!("{}{}", self.method_name, self.signature)
        } else {
            format!("{}.{}{}", self.type_name, self.method_name, self.signature)
        }
    }

    /// Blocks entered at least once.
    pub fn covered_blocks(&self) -> usize {
        self.blocks.iter().filter(|b| b.hits > 0).count()
    }

    /// Times the method was called (its first block's hits).
    pub fn calls(&self) -> u64 {
        self.blocks.first().map_or(0, |b| b.hits)
    }

    /// Hits of the block holding `il_offset`.
    pub fn hits_at(&self, il_offset: u32) -> Option<u64> {
        self.blocks
            .iter()
            .find(|b| b.il_start <= il_offset && il_offset < b.il_end)
            .map(|b| b.hits)
    }

    /// Applies symbols: line hits from the sequence points.
    pub fn apply_source(&mut self, source: &MethodSource) {
        let mut lines = BTreeMap::new();
        for p in &source.points {
            if let Some(hits) = self.hits_at(p.il_offset) {
                let e = lines.entry(p.line).or_insert(0);
                *e = (*e).max(hits);
            }
        }
        if !lines.is_empty() {
            self.source = Some(source.file.clone());
            self.lines = lines;
            for b in &mut self.blocks {
                b.line = source
                    .points
                    .iter()
                    .filter(|p| b.il_start <= p.il_offset && p.il_offset < b.il_end)
                    .min_by_key(|p| p.il_offset)
                    .map(|p| p.line);
            }
        }
    }
}

/// Everything a coverage run measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoverageReport {
    /// Methods, by assembly, type and name.
    pub methods: Vec<MethodCoverage>,
    /// The symbols found for each covered assembly, by assembly name.
    pub symbols: Vec<AssemblySymbols>,
}

/// The symbols of one covered assembly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssemblySymbols {
    /// Assembly (file name without extension).
    pub assembly: String,
    /// Path of its module.
    pub module_path: String,
    /// What was found.
    pub status: SymbolStatus,
    /// The same, for people.
    pub description: String,
    /// Its methods in the report.
    pub methods: usize,
}

/// The assembly a module's path names: its file name without the extension.
fn assembly_name(module_path: &str) -> String {
    let file = file_name(module_path);
    Path::new(&file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(&file)
        .to_string()
}

/// The source file a symbol file names; if it is not there (the build moved), a file of the
/// same name next to the module.
fn locate_source(recorded: &str, module: &Path) -> String {
    if Path::new(recorded).is_file() {
        return recorded.to_string();
    }
    let beside = module.parent().map(|dir| dir.join(file_name(recorded)));
    match beside {
        Some(path) if path.is_file() => path.display().to_string(),
        _ => recorded.to_string(),
    }
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoverageFormat {
    /// A table per method.
    Text,
    /// JSON ([`CoverageReport`] serialized).
    Json,
    /// lcov tracefile (`genhtml` input).
    Lcov,
    /// Cobertura XML.
    Cobertura,
}

impl CoverageReport {
    /// The coverage in a trace; symbols are looked up for each module ([`ModuleSymbols`]).
    pub fn from_trace(trace: &LoadedTrace) -> CoverageReport {
        let names = &trace.names;
        let mut symbols: BTreeMap<String, ModuleSymbols> = BTreeMap::new();
        let mut methods: Vec<MethodCoverage> = trace
            .coverage
            .iter()
            .map(|m| {
                let module_path = names
                    .modules
                    .get(&m.module)
                    .map(|d| d.path.clone())
                    .unwrap_or_default();
                let assembly = assembly_name(&module_path);
                let mut method = MethodCoverage {
                    assembly,
                    type_name: m.type_name.clone(),
                    method_name: m.method_name.clone(),
                    signature: m.signature.clone(),
                    token: m.token,
                    blocks: m
                        .blocks
                        .iter()
                        .map(|b| BlockCoverage {
                            il_start: b.il_start,
                            il_end: b.il_end,
                            hits: b.hits,
                            line: None,
                        })
                        .collect(),
                    source: None,
                    lines: BTreeMap::new(),
                    module_path: module_path.clone(),
                };
                let symbol_file = symbols
                    .entry(module_path.clone())
                    .or_insert_with(|| ModuleSymbols::for_module(Path::new(&module_path)));
                if let Some(mut source) = symbol_file.method(m.token) {
                    source.file = locate_source(&source.file, Path::new(&module_path));
                    method.apply_source(&source);
                }
                method
            })
            .collect();
        methods.sort_by(|a, b| {
            (
                &a.assembly,
                &a.type_name,
                &a.method_name,
                &a.signature,
                a.token,
            )
                .cmp(&(
                    &b.assembly,
                    &b.type_name,
                    &b.method_name,
                    &b.signature,
                    b.token,
                ))
        });
        let symbols = symbols
            .into_iter()
            .map(|(module_path, s)| {
                let assembly = assembly_name(&module_path);
                AssemblySymbols {
                    methods: methods
                        .iter()
                        .filter(|m| m.module_path == module_path)
                        .count(),
                    description: s.status.describe(Path::new(&module_path)),
                    status: s.status,
                    assembly,
                    module_path,
                }
            })
            .collect();
        CoverageReport { methods, symbols }
    }

    /// The covered assemblies without usable symbols.
    pub fn without_symbols(&self) -> impl Iterator<Item = &AssemblySymbols> {
        self.symbols.iter().filter(|s| !s.status.has_lines())
    }

    /// Renders the report.
    pub fn render(&self, format: CoverageFormat) -> String {
        match format {
            CoverageFormat::Text => text::render(self),
            CoverageFormat::Json => serde_json::to_string_pretty(self).unwrap_or_default() + "\n",
            CoverageFormat::Lcov => lcov::render(self),
            CoverageFormat::Cobertura => cobertura::render(self),
        }
    }

    /// Blocks in total, and entered at least once.
    pub fn block_totals(&self) -> (usize, usize) {
        self.methods.iter().fold((0, 0), |(all, hit), m| {
            (all + m.blocks.len(), hit + m.covered_blocks())
        })
    }
}

#[cfg(test)]
mod tests;
