//! Classes: from tokens to ClassIDs and back.

use core::ptr;

use clrprof_sys::*;

use super::buffers::read_array;
use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::ids::{ClassId, ModuleId, Token};

/// What `IsArrayClass` reports about an array type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ArrayClassInfo {
    /// The element type, a `CorElementType` (`ELEMENT_TYPE_I4`, `ELEMENT_TYPE_CLASS`, ...).
    pub element_type: u32,
    /// The element's ClassID; null when the runtime has none for it.
    pub element_class: ClassId,
    /// Number of dimensions.
    pub rank: u32,
}

/// What `GetClassIDInfo` reports: where a class is defined. Both are null/nil for arrays and
/// other types without a TypeDef.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ClassIdInfo {
    /// The module that defines the class.
    pub module: ModuleId,
    /// The class's TypeDef token.
    pub token: Token,
}

/// What `GetClassIDInfo2` reports about a class.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ClassInfo2 {
    /// The module that defines the class.
    pub module: ModuleId,
    /// The class's TypeDef token.
    pub token: Token,
    /// The base class; null for `System.Object` and interfaces.
    pub parent: ClassId,
    /// The ClassIDs of the type arguments of a generic instantiation (empty otherwise).
    pub type_args: Vec<ClassId>,
}

impl ProfilerInfo {
    /// The ClassID of a non-generic TypeDef, loading the type if needed
    /// (`ICorProfilerInfo::GetClassFromToken`). `CORPROF_E_TYPE_IS_PARAMETERIZED` for generic
    /// types (use `get_class_from_token_and_type_args`). May trigger a GC and load types: from
    /// a callback that allows it, not during module/class loading of the same type.
    pub fn get_class_from_token(&self, module: ModuleId, type_def: Token) -> Result<ClassId> {
        const M: &str = "ICorProfilerInfo::GetClassFromToken";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut class: ClassID = 0;
        // SAFETY: `this` is live; `class` is a valid out-param.
        ok(M, unsafe {
            (vt.GetClassFromToken)(self.this(), module.0, type_def.0, &mut class)
        })?;
        Ok(ClassId(class))
    }

    /// Element type, element class and rank if `class` is an array type, `None` if not
    /// (`ICorProfilerInfo::IsArrayClass`, which answers S_FALSE). Any time.
    pub fn is_array_class(&self, class: ClassId) -> Result<Option<ArrayClassInfo>> {
        const M: &str = "ICorProfilerInfo::IsArrayClass";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let (mut element_type, mut element_class, mut rank) = (0u32, 0usize, 0u32);
        // SAFETY: `this` is live; the out-params are valid locals.
        let hr = unsafe {
            (vt.IsArrayClass)(
                self.this(),
                class.0,
                &mut element_type,
                &mut element_class,
                &mut rank,
            )
        };
        ok(M, hr)?;
        if hr == S_FALSE {
            return Ok(None);
        }
        Ok(Some(ArrayClassInfo {
            element_type,
            element_class: ClassId(element_class),
            rank,
        }))
    }

    /// The module and TypeDef of a class (`ICorProfilerInfo::GetClassIDInfo`). Any time;
    /// `CORPROF_E_DATAINCOMPLETE` while the class is still loading.
    pub fn get_class_id_info(&self, class: ClassId) -> Result<ClassIdInfo> {
        const M: &str = "ICorProfilerInfo::GetClassIDInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let (mut module, mut token) = (0usize, 0u32);
        // SAFETY: `this` is live; the out-params are valid locals.
        ok(M, unsafe {
            (vt.GetClassIDInfo)(self.this(), class.0, &mut module, &mut token)
        })?;
        Ok(ClassIdInfo {
            module: ModuleId(module),
            token: Token(token),
        })
    }

    /// Module, TypeDef, parent class and type arguments of a class
    /// (`ICorProfilerInfo2::GetClassIDInfo2`). Any time; fails for arrays
    /// (`CORPROF_E_CLASSID_IS_ARRAY`) and other composite types.
    pub fn get_class_id_info2(&self, class: ClassId) -> Result<ClassInfo2> {
        const M: &str = "ICorProfilerInfo2::GetClassIDInfo2";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let (mut module, mut token, mut parent) = (0usize, 0u32, 0usize);
        let type_args = read_array(M, |cap, count, out: *mut ClassID| {
            // SAFETY: `this` is live; out-params are valid locals; `out` is null with
            // `cap == 0` or has `cap` elements.
            unsafe {
                (vt.GetClassIDInfo2)(
                    self.this(),
                    class.0,
                    &mut module,
                    &mut token,
                    &mut parent,
                    cap,
                    count,
                    out,
                )
            }
        })?;
        Ok(ClassInfo2 {
            module: ModuleId(module),
            token: Token(token),
            parent: ClassId(parent),
            type_args: type_args.into_iter().map(ClassId).collect(),
        })
    }

    /// The ClassID of a TypeDef instantiated with `type_args` (empty for non-generic types),
    /// loading it if needed (`ICorProfilerInfo2::GetClassFromTokenAndTypeArgs`). May trigger
    /// a GC and load types: from a callback that allows it, never while the runtime is loading
    /// the module or a type it depends on.
    pub fn get_class_from_token_and_type_args(
        &self,
        module: ModuleId,
        type_def: Token,
        type_args: &[ClassId],
    ) -> Result<ClassId> {
        const M: &str = "ICorProfilerInfo2::GetClassFromTokenAndTypeArgs";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let (count, args) = type_args_raw(type_args);
        let mut class: ClassID = 0;
        // SAFETY: `this` is live; `ClassId` is a transparent `ClassID`, so `args` points at
        // `count` ClassIDs (or is null with 0); `class` is a valid out-param.
        ok(M, unsafe {
            (vt.GetClassFromTokenAndTypeArgs)(
                self.this(),
                module.0,
                type_def.0,
                count,
                args,
                &mut class,
            )
        })?;
        Ok(ClassId(class))
    }
}

/// A slice of type arguments as the API takes them: a count, and a pointer to that many
/// `ClassID`s (null when there are none). `ClassId` is a transparent `ClassID`.
pub(crate) fn type_args_raw(type_args: &[ClassId]) -> (u32, *const ClassID) {
    let count = u32::try_from(type_args.len()).unwrap_or(u32::MAX);
    let args = if type_args.is_empty() {
        ptr::null()
    } else {
        type_args.as_ptr().cast::<ClassID>()
    };
    (count, args)
}
