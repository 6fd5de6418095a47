//! Names for the native frames the agent could not name, from symbol files given after the
//! recording (`clrprof report --symbols PATH`).
//!
//! A stripped library (.NET 8's `libcoreclr.so`, the `dotnet` host) has symbols for its
//! exports only. Since format 1.3 the agent still tells its functions apart: each frame
//! carries its module (path and GNU build id, a `NativeModule` record) and where its function
//! starts, as the module's ELF file numbers it. Reports show such a frame as
//! `libcoreclr.so!+0x1f2a30` until a symbol file of the same build (a debug file, or an
//! unstripped copy of the library) names it: the symbol covering that address in the file's
//! `.symtab` (and `.dynsym`), demangled as the agent demangles, so that the frame gets the name
//! a recording of the unstripped library would have given it. Files are matched to modules by
//! build id only ([`SymbolFiles`]): a file of another build would name other functions.

use std::collections::{BTreeMap, HashSet};

use clrprof_symbols::{SymbolFiles, build_id_hex, demangle};

use crate::file_names::file_name;
use crate::trace::LoadedTrace;

use crate::native_naming::{NativeNaming, SymbolFileUse};

/// Names the native frames that have no name but a function address, from `files` (every
/// output then shows those names), and says what it did (also kept in
/// [`LoadedTrace::native_naming`]).
pub fn name_frames<'t>(t: &'t mut LoadedTrace, files: &mut SymbolFiles) -> &'t NativeNaming {
    let names = &mut t.names;
    names.native_names.clear();
    let mut naming = NativeNaming::default();
    let mut used: BTreeMap<String, SymbolFileUse> = BTreeMap::new();
    let mut ids: Vec<u64> = names.natives.keys().copied().collect();
    ids.sort_unstable();
    for id in ids {
        let frame = &names.natives[&id];
        if !frame.symbol.is_empty() || frame.library.is_empty() {
            continue;
        }
        let module = names
            .native_modules
            .get(&frame.module)
            .filter(|_| frame.function != 0);
        let found = module.and_then(|m| {
            let found = files.table(&parse_hex(&m.build_id)?, &file_name(&m.path))?;
            let (symbol, _) = found.table.lookup(frame.function)?;
            Some((m, found.path.display().to_string(), demangle(symbol)))
        });
        let Some((module, path, name)) = found else {
            naming.unnamed += 1;
            continue;
        };
        naming.named += 1;
        used.entry(path.clone())
            .or_insert_with(|| SymbolFileUse {
                path,
                module: file_name(&module.path),
                build_id: module.build_id.clone(),
                frames: 0,
            })
            .frames += 1;
        names.native_names.insert(id, name);
    }
    naming.files = used.into_values().collect();
    let modules: HashSet<&str> = names
        .native_modules
        .values()
        .map(|m| m.build_id.as_str())
        .collect();
    naming.unmatched = files
        .given_files()
        .filter(|(_, id)| !modules.contains(build_id_hex(id).as_str()))
        .map(|(path, _)| path.display().to_string())
        .collect();
    t.native_naming.insert(naming)
}

/// The bytes of a hexadecimal build id (`None` if empty or not hexadecimal).
fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::native_trace;

    #[test]
    fn symbol_files_name_what_the_agent_could_not() {
        let mut t = native_trace();
        // No symbol file of that build: nothing is named, and the header says so.
        let dir = std::env::temp_dir().join(format!("clrprof-native-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut files = SymbolFiles::open(std::slice::from_ref(&dir)).unwrap();
        let naming = name_frames(&mut t, &mut files).clone();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            naming,
            NativeNaming {
                named: 0,
                unnamed: 3,
                files: Vec::new(),
                unmatched: Vec::new(),
            }
        );
        assert_eq!(
            naming.summary(),
            "0 native frames named from symbol files, 3 unnamed"
        );
        assert_eq!(t.native_naming, Some(naming));
        assert_eq!(t.names.native_frame(2).0, "libcoreclr.so!+0x1f2a30");
        // A name a symbol file gave is shown in every output (they all use the profile).
        t.names
            .native_names
            .insert(2, "WKS::gc_heap::plan_phase".into());
        assert_eq!(t.names.native_frame(2).0, "WKS::gc_heap::plan_phase");
        assert_eq!(t.names.native_frame(3).0, "libcoreclr.so!+0x1f3000");
    }

    #[test]
    fn summary_names_the_files() {
        let naming = NativeNaming {
            named: 1234,
            unnamed: 4,
            files: vec![SymbolFileUse {
                path: "/sym/libcoreclr.so.dbg".into(),
                module: "libcoreclr.so".into(),
                build_id: "ab".into(),
                frames: 1230,
            }],
            unmatched: vec!["/sym/other.dbg".into()],
        };
        assert_eq!(
            naming.summary(),
            "1,234 native frames named from symbol files (libcoreclr.so: 1,230 from \
             /sym/libcoreclr.so.dbg), 4 unnamed; /sym/other.dbg matches no module of the trace"
        );
    }

    #[test]
    fn hex_build_ids() {
        assert_eq!(parse_hex("ab01ff"), Some(vec![0xab, 0x01, 0xff]));
        assert_eq!(parse_hex(""), None);
        assert_eq!(parse_hex("abc"), None);
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex("é1"), None);
        assert_eq!(build_id_hex(&parse_hex("00c0ffee").unwrap()), "00c0ffee");
    }
}
