//! Raw ABI declarations of the CoreCLR profiling API.
//!
//! Everything here mirrors `corprof.idl`, `cor.h`, `corhdr.h` and `corerror.h` from
//! dotnet/runtime (`src/coreclr/inc/`) with the original names, so that a reader can put the
//! IDL beside this crate and compare line by line. Vtables are declared with
//! [`com_vtable!`], which also records the slot of every method; the test in
//! `tests/callback_slots.rs` and `tests/info_slots.rs` pin each slot to the order written down in `tests/slots/`.
//!
//! This crate has no behaviour: the safe layer is `clrprof-sdk`.
#![allow(
    non_snake_case,
    non_camel_case_types,
    non_upper_case_globals,
    clippy::upper_case_acronyms
)]

/// Declares a C enum: a type alias for the integer it is passed as, then one constant of that
/// type per enumerator, all with their names in the IDL or header.
macro_rules! idl_enum {
    (
        $(#[$attr:meta])*
        $name:ident: $repr:ty {
            $( $(#[$vattr:meta])* $variant:ident = $value:expr; )*
        }
    ) => {
        $(#[$attr])*
        pub type $name = $repr;
        $( $(#[$vattr])* pub const $variant: $name = $value; )*
    };
}

pub mod callback;
pub mod consts;
pub mod corhdr;
pub mod guids;
pub mod hresult;
pub mod info;
pub mod metadata;
pub mod misc;
pub mod structs;
pub mod types;
pub mod vtable;

pub use callback::*;
pub use consts::*;
pub use corhdr::*;
pub use guids::*;
pub use hresult::*;
pub use info::*;
pub use metadata::*;
pub use misc::*;
pub use structs::*;
pub use types::*;
pub use vtable::{IUnknownVtbl, RawInterface, Slot, Vtable};
