//! Little-endian values read from a byte slice, in order ([`Reader`]) or at an offset
//! ([`u16_at`], [`u32_at`], [`u64_at`]): never past the end (a value that is not whole is
//! `None`) and without allocating, so the agent can read event payloads on the thread the
//! runtime delivers them on.

/// The size of a pointer in the process that wrote some bytes (a payload's `win:Pointer`
/// fields, a stack's addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointerSize {
    /// 4 bytes.
    Four,
    /// 8 bytes.
    Eight,
}

impl PointerSize {
    /// This process's pointer size: the agent reads events of the process it is in.
    pub const NATIVE: PointerSize = if size_of::<usize>() == 4 {
        PointerSize::Four
    } else {
        PointerSize::Eight
    };

    /// The pointer size a stream declares in bytes: 4, else 8 (the size of every 64-bit
    /// runtime, and what a reader assumes when a stream does not say).
    pub fn from_bytes(bytes: u32) -> PointerSize {
        if bytes == 4 {
            PointerSize::Four
        } else {
            PointerSize::Eight
        }
    }

    /// The size in bytes.
    pub fn bytes(self) -> usize {
        match self {
            PointerSize::Four => 4,
            PointerSize::Eight => 8,
        }
    }
}

/// Reads values one after the other from a byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, pos: 0 }
    }

    /// A reader at offset `pos` of `bytes` (past the end: every read is `None`).
    pub fn at(bytes: &'a [u8], pos: usize) -> Reader<'a> {
        Reader { bytes, pos }
    }

    /// The offset of the next read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves to offset `pos` (past the end: every read is `None`).
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or(&[])
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let bytes = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(bytes)
    }

    /// The next `N` bytes, as an array.
    pub fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }

    /// A `u8`.
    pub fn u8(&mut self) -> Option<u8> {
        self.array().map(u8::from_le_bytes)
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    /// A little-endian IEEE 754 double.
    pub fn f64(&mut self) -> Option<f64> {
        self.u64().map(f64::from_bits)
    }

    /// A pointer of `size`, widened to 64 bits.
    pub fn pointer(&mut self, size: PointerSize) -> Option<u64> {
        match size {
            PointerSize::Four => self.u32().map(u64::from),
            PointerSize::Eight => self.u64(),
        }
    }

    /// A NUL-terminated UTF-16LE string: its bytes without the NUL (`None` if no NUL unit
    /// follows).
    pub fn utf16z(&mut self) -> Option<&'a [u8]> {
        let rest = self.bytes.get(self.pos..)?;
        let len = rest.chunks_exact(2).position(|unit| unit == [0, 0])? * 2;
        self.pos += len + 2;
        Some(&rest[..len])
    }

    /// Skips to the next multiple of `alignment` from the start of the slice (`None` if the
    /// padding is not there).
    pub fn align(&mut self, alignment: usize) -> Option<()> {
        let pad = (alignment - self.pos % alignment) % alignment;
        self.bytes(pad).map(|_| ())
    }
}

/// The little-endian `u16` at offset `at` of `bytes`, if it is whole.
pub fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Reader::at(bytes, at).u16()
}

/// The little-endian `u32` at offset `at` of `bytes`, if it is whole.
pub fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Reader::at(bytes, at).u32()
}

/// The little-endian `u64` at offset `at` of `bytes`, if it is whole.
pub fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Reader::at(bytes, at).u64()
}

/// UTF-16LE bytes decoded, with U+FFFD for each unpaired surrogate (and for an odd last
/// byte).
pub fn utf16_lossy(bytes: &[u8]) -> String {
    let units = bytes.chunks(2).map(|unit| match unit {
        [low, high] => u16::from_le_bytes([*low, *high]),
        _ => 0xFFFD,
    });
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_order_and_nothing_past_the_end() {
        let bytes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u8(), Some(1));
        assert_eq!(r.u16(), Some(0x0302));
        assert_eq!(r.u32(), Some(0x0706_0504));
        assert_eq!(r.position(), 7);
        assert_eq!(r.u64(), None, "7 bytes left is not a u64");
        assert_eq!(r.position(), 7, "a failed read moves nothing");
        assert_eq!(r.pointer(PointerSize::Four), Some(0x0b0a_0908));
        assert_eq!(r.rest(), [12, 13, 14]);
        assert_eq!(r.bytes(4), None);
        assert_eq!(r.bytes(3), Some(&[12, 13, 14][..]));
        assert_eq!(r.u8(), None);
        // A reader far past the end, or asked for an absurd length, reads nothing.
        assert_eq!(Reader::at(&bytes, usize::MAX).u8(), None);
        assert_eq!(Reader::at(&bytes, 1).bytes(usize::MAX), None);
        assert_eq!(Reader::at(&bytes, usize::MAX).rest(), [0u8; 0]);
    }

    #[test]
    fn values_at_an_offset() {
        let bytes = 0x1122_3344_5566_7788u64.to_le_bytes();
        assert_eq!(u16_at(&bytes, 6), Some(0x1122));
        assert_eq!(u16_at(&bytes, 7), None);
        assert_eq!(u32_at(&bytes, 4), Some(0x1122_3344));
        assert_eq!(u32_at(&bytes, usize::MAX - 1), None);
        assert_eq!(u64_at(&bytes, 0), Some(0x1122_3344_5566_7788));
        assert_eq!(u64_at(&bytes, 1), None);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.pointer(PointerSize::Eight), Some(0x1122_3344_5566_7788));
        assert_eq!(Reader::new(&2.5f64.to_le_bytes()).f64(), Some(2.5));
    }

    #[test]
    fn nul_terminated_utf16_strings() {
        let mut bytes: Vec<u8> = "Aé".encode_utf16().flat_map(u16::to_le_bytes).collect();
        bytes.extend([0, 0, 7]);
        let mut r = Reader::new(&bytes);
        let s = r.utf16z().unwrap();
        assert_eq!(utf16_lossy(s), "Aé");
        assert_eq!(r.position(), 6);
        assert_eq!(r.u8(), Some(7));
        // No NUL unit: no string, and the reader stays where it was.
        let mut r = Reader::new(&bytes[..4]);
        assert_eq!(r.utf16z(), None);
        assert_eq!(r.position(), 0);
        // A NUL split across two units is not one.
        let mut r = Reader::new(&[0x41, 0, 0, 0x42, 0, 0]);
        assert_eq!(r.utf16z(), Some(&[0x41, 0, 0, 0x42][..]));
        assert_eq!(utf16_lossy(&[0x00, 0xd8, 0x41]), "\u{fffd}\u{fffd}");
    }

    #[test]
    fn alignment_from_the_start_of_the_slice() {
        let bytes = [0u8; 9];
        let mut r = Reader::at(&bytes, 5);
        assert_eq!(r.align(4), Some(()));
        assert_eq!(r.position(), 8);
        assert_eq!(r.align(4), Some(()));
        assert_eq!(r.position(), 8);
        r.seek(9);
        assert_eq!(r.align(4), None, "the padding is not there");
    }

    #[test]
    fn pointer_sizes() {
        assert_eq!(PointerSize::from_bytes(4), PointerSize::Four);
        assert_eq!(PointerSize::from_bytes(8), PointerSize::Eight);
        assert_eq!(PointerSize::from_bytes(0), PointerSize::Eight);
        assert_eq!(PointerSize::NATIVE.bytes(), size_of::<usize>());
    }
}
