//! The 16-byte file header.

use crate::error::truncated;
use crate::{
    BLOCKED_MAJOR, FORMAT_MAJOR, FORMAT_MINOR, HEADER_LEN, MAGIC, ReadError, SECTIONED_MAJOR,
};

/// The file header: magic, format version and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Major format version: readers refuse a major version they do not know.
    pub major: u16,
    /// Minor format version: a newer minor version of a known major is readable.
    pub minor: u16,
    /// Reserved, written as 0; readers ignore it.
    pub flags: u32,
}

impl Header {
    /// The header of a record stream this crate writes (major version 1: records one after
    /// another), what the agent sends to the CLI.
    pub const CURRENT: Header = Header {
        major: FORMAT_MAJOR,
        minor: FORMAT_MINOR,
        flags: 0,
    };

    /// The header of a trace file this crate writes (major version 2: the same records in
    /// checksummed blocks, see [`crate::BlockWriter`]).
    pub const FILE: Header = Header {
        major: BLOCKED_MAJOR,
        minor: FORMAT_MINOR,
        flags: 0,
    };

    /// The header of a trace file of a process tree this crate writes (major version 3:
    /// checksummed blocks, each beginning with a `Section` record).
    pub const SECTIONED: Header = Header {
        major: SECTIONED_MAJOR,
        minor: FORMAT_MINOR,
        flags: 0,
    };

    /// Whether the records that follow the header are in checksummed blocks (major versions 2
    /// and 3).
    pub fn blocked(self) -> bool {
        self.major == BLOCKED_MAJOR || self.major == SECTIONED_MAJOR
    }

    /// Whether every block begins with a `Section` record naming its process (major 3).
    pub fn sectioned(self) -> bool {
        self.major == SECTIONED_MAJOR
    }

    /// The header's 16 bytes.
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..8].copy_from_slice(&MAGIC);
        out[8..10].copy_from_slice(&self.major.to_le_bytes());
        out[10..12].copy_from_slice(&self.minor.to_le_bytes());
        out[12..16].copy_from_slice(&self.flags.to_le_bytes());
        out
    }

    /// Checks the start of a trace: `bytes` holds the first bytes of the input (all of them if
    /// the input is shorter than 16 bytes; more are ignored).
    ///
    /// Fails with [`ReadError::NotATrace`] if the magic differs (as far as `bytes` goes),
    /// [`ReadError::Truncated`] if `bytes` is a correct but incomplete start, and
    /// [`ReadError::UnsupportedVersion`] for a major version other than [`FORMAT_MAJOR`],
    /// [`BLOCKED_MAJOR`] and [`SECTIONED_MAJOR`].
    pub fn parse(bytes: &[u8]) -> Result<Header, ReadError> {
        let magic_part = &bytes[..bytes.len().min(MAGIC.len())];
        if bytes.is_empty() || magic_part != &MAGIC[..magic_part.len()] {
            return Err(ReadError::not_a_trace(bytes));
        }
        let Some(h) = bytes.get(..HEADER_LEN) else {
            return Err(truncated(0, None, HEADER_LEN, bytes.len()));
        };
        let header = Header {
            major: u16::from_le_bytes([h[8], h[9]]),
            minor: u16::from_le_bytes([h[10], h[11]]),
            flags: u32::from_le_bytes([h[12], h[13], h[14], h[15]]),
        };
        if ![FORMAT_MAJOR, BLOCKED_MAJOR, SECTIONED_MAJOR].contains(&header.major) {
            return Err(ReadError::UnsupportedVersion {
                major: header.major,
                minor: header.minor,
            });
        }
        Ok(header)
    }

    /// Whether `bytes`, the first bytes of an input, can still be the start of a trace: they are
    /// a prefix of the magic, or begin with it.
    pub(crate) fn may_start_trace(bytes: &[u8]) -> bool {
        let n = bytes.len().min(MAGIC.len());
        bytes[..n] == MAGIC[..n]
    }
}

impl Default for Header {
    fn default() -> Self {
        Header::CURRENT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let bytes = Header::CURRENT.to_bytes();
        assert_eq!(&bytes, b"CLRPROF\0\x01\x00\x0a\x00\x00\x00\x00\x00");
        assert_eq!(Header::parse(&bytes).unwrap(), Header::CURRENT);
        let newer_minor = Header {
            minor: 11,
            ..Header::CURRENT
        };
        assert_eq!(Header::parse(&newer_minor.to_bytes()).unwrap(), newer_minor);
        assert_eq!(
            Header::parse(&Header::FILE.to_bytes()).unwrap(),
            Header::FILE
        );
        assert!(Header::FILE.blocked() && !Header::CURRENT.blocked());
        assert!(!Header::FILE.sectioned());
        assert_eq!(
            Header::parse(&Header::SECTIONED.to_bytes()).unwrap(),
            Header::SECTIONED
        );
        assert!(Header::SECTIONED.blocked() && Header::SECTIONED.sectioned());
        let v4 = Header {
            major: 4,
            minor: 0,
            ..Header::CURRENT
        };
        assert!(matches!(
            Header::parse(&v4.to_bytes()),
            Err(ReadError::UnsupportedVersion { major: 4, minor: 0 })
        ));
        assert!(matches!(
            Header::parse(b"CLRP"),
            Err(ReadError::Truncated {
                needed: 16,
                available: 4,
                ..
            })
        ));
        assert!(matches!(
            Header::parse(b"CLRX"),
            Err(ReadError::NotATrace { .. })
        ));
        assert!(matches!(
            Header::parse(b""),
            Err(ReadError::NotATrace { .. })
        ));
    }
}
