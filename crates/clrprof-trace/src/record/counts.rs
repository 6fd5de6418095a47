//! The records of count mode (format 1.4): the methods the agent added call counters to, with
//! their call sites, and the counts of each thread.

use super::{Field, Payload, Record};
use crate::RecordKind;
use crate::wire::{FieldError, Fields, Sink};

/// What kind of call instruction a [`CallSite`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CallKind {
    /// `call`.
    #[default]
    Call,
    /// `callvirt`: the site names the declared method; the method that runs may be an
    /// override.
    CallVirt,
    /// `newobj`: a constructor.
    NewObj,
    /// A value from a newer minor version of the format.
    Other(u8),
}

impl CallKind {
    /// The byte that encodes this kind.
    pub fn to_u8(self) -> u8 {
        match self {
            CallKind::Call => 0,
            CallKind::CallVirt => 1,
            CallKind::NewObj => 2,
            CallKind::Other(v) => v,
        }
    }

    /// The kind a byte encodes.
    pub fn from_u8(v: u8) -> CallKind {
        match v {
            0 => CallKind::Call,
            1 => CallKind::CallVirt,
            2 => CallKind::NewObj,
            v => CallKind::Other(v),
        }
    }
}

/// One call site of a [`CountedMethod`]: `u32 il_offset`, `u8 kind`, `u32 callee_token`,
/// `str callee`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CallSite {
    /// IL offset of the call instruction (of its first prefix) in the method's original body.
    pub il_offset: u32,
    /// `call`, `callvirt` or `newobj`.
    pub kind: CallKind,
    /// The MethodDef, in the caller's module, of the method the instruction names when it
    /// names one of that module's methods; 0 otherwise (another module's method).
    pub callee_token: u32,
    /// The method the instruction names, as it names it: `Demo.Box<int>.Put(int)`,
    /// `System.Console.WriteLine(string)`.
    pub callee: String,
}

impl CallSite {
    /// Bytes of a site whose name is empty: the least one takes.
    const MIN_LEN: usize = 4 + 1 + 4 + 4;
}

/// `[CallSite]`: `u32` count and the sites (at most [`MAX_CALL_SITES`]).
impl Field for Vec<CallSite> {
    fn len(&self) -> usize {
        4 + self[..self.len().min(MAX_CALL_SITES)]
            .iter()
            .map(|s| 4 + 1 + 4 + Field::len(&s.callee))
            .sum::<usize>()
    }
    fn put<S: Sink>(&self, s: &mut S) {
        let sites = &self[..self.len().min(MAX_CALL_SITES)];
        (sites.len() as u32).put(s);
        for site in sites {
            site.il_offset.put(s);
            site.kind.to_u8().put(s);
            site.callee_token.put(s);
            site.callee.put(s);
        }
    }
    fn take(f: &mut Fields<'_>, name: &'static str) -> Result<Self, FieldError> {
        let n = f.count(name, CallSite::MIN_LEN, MAX_CALL_SITES)?;
        (0..n)
            .map(|_| {
                Ok(CallSite {
                    il_offset: f.u32(name)?,
                    kind: CallKind::from_u8(f.u8(name)?),
                    callee_token: f.u32(name)?,
                    callee: f.str(name)?,
                })
            })
            .collect()
    }
}

/// Most call sites one [`CountedMethod`] lists; the agent does not count the calls of a
/// method with more.
pub const MAX_CALL_SITES: usize = 65_536;

records! {
    /// Kind 61 (format 1.4): a method the agent added call counters to (count mode), written
    /// before the first [`CallCounts`] that names it.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    CountedMethod = COUNTED_METHOD {
        /// Its id in this session, which [`CallCounts`] records use.
        id: u32,
        /// Its module (a [`super::ModuleDef`] gives the path).
        module: u64,
        /// Its MethodDef token.
        token: u32,
        /// The one body the runtime compiled from its IL (a `FunctionID`, named by a
        /// [`super::FunctionDef`]); 0 when several bodies share the IL (the instantiations of a
        /// generic method, or of a method of a generic type), or none was seen.
        function: u64,
        /// Declaring type, generic parameters by their declared names (`Shop.Box<T>`).
        type_name: String,
        /// Method name, with its generic parameters (`Pick<T>`).
        method_name: String,
        /// Parameter list (`(bool, T, T)`).
        signature: String,
        /// Its call sites in IL order.
        sites: Vec<CallSite>,
    }

    /// Kind 62 (format 1.4): what one thread counted in one method (count mode), written when
    /// the thread ends and at shutdown, only for methods it counted something in.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    CallCounts = CALL_COUNTS {
        /// The thread's OS thread id; 0 for the threads the agent did not know (their counts
        /// are shared and not exact across them).
        tid: u32,
        /// The [`CountedMethod`]'s `id`.
        method: u32,
        /// Times the method was entered.
        calls: u64,
        /// Calls made at each call site, in the order of the method's `sites`.
        sites: Vec<u64>,
    }
}
