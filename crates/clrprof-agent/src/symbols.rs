//! Names of native functions, from the symbol tables of the ELF files mapped into this process.
//!
//! `dladdr` knows only the symbols a library exports (`.dynsym`), so most native frames of a
//! profile would be named after their library alone: the garbage collector in libcoreclr and
//! the string functions of libc are all local symbols. Here a [`SymbolTable`] is read per
//! module, on first use, from the best source available:
//!
//! 1. the file's own `.symtab` (CoreCLR's Linux builds keep theirs);
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
//! leading underscores, then global before weak before local, then the shortest. A symbol of
//! size 0 (hand-written assembly without `.size`) extends to the next symbol or the end of
//! its section. The table is one array of 16-byte entries sorted by address, and one buffer
//! holding every kept name once, in the same order; a lookup is a binary search.
//!
//! Names are demangled when looked up, not when loaded: Rust names (legacy and v0) without
//! their hash, and C++ names *without parameter lists or return types*
//! (`WKS::gc_heap::plan_phase`, not `WKS::gc_heap::plan_phase(int)`): a profile reads better
//! with one line per function, overloads are rare among the functions that show up hot, and
//! the parameter lists of template-heavy code can be hundreds of characters long. Template
//! arguments and GCC's clone suffixes (`[clone .cold]`) stay. A demangled name longer than
//! [`MAX_NAME`] bytes is cut (with `…`); a name that is not mangled is kept as it is.
//!
//! Nothing here panics on a malformed file: a section or symbol that cannot be read is
//! skipped, and a file that cannot be read at all yields no table (the caller then falls back
//! to `dladdr`); a panic inside a parser or demangler is caught and counts as "no table" or
//! "not mangled". Memory is bounded: at most [`MAX_SYMBOLS`] symbols are gathered per module
//! (about 48 bytes each while the table is built, 16 bytes plus the name once it is), and
//! MiniDebugInfo is decompressed into at most [`MAX_DEBUGDATA`] bytes.
//!
//! # Crate choice
//!
//! ELF files are read with `object`, as for unwinding. C++ names are demangled by
//! `cpp_demangle` (the demangler of the Rust backtrace and crash-reporting tools: pure Rust,
//! fuzzed, with recursion limits), Rust names by `rustc-demangle` (the standard library's own).
//! MiniDebugInfo is decompressed by `lzma-rs`, a pure-Rust xz decoder: `xz2`/`liblzma` would
//! build the C library, and this format is small enough (a few hundred KiB of symbols) for a
//! pure-Rust decoder's speed.

/// A native code address, named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NativeSymbol {
    /// Path of the module containing the address, as the process maps it.
    pub library: String,
    /// The readable (demangled) name of the function containing the address.
    pub symbol: String,
    /// Distance of the address from the function's first byte.
    pub offset: usize,
}

/// Longest demangled name kept, in bytes.
pub const MAX_NAME: usize = 1024;

/// Most function symbols gathered per module (`.dynsym` and `.symtab` together): the rest are
/// ignored. Large C++ libraries have tens of thousands (libcoreclr: 17,000); a web browser's
/// main library about a million.
pub const MAX_SYMBOLS: usize = 1 << 20;

/// Largest decompressed MiniDebugInfo image read.
pub const MAX_DEBUGDATA: usize = 64 << 20;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use elf_symbols::{DEBUG_ROOT, SymbolTable, TableSource, demangle};

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod elf_symbols {
    use std::fmt::Write as _;
    use std::fs::File;
    use std::io::Write;
    use std::panic::AssertUnwindSafe;
    use std::path::{Path, PathBuf};

    use object::read::elf::{FileHeader, SectionHeader, SectionTable, Sym};
    use object::{Endianness, ReadCache, ReadRef, SectionIndex, StringTable, elf};

    use super::{MAX_DEBUGDATA, MAX_NAME, MAX_SYMBOLS};

    /// Where separate debug files are installed.
    pub const DEBUG_ROOT: &str = "/usr/lib/debug";

    type Header = elf::FileHeader64<Endianness>;

    /// Which tables a [`SymbolTable`] was built from (besides the module's `.dynsym`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TableSource {
        /// The module's own `.symtab`.
        Symtab,
        /// The `.symtab` of a separate debug file.
        DebugFile,
        /// The `.symtab` inside `.gnu_debugdata`.
        MiniDebugInfo,
        /// Only the exported symbols.
        Dynsym,
    }

    /// One function: its first address (as the ELF file numbers it), its length and where its
    /// name starts in [`SymbolTable::names`] (it ends where the next entry's name starts).
    #[derive(Debug, Clone, Copy)]
    struct Entry {
        start: u64,
        len: u32,
        name_at: u32,
    }

    /// The function symbols of one ELF module, sorted by address.
    #[derive(Debug)]
    pub struct SymbolTable {
        entries: Box<[Entry]>,
        names: Box<[u8]>,
        source: TableSource,
    }

    /// A function symbol while the table is built; `name` borrows the file's string table.
    struct Candidate<'d> {
        start: u64,
        size: u64,
        /// End of the symbol's section, for symbols of size 0 (0 if unknown).
        section_end: u64,
        name: &'d [u8],
        /// Lower is better among aliases (see [`rank`]).
        rank: u32,
    }

    impl SymbolTable {
        /// Reads the symbols of an ELF image (a module mapped from `path`, which locates its
        /// separate debug files under `debug_root`; `None` for an image read from memory).
        /// `None` if it is not an x86-64 ELF64 file or has no function symbols.
        pub fn read<'d, R: ReadRef<'d>>(
            data: R,
            path: Option<&Path>,
            debug_root: &Path,
        ) -> Option<SymbolTable> {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                SymbolTable::read_unguarded(data, path, debug_root)
            }))
            .ok()
            .flatten()
        }

        fn read_unguarded<'d, R: ReadRef<'d>>(
            data: R,
            path: Option<&Path>,
            debug_root: &Path,
        ) -> Option<SymbolTable> {
            let header = Header::parse(data).ok()?;
            let endian = header.endian().ok()?;
            if header.e_machine(endian) != elf::EM_X86_64 {
                return None;
            }
            let sections = header.sections(endian, data).ok()?;
            let mut candidates = Vec::new();
            collect(endian, data, &sections, elf::SHT_DYNSYM, &mut candidates);
            let exported = candidates.len();
            collect(endian, data, &sections, elf::SHT_SYMTAB, &mut candidates);
            if candidates.len() > exported {
                return SymbolTable::build(candidates, TableSource::Symtab);
            }
            // The debug file and the MiniDebugInfo image must outlive the candidates that
            // borrow their strings.
            let debug_file = path
                .and_then(|p| find_debug_file(endian, data, &sections, p, debug_root))
                .map(ReadCache::new);
            if let Some(cache) = &debug_file {
                collect_file(cache, elf::SHT_SYMTAB, &mut candidates);
                if candidates.len() > exported {
                    return SymbolTable::build(candidates, TableSource::DebugFile);
                }
            }
            let mini = gnu_debugdata(endian, data, &sections);
            if let Some(image) = &mini {
                collect_file(image.as_slice(), elf::SHT_SYMTAB, &mut candidates);
                if candidates.len() > exported {
                    return SymbolTable::build(candidates, TableSource::MiniDebugInfo);
                }
            }
            SymbolTable::build(candidates, TableSource::Dynsym)
        }

        /// Reads the symbols of the ELF file at `path` (see [`Self::read`]).
        pub fn from_path(path: &Path, debug_root: &Path) -> Option<SymbolTable> {
            let file = File::open(path).ok()?;
            SymbolTable::read(&ReadCache::new(file), Some(path), debug_root)
        }

        /// Sorts and deduplicates the candidates and packs them.
        fn build(mut candidates: Vec<Candidate<'_>>, source: TableSource) -> Option<SymbolTable> {
            candidates.sort_unstable_by(|a, b| a.start.cmp(&b.start).then(a.rank.cmp(&b.rank)));
            candidates.dedup_by_key(|c| c.start); // keeps the first: the best-ranked alias
            if candidates.is_empty() {
                return None;
            }
            let names_len: usize = candidates.iter().map(|c| c.name.len()).sum();
            let names_len = names_len.min(u32::MAX as usize);
            let mut names = Vec::with_capacity(names_len);
            let mut entries = Vec::with_capacity(candidates.len());
            for (i, c) in candidates.iter().enumerate() {
                if names.len() + c.name.len() > names_len {
                    break; // over 4 GiB of names: never happens, but stay in u32 offsets
                }
                let next = candidates.get(i + 1).map(|n| n.start);
                let size = if c.size > 0 {
                    c.size
                } else {
                    // Up to the next symbol, within the section.
                    let section_end = Some(c.section_end).filter(|&e| e > c.start);
                    let end = match (next, section_end) {
                        (Some(n), Some(e)) => n.min(e),
                        (Some(n), None) => n,
                        (None, Some(e)) => e,
                        (None, None) => c.start,
                    };
                    end.saturating_sub(c.start).max(1)
                };
                entries.push(Entry {
                    start: c.start,
                    len: u32::try_from(size).unwrap_or(u32::MAX),
                    name_at: names.len() as u32,
                });
                names.extend_from_slice(c.name);
            }
            Some(SymbolTable {
                entries: entries.into_boxed_slice(),
                names: names.into_boxed_slice(),
                source,
            })
        }

        /// The (mangled) name of the function containing `svma`, an address as the ELF file
        /// numbers it (a runtime address minus the load bias), and `svma`'s offset in it.
        pub fn lookup(&self, svma: u64) -> Option<(&[u8], u64)> {
            /// Functions nested in others (rare) are looked through this far back.
            const LOOK_BACK: usize = 4;
            let i = self.entries.partition_point(|e| e.start <= svma);
            (i.saturating_sub(LOOK_BACK)..i).rev().find_map(|j| {
                let e = self.entries[j];
                let offset = svma - e.start;
                (offset < u64::from(e.len)).then(|| (self.name(j), offset))
            })
        }

        /// The mangled name of entry `i`.
        fn name(&self, i: usize) -> &[u8] {
            let start = self.entries[i].name_at as usize;
            let end = self
                .entries
                .get(i + 1)
                .map_or(self.names.len(), |e| e.name_at as usize);
            self.names.get(start..end).unwrap_or_default()
        }

        /// How many functions the table holds.
        pub fn len(&self) -> usize {
            self.entries.len()
        }

        /// True if the table holds no function (never, for a table that was built).
        pub fn is_empty(&self) -> bool {
            self.entries.is_empty()
        }

        /// Which tables it was built from.
        pub fn source(&self) -> TableSource {
            self.source
        }

        /// Heap memory the table holds, in bytes.
        pub fn heap_bytes(&self) -> usize {
            std::mem::size_of_val(&*self.entries) + self.names.len()
        }

        /// Every function: its address, length and mangled name.
        pub fn iter(&self) -> impl Iterator<Item = (u64, u64, &[u8])> + '_ {
            (0..self.entries.len()).map(|i| {
                let e = self.entries[i];
                (e.start, u64::from(e.len), self.name(i))
            })
        }
    }

    /// Adds the function symbols of an ELF file's `sh_type` table to `out`.
    fn collect_file<'d: 'o, 'o, R: ReadRef<'d>>(
        data: R,
        sh_type: u32,
        out: &mut Vec<Candidate<'o>>,
    ) {
        let Ok(header) = Header::parse(data) else {
            return;
        };
        let Ok(endian) = header.endian() else {
            return;
        };
        if header.e_machine(endian) != elf::EM_X86_64 {
            return;
        }
        if let Ok(sections) = header.sections(endian, data) {
            collect(endian, data, &sections, sh_type, out);
        }
    }

    /// Adds the function symbols of the `sh_type` table (`.symtab` or `.dynsym`) to `out`.
    fn collect<'d: 'o, 'o, R: ReadRef<'d>>(
        endian: Endianness,
        data: R,
        sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
        sh_type: u32,
        out: &mut Vec<Candidate<'o>>,
    ) {
        // Both sections are read whole, in one read each: looking names up through a file
        // reader would cost a read per name.
        let Some((_, table)) = sections
            .enumerate()
            .find(|(_, s)| s.sh_type(endian) == sh_type)
        else {
            return;
        };
        let Ok(symbols) = table.data_as_array::<elf::Sym64<Endianness>, R>(endian, data) else {
            return;
        };
        let link = SectionIndex(table.sh_link(endian) as usize);
        let Ok(strings) = sections.section(link).and_then(|s| s.data(endian, data)) else {
            return;
        };
        let strings = StringTable::new(strings, 0, strings.len() as u64);
        for sym in symbols {
            if out.len() >= MAX_SYMBOLS {
                return;
            }
            let shndx = sym.st_shndx(endian);
            let start = sym.st_value(endian);
            if sym.st_type() != elf::STT_FUNC || shndx == elf::SHN_UNDEF || start == 0 {
                continue;
            }
            let Ok(name) = sym.name(endian, strings) else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            let size = sym.st_size(endian);
            let section_end = if size == 0 && shndx < elf::SHN_LORESERVE {
                sections
                    .section(SectionIndex(usize::from(shndx)))
                    .ok()
                    .and_then(|s| s.sh_addr(endian).checked_add(s.sh_size(endian)))
                    .unwrap_or(0)
            } else {
                0
            };
            out.push(Candidate {
                start,
                size,
                section_end,
                name,
                rank: rank(size, sym.st_bind(), name),
            });
        }
    }

    /// How good a name is among the aliases of one address, packed so that lower is better:
    /// a symbol with a size, then fewer leading underscores (`getpid` over `__getpid`), then
    /// global before weak before local, then the shorter name.
    fn rank(size: u64, binding: u8, name: &[u8]) -> u32 {
        let unsized_ = u32::from(size == 0);
        let underscores = name.iter().take_while(|&&b| b == b'_').count().min(15) as u32;
        let binding = match binding {
            elf::STB_GLOBAL => 0,
            elf::STB_WEAK => 1,
            _ => 2,
        };
        let len = name.len().min(0xff_ffff) as u32;
        (unsized_ << 30) | (underscores << 26) | (binding << 24) | len
    }

    /// The GNU build id of an ELF image, from its note sections.
    fn build_id<'d, R: ReadRef<'d>>(
        endian: Endianness,
        data: R,
        sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
    ) -> Option<&'d [u8]> {
        for section in sections.iter() {
            let Ok(Some(mut notes)) = section.notes(endian, data) else {
                continue;
            };
            while let Ok(Some(note)) = notes.next() {
                if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                    let id = note.desc();
                    return (!id.is_empty()).then_some(id);
                }
            }
        }
        None
    }

    /// A separate debug file for the module at `path` whose build id matches its own.
    fn find_debug_file<'d, R: ReadRef<'d>>(
        endian: Endianness,
        data: R,
        sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
        path: &Path,
        debug_root: &Path,
    ) -> Option<File> {
        let id = build_id(endian, data, sections)?;
        let hex: String = id.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
        let mut candidates = Vec::new();
        if hex.len() > 2 {
            candidates.push(
                debug_root
                    .join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..])),
            );
        }
        if let Some(link) = debuglink(endian, data, sections)
            && let Some(dir) = path.parent()
        {
            candidates.push(dir.join(&link));
            candidates.push(dir.join(".debug").join(&link));
            let relative = dir.strip_prefix("/").unwrap_or(dir);
            candidates.push(debug_root.join(relative).join(&link));
        }
        candidates
            .into_iter()
            .filter(|c| c != path)
            .filter_map(|c| File::open(c).ok())
            .find(|file| {
                let cache = ReadCache::new(file);
                let Ok(header) = Header::parse(&cache) else {
                    return false;
                };
                let Ok(endian) = header.endian() else {
                    return false;
                };
                header
                    .sections(endian, &cache)
                    .ok()
                    .and_then(|s| build_id(endian, &cache, &s))
                    == Some(id)
            })
    }

    /// The file name in `.gnu_debuglink` (a plain name, never a path).
    fn debuglink<'d, R: ReadRef<'d>>(
        endian: Endianness,
        data: R,
        sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
    ) -> Option<PathBuf> {
        let (_, section) = sections.section_by_name(endian, b".gnu_debuglink")?;
        let bytes = section.data(endian, data).ok()?;
        let name = bytes.split(|&b| b == 0).next()?;
        let name = std::str::from_utf8(name).ok()?;
        let plain = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
        plain.then(|| PathBuf::from(name))
    }

    /// Decompresses `.gnu_debugdata` (an xz-compressed ELF image), if there is one.
    fn gnu_debugdata<'d, R: ReadRef<'d>>(
        endian: Endianness,
        data: R,
        sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
    ) -> Option<Vec<u8>> {
        let (_, section) = sections.section_by_name(endian, b".gnu_debugdata")?;
        let mut compressed = section.data(endian, data).ok()?;
        let mut out = Bounded(Vec::new());
        lzma_rs::xz_decompress(&mut compressed, &mut out).ok()?;
        Some(out.0)
    }

    /// A byte sink that refuses to grow past [`MAX_DEBUGDATA`].
    struct Bounded(Vec<u8>);

    impl Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + buf.len() > MAX_DEBUGDATA {
                return Err(std::io::ErrorKind::OutOfMemory.into());
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A string that takes at most [`MAX_NAME`] bytes, then refuses more.
    struct NameBuf {
        text: String,
        cut: bool,
    }

    impl std::fmt::Write for NameBuf {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let room = MAX_NAME - self.text.len();
            if s.len() <= room {
                self.text.push_str(s);
                return Ok(());
            }
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.cut = true;
            Err(std::fmt::Error)
        }
    }

    impl NameBuf {
        fn new() -> NameBuf {
            NameBuf {
                text: String::new(),
                cut: false,
            }
        }

        /// The text written, marked when cut; `None` if writing failed for another reason.
        fn finish(mut self, result: std::fmt::Result) -> Option<String> {
            match result {
                Ok(()) => Some(self.text),
                Err(_) if self.cut => {
                    self.text.push('…');
                    Some(self.text)
                }
                Err(_) => None,
            }
        }
    }

    /// A readable name for a symbol: demangled Rust or C++ (see the module docs), or the
    /// name itself.
    pub fn demangle(mangled: &[u8]) -> String {
        let raw = String::from_utf8_lossy(mangled);
        let demangled = std::panic::catch_unwind(|| demangle_str(&raw))
            .ok()
            .flatten();
        demangled.unwrap_or_else(|| {
            let mut buf = NameBuf::new();
            let result = buf.write_str(&raw);
            buf.finish(result).unwrap_or_default()
        })
    }

    fn demangle_str(raw: &str) -> Option<String> {
        if let Ok(rust) = rustc_demangle::try_demangle(raw) {
            let mut buf = NameBuf::new();
            let result = write!(buf, "{rust:#}");
            return buf.finish(result);
        }
        if !raw.starts_with("_Z") {
            return None;
        }
        let symbol = cpp_demangle::Symbol::new(raw.as_bytes()).ok()?;
        let options = cpp_demangle::DemangleOptions::new()
            .no_params()
            .no_return_type();
        let mut buf = NameBuf::new();
        let result = symbol.structured_demangle(&mut buf, &options);
        buf.finish(result).filter(|s| !s.is_empty())
    }
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use object::elf;

    use super::*;
    use crate::recorder::sys;
    use crate::unwind::ModuleMap;

    // ---- A small ELF writer for synthetic inputs ----

    /// One section of a synthetic ELF file.
    struct Sec {
        name: &'static str,
        sh_type: u32,
        addr: u64,
        data: Vec<u8>,
        /// `sh_size` of a `SHT_NOBITS` section.
        nobits_size: u64,
        link: u32,
        entsize: u64,
    }

    impl Sec {
        fn new(name: &'static str, sh_type: u32, data: Vec<u8>) -> Sec {
            Sec {
                name,
                sh_type,
                addr: 0,
                data,
                nobits_size: 0,
                link: 0,
                entsize: 0,
            }
        }
    }

    /// A function symbol (or another `st_type`) in section 1 (`.text`).
    #[derive(Clone, Copy)]
    struct TestSym {
        name: &'static str,
        value: u64,
        size: u64,
        bind: u8,
        kind: u8,
    }

    fn func(name: &'static str, value: u64, size: u64) -> TestSym {
        TestSym {
            name,
            value,
            size,
            bind: elf::STB_GLOBAL,
            kind: elf::STT_FUNC,
        }
    }

    /// `.text` spans [TEXT, TEXT_END).
    const TEXT: u64 = 0x1000;
    const TEXT_END: u64 = 0x3000;

    /// An x86-64 ELF64 file: a null section, `.text` (no bytes), `.symtab` and `.dynsym` when
    /// given, with their string tables, then `extra`.
    fn build_elf(
        symtab: Option<&[TestSym]>,
        dynsym: Option<&[TestSym]>,
        extra: Vec<Sec>,
    ) -> Vec<u8> {
        let mut sections = vec![Sec::new("", 0, Vec::new()), {
            let mut text = Sec::new(".text", elf::SHT_NOBITS, Vec::new());
            text.addr = TEXT;
            text.nobits_size = TEXT_END - TEXT;
            text
        }];
        for (table, kind, name, strname) in [
            (symtab, elf::SHT_SYMTAB, ".symtab", ".strtab"),
            (dynsym, elf::SHT_DYNSYM, ".dynsym", ".dynstr"),
        ] {
            let Some(syms) = table else { continue };
            let mut strings = vec![0u8];
            let mut entries = vec![0u8; 24]; // the null symbol
            for s in syms {
                let at = strings.len() as u32;
                strings.extend_from_slice(s.name.as_bytes());
                strings.push(0);
                entries.extend_from_slice(&at.to_le_bytes());
                entries.push((s.bind << 4) | s.kind);
                entries.push(0);
                entries.extend_from_slice(&1u16.to_le_bytes());
                entries.extend_from_slice(&s.value.to_le_bytes());
                entries.extend_from_slice(&s.size.to_le_bytes());
            }
            let mut table = Sec::new(name, kind, entries);
            table.link = sections.len() as u32 + 1;
            table.entsize = 24;
            sections.push(table);
            sections.push(Sec::new(strname, elf::SHT_STRTAB, strings));
        }
        sections.extend(extra);
        let mut shstrtab = vec![0u8];
        let mut name_at = Vec::new();
        for s in &sections {
            name_at.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(s.name.as_bytes());
            shstrtab.push(0);
        }
        name_at.push(shstrtab.len() as u32);
        shstrtab.extend_from_slice(b".shstrtab\0");
        sections.push(Sec::new(".shstrtab", elf::SHT_STRTAB, shstrtab));

        let mut out = vec![0u8; 64];
        let mut offsets = Vec::new();
        for s in &sections {
            out.resize(out.len().next_multiple_of(8), 0);
            offsets.push(out.len() as u64);
            out.extend_from_slice(&s.data);
        }
        out.resize(out.len().next_multiple_of(8), 0);
        let shoff = out.len() as u64;
        for (i, s) in sections.iter().enumerate() {
            let size = if s.sh_type == elf::SHT_NOBITS {
                s.nobits_size
            } else {
                s.data.len() as u64
            };
            let align: u64 = if s.sh_type == elf::SHT_NOTE { 4 } else { 8 };
            out.extend_from_slice(&name_at[i].to_le_bytes());
            out.extend_from_slice(&s.sh_type.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes()); // flags
            out.extend_from_slice(&s.addr.to_le_bytes());
            out.extend_from_slice(&offsets[i].to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(&s.link.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes()); // info
            out.extend_from_slice(&align.to_le_bytes());
            out.extend_from_slice(&s.entsize.to_le_bytes());
        }
        let header = &mut out[..64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2; // 64-bit
        header[5] = 1; // little-endian
        header[6] = 1; // version
        header[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
        header[18..20].copy_from_slice(&elf::EM_X86_64.to_le_bytes());
        header[20..24].copy_from_slice(&1u32.to_le_bytes());
        header[40..48].copy_from_slice(&shoff.to_le_bytes());
        header[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        header[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        header[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        header[60..62].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        header[62..64].copy_from_slice(&(sections.len() as u16 - 1).to_le_bytes());
        out
    }

    /// A `.note.gnu.build-id` section.
    fn build_id_note(id: &[u8]) -> Sec {
        let mut data = Vec::new();
        data.extend_from_slice(&4u32.to_le_bytes());
        data.extend_from_slice(&(id.len() as u32).to_le_bytes());
        data.extend_from_slice(&elf::NT_GNU_BUILD_ID.to_le_bytes());
        data.extend_from_slice(b"GNU\0");
        data.extend_from_slice(id);
        data.resize(data.len().next_multiple_of(4), 0);
        Sec::new(".note.gnu.build-id", elf::SHT_NOTE, data)
    }

    /// A `.gnu_debuglink` section naming `file`.
    fn debuglink(file: &str) -> Sec {
        let mut data = file.as_bytes().to_vec();
        data.push(0);
        data.resize(data.len().next_multiple_of(4), 0);
        data.extend_from_slice(&0u32.to_le_bytes()); // CRC (not checked)
        Sec::new(".gnu_debuglink", elf::SHT_PROGBITS, data)
    }

    /// A fresh empty directory under the system's temporary directory.
    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "clrprof-symbols-{}-{tag}-{:x}",
            std::process::id(),
            Instant::now().elapsed().as_nanos() ^ (tag.as_ptr() as u128)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn read(bytes: &[u8]) -> Option<SymbolTable> {
        SymbolTable::read(bytes, None, Path::new("/nonexistent"))
    }

    fn name_at(table: &SymbolTable, svma: u64) -> Option<(String, u64)> {
        table
            .lookup(svma)
            .map(|(name, offset)| (String::from_utf8_lossy(name).into_owned(), offset))
    }

    // ---- Tables from synthetic files ----

    #[test]
    fn lookup_by_address_and_size() {
        let hidden = TestSym {
            bind: elf::STB_LOCAL,
            ..func("hidden_alias", 0x1200, 0x10)
        };
        let weak = TestSym {
            bind: elf::STB_WEAK,
            ..func("open", 0x1300, 0x20)
        };
        let data = TestSym {
            kind: elf::STT_OBJECT,
            ..func("a_variable", 0x1400, 0x100)
        };
        let symbols = [
            func("first", 0x1100, 0x40),
            func("__alias_first", 0x1100, 0x40),
            func("big", 0x1200, 0x10),
            hidden,
            func("__open", 0x1300, 0x20),
            weak,
            data,
            func("asm_no_size", 0x1800, 0),
            func("outer", 0x2000, 0x200),
            func("inner", 0x2010, 0x10),
            func("last_no_size", 0x2f00, 0),
            func("undefined_zero", 0, 0x10),
        ];
        let table = read(&build_elf(Some(&symbols), None, Vec::new())).expect("a table");
        assert_eq!(table.source(), TableSource::Symtab);
        // One name per address: a sized alias with fewer underscores, global before local.
        assert_eq!(table.len(), 7, "{:?}", table.iter().collect::<Vec<_>>());
        let at = |a| name_at(&table, a);
        assert_eq!(at(0x1100), Some(("first".into(), 0)));
        assert_eq!(at(0x113f), Some(("first".into(), 0x3f)));
        assert_eq!(at(0x1140), None, "past its size, before the next");
        assert_eq!(at(0x1205), Some(("big".into(), 5)));
        assert_eq!(at(0x1301), Some(("open".into(), 1)));
        assert_eq!(at(0x1400), None, "data symbols are not functions");
        // Size 0: up to the next symbol.
        assert_eq!(at(0x1fff), Some(("asm_no_size".into(), 0x7ff)));
        // Nested: the inner function, then the outer one again.
        assert_eq!(at(0x2015), Some(("inner".into(), 5)));
        assert_eq!(at(0x2020), Some(("outer".into(), 0x20)));
        // Size 0 and last: up to the end of its section.
        assert_eq!(at(0x2fff), Some(("last_no_size".into(), 0xff)));
        assert_eq!(at(TEXT_END), None);
        assert_eq!(at(0), None);
        assert_eq!(at(0x10ff), None);
        assert_eq!(at(u64::MAX), None);
        // Names are stored once each, 16 bytes per function.
        let names: usize = [
            "first",
            "big",
            "open",
            "asm_no_size",
            "outer",
            "inner",
            "last_no_size",
        ]
        .iter()
        .map(|n| n.len())
        .sum();
        assert_eq!(table.heap_bytes(), 16 * 7 + names);
    }

    #[test]
    fn dynsym_alone_and_merged_with_symtab() {
        let exported = [func("exported", 0x1100, 0x10)];
        let local = [func("local_only", 0x1200, 0x10)];
        let table = read(&build_elf(None, Some(&exported), Vec::new())).unwrap();
        assert_eq!(table.source(), TableSource::Dynsym);
        assert_eq!(name_at(&table, 0x1104), Some(("exported".into(), 4)));
        // A .symtab that lacks an export still names it.
        let table = read(&build_elf(Some(&local), Some(&exported), Vec::new())).unwrap();
        assert_eq!(table.source(), TableSource::Symtab);
        assert_eq!(name_at(&table, 0x1104), Some(("exported".into(), 4)));
        assert_eq!(name_at(&table, 0x1204), Some(("local_only".into(), 4)));
        // No function at all: no table.
        assert!(read(&build_elf(None, None, Vec::new())).is_none());
    }

    #[test]
    fn mini_debug_info() {
        let inner = build_elf(
            Some(&[func("compressed_local", 0x1200, 0x30)]),
            None,
            Vec::new(),
        );
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut inner.as_slice(), &mut xz).unwrap();
        let exported = [func("exported", 0x1100, 0x10)];
        let outer = build_elf(
            None,
            Some(&exported),
            vec![Sec::new(".gnu_debugdata", elf::SHT_PROGBITS, xz.clone())],
        );
        let table = read(&outer).unwrap();
        assert_eq!(table.source(), TableSource::MiniDebugInfo);
        assert_eq!(
            name_at(&table, 0x1210),
            Some(("compressed_local".into(), 0x10))
        );
        assert_eq!(name_at(&table, 0x1100), Some(("exported".into(), 0)));
        // Corrupt compressed data: the exports are still there.
        let mut bad = xz;
        let mid = bad.len() / 2;
        bad[mid] ^= 0xff;
        bad.truncate(bad.len() - 8);
        let outer = build_elf(
            None,
            Some(&exported),
            vec![Sec::new(".gnu_debugdata", elf::SHT_PROGBITS, bad)],
        );
        let table = read(&outer).unwrap();
        assert_eq!(table.source(), TableSource::Dynsym);
        assert_eq!(name_at(&table, 0x1210), None);
    }

    #[test]
    fn separate_debug_files() {
        let root = temp_dir("debug");
        let id = [0xab, 0xcd, 0x01, 0x23, 0x45];
        let exported = [func("exported", 0x1100, 0x10)];
        let module = root.join("lib").join("libthing.so");
        std::fs::create_dir_all(module.parent().unwrap()).unwrap();
        std::fs::write(
            &module,
            build_elf(
                None,
                Some(&exported),
                vec![build_id_note(&id), debuglink("libthing.so.dbg")],
            ),
        )
        .unwrap();
        let debug = |name| {
            build_elf(
                Some(&[func(name, 0x1200, 0x30)]),
                None,
                vec![build_id_note(&id)],
            )
        };
        let debug_root = root.join("debug");
        let table = |root: &Path| SymbolTable::from_path(&module, root).unwrap();

        // Nothing installed: the exports only.
        assert_eq!(table(&debug_root).source(), TableSource::Dynsym);

        // Beside the module, as named by .gnu_debuglink.
        let beside = root.join("lib").join(".debug").join("libthing.so.dbg");
        std::fs::create_dir_all(beside.parent().unwrap()).unwrap();
        std::fs::write(&beside, debug("from_debuglink")).unwrap();
        let t = table(&debug_root);
        assert_eq!(t.source(), TableSource::DebugFile);
        assert_eq!(name_at(&t, 0x1201), Some(("from_debuglink".into(), 1)));
        assert_eq!(name_at(&t, 0x1101), Some(("exported".into(), 1)));

        // By build id, which comes first.
        let by_id = debug_root
            .join(".build-id")
            .join("ab")
            .join("cd012345.debug");
        std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
        std::fs::write(&by_id, debug("from_build_id")).unwrap();
        assert_eq!(
            name_at(&table(&debug_root), 0x1201),
            Some(("from_build_id".into(), 1))
        );

        // A debug file of another build is ignored.
        std::fs::write(
            &by_id,
            build_elf(
                Some(&[func("wrong_build", 0x1200, 0x30)]),
                None,
                vec![build_id_note(&[1, 2, 3])],
            ),
        )
        .unwrap();
        std::fs::write(&beside, b"not an ELF file").unwrap();
        assert_eq!(table(&debug_root).source(), TableSource::Dynsym);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn garbage_never_panics() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        let inner = build_elf(Some(&[func("compressed", 0x1200, 0x30)]), None, Vec::new());
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut inner.as_slice(), &mut xz).unwrap();
        let symbols = [
            func("a", 0x1100, 0x10),
            func("b", 0x1200, 0),
            func("_ZN3WKS7gc_heap10plan_phaseEi", 0x1300, 0x100),
        ];
        let valid = build_elf(
            Some(&symbols),
            Some(&symbols[..1]),
            vec![
                build_id_note(&[1, 2, 3, 4]),
                debuglink("x.debug"),
                Sec::new(".gnu_debugdata", elf::SHT_PROGBITS, xz),
            ],
        );
        // Half of the cases damage only the compressed MiniDebugInfo image.
        let xz_at = valid
            .windows(6)
            .position(|w| w == b"\xfd7zXZ\0")
            .expect("the xz stream");
        let strategy = (
            any::<bool>(),
            proptest::collection::vec((any::<usize>(), any::<u8>()), 0..16),
            any::<usize>(),
            proptest::collection::vec(any::<u64>(), 0..8),
        );
        let config = Config {
            cases: 2000,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new(config)
            .run(&strategy, |(only_xz, flips, cut, probes)| {
                let mut bytes = valid.clone();
                let (lo, cut) = if only_xz {
                    (xz_at, valid.len())
                } else {
                    (0, cut % (valid.len() + 1))
                };
                for (at, value) in flips {
                    bytes[lo + at % (valid.len() - lo)] = value;
                }
                bytes.truncate(cut);
                if let Some(table) = read(&bytes) {
                    for svma in probes.into_iter().chain([0x1100, 0x1305, u64::MAX]) {
                        if let Some((name, _)) = table.lookup(svma) {
                            demangle(name);
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    // ---- Demangling ----

    #[test]
    fn demangles_cpp_rust_and_plain_names() {
        let d = |s: &str| demangle(s.as_bytes());
        assert_eq!(
            d("_ZN3WKS7gc_heap10plan_phaseEi"),
            "WKS::gc_heap::plan_phase"
        );
        assert_eq!(d("_ZN5space3fooEibc"), "space::foo");
        assert_eq!(
            d("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back"
        );
        assert!(
            d("_ZN3WKS7gc_heap10plan_phaseEi.cold").starts_with("WKS::gc_heap::plan_phase"),
            "{}",
            d("_ZN3WKS7gc_heap10plan_phaseEi.cold")
        );
        // Rust, legacy (without its hash) and v0.
        assert_eq!(
            d("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(d("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
        // C names, and garbage that only looks mangled, stay as they are.
        assert_eq!(
            d("__memset_avx512_unaligned_erms"),
            "__memset_avx512_unaligned_erms"
        );
        assert_eq!(d("_Z"), "_Z");
        assert_eq!(d("_ZN3fooE_not_really"), "_ZN3fooE_not_really");
        assert_eq!(demangle(b"bad\xffutf8"), "bad\u{fffd}utf8");
        // Very long names are cut.
        let long = format!("_ZN{}{}3fooEv", 2000, "x".repeat(2000));
        let out = d(&long);
        assert!(
            out.len() <= MAX_NAME + '…'.len_utf8() && out.ends_with('…'),
            "{out}"
        );
        let plain = "y".repeat(5000);
        assert!(d(&plain).len() <= MAX_NAME + '…'.len_utf8());
    }

    // ---- Real modules of this process ----

    /// A function of this test binary that nothing exports: only `.symtab` knows it.
    #[inline(never)]
    fn local_marker_function(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 7
    }

    #[test]
    fn names_libc_functions_like_dladdr() {
        let map = ModuleMap::new();
        for (addr, name) in [
            (libc::getpid as *const () as usize, "getpid"),
            (libc::qsort as *const () as usize, "qsort"),
        ] {
            let dl = sys::native_symbol(addr).expect("dladdr knows libc");
            for offset in [0, 3] {
                let ours = map.symbolize(addr + offset).expect("symbolized");
                assert!(ours.library.contains("libc"), "{ours:?}");
                assert_eq!(ours.offset, offset, "{ours:?}");
                assert!(ours.symbol.ends_with(name), "{ours:?} vs {dl:?}");
                // The same function as dladdr names (perhaps by another alias).
                assert!(
                    ours.symbol == dl.symbol || dl.symbol.ends_with(name),
                    "{ours:?} vs {dl:?}"
                );
            }
        }
    }

    #[test]
    fn names_a_local_function_of_this_binary() {
        let addr = local_marker_function as *const () as usize;
        assert_eq!(local_marker_function(1), local_marker_function(1));
        let map = ModuleMap::new();
        let table = map
            .symbol_table(addr)
            .expect("the test binary has a symbol table");
        if table.source() == TableSource::Dynsym {
            eprintln!("the test binary was stripped: no local symbols to check");
            return;
        }
        let ours = map.symbolize(addr + 1).expect("a local function");
        assert_eq!(
            ours.symbol,
            "clrprof_agent::symbols::tests::local_marker_function"
        );
        assert_eq!(ours.offset, 1);
        let dl = sys::native_symbol(addr + 1)
            .map(|s| s.symbol)
            .unwrap_or_default();
        assert!(
            !dl.contains("local_marker_function"),
            "dladdr sees exports only: {dl}"
        );
    }

    #[test]
    fn names_the_vdso() {
        let map = ModuleMap::new();
        let Some(&(start, _)) = map
            .native_ranges()
            .iter()
            .find(|&&(lo, _)| map.module_at(lo).is_some_and(|m| m.path == "[vdso]"))
        else {
            return; // no vDSO (some sandboxes)
        };
        let table = map
            .symbol_table(start)
            .expect("the vDSO exports its functions");
        assert!(
            table.iter().any(|(_, _, n)| n.ends_with(b"clock_gettime")),
            "{:?}",
            table
                .iter()
                .map(|(_, _, n)| String::from_utf8_lossy(n))
                .collect::<Vec<_>>()
        );
    }

    /// libcoreclr.so of the runtime the tests use, if it is installed.
    fn libcoreclr() -> Option<PathBuf> {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let roots = std::env::var_os("CLRPROF_DOTNET_ROOT")
            .map(PathBuf::from)
            .into_iter()
            .chain([workspace.join(".deps").join("dotnet-3.1.23")]);
        for root in roots {
            for base in [root.join("dotnetcore2").join("bin"), root.clone()] {
                let frameworks = base.join("shared").join("Microsoft.NETCore.App");
                let Ok(dirs) = std::fs::read_dir(&frameworks) else {
                    continue;
                };
                for dir in dirs.flatten() {
                    let lib = dir.path().join("libcoreclr.so");
                    if lib.is_file() {
                        return Some(lib);
                    }
                }
            }
        }
        None
    }

    #[test]
    fn names_the_garbage_collector_in_libcoreclr() {
        let Some(path) = libcoreclr() else {
            eprintln!("libcoreclr.so not installed (cargo xtask setup): skipped");
            return;
        };
        let started = Instant::now();
        let table = SymbolTable::from_path(&path, Path::new(DEBUG_ROOT)).expect("a table");
        let took = started.elapsed();
        eprintln!(
            "{}: {} functions from {:?} in {took:?}, {} KiB",
            path.display(),
            table.len(),
            table.source(),
            table.heap_bytes() / 1024
        );
        assert_eq!(table.source(), TableSource::Symtab);
        for mangled in [
            &b"_ZN3WKS7gc_heap10plan_phaseEi"[..],
            b"_ZN3WKS7gc_heap12mark_phase_1Ei",
        ] {
            let Some((start, len, _)) = table.iter().find(|&(_, _, n)| n == mangled) else {
                assert_ne!(
                    mangled, b"_ZN3WKS7gc_heap10plan_phaseEi",
                    "plan_phase is there"
                );
                continue;
            };
            let (name, offset) = table.lookup(start + len / 2).expect("inside");
            assert_eq!(name, mangled);
            assert_eq!(offset, len / 2);
        }
        let (start, len, _) = table
            .iter()
            .find(|&(_, _, n)| n == b"_ZN3WKS7gc_heap10plan_phaseEi")
            .unwrap();
        let (name, _) = table.lookup(start + len - 1).unwrap();
        assert_eq!(demangle(name), "WKS::gc_heap::plan_phase");
    }

    /// Load time and size of the symbol tables of this process's modules and of libcoreclr.
    /// Run with `cargo test --release -p clrprof-agent symbol_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn symbol_cost() {
        let map = ModuleMap::new();
        let mut seen = std::collections::HashSet::new();
        for (lo, _) in map.native_ranges() {
            let Some(module) = map.module_at(lo) else {
                continue;
            };
            if !seen.insert(module.path.to_owned()) {
                continue;
            }
            let started = Instant::now();
            let table = map.symbol_table(lo);
            let took = started.elapsed();
            match table {
                Some(t) => eprintln!(
                    "{}: {} functions from {:?} in {took:?}, {} KiB",
                    module.path,
                    t.len(),
                    t.source(),
                    t.heap_bytes() / 1024
                ),
                None => eprintln!("{}: no symbols ({took:?})", module.path),
            }
        }
        let memset = map.symbolize(libc::memset as *const () as usize);
        eprintln!("memset: {memset:?}");
        if let Some(path) = libcoreclr() {
            let started = Instant::now();
            let table = SymbolTable::from_path(&path, Path::new(DEBUG_ROOT)).unwrap();
            let took = started.elapsed();
            let started = Instant::now();
            let mut found = 0;
            let rounds = 100_000u64;
            for i in 0..rounds {
                let svma = 0xa_0000 + (i * 0x9e37) % 0x45_0000;
                found += usize::from(table.lookup(svma).is_some());
            }
            let lookup = started.elapsed() / rounds as u32;
            let started = Instant::now();
            let names: Vec<String> = table
                .iter()
                .take(2000)
                .map(|(_, _, n)| demangle(n))
                .collect();
            let per_name = started.elapsed() / names.len() as u32;
            eprintln!(
                "libcoreclr.so: {} functions in {took:?}, {} KiB ({} KiB of names); \
                 lookup {lookup:?} ({found} hits of {rounds}), demangle {per_name:?} per name",
                table.len(),
                table.heap_bytes() / 1024,
                (table.heap_bytes() - 16 * table.len()) / 1024
            );
        }
    }
}
