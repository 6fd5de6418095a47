//! Symbol files the user gives (`clrprof report --symbols PATH`), found by GNU build id.
//!
//! A path is a file (a separate debug file, or an unstripped copy of a library) or a directory,
//! searched recursively: a debug root in the `.build-id/ab/cdef….debug` layout, a `.build-id`
//! directory itself, or any tree holding such files (a symbols package unpacked). A file is
//! used for a module only if its build id is the module's: a file of another build would give
//! names of other functions. Directories are looked into only when a module's file is not
//! among the files given directly, by its build-id path first, then by reading the build id of
//! every ELF file under them (once, on the first module not found otherwise). Last, where
//! none of them has more than the module's exports, a [`SymbolSource`] (a symbol server's
//! local cache, [`crate::store`]) may give files by the module's keys in a symbol store.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use object::ReadCache;

use crate::debug::{build_id_path, is_elf, read_build_id};
use crate::store::{SymbolSource, store_keys};
use crate::{DEBUG_ROOT, SymbolTable, TableSource, build_id};

/// Why a `--symbols` path cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolFilesError {
    /// The path does not exist or cannot be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The path given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file that is not an ELF file (nor a directory).
    #[error(
        "{}: not an ELF file (give a debug file, an unstripped copy of the library, or a \
         directory of them)",
        path.display()
    )]
    NotElf {
        /// The path given.
        path: PathBuf,
    },
    /// An ELF file without a GNU build id: it cannot be matched to a module.
    #[error(
        "{}: has no GNU build id, so it cannot be matched to a module of the trace",
        path.display()
    )]
    NoBuildId {
        /// The path given.
        path: PathBuf,
    },
}

/// A symbol file found for a build id, with its table.
#[derive(Debug)]
pub struct FoundTable {
    /// The file.
    pub path: PathBuf,
    /// Its function symbols.
    pub table: SymbolTable,
}

/// The symbol files given by the user, and the tables read from them, by build id.
#[derive(Debug, Default)]
pub struct SymbolFiles {
    /// Files given directly, with their build ids.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// Directories given.
    dirs: Vec<PathBuf>,
    /// Every ELF file under `dirs` by build id (the first one found), once walked.
    walked: Option<HashMap<Vec<u8>, Vec<PathBuf>>>,
    /// What [`Self::table`] found, by build id.
    tables: HashMap<Vec<u8>, Option<FoundTable>>,
    /// Where files come from when none of the paths given has a module's symbols.
    source: Option<Box<dyn SymbolSource>>,
}

impl SymbolFiles {
    /// Checks the paths: each must be a directory or an ELF file with a GNU build id.
    pub fn open(paths: &[PathBuf]) -> Result<SymbolFiles, SymbolFilesError> {
        let mut files = SymbolFiles::default();
        for path in paths {
            let meta = std::fs::metadata(path).map_err(|source| SymbolFilesError::Unreadable {
                path: path.clone(),
                source,
            })?;
            if meta.is_dir() {
                std::fs::read_dir(path).map_err(|source| SymbolFilesError::Unreadable {
                    path: path.clone(),
                    source,
                })?;
                files.dirs.push(path.clone());
                continue;
            }
            if !meta.is_file() {
                return Err(SymbolFilesError::NotElf { path: path.clone() });
            }
            match read_build_id(path) {
                Ok(Some(id)) => files.files.push((path.clone(), id)),
                Ok(None) => return Err(SymbolFilesError::NoBuildId { path: path.clone() }),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(SymbolFilesError::NotElf { path: path.clone() });
                }
                Err(source) => {
                    return Err(SymbolFilesError::Unreadable {
                        path: path.clone(),
                        source,
                    });
                }
            }
        }
        Ok(files)
    }

    /// Asks `source` for the files of a module that the paths given have no symbols for
    /// (beyond its exports).
    pub fn set_source(&mut self, source: Box<dyn SymbolSource>) {
        self.source = Some(source);
    }

    /// The source set with [`Self::set_source`].
    pub fn source_mut(&mut self) -> Option<&mut (dyn SymbolSource + 'static)> {
        self.source.as_deref_mut()
    }

    /// The files given directly (not found in a directory), with their build ids.
    pub fn given_files(&self) -> impl Iterator<Item = (&Path, &[u8])> + '_ {
        self.files
            .iter()
            .map(|(p, id)| (p.as_path(), id.as_slice()))
    }

    /// The symbol table of the module with GNU build id `id` and file name `file_name`
    /// (`libcoreclr.so`, for the keys of a [`SymbolSource`]), from the first file of that build
    /// id that has function symbols beyond its exports (else the first with any); read once,
    /// then kept. `None` if no file matches or none has a table.
    pub fn table(&mut self, id: &[u8], file_name: &str) -> Option<&FoundTable> {
        if !self.tables.contains_key(id) {
            let mut found = self.find(id);
            if found
                .as_ref()
                .is_none_or(|b| b.table.source() == TableSource::Dynsym)
                && let Some(source) = self.source.as_deref_mut()
                && let Some(better) = from_source(source, id, file_name)
                && (found.is_none() || better.table.source() != TableSource::Dynsym)
            {
                found = Some(better);
            }
            self.tables.insert(id.to_vec(), found);
        }
        self.tables.get(id).and_then(Option::as_ref)
    }

    fn find(&mut self, id: &[u8]) -> Option<FoundTable> {
        if id.is_empty() {
            return None;
        }
        let mut candidates: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|(_, fid)| fid == id)
            .map(|(p, _)| p.clone())
            .collect();
        for dir in &self.dirs {
            // A debug root, or its `.build-id` directory itself.
            let by_id = build_id_path(dir, id);
            let in_build_id_dir = build_id_path(Path::new(""), id)
                .and_then(|p| p.strip_prefix(".build-id").ok().map(|p| dir.join(p)));
            for path in by_id.into_iter().chain(in_build_id_dir) {
                if path.is_file() && read_build_id(&path).ok().flatten().as_deref() == Some(id) {
                    candidates.push(path);
                }
            }
        }
        let mut best = best_table(&candidates);
        if best
            .as_ref()
            .is_none_or(|b| b.table.source() == TableSource::Dynsym)
            && !self.dirs.is_empty()
        {
            let walked = self.walked.get_or_insert_with(|| walk(&self.dirs));
            let more: Vec<PathBuf> = walked
                .get(id)
                .into_iter()
                .flatten()
                .filter(|p| !candidates.contains(p))
                .cloned()
                .collect();
            if let Some(found) = best_table(&more)
                && best.as_ref().is_none_or(|b| {
                    b.table.source() == TableSource::Dynsym
                        && found.table.source() != TableSource::Dynsym
                })
            {
                best = Some(found);
            }
        }
        best
    }
}

/// The table of the first file `source` gives by the keys of the module (the debug file's
/// first) that has the module's build id and more than exported symbols, else of the first
/// with any. Stops at the first with more.
fn from_source(source: &mut dyn SymbolSource, id: &[u8], file_name: &str) -> Option<FoundTable> {
    let mut exports_only = None;
    for key in store_keys(file_name, id) {
        let Some(path) = source.fetch(&key) else {
            continue;
        };
        if read_build_id(&path).ok().flatten().as_deref() != Some(id) {
            continue;
        }
        let Some(found) = best_table(&[path]) else {
            continue;
        };
        if found.table.source() != TableSource::Dynsym {
            return Some(found);
        }
        exports_only.get_or_insert(found);
    }
    exports_only
}

/// The table of the first file with more than exported symbols, else of the first with any.
fn best_table(paths: &[PathBuf]) -> Option<FoundTable> {
    let mut exports_only = None;
    for path in paths {
        let Ok(file) = File::open(path) else {
            continue;
        };
        // The file is read as given: a debug file or an unstripped library has its own
        // `.symtab`, and a file found by build id needs no further debug file.
        let Some(table) = SymbolTable::read(&ReadCache::new(file), None, Path::new(DEBUG_ROOT))
        else {
            continue;
        };
        let found = FoundTable {
            path: path.clone(),
            table,
        };
        if found.table.source() != TableSource::Dynsym {
            return Some(found);
        }
        exports_only.get_or_insert(found);
    }
    exports_only
}

/// The ELF files under `dirs` (recursively, following symbolic links, each directory once),
/// by build id.
fn walk(dirs: &[PathBuf]) -> HashMap<Vec<u8>, Vec<PathBuf>> {
    let mut by_id: HashMap<Vec<u8>, Vec<PathBuf>> = HashMap::new();
    let mut seen_dirs = HashSet::new();
    let mut seen_files = HashSet::new();
    let mut pending: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = pending.pop() {
        let Ok(real) = std::fs::canonicalize(&dir) else {
            continue;
        };
        if !seen_dirs.insert(real) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                pending.push(path);
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if !seen_files.insert(real) {
                continue;
            }
            let Ok(mut file) = File::open(&path) else {
                continue;
            };
            if !is_elf(&mut file).unwrap_or(false) {
                continue;
            }
            if let Some(id) = build_id(&ReadCache::new(file)) {
                by_id.entry(id).or_default().push(path);
            }
        }
    }
    by_id
}
