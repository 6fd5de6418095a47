//! Why a trace could not be read.

use std::fmt::Write as _;

use crate::{
    BLOCKED_MAJOR, FORMAT_MAJOR, HEADER_LEN, RECORD_HEADER_LEN, RecordKind, SECTIONED_MAJOR,
};

/// Why a trace, or part of one, could not be read.
///
/// Every offset is a byte offset from the start of the file (or of the stream, for
/// [`crate::StreamDecoder`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The input does not start with the clrprof magic.
    #[error("not a clrprof trace: {}", describe_start(.start, *.looks_like))]
    NotATrace {
        /// The first bytes of the input (at most 16).
        start: Vec<u8>,
        /// What the input looks like instead, when that is cheap to tell (`"a gzip file"`).
        looks_like: Option<&'static str>,
    },
    /// The trace was written in a major version of the format this crate cannot read.
    #[error("{}", describe_version(*.major, *.minor))]
    UnsupportedVersion {
        /// Major version found in the header.
        major: u16,
        /// Minor version found in the header.
        minor: u16,
    },
    /// The input ends in the middle of the header or of a record.
    #[error(
        "truncated trace: {} at byte {offset} needs {needed} bytes, but only {available} are left",
        describe_part(*.offset, *.kind)
    )]
    Truncated {
        /// Where the incomplete header or record starts.
        offset: u64,
        /// The kind of the incomplete record, when its header was complete; `None` for the file
        /// header or an incomplete record header.
        kind: Option<RecordKind>,
        /// Bytes the header or record needs, counted from `offset`.
        needed: u64,
        /// Bytes the input has from `offset` on.
        available: u64,
    },
    /// A trace in checksummed blocks (format 2.x) ends inside a block: the block cannot be
    /// checked, so its records are left out. This is what a recording cut short leaves (the
    /// disk full, `clrprof` killed, the machine off).
    #[error(
        "truncated trace: {} at byte {offset} needs {needed} bytes, but only {available} are left; \
         the records in it cannot be checked and are left out",
        match .seq { Some(seq) => format!("block {seq}"), None => "the block header".to_string() }
    )]
    BlockTruncated {
        /// Where the incomplete block starts.
        offset: u64,
        /// The block's number, when its header was whole.
        seq: Option<u32>,
        /// Bytes the block needs, counted from `offset`.
        needed: u64,
        /// Bytes the input has from `offset` on.
        available: u64,
    },
    /// Part of a trace in checksummed blocks failed its checksum and was skipped; reading goes
    /// on with the next good block.
    #[error("damaged trace: {}", describe_damage(*.offset, *.len, *.blocks, *.records, *.time_range))]
    Damaged {
        /// Where the damaged part starts.
        offset: u64,
        /// Its length in bytes (0 when whole blocks are missing but no damaged bytes were
        /// seen).
        len: u64,
        /// The blocks lost in it, when known (from the block numbers around it).
        blocks: Option<u32>,
        /// The records lost, when the damaged block's header was intact.
        records: Option<u32>,
        /// The time range of the lost records, when the damaged block's header was intact.
        time_range: Option<(u64, u64)>,
    },
    /// A record that cannot be right: a payload too short for its kind, invalid UTF-8, a length
    /// over the limit, a count larger than the bytes that remain.
    #[error("corrupt trace at byte {offset}: {reason}")]
    Corrupt {
        /// Where the problem is.
        offset: u64,
        /// What is wrong, naming the record kind and field.
        reason: String,
    },
    /// Reading failed.
    #[error("cannot read the trace: {0}")]
    Io(#[from] std::io::Error),
}

impl ReadError {
    pub(crate) fn not_a_trace(start: &[u8]) -> ReadError {
        let start = &start[..start.len().min(HEADER_LEN)];
        ReadError::NotATrace {
            start: start.to_vec(),
            looks_like: guess_format(start),
        }
    }
}

fn describe_version(major: u16, minor: u16) -> String {
    if major > SECTIONED_MAJOR {
        format!(
            "this trace was written by a newer clrprof (format {major}.{minor}); this one reads \
             {FORMAT_MAJOR}.x, {BLOCKED_MAJOR}.x and {SECTIONED_MAJOR}.x: upgrade clrprof to read it"
        )
    } else {
        format!(
            "this trace has format version {major}.{minor}, which no released clrprof writes; \
             this one reads {FORMAT_MAJOR}.x, {BLOCKED_MAJOR}.x and {SECTIONED_MAJOR}.x"
        )
    }
}

/// Seconds since the session's start, for messages: `4.20 s`.
pub(crate) fn seconds(ns: u64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

fn describe_damage(
    offset: u64,
    len: u64,
    blocks: Option<u32>,
    records: Option<u32>,
    time_range: Option<(u64, u64)>,
) -> String {
    let mut out = if len == 0 {
        format!("blocks missing before byte {offset}")
    } else {
        format!(
            "bytes {offset} to {} fail their checksum and were skipped",
            offset + len - 1
        )
    };
    let mut facts = Vec::new();
    match blocks {
        Some(1) => facts.push("1 block".to_string()),
        Some(n) => facts.push(format!("{n} blocks")),
        None => facts.push("the rest of the file".to_string()),
    }
    if let Some(n) = records {
        facts.push(format!("{n} records"));
    }
    if let Some((from, to)) = time_range {
        facts.push(format!(
            "recorded from {} to {}",
            seconds(from),
            seconds(to)
        ));
    }
    let _ = write!(out, " ({})", facts.join(", "));
    out
}

fn describe_part(offset: u64, kind: Option<RecordKind>) -> String {
    match kind {
        Some(kind) => describe_kind(kind),
        None if offset == 0 => "the file header".to_string(),
        None => "the record header".to_string(),
    }
}

fn describe_start(start: &[u8], looks_like: Option<&'static str>) -> String {
    if start.is_empty() {
        return "the input is empty".to_string();
    }
    let mut out = String::from("it starts with");
    for b in start.iter().take(8) {
        let _ = write!(out, " {b:02x}");
    }
    if start
        .iter()
        .take(8)
        .all(|b| b.is_ascii_graphic() || *b == b' ')
    {
        let text: String = start.iter().take(8).map(|&b| char::from(b)).collect();
        let _ = write!(out, " ({text:?})");
    }
    match looks_like {
        Some(what) => {
            let _ = write!(out, "; this looks like {what}");
        }
        None => out.push_str(" instead of \"CLRPROF\\0\""),
    }
    out
}

/// `the Event record (kind 32)`, `the record of unknown kind 99`.
pub(crate) fn describe_kind(kind: RecordKind) -> String {
    match kind.name() {
        Some(name) => format!("the {name} record (kind {})", kind.0),
        None => format!("the record of unknown kind {}", kind.0),
    }
}

/// A cheap guess at what a non-trace input is, from its first bytes.
pub(crate) fn guess_format(start: &[u8]) -> Option<&'static str> {
    const MAGICS: &[(&[u8], &str)] = &[
        (&[0x1f, 0x8b], "a gzip file; decompress it first"),
        (
            &[0x28, 0xb5, 0x2f, 0xfd],
            "a zstd file; decompress it first",
        ),
        (b"BZh", "a bzip2 file; decompress it first"),
        (
            &[0xfd, b'7', b'z', b'X', b'Z', 0],
            "an xz file; decompress it first",
        ),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x7fELF", "an ELF executable or library"),
        (
            b"Nettrace",
            "a .nettrace file (from dotnet-trace), not a clrprof trace",
        ),
        (
            b"PERFILE2",
            "a perf.data file (from perf record), not a clrprof trace",
        ),
    ];
    if let Some((_, what)) = MAGICS.iter().find(|(magic, _)| start.starts_with(magic)) {
        return Some(what);
    }
    let text = match std::str::from_utf8(start) {
        Ok(t) => t,
        // The sample may end inside a multi-byte character.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&start[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return None,
    };
    if text.is_empty()
        || text
            .chars()
            .any(|c| c.is_control() && !c.is_ascii_whitespace())
    {
        return None;
    }
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        Some("a JSON file")
    } else if trimmed.starts_with('<') {
        Some("an XML or HTML file")
    } else {
        Some("a text file")
    }
}

/// Turns a truncation found while reading a record header or payload into an error.
pub(crate) fn truncated(
    offset: u64,
    kind: Option<RecordKind>,
    needed: usize,
    available: usize,
) -> ReadError {
    ReadError::Truncated {
        offset,
        kind,
        needed: needed as u64,
        available: available as u64,
    }
}

/// The error for a record that declares a payload longer than the limit.
pub(crate) fn payload_too_long(offset: u64, kind: RecordKind, len: u32) -> ReadError {
    ReadError::Corrupt {
        offset,
        reason: format!(
            "{} declares a payload of {len} bytes, more than the {} MiB limit",
            describe_kind(kind),
            crate::MAX_PAYLOAD_LEN >> 20
        ),
    }
}

/// Bytes a record header says the whole record needs.
pub(crate) fn record_len(payload_len: u32) -> usize {
    RECORD_HEADER_LEN + payload_len as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses() {
        assert_eq!(
            guess_format(&[0x1f, 0x8b, 8, 0]),
            Some("a gzip file; decompress it first")
        );
        assert_eq!(guess_format(b"  {\"a\": 1}"), Some("a JSON file"));
        assert_eq!(guess_format(b"hello, world\n"), Some("a text file"));
        assert_eq!(
            guess_format("héllo wörld, ça".as_bytes()[..16].as_ref()),
            Some("a text file")
        );
        assert_eq!(guess_format(&[0, 1, 2, 3]), None);
        assert_eq!(guess_format(&[]), None);
    }

    #[test]
    fn messages() {
        let e = ReadError::not_a_trace(b"hello, world, this is text");
        assert_eq!(
            e.to_string(),
            "not a clrprof trace: it starts with 68 65 6c 6c 6f 2c 20 77 (\"hello, w\"); this looks \
             like a text file"
        );
        let e = ReadError::not_a_trace(&[]);
        assert_eq!(e.to_string(), "not a clrprof trace: the input is empty");
        let e = ReadError::UnsupportedVersion { major: 4, minor: 0 };
        assert!(
            e.to_string().contains(
                "written by a newer clrprof (format 4.0); this one reads 1.x, 2.x and 3.x"
            ),
            "{e}"
        );
        let e = ReadError::Damaged {
            offset: 100,
            len: 50,
            blocks: Some(1),
            records: Some(12),
            time_range: Some((1_200_000_000, 1_450_000_000)),
        };
        assert_eq!(
            e.to_string(),
            "damaged trace: bytes 100 to 149 fail their checksum and were skipped (1 block, 12 \
             records, recorded from 1.20 s to 1.45 s)"
        );
        let e = truncated(24, Some(RecordKind::EVENT), 30, 12);
        assert_eq!(
            e.to_string(),
            "truncated trace: the Event record (kind 32) at byte 24 needs 30 bytes, but only 12 are left"
        );
        let e = truncated(0, None, 16, 3);
        assert_eq!(
            e.to_string(),
            "truncated trace: the file header at byte 0 needs 16 bytes, but only 3 are left"
        );
    }
}
