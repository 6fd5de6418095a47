//! How COM vtables are declared, and the slot table each declaration carries.
//!
//! A COM interface pointer points at an object whose first word points at a vtable: a table of
//! function pointers, the parent interface's methods first. [`com_vtable!`] declares such a
//! table as a `#[repr(C)]` struct whose first field `base__` is the parent's table, and
//! implements [`Vtable`] for it so that tests can list every method with its slot index.

use core::ffi::c_void;

use crate::types::{GUID, HRESULT, ULONG};

/// One method of an interface and its 0-based index in the vtable (IUnknown is 0..=2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The interface that introduced the method, e.g. `"ICorProfilerCallback2"`.
    pub interface: &'static str,
    /// The method name as written in the IDL.
    pub method: &'static str,
    /// Index of the function pointer in the complete vtable.
    pub index: usize,
}

/// Implemented by every vtable struct declared with [`com_vtable!`].
pub trait Vtable {
    /// The interface name as written in the IDL.
    const INTERFACE: &'static str;
    /// Appends every slot of this vtable, parents first, to `out`.
    fn slots(out: &mut Vec<Slot>);
    /// Every slot of this vtable, parents first.
    fn all_slots() -> Vec<Slot> {
        let mut out = Vec::new();
        Self::slots(&mut out);
        out
    }
}

/// Declares a COM vtable struct that extends `$base` and records its slots.
///
/// ```ignore
/// com_vtable! {
///     /// ICorProfilerCallback2: .NET 2.0 additions.
///     pub struct ICorProfilerCallback2Vtbl("ICorProfilerCallback2"): ICorProfilerCallbackVtbl {
///         fn ThreadNameChanged(threadId: ThreadID, cchName: ULONG, name: *const WCHAR) -> HRESULT;
///     }
/// }
/// ```
/// Each `fn` becomes a field `unsafe extern "system" fn(this: *mut c_void, ...) -> Ret`, in the
/// order written, which must be the IDL's order.
#[macro_export]
macro_rules! com_vtable {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident ($iname:literal) : $base:ty {
            $(
                $(#[$mattr:meta])*
                fn $method:ident ( $( $arg:ident : $argty:ty ),* $(,)? ) -> $ret:ty ;
            )*
        }
    ) => {
        $(#[$attr])*
        #[repr(C)]
        #[allow(non_snake_case, clippy::type_complexity)]
        $vis struct $name {
            /// The parent interface's methods.
            pub base__: $base,
            $(
                $(#[$mattr])*
                pub $method: unsafe extern "system" fn(this: *mut ::core::ffi::c_void $(, $arg: $argty)*) -> $ret,
            )*
        }

        impl $crate::vtable::Vtable for $name {
            const INTERFACE: &'static str = $iname;
            fn slots(out: &mut ::std::vec::Vec<$crate::vtable::Slot>) {
                <$base as $crate::vtable::Vtable>::slots(out);
                $(
                    out.push($crate::vtable::Slot {
                        interface: $iname,
                        method: stringify!($method),
                        index: ::core::mem::offset_of!($name, $method) / ::core::mem::size_of::<usize>(),
                    });
                )*
            }
        }
    };
}

/// The root of every COM vtable.
#[repr(C)]
#[allow(non_snake_case)]
pub struct IUnknownVtbl {
    pub QueryInterface: unsafe extern "system" fn(
        this: *mut c_void,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT,
    pub AddRef: unsafe extern "system" fn(this: *mut c_void) -> ULONG,
    pub Release: unsafe extern "system" fn(this: *mut c_void) -> ULONG,
}

impl Vtable for IUnknownVtbl {
    const INTERFACE: &'static str = "IUnknown";
    fn slots(out: &mut Vec<Slot>) {
        let word = core::mem::size_of::<usize>();
        out.push(Slot {
            interface: "IUnknown",
            method: "QueryInterface",
            index: core::mem::offset_of!(IUnknownVtbl, QueryInterface) / word,
        });
        out.push(Slot {
            interface: "IUnknown",
            method: "AddRef",
            index: core::mem::offset_of!(IUnknownVtbl, AddRef) / word,
        });
        out.push(Slot {
            interface: "IUnknown",
            method: "Release",
            index: core::mem::offset_of!(IUnknownVtbl, Release) / word,
        });
    }
}

/// The memory layout of any COM object as seen through an interface pointer: its first word
/// points at the vtable.
#[repr(C)]
pub struct RawInterface<V> {
    pub vtbl: *const V,
}
