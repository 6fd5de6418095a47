//! Portable PDB symbols (what `dotnet build` writes, beside the assembly as `App.pdb` or
//! embedded in it): the sequence points of each method.
//!
//! A portable PDB is ECMA-335 metadata ("Portable PDB v1.0: Format Specification",
//! dotnet/runtime `docs/design/specs/PortablePdb-Metadata.md`): a metadata root (`BSJB`) with
//! the streams `#Pdb`, `#~`, `#Strings`, `#Blob` and `#GUID`. Its tables start at `Document`
//! (0x30: name, hash algorithm, hash, language) and `MethodDebugInformation` (0x31: document,
//! sequence points), one row per `MethodDef` of the assembly in token order. A document's
//! name is a blob: a separator character, then blob indexes of its UTF-8 parts. A method's
//! sequence points are a blob: the local signature, the first document when the row names
//! none, then records: an IL offset delta (0 after the first record: a document change), the
//! line and column deltas (both 0: a hidden point), and the start line and column (the first
//! as unsigned numbers, then signed deltas from the previous visible point).
//!
//! An embedded PDB is a debug directory entry of type 17 in the assembly's PE image: `MPDB`,
//! the PDB's size, then the PDB compressed with deflate.

use std::io::Read;
use std::path::Path;

use clrprof_events::bytes::{u16_at, u32_at, u64_at};

use super::HIDDEN_LINE;
use super::pe::PeImage;
use super::{MethodSource, SequencePoint};

/// Where a module's portable PDB was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdbLocation {
    /// A `.pdb` file beside the assembly.
    Beside,
    /// In the assembly's debug directory.
    Embedded,
}

/// A portable PDB, read.
#[derive(Debug, Clone)]
pub struct PortablePdb {
    documents: Vec<String>,
    /// Per MethodDef row (token order): its document (1-based, 0 = none) and its sequence
    /// points blob.
    methods: Vec<(u32, Vec<u8>)>,
}

/// Why a module's portable PDB could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdbProblem {
    /// The `.pdb` beside the assembly is a Windows (MSF) PDB.
    WindowsPdb,
    /// The file is not a portable PDB that this reader understands.
    Unreadable(String),
}

const TABLE_DOCUMENT: u32 = 0x30;
const TABLE_METHOD_DEBUG: u32 = 0x31;
/// The largest PDB this reader inflates (an embedded PDB declares its size).
const MAX_PDB: usize = 256 << 20;

fn bad(what: &str) -> PdbProblem {
    PdbProblem::Unreadable(what.to_string())
}

/// An ECMA-335 compressed unsigned integer (II.23.2) at `*pos`.
fn compressed(b: &[u8], pos: &mut usize) -> Option<u32> {
    let first = *b.get(*pos)?;
    let (value, len) = if first & 0x80 == 0 {
        (u32::from(first), 1)
    } else if first & 0xc0 == 0x80 {
        (
            u32::from(first & 0x3f) << 8 | u32::from(*b.get(*pos + 1)?),
            2,
        )
    } else if first & 0xe0 == 0xc0 {
        let rest = b.get(*pos + 1..*pos + 4)?;
        (
            u32::from(first & 0x1f) << 24
                | u32::from(rest[0]) << 16
                | u32::from(rest[1]) << 8
                | u32::from(rest[2]),
            4,
        )
    } else {
        return None;
    };
    *pos += len;
    Some(value)
}

/// A compressed signed integer: the unsigned encoding of the value rotated left by one bit
/// within its encoded width.
fn compressed_signed(b: &[u8], pos: &mut usize) -> Option<i32> {
    let start = *pos;
    let raw = compressed(b, pos)?;
    let (negative_offset, value) = match *pos - start {
        1 => (0x40, raw >> 1),
        2 => (0x2000, raw >> 1),
        _ => (0x1000_0000, raw >> 1),
    };
    let value = value as i32;
    Some(if raw & 1 == 1 {
        value - negative_offset
    } else {
        value
    })
}

/// The streams of a metadata root that this reader uses.
struct Streams<'a> {
    tables: &'a [u8],
    blob: &'a [u8],
    pdb: &'a [u8],
}

fn streams(b: &[u8]) -> Result<Streams<'_>, PdbProblem> {
    if b.get(..4) != Some(b"BSJB") {
        return Err(if b.starts_with(b"Microsoft C/C++ MSF 7.00") {
            PdbProblem::WindowsPdb
        } else {
            bad("it does not start with the metadata signature BSJB")
        });
    }
    let version_len = u32_at(b, 12).ok_or_else(|| bad("cut short"))? as usize;
    let mut at = 16usize
        .checked_add(version_len)
        .ok_or_else(|| bad("version"))?;
    let count = u16_at(b, at + 2).ok_or_else(|| bad("cut short"))?;
    at += 4;
    let (mut tables, mut blob, mut pdb) = (None, None, None);
    for _ in 0..count {
        let offset = u32_at(b, at).ok_or_else(|| bad("stream headers"))? as usize;
        let size = u32_at(b, at + 4).ok_or_else(|| bad("stream headers"))? as usize;
        let name_start = at + 8;
        let name_len = b
            .get(name_start..)
            .and_then(|n| n.iter().take(32).position(|&c| c == 0))
            .ok_or_else(|| bad("a stream name"))?;
        let name = &b[name_start..name_start + name_len];
        let data = b
            .get(offset..offset.checked_add(size).ok_or_else(|| bad("a stream"))?)
            .ok_or_else(|| bad("a stream past the end"))?;
        match name {
            b"#~" | b"#-" => tables = Some(data),
            b"#Blob" => blob = Some(data),
            b"#Pdb" => pdb = Some(data),
            _ => {}
        }
        at = name_start + (name_len + 4) / 4 * 4;
    }
    match (tables, blob, pdb) {
        (Some(tables), Some(blob), Some(pdb)) => Ok(Streams { tables, blob, pdb }),
        (_, _, None) => Err(bad(
            "no #Pdb stream: these are an assembly's metadata, not a PDB's",
        )),
        _ => Err(bad("no #~ or #Blob stream")),
    }
}

/// The blob at `index` of the `#Blob` heap.
fn blob_at(heap: &[u8], index: u32) -> Option<&[u8]> {
    let mut pos = index as usize;
    let len = compressed(heap, &mut pos)? as usize;
    heap.get(pos..pos.checked_add(len)?)
}

impl PortablePdb {
    /// Reads a portable PDB.
    pub fn parse(b: &[u8]) -> Result<PortablePdb, PdbProblem> {
        let s = streams(b)?;
        let t = s.tables;
        let heap_sizes = *t.get(6).ok_or_else(|| bad("tables header"))?;
        let valid = u64_at(t, 8).ok_or_else(|| bad("tables header"))?;
        let blob_index = if heap_sizes & 4 != 0 { 4 } else { 2 };
        let guid_index = if heap_sizes & 2 != 0 { 4 } else { 2 };
        let mut rows = [0u32; 64];
        let mut at = 24;
        for (table, n) in rows.iter_mut().enumerate() {
            if valid & (1 << table) != 0 {
                *n = u32_at(t, at).ok_or_else(|| bad("row counts"))?;
                at += 4;
            }
        }
        // Only PDB tables are in a PDB's table stream; the first two are the ones used here.
        if valid & ((1 << TABLE_DOCUMENT) - 1) != 0 {
            return Err(bad("type system tables in a PDB's table stream"));
        }
        let read_index = |at: usize, size: usize| -> Option<u32> {
            if size == 2 {
                u16_at(t, at).map(u32::from)
            } else {
                u32_at(t, at)
            }
        };
        let documents_n = rows[TABLE_DOCUMENT as usize] as usize;
        let doc_row = 2 * blob_index + 2 * guid_index;
        let mut documents = Vec::with_capacity(documents_n.min(t.len() / doc_row.max(1)));
        for i in 0..documents_n {
            let row = at + i * doc_row;
            let name = read_index(row, blob_index).ok_or_else(|| bad("Document table"))?;
            documents.push(document_name(s.blob, name).ok_or_else(|| bad("a document name"))?);
        }
        at += documents_n * doc_row;
        let doc_index = if documents_n < 1 << 16 { 2 } else { 4 };
        let methods_n = rows[TABLE_METHOD_DEBUG as usize] as usize;
        let method_row = doc_index + blob_index;
        let mut methods = Vec::with_capacity(methods_n.min(t.len() / method_row));
        for i in 0..methods_n {
            let row = at + i * method_row;
            let document =
                read_index(row, doc_index).ok_or_else(|| bad("MethodDebugInformation table"))?;
            let points = read_index(row + doc_index, blob_index)
                .ok_or_else(|| bad("MethodDebugInformation table"))?;
            let blob = if points == 0 {
                Vec::new()
            } else {
                blob_at(s.blob, points)
                    .ok_or_else(|| bad("a sequence points blob"))?
                    .to_vec()
            };
            methods.push((document, blob));
        }
        let _ = s.pdb;
        Ok(PortablePdb { documents, methods })
    }

    /// The sequence points of the method with MethodDef `token` (those in the method's first
    /// document; hidden points left out).
    pub fn method(&self, token: u32) -> Option<MethodSource> {
        if token >> 24 != 0x06 {
            return None;
        }
        let row = (token & 0x00ff_ffff).checked_sub(1)? as usize;
        let (document, blob) = self.methods.get(row)?;
        if blob.is_empty() {
            return None;
        }
        let b = blob.as_slice();
        let mut pos = 0;
        let _local_signature = compressed(b, &mut pos)?;
        let mut current = if *document == 0 {
            compressed(b, &mut pos)?
        } else {
            *document
        };
        let first_document = current;
        let mut points = Vec::new();
        let (mut offset, mut line, mut column) = (0u32, 0i64, 0i64);
        let mut first_record = true;
        let mut first_visible = true;
        while pos < b.len() {
            let delta = compressed(b, &mut pos)?;
            if delta == 0 && !first_record {
                current = compressed(b, &mut pos)?;
                continue;
            }
            offset = if first_record {
                delta
            } else {
                offset.checked_add(delta)?
            };
            first_record = false;
            let delta_lines = compressed(b, &mut pos)?;
            let delta_columns = if delta_lines == 0 {
                i64::from(compressed(b, &mut pos)?)
            } else {
                i64::from(compressed_signed(b, &mut pos)?)
            };
            if delta_lines == 0 && delta_columns == 0 {
                continue; // hidden
            }
            if first_visible {
                line = i64::from(compressed(b, &mut pos)?);
                column = i64::from(compressed(b, &mut pos)?);
                first_visible = false;
            } else {
                line += i64::from(compressed_signed(b, &mut pos)?);
                column += i64::from(compressed_signed(b, &mut pos)?);
            }
            let _ = column;
            let Ok(start_line) = u32::try_from(line) else {
                continue;
            };
            if current == first_document && start_line != 0 && start_line != HIDDEN_LINE {
                points.push(SequencePoint {
                    il_offset: offset,
                    line: start_line,
                });
            }
        }
        let file = self
            .documents
            .get(usize::try_from(first_document).ok()?.checked_sub(1)?)?
            .clone();
        (!points.is_empty()).then_some(MethodSource { file, points })
    }
}

/// A document name blob: a separator, then the blob indexes of its parts.
fn document_name(heap: &[u8], index: u32) -> Option<String> {
    let b = blob_at(heap, index)?;
    let (&separator, mut rest) = b.split_first()?;
    let mut parts = Vec::new();
    while !rest.is_empty() {
        let mut pos = 0;
        let part = compressed(rest, &mut pos)?;
        rest = &rest[pos..];
        let text = if part == 0 {
            ""
        } else {
            std::str::from_utf8(blob_at(heap, part)?).ok()?
        };
        parts.push(text);
        if parts.len() > 4096 {
            return None;
        }
    }
    let separator = if separator == 0 {
        String::new()
    } else {
        char::from(separator).to_string()
    };
    Some(parts.join(&separator))
}

/// The portable PDB embedded in the PE image `b`, decompressed, if it has one.
pub fn embedded(b: &[u8]) -> Result<Option<Vec<u8>>, PdbProblem> {
    let Some(image) = PeImage::parse(b) else {
        return Ok(None);
    };
    for entry in image.debug_entries(b) {
        if entry.kind != 17 {
            continue;
        }
        let data = b
            .get(entry.file_offset..entry.file_offset.saturating_add(entry.size))
            .ok_or_else(|| bad("the embedded PDB runs past the end of the assembly"))?;
        if data.get(..4) != Some(b"MPDB") {
            return Err(bad("the embedded PDB does not start with MPDB"));
        }
        let size = u32_at(data, 4).ok_or_else(|| bad("cut short"))? as usize;
        if size > MAX_PDB {
            return Err(bad("the embedded PDB declares more than 256 MiB"));
        }
        let mut out = Vec::with_capacity(size);
        flate2::read::DeflateDecoder::new(&data[8..])
            .take(size as u64)
            .read_to_end(&mut out)
            .map_err(|e| PdbProblem::Unreadable(format!("cannot inflate the embedded PDB: {e}")))?;
        return Ok(Some(out));
    }
    Ok(None)
}

/// The portable PDB of the module at `path`: `<name>.pdb` beside it, else one embedded in
/// it. `Ok(None)` when there is neither.
pub fn for_module(path: &Path) -> Result<Option<(PortablePdb, PdbLocation)>, PdbProblem> {
    let beside = path.with_extension("pdb");
    if let Ok(bytes) = std::fs::read(&beside) {
        return PortablePdb::parse(&bytes).map(|p| Some((p, PdbLocation::Beside)));
    }
    let Ok(image) = std::fs::read(path) else {
        return Ok(None);
    };
    match embedded(&image)? {
        Some(bytes) => PortablePdb::parse(&bytes).map(|p| Some((p, PdbLocation::Embedded))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers() {
        let read = |b: &[u8]| {
            let mut pos = 0;
            (compressed(b, &mut pos), pos)
        };
        assert_eq!(read(&[0x03]), (Some(3), 1));
        assert_eq!(read(&[0x80, 0x80]), (Some(0x80), 2));
        assert_eq!(read(&[0xc0, 0x00, 0x40, 0x00]), (Some(0x4000), 4));
        assert_eq!(read(&[0xe0]), (None, 0));
        // Signed (ECMA-335 II.23.2 examples).
        let signed = |b: &[u8]| {
            let mut pos = 0;
            compressed_signed(b, &mut pos)
        };
        assert_eq!(signed(&[0x06]), Some(3));
        assert_eq!(signed(&[0x7b]), Some(-3));
        assert_eq!(signed(&[0x80, 0x80]), Some(64));
        assert_eq!(signed(&[0x01]), Some(-64));
        assert_eq!(signed(&[0xc0, 0x00, 0x40, 0x00]), Some(8192));
        assert_eq!(signed(&[0x80, 0x01]), Some(-8192));
        assert_eq!(signed(&[0xdf, 0xff, 0xff, 0xfe]), Some(268_435_455));
        assert_eq!(signed(&[0xc0, 0x00, 0x00, 0x01]), Some(-268_435_456));
    }

    #[test]
    fn garbage_is_refused_without_panicking() {
        assert_eq!(
            PortablePdb::parse(b"").unwrap_err(),
            bad("it does not start with the metadata signature BSJB")
        );
        assert_eq!(
            PortablePdb::parse(b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0").unwrap_err(),
            PdbProblem::WindowsPdb
        );
        for n in 0..64 {
            let mut b = b"BSJB".to_vec();
            b.extend((0..n).map(|i| (i * 37) as u8));
            let _ = PortablePdb::parse(&b);
        }
    }
}
