//! The startup view: what happened before the program's `Main` started running.
//!
//! The entry point is read from the program's own file: the first module loaded whose PE
//! image has a CLI header with a managed entry point (a MethodDef token). `Main` starts
//! running when its JIT compilation finishes; everything loaded and compiled before that is
//! startup.

use std::path::Path;

use clrprof_events::bytes::u32_at;
use serde::Serialize;

use super::activity::{ActivityBuilder, LoadRecord, load_name};
use crate::names::Names;
use crate::pe::PeImage;

/// The startup view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Startup {
    /// The entry point, e.g. `Program.Main(string[])`.
    pub main: String,
    /// The program's module.
    pub module: String,
    /// When `Main` started running (its compilation finished), since the session started.
    pub main_ns: u64,
    /// Assemblies loaded before that, in order.
    pub assemblies: Vec<StartupLoad>,
    /// Modules loaded before that.
    pub modules_loaded: u64,
    /// Classes loaded before that.
    pub classes_loaded: u64,
    /// Methods compiled before that (Main included).
    pub methods_compiled: u64,
    /// Time in the JIT before that.
    pub jit_ns: u64,
}

/// An assembly loaded during startup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartupLoad {
    /// Its name.
    pub name: String,
    /// When its load finished.
    pub loaded_ns: u64,
    /// How long the load took.
    pub duration_ns: u64,
}

/// Builds the startup view, if the program's entry point can be found.
pub(crate) fn startup(names: &Names, activity: &ActivityBuilder) -> Option<Startup> {
    let (module, token) = activity
        .loads
        .iter()
        .filter(|l| l.kind == "module" && l.status & 0x8000_0000 == 0)
        .find_map(|l| {
            let path = &names.modules.get(&l.id)?.path;
            Some((l.id, entry_point_token(Path::new(path))?))
        })?;
    let main = names
        .functions
        .values()
        .find(|f| f.module == module && f.token == token)?
        .id;
    let main_ns = activity.first_compiled(main)?;
    let before = |l: &&LoadRecord| l.start_ns + l.duration_ns <= main_ns;
    let assemblies = activity
        .loads
        .iter()
        .filter(|l| l.kind == "assembly")
        .filter(before)
        .map(|l| StartupLoad {
            name: load_name(names, l.kind, l.id),
            loaded_ns: l.start_ns + l.duration_ns,
            duration_ns: l.duration_ns,
        })
        .collect();
    let loaded = |kind: &str| {
        activity
            .loads
            .iter()
            .filter(|l| l.kind == kind)
            .filter(before)
            .count() as u64
    };
    let compiled: Vec<&(u64, u64)> = activity
        .compilations
        .iter()
        .filter(|&&(end, _)| end <= main_ns)
        .collect();
    Some(Startup {
        main: names.function(main),
        module: load_name(names, "module", module),
        main_ns,
        assemblies,
        modules_loaded: loaded("module"),
        classes_loaded: loaded("class"),
        methods_compiled: compiled.len() as u64,
        jit_ns: compiled.iter().map(|&&(_, d)| d).sum(),
    })
}

/// The managed entry point's MethodDef token of a PE file, if it has one.
pub(crate) fn entry_point_token(path: &Path) -> Option<u32> {
    let bytes = std::fs::read(path).ok()?;
    cli_entry_point(&bytes)
}

/// Reads the CLI header's `EntryPointToken` (ECMA-335 II.25.3.3) of a PE image.
fn cli_entry_point(b: &[u8]) -> Option<u32> {
    let header = PeImage::parse(b)?.cli_header()?;
    // COMIMAGE_FLAGS_NATIVE_ENTRYPOINT: the entry point is an RVA, not a token.
    let flags = u32_at(b, header + 16)?;
    let token = u32_at(b, header + 20)?;
    (flags & 0x10 == 0 && token >> 24 == 0x06 && token & 0x00ff_ffff != 0).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal PE32 image with one section holding a CLI header at RVA 0x2000.
    fn image(entry: u32, flags: u32) -> Vec<u8> {
        let mut b = vec![0u8; 0x400];
        b[..2].copy_from_slice(b"MZ");
        b[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        b[0x80..0x84].copy_from_slice(b"PE\0\0");
        let coff = 0x84;
        b[coff + 2..coff + 4].copy_from_slice(&1u16.to_le_bytes());
        b[coff + 16..coff + 18].copy_from_slice(&224u16.to_le_bytes());
        let optional = coff + 20;
        b[optional..optional + 2].copy_from_slice(&0x10bu16.to_le_bytes());
        // NumberOfRvaAndSizes: the 16 data directories every linker writes.
        b[optional + 92..optional + 96].copy_from_slice(&16u32.to_le_bytes());
        let cli_dir = optional + 96 + 14 * 8;
        b[cli_dir..cli_dir + 4].copy_from_slice(&0x2008u32.to_le_bytes());
        b[cli_dir + 4..cli_dir + 8].copy_from_slice(&72u32.to_le_bytes());
        let section = optional + 224;
        b[section + 8..section + 12].copy_from_slice(&0x100u32.to_le_bytes());
        b[section + 12..section + 16].copy_from_slice(&0x2000u32.to_le_bytes());
        b[section + 16..section + 20].copy_from_slice(&0x200u32.to_le_bytes());
        b[section + 20..section + 24].copy_from_slice(&0x200u32.to_le_bytes());
        let header = 0x208;
        b[header..header + 4].copy_from_slice(&72u32.to_le_bytes());
        b[header + 16..header + 20].copy_from_slice(&flags.to_le_bytes());
        b[header + 20..header + 24].copy_from_slice(&entry.to_le_bytes());
        b
    }

    #[test]
    fn reads_the_entry_point_token() {
        assert_eq!(cli_entry_point(&image(0x0600_0007, 0)), Some(0x0600_0007));
        // A library (no entry point), a native entry point, a file entry point.
        assert_eq!(cli_entry_point(&image(0, 0)), None);
        assert_eq!(cli_entry_point(&image(0x0600_0007, 0x10)), None);
        assert_eq!(cli_entry_point(&image(0x2600_0001, 0)), None);
        // Not a PE file, or cut short anywhere.
        assert_eq!(cli_entry_point(b"hello"), None);
        let whole = image(0x0600_0007, 0);
        for len in [0, 0x40, 0x90, 0x200, 0x20c] {
            assert_eq!(cli_entry_point(&whole[..len]), None, "{len}");
        }
    }
}
