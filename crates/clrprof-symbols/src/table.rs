//! [`SymbolTable`]: the function symbols of one ELF module, sorted by address, from the best
//! source available (see the crate docs).

use std::borrow::Cow;
use std::fs::File;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use object::read::elf::{FileHeader, Rela, SectionHeader, SectionTable, Sym};
use object::{Endianness, ReadCache, ReadRef, SectionIndex, StringTable, elf};

use crate::MAX_SYMBOLS;
use crate::debug::{find_debug_file, gnu_debugdata};

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

/// Maps a file into memory, read-only; `None` where it cannot (or will not: the file is then
/// read through a cache).
pub type MapFile<'a> = &'a dyn Fn(&File) -> Option<Box<dyn Deref<Target = [u8]>>>;

/// A separate debug file, mapped or read.
enum DebugFile {
    Mapped(Box<dyn Deref<Target = [u8]>>),
    Read(ReadCache<File>),
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
    name: Cow<'d, [u8]>,
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
        SymbolTable::read_mapping(data, path, debug_root, &|_| None)
    }

    /// Reads the symbols as [`Self::read`] does, a separate debug file through `map` where it
    /// maps it into memory (its tables are then searched where they lie instead of copied).
    pub fn read_mapping<'d, R: ReadRef<'d>>(
        data: R,
        path: Option<&Path>,
        debug_root: &Path,
        map: MapFile<'_>,
    ) -> Option<SymbolTable> {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            SymbolTable::read_unguarded(data, path, debug_root, map)
        }))
        .ok()
        .flatten()
    }

    fn read_unguarded<'d, R: ReadRef<'d>>(
        data: R,
        path: Option<&Path>,
        debug_root: &Path,
        map: MapFile<'_>,
    ) -> Option<SymbolTable> {
        let header = Header::parse(data).ok()?;
        let endian = header.endian().ok()?;
        if header.e_machine(endian) != elf::EM_X86_64 {
            return None;
        }
        let sections = header.sections(endian, data).ok()?;
        // The stubs of the procedure linkage table are named in every case: no table holds
        // them.
        let stubs = plt_stubs(endian, data, &sections);
        let build = |candidates: Vec<Candidate<'_>>, source| {
            SymbolTable::build(with_stubs(candidates, stubs), source)
        };
        let mut candidates = Vec::new();
        collect(endian, data, &sections, elf::SHT_DYNSYM, &mut candidates);
        let exported = candidates.len();
        collect(endian, data, &sections, elf::SHT_SYMTAB, &mut candidates);
        if candidates.len() > exported {
            return build(candidates, TableSource::Symtab);
        }
        // The debug file and the MiniDebugInfo image must outlive the candidates that
        // borrow their strings.
        let debug_file = path
            .and_then(|p| find_debug_file(endian, data, &sections, p, debug_root))
            .map(|file| match map(&file) {
                Some(mapped) => DebugFile::Mapped(mapped),
                None => DebugFile::Read(ReadCache::new(file)),
            });
        if let Some(debug_file) = &debug_file {
            match debug_file {
                DebugFile::Mapped(bytes) => {
                    collect_file(&bytes[..], elf::SHT_SYMTAB, &mut candidates)
                }
                DebugFile::Read(cache) => collect_file(cache, elf::SHT_SYMTAB, &mut candidates),
            }
            if candidates.len() > exported {
                return build(candidates, TableSource::DebugFile);
            }
        }
        let mini = gnu_debugdata(endian, data, &sections);
        if let Some(image) = &mini {
            collect_file(image.as_slice(), elf::SHT_SYMTAB, &mut candidates);
            if candidates.len() > exported {
                return build(candidates, TableSource::MiniDebugInfo);
            }
        }
        build(candidates, TableSource::Dynsym)
    }

    /// Reads the symbols of the ELF file at `path` (see [`Self::read`]).
    pub fn from_path(path: &Path, debug_root: &Path) -> Option<SymbolTable> {
        let file = File::open(path).ok()?;
        SymbolTable::read(&ReadCache::new(file), Some(path), debug_root)
    }

    /// Sorts and deduplicates the candidates and packs them.
    fn build(candidates: Vec<Candidate<'_>>, source: TableSource) -> Option<SymbolTable> {
        // Sorted as packed integer keys (address, rank, index) rather than by a comparison
        // that looks at the candidates: a module's `.dynsym` and `.symtab` list most functions
        // twice, and comparing their names at every step of the sort was half of a table's
        // build. Names are compared afterwards, among the best-ranked aliases of one address.
        let mut order: Vec<u128> = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (u128::from(c.start) << 64) | (u128::from(c.rank) << 32) | i as u128)
            .collect();
        order.sort_unstable();
        let start_of = |k: u128| (k >> 64) as u64;
        let rank_of = |k: u128| (k >> 32) as u32;
        let candidate_of = |k: u128| &candidates[k as u32 as usize];
        let mut best: Vec<&Candidate<'_>> = Vec::with_capacity(order.len());
        for same_start in order.chunk_by(|a, b| start_of(*a) == start_of(*b)) {
            // The best rank comes first; among its aliases, the least name.
            let rank = rank_of(same_start[0]);
            let chosen = same_start
                .iter()
                .take_while(|k| rank_of(**k) == rank)
                .map(|k| candidate_of(*k))
                .min_by(|a, b| a.name.cmp(&b.name));
            best.extend(chosen);
        }
        let candidates = best;
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
            names.extend_from_slice(&c.name);
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
fn collect_file<'d: 'o, 'o, R: ReadRef<'d>>(data: R, sh_type: u32, out: &mut Vec<Candidate<'o>>) {
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
            name: Cow::Borrowed(name),
            rank: rank(size, sym.st_bind(), name),
        });
    }
}

/// Adds one `name@plt` function per stub of the procedure linkage table (`.plt`, and `.plt.sec`
/// where the linker splits it for indirect-branch tracking), as perf and gdb name them: the
/// stub a call to another library goes through, named after the function it jumps to. The
/// linker writes no symbol and no unwind information for them, so a sample in a stub was a
/// frame without a name or a function start. Each stub jumps through a slot of the global
/// offset table (`jmp *slot(%rip)`, after an `endbr64` and a `bnd` prefix where present); the
/// `.rela.plt` relocation of that slot names the function.
fn plt_stubs<'d, R: ReadRef<'d>>(
    endian: Endianness,
    data: R,
    sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
) -> Vec<Candidate<'static>> {
    const STUB: u64 = 16;
    let mut out = Vec::new();
    let Some((_, rela)) = sections.section_by_name(endian, b".rela.plt") else {
        return out;
    };
    let Ok(relocations) = rela.data_as_array::<elf::Rela64<Endianness>, R>(endian, data) else {
        return out;
    };
    let Ok(dynsym) = sections.section(SectionIndex(rela.sh_link(endian) as usize)) else {
        return out;
    };
    let Ok(symbols) = dynsym.data_as_array::<elf::Sym64<Endianness>, R>(endian, data) else {
        return out;
    };
    let Ok(strings) = sections
        .section(SectionIndex(dynsym.sh_link(endian) as usize))
        .and_then(|s| s.data(endian, data))
    else {
        return out;
    };
    let strings = StringTable::new(strings, 0, strings.len() as u64);
    // The function each slot of the table is for, by the slot's address.
    let slots: std::collections::HashMap<u64, &[u8]> = relocations
        .iter()
        .filter_map(|r| {
            let symbol = symbols.get(r.r_sym(endian, false) as usize)?;
            let name = symbol.name(endian, strings).ok()?;
            (!name.is_empty()).then_some((r.r_offset(endian), name))
        })
        .collect();
    for name in [&b".plt"[..], b".plt.sec"] {
        let Some((_, section)) = sections.section_by_name(endian, name) else {
            continue;
        };
        let Ok(code) = section.data(endian, data) else {
            continue;
        };
        let start = section.sh_addr(endian);
        for (i, stub) in code.chunks_exact(STUB as usize).enumerate() {
            if out.len() >= MAX_SYMBOLS {
                return out;
            }
            let address = start + i as u64 * STUB;
            let Some(slot) = jump_slot(stub, address) else {
                continue; // the table's header (a jump to the resolver), or padding
            };
            let Some(target) = slots.get(&slot) else {
                continue;
            };
            let mut name = target.to_vec();
            name.extend_from_slice(b"@plt");
            let rank = rank(STUB, elf::STB_LOCAL, &name);
            out.push(Candidate {
                start: address,
                size: STUB,
                section_end: 0,
                name: Cow::Owned(name),
                rank,
            });
        }
    }
    out
}

/// `candidates` with the PLT's stubs.
fn with_stubs<'o>(
    mut candidates: Vec<Candidate<'o>>,
    stubs: Vec<Candidate<'static>>,
) -> Vec<Candidate<'o>> {
    candidates.extend(stubs.into_iter().map(|s| Candidate {
        start: s.start,
        size: s.size,
        section_end: s.section_end,
        name: s.name,
        rank: s.rank,
    }));
    candidates
}

/// The address of the global offset table slot a PLT stub at `address` jumps through
/// (`[endbr64] [bnd] jmp *disp32(%rip)` at the stub's start), if it is such a stub.
fn jump_slot(stub: &[u8], address: u64) -> Option<u64> {
    let mut at = 0;
    if stub.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
        at = 4; // endbr64
    }
    if stub.get(at) == Some(&0xf2) {
        at += 1; // bnd
    }
    if stub.get(at..at + 2) != Some(&[0xff, 0x25]) {
        return None;
    }
    let disp = i32::from_le_bytes(stub.get(at + 2..at + 6)?.try_into().ok()?);
    let next = address + at as u64 + 6;
    Some(next.wrapping_add_signed(i64::from(disp)))
}

/// How good a name is among the aliases of one address, packed so that lower is better:
/// a symbol with a size, then fewer leading underscores (`getpid` over `__getpid`), then
/// global before weak before local, then the longer name, as `perf` chooses among aliases
/// (`__memmove_avx512_unaligned_erms` over `__memcpy_avx512_unaligned_erms`, the same code:
/// a profile names what `perf` names).
fn rank(size: u64, binding: u8, name: &[u8]) -> u32 {
    let unsized_ = u32::from(size == 0);
    let underscores = name.iter().take_while(|&&b| b == b'_').count().min(15) as u32;
    let binding = match binding {
        elf::STB_GLOBAL => 0,
        elf::STB_WEAK => 1,
        _ => 2,
    };
    let shorter = 0xff_ffff - name.len().min(0xff_ffff) as u32;
    (unsized_ << 30) | (underscores << 26) | (binding << 24) | shorter
}
