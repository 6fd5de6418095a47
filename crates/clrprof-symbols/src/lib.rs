//! Names of native functions, from the symbol tables of ELF files; and, in [`managed`], the
//! source lines of managed methods, from portable PDBs and Mono's `.mdb` files.
//!
//! Two users share this crate: the clrprof agent, which names the native frames of a sample
//! from the modules mapped into the profiled process, and `clrprof report --symbols`, which
//! names afterwards the frames the agent could not name (a stripped library), from symbol
//! files the user gives, matched to the modules by GNU build id ([`SymbolFiles`]), or from a
//! symbol store in the layout of the .NET tools' symbol servers ([`store`]: the keys, and the
//! [`SymbolSource`] that `report` downloads through).
//!
//! `dladdr` knows only the symbols a library exports (`.dynsym`), so most native frames of a
//! profile would be named after their library alone: the garbage collector in libcoreclr and
//! the string functions of libc are all local symbols. Here a [`SymbolTable`] is read per
//! module, on first use, from the best source available:
//!
//! 1. the file's own `.symtab` (CoreCLR's Linux builds up to .NET 7 keep theirs);
//! 2. else a separate debug file with the same build id: `<debug root>/.build-id/ab/cdef….debug`,
//!    or the file named by `.gnu_debuglink` beside the module, in its `.debug/` folder or
//!    under the debug root (the layouts of Debian's `-dbg`/`-dbgsym` packages and of
//!    Fedora's `debuginfo`); a candidate is used only if its build id matches;
//! 3. else MiniDebugInfo: the xz-compressed ELF in `.gnu_debugdata` that Fedora and its
//!    relatives ship, whose `.symtab` holds the local functions.
//!
//! The module's `.dynsym` is always added, so a partial `.symtab` never loses an export.
//!
//! Only function symbols are kept (`STT_FUNC`, defined, non-zero address). Aliases (several
//! names at one address) keep one name: the one with a size, then the one with the fewest
//! leading underscores, then global before weak before local, then the shortest, then the
//! first in byte order (so that the choice never depends on the order of the tables). A symbol
//! of size 0 (hand-written assembly without `.size`) extends to the next symbol or the end of
//! its section. The table is one array of 16-byte entries sorted by address, and one buffer
//! holding every kept name once, in the same order; a lookup is a binary search.
//!
//! Names are demangled when looked up, not when loaded ([`demangle`]): Rust names (legacy and
//! v0) without their hash, and C++ names *without parameter lists or return types*
//! (`WKS::gc_heap::plan_phase`, not `WKS::gc_heap::plan_phase(int)`): a profile reads better
//! with one line per function, overloads are rare among the functions that show up hot, and
//! the parameter lists of template-heavy code can be hundreds of characters long. Template
//! arguments and GCC's clone suffixes (`[clone .cold]`) stay. A demangled name longer than
//! [`MAX_NAME`] bytes is cut (with `…`); a name that is not mangled is kept as it is.
//!
//! Nothing here panics on a malformed file: a section or symbol that cannot be read is
//! skipped, and a file that cannot be read at all yields no table (the agent then falls back
//! to the module's unwind information and to `dladdr`); a panic inside a parser or demangler
//! is caught and counts as "no table" or "not mangled". Memory is bounded: at most
//! [`MAX_SYMBOLS`] symbols are gathered per module (about 48 bytes each while the table is
//! built, 16 bytes plus the name once it is), and MiniDebugInfo is decompressed into at most
//! [`MAX_DEBUGDATA`] bytes.
//!
//! Everything here is plain file reading, so the crate builds on every platform (the CLI
//! reads Linux symbol files wherever it runs); only x86-64 ELF64 files give tables.
//!
//! # Crate choice
//!
//! ELF files are read with `object`, as for unwinding. C++ names are demangled by
//! `cpp_demangle` (the demangler of the Rust backtrace and crash-reporting tools: pure Rust,
//! fuzzed, with recursion limits), Rust names by `rustc-demangle` (the standard library's own).
//! MiniDebugInfo is decompressed by `lzma-rs`, a pure-Rust xz decoder: `xz2`/`liblzma` would
//! build the C library, and this format is small enough (a few hundred KiB of symbols) for a
//! pure-Rust decoder's speed.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod debug;
mod demangle;
mod files;
pub mod managed;
pub mod store;
mod table;

#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod testelf;
#[cfg(test)]
mod tests;

pub use debug::{build_id, build_id_hex, read_build_id};
pub use demangle::demangle;
pub use files::{FoundTable, SymbolFiles, SymbolFilesError};
pub use store::{StoreFileKind, StoreKey, SymbolSource, store_keys};
pub use table::{DEBUG_ROOT, MapFile, SymbolTable, TableSource};

/// Longest demangled name kept, in bytes.
pub const MAX_NAME: usize = 1024;

/// Most function symbols gathered per module (`.dynsym` and `.symtab` together): the rest are
/// ignored. Large C++ libraries have tens of thousands (libcoreclr: 17,000); a web browser's
/// main library about a million.
pub const MAX_SYMBOLS: usize = 1 << 20;

/// Largest decompressed MiniDebugInfo image read.
pub const MAX_DEBUGDATA: usize = 64 << 20;
