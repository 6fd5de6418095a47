//! Decoding a trace that arrives in pieces.

use crate::error::{payload_too_long, record_len, truncated};
use crate::{
    HEADER_LEN, Header, MAX_PAYLOAD_LEN, RECORD_HEADER_LEN, ReadError, Record, RecordKind,
};

/// Decodes a trace that arrives in pieces, such as the agent's stream on the CLI's socket.
///
/// [`push`](Self::push) the bytes as they arrive, then call
/// [`next_record`](Self::next_record) until it returns `None`: each complete record comes back
/// both decoded and as the exact bytes it was encoded as (to copy into the trace file). An
/// incomplete record stays buffered until the rest arrives. When the stream ends,
/// [`finish`](Self::finish) tells whether an incomplete header or record was left over.
///
/// The header is checked first: a stream that is not a trace, or is of an unsupported major
/// version, fails as soon as enough bytes have arrived to tell. A stream is records one after
/// another (major version 1); a file in checksummed blocks (major version 2) is refused.
///
/// ```
/// use clrprof_trace::{Event, EventKind, Record, StreamDecoder, Writer};
///
/// let mut writer = Writer::new(Vec::new()).unwrap();
/// let event = Record::Event(Event::new(5, 1, EventKind::SHUTDOWN, &[]));
/// writer.write(&event).unwrap();
/// let bytes = writer.into_inner();
///
/// let mut decoder = StreamDecoder::new();
/// let mut records = Vec::new();
/// for piece in bytes.chunks(3) {
///     decoder.push(piece);
///     while let Some(raw) = decoder.next_record() {
///         records.push(raw.unwrap().record);
///     }
/// }
/// decoder.finish().unwrap();
/// assert_eq!(records, [event]);
/// ```
#[derive(Debug, Default)]
pub struct StreamDecoder {
    /// Bytes not yet consumed start at `buf[pos]`.
    buf: Vec<u8>,
    pos: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    header: Option<Header>,
    failed: bool,
}

/// A complete record taken from a [`StreamDecoder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Byte offset of the record in the stream (the header counts: the first record is at 16).
    pub offset: u64,
    /// The record's kind.
    pub kind: RecordKind,
    /// The whole record as it arrived: record header and payload.
    pub bytes: &'a [u8],
    /// The payload alone.
    pub payload: &'a [u8],
    /// The decoded record.
    pub record: Record,
    /// The header of the stream the record came from (what [`StreamDecoder::header`] says,
    /// at hand while the record borrows the decoder): a copy of the stream writes it first.
    pub header: Header,
}

impl StreamDecoder {
    /// A decoder that expects the stream to start with a header.
    pub fn new() -> StreamDecoder {
        StreamDecoder::default()
    }

    /// Appends bytes that arrived. Ignored after a fatal error.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed {
            return;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The stream's header, once it has arrived and been accepted.
    pub fn header(&self) -> Option<Header> {
        self.header
    }

    /// Stream offset of the first byte not yet taken: the next record's offset.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes pushed but not yet taken as a header or a record.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether a fatal error was returned: the stream cannot be decoded further.
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// The next complete record, `None` if none is complete yet (or after a fatal error).
    ///
    /// An `Err` is fatal (later calls return `None`) unless it is a [`ReadError::Corrupt`]
    /// payload of a well-framed record, in which case that record is skipped and the next call
    /// goes on with the following one. A declared payload length over [`MAX_PAYLOAD_LEN`] is
    /// fatal too.
    pub fn next_record(&mut self) -> Option<Result<RawRecord<'_>, ReadError>> {
        if self.failed {
            return None;
        }
        if self.header.is_none() {
            let avail = &self.buf[self.pos..];
            if avail.len() < HEADER_LEN {
                if !avail.is_empty() && !Header::may_start_trace(avail) {
                    self.failed = true;
                    return Some(Err(ReadError::not_a_trace(avail)));
                }
                return None;
            }
            match Header::parse(&avail[..HEADER_LEN]) {
                Ok(h) if h.blocked() => {
                    self.failed = true;
                    return Some(Err(ReadError::Corrupt {
                        offset: 0,
                        reason: format!(
                            "a trace file in checksummed blocks (format {}.{}) is not a record \
                             stream; read it with a Reader",
                            h.major, h.minor
                        ),
                    }));
                }
                Ok(h) => {
                    self.header = Some(h);
                    self.pos += HEADER_LEN;
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }

        let header = self.header?;
        let start = self.pos;
        let offset = self.offset();
        let avail = &self.buf[start..];
        let head = avail.get(..RECORD_HEADER_LEN)?;
        let kind = RecordKind(u16::from_le_bytes([head[0], head[1]]));
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len as usize > MAX_PAYLOAD_LEN {
            self.failed = true;
            return Some(Err(payload_too_long(offset, kind, len)));
        }
        let end = start + record_len(len);
        if self.buf.len() < end {
            return None;
        }
        self.pos = end;
        let bytes = &self.buf[start..end];
        let payload = &bytes[RECORD_HEADER_LEN..];
        Some(
            Record::decode(kind, payload, offset).map(|record| RawRecord {
                offset,
                kind,
                bytes,
                payload,
                record,
                header,
            }),
        )
    }

    /// Checks that the stream ended cleanly; call it once [`next_record`](Self::next_record)
    /// has returned `None` at the end of the stream.
    ///
    /// Returns [`ReadError::Truncated`] if part of a header or record was left over. An empty
    /// stream, or one that ends between records, is fine. After a fatal error (already
    /// reported by `next_record`) this returns `Ok`.
    pub fn finish(&self) -> Result<(), ReadError> {
        let left = self.pending();
        if self.failed || left == 0 {
            return Ok(());
        }
        let offset = self.offset();
        if self.header.is_none() {
            return Err(truncated(offset, None, HEADER_LEN, left));
        }
        let avail = &self.buf[self.pos..];
        match avail.get(..RECORD_HEADER_LEN) {
            None => Err(truncated(offset, None, RECORD_HEADER_LEN, left)),
            Some(head) => {
                let kind = RecordKind(u16::from_le_bytes([head[0], head[1]]));
                let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
                Err(truncated(offset, Some(kind), record_len(len), left))
            }
        }
    }
}
