//! Little-endian field encoding and bounds-checked field decoding.

use crate::MAX_STR_LEN;

/// Somewhere encoded bytes go: a `Vec<u8>` or a fixed slice.
pub(crate) trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Writes into a fixed slice; remembers (instead of panicking) when the slice was too short.
pub(crate) struct SliceSink<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overflow: bool,
}

impl<'a> SliceSink<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        SliceSink {
            buf,
            pos: 0,
            overflow: false,
        }
    }

    /// Bytes written, or `None` if something did not fit.
    pub(crate) fn finish(self) -> Option<usize> {
        (!self.overflow).then_some(self.pos)
    }
}

impl Sink for SliceSink<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let Some(end) = self.pos.checked_add(bytes.len()) else {
            self.overflow = true;
            return;
        };
        match self.buf.get_mut(self.pos..end) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(bytes);
                self.pos = end;
            }
            _ => self.overflow = true,
        }
    }
}

/// `s`, cut at the last character boundary at or below [`MAX_STR_LEN`] bytes.
pub(crate) fn clip(s: &str) -> &str {
    if s.len() <= MAX_STR_LEN {
        return s;
    }
    let mut end = MAX_STR_LEN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Why a payload could not be decoded; turned into [`crate::ReadError::Corrupt`] by the caller,
/// which knows the record's offset in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldError {
    /// The payload ends inside `field`, which starts at payload offset `at`.
    Short {
        field: &'static str,
        at: usize,
        needed: usize,
        available: usize,
    },
    /// A string field is not UTF-8.
    Utf8 { field: &'static str, at: usize },
    /// A count is larger than the format allows.
    TooMany {
        field: &'static str,
        at: usize,
        count: u32,
        max: usize,
    },
}

impl FieldError {
    /// Payload offset the problem was found at.
    pub(crate) fn at(&self) -> usize {
        match *self {
            FieldError::Short { at, .. }
            | FieldError::Utf8 { at, .. }
            | FieldError::TooMany { at, .. } => at,
        }
    }

    pub(crate) fn describe(&self, payload_len: usize) -> String {
        match *self {
            FieldError::Short {
                field,
                at,
                needed,
                available,
            } => format!(
                "the payload ({payload_len} bytes) ends inside `{field}`: it needs {needed} bytes \
                 at payload offset {at}, {available} are left"
            ),
            FieldError::Utf8 { field, at } => {
                format!("`{field}` (payload offset {at}) is not valid UTF-8")
            }
            FieldError::TooMany {
                field,
                at,
                count,
                max,
            } => format!(
                "`{field}` (payload offset {at}) has {count} elements, more than the {max} allowed"
            ),
        }
    }
}

/// Reads fields from a payload front to back. Bytes left at the end are ignored: they are
/// fields added by a newer minor version.
pub(crate) struct Fields<'a> {
    payload: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(payload: &'a [u8]) -> Self {
        Fields { payload, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.payload.len().saturating_sub(self.pos)
    }

    /// True when every byte of the payload was read: a field added by a later minor version
    /// than the record's writer knew is absent.
    pub(crate) fn at_end(&self) -> bool {
        self.remaining() == 0
    }

    pub(crate) fn bytes(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], FieldError> {
        let at = self.pos;
        let available = self.remaining();
        if n > available {
            return Err(FieldError::Short {
                field,
                at,
                needed: n,
                available,
            });
        }
        let end = at + n;
        let out = self.payload.get(at..end).ok_or(FieldError::Short {
            field,
            at,
            needed: n,
            available,
        })?;
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], FieldError> {
        let b = self.bytes(field, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, FieldError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, FieldError> {
        self.array(field).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, FieldError> {
        self.array(field).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, FieldError> {
        self.array(field).map(u64::from_le_bytes)
    }

    pub(crate) fn i32(&mut self, field: &'static str) -> Result<i32, FieldError> {
        self.array(field).map(i32::from_le_bytes)
    }

    /// A `u32` element count for elements of `elem_size` bytes, checked against `max` and
    /// against the bytes that remain.
    pub(crate) fn count(
        &mut self,
        field: &'static str,
        elem_size: usize,
        max: usize,
    ) -> Result<usize, FieldError> {
        let at = self.pos;
        let count = self.u32(field)?;
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        if n > max {
            return Err(FieldError::TooMany {
                field,
                at,
                count,
                max,
            });
        }
        let needed = n.saturating_mul(elem_size);
        let available = self.remaining();
        if needed > available {
            return Err(FieldError::Short {
                field,
                at: self.pos,
                needed,
                available,
            });
        }
        Ok(n)
    }

    pub(crate) fn str(&mut self, field: &'static str) -> Result<String, FieldError> {
        let len_at = self.pos;
        let len = self.u32(field)?;
        let at = self.pos;
        let n = usize::try_from(len).unwrap_or(usize::MAX);
        let available = self.remaining();
        if n > available {
            return Err(FieldError::Short {
                field,
                at: len_at,
                needed: 4 + n,
                available: available + 4,
            });
        }
        let bytes = self.bytes(field, n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(FieldError::Utf8 { field, at }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_sink_reports_overflow() {
        let mut buf = [0u8; 3];
        let mut s = SliceSink::new(&mut buf);
        s.put(&[1, 2]);
        s.put(&[3, 4]);
        assert_eq!(s.finish(), None);
        let mut s = SliceSink::new(&mut buf);
        s.put(&[1, 2, 3]);
        assert_eq!(s.finish(), Some(3));
    }

    #[test]
    fn clip_cuts_at_a_char_boundary() {
        let s = "é".repeat(MAX_STR_LEN); // 2 bytes each
        let c = clip(&s);
        assert!(c.len() <= MAX_STR_LEN);
        assert_eq!(c.len(), MAX_STR_LEN);
        let s = format!("a{}", "é".repeat(MAX_STR_LEN / 2));
        let c = clip(&s);
        assert_eq!(c.len(), MAX_STR_LEN - 1);
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn fields_bound_counts_and_strings() {
        let mut f = Fields::new(&[0xff, 0xff, 0xff, 0xff, b'a']);
        assert!(matches!(f.str("name"), Err(FieldError::Short { .. })));
        let mut f = Fields::new(&[2, 0, 0, 0, 0xff, 0xfe]);
        assert!(matches!(f.str("name"), Err(FieldError::Utf8 { at: 4, .. })));
        let mut f = Fields::new(&[9, 0, 0, 0]);
        assert!(matches!(
            f.count("args", 8, 8),
            Err(FieldError::TooMany { count: 9, .. })
        ));
        let mut f = Fields::new(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(
            f.count("args", 8, 8),
            Err(FieldError::Short { needed: 16, .. })
        ));
    }
}
