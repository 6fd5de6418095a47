//! `ContentionStart` (event 81) and `ContentionStop` (event 91) of the runtime provider
//! (`ContentionKeyword`, informational): the runtime writes the start on the waiting thread
//! when a `Monitor.Enter` stops spinning and is about to wait, and the stop on the same thread
//! once it holds the lock.

use crate::{Fields, Payload, PayloadError, PointerSize, RUNTIME_PROVIDER};

/// `ContentionFlags` / `Flags` of the contention events (the manifest's
/// `ContentionFlagsMap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentionFlags(pub u8);

impl ContentionFlags {
    /// A `Monitor` of managed code.
    pub const MANAGED: ContentionFlags = ContentionFlags(0);
    /// A lock of the runtime itself.
    pub const NATIVE: ContentionFlags = ContentionFlags(1);
}

/// A `ContentionStart` payload. The manifest's templates:
///
/// - version 1 (CoreCLR 3.1 sends it; version 0 has the same fields): `ContentionFlags` u8,
///   `ClrInstanceID` u16;
/// - version 2 (.NET 8.0.4 sends it) adds `LockID` (pointer), `AssociatedObjectID` (pointer)
///   and `LockOwnerThreadID` (u64, the holder's OS thread id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentionStart {
    version: u32,
    flags: ContentionFlags,
    clr_instance_id: u16,
    lock_id: Option<u64>,
    associated_object_id: Option<u64>,
    lock_owner_thread_id: Option<u64>,
}

impl Payload<'_> for ContentionStart {
    const PROVIDER: &'static str = RUNTIME_PROVIDER;
    const EVENT_ID: u32 = 81;
    const NAME: &'static str = "ContentionStart";

    fn read(version: u32, payload: &[u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        let flags = ContentionFlags(f.u8("ContentionFlags")?);
        let clr_instance_id = f.u16("ClrInstanceID")?;
        let (lock_id, associated_object_id, lock_owner_thread_id) = if version >= 2 {
            (
                Some(f.pointer("LockID")?),
                Some(f.pointer("AssociatedObjectID")?),
                Some(f.u64("LockOwnerThreadID")?),
            )
        } else {
            (None, None, None)
        };
        Ok(ContentionStart {
            version,
            flags,
            clr_instance_id,
            lock_id,
            associated_object_id,
            lock_owner_thread_id,
        })
    }
}

impl ContentionStart {
    /// The payload's version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// `ContentionFlags`: managed or native.
    pub fn flags(&self) -> ContentionFlags {
        self.flags
    }

    /// `ClrInstanceID`: the runtime instance.
    pub fn clr_instance_id(&self) -> u16 {
        self.clr_instance_id
    }

    /// `LockID`: the lock (version 2 and later).
    pub fn lock_id(&self) -> Option<u64> {
        self.lock_id
    }

    /// `AssociatedObjectID`: the object the lock belongs to (version 2 and later).
    pub fn associated_object_id(&self) -> Option<u64> {
        self.associated_object_id
    }

    /// `LockOwnerThreadID`: the OS thread that holds the lock (version 2 and later).
    pub fn lock_owner_thread_id(&self) -> Option<u64> {
        self.lock_owner_thread_id
    }
}

/// A `ContentionStop` payload. The manifest's templates:
///
/// - version 0 (CoreCLR 3.1 sends it): `Flags` u8, `ClrInstanceID` u16;
/// - version 1 (.NET 8.0.4 sends it) adds `DurationNs` (a double: the nanoseconds the thread
///   waited).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContentionStop {
    version: u32,
    flags: ContentionFlags,
    clr_instance_id: u16,
    duration_ns: Option<f64>,
}

impl Payload<'_> for ContentionStop {
    const PROVIDER: &'static str = RUNTIME_PROVIDER;
    const EVENT_ID: u32 = 91;
    const NAME: &'static str = "ContentionStop";

    fn read(version: u32, payload: &[u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        Ok(ContentionStop {
            version,
            flags: ContentionFlags(f.u8("Flags")?),
            clr_instance_id: f.u16("ClrInstanceID")?,
            duration_ns: (version >= 1).then(|| f.f64("DurationNs")).transpose()?,
        })
    }
}

impl ContentionStop {
    /// The payload's version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// `Flags`: managed or native.
    pub fn flags(&self) -> ContentionFlags {
        self.flags
    }

    /// `ClrInstanceID`: the runtime instance.
    pub fn clr_instance_id(&self) -> u16 {
        self.clr_instance_id
    }

    /// `DurationNs`: how long the thread waited, in nanoseconds (version 1 and later).
    pub fn duration_ns(&self) -> Option<f64> {
        self.duration_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PayloadErrorKind;
    use crate::test_payloads::Writer;

    fn start_v2() -> Vec<u8> {
        Writer::default()
            .u8(0)
            .u16(9)
            .u64(0x5600_1230)
            .u64(0x7f00_dead_0010)
            .u64(4321)
            .0
    }

    #[test]
    fn start_version_2_as_net_8_writes_it() {
        let p = start_v2();
        let s = ContentionStart::read(2, &p, PointerSize::Eight).unwrap();
        assert_eq!(s.version(), 2);
        assert_eq!(s.flags(), ContentionFlags::MANAGED);
        assert_eq!(s.clr_instance_id(), 9);
        assert_eq!(s.lock_id(), Some(0x5600_1230));
        assert_eq!(s.associated_object_id(), Some(0x7f00_dead_0010));
        assert_eq!(s.lock_owner_thread_id(), Some(4321));
        for len in 0..p.len() {
            assert!(ContentionStart::read(2, &p[..len], PointerSize::Eight).is_err());
        }
        assert_eq!(
            ContentionStart::read(2, &p[..3], PointerSize::Eight)
                .unwrap_err()
                .kind,
            PayloadErrorKind::Missing("LockID")
        );
        // Four-byte pointers.
        let p = Writer::default().u8(1).u16(9).u32(5).u32(6).u64(7).0;
        let s = ContentionStart::read(2, &p, PointerSize::Four).unwrap();
        assert_eq!(
            (
                s.lock_id(),
                s.associated_object_id(),
                s.lock_owner_thread_id()
            ),
            (Some(5), Some(6), Some(7))
        );
    }

    #[test]
    fn start_versions_0_and_1_as_coreclr_3_1_writes_them() {
        let p = Writer::default().u8(1).u16(9).0;
        for version in [0, 1] {
            let s = ContentionStart::read(version, &p, PointerSize::Eight).unwrap();
            assert_eq!(s.flags(), ContentionFlags::NATIVE);
            assert_eq!(s.clr_instance_id(), 9);
            assert_eq!((s.lock_id(), s.lock_owner_thread_id()), (None, None));
            assert_eq!(
                ContentionStart::read(version, &p[..2], PointerSize::Eight)
                    .unwrap_err()
                    .kind,
                PayloadErrorKind::Missing("ClrInstanceID")
            );
        }
    }

    #[test]
    fn stop_version_1_as_net_8_writes_it_and_version_0_as_coreclr_3_1_does() {
        let p = Writer::default()
            .u8(1)
            .u16(9)
            .u64(20_123_456.5f64.to_bits())
            .0;
        let s = ContentionStop::read(1, &p, PointerSize::Eight).unwrap();
        assert_eq!(s.version(), 1);
        assert_eq!(s.flags(), ContentionFlags::NATIVE);
        assert_eq!(s.clr_instance_id(), 9);
        assert_eq!(s.duration_ns(), Some(20_123_456.5));
        assert_eq!(
            ContentionStop::read(1, &p[..10], PointerSize::Eight)
                .unwrap_err()
                .kind,
            PayloadErrorKind::Missing("DurationNs")
        );
        let s = ContentionStop::read(0, &p[..3], PointerSize::Eight).unwrap();
        assert_eq!(
            (s.flags(), s.duration_ns()),
            (ContentionFlags::NATIVE, None)
        );
        assert!(ContentionStop::read(0, &p[..1], PointerSize::Eight).is_err());
    }

    #[test]
    fn the_events_are_known_by_provider_and_id() {
        assert!(ContentionStart::is("Microsoft-Windows-DotNETRuntime", 81));
        assert!(ContentionStop::is("Microsoft-Windows-DotNETRuntime", 91));
        assert!(!ContentionStop::is("Microsoft-Windows-DotNETRuntime", 81));
    }
}
