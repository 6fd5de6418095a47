//! Shared generic code: which canonical class a body compiled for several instantiations
//! belongs to.
//!
//! The runtime compiles a generic class's methods once for all the instantiations that differ
//! only in reference-type arguments, over the placeholder `System.__Canon`: `Two<int, string>`
//! and `Two<int, object>` run the methods of the canonical class `Two<int, __Canon>`. Each such
//! body has one FunctionID, but `GetFunctionInfo2` tells its class only with a frame
//! (`COR_PRF_FRAME_INFO`, the exact instantiation of one call), which neither a sampled stack
//! nor the enter/leave hooks have. Without one it returns no class at all.
//!
//! The runtime does announce the canonical classes it loads (`ClassLoadFinished` reports
//! `Two<int, __Canon>` next to `Two<int, string>`), and `GetFunctionFromTokenAndTypeArgs`
//! says which body a method of a given class runs. [`SharedClasses`] keeps the canonical
//! instantiations of each generic type; [`SharedClasses::candidates`] lists those of a
//! method's type, and the namer asks the runtime which one's method is the body being named.
//! A class the runtime unloads is forgotten ([`SharedClasses::forget_class`]): ClassIDs are
//! reused after an unload.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::ids::{ClassId, ModuleId, Token};

/// A lock of the names' caches (a poisoned lock is still used: the caches hold no invariant a
/// panic could break).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) use clrprof_events::csharp::{CANON, CANON_ARG};

/// The canonical instantiations the runtime loaded, by generic type definition.
#[derive(Debug, Default)]
pub(super) struct SharedClasses {
    /// The ClassID of `System.__Canon`, once seen.
    canon: Mutex<Option<ClassId>>,
    /// Canonical classes by the (module, TypeDef) of their generic type.
    by_type: Mutex<HashMap<(ModuleId, Token), Vec<ClassId>>>,
}

impl SharedClasses {
    /// The ClassID of `System.__Canon`, if known.
    pub(super) fn canon(&self) -> Option<ClassId> {
        *lock(&self.canon)
    }

    /// Remembers the ClassID of `System.__Canon`.
    pub(super) fn set_canon(&self, class: ClassId) {
        *lock(&self.canon) = Some(class);
    }

    /// Records `class`, a canonical instantiation of the generic type `(module, type_def)`.
    pub(super) fn add(&self, module: ModuleId, type_def: Token, class: ClassId) {
        let mut by_type = lock(&self.by_type);
        let classes = by_type.entry((module, type_def)).or_default();
        if !classes.contains(&class) {
            classes.push(class);
        }
    }

    /// The canonical instantiations of `(module, type_def)` seen so far, in load order.
    pub(super) fn candidates(&self, module: ModuleId, type_def: Token) -> Vec<ClassId> {
        lock(&self.by_type)
            .get(&(module, type_def))
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets an unloaded class.
    pub(super) fn forget_class(&self, class: ClassId) {
        let mut canon = lock(&self.canon);
        if *canon == Some(class) {
            *canon = None;
        }
        drop(canon);
        lock(&self.by_type).retain(|_, classes| {
            classes.retain(|&c| c != class);
            !classes.is_empty()
        });
    }

    /// Forgets the generic types of an unloaded module.
    pub(super) fn forget_module(&self, module: ModuleId) {
        lock(&self.by_type).retain(|(m, _), _| *m != module);
    }

    /// Forgets everything.
    pub(super) fn clear(&self) {
        *lock(&self.canon) = None;
        lock(&self.by_type).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: ModuleId = ModuleId(0x10);
    const TWO: Token = Token(0x0200_0002);
    const OTHER: Token = Token(0x0200_0003);

    #[test]
    fn candidates_by_generic_type_in_load_order() {
        let s = SharedClasses::default();
        s.add(MODULE, TWO, ClassId(0x100));
        s.add(MODULE, OTHER, ClassId(0x200));
        s.add(MODULE, TWO, ClassId(0x300));
        s.add(MODULE, TWO, ClassId(0x100));
        assert_eq!(s.candidates(MODULE, TWO), [ClassId(0x100), ClassId(0x300)]);
        assert_eq!(s.candidates(ModuleId(0x11), TWO), []);
    }

    #[test]
    fn unloaded_classes_and_modules_are_forgotten() {
        let s = SharedClasses::default();
        s.set_canon(ClassId(0x50));
        s.add(MODULE, TWO, ClassId(0x100));
        s.add(MODULE, TWO, ClassId(0x300));
        s.add(ModuleId(0x20), TWO, ClassId(0x400));
        s.forget_class(ClassId(0x100));
        assert_eq!(s.candidates(MODULE, TWO), [ClassId(0x300)]);
        s.forget_module(MODULE);
        assert_eq!(s.candidates(MODULE, TWO), []);
        assert_eq!(s.candidates(ModuleId(0x20), TWO), [ClassId(0x400)]);
        assert_eq!(s.canon(), Some(ClassId(0x50)));
        s.forget_class(ClassId(0x50));
        assert_eq!(s.canon(), None);
        s.clear();
        assert_eq!(s.candidates(ModuleId(0x20), TWO), []);
    }
}
