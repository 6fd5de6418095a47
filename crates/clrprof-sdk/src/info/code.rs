//! Native code: where a function's code is, its code versions, and IL-to-native maps.

use core::ptr;

use clrprof_sys::*;

use super::buffers::read_array_with_room;
use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::ids::{FunctionId, ReJitId};

/// Room first offered for a code version's blocks (one, or a few with funclets or cold code).
const CODE_BLOCKS_ROOM: u32 = 8;
/// ... for a method's code versions (tiers, OSR: a handful).
const CODE_VERSIONS_ROOM: u32 = 8;
/// ... for an IL-to-native map (a few entries per statement: most methods' maps fit).
const IL_MAP_ROOM: u32 = 256;

/// One contiguous block of a function's native code (`COR_PRF_CODE_INFO`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct CodeInfo {
    /// First byte of the block.
    pub start: usize,
    /// Size in bytes.
    pub size: usize,
}

impl CodeInfo {
    /// One past the last byte.
    pub const fn end(&self) -> usize {
        self.start.saturating_add(self.size)
    }

    /// True when `address` is inside the block.
    pub const fn contains(&self, address: usize) -> bool {
        self.start <= address && address < self.end()
    }
}

impl From<COR_PRF_CODE_INFO> for CodeInfo {
    fn from(raw: COR_PRF_CODE_INFO) -> Self {
        CodeInfo {
            start: raw.startAddress,
            size: raw.size,
        }
    }
}

/// The IL side of one IL-to-native map entry.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IlOffset {
    /// Code compiled from the IL instruction at this offset.
    Offset(u32),
    /// Code that corresponds to no IL (`NO_MAPPING`).
    NoMapping,
    /// The method's prolog (`PROLOG`).
    Prolog,
    /// An epilog (`EPILOG`).
    Epilog,
}

impl IlOffset {
    /// Decodes `COR_DEBUG_IL_TO_NATIVE_MAP::ilOffset`.
    pub const fn from_raw(raw: u32) -> IlOffset {
        match raw as i32 {
            NO_MAPPING => IlOffset::NoMapping,
            PROLOG => IlOffset::Prolog,
            EPILOG => IlOffset::Epilog,
            _ => IlOffset::Offset(raw),
        }
    }

    /// The raw `ilOffset` value.
    pub const fn to_raw(self) -> u32 {
        match self {
            IlOffset::Offset(offset) => offset,
            IlOffset::NoMapping => NO_MAPPING as u32,
            IlOffset::Prolog => PROLOG as u32,
            IlOffset::Epilog => EPILOG as u32,
        }
    }
}

/// One entry of an IL-to-native map (`COR_DEBUG_IL_TO_NATIVE_MAP`): the native code at
/// offsets `native_start..native_end` (from the code start) came from `il_offset`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct IlToNativeMap {
    /// The IL offset, or a special region.
    pub il_offset: IlOffset,
    /// First native offset, relative to the start of the code.
    pub native_start: u32,
    /// One past the last native offset.
    pub native_end: u32,
}

impl From<COR_DEBUG_IL_TO_NATIVE_MAP> for IlToNativeMap {
    fn from(raw: COR_DEBUG_IL_TO_NATIVE_MAP) -> Self {
        IlToNativeMap {
            il_offset: IlOffset::from_raw(raw.ilOffset),
            native_start: raw.nativeStartOffset,
            native_end: raw.nativeEndOffset,
        }
    }
}

impl ProfilerInfo {
    /// Start and size of the first block of a function's native code
    /// (`ICorProfilerInfo::GetCodeInfo`; superseded by `get_code_info2`). Any time.
    pub fn get_code_info(&self, function: FunctionId) -> Result<CodeInfo> {
        const M: &str = "ICorProfilerInfo::GetCodeInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut start: LPCBYTE = ptr::null();
        let mut size = 0u32;
        // SAFETY: `this` is live; both out-params are valid locals.
        ok(M, unsafe {
            (vt.GetCodeInfo)(self.this(), function.0, &mut start, &mut size)
        })?;
        Ok(CodeInfo {
            start: start as usize,
            size: size as usize,
        })
    }

    /// The blocks of a function's current native code, in IL order (hot block first)
    /// (`ICorProfilerInfo2::GetCodeInfo2`). `CORPROF_E_FUNCTION_NOT_COMPILED` before it is
    /// compiled. Any time, any thread.
    pub fn get_code_info2(&self, function: FunctionId) -> Result<Vec<CodeInfo>> {
        const M: &str = "ICorProfilerInfo2::GetCodeInfo2";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let infos = read_array_with_room(
            M,
            CODE_BLOCKS_ROOM,
            |cap, count, out: *mut COR_PRF_CODE_INFO| {
                // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
                unsafe { (vt.GetCodeInfo2)(self.this(), function.0, cap, count, out) }
            },
        )?;
        Ok(infos.into_iter().map(CodeInfo::from).collect())
    }

    /// The blocks of the native code of ReJIT version `rejit` of a function
    /// (`ICorProfilerInfo4::GetCodeInfo3`). May trigger a GC: from a callback that allows it
    /// or a profiler thread.
    pub fn get_code_info3(&self, function: FunctionId, rejit: ReJitId) -> Result<Vec<CodeInfo>> {
        const M: &str = "ICorProfilerInfo4::GetCodeInfo3";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        let infos = read_array_with_room(
            M,
            CODE_BLOCKS_ROOM,
            |cap, count, out: *mut COR_PRF_CODE_INFO| {
                // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
                unsafe { (vt.GetCodeInfo3)(self.this(), function.0, rejit.0, cap, count, out) }
            },
        )?;
        Ok(infos.into_iter().map(CodeInfo::from).collect())
    }

    /// The blocks of the native code version starting at `code_start` (one of
    /// `get_native_code_start_addresses`) (`ICorProfilerInfo9::GetCodeInfo4`). May trigger a
    /// GC: from a callback that allows it or a profiler thread.
    pub fn get_code_info4(&self, code_start: usize) -> Result<Vec<CodeInfo>> {
        const M: &str = "ICorProfilerInfo9::GetCodeInfo4";
        let vt = self.vt::<ICorProfilerInfo9Vtbl>(9, M)?;
        let infos = read_array_with_room(
            M,
            CODE_BLOCKS_ROOM,
            |cap, count, out: *mut COR_PRF_CODE_INFO| {
                // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
                unsafe { (vt.GetCodeInfo4)(self.this(), code_start, cap, count, out) }
            },
        )?;
        Ok(infos.into_iter().map(CodeInfo::from).collect())
    }

    /// Start addresses of every native code version (tiers, OSR) of ReJIT version `rejit` of
    /// a function (`ICorProfilerInfo9::GetNativeCodeStartAddresses`). Any time.
    pub fn get_native_code_start_addresses(
        &self,
        function: FunctionId,
        rejit: ReJitId,
    ) -> Result<Vec<usize>> {
        const M: &str = "ICorProfilerInfo9::GetNativeCodeStartAddresses";
        let vt = self.vt::<ICorProfilerInfo9Vtbl>(9, M)?;
        read_array_with_room(M, CODE_VERSIONS_ROOM, |cap, count, out: *mut UINT_PTR| {
            // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
            unsafe {
                (vt.GetNativeCodeStartAddresses)(self.this(), function.0, rejit.0, cap, count, out)
            }
        })
    }

    /// The IL-to-native map of a function's (first) native code
    /// (`ICorProfilerInfo::GetILToNativeMapping`). From a callback or a profiler thread.
    pub fn get_il_to_native_mapping(&self, function: FunctionId) -> Result<Vec<IlToNativeMap>> {
        const M: &str = "ICorProfilerInfo::GetILToNativeMapping";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let map = read_array_with_room(
            M,
            IL_MAP_ROOM,
            |cap, count, out: *mut COR_DEBUG_IL_TO_NATIVE_MAP| {
                // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
                unsafe { (vt.GetILToNativeMapping)(self.this(), function.0, cap, count, out) }
            },
        )?;
        Ok(map.into_iter().map(IlToNativeMap::from).collect())
    }

    /// The IL-to-native map of ReJIT version `rejit` of a function
    /// (`ICorProfilerInfo4::GetILToNativeMapping2`). From a callback or a profiler thread.
    pub fn get_il_to_native_mapping2(
        &self,
        function: FunctionId,
        rejit: ReJitId,
    ) -> Result<Vec<IlToNativeMap>> {
        const M: &str = "ICorProfilerInfo4::GetILToNativeMapping2";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        let map = read_array_with_room(
            M,
            IL_MAP_ROOM,
            |cap, count, out: *mut COR_DEBUG_IL_TO_NATIVE_MAP| {
                // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
                unsafe {
                    (vt.GetILToNativeMapping2)(self.this(), function.0, rejit.0, cap, count, out)
                }
            },
        )?;
        Ok(map.into_iter().map(IlToNativeMap::from).collect())
    }

    /// The IL-to-native map of the native code version starting at `code_start`
    /// (`ICorProfilerInfo9::GetILToNativeMapping3`). From a callback or a profiler thread.
    pub fn get_il_to_native_mapping3(&self, code_start: usize) -> Result<Vec<IlToNativeMap>> {
        const M: &str = "ICorProfilerInfo9::GetILToNativeMapping3";
        let vt = self.vt::<ICorProfilerInfo9Vtbl>(9, M)?;
        let map = read_array_with_room(
            M,
            IL_MAP_ROOM,
            |cap, count, out: *mut COR_DEBUG_IL_TO_NATIVE_MAP| {
                // SAFETY: `this` is live; `out` is null with `cap == 0` or has `cap` elements.
                unsafe { (vt.GetILToNativeMapping3)(self.this(), code_start, cap, count, out) }
            },
        )?;
        Ok(map.into_iter().map(IlToNativeMap::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn il_offsets_round_trip() {
        for (raw, offset) in [
            (0xFFFF_FFFF, IlOffset::NoMapping),
            (0xFFFF_FFFE, IlOffset::Prolog),
            (0xFFFF_FFFD, IlOffset::Epilog),
            (0x2A, IlOffset::Offset(0x2A)),
        ] {
            assert_eq!(IlOffset::from_raw(raw), offset);
            assert_eq!(offset.to_raw(), raw);
        }
        let entry = IlToNativeMap::from(COR_DEBUG_IL_TO_NATIVE_MAP {
            ilOffset: 0xFFFF_FFFE,
            nativeStartOffset: 0,
            nativeEndOffset: 12,
        });
        assert_eq!(entry.il_offset, IlOffset::Prolog);
        assert_eq!(entry.native_end, 12);
    }

    #[test]
    fn code_ranges() {
        let c = CodeInfo::from(COR_PRF_CODE_INFO {
            startAddress: 0x1000,
            size: 0x20,
        });
        assert!(c.contains(0x1000));
        assert!(c.contains(0x101F));
        assert!(!c.contains(0x1020));
        assert_eq!(c.end(), 0x1020);
    }
}
