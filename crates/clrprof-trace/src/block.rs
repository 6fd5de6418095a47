//! Checksummed blocks: how a trace file of format 2.x holds its records.
//!
//! A file of major version 2 is the 16-byte header followed by blocks. Each block is a
//! 40-byte block header and a payload of whole records, encoded exactly as in a 1.x stream.
//! The block header carries a CRC-32 of the payload and one of itself, so that a reader can
//! tell a damaged block from a good one, skip it, and find the next good block after damage
//! that hit a block header (by its sync bytes and its own checksum).

use std::io::{self, Write};

use crate::{
    BLOCKED_MAJOR, Header, MAX_PAYLOAD_LEN, RECORD_HEADER_LEN, Record, SECTIONED_MAJOR, Section,
};

/// The 4 bytes every block starts with: `"CLRB"`.
pub const BLOCK_SYNC: [u8; 4] = *b"CLRB";
/// Size of a block header in bytes.
pub const BLOCK_HEADER_LEN: usize = 40;
/// The payload size at which [`BlockWriter`] closes a block (64 KiB): a block is at most this
/// long unless a single record is longer.
pub const BLOCK_TARGET_LEN: usize = 64 << 10;
/// The longest payload a block may have: one record of the largest size (after the `Section`
/// record that begins a block of a 3.x file).
pub const MAX_BLOCK_LEN: usize = MAX_PAYLOAD_LEN + RECORD_HEADER_LEN + SECTION_RECORD_LEN;

/// The length of an encoded `Section` record, which begins each block of a 3.x file.
const SECTION_RECORD_LEN: usize = RECORD_HEADER_LEN + 4;

/// A block's header: what the block holds, and the checksums that prove it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BlockHeader {
    /// The block's number in the file, from 0 and without gaps.
    pub seq: u32,
    /// Payload length in bytes.
    pub len: u32,
    /// Number of records in the payload.
    pub records: u32,
    /// The smallest `ts` of the block's records that have one (0 if none has).
    pub first_ts: u64,
    /// The largest `ts` of the block's records that have one (0 if none has).
    pub last_ts: u64,
    /// CRC-32 (IEEE) of the payload.
    pub crc: u32,
}

impl BlockHeader {
    /// The header's 40 bytes, its own checksum last.
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut out = [0u8; BLOCK_HEADER_LEN];
        out[0..4].copy_from_slice(&BLOCK_SYNC);
        out[4..8].copy_from_slice(&self.seq.to_le_bytes());
        out[8..12].copy_from_slice(&self.len.to_le_bytes());
        out[12..16].copy_from_slice(&self.records.to_le_bytes());
        out[16..24].copy_from_slice(&self.first_ts.to_le_bytes());
        out[24..32].copy_from_slice(&self.last_ts.to_le_bytes());
        out[32..36].copy_from_slice(&self.crc.to_le_bytes());
        let own = crc32fast::hash(&out[..36]);
        out[36..40].copy_from_slice(&own.to_le_bytes());
        out
    }

    /// Reads a block header; `None` unless the sync bytes and the header's own checksum are
    /// right and the length is within [`MAX_BLOCK_LEN`].
    pub fn parse(bytes: &[u8]) -> Option<BlockHeader> {
        let b = bytes.get(..BLOCK_HEADER_LEN)?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        if b[..4] != BLOCK_SYNC || crc32fast::hash(&b[..36]) != u32_at(36) {
            return None;
        }
        let header = BlockHeader {
            seq: u32_at(4),
            len: u32_at(8),
            records: u32_at(12),
            first_ts: u64_at(16),
            last_ts: u64_at(24),
            crc: u32_at(32),
        };
        (header.len as usize <= MAX_BLOCK_LEN).then_some(header)
    }

    /// Whether `payload` is what this header's checksum says.
    pub fn checks(&self, payload: &[u8]) -> bool {
        payload.len() == self.len as usize && crc32fast::hash(payload) == self.crc
    }

    /// The time range of the block's timed records, if it has any.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        (self.first_ts != 0 || self.last_ts != 0).then_some((self.first_ts, self.last_ts))
    }
}

/// Writes a trace file in checksummed blocks (format 2.x): the header, then blocks of whole
/// records.
///
/// Records collect in a block until it would pass [`BLOCK_TARGET_LEN`]; [`seal`](Self::seal)
/// writes the block out earlier (the CLI seals at least every few hundred milliseconds, so that
/// a killed recording loses little). Everything written before the last successful `seal` (and
/// flush of the underlying writer) reads back, whatever happens to the process afterwards.
///
/// ```
/// use clrprof_trace::{BlockWriter, Event, EventKind, Reader, Record};
///
/// let mut writer = BlockWriter::new(Vec::new()).unwrap();
/// let event = Record::Event(Event::new(1_000, 42, EventKind::SHUTDOWN, &[]));
/// writer.write(&event).unwrap();
/// let bytes = writer.finish().unwrap();
///
/// let mut reader = Reader::new(&bytes[..]).unwrap();
/// assert_eq!(reader.header().major, 2);
/// assert_eq!(reader.next().unwrap().unwrap(), event);
/// ```
pub struct BlockWriter<W: Write> {
    inner: W,
    header: Header,
    payload: Vec<u8>,
    records: u32,
    first_ts: u64,
    last_ts: u64,
    seq: u32,
    sealed_len: u64,
    scratch: Vec<u8>,
    /// In a file of major version 3, the process of the current block.
    section: Option<u32>,
}

impl<W: Write> BlockWriter<W> {
    /// Writes [`Header::FILE`] to `inner`.
    pub fn new(inner: W) -> io::Result<BlockWriter<W>> {
        BlockWriter::with_header(inner, Header::FILE)
    }

    /// Writes the header of version 2 with `minor`, the minor version of the records that will
    /// be written (the CLI copies the agent's stream's minor version).
    pub fn with_minor(inner: W, minor: u16) -> io::Result<BlockWriter<W>> {
        BlockWriter::with_header(
            inner,
            Header {
                major: BLOCKED_MAJOR,
                minor,
                flags: 0,
            },
        )
    }

    /// Writes the header of version 3 with `minor`: a trace of several processes, in which
    /// every block begins with a [`Section`] record naming its process. Say which process
    /// the next records belong to with [`section`](Self::section) (process 1 until then).
    pub fn sectioned(inner: W, minor: u16) -> io::Result<BlockWriter<W>> {
        let mut w = BlockWriter::with_header(
            inner,
            Header {
                major: SECTIONED_MAJOR,
                minor,
                flags: 0,
            },
        )?;
        w.section = Some(1);
        Ok(w)
    }

    /// In a file of major version 3, makes the records written next belong to `process`:
    /// the current block is written out first if it holds another process's records.
    /// Nothing in a file of another version.
    pub fn section(&mut self, process: u32) -> io::Result<()> {
        let Some(current) = self.section else {
            return Ok(());
        };
        if current != process {
            self.seal()?;
            self.section = Some(process);
        }
        Ok(())
    }

    fn with_header(mut inner: W, header: Header) -> io::Result<BlockWriter<W>> {
        let bytes = header.to_bytes();
        inner.write_all(&bytes)?;
        Ok(BlockWriter {
            inner,
            header,
            payload: Vec::with_capacity(BLOCK_TARGET_LEN),
            records: 0,
            first_ts: 0,
            last_ts: 0,
            seq: 0,
            sealed_len: bytes.len() as u64,
            scratch: Vec::new(),
            section: None,
        })
    }

    /// The file's header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Adds one record to the current block.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        record.encode(&mut scratch);
        let result = self.write_raw(&scratch, record.ts());
        self.scratch = scratch;
        result
    }

    /// Adds one encoded record (its header and payload, as [`crate::RawRecord::bytes`]) whose
    /// timestamp is `ts` to the current block; the block is written out first if the record
    /// would make it longer than [`BLOCK_TARGET_LEN`].
    pub fn write_raw(&mut self, record: &[u8], ts: Option<u64>) -> io::Result<()> {
        if record.len() > MAX_BLOCK_LEN - SECTION_RECORD_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a record longer than the format allows",
            ));
        }
        if !self.payload.is_empty() && self.payload.len() + record.len() > BLOCK_TARGET_LEN {
            self.seal()?;
        }
        if let Some(process) = self.section
            && self.payload.is_empty()
        {
            Record::Section(Section { process }).encode(&mut self.payload);
            self.records += 1;
        }
        self.payload.extend_from_slice(record);
        self.records += 1;
        if let Some(ts) = ts {
            if self.first_ts == 0 && self.last_ts == 0 {
                self.first_ts = ts;
            }
            self.first_ts = self.first_ts.min(ts);
            self.last_ts = self.last_ts.max(ts);
        }
        Ok(())
    }

    /// Bytes of records waiting in the current block.
    pub fn pending(&self) -> usize {
        self.payload.len()
    }

    /// Writes the current block out (nothing if it is empty). On an error the block stays
    /// pending and the underlying writer may hold part of it: see [`sealed_len`](Self::sealed_len).
    pub fn seal(&mut self) -> io::Result<()> {
        if self.payload.is_empty() {
            return Ok(());
        }
        let header = BlockHeader {
            seq: self.seq,
            len: self.payload.len() as u32,
            records: self.records,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            crc: crc32fast::hash(&self.payload),
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(&header.to_bytes());
        self.scratch.extend_from_slice(&self.payload);
        self.inner.write_all(&self.scratch)?;
        self.sealed_len += self.scratch.len() as u64;
        self.seq += 1;
        self.payload.clear();
        self.records = 0;
        self.first_ts = 0;
        self.last_ts = 0;
        Ok(())
    }

    /// Bytes of the file that hold the header and the blocks written out in full: after a
    /// failed write, truncating the file to this length leaves a trace that ends cleanly
    /// between blocks.
    pub fn sealed_len(&self) -> u64 {
        self.sealed_len
    }

    /// Blocks written out so far.
    pub fn blocks(&self) -> u32 {
        self.seq
    }

    /// Flushes the underlying writer (without sealing the current block).
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The underlying writer, mutably.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Seals the last block, flushes, and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.seal()?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> std::fmt::Debug for BlockWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockWriter")
            .field("header", &self.header)
            .field("seq", &self.seq)
            .field("pending", &self.payload.len())
            .field("sealed_len", &self.sealed_len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectioned_blocks_begin_with_their_process() {
        use crate::{Event, EventKind, ReadError, Reader};
        let ev = |ts| Record::Event(Event::new(ts, 7, EventKind::SHUTDOWN, &[]));
        let mut w = BlockWriter::sectioned(Vec::new(), crate::FORMAT_MINOR).unwrap();
        w.write(&ev(1)).unwrap();
        w.section(2).unwrap();
        w.write(&ev(2)).unwrap();
        w.write(&ev(3)).unwrap();
        w.section(2).unwrap();
        w.write(&ev(4)).unwrap();
        w.section(1).unwrap();
        w.write(&ev(5)).unwrap();
        let bytes = w.finish().unwrap();
        let mut reader = Reader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header(), Header::SECTIONED);
        let got: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        let s = |process| Record::Section(Section { process });
        assert_eq!(got, [s(1), ev(1), s(2), ev(2), ev(3), ev(4), s(1), ev(5)]);
        assert_eq!(reader.block_stats().unwrap().good, 3);

        // A block that does not begin with its Section is left out, and reading goes on.
        let mut w = BlockWriter::with_header(Vec::new(), Header::SECTIONED).unwrap();
        w.write(&ev(1)).unwrap();
        w.seal().unwrap();
        w.section = Some(4);
        w.write(&ev(2)).unwrap();
        let bytes = w.finish().unwrap();
        let got: Vec<Result<Record, ReadError>> = Reader::new(&bytes[..]).unwrap().collect();
        assert_eq!(got.len(), 3, "{got:?}");
        let Err(ReadError::Corrupt { reason, .. }) = &got[0] else {
            panic!("{got:?}")
        };
        assert!(
            reason.contains(
                "a block of a 3.x file begins with the Event record (kind 32) instead of a Section"
            ),
            "{reason}"
        );
        assert_eq!(got[1].as_ref().unwrap(), &s(4));
        assert_eq!(got[2].as_ref().unwrap(), &ev(2));
    }

    #[test]
    fn header_round_trip_and_checks() {
        let h = BlockHeader {
            seq: 3,
            len: 100,
            records: 4,
            first_ts: 10,
            last_ts: 20,
            crc: 0xdead_beef,
        };
        let bytes = h.to_bytes();
        assert_eq!(&bytes[..4], b"CLRB");
        assert_eq!(BlockHeader::parse(&bytes), Some(h));
        for i in 0..BLOCK_HEADER_LEN {
            let mut bad = bytes;
            bad[i] ^= 0x10;
            assert_eq!(BlockHeader::parse(&bad), None, "byte {i} flipped");
        }
        assert_eq!(BlockHeader::parse(&bytes[..39]), None);
        let too_long = BlockHeader {
            len: MAX_BLOCK_LEN as u32 + 1,
            ..h
        };
        assert_eq!(BlockHeader::parse(&too_long.to_bytes()), None);
    }
}
