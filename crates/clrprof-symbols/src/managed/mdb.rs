//! Mono symbol files (`.mdb`, format 50, what Mono's `mcs -debug` writes next to the
//! assembly): the sequence points of each method.
//!
//! Layout: `u64` magic `0x45e82623fd7fa614`, `i32` major version (50), `i32` minor, a 16-byte
//! GUID, then an offset table of 20 `u32`s (the ones used here: source table offset (8th),
//! method count and method table offset (10th, 11th), and the line table's line base, line
//! range and opcode base (17th..19th)). The method table holds `u32 token`, `u32 data
//! offset`, `u32 line table offset` per method, sorted by token; the source table
//! `u32 index`, `u32 data offset` per file, the data starting with the file name (LEB128
//! length, UTF-8). A method's line table is a DWARF-like line program: opcode 0 introduces an
//! extended opcode (size byte, opcode; 1 ends the sequence, 0x40 toggles "hidden"); opcodes
//! 1..opcode base are `copy` (1: emit a row), `advance_pc` (2, LEB128), `advance_line` (3,
//! LEB128, may be negative), `set_file` (4, LEB128), `const_add_pc` (8); larger opcodes are
//! special: they advance the offset by `(op - base) / range` and the line by
//! `line_base + (op - base) % range`, and emit a row. Rows on line `0xfeefee` and hidden rows
//! are not user code.

use std::path::Path;

use clrprof_events::bytes::{u32_at, u64_at};

use super::{MethodSource, SequencePoint};

const MAGIC: u64 = 0x45e8_2623_fd7f_a614;
const MAJOR: i32 = 50;
const HEADER_LEN: usize = 8 + 4 + 4 + 16;
const HIDDEN_LINE: u32 = 0xfeefee;

/// A loaded `.mdb` file.
#[derive(Debug, Clone)]
pub struct SymbolFile {
    data: Vec<u8>,
}

/// Reads a LEB128 value as the writer wrote it (an `int` through `Write7BitEncodedInt`).
fn leb128(b: &[u8], pos: &mut usize) -> Option<u32> {
    let mut value = 0u32;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        if shift < 32 {
            value |= u32::from(byte & 0x7F) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        if shift > 35 {
            return None;
        }
    }
}

impl SymbolFile {
    /// The symbols of the module at `path` (`<path>.mdb`), if there are any and they read.
    pub fn for_module(path: &Path) -> Option<SymbolFile> {
        let mut name = path.as_os_str().to_owned();
        name.push(".mdb");
        SymbolFile::parse(std::fs::read(name).ok()?)
    }

    /// Checks the header of `data`.
    pub fn parse(data: Vec<u8>) -> Option<SymbolFile> {
        let magic = u64_at(&data, 0)?;
        let major = u32_at(&data, 8)? as i32;
        if magic != MAGIC || major != MAJOR || data.len() < HEADER_LEN + 20 * 4 {
            return None;
        }
        Some(SymbolFile { data })
    }

    fn table(&self, index: usize) -> Option<u32> {
        u32_at(&self.data, HEADER_LEN + 4 * index)
    }

    /// The source file and sequence points of the method with this MethodDef token.
    pub fn method(&self, token: u32) -> Option<MethodSource> {
        let count = self.table(9)? as usize;
        let table = self.table(10)? as usize;
        let entry = (0..count)
            .map(|i| table + 12 * i)
            .find(|&at| u32_at(&self.data, at) == Some(token))?;
        let lnt = u32_at(&self.data, entry + 8)? as usize;
        let line_base = self.table(16)? as i32;
        let line_range = self.table(17)?.max(1);
        let opcode_base = self.table(18)? as u8;
        let max_address_incr = (255 - u32::from(opcode_base)) / line_range;

        let d = &self.data;
        let mut pos = lnt;
        let (mut offset, mut line, mut file) = (0u32, 1u32, 1u32);
        let mut hidden = false;
        let mut rows: Vec<(u32, u32, u32)> = Vec::new();
        loop {
            let op = *d.get(pos)?;
            pos += 1;
            if op == 0 {
                let size = *d.get(pos)? as usize;
                let ext = *d.get(pos + 1)?;
                pos += 1 + size;
                match ext {
                    1 => break,
                    0x40 => hidden = !hidden,
                    _ => {}
                }
            } else if op < opcode_base {
                match op {
                    1 if !hidden => rows.push((offset, line, file)),
                    1 => {}
                    2 => offset = offset.wrapping_add(leb128(d, &mut pos)?),
                    3 => line = line.wrapping_add(leb128(d, &mut pos)?),
                    4 => file = leb128(d, &mut pos)?,
                    8 => offset = offset.wrapping_add(max_address_incr),
                    _ => return None,
                }
                continue;
            } else {
                let op = u32::from(op - opcode_base);
                offset = offset.wrapping_add(op / line_range);
                line = line.wrapping_add((line_base + (op % line_range) as i32) as u32);
                if !hidden {
                    rows.push((offset, line, file));
                }
            }
        }
        let first_file = rows.first().map_or(file, |r| r.2);
        let points = rows
            .iter()
            .filter(|r| r.1 != HIDDEN_LINE && r.1 != 0 && r.2 == first_file)
            .map(|&(il_offset, line, _)| SequencePoint { il_offset, line })
            .collect();
        Some(MethodSource {
            file: self.source_name(first_file)?,
            points,
        })
    }

    /// The name of source file `index` (1-based).
    fn source_name(&self, index: u32) -> Option<String> {
        let table = self.table(7)? as usize;
        let entry = table + 8 * (index.checked_sub(1)? as usize);
        let mut pos = u32_at(&self.data, entry + 4)? as usize;
        let len = leb128(&self.data, &mut pos)? as usize;
        let bytes = self.data.get(pos..pos.checked_add(len)?)?;
        Some(String::from_utf8_lossy(bytes).into_owned())
    }
}
