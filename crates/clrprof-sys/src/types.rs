//! Scalar types of the profiling ABI, as seen on 64-bit Linux and Windows.
//!
//! On Linux the CoreCLR PAL defines `LONG`, `ULONG`, `DWORD` and `HRESULT` as 32 bits, `BOOL` as
//! a 32-bit int and `WCHAR` as UTF-16 (`u16`), exactly as on Windows, so one set of definitions
//! serves both.

use core::ffi::c_void;

pub type HRESULT = i32;
pub type BOOL = i32;
pub type BYTE = u8;
pub type USHORT = u16;
pub type WCHAR = u16;
pub type ULONG = u32;
pub type LONG = i32;
pub type ULONG32 = u32;
pub type LONG32 = i32;
pub type DWORD = u32;
pub type UINT = u32;
pub type INT = i32;
pub type UINT_PTR = usize;
pub type ULONG_PTR = usize;
pub type SIZE_T = usize;
pub type LPVOID = *mut c_void;
pub type LPCVOID = *const c_void;
pub type LPWSTR = *mut WCHAR;
pub type LPCWSTR = *const WCHAR;
pub type LPCBYTE = *const BYTE;
pub type LPBYTE = *mut BYTE;
pub type ULONGLONG = u64;
pub type LONGLONG = i64;

pub const TRUE: BOOL = 1;
pub const FALSE: BOOL = 0;

// Runtime identifiers handed out by the profiling API (all `UINT_PTR` in corprof.idl).
pub type ProcessID = UINT_PTR;
pub type AssemblyID = UINT_PTR;
pub type AppDomainID = UINT_PTR;
pub type ModuleID = UINT_PTR;
pub type ClassID = UINT_PTR;
pub type ThreadID = UINT_PTR;
pub type ContextID = UINT_PTR;
pub type FunctionID = UINT_PTR;
pub type ObjectID = UINT_PTR;
pub type GCHandleID = UINT_PTR;
pub type COR_PRF_ELT_INFO = UINT_PTR;
pub type ReJITID = UINT_PTR;
pub type COR_PRF_FRAME_INFO = UINT_PTR;
pub type EVENTPIPE_PROVIDER = UINT_PTR;
pub type EVENTPIPE_EVENT = UINT_PTR;
pub type EVENTPIPE_SESSION = u64;

/// `FunctionIDOrClientID`: a union of `FunctionID` and a client id, both pointer-sized.
pub type FunctionIDOrClientID = UINT_PTR;

// Metadata tokens (cor.h / corhdr.h).
pub type mdToken = u32;
pub type mdModule = mdToken;
pub type mdTypeRef = mdToken;
pub type mdTypeDef = mdToken;
pub type mdFieldDef = mdToken;
pub type mdMethodDef = mdToken;
pub type mdParamDef = mdToken;
pub type mdInterfaceImpl = mdToken;
pub type mdMemberRef = mdToken;
pub type mdCustomAttribute = mdToken;
pub type mdPermission = mdToken;
pub type mdSignature = mdToken;
pub type mdEvent = mdToken;
pub type mdProperty = mdToken;
pub type mdModuleRef = mdToken;
pub type mdAssembly = mdToken;
pub type mdAssemblyRef = mdToken;
pub type mdFile = mdToken;
pub type mdExportedType = mdToken;
pub type mdManifestResource = mdToken;
pub type mdTypeSpec = mdToken;
pub type mdGenericParam = mdToken;
pub type mdMethodSpec = mdToken;
pub type mdGenericParamConstraint = mdToken;
pub type mdString = mdToken;
pub type mdCPToken = mdToken;
pub type HCORENUM = *mut c_void;
pub type COR_SIGNATURE = u8;
pub type PCOR_SIGNATURE = *mut COR_SIGNATURE;
pub type PCCOR_SIGNATURE = *const COR_SIGNATURE;
pub type CorElementType = u32;
pub type UVCP_CONSTANT = *const c_void;
pub type RID = u32;

/// A COM GUID in its Windows memory layout (also used by CoreCLR on Linux).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GUID {
    pub data1: u32,
    pub data2: u16,
    pub data3: u16,
    pub data4: [u8; 8],
}

pub type IID = GUID;
pub type CLSID = GUID;
pub type REFIID = *const GUID;
pub type REFCLSID = *const GUID;
pub type REFGUID = *const GUID;
pub type LPCGUID = *const GUID;

impl GUID {
    /// Builds a GUID from its canonical textual value read as one 128-bit number, e.g.
    /// `GUID::from_u128(0x176FBED1_A55C_4796_98CA_A9DA0EF883E7)`.
    pub const fn from_u128(v: u128) -> Self {
        GUID {
            data1: (v >> 96) as u32,
            data2: (v >> 80) as u16,
            data3: (v >> 64) as u16,
            data4: (v as u64).to_be_bytes(),
        }
    }

    /// The inverse of [`GUID::from_u128`].
    pub const fn to_u128(&self) -> u128 {
        ((self.data1 as u128) << 96)
            | ((self.data2 as u128) << 80)
            | ((self.data3 as u128) << 64)
            | (u64::from_be_bytes(self.data4) as u128)
    }
}

impl core::fmt::Debug for GUID {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

impl core::fmt::Display for GUID {
    /// Registry form with braces: `{176FBED1-A55C-4796-98CA-A9DA0EF883E7}`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::GUID;

    #[test]
    fn guid_layout_and_text() {
        let g = GUID::from_u128(0x176FBED1_A55C_4796_98CA_A9DA0EF883E7);
        assert_eq!(g.data1, 0x176FBED1);
        assert_eq!(g.data2, 0xA55C);
        assert_eq!(g.data3, 0x4796);
        assert_eq!(g.data4, [0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7]);
        assert_eq!(g.to_string(), "{176FBED1-A55C-4796-98CA-A9DA0EF883E7}");
        assert_eq!(g.to_u128(), 0x176FBED1_A55C_4796_98CA_A9DA0EF883E7);
        assert_eq!(core::mem::size_of::<GUID>(), 16);
    }
}
