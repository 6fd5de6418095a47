//! Events of the runtime provider's `GCKeyword`:
//!
//! - `GCAllocationTick` (event 10, verbose): the runtime writes one each time it has handed
//!   out about 100 KiB on a heap since the previous one, naming the type of the object being
//!   allocated at that moment;
//! - `GCEnd` (event 2, informational): a collection ended. On Linux the GC reads which of its
//!   events are on only when it collects (CoreCLR 3.1 has no other way to tell it), so a
//!   session's allocation ticks begin after its first `GCEnd`.

use crate::{
    Fields, Payload, PayloadError, PayloadErrorKind, PointerSize, RUNTIME_PROVIDER, Utf16,
};

/// `AllocationKind` of `GCAllocationTick` (the manifest's `GCAllocationKindMap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationKind(pub u32);

impl AllocationKind {
    /// The small object heap.
    pub const SMALL: AllocationKind = AllocationKind(0);
    /// The large object heap.
    pub const LARGE: AllocationKind = AllocationKind(1);
    /// The pinned object heap (.NET 5 and later).
    pub const PINNED: AllocationKind = AllocationKind(2);
}

/// A `GCAllocationTick` payload. The manifest's templates:
///
/// - version 2: `AllocationAmount` u32, `AllocationKind` u32, `ClrInstanceID` u16,
///   `AllocationAmount64` u64, `TypeID` pointer, `TypeName` UTF-16 string, `HeapIndex` u32;
/// - version 3 (CoreCLR 3.1 sends it) adds `Address` (pointer);
/// - version 4 (.NET 7 and later; .NET 8.0.4 sends it) adds `ObjectSize` (u64).
///
/// Versions 0 and 1 name no type, so they are refused. A later version is read as version 4:
/// a new version of a runtime event appends its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationTick<'a> {
    version: u32,
    allocation_amount: u32,
    allocation_kind: AllocationKind,
    clr_instance_id: u16,
    allocation_amount64: u64,
    type_id: u64,
    type_name: Utf16<'a>,
    heap_index: u32,
    address: Option<u64>,
    object_size: Option<u64>,
}

impl<'a> Payload<'a> for AllocationTick<'a> {
    const PROVIDER: &'static str = RUNTIME_PROVIDER;
    const EVENT_ID: u32 = 10;
    const NAME: &'static str = "GCAllocationTick";

    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        if version < 2 {
            return Err(f.error(PayloadErrorKind::TooOld));
        }
        Ok(AllocationTick {
            version,
            allocation_amount: f.u32("AllocationAmount")?,
            allocation_kind: AllocationKind(f.u32("AllocationKind")?),
            clr_instance_id: f.u16("ClrInstanceID")?,
            allocation_amount64: f.u64("AllocationAmount64")?,
            type_id: f.pointer("TypeID")?,
            type_name: f.string("TypeName")?,
            heap_index: f.u32("HeapIndex")?,
            address: (version >= 3).then(|| f.pointer("Address")).transpose()?,
            object_size: (version >= 4).then(|| f.u64("ObjectSize")).transpose()?,
        })
    }
}

impl<'a> AllocationTick<'a> {
    /// The payload's version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// `AllocationAmount`: bytes since the previous tick, truncated to 32 bits.
    pub fn allocation_amount(&self) -> u32 {
        self.allocation_amount
    }

    /// `AllocationKind`: the heap of the allocation.
    pub fn allocation_kind(&self) -> AllocationKind {
        self.allocation_kind
    }

    /// `ClrInstanceID`: the runtime instance.
    pub fn clr_instance_id(&self) -> u16 {
        self.clr_instance_id
    }

    /// `AllocationAmount64`: bytes handed out on this heap since the previous tick, what the
    /// tick stands for.
    pub fn allocation_amount64(&self) -> u64 {
        self.allocation_amount64
    }

    /// `TypeID`: the allocated object's type, its `TypeHandle` (the profiling API's
    /// `ClassID`).
    pub fn type_id(&self) -> u64 {
        self.type_id
    }

    /// `TypeName`: the type as the runtime formats it (`System.Int32[]`,
    /// ``System.Collections.Generic.List`1[System.String]``; see
    /// [`csharp::runtime_type_name`](crate::csharp::runtime_type_name)).
    pub fn type_name(&self) -> Utf16<'a> {
        self.type_name
    }

    /// `HeapIndex`: the GC heap (0 with workstation GC).
    pub fn heap_index(&self) -> u32 {
        self.heap_index
    }

    /// `Address`: the object's address (version 3 and later).
    pub fn address(&self) -> Option<u64> {
        self.address
    }

    /// `ObjectSize`: the object's size in bytes (version 4 and later).
    pub fn object_size(&self) -> Option<u64> {
        self.object_size
    }
}

/// A `GCStart` payload: version 0 has `Count` u32 and `Reason` u32; version 1 (CoreCLR 3.1
/// writes version 2) `Count` u32, `Depth` u32, `Reason` u32, `Type` u32 and `ClrInstanceID`
/// u16; version 2 adds `ClientSequenceNumber` u64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcStart {
    count: u32,
    depth: Option<u32>,
    reason: u32,
}

impl<'a> Payload<'a> for GcStart {
    const PROVIDER: &'static str = RUNTIME_PROVIDER;
    const EVENT_ID: u32 = 1;
    const NAME: &'static str = "GCStart";

    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        let count = f.u32("Count")?;
        let depth = if version == 0 {
            None
        } else {
            Some(f.u32("Depth")?)
        };
        let reason = f.u32("Reason")?;
        Ok(GcStart {
            count,
            depth,
            reason,
        })
    }
}

impl GcStart {
    /// `Count`: the collection's number (1 for the process's first).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// `Depth`: the generation collected (version 1 and later).
    pub fn depth(&self) -> Option<u32> {
        self.depth
    }

    /// `Reason`: why the collection ran (1: induced).
    pub fn reason(&self) -> u32 {
        self.reason
    }
}

/// A `GCEnd` payload: version 0 has `Count` u32 and `Depth` u16; version 1 (CoreCLR 3.1 and
/// later) `Count` u32, `Depth` u32 and `ClrInstanceID` u16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcEnd {
    count: u32,
    depth: u32,
}

impl<'a> Payload<'a> for GcEnd {
    const PROVIDER: &'static str = RUNTIME_PROVIDER;
    const EVENT_ID: u32 = 2;
    const NAME: &'static str = "GCEnd";

    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        let count = f.u32("Count")?;
        let depth = if version == 0 {
            u32::from(f.u16("Depth")?)
        } else {
            f.u32("Depth")?
        };
        Ok(GcEnd { count, depth })
    }
}

impl GcEnd {
    /// `Count`: the collection's number (1 for the process's first).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// `Depth`: the generation collected.
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_payloads::Writer;

    /// A payload of `version` as the runtime writes it, with 8-byte pointers.
    fn tick(version: u32, kind: u32, name: &str) -> Vec<u8> {
        let mut w = Writer::default()
            .u32(104_664)
            .u32(kind)
            .u16(7)
            .u64(104_664)
            .u64(0x7f00_1234)
            .string(name)
            .u32(3);
        if version >= 3 {
            w = w.u64(0x7f00_dead_0000);
        }
        if version >= 4 {
            w = w.u64(4_024);
        }
        w.0
    }

    fn read(version: u32, payload: &[u8]) -> Result<AllocationTick<'_>, PayloadError> {
        AllocationTick::read(version, payload, PointerSize::Eight)
    }

    #[test]
    fn version_4_as_net_8_writes_it() {
        let p = tick(4, 1, "System.Byte[]");
        let t = read(4, &p).unwrap();
        assert_eq!(t.version(), 4);
        assert_eq!(t.allocation_amount(), 104_664);
        assert_eq!(t.allocation_kind(), AllocationKind::LARGE);
        assert_eq!(t.clr_instance_id(), 7);
        assert_eq!(t.allocation_amount64(), 104_664);
        assert_eq!(t.type_id(), 0x7f00_1234);
        assert_eq!(t.type_name().to_string_lossy(), "System.Byte[]");
        assert_eq!(t.heap_index(), 3);
        assert_eq!(t.address(), Some(0x7f00_dead_0000));
        assert_eq!(t.object_size(), Some(4_024));
    }

    #[test]
    fn version_3_as_coreclr_3_1_writes_it() {
        let p = tick(3, 0, "Memory.Small");
        let t = read(3, &p).unwrap();
        assert_eq!(t.allocation_kind(), AllocationKind::SMALL);
        assert_eq!(t.type_name().to_string_lossy(), "Memory.Small");
        assert_eq!(
            (t.address(), t.object_size()),
            (Some(0x7f00_dead_0000), None)
        );
    }

    #[test]
    fn version_2_and_later_versions() {
        let p = tick(2, 2, "System.Object");
        let t = read(2, &p).unwrap();
        assert_eq!(t.allocation_kind(), AllocationKind::PINNED);
        assert_eq!((t.address(), t.heap_index()), (None, 3));
        // A version after 4 appends fields: those of version 4 are read.
        let mut p = tick(4, 0, "A");
        p.extend([1, 2, 3]);
        assert_eq!(read(5, &p).unwrap().object_size(), Some(4_024));
    }

    #[test]
    fn gc_start_of_every_version() {
        let p = Writer::default()
            .u32(7)
            .u32(1)
            .u32(1)
            .u32(0)
            .u16(1)
            .u64(9)
            .0;
        let e = GcStart::read(2, &p, PointerSize::Eight).unwrap();
        assert_eq!((e.count(), e.depth(), e.reason()), (7, Some(1), 1));
        let p = Writer::default().u32(3).u32(0).0;
        let e = GcStart::read(0, &p, PointerSize::Eight).unwrap();
        assert_eq!((e.count(), e.depth(), e.reason()), (3, None, 0));
        assert!(GcStart::read(1, &p, PointerSize::Eight).is_err());
        assert!(GcStart::is(RUNTIME_PROVIDER, 1));
    }

    #[test]
    fn gc_end_of_both_versions() {
        let p = Writer::default().u32(12).u32(2).u16(1).0;
        let e = GcEnd::read(1, &p, PointerSize::Eight).unwrap();
        assert_eq!((e.count(), e.depth()), (12, 2));
        let p = Writer::default().u32(3).u16(1).0;
        let e = GcEnd::read(0, &p, PointerSize::Eight).unwrap();
        assert_eq!((e.count(), e.depth()), (3, 1));
        assert!(GcEnd::read(1, &p[..3], PointerSize::Eight).is_err());
        assert!(GcEnd::is(RUNTIME_PROVIDER, 2));
    }

    #[test]
    fn four_byte_pointers() {
        let p = Writer::default()
            .u32(100)
            .u32(0)
            .u16(1)
            .u64(100)
            .u32(0x1234)
            .string("X")
            .u32(0)
            .u32(0xbeef)
            .0;
        let t = AllocationTick::read(3, &p, PointerSize::Four).unwrap();
        assert_eq!((t.type_id(), t.address()), (0x1234, Some(0xbeef)));
    }

    #[test]
    fn cut_payloads_name_the_missing_field() {
        for version in 2..=4 {
            let p = tick(version, 0, "Memory.Small");
            for len in 0..p.len() {
                assert!(read(version, &p[..len]).is_err(), "v{version} {len}");
            }
        }
        let p = tick(4, 0, "AB");
        let missing = |len: usize| read(4, &p[..len]).unwrap_err().kind;
        assert_eq!(missing(0), PayloadErrorKind::Missing("AllocationAmount"));
        assert_eq!(missing(9), PayloadErrorKind::Missing("ClrInstanceID"));
        assert_eq!(missing(24), PayloadErrorKind::Missing("TypeID"));
        assert_eq!(missing(26), PayloadErrorKind::Missing("TypeName"));
        assert_eq!(
            missing(p.len() - 1),
            PayloadErrorKind::Missing("ObjectSize")
        );
        // Versions 0 and 1 name no type.
        let e = read(1, &p).unwrap_err();
        assert_eq!(
            (e.event, e.version, e.kind),
            ("GCAllocationTick", 1, PayloadErrorKind::TooOld)
        );
    }

    #[test]
    fn the_event_is_known_by_provider_and_id() {
        assert!(AllocationTick::is("Microsoft-Windows-DotNETRuntime", 10));
        assert!(!AllocationTick::is(
            "Microsoft-Windows-DotNETRuntimeRundown",
            10
        ));
        assert!(!AllocationTick::is("Microsoft-Windows-DotNETRuntime", 11));
    }
}
