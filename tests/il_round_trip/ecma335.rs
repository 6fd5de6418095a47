//! A small reader of .NET assembly files: the PE sections, the CLI header, the metadata
//! streams and the metadata tables (ECMA-335 II.24), enough to find every method body and the
//! signatures its calls refer to.

use std::collections::HashMap;

use clrprof_analysis::pe::PeImage;
use clrprof_events::bytes::{u16_at, u32_at};
use clrprof_sdk::metadata::signature::read_compressed;

/// Table numbers (II.22).
pub const TYPE_REF: usize = 0x01;
pub const TYPE_DEF: usize = 0x02;
pub const FIELD: usize = 0x04;
pub const METHOD_DEF: usize = 0x06;
pub const PARAM: usize = 0x08;
pub const MEMBER_REF: usize = 0x0A;
pub const STAND_ALONE_SIG: usize = 0x11;
pub const MODULE_REF: usize = 0x1A;
pub const TYPE_SPEC: usize = 0x1B;
pub const ASSEMBLY_REF: usize = 0x23;
pub const METHOD_SPEC: usize = 0x2B;

/// A column's type.
#[derive(Clone, Copy)]
enum Col {
    U16,
    U32,
    Str,
    Guid,
    Blob,
    /// An index into one table.
    Idx(usize),
    /// A coded index: tag bits and the tables it can name.
    Coded(u32, &'static [usize]),
}

const TYPE_DEF_OR_REF: Col = Col::Coded(2, &[TYPE_DEF, TYPE_REF, TYPE_SPEC]);
const HAS_CONSTANT: Col = Col::Coded(2, &[FIELD, PARAM, 0x17]);
const HAS_CUSTOM_ATTRIBUTE: Col = Col::Coded(
    5,
    &[
        METHOD_DEF,
        FIELD,
        TYPE_REF,
        TYPE_DEF,
        PARAM,
        0x09,
        MEMBER_REF,
        0x00,
        0x0E,
        0x17,
        0x14,
        STAND_ALONE_SIG,
        MODULE_REF,
        TYPE_SPEC,
        0x20,
        ASSEMBLY_REF,
        0x26,
        0x27,
        0x28,
        0x2A,
        0x2C,
        METHOD_SPEC,
    ],
);
const HAS_FIELD_MARSHAL: Col = Col::Coded(1, &[FIELD, PARAM]);
const HAS_DECL_SECURITY: Col = Col::Coded(2, &[TYPE_DEF, METHOD_DEF, 0x20]);
const MEMBER_REF_PARENT: Col =
    Col::Coded(3, &[TYPE_DEF, TYPE_REF, MODULE_REF, METHOD_DEF, TYPE_SPEC]);
const HAS_SEMANTICS: Col = Col::Coded(1, &[0x14, 0x17]);
const METHOD_DEF_OR_REF: Col = Col::Coded(1, &[METHOD_DEF, MEMBER_REF]);
const MEMBER_FORWARDED: Col = Col::Coded(1, &[FIELD, METHOD_DEF]);
const IMPLEMENTATION: Col = Col::Coded(2, &[0x26, ASSEMBLY_REF, 0x27]);
const CUSTOM_ATTRIBUTE_TYPE: Col = Col::Coded(3, &[METHOD_DEF, MEMBER_REF]);
const RESOLUTION_SCOPE: Col = Col::Coded(2, &[0x00, MODULE_REF, ASSEMBLY_REF, TYPE_REF]);
const TYPE_OR_METHOD_DEF: Col = Col::Coded(1, &[TYPE_DEF, METHOD_DEF]);

/// The columns of every table 0x00..=0x2C.
fn schema(table: usize) -> &'static [Col] {
    use Col::*;
    match table {
        0x00 => &[U16, Str, Guid, Guid, Guid],
        0x01 => &[RESOLUTION_SCOPE, Str, Str],
        0x02 => &[U32, Str, Str, TYPE_DEF_OR_REF, Idx(FIELD), Idx(METHOD_DEF)],
        0x03 => &[Idx(FIELD)],
        0x04 => &[U16, Str, Blob],
        0x05 => &[Idx(METHOD_DEF)],
        0x06 => &[U32, U16, U16, Str, Blob, Idx(PARAM)],
        0x07 => &[Idx(PARAM)],
        0x08 => &[U16, U16, Str],
        0x09 => &[Idx(TYPE_DEF), TYPE_DEF_OR_REF],
        0x0A => &[MEMBER_REF_PARENT, Str, Blob],
        0x0B => &[U16, HAS_CONSTANT, Blob],
        0x0C => &[HAS_CUSTOM_ATTRIBUTE, CUSTOM_ATTRIBUTE_TYPE, Blob],
        0x0D => &[HAS_FIELD_MARSHAL, Blob],
        0x0E => &[U16, HAS_DECL_SECURITY, Blob],
        0x0F => &[U16, U32, Idx(TYPE_DEF)],
        0x10 => &[U32, Idx(FIELD)],
        0x11 => &[Blob],
        0x12 => &[Idx(TYPE_DEF), Idx(0x14)],
        0x13 => &[Idx(0x14)],
        0x14 => &[U16, Str, TYPE_DEF_OR_REF],
        0x15 => &[Idx(TYPE_DEF), Idx(0x17)],
        0x16 => &[Idx(0x17)],
        0x17 => &[U16, Str, Blob],
        0x18 => &[U16, Idx(METHOD_DEF), HAS_SEMANTICS],
        0x19 => &[Idx(TYPE_DEF), METHOD_DEF_OR_REF, METHOD_DEF_OR_REF],
        0x1A => &[Str],
        0x1B => &[Blob],
        0x1C => &[U16, MEMBER_FORWARDED, Str, Idx(MODULE_REF)],
        0x1D => &[U32, Idx(FIELD)],
        0x1E => &[U32, U32],
        0x1F => &[U32],
        0x20 => &[U32, U16, U16, U16, U16, U32, Blob, Str, Str],
        0x21 => &[U32],
        0x22 => &[U32, U32, U32],
        0x23 => &[U16, U16, U16, U16, U32, Blob, Str, Str, Blob],
        0x24 => &[U32, Idx(ASSEMBLY_REF)],
        0x25 => &[U32, U32, U32, Idx(ASSEMBLY_REF)],
        0x26 => &[U32, Str, Blob],
        0x27 => &[U32, U32, Str, Str, IMPLEMENTATION],
        0x28 => &[U32, U32, Str, IMPLEMENTATION],
        0x29 => &[Idx(TYPE_DEF), Idx(TYPE_DEF)],
        0x2A => &[U16, U16, TYPE_OR_METHOD_DEF, Str],
        0x2B => &[METHOD_DEF_OR_REF, Blob],
        0x2C => &[Idx(0x2A), TYPE_DEF_OR_REF],
        _ => &[],
    }
}

/// One metadata table: where its rows are and how its columns are laid out.
#[derive(Default, Clone)]
struct Table {
    rows: u32,
    start: usize,
    row_size: usize,
    /// (offset in the row, size) of each column.
    columns: Vec<(usize, usize)>,
}

/// A loaded assembly file.
pub struct Assembly {
    data: Vec<u8>,
    pe: PeImage,
    tables: Vec<Table>,
    blob: usize,
    blob_len: usize,
}

impl Assembly {
    /// Reads the file's PE headers and metadata tables.
    pub fn read(data: Vec<u8>) -> Result<Assembly, String> {
        let e = |what: &str| format!("not a .NET assembly: {what}");
        let pe = PeImage::parse(&data).ok_or(e("no PE headers"))?;
        let cli = pe.cli_header().ok_or(e("CLI header"))?;
        let mut asm = Assembly {
            data,
            pe,
            tables: Vec::new(),
            blob: 0,
            blob_len: 0,
        };
        let md_rva = u32_at(&asm.data, cli + 8).ok_or(e("CLI header"))?;
        let md = asm.offset(md_rva).ok_or(e("metadata"))?;
        if u32_at(&asm.data, md) != Some(0x424A_5342) {
            return Err(e("metadata signature"));
        }
        let version_len = u32_at(&asm.data, md + 12).ok_or(e("metadata"))? as usize;
        let mut pos = md + 16 + version_len + 2;
        let streams = u16_at(&asm.data, pos).ok_or(e("streams"))?;
        pos += 2;
        let mut heaps = HashMap::new();
        for _ in 0..streams {
            let offset = u32_at(&asm.data, pos).ok_or(e("stream"))? as usize;
            let size = u32_at(&asm.data, pos + 4).ok_or(e("stream"))? as usize;
            pos += 8;
            let name_end = asm.data[pos..]
                .iter()
                .position(|&b| b == 0)
                .ok_or(e("stream"))?;
            let name = String::from_utf8_lossy(&asm.data[pos..pos + name_end]).into_owned();
            pos += (name_end + 4) & !3;
            heaps.insert(name, (md + offset, size));
        }
        let &(tables, _) = heaps.get("#~").ok_or(e("no #~ stream"))?;
        let &(blob, blob_len) = heaps.get("#Blob").ok_or(e("no #Blob stream"))?;
        asm.blob = blob;
        asm.blob_len = blob_len;
        asm.read_tables(tables)?;
        Ok(asm)
    }

    fn read_tables(&mut self, at: usize) -> Result<(), String> {
        let d = &self.data;
        let heap_sizes = d[at + 6];
        let valid = u64::from_le_bytes(d[at + 8..at + 16].try_into().unwrap());
        let mut pos = at + 24;
        let mut tables = vec![Table::default(); 64];
        for (t, table) in tables.iter_mut().enumerate() {
            if valid & (1 << t) != 0 {
                table.rows = u32_at(d, pos).ok_or("table row counts")?;
                pos += 4;
            }
        }
        let heap = |bit: u8| if heap_sizes & bit != 0 { 4 } else { 2 };
        let rows: Vec<u32> = tables.iter().map(|t| t.rows).collect();
        for (t, table) in tables.iter_mut().enumerate() {
            if table.rows == 0 {
                continue;
            }
            let cols = schema(t);
            if cols.is_empty() {
                return Err(format!("table {t:#x} has no known schema"));
            }
            let mut offset = 0;
            for col in cols {
                let size = match *col {
                    Col::U16 => 2,
                    Col::U32 => 4,
                    Col::Str => heap(0x01),
                    Col::Guid => heap(0x02),
                    Col::Blob => heap(0x04),
                    Col::Idx(other) => {
                        if rows[other] < 0x1_0000 {
                            2
                        } else {
                            4
                        }
                    }
                    Col::Coded(bits, targets) => {
                        let max = targets.iter().map(|&x| rows[x]).max().unwrap_or(0);
                        if max < (1 << (16 - bits)) { 2 } else { 4 }
                    }
                };
                table.columns.push((offset, size));
                offset += size;
            }
            table.row_size = offset;
            table.start = pos;
            pos += offset * table.rows as usize;
        }
        if pos > d.len() {
            return Err("metadata tables run past the end of the file".into());
        }
        self.tables = tables;
        Ok(())
    }

    /// The file offset of an RVA.
    pub fn offset(&self, rva: u32) -> Option<usize> {
        self.pe.offset(rva)
    }

    /// The whole file.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Number of rows of a table.
    pub fn rows(&self, table: usize) -> u32 {
        self.tables[table].rows
    }

    /// A cell (1-based row, 0-based column).
    pub fn cell(&self, table: usize, row: u32, column: usize) -> u32 {
        let t = &self.tables[table];
        let (offset, size) = t.columns[column];
        let at = t.start + (row as usize - 1) * t.row_size + offset;
        if size == 2 {
            u16_at(&self.data, at).unwrap() as u32
        } else {
            u32_at(&self.data, at).unwrap()
        }
    }

    /// A blob from the #Blob heap.
    pub fn blob(&self, index: u32) -> Option<&[u8]> {
        let at = self.blob + index as usize;
        let heap = &self.data[self.blob..self.blob + self.blob_len];
        let (len, header) = read_compressed(heap.get(index as usize..)?)?;
        self.data.get(at + header..at + header + len as usize)
    }

    /// The signature blob of a method token (MethodDef, MemberRef or the method a MethodSpec
    /// instantiates) or of a StandAloneSig.
    pub fn signature(&self, token: u32) -> Option<&[u8]> {
        let (table, row) = ((token >> 24) as usize, token & 0x00FF_FFFF);
        if row == 0 || row > self.tables.get(table)?.rows {
            return None;
        }
        match table {
            METHOD_DEF => self.blob(self.cell(table, row, 4)),
            MEMBER_REF => self.blob(self.cell(table, row, 2)),
            STAND_ALONE_SIG => self.blob(self.cell(table, row, 0)),
            METHOD_SPEC => {
                let coded = self.cell(table, row, 0);
                let target = if coded & 1 == 0 {
                    METHOD_DEF
                } else {
                    MEMBER_REF
                };
                self.signature(((target as u32) << 24) | (coded >> 1))
            }
            _ => None,
        }
    }
}
