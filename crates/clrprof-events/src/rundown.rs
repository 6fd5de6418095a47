//! The rundown provider's method events. `MethodDCEndVerbose` (event 144): at the end of a
//! session the runtime describes every method that has code, its range and its names, so that
//! the addresses of the session's stacks can be turned into methods. `MethodDCEndILToNativeMap`
//! (event 150, the rundown's `JittedMethodILToNativeMapRundownKeyword`, on by default): each
//! code version's native-to-IL map, written just before that version's `MethodDCEndVerbose`,
//! so that an address can be turned into an IL offset. `ModuleDCEnd` (event 154): every
//! loaded module, its id and its file, so that a method's module (and its symbols) is known.

use crate::bytes::u32_at;
use crate::{Fields, Payload, PayloadError, PointerSize, RUNDOWN_PROVIDER, Utf16};

/// A `ModuleDCEnd` payload (the manifest's `ModuleLoadUnload` templates): `ModuleID` u64,
/// `AssemblyID` u64, `ModuleFlags` u32, `Reserved1` u32, then the UTF-16 strings
/// `ModuleILPath` and `ModuleNativePath`; versions 1 and 2 add fields after them (the
/// runtime instance, the PDBs' signatures), which this view does not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleDcEnd<'a> {
    module_id: u64,
    assembly_id: u64,
    module_flags: u32,
    module_il_path: Utf16<'a>,
    module_native_path: Utf16<'a>,
}

impl<'a> Payload<'a> for ModuleDcEnd<'a> {
    const PROVIDER: &'static str = RUNDOWN_PROVIDER;
    const EVENT_ID: u32 = 154;
    const NAME: &'static str = "ModuleDCEnd";

    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        let module_id = f.u64("ModuleID")?;
        let assembly_id = f.u64("AssemblyID")?;
        let module_flags = f.u32("ModuleFlags")?;
        f.u32("Reserved1")?;
        Ok(ModuleDcEnd {
            module_id,
            assembly_id,
            module_flags,
            module_il_path: f.string("ModuleILPath")?,
            module_native_path: f.string("ModuleNativePath")?,
        })
    }
}

impl<'a> ModuleDcEnd<'a> {
    /// `ModuleID`: the profiling API's `ModuleID`.
    pub fn module_id(&self) -> u64 {
        self.module_id
    }

    /// `AssemblyID`: its assembly.
    pub fn assembly_id(&self) -> u64 {
        self.assembly_id
    }

    /// `ModuleFlags` (the manifest's `ModuleFlagsMap`: domain neutral, native image, dynamic,
    /// manifest).
    pub fn module_flags(&self) -> u32 {
        self.module_flags
    }

    /// `ModuleILPath`: the module's file (its IL image).
    pub fn module_il_path(&self) -> Utf16<'a> {
        self.module_il_path
    }

    /// `ModuleNativePath`: its native image, if any.
    pub fn module_native_path(&self) -> Utf16<'a> {
        self.module_native_path
    }
}

/// A `MethodDCEndILToNativeMap` payload (the manifest's `MethodILToNativeMap` template):
/// `MethodID` u64, `ReJITID` u64, `MethodExtent` u8, `CountOfMapEntries` u16, then that many
/// `ILOffsets` (u32) and as many `NativeOffsets` (u32), `ClrInstanceID` u16. An IL offset of
/// `0xFFFFFFFF` is code of no IL, `0xFFFFFFFE` the prologue, `0xFFFFFFFD` the epilogue; each
/// native offset is where its entry's code starts, from the method's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodIlToNativeMap<'a> {
    method_id: u64,
    rejit_id: u64,
    method_extent: u8,
    count: u16,
    il_offsets: &'a [u8],
    native_offsets: &'a [u8],
    clr_instance_id: u16,
}

impl<'a> Payload<'a> for MethodIlToNativeMap<'a> {
    const PROVIDER: &'static str = RUNDOWN_PROVIDER;
    const EVENT_ID: u32 = 150;
    const NAME: &'static str = "MethodDCEndILToNativeMap";

    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        let method_id = f.u64("MethodID")?;
        let rejit_id = f.u64("ReJITID")?;
        let method_extent = f.u8("MethodExtent")?;
        let count = f.u16("CountOfMapEntries")?;
        Ok(MethodIlToNativeMap {
            method_id,
            rejit_id,
            method_extent,
            count,
            il_offsets: f.u32s(usize::from(count), "ILOffsets")?,
            native_offsets: f.u32s(usize::from(count), "NativeOffsets")?,
            clr_instance_id: f.u16("ClrInstanceID")?,
        })
    }
}

impl MethodIlToNativeMap<'_> {
    /// `MethodID`: the method's `MethodDesc`, the profiling API's `FunctionID`.
    pub fn method_id(&self) -> u64 {
        self.method_id
    }

    /// `ReJITID`: which ReJIT version of the method the code is.
    pub fn rejit_id(&self) -> u64 {
        self.rejit_id
    }

    /// `MethodExtent`: 0 for the method's main code, 1 for its cold code.
    pub fn method_extent(&self) -> u8 {
        self.method_extent
    }

    /// `ClrInstanceID`: the runtime instance.
    pub fn clr_instance_id(&self) -> u16 {
        self.clr_instance_id
    }

    /// The map's entries in the runtime's order: (IL offset, native offset where its code
    /// starts).
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..usize::from(self.count)).filter_map(|i| {
            Some((
                u32_at(self.il_offsets, 4 * i)?,
                u32_at(self.native_offsets, 4 * i)?,
            ))
        })
    }
}

/// A `MethodDCEndVerbose` payload, with the manifest's `MethodLoadUnloadVerbose` templates:
///
/// - version 0: `MethodID` u64, `ModuleID` u64, `MethodStartAddress` u64, `MethodSize` u32,
///   `MethodToken` u32, `MethodFlags` u32, then the UTF-16 strings `MethodNamespace`,
///   `MethodName` and `MethodSignature`;
/// - version 1 adds `ClrInstanceID` (u16);
/// - version 2 adds `ReJITID` (u64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodDcEndVerbose<'a> {
    version: u32,
    method_id: u64,
    module_id: u64,
    method_start_address: u64,
    method_size: u32,
    method_token: u32,
    method_flags: u32,
    method_namespace: Utf16<'a>,
    method_name: Utf16<'a>,
    method_signature: Utf16<'a>,
    clr_instance_id: Option<u16>,
    rejit_id: Option<u64>,
}

impl<'a> Payload<'a> for MethodDcEndVerbose<'a> {
    const PROVIDER: &'static str = RUNDOWN_PROVIDER;
    const EVENT_ID: u32 = 144;
    const NAME: &'static str = "MethodDCEndVerbose";

    fn read(version: u32, payload: &'a [u8], pointer: PointerSize) -> Result<Self, PayloadError> {
        let mut f = Fields::new::<Self>(version, payload, pointer);
        Ok(MethodDcEndVerbose {
            version,
            method_id: f.u64("MethodID")?,
            module_id: f.u64("ModuleID")?,
            method_start_address: f.u64("MethodStartAddress")?,
            method_size: f.u32("MethodSize")?,
            method_token: f.u32("MethodToken")?,
            method_flags: f.u32("MethodFlags")?,
            method_namespace: f.string("MethodNamespace")?,
            method_name: f.string("MethodName")?,
            method_signature: f.string("MethodSignature")?,
            clr_instance_id: (version >= 1).then(|| f.u16("ClrInstanceID")).transpose()?,
            rejit_id: (version >= 2).then(|| f.u64("ReJITID")).transpose()?,
        })
    }
}

impl<'a> MethodDcEndVerbose<'a> {
    /// The payload's version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// `MethodID`: the method's `MethodDesc`, the profiling API's `FunctionID`.
    pub fn method_id(&self) -> u64 {
        self.method_id
    }

    /// `ModuleID`: its module.
    pub fn module_id(&self) -> u64 {
        self.module_id
    }

    /// `MethodStartAddress`: where its code starts.
    pub fn method_start_address(&self) -> u64 {
        self.method_start_address
    }

    /// `MethodSize`: its code's size in bytes.
    pub fn method_size(&self) -> u32 {
        self.method_size
    }

    /// `MethodToken`: its MethodDef token.
    pub fn method_token(&self) -> u32 {
        self.method_token
    }

    /// `MethodFlags` (the manifest's `MethodFlagsMap`: dynamic, generic, shared generic code,
    /// jitted, ...).
    pub fn method_flags(&self) -> u32 {
        self.method_flags
    }

    /// `MethodNamespace`: the declaring type, as the runtime formats it
    /// (``System.Collections.Generic.Dictionary`2[System.__Canon,System.Int32]``; see
    /// [`csharp::runtime_type_name`](crate::csharp::runtime_type_name)).
    pub fn method_namespace(&self) -> Utf16<'a> {
        self.method_namespace
    }

    /// `MethodName`: the method's metadata name (`.ctor`, `Parse`).
    pub fn method_name(&self) -> Utf16<'a> {
        self.method_name
    }

    /// `MethodSignature`: the signature as the runtime prints it (`int64  (int32,int,value
    /// class Memory.Pair)`; see [`csharp::il_signature`](crate::csharp::il_signature)).
    pub fn method_signature(&self) -> Utf16<'a> {
        self.method_signature
    }

    /// `ClrInstanceID`: the runtime instance (version 1 and later).
    pub fn clr_instance_id(&self) -> Option<u16> {
        self.clr_instance_id
    }

    /// `ReJITID`: which ReJIT version of the method the code is (version 2 and later).
    pub fn rejit_id(&self) -> Option<u64> {
        self.rejit_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PayloadErrorKind;
    use crate::test_payloads::Writer;

    fn method(version: u32) -> Vec<u8> {
        let mut w = Writer::default()
            .u64(0x11)
            .u64(0x22)
            .u64(0x4000)
            .u32(0x80)
            .u32(0x0600_0002)
            .u32(0x8)
            .string("Memory.Program")
            .string("Churn")
            .string("void  (int32)");
        if version >= 1 {
            w = w.u16(7);
        }
        if version >= 2 {
            w = w.u64(3);
        }
        w.0
    }

    fn read(version: u32, p: &[u8]) -> Result<MethodDcEndVerbose<'_>, PayloadError> {
        MethodDcEndVerbose::read(version, p, PointerSize::Eight)
    }

    #[test]
    fn every_field_of_version_2() {
        let p = method(2);
        let m = read(2, &p).unwrap();
        assert_eq!(m.version(), 2);
        assert_eq!(m.method_id(), 0x11);
        assert_eq!(m.module_id(), 0x22);
        assert_eq!(m.method_start_address(), 0x4000);
        assert_eq!(m.method_size(), 0x80);
        assert_eq!(m.method_token(), 0x0600_0002);
        assert_eq!(m.method_flags(), 0x8);
        assert_eq!(m.method_namespace().to_string_lossy(), "Memory.Program");
        assert_eq!(m.method_name().to_string_lossy(), "Churn");
        assert_eq!(m.method_signature().to_string_lossy(), "void  (int32)");
        assert_eq!((m.clr_instance_id(), m.rejit_id()), (Some(7), Some(3)));
    }

    #[test]
    fn modules_read_their_id_assembly_and_file() {
        let p = Writer::default()
            .u64(0x77)
            .u64(0x88)
            .u32(0x8)
            .u32(0)
            .string("/app/Shop.dll")
            .string("")
            .u16(7)
            .0;
        let m = ModuleDcEnd::read(1, &p, PointerSize::Eight).unwrap();
        assert_eq!(
            (m.module_id(), m.assembly_id(), m.module_flags()),
            (0x77, 0x88, 0x8)
        );
        assert_eq!(m.module_il_path().to_string_lossy(), "/app/Shop.dll");
        assert_eq!(m.module_native_path().to_string_lossy(), "");
        for len in 0..p.len() - 2 {
            assert!(
                ModuleDcEnd::read(1, &p[..len], PointerSize::Eight).is_err(),
                "{len}"
            );
        }
        assert!(ModuleDcEnd::is(
            "Microsoft-Windows-DotNETRuntimeRundown",
            154
        ));
    }

    #[test]
    fn il_to_native_maps_read_every_entry_and_refuse_cut_ones() {
        let p = Writer::default()
            .u64(0x11)
            .u64(0)
            .u8(0)
            .u16(3)
            .u32(0xFFFF_FFFE)
            .u32(0)
            .u32(0x10)
            .u32(0)
            .u32(0x12)
            .u32(0x30)
            .u16(7)
            .0;
        let m = MethodIlToNativeMap::read(0, &p, PointerSize::Eight).unwrap();
        assert_eq!(
            (m.method_id(), m.rejit_id(), m.method_extent()),
            (0x11, 0, 0)
        );
        assert_eq!(m.clr_instance_id(), 7);
        assert_eq!(
            m.entries().collect::<Vec<_>>(),
            [(0xFFFF_FFFE, 0), (0, 0x12), (0x10, 0x30)]
        );
        for len in 0..p.len() {
            assert!(
                MethodIlToNativeMap::read(0, &p[..len], PointerSize::Eight).is_err(),
                "{len}"
            );
        }
        assert!(MethodIlToNativeMap::is(
            "Microsoft-Windows-DotNETRuntimeRundown",
            150
        ));
    }

    #[test]
    fn versions_0_and_1_and_cut_payloads() {
        let m0 = method(0);
        let m = read(0, &m0).unwrap();
        assert_eq!((m.clr_instance_id(), m.rejit_id()), (None, None));
        let m1 = method(1);
        let m = read(1, &m1).unwrap();
        assert_eq!((m.clr_instance_id(), m.rejit_id()), (Some(7), None));
        for version in 0..=2 {
            let p = method(version);
            for len in 0..p.len() {
                assert!(read(version, &p[..len]).is_err(), "v{version} {len}");
            }
        }
        assert_eq!(
            read(1, &m0).unwrap_err().kind,
            PayloadErrorKind::Missing("ClrInstanceID")
        );
        assert!(MethodDcEndVerbose::is(
            "Microsoft-Windows-DotNETRuntimeRundown",
            144
        ));
    }
}
