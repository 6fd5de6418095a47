//! `MethodDCEndVerbose` (event 144 of the rundown provider): at the end of a session the
//! runtime describes every method that has code, its range and its names, so that the
//! addresses of the session's stacks can be turned into methods.

use crate::{Fields, Payload, PayloadError, PointerSize, RUNDOWN_PROVIDER, Utf16};

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
