//! Typed identifiers. The runtime hands out all of them as `UINT_PTR`; distinct types keep a
//! `ClassId` from being passed where a `FunctionId` is expected. All are `#[repr(transparent)]`
//! so they can cross the FFI boundary as they are.

use core::fmt;

macro_rules! runtime_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub usize);

        impl $name {
            /// The null id (the runtime uses 0 for "none").
            pub const NULL: $name = $name(0);
            /// True for the null id.
            pub const fn is_null(self) -> bool {
                self.0 == 0
            }
            /// The raw value as a `u64`, as stored in traces.
            pub const fn as_u64(self) -> u64 {
                self.0 as u64
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }
    };
}

runtime_id!(/// A method instantiation known to the runtime (`FunctionID`).
    FunctionId);
runtime_id!(/// A loaded type, including each generic instantiation (`ClassID`).
    ClassId);
runtime_id!(/// A loaded module (`ModuleID`).
    ModuleId);
runtime_id!(/// A loaded assembly (`AssemblyID`).
    AssemblyId);
runtime_id!(/// An application domain (`AppDomainID`).
    AppDomainId);
runtime_id!(/// A managed thread (`ThreadID`): not an OS thread id.
    ThreadId);
runtime_id!(/// A managed object's address; only valid until the next GC (`ObjectID`).
    ObjectId);
runtime_id!(/// A remoting context (`ContextID`).
    ContextId);
runtime_id!(/// A ReJIT version of a function (`ReJITID`).
    ReJitId);
runtime_id!(/// A GC handle (`GCHandleID`).
    GcHandleId);
runtime_id!(/// The `FunctionIDOrClientID` passed to enter/leave hooks: the FunctionID, or the value
    /// the function id mapper returned for it.
    ClientId);
runtime_id!(/// An opaque frame handle valid only during the callback it was given to (`COR_PRF_FRAME_INFO`).
    FrameInfo);
runtime_id!(/// An opaque enter/leave frame handle (`COR_PRF_ELT_INFO`), valid only inside the hook.
    EltInfo);

/// A metadata token (`mdToken`): table in the high byte, row in the low three bytes.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Token(pub u32);

impl Token {
    /// The nil token.
    pub const NIL: Token = Token(0);
    /// The table, e.g. `0x0600_0000` for MethodDef.
    pub const fn table(self) -> u32 {
        self.0 & 0xFF00_0000
    }
    /// The row number within the table (1-based; 0 is nil).
    pub const fn rid(self) -> u32 {
        self.0 & 0x00FF_FFFF
    }
    /// True when the row is 0.
    pub const fn is_nil(self) -> bool {
        self.rid() == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({:#010x})", self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_in_hex_and_are_pointer_sized() {
        assert_eq!(format!("{:?}", FunctionId(0x7f00)), "FunctionId(0x7f00)");
        assert_eq!(FunctionId(0x10).to_string(), "0x10");
        assert_eq!(
            core::mem::size_of::<ClassId>(),
            core::mem::size_of::<usize>()
        );
        assert!(ModuleId::NULL.is_null());
    }

    #[test]
    fn token_parts() {
        let t = Token(0x0600_002A);
        assert_eq!(t.table(), 0x0600_0000);
        assert_eq!(t.rid(), 0x2A);
        assert!(!t.is_nil());
        assert!(Token(0x0200_0000).is_nil());
    }
}
