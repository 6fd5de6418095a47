//! The parts of a PE image that a reader of .NET assemblies needs: the section table, to turn
//! RVAs into file offsets, and where the CLI header is (ECMA-335 II.25).

/// A little-endian `u16` at `at`, if the bytes are there.
pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// A little-endian `u32` at `at`, if the bytes are there.
pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

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
        if b.get(..2)? != b"MZ" {
            return None;
        }
        let pe = u32_at(b, 0x3c)? as usize;
        if b.get(pe..pe.checked_add(4)?)? != b"PE\0\0" {
            return None;
        }
        let coff = pe + 4;
        let count = u16_at(b, coff + 2)? as usize;
        let optional_size = u16_at(b, coff + 16)? as usize;
        let optional = coff + 20;
        // Data directories start at 96 (PE32) or 112 (PE32+); the CLI header is entry 14.
        let directories = match u16_at(b, optional)? {
            0x10b => optional + 96,
            0x20b => optional + 112,
            _ => return None,
        };
        let cli_rva = u32_at(b, directories + 14 * 8)?;
        let debug = (
            u32_at(b, directories + 6 * 8).unwrap_or(0),
            u32_at(b, directories + 6 * 8 + 4).unwrap_or(0),
        );
        let table = optional + optional_size;
        let sections = (0..count)
            .map(|i| {
                let s = table + i * 40;
                let size = u32_at(b, s + 8)?.max(u32_at(b, s + 16)?);
                Some((u32_at(b, s + 12)?, size, u32_at(b, s + 20)?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PeImage {
            sections,
            cli_rva,
            debug,
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
        (0..(size as usize / 28).min(64))
            .filter_map(|i| {
                let e = start + i * 28;
                Some(DebugEntry {
                    kind: u32_at(b, e + 12)?,
                    size: u32_at(b, e + 16)? as usize,
                    file_offset: u32_at(b, e + 24)? as usize,
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
