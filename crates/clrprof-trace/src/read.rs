//! Reading a trace file.

use std::io::{self, Read};

use crate::error::{payload_too_long, record_len, truncated};
use crate::{
    HEADER_LEN, Header, MAX_PAYLOAD_LEN, RECORD_HEADER_LEN, ReadError, Record, RecordKind,
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
/// The iterator ends at the end of the input. After an error it ends too, except after a
/// record whose payload is [`ReadError::Corrupt`] (too short for its kind, invalid UTF-8, too
/// many args): there the record framing is intact, and the next call goes on with the
/// following record.
///
/// Memory use is bounded by the largest record in the input (at most
/// [`MAX_PAYLOAD_LEN`] bytes), whatever the record headers claim.
pub struct Reader<R> {
    inner: R,
    header: Header,
    offset: u64,
    payload: Vec<u8>,
    done: bool,
    skipped: Vec<RecordKind>,
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

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn new(mut inner: R) -> Result<Reader<R>, ReadError> {
        let mut buf = [0u8; HEADER_LEN];
        let n = read_full(&mut inner, &mut buf)?;
        let header = Header::parse(&buf[..n])?;
        Ok(Reader {
            inner,
            header,
            offset: HEADER_LEN as u64,
            payload: Vec::new(),
            done: false,
            skipped: Vec::new(),
        })
    }

    /// The file's header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Byte offset of the next record in the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Records of these kinds are passed over without decoding their payloads: each comes
    /// out as [`Record::Unknown`] with its kind and an empty payload. For a reader that needs
    /// only a summary of bulky records (a heap snapshot's objects and roots).
    pub fn skip_payloads(&mut self, kinds: &[RecordKind]) {
        self.skipped = kinds.to_vec();
    }

    /// The underlying reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// The next record, or the error with whether reading must stop.
    fn read_record(&mut self) -> Option<Result<Record, (ReadError, bool)>> {
        let offset = self.offset;
        let mut head = [0u8; RECORD_HEADER_LEN];
        let n = match read_full(&mut self.inner, &mut head) {
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
            let got = match io::copy(&mut (&mut self.inner).take(u64::from(len)), &mut io::sink()) {
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
        let got = match (&mut self.inner)
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
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_record() {
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
