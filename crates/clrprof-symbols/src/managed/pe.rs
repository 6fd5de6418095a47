//! The parts of a PE image that a reader of .NET assemblies needs: the section table, to turn
//! RVAs into file offsets, where the CLI header is (ECMA-335 II.25) and the debug directory.
//! The headers are read by the `object` crate's PE reader.

use object::LittleEndian as LE;
use object::pe::{self, ImageDebugDirectory};
use object::read::ReadRef;
use object::read::pe::{ImageNtHeaders, optional_header_magic};

/// The data directory of the CLI header.
const CLI_HEADER: usize = pe::IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR;
/// The data directory of the debug directory.
const DEBUG: usize = pe::IMAGE_DIRECTORY_ENTRY_DEBUG;
/// Most debug directory entries read.
const MAX_DEBUG_ENTRIES: usize = 64;

/// A PE image's sections and CLI header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeImage {
    /// `(virtual address, size, file offset)` of each section; the size is the larger of the
    /// virtual and the raw size.
    sections: Vec<(u32, u32, u32)>,
    /// RVA of the CLI header (0 for an image without one).
    cli_rva: u32,
    /// RVA and size of the debug directory (0 for an image without one).
    debug: (u32, u32),
}

/// An entry of a PE image's debug directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugEntry {
    /// Its type: 2 CodeView (where the PDB is), 17 an embedded portable PDB, ...
    pub kind: u32,
    /// Where its data is in the file, and its size.
    pub file_offset: usize,
    /// See `file_offset`.
    pub size: usize,
}

impl PeImage {
    /// Reads the headers; `None` if `b` is not a (whole enough) PE image.
    pub fn parse(b: &[u8]) -> Option<PeImage> {
        match optional_header_magic(b).ok()? {
            pe::IMAGE_NT_OPTIONAL_HDR32_MAGIC => Self::parse_as::<pe::ImageNtHeaders32>(b),
            pe::IMAGE_NT_OPTIONAL_HDR64_MAGIC => Self::parse_as::<pe::ImageNtHeaders64>(b),
            _ => None,
        }
    }

    fn parse_as<Pe: ImageNtHeaders>(b: &[u8]) -> Option<PeImage> {
        let dos = pe::ImageDosHeader::parse(b).ok()?;
        let mut offset = u64::from(dos.nt_headers_offset());
        let (nt, directories) = Pe::parse(b, &mut offset).ok()?;
        let directory = |index: usize| {
            directories
                .get(index)
                .map_or((0, 0), |d| (d.virtual_address.get(LE), d.size.get(LE)))
        };
        let sections = nt
            .sections(b, offset)
            .ok()?
            .iter()
            .map(|s| {
                let size = s.virtual_size.get(LE).max(s.size_of_raw_data.get(LE));
                (
                    s.virtual_address.get(LE),
                    size,
                    s.pointer_to_raw_data.get(LE),
                )
            })
            .collect();
        Some(PeImage {
            sections,
            cli_rva: directory(CLI_HEADER).0,
            debug: directory(DEBUG),
        })
    }

    /// The file offset of an RVA, if a section holds it.
    pub fn offset(&self, rva: u32) -> Option<usize> {
        self.sections
            .iter()
            .find(|&&(va, size, _)| rva >= va && rva - va < size)
            .map(|&(va, _, raw)| (rva - va) as usize + raw as usize)
    }

    /// The entries of the debug directory of the image `b` (empty if it has none).
    pub fn debug_entries(&self, b: &[u8]) -> Vec<DebugEntry> {
        let (rva, size) = self.debug;
        let Some(start) = (rva != 0).then(|| self.offset(rva)).flatten() else {
            return Vec::new();
        };
        let entry_size = size_of::<ImageDebugDirectory>();
        (0..(size as usize / entry_size).min(MAX_DEBUG_ENTRIES))
            .filter_map(|i| {
                let at = start.checked_add(i * entry_size)?;
                let e = b.read_at::<ImageDebugDirectory>(at as u64).ok()?;
                Some(DebugEntry {
                    kind: e.typ.get(LE),
                    size: e.size_of_data.get(LE) as usize,
                    file_offset: e.pointer_to_raw_data.get(LE) as usize,
                })
            })
            .collect()
    }

    /// The file offset of the CLI header, if the image has one.
    pub fn cli_header(&self) -> Option<usize> {
        if self.cli_rva == 0 {
            return None;
        }
        self.offset(self.cli_rva)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
        b[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// A PE32+ image (`magic` 0x20b, or PE32 with 0x10b) with two sections: `.text` at RVA
    /// 0x2000 (file offset 0x400, 0x200 raw bytes, 0x300 virtual) holding the CLI header at
    /// RVA 0x2008 and a debug directory of two entries at RVA 0x2100, and `.data` at RVA
    /// 0x4000 (file offset 0x600).
    fn image(magic: u16) -> Vec<u8> {
        let mut b = vec![0u8; 0x800];
        put(&mut b, 0, b"MZ");
        put(&mut b, 0x3c, &0x80u32.to_le_bytes());
        put(&mut b, 0x80, b"PE\0\0");
        let coff = 0x84;
        put(&mut b, coff + 2, &2u16.to_le_bytes());
        let (optional_size, directories) = if magic == 0x20b {
            (240u16, 112)
        } else {
            (224, 96)
        };
        put(&mut b, coff + 16, &optional_size.to_le_bytes());
        let optional = coff + 20;
        put(&mut b, optional, &magic.to_le_bytes());
        put(&mut b, optional + directories - 4, &16u32.to_le_bytes());
        let dir = optional + directories;
        put(&mut b, dir + 6 * 8, &0x2100u32.to_le_bytes());
        put(&mut b, dir + 6 * 8 + 4, &56u32.to_le_bytes());
        put(&mut b, dir + 14 * 8, &0x2008u32.to_le_bytes());
        put(&mut b, dir + 14 * 8 + 4, &72u32.to_le_bytes());
        let table = optional + usize::from(optional_size);
        for (i, (va, vsize, raw, raw_size)) in [
            (0x2000u32, 0x300u32, 0x400u32, 0x200u32),
            (0x4000, 0x10, 0x600, 0x200),
        ]
        .into_iter()
        .enumerate()
        {
            let s = table + i * 40;
            put(&mut b, s + 8, &vsize.to_le_bytes());
            put(&mut b, s + 12, &va.to_le_bytes());
            put(&mut b, s + 16, &raw_size.to_le_bytes());
            put(&mut b, s + 20, &raw.to_le_bytes());
        }
        // Debug entries at file offset 0x500: CodeView, then an embedded portable PDB.
        for (i, (kind, size, offset)) in [(2u32, 0x40u32, 0x700u32), (17, 0x80, 0x740)]
            .into_iter()
            .enumerate()
        {
            let e = 0x500 + i * 28;
            put(&mut b, e + 12, &kind.to_le_bytes());
            put(&mut b, e + 16, &size.to_le_bytes());
            put(&mut b, e + 24, &offset.to_le_bytes());
        }
        b
    }

    #[test]
    fn sections_cli_header_and_debug_entries() {
        for magic in [0x10b, 0x20b] {
            let b = image(magic);
            let pe = PeImage::parse(&b).unwrap();
            assert_eq!(pe.cli_header(), Some(0x408), "{magic:#x}");
            assert_eq!(pe.offset(0x2000), Some(0x400));
            // The larger of the virtual and the raw size counts.
            assert_eq!(pe.offset(0x22ff), Some(0x6ff));
            assert_eq!(pe.offset(0x2300), None);
            assert_eq!(pe.offset(0x41ff), Some(0x7ff));
            assert_eq!(pe.offset(0x1fff), None);
            assert_eq!(
                pe.debug_entries(&b),
                [
                    DebugEntry {
                        kind: 2,
                        file_offset: 0x700,
                        size: 0x40
                    },
                    DebugEntry {
                        kind: 17,
                        file_offset: 0x740,
                        size: 0x80
                    }
                ]
            );
            // An entry past the end of the file is left out.
            assert_eq!(pe.debug_entries(&b[..0x520]), pe.debug_entries(&b)[..1]);
        }
    }

    #[test]
    fn what_is_not_a_pe_image() {
        assert_eq!(PeImage::parse(b"hello"), None);
        assert_eq!(PeImage::parse(&[]), None);
        let mut b = image(0x20b);
        for len in [0, 0x40, 0x84, 0x100, 0x188] {
            assert_eq!(PeImage::parse(&b[..len]), None, "{len}");
        }
        put(&mut b, 0x98, &0x107u16.to_le_bytes());
        assert_eq!(PeImage::parse(&b), None, "an unknown optional header magic");
        put(&mut b, 0x80, b"PE\0\x01");
        assert_eq!(PeImage::parse(&b), None);
    }
}
