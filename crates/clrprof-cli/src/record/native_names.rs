//! Names for the native functions of a recording, given here rather than in the program's
//! process.
//!
//! `record` and `attach` ask the agent to leave native functions unnamed
//! (`native_names=reader`): reading a module's symbol table (libc's from its debug file, the
//! C++ runtime's exports) costs milliseconds of CPU per module, about a fifth of what the
//! profiler costs a short program at 100 Hz. The agent still tells the functions apart: each
//! frame comes with its module (a `NativeModule` record: path and GNU build id) and where its
//! function starts, as the module's ELF file numbers it. As each such frame arrives, its
//! module's file (the same file: its build id is checked) is read once, and the frame is
//! written with the name of the symbol that starts its function, demangled as the agent
//! demangles: the same name the agent would have written. The file is looked for at its path,
//! then inside the process's root (`/proc/PID/root`, for a process in a container); a frame
//! whose module cannot be found stays unnamed, and `clrprof report --symbols` can name it later.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clrprof_symbols::{DEBUG_ROOT, SymbolTable, build_id_hex, demangle, read_build_id};
use clrprof_trace::{NativeFrameDef, Record};

/// The modules of one process's stream and their symbol tables.
pub(crate) struct NativeNamer {
    /// The process, for the files of its mount namespace.
    pid: u32,
    modules: HashMap<u64, Module>,
}

/// A module the stream defined.
struct Module {
    path: String,
    build_id: String,
    /// Read on the first frame that needs it (`Some(None)`: no usable file).
    table: Option<Option<SymbolTable>>,
}

impl NativeNamer {
    /// A namer for the stream of process `pid`.
    pub(crate) fn new(pid: u32) -> NativeNamer {
        NativeNamer {
            pid,
            modules: HashMap::new(),
        }
    }

    /// What to write in place of `record`: a native frame the agent left unnamed, with its
    /// name; `None` to write `record` as it came.
    pub(crate) fn named(&mut self, record: &Record) -> Option<Record> {
        match record {
            Record::NativeModuleDef(m) => {
                self.modules.insert(
                    m.id,
                    Module {
                        path: m.path.clone(),
                        build_id: m.build_id.clone(),
                        table: None,
                    },
                );
                None
            }
            Record::NativeFrameDef(f) if f.symbol.is_empty() && f.function != 0 => {
                let pid = self.pid;
                let module = self.modules.get_mut(&f.module)?;
                let table = module
                    .table
                    .get_or_insert_with(|| read_table(pid, &module.path, &module.build_id))
                    .as_ref()?;
                let (symbol, _) = table.lookup(f.function)?;
                Some(Record::NativeFrameDef(NativeFrameDef {
                    symbol: demangle(symbol),
                    ..f.clone()
                }))
            }
            _ => None,
        }
    }
}

/// The symbol table of the module mapped from `path` with GNU build id `build_id` (lowercase
/// hexadecimal, empty if it has none), from the first of its path and the same path inside
/// process `pid`'s root whose build id is the module's.
fn read_table(pid: u32, path: &str, build_id: &str) -> Option<SymbolTable> {
    if !path.starts_with('/') {
        return None; // `[vdso]` and the like: the agent names those.
    }
    let inside = PathBuf::from(format!("/proc/{pid}/root{path}"));
    [PathBuf::from(path), inside]
        .iter()
        .find(|file| same_build(file, build_id))
        .and_then(|file| SymbolTable::from_path(file, Path::new(DEBUG_ROOT)))
}

/// Whether the ELF file at `file` has GNU build id `build_id` (none, if empty).
fn same_build(file: &Path, build_id: &str) -> bool {
    match read_build_id(file) {
        Ok(id) => build_id_hex(&id.unwrap_or_default()) == build_id,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_trace::NativeModuleDef;

    /// This test's own executable: a module with symbols, and one of its functions.
    fn own_module() -> (String, String, u64, String) {
        let exe = std::env::current_exe().unwrap();
        let id = read_build_id(&exe).unwrap().unwrap_or_default();
        let table = SymbolTable::from_path(&exe, Path::new(DEBUG_ROOT)).unwrap();
        let (start, _, name) = table
            .iter()
            .find(|(_, _, name)| demangle(name).contains("own_module"))
            .expect("the test names its own function");
        let name = demangle(name);
        (exe.display().to_string(), build_id_hex(&id), start, name)
    }

    fn module(id: u64, path: &str, build_id: &str) -> Record {
        Record::NativeModuleDef(NativeModuleDef {
            id,
            path: path.into(),
            build_id: build_id.into(),
        })
    }

    fn frame(module: u64, function: u64, symbol: &str) -> Record {
        Record::NativeFrameDef(NativeFrameDef {
            id: 7,
            address: function + 3,
            library: "lib".into(),
            symbol: symbol.into(),
            module,
            function,
        })
    }

    #[test]
    fn an_unnamed_frame_gets_the_name_of_its_function() {
        let (path, build_id, start, name) = own_module();
        let mut namer = NativeNamer::new(std::process::id());
        assert_eq!(namer.named(&module(1, &path, &build_id)), None);
        assert_eq!(
            namer.named(&frame(1, start, "")),
            Some(frame(1, start, &name))
        );
        // Named already, without a function start, or of a module never defined: as it came.
        assert_eq!(namer.named(&frame(1, start, "given")), None);
        assert_eq!(namer.named(&frame(1, 0, "")), None);
        assert_eq!(namer.named(&frame(2, start, "")), None);
    }

    #[test]
    fn a_file_of_another_build_names_nothing() {
        let (path, _, start, _) = own_module();
        let mut namer = NativeNamer::new(std::process::id());
        namer.named(&module(1, &path, "0123456789abcdef"));
        assert_eq!(namer.named(&frame(1, start, "")), None);
        namer.named(&module(2, "[vdso]", ""));
        assert_eq!(namer.named(&frame(2, start, "")), None);
        namer.named(&module(3, "/nonexistent/lib.so", ""));
        assert_eq!(namer.named(&frame(3, start, "")), None);
    }
}
