//! Writing a trace.

use std::io::{self, Write};

use crate::{Header, Record};

/// Writes the header this crate's format version uses ([`Header::CURRENT`]).
pub fn write_header(w: &mut impl Write) -> io::Result<()> {
    w.write_all(&Header::CURRENT.to_bytes())
}

/// Writes a trace: the header when created, then records.
///
/// Records are encoded into a buffer the writer keeps and reuses, then written with one
/// `write_all` each; wrap a file in a [`std::io::BufWriter`] to batch them.
pub struct Writer<W: Write> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Writes [`Header::CURRENT`] to `inner`.
    pub fn new(inner: W) -> io::Result<Writer<W>> {
        Writer::with_header(inner, Header::CURRENT)
    }

    /// Writes the given header to `inner`: for copying a stream whose header came from
    /// elsewhere (the CLI copies the agent's, which may be of a newer minor version).
    pub fn with_header(mut inner: W, header: Header) -> io::Result<Writer<W>> {
        inner.write_all(&header.to_bytes())?;
        Ok(Writer {
            inner,
            buf: Vec::new(),
        })
    }

    /// Writes one record.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        self.buf.clear();
        record.encode(&mut self.buf);
        self.inner.write_all(&self.buf)
    }

    /// Writes bytes that are already one or more encoded records, such as
    /// [`crate::RawRecord::bytes`].
    pub fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The underlying writer, mutably. Writing to it directly corrupts the trace unless what is
    /// written is whole records.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Returns the underlying writer (without flushing it).
    pub fn into_inner(self) -> W {
        self.inner
    }
}
