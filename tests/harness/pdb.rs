//! Portable PDBs for the coverage tests, written by a library no one here wrote: Mono.Cecil
//! 0.11 (Debian's `libmono-cecil-private-cil`), driven by `tests/tools/PdbConvert.cs`, which
//! reads the Mono symbols `mcs -debug` wrote with Mono's own reader
//! (`libmono-compilerservices-symbolwriter4.0-cil`) and saves the assembly with a portable
//! PDB beside it or embedded in it. The converter is compiled once (for Mono, not CoreCLR)
//! and run with `mono`.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::compile::Program;
use crate::paths::{layout, workspace_root};
use crate::process::{OutputExt, run_command};

/// Where the converter puts the PDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdbKind {
    /// `<name>.pdb` beside the assembly.
    Beside,
    /// In the assembly's debug directory.
    Embedded,
}

const CECIL_DIR: &str = "/usr/lib/mono/gac/Mono.Cecil";
const SYMBOL_WRITER: &str = "/usr/lib/mono/4.5/Mono.CompilerServices.SymbolWriter.dll";
const INSTALL: &str = "run `cargo xtask setup` (it installs Debian's libmono-cecil-private-cil \
                       and libmono-compilerservices-symbolwriter4.0-cil)";

/// Mono.Cecil 0.11's assembly in Mono's global assembly cache.
fn cecil() -> PathBuf {
    std::fs::read_dir(CECIL_DIR)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("0.11."))
        })
        .map(|dir| dir.join("Mono.Cecil.dll"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| panic!("Mono.Cecil 0.11 is not in {CECIL_DIR}; {INSTALL}"))
}

/// The converter, compiled once.
fn converter() -> PathBuf {
    let out = layout().target_root.join("e2e-tools");
    let exe = out.join("PdbConvert.exe");
    let source = workspace_root().join("tests/tools/PdbConvert.cs");
    let fresh = |exe: &Path| {
        let (Ok(e), Ok(s)) = (std::fs::metadata(exe), std::fs::metadata(&source)) else {
            return false;
        };
        matches!((e.modified(), s.modified()), (Ok(e), Ok(s)) if e >= s)
    };
    if fresh(&exe) {
        return exe;
    }
    assert!(
        Path::new(SYMBOL_WRITER).is_file(),
        "{SYMBOL_WRITER} is missing; {INSTALL}"
    );
    std::fs::create_dir_all(&out).unwrap();
    // Written beside and renamed: test binaries running at once may compile it together.
    let tmp = out.join(format!("PdbConvert-{}.exe", std::process::id()));
    let mut mcs = Command::new("mcs");
    mcs.arg(format!("-r:{}", cecil().display()))
        .arg(format!("-r:{SYMBOL_WRITER}"))
        .arg(format!("-out:{}", tmp.display()))
        .arg(&source);
    run_command(&mut mcs).assert_success();
    std::fs::rename(&tmp, &exe).unwrap();
    exe
}

/// A copy of `program` (compiled with `// @mcs -debug`) whose symbols are a portable PDB
/// written by Cecil instead of the `.mdb`. The copy lives in the returned directory; its
/// sequence points name the same source file.
pub fn with_portable_pdb(program: &Program, kind: PdbKind) -> (TempDir, Program) {
    let dir = crate::temp_dir();
    let mut run = Command::new("mono");
    run.arg(converter())
        .arg(&program.dll)
        .arg(dir.path())
        .arg(match kind {
            PdbKind::Beside => "portable",
            PdbKind::Embedded => "embedded",
        });
    let out = run_command(&mut run);
    out.assert_success();
    let points: u32 = out.stdout_str().trim().parse().unwrap();
    assert!(
        points > 0,
        "no sequence points converted: {}",
        out.describe()
    );
    let name = program.dll.file_name().unwrap();
    let config = program.dll.with_extension("runtimeconfig.json");
    std::fs::copy(&config, dir.path().join(config.file_name().unwrap())).unwrap();
    let copy = Program {
        name: program.name.clone(),
        dll: dir.path().join(name),
        dotnet: program.dotnet,
    };
    assert_eq!(
        copy.dll.with_extension("pdb").is_file(),
        kind == PdbKind::Beside
    );
    (dir, copy)
}
