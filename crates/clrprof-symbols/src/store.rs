//! Symbol stores in the layout the .NET diagnostic tools use (`dotnet-symbol`, `dotnet-dump`,
//! the symbol servers they download from), and the [`SymbolSource`] that gives
//! [`SymbolFiles`](crate::SymbolFiles) files from such a store.
//!
//! A store holds each file under a key (the Simple Symbol Query Protocol's *SSQP key*); a
//! symbol server answers `GET <server>/<key>` with the file. For an ELF module of GNU build id
//! `180a…1085` (lowercase hexadecimal; an id of 16 to 19 bytes is padded with zero bytes to
//! 20, and other lengths have no key) there are two keys:
//!
//! - its debug file (what `objcopy --only-keep-debug` leaves, with the `.symtab`):
//!   `_.debug/elf-buildid-sym-180a…1085/_.debug`, the same for every module (the file name
//!   is not part of it);
//! - the module itself: `libcoreclr.so/elf-buildid-180a…1085/libcoreclr.so`, with its file
//!   name in lowercase and percent-encoded. A store holds the library as shipped, so this
//!   names more than its exports only where the shipped library was not stripped.
//!
//! The debug file's key comes first: it is the one that names a stripped library's
//! functions. A file a store gives is used only if its own build id is the module's (see
//! [`SymbolFiles`](crate::SymbolFiles)): a store may hold anything under a key.

use std::fmt;
use std::path::{Path, PathBuf};

/// Build ids of these lengths are padded with zero bytes to [`KEY_ID_LEN`] in keys.
const PADDED_ID_LENS: std::ops::RangeInclusive<usize> = 16..=19;

/// The length of the build id in a key, in bytes.
const KEY_ID_LEN: usize = 20;

/// What a [`StoreKey`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreFileKind {
    /// The module's separate debug file.
    DebugFile,
    /// The module itself.
    Module,
}

impl fmt::Display for StoreFileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreFileKind::DebugFile => "debug file",
            StoreFileKind::Module => "library",
        })
    }
}

/// The key of one file of a module in a symbol store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoreKey {
    /// What the file is.
    pub kind: StoreFileKind,
    /// The module's file name, as the trace has it (`libcoreclr.so`).
    pub module: String,
    /// The module's GNU build id (as the module has it, not padded).
    pub build_id: Vec<u8>,
    /// The key's three parts: `_.debug`, `elf-buildid-sym-<id>`, `_.debug`.
    parts: [String; 3],
}

impl StoreKey {
    /// The key, as a store's relative path and a server's URL path: `_.debug/elf-…/_.debug`.
    pub fn as_path_str(&self) -> String {
        self.parts.join("/")
    }

    /// Where the file of this key is in the store at `root`.
    pub fn path_in(&self, root: &Path) -> PathBuf {
        self.parts.iter().fold(root.to_path_buf(), |p, c| p.join(c))
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}'s {}", self.module, self.kind)
    }
}

/// The keys of the files of module `file_name` (its file name, `libcoreclr.so`) with GNU
/// build id `build_id` in a symbol store, the debug file's first. None for a build id a store
/// cannot index (shorter than 16 bytes or longer than 20); only the debug file's for a file
/// name that cannot be part of a key (empty, `.` or `..`).
pub fn store_keys(file_name: &str, build_id: &[u8]) -> Vec<StoreKey> {
    let mut id = build_id.to_vec();
    if PADDED_ID_LENS.contains(&id.len()) {
        id.resize(KEY_ID_LEN, 0);
    }
    if id.len() != KEY_ID_LEN {
        return Vec::new();
    }
    let hex = crate::build_id_hex(&id);
    let key = |kind, parts| StoreKey {
        kind,
        module: file_name.to_string(),
        build_id: build_id.to_vec(),
        parts,
    };
    let debug = "_.debug".to_string();
    let mut keys = vec![key(
        StoreFileKind::DebugFile,
        [
            debug.clone(),
            format!("elf-buildid-sym-{hex}"),
            debug.clone(),
        ],
    )];
    let name = percent_encode(&file_name.to_lowercase());
    if !name.is_empty() && name != "." && name != ".." {
        keys.push(key(
            StoreFileKind::Module,
            [name.clone(), format!("elf-buildid-{hex}"), name],
        ));
    }
    keys
}

/// `text` with every byte outside URIs' unreserved characters (letters, digits, `-._~`)
/// percent-encoded, as the .NET tools encode the file names of keys.
fn percent_encode(text: &str) -> String {
    use fmt::Write as _;
    text.bytes().fold(String::new(), |mut s, b| {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "%{b:02X}");
        }
        s
    })
}

/// Where [`SymbolFiles`](crate::SymbolFiles) gets files by [`StoreKey`] when the files and
/// directories it was given have no symbols for a module: a local cache of symbol servers,
/// for instance.
pub trait SymbolSource: fmt::Debug {
    /// The file stored under `key`, if the source has it (it may fetch it first). The file is
    /// used only if its build id is `key.build_id`.
    fn fetch(&mut self, key: &StoreKey) -> Option<PathBuf>;

    /// What the source has to tell about what it did since it was last asked (where it looked,
    /// what failed), a few lines at most, none twice.
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}
