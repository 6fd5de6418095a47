//! A small ELF writer for synthetic inputs of the tests.

use std::path::{Path, PathBuf};
use std::time::Instant;

use object::elf;

use crate::SymbolTable;
// ---- A small ELF writer for synthetic inputs ----

/// One section of a synthetic ELF file.
pub(crate) struct Sec {
    pub(crate) name: &'static str,
    pub(crate) sh_type: u32,
    pub(crate) addr: u64,
    pub(crate) data: Vec<u8>,
    /// `sh_size` of a `SHT_NOBITS` section.
    pub(crate) nobits_size: u64,
    pub(crate) link: u32,
    pub(crate) entsize: u64,
}

impl Sec {
    pub(crate) fn new(name: &'static str, sh_type: u32, data: Vec<u8>) -> Sec {
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
pub(crate) struct TestSym {
    pub(crate) name: &'static str,
    pub(crate) value: u64,
    pub(crate) size: u64,
    pub(crate) bind: u8,
    pub(crate) kind: u8,
}

pub(crate) fn func(name: &'static str, value: u64, size: u64) -> TestSym {
    TestSym {
        name,
        value,
        size,
        bind: elf::STB_GLOBAL,
        kind: elf::STT_FUNC,
    }
}

/// `.text` spans [TEXT, TEXT_END).
pub(crate) const TEXT: u64 = 0x1000;
pub(crate) const TEXT_END: u64 = 0x3000;

/// An x86-64 ELF64 file: a null section, `.text` (no bytes), `.symtab` and `.dynsym` when
/// given, with their string tables, then `extra`.
pub(crate) fn build_elf(
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
pub(crate) fn build_id_note(id: &[u8]) -> Sec {
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
pub(crate) fn debuglink(file: &str) -> Sec {
    let mut data = file.as_bytes().to_vec();
    data.push(0);
    data.resize(data.len().next_multiple_of(4), 0);
    data.extend_from_slice(&0u32.to_le_bytes()); // CRC (not checked)
    Sec::new(".gnu_debuglink", elf::SHT_PROGBITS, data)
}

/// A fresh empty directory under the system's temporary directory.
pub(crate) fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "clrprof-symbols-{}-{tag}-{:x}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() ^ (tag.as_ptr() as u128)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) fn read(bytes: &[u8]) -> Option<SymbolTable> {
    SymbolTable::read(bytes, None, Path::new("/nonexistent"))
}

pub(crate) fn name_at(table: &SymbolTable, svma: u64) -> Option<(String, u64)> {
    table
        .lookup(svma)
        .map(|(name, offset)| (String::from_utf8_lossy(name).into_owned(), offset))
}
