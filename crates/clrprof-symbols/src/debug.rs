//! What leads from a module to its symbols elsewhere: its GNU build id, separate debug files
//! (by build id or `.gnu_debuglink`), and the MiniDebugInfo image in `.gnu_debugdata`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use object::read::elf::{FileHeader, SectionHeader, SectionTable};
use object::{Endianness, ReadCache, ReadRef, elf};

use crate::MAX_DEBUGDATA;

type Header = elf::FileHeader64<Endianness>;

/// The GNU build id of an ELF64 image (from its `NT_GNU_BUILD_ID` note), if it has one.
pub fn build_id<'d, R: ReadRef<'d>>(data: R) -> Option<Vec<u8>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let header = Header::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let sections = header.sections(endian, data).ok()?;
        section_build_id(endian, data, &sections).map(<[u8]>::to_vec)
    }))
    .ok()
    .flatten()
}

/// The GNU build id of the ELF file at `path`: `Ok(None)` if it is an ELF file without one,
/// an error of kind `InvalidData` if it is not an ELF64 file.
pub fn read_build_id(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut file = File::open(path)?;
    if !is_elf(&mut file)? {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not an ELF file",
        ));
    }
    Ok(build_id(&ReadCache::new(file)))
}

/// True if the file starts with the ELF magic (the file position moves).
pub(crate) fn is_elf(file: &mut File) -> std::io::Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) => Ok(magic == elf::ELFMAG),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// A build id in lowercase hexadecimal, as debug file paths and the trace spell it.
pub fn build_id_hex(id: &[u8]) -> String {
    use std::fmt::Write as _;
    id.iter()
        .fold(String::with_capacity(2 * id.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// `<root>/.build-id/ab/cdef….debug`: where a debug file of build id `abcdef…` is installed
/// under a debug root (`None` for an id too short to split).
pub(crate) fn build_id_path(root: &Path, id: &[u8]) -> Option<PathBuf> {
    let hex = build_id_hex(id);
    (hex.len() > 2).then(|| {
        root.join(".build-id")
            .join(&hex[..2])
            .join(format!("{}.debug", &hex[2..]))
    })
}

/// The GNU build id of an ELF image, from its note sections.
pub(crate) fn section_build_id<'d, R: ReadRef<'d>>(
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
pub(crate) fn find_debug_file<'d, R: ReadRef<'d>>(
    endian: Endianness,
    data: R,
    sections: &SectionTable<'d, elf::FileHeader64<Endianness>, R>,
    path: &Path,
    debug_root: &Path,
) -> Option<File> {
    let id = section_build_id(endian, data, sections)?;
    let mut candidates: Vec<PathBuf> = build_id_path(debug_root, id).into_iter().collect();
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
                .and_then(|s| section_build_id(endian, &cache, &s))
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
pub(crate) fn gnu_debugdata<'d, R: ReadRef<'d>>(
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
