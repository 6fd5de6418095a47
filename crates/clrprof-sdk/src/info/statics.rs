//! Static fields: what kind of static a field is, and where its value lives.
//!
//! Ask [`ProfilerInfo::get_static_field_info`] first, then the address getter for that kind.
//! Literal (`const`) fields exist only in metadata and have no address. An address is where
//! the value is stored: for a static of a reference type it holds an `ObjectId`. The getters
//! fail with `CORPROF_E_DATAINCOMPLETE` until the class's static constructor has run (or
//! its statics were otherwise allocated) in that domain or thread.

use core::ffi::c_void;
use core::ptr;

use bitflags::bitflags;
use clrprof_sys::{ICorProfilerInfo2Vtbl, ICorProfilerInfo3Vtbl};

use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::ids::{AppDomainId, ClassId, ContextId, ThreadId, Token};

bitflags! {
    /// What kind of static a field is (`COR_PRF_STATIC_TYPE`); empty for an instance field.
    #[repr(transparent)]
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
    pub struct StaticKind: u32 {
        /// One value per application domain (ordinary `static`):
        /// [`ProfilerInfo::get_app_domain_static_address`].
        const APP_DOMAIN = clrprof_sys::COR_PRF_FIELD_APP_DOMAIN_STATIC;
        /// `[ThreadStatic]`: [`ProfilerInfo::get_thread_static_address2`].
        const THREAD = clrprof_sys::COR_PRF_FIELD_THREAD_STATIC;
        /// `[ContextStatic]`: [`ProfilerInfo::get_context_static_address`].
        const CONTEXT = clrprof_sys::COR_PRF_FIELD_CONTEXT_STATIC;
        /// Data at a fixed RVA in the image: [`ProfilerInfo::get_rva_static_address`].
        const RVA = clrprof_sys::COR_PRF_FIELD_RVA_STATIC;
        const _ = !0;
    }
}

impl ProfilerInfo {
    /// Which kind of static `field` of `class` is (`ICorProfilerInfo2::GetStaticFieldInfo`);
    /// empty for an instance field.
    pub fn get_static_field_info(&self, class: ClassId, field: Token) -> Result<StaticKind> {
        const M: &str = "ICorProfilerInfo2::GetStaticFieldInfo";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut kind = 0u32;
        // SAFETY: `this` is live; `kind` is a valid local.
        ok(M, unsafe {
            (vt.GetStaticFieldInfo)(self.this(), class.0, field.0, &mut kind)
        })?;
        Ok(StaticKind::from_bits_retain(kind))
    }

    /// Address of an RVA static (`ICorProfilerInfo2::GetRVAStaticAddress`).
    pub fn get_rva_static_address(&self, class: ClassId, field: Token) -> Result<usize> {
        const M: &str = "ICorProfilerInfo2::GetRVAStaticAddress";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `address` is a valid local.
        ok(M, unsafe {
            (vt.GetRVAStaticAddress)(self.this(), class.0, field.0, &mut address)
        })?;
        Ok(address as usize)
    }

    /// Address of an ordinary static in an application domain
    /// (`ICorProfilerInfo2::GetAppDomainStaticAddress`).
    pub fn get_app_domain_static_address(
        &self,
        class: ClassId,
        field: Token,
        app_domain: AppDomainId,
    ) -> Result<usize> {
        const M: &str = "ICorProfilerInfo2::GetAppDomainStaticAddress";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `address` is a valid local.
        ok(M, unsafe {
            (vt.GetAppDomainStaticAddress)(
                self.this(),
                class.0,
                field.0,
                app_domain.0,
                &mut address,
            )
        })?;
        Ok(address as usize)
    }

    /// Address of a thread static for `thread`, which must be the current thread (or null
    /// for it) (`ICorProfilerInfo2::GetThreadStaticAddress`; see `get_thread_static_address2`
    /// for other threads).
    pub fn get_thread_static_address(
        &self,
        class: ClassId,
        field: Token,
        thread: ThreadId,
    ) -> Result<usize> {
        const M: &str = "ICorProfilerInfo2::GetThreadStaticAddress";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `address` is a valid local.
        ok(M, unsafe {
            (vt.GetThreadStaticAddress)(self.this(), class.0, field.0, thread.0, &mut address)
        })?;
        Ok(address as usize)
    }

    /// Address of a thread static for any thread in an application domain
    /// (`ICorProfilerInfo3::GetThreadStaticAddress2`).
    pub fn get_thread_static_address2(
        &self,
        class: ClassId,
        field: Token,
        app_domain: AppDomainId,
        thread: ThreadId,
    ) -> Result<usize> {
        const M: &str = "ICorProfilerInfo3::GetThreadStaticAddress2";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `address` is a valid local.
        ok(M, unsafe {
            (vt.GetThreadStaticAddress2)(
                self.this(),
                class.0,
                field.0,
                app_domain.0,
                thread.0,
                &mut address,
            )
        })?;
        Ok(address as usize)
    }

    /// Address of a context static (`ICorProfilerInfo2::GetContextStaticAddress`; CoreCLR
    /// has no remoting contexts and answers `E_NOTIMPL`).
    pub fn get_context_static_address(
        &self,
        class: ClassId,
        field: Token,
        context: ContextId,
    ) -> Result<usize> {
        const M: &str = "ICorProfilerInfo2::GetContextStaticAddress";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `address` is a valid local.
        ok(M, unsafe {
            (vt.GetContextStaticAddress)(self.this(), class.0, field.0, context.0, &mut address)
        })?;
        Ok(address as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_match_the_idl() {
        assert_eq!(StaticKind::APP_DOMAIN.bits(), 1);
        assert_eq!(StaticKind::THREAD.bits(), 2);
        assert_eq!(StaticKind::CONTEXT.bits(), 4);
        assert_eq!(StaticKind::RVA.bits(), 8);
        assert!(StaticKind::from_bits_retain(0).is_empty());
    }
}
