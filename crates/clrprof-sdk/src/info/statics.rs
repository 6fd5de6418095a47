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
use crate::error::{Error, Result};
use crate::ids::{AppDomainId, ClassId, ContextId, ObjectId, ThreadId, Token};
use crate::metadata::TypeSig;
use crate::metadata::signature::parse_field;

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

/// A static field whose type is a reference type (a class, interface, array, `string`,
/// `object` or instantiated generic class), of one class: one slot per application domain,
/// or per thread for a `[ThreadStatic]`, that holds an `ObjectId` or null. Read it with
/// [`ProfilerInfo::read_reference_static`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceStatic {
    class: ClassId,
    field: Token,
    thread_static: bool,
}

impl ReferenceStatic {
    /// The static `field` of `class`, of the kind `kind` (from
    /// [`ProfilerInfo::get_static_field_info`]), with the metadata signature `signature`
    /// (`GetFieldProps`): `None` unless the field is an ordinary or thread static whose type is
    /// a reference type. A field typed by a generic parameter (`static T Value`) is `None`:
    /// its signature does not say whether the instantiation's argument is a reference type.
    pub fn new(
        class: ClassId,
        field: Token,
        signature: &[u8],
        kind: StaticKind,
    ) -> Option<ReferenceStatic> {
        let thread_static = if kind == StaticKind::APP_DOMAIN {
            false
        } else if kind == StaticKind::THREAD {
            true
        } else {
            return None;
        };
        holds_reference(signature).then_some(ReferenceStatic {
            class,
            field,
            thread_static,
        })
    }

    /// The class that declares the field.
    pub fn class(&self) -> ClassId {
        self.class
    }

    /// The field's token.
    pub fn field(&self) -> Token {
        self.field
    }

    /// True for a `[ThreadStatic]` field.
    pub fn is_thread_static(&self) -> bool {
        self.thread_static
    }
}

/// Whether a field of this signature (`FIELD` CustomMod* Type) holds an object reference.
pub fn holds_reference(signature: &[u8]) -> bool {
    parse_field(signature).is_ok_and(|t| {
        matches!(
            t.strip_modifiers(),
            TypeSig::String
                | TypeSig::Object
                | TypeSig::Class(_)
                | TypeSig::SzArray(_)
                | TypeSig::Array(..)
                | TypeSig::GenericInst {
                    value_type: false,
                    ..
                }
        )
    })
}

impl ProfilerInfo {
    /// The object a reference-type static holds now (`ObjectId::NULL` if none): in
    /// `app_domain`, and for a `[ThreadStatic]` on `thread`. Fails with
    /// `CORPROF_E_DATAINCOMPLETE` while the class's statics are not allocated (its static
    /// constructor has not run) or the thread has none. The reference can move in the next
    /// collection: read it while the runtime is suspended (e.g. in
    /// `GarbageCollectionFinished`, where it matches the heap walk's object ids).
    pub fn read_reference_static(
        &self,
        s: &ReferenceStatic,
        app_domain: AppDomainId,
        thread: ThreadId,
    ) -> Result<ObjectId> {
        let address = if s.thread_static {
            self.get_thread_static_address2(s.class, s.field, app_domain, thread)?
        } else {
            self.get_app_domain_static_address(s.class, s.field, app_domain)?
        };
        if address == 0 {
            return Ok(ObjectId::NULL);
        }
        if !address.is_multiple_of(align_of::<usize>()) {
            return Err(Error::InvalidData {
                context: "static field address",
                reason: format!("{address:#x} is not the address of an object reference"),
            });
        }
        // SAFETY: the runtime gave `address` as the storage of this static field in this
        // domain (or thread), and the field's signature says it holds an object reference:
        // an aligned, pointer-sized slot that stays allocated while its class is loaded. A
        // volatile read: the program may write the slot concurrently when it runs.
        let value = unsafe { ptr::read_volatile(address as *const usize) };
        Ok(ObjectId(value))
    }

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
    fn reference_types_are_told_from_the_signature() {
        let class = ClassId(0x1000);
        let field = Token(0x0400_0001);
        let kind = StaticKind::APP_DOMAIN;
        let reference = |sig: &[u8]| ReferenceStatic::new(class, field, sig, kind).is_some();
        // string, object, class, int[], List<int> (GENERICINST CLASS), volatile object.
        assert!(reference(&[0x06, 0x0e]));
        assert!(reference(&[0x06, 0x1c]));
        assert!(reference(&[0x06, 0x12, 0x08]));
        assert!(reference(&[0x06, 0x1d, 0x08]));
        assert!(reference(&[0x06, 0x15, 0x12, 0x08, 0x01, 0x08]));
        assert!(reference(&[0x06, 0x1f, 0x09, 0x1c]));
        // int, a struct, a generic struct, a generic parameter, garbage.
        assert!(!reference(&[0x06, 0x08]));
        assert!(!reference(&[0x06, 0x11, 0x08]));
        assert!(!reference(&[0x06, 0x15, 0x11, 0x08, 0x01, 0x08]));
        assert!(!reference(&[0x06, 0x13, 0x00]));
        assert!(!reference(&[0x07]));
        // Only ordinary and thread statics.
        let thread = ReferenceStatic::new(class, field, &[0x06, 0x0e], StaticKind::THREAD);
        assert!(thread.is_some_and(|s| s.is_thread_static()));
        assert!(ReferenceStatic::new(class, field, &[0x06, 0x0e], StaticKind::RVA).is_none());
        assert!(ReferenceStatic::new(class, field, &[0x06, 0x0e], StaticKind::empty()).is_none());
    }

    #[test]
    fn kinds_match_the_idl() {
        assert_eq!(StaticKind::APP_DOMAIN.bits(), 1);
        assert_eq!(StaticKind::THREAD.bits(), 2);
        assert_eq!(StaticKind::CONTEXT.bits(), 4);
        assert_eq!(StaticKind::RVA.bits(), 8);
        assert!(StaticKind::from_bits_retain(0).is_empty());
    }
}
