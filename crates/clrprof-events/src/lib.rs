//! What the .NET runtime says, read one way wherever it is read: the agent reads the runtime's
//! events in process (an EventPipe session of its own, .NET 5 and later), the CLI reads the
//! same events over the diagnostics socket (CoreCLR 3.1), and both name what the events name
//! as C# does.
//!
//! - This module: the runtime's event providers, the keywords and levels clrprof enables, and
//!   the [`Payload`] trait of the typed payload views.
//! - [`gc`]: `GCAllocationTick`; [`contention`]: `ContentionStart` and `ContentionStop`;
//!   [`rundown`]: `MethodDCEndVerbose`. Each view reads every field of every version the
//!   runtimes send by its manifest name (the runtime's `ClrEtwAll.man`), and refuses a
//!   payload too short for its version with a [`PayloadError`] that names the missing field.
//! - [`csharp`]: the C# spelling of a type, from metadata (the SDK's names) or from the names
//!   the runtime writes into its events (the CLI's), so that a type or a frame has one name
//!   whichever path delivered it.
//! - [`bytes`]: the little-endian reader every crate that parses bytes uses.
//!
//! Nothing here allocates to read a payload: the agent reads them on the thread the runtime
//! delivers them on, inside an allocation or a lock wait.
#![forbid(unsafe_code)]

pub mod bytes;
pub mod contention;
pub mod csharp;
pub mod gc;
pub mod rundown;

use std::fmt;

pub use bytes::PointerSize;

/// The runtime's event provider.
pub const RUNTIME_PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
/// The provider of the rundown the runtime writes when a session ends (every method's code
/// range and names).
pub const RUNDOWN_PROVIDER: &str = "Microsoft-Windows-DotNETRuntimeRundown";

/// Keywords of the runtime provider.
pub mod keyword {
    /// `GCKeyword`: garbage collections and, at verbose level, the allocation ticks.
    pub const GC: u64 = 0x1;
    /// `ContentionKeyword`: contended `Monitor.Enter`s.
    pub const CONTENTION: u64 = 0x4000;
}

/// Event levels (`win:Informational` ...), as sessions ask for them.
pub mod level {
    /// `win:Informational`: the contention events.
    pub const INFORMATIONAL: u32 = 4;
    /// `win:Verbose`: everything, `GCAllocationTick` included.
    pub const VERBOSE: u32 = 5;
}

/// A typed view of one event's payload.
pub trait Payload<'a>: Sized {
    /// The provider that writes the event.
    const PROVIDER: &'static str;
    /// The event's id within its provider (the same for every version).
    const EVENT_ID: u32;
    /// The event's name in the manifest.
    const NAME: &'static str;

    /// Reads the payload of an event of `version`, written by a process whose pointers are
    /// `pointer` bytes.
    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError>;

    /// Whether an event of `provider` and `event_id` is this one.
    fn is(provider: &str, event_id: u32) -> bool {
        event_id == Self::EVENT_ID && provider == Self::PROVIDER
    }
}

/// Why a payload could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadError {
    /// The event.
    pub event: &'static str,
    /// The payload's version.
    pub version: u32,
    /// What is wrong with it.
    pub kind: PayloadErrorKind,
}

/// What is wrong with a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadErrorKind {
    /// The payload ends before this field of its version.
    Missing(&'static str),
    /// This version lacks the fields clrprof reads (e.g. a `GCAllocationTick` before version
    /// 2 names no type).
    TooOld,
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            PayloadErrorKind::Missing(field) => write!(
                f,
                "{} version {}: the payload ends before its field {field}",
                self.event, self.version
            ),
            PayloadErrorKind::TooOld => write!(
                f,
                "{} version {} lacks the fields clrprof reads",
                self.event, self.version
            ),
        }
    }
}

impl std::error::Error for PayloadError {}

/// A NUL-terminated UTF-16 string of a payload (`win:UnicodeString`), without its NUL and
/// not decoded: decoding allocates, and the agent reads payloads where it must not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Utf16<'a>(&'a [u8]);

impl<'a> Utf16<'a> {
    /// The UTF-16LE bytes.
    pub fn bytes(self) -> &'a [u8] {
        self.0
    }

    /// The string, with U+FFFD for what is not UTF-16.
    pub fn to_string_lossy(self) -> String {
        bytes::utf16_lossy(self.0)
    }
}

impl fmt::Debug for Utf16<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string_lossy(), f)
    }
}

/// Reads the fields of one payload in order, naming the one that is missing.
pub(crate) struct Fields<'a> {
    reader: bytes::Reader<'a>,
    event: &'static str,
    version: u32,
    pointer: PointerSize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new<P: Payload<'a>>(
        version: u32,
        payload: &'a [u8],
        pointer: PointerSize,
    ) -> Fields<'a> {
        Fields {
            reader: bytes::Reader::new(payload),
            event: P::NAME,
            version,
            pointer,
        }
    }

    pub(crate) fn error(&self, kind: PayloadErrorKind) -> PayloadError {
        PayloadError {
            event: self.event,
            version: self.version,
            kind,
        }
    }

    fn field<T>(&self, value: Option<T>, name: &'static str) -> Result<T, PayloadError> {
        value.ok_or_else(|| self.error(PayloadErrorKind::Missing(name)))
    }

    pub(crate) fn u8(&mut self, name: &'static str) -> Result<u8, PayloadError> {
        let v = self.reader.u8();
        self.field(v, name)
    }

    pub(crate) fn u16(&mut self, name: &'static str) -> Result<u16, PayloadError> {
        let v = self.reader.u16();
        self.field(v, name)
    }

    pub(crate) fn u32(&mut self, name: &'static str) -> Result<u32, PayloadError> {
        let v = self.reader.u32();
        self.field(v, name)
    }

    pub(crate) fn u64(&mut self, name: &'static str) -> Result<u64, PayloadError> {
        let v = self.reader.u64();
        self.field(v, name)
    }

    pub(crate) fn f64(&mut self, name: &'static str) -> Result<f64, PayloadError> {
        let v = self.reader.f64();
        self.field(v, name)
    }

    /// A `win:Pointer`.
    pub(crate) fn pointer(&mut self, name: &'static str) -> Result<u64, PayloadError> {
        let v = self.reader.pointer(self.pointer);
        self.field(v, name)
    }

    /// An array of `count` `win:UInt32`s, as its bytes.
    pub(crate) fn u32s(
        &mut self,
        count: usize,
        name: &'static str,
    ) -> Result<&'a [u8], PayloadError> {
        let v = count.checked_mul(4).and_then(|n| self.reader.bytes(n));
        self.field(v, name)
    }

    /// A `win:UnicodeString`.
    pub(crate) fn string(&mut self, name: &'static str) -> Result<Utf16<'a>, PayloadError> {
        let v = self.reader.utf16z().map(Utf16);
        self.field(v, name)
    }
}

#[cfg(test)]
pub(crate) mod test_payloads {
    //! Payloads written field by field, as the runtime writes them.

    /// A payload under construction.
    #[derive(Default)]
    pub(crate) struct Writer(pub(crate) Vec<u8>);

    impl Writer {
        pub(crate) fn u8(mut self, v: u8) -> Writer {
            self.0.push(v);
            self
        }
        pub(crate) fn u16(mut self, v: u16) -> Writer {
            self.0.extend(v.to_le_bytes());
            self
        }
        pub(crate) fn u32(mut self, v: u32) -> Writer {
            self.0.extend(v.to_le_bytes());
            self
        }
        pub(crate) fn u64(mut self, v: u64) -> Writer {
            self.0.extend(v.to_le_bytes());
            self
        }
        pub(crate) fn string(mut self, s: &str) -> Writer {
            self.0.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
            self.0.extend([0, 0]);
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_event_its_version_and_the_missing_field() {
        let e = PayloadError {
            event: "GCAllocationTick",
            version: 3,
            kind: PayloadErrorKind::Missing("TypeName"),
        };
        assert_eq!(
            e.to_string(),
            "GCAllocationTick version 3: the payload ends before its field TypeName"
        );
        let e = PayloadError {
            kind: PayloadErrorKind::TooOld,
            version: 1,
            ..e
        };
        assert_eq!(
            e.to_string(),
            "GCAllocationTick version 1 lacks the fields clrprof reads"
        );
    }

    #[test]
    fn strings_decode_lossily_and_only_when_asked() {
        let s = Utf16(&[0x41, 0, 0x00, 0xd8]);
        assert_eq!(s.bytes(), [0x41, 0, 0x00, 0xd8]);
        assert_eq!(s.to_string_lossy(), "A\u{fffd}");
        assert_eq!(format!("{s:?}"), "\"A\u{fffd}\"");
    }
}
