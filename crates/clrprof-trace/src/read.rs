//! Reading a trace file.

use std::io::{self, Read};

use crate::error::{payload_too_long, record_len, truncated};
use crate::{
    BLOCK_HEADER_LEN, BLOCK_SYNC, BlockHeader, HEADER_LEN, Header, MAX_PAYLOAD_LEN,
    RECORD_HEADER_LEN, ReadError, Record, RecordKind,
};

/// Reads a trace: checks the header, then yields one record at a time.
///
/// ```no_run
/// # fn main() -> Result<(), clrprof_trace::ReadError> {
/// let file = std::io::BufReader::new(std::fs::File::open("app.clrprof")?);
/// for record in clrprof_trace::Reader::new(file)? {
///     println!("{:?}", record?);
/// }
/// # Ok(())
/// # }
/// ```
///
/// It reads both framings: records one after another (major version 1, the agent's stream and
/// traces written before format 2) and records in checksummed blocks (major version 2, what
/// `clrprof record` writes; see [`crate::BlockWriter`]).
///
/// The iterator ends at the end of the input. After an error it ends too, except after an
/// error that leaves the framing intact, where the next call goes on:
///
/// - a record whose payload is [`ReadError::Corrupt`] (too short for its kind, invalid UTF-8,
///   too many args): the next call reads the following record;
/// - a block that fails its checksum, or a damaged stretch of blocks, [`ReadError::Damaged`]:
///   none of its records is returned, and the next call reads the next good block. Damage
///   that runs to the end of the input ends the iteration.
///
/// A trace in blocks that ends inside a block ends with [`ReadError::BlockTruncated`]: the
/// records of that block cannot be checked and are not returned.
///
/// Memory use is bounded by the largest record or block in the input (at most
/// [`crate::MAX_BLOCK_LEN`] bytes), whatever the headers claim, and every call makes progress
/// through the input, so that no input can make a reader loop forever.
pub struct Reader<R> {
    input: Input<R>,
    header: Header,
    /// File offset of the next byte `input` gives.
    offset: u64,
    payload: Vec<u8>,
    done: bool,
    blocks: Option<Blocks>,
    skipped: Vec<RecordKind>,
}

/// What a reader has seen of a trace in checksummed blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStats {
    /// Blocks that passed their checksum.
    pub good: u32,
    /// Blocks known to be lost (failed their checksum, or missing from the numbering).
    pub lost: u32,
    /// Bytes skipped as damaged.
    pub damaged_bytes: u64,
    /// Whether damage ran to the end of the input, so that blocks may be lost that the
    /// numbering cannot show.
    pub damaged_to_end: bool,
}

/// The reading state of a trace in blocks.
#[derive(Default)]
struct Blocks {
    /// The current block's payload, and the next record's place in it.
    data: Vec<u8>,
    pos: usize,
    /// File offset of `data[0]`.
    base: u64,
    /// The number the next block should have.
    next_seq: u32,
    stats: BlockStats,
}

/// A byte source that can take bytes back (to rescan them after a damaged block header).
struct Input<R> {
    inner: R,
    back: Vec<u8>,
    pos: usize,
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.back.len() {
            let n = buf.len().min(self.back.len() - self.pos);
            buf[..n].copy_from_slice(&self.back[self.pos..self.pos + n]);
            self.pos += n;
            if self.pos == self.back.len() {
                self.back.clear();
                self.pos = 0;
            }
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

impl<R> Input<R> {
    /// Puts `bytes` back: they are read again, before anything else.
    fn unread(&mut self, bytes: &[u8]) {
        let mut back = bytes.to_vec();
        back.extend_from_slice(&self.back[self.pos..]);
        self.back = back;
        self.pos = 0;
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k.min(buf.len() - n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A failure, with whether reading must stop.
type Failure = (ReadError, bool);

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn new(inner: R) -> Result<Reader<R>, ReadError> {
        let mut input = Input {
            inner,
            back: Vec::new(),
            pos: 0,
        };
        let mut buf = [0u8; HEADER_LEN];
        let n = read_full(&mut input, &mut buf)?;
        let header = Header::parse(&buf[..n])?;
        Ok(Reader {
            input,
            header,
            offset: HEADER_LEN as u64,
            payload: Vec::new(),
            done: false,
            blocks: header.blocked().then(Blocks::default),
            skipped: Vec::new(),
        })
    }

    /// The file's header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Byte offset of the next record in the file.
    pub fn offset(&self) -> u64 {
        match &self.blocks {
            Some(b) if b.pos < b.data.len() => b.base + b.pos as u64,
            _ => self.offset,
        }
    }

    /// Bytes of the input read so far (for a progress bar).
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }

    /// Records of these kinds are passed over without decoding their payloads: each comes
    /// out as [`Record::Unknown`] with its kind and an empty payload. For a reader that needs
    /// only a summary of bulky records (a heap snapshot's objects and roots).
    pub fn skip_payloads(&mut self, kinds: &[RecordKind]) {
        self.skipped = kinds.to_vec();
    }

    /// For a trace in checksummed blocks, what the reader has seen of its blocks so far.
    pub fn block_stats(&self) -> Option<BlockStats> {
        self.blocks.as_ref().map(|b| b.stats)
    }

    /// The underlying reader.
    pub fn into_inner(self) -> R {
        self.input.inner
    }

    /// The next record of a trace of records one after another.
    fn read_record(&mut self) -> Option<Result<Record, Failure>> {
        let offset = self.offset;
        let mut head = [0u8; RECORD_HEADER_LEN];
        let n = match read_full(&mut self.input, &mut head) {
            Ok(n) => n,
            Err(e) => return Some(Err((e.into(), true))),
        };
        if n == 0 {
            return None;
        }
        if n < RECORD_HEADER_LEN {
            return Some(Err((truncated(offset, None, RECORD_HEADER_LEN, n), true)));
        }
        let kind = RecordKind(u16::from_le_bytes([head[0], head[1]]));
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len as usize > MAX_PAYLOAD_LEN {
            return Some(Err((payload_too_long(offset, kind, len), true)));
        }
        if self.skipped.contains(&kind) {
            let got = match io::copy(&mut (&mut self.input).take(u64::from(len)), &mut io::sink()) {
                Ok(got) => got as usize,
                Err(e) => return Some(Err((e.into(), true))),
            };
            if got < len as usize {
                let e = truncated(offset, Some(kind), record_len(len), RECORD_HEADER_LEN + got);
                return Some(Err((e, true)));
            }
            self.offset += record_len(len) as u64;
            return Some(Ok(Record::Unknown {
                kind,
                payload: Vec::new(),
            }));
        }
        // `take` + `read_to_end` grows the buffer with the data actually present, so a bogus
        // length in a short file costs nothing.
        self.payload.clear();
        let got = match (&mut self.input)
            .take(u64::from(len))
            .read_to_end(&mut self.payload)
        {
            Ok(got) => got,
            Err(e) => return Some(Err((e.into(), true))),
        };
        if got < len as usize {
            let e = truncated(offset, Some(kind), record_len(len), RECORD_HEADER_LEN + got);
            return Some(Err((e, true)));
        }
        self.offset += record_len(len) as u64;
        Some(Record::decode(kind, &self.payload, offset).map_err(|e| (e, false)))
    }

    /// The next record of a trace in blocks.
    fn read_blocked(&mut self) -> Option<Result<Record, Failure>> {
        loop {
            let b = self.blocks.as_mut()?;
            if b.pos < b.data.len() {
                let offset = b.base + b.pos as u64;
                let rest = &b.data[b.pos..];
                let Some(head) = rest.get(..RECORD_HEADER_LEN) else {
                    b.pos = b.data.len();
                    let e = corrupt(offset, "a block ends inside a record header".into());
                    return Some(Err((e, false)));
                };
                let kind = RecordKind(u16::from_le_bytes([head[0], head[1]]));
                let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
                let Some(payload) = rest.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + len) else {
                    b.pos = b.data.len();
                    let e = corrupt(
                        offset,
                        format!(
                            "{} declares a payload of {len} bytes, more than its block holds",
                            crate::error::describe_kind(kind)
                        ),
                    );
                    return Some(Err((e, false)));
                };
                if b.pos == 0 && self.header.sectioned() && kind != RecordKind::SECTION {
                    // Whose records these are is unknown: none of them can be used.
                    b.pos = b.data.len();
                    let e = corrupt(
                        offset,
                        format!(
                            "a block of a {}.x file begins with {} instead of a Section \
                             record; its records are left out",
                            self.header.major,
                            crate::error::describe_kind(kind)
                        ),
                    );
                    return Some(Err((e, false)));
                }
                b.pos += RECORD_HEADER_LEN + len;
                if self.skipped.contains(&kind) {
                    return Some(Ok(Record::Unknown {
                        kind,
                        payload: Vec::new(),
                    }));
                }
                return Some(Record::decode(kind, payload, offset).map_err(|e| (e, false)));
            }
            match self.next_block()? {
                Ok(()) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Reads the next block into `blocks.data`; `None` at the end of the input.
    fn next_block(&mut self) -> Option<Result<(), Failure>> {
        let offset = self.offset;
        let mut head = [0u8; BLOCK_HEADER_LEN];
        let n = match read_full(&mut self.input, &mut head) {
            Ok(n) => n,
            Err(e) => return Some(Err((e.into(), true))),
        };
        self.offset += n as u64;
        if n == 0 {
            return None;
        }
        let parsed = BlockHeader::parse(&head[..n]);
        let Some(h) = parsed else {
            let sync = n.min(BLOCK_SYNC.len());
            if n < BLOCK_HEADER_LEN && head[..sync] == BLOCK_SYNC[..sync] {
                let e = ReadError::BlockTruncated {
                    offset,
                    seq: None,
                    needed: BLOCK_HEADER_LEN as u64,
                    available: n as u64,
                };
                return Some(Err((e, true)));
            }
            // A damaged block header: look for the next good one from the byte after it.
            self.input.unread(&head[1..n]);
            self.offset = offset + 1;
            return Some(Err(self.resync(offset)));
        };
        self.payload.clear();
        let got = match (&mut self.input)
            .take(u64::from(h.len))
            .read_to_end(&mut self.payload)
        {
            Ok(got) => got,
            Err(e) => return Some(Err((e.into(), true))),
        };
        self.offset += got as u64;
        if got < h.len as usize {
            let e = ReadError::BlockTruncated {
                offset,
                seq: Some(h.seq),
                needed: (BLOCK_HEADER_LEN + h.len as usize) as u64,
                available: (BLOCK_HEADER_LEN + got) as u64,
            };
            return Some(Err((e, true)));
        }
        let b = self.blocks.as_mut()?;
        let missing = h.seq.saturating_sub(b.next_seq);
        b.next_seq = h.seq.saturating_add(1);
        if !h.checks(&self.payload) {
            let len = (BLOCK_HEADER_LEN + h.len as usize) as u64;
            b.stats.lost += 1 + missing;
            b.stats.damaged_bytes += len;
            let e = ReadError::Damaged {
                offset,
                len,
                blocks: Some(1 + missing),
                records: Some(h.records),
                time_range: h.time_range(),
            };
            return Some(Err((e, false)));
        }
        std::mem::swap(&mut b.data, &mut self.payload);
        b.pos = 0;
        b.base = offset + BLOCK_HEADER_LEN as u64;
        b.stats.good += 1;
        if missing > 0 {
            // Blocks that are not there at all: the records of this one follow.
            b.stats.lost += missing;
            let e = ReadError::Damaged {
                offset,
                len: 0,
                blocks: Some(missing),
                records: None,
                time_range: None,
            };
            return Some(Err((e, false)));
        }
        Some(Ok(()))
    }

    /// Skips damaged bytes from `start` to the next good block header (which is read next).
    /// `self.offset` is the byte after `start`.
    fn resync(&mut self, start: u64) -> Failure {
        let next_seq = self.blocks.as_ref().map_or(0, |b| b.next_seq);
        let mut window: Vec<u8> = Vec::new();
        let mut window_at = self.offset;
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            let mut from = 0;
            let mut keep_from = window.len().saturating_sub(BLOCK_SYNC.len() - 1);
            while let Some(k) = window[from..]
                .windows(BLOCK_SYNC.len())
                .position(|w| w == BLOCK_SYNC)
            {
                let at = from + k;
                if window.len() - at < BLOCK_HEADER_LEN {
                    keep_from = at;
                    break;
                }
                if let Some(h) = BlockHeader::parse(&window[at..]).filter(|h| h.seq >= next_seq) {
                    self.input.unread(&window[at..]);
                    self.offset = window_at + at as u64;
                    let len = self.offset - start;
                    let lost = h.seq - next_seq;
                    if let Some(b) = self.blocks.as_mut() {
                        b.next_seq = h.seq;
                        b.stats.lost += lost;
                        b.stats.damaged_bytes += len;
                    }
                    let e = ReadError::Damaged {
                        offset: start,
                        len,
                        blocks: Some(lost),
                        records: None,
                        time_range: None,
                    };
                    return (e, false);
                }
                from = at + 1;
            }
            window.drain(..keep_from);
            window_at += keep_from as u64;
            let n = match read_full(&mut self.input, &mut chunk) {
                Ok(n) => n,
                Err(e) => return (e.into(), true),
            };
            self.offset += n as u64;
            if n == 0 {
                let len = self.offset - start;
                if let Some(b) = self.blocks.as_mut() {
                    b.stats.damaged_bytes += len;
                    b.stats.damaged_to_end = true;
                }
                let e = ReadError::Damaged {
                    offset: start,
                    len,
                    blocks: None,
                    records: None,
                    time_range: None,
                };
                return (e, true);
            }
            window.extend_from_slice(&chunk[..n]);
        }
    }
}

fn corrupt(offset: u64, reason: String) -> ReadError {
    ReadError::Corrupt { offset, reason }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = if self.blocks.is_some() {
            self.read_blocked()
        } else {
            self.read_record()
        };
        match next {
            None => {
                self.done = true;
                None
            }
            Some(Ok(record)) => Some(Ok(record)),
            Some(Err((e, fatal))) => {
                self.done = fatal;
                Some(Err(e))
            }
        }
    }
}

impl<R: Read> std::iter::FusedIterator for Reader<R> {}
