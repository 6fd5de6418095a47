//! Signature blobs (ECMA-335 Partition II §23.2) parsed into trees.
//!
//! The metadata API hands out signatures as byte blobs: a method's parameter and return types
//! ([`MethodSig`]), a field's type, the local variables of a method body, a property's type, the
//! type arguments of a generic method instantiation (MethodSpec), and the type of a TypeSpec.
//! The parsers here turn any blob into a [`TypeSig`] tree or a [`SigError`]: they never panic,
//! whatever the bytes, and they stop at [`MAX_DEPTH`] levels of nesting, so a hostile or corrupt
//! blob cannot exhaust the stack.
//!
//! Custom modifiers (`modreq`/`modopt`) are kept in the tree as [`TypeSig::Modified`]; use
//! [`TypeSig::strip_modifiers`] to look through them.

use core::fmt;

use clrprof_sys as sys;

use crate::ids::Token;

/// The deepest nesting of types (and function pointer signatures) the parsers accept. Real
/// signatures stay far below it; deeper blobs are rejected with [`SigErrorKind::TooDeep`].
pub const MAX_DEPTH: usize = 64;

/// Why a signature blob could not be parsed, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigError {
    /// Byte offset in the blob where the problem was found.
    pub offset: usize,
    /// What was wrong.
    pub kind: SigErrorKind,
}

/// The kinds of [`SigError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigErrorKind {
    /// The blob ended in the middle of an item.
    UnexpectedEnd,
    /// A compressed integer started with the invalid prefix `111`.
    BadCompressedInt(u8),
    /// A byte that is not an element type where a type was expected.
    BadElementType(u8),
    /// A TypeDefOrRefOrSpecEncoded value with the reserved tag 3.
    BadTypeToken(u32),
    /// The first byte is not the calling convention this parser expects.
    BadCallingConvention(u8),
    /// A count larger than the rest of the blob could possibly hold.
    CountTooLarge(u32),
    /// A `SENTINEL` outside a method's parameter list, or a second one.
    MisplacedSentinel,
    /// Types nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            SigErrorKind::UnexpectedEnd => {
                write!(f, "signature ends early at byte {}", self.offset)
            }
            SigErrorKind::BadCompressedInt(b) => {
                write!(f, "bad compressed integer {b:#04x} at byte {}", self.offset)
            }
            SigErrorKind::BadElementType(b) => {
                write!(f, "bad element type {b:#04x} at byte {}", self.offset)
            }
            SigErrorKind::BadTypeToken(v) => {
                write!(f, "bad encoded type token {v:#x} at byte {}", self.offset)
            }
            SigErrorKind::BadCallingConvention(b) => {
                write!(
                    f,
                    "unexpected calling convention {b:#04x} at byte {}",
                    self.offset
                )
            }
            SigErrorKind::CountTooLarge(n) => {
                write!(
                    f,
                    "count {n} too large for the blob at byte {}",
                    self.offset
                )
            }
            SigErrorKind::MisplacedSentinel => {
                write!(f, "misplaced sentinel at byte {}", self.offset)
            }
            SigErrorKind::TooDeep => write!(
                f,
                "types nested deeper than {MAX_DEPTH} levels at byte {}",
                self.offset
            ),
        }
    }
}

impl std::error::Error for SigError {}

impl From<SigError> for crate::error::Error {
    fn from(e: SigError) -> Self {
        crate::error::Error::InvalidData {
            context: "signature blob",
            reason: e.to_string(),
        }
    }
}

/// The result type of the parsers.
pub type SigResult<T> = Result<T, SigError>;

/// One type in a signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TypeSig {
    /// `void` (return types and `void*`).
    Void,
    /// `bool`.
    Boolean,
    /// `char` (UTF-16 code unit).
    Char,
    /// `sbyte`.
    I1,
    /// `byte`.
    U1,
    /// `short`.
    I2,
    /// `ushort`.
    U2,
    /// `int`.
    I4,
    /// `uint`.
    U4,
    /// `long`.
    I8,
    /// `ulong`.
    U8,
    /// `float`.
    R4,
    /// `double`.
    R8,
    /// `nint` (`System.IntPtr`).
    I,
    /// `nuint` (`System.UIntPtr`).
    U,
    /// `string`.
    String,
    /// `object`.
    Object,
    /// `System.TypedReference`.
    TypedByRef,
    /// A reference type named by a TypeDef, TypeRef or TypeSpec token.
    Class(Token),
    /// A value type named by a TypeDef, TypeRef or TypeSpec token.
    ValueType(Token),
    /// An instantiated generic type, e.g. `List<int>`.
    GenericInst {
        /// True for `VALUETYPE` (a generic struct), false for `CLASS`.
        value_type: bool,
        /// The generic type definition (TypeDef or TypeRef).
        generic: Token,
        /// The type arguments.
        args: Vec<TypeSig>,
    },
    /// The n-th generic parameter of the enclosing type (`!n`).
    Var(u32),
    /// The n-th generic parameter of the method (`!!n`).
    MVar(u32),
    /// A single-dimensional, zero-based array, e.g. `int[]`.
    SzArray(Box<TypeSig>),
    /// A general array, e.g. `int[,]`.
    Array(Box<TypeSig>, ArrayShape),
    /// A managed reference (`ref T`).
    ByRef(Box<TypeSig>),
    /// An unmanaged pointer (`T*`).
    Ptr(Box<TypeSig>),
    /// A function pointer.
    FnPtr(Box<MethodSig>),
    /// A type with a custom modifier (`modreq`/`modopt`).
    Modified {
        /// `modreq` (true) or `modopt` (false).
        required: bool,
        /// The modifier class (TypeDef, TypeRef or TypeSpec).
        modifier: Token,
        /// The modified type.
        ty: Box<TypeSig>,
    },
    /// A pinned local variable.
    Pinned(Box<TypeSig>),
    /// `ELEMENT_TYPE_INTERNAL`: a runtime type handle embedded in a signature the runtime made.
    Internal(u64),
    /// An instantiated generic type whose definition is a runtime type handle
    /// (`GENERICINST INTERNAL <handle> <count> <args>`), in a signature the runtime made (a
    /// dynamic method's: `ReadOnlySpan<char>` in a compiled regular expression's).
    InternalGenericInst {
        /// The generic type definition's type handle.
        generic: u64,
        /// The type arguments.
        args: Vec<TypeSig>,
    },
}

/// The dimensions of a general array (`ELEMENT_TYPE_ARRAY`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ArrayShape {
    /// Number of dimensions.
    pub rank: u32,
    /// Sizes of the first dimensions that have one.
    pub sizes: Vec<u32>,
    /// Lower bounds of the first dimensions that have one.
    pub lower_bounds: Vec<i32>,
}

/// The calling convention kind of a method signature (low four bits of its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallConv {
    /// Managed default.
    Default,
    /// Unmanaged `cdecl`.
    C,
    /// Unmanaged `stdcall`.
    StdCall,
    /// Unmanaged `thiscall`.
    ThisCall,
    /// Unmanaged `fastcall`.
    FastCall,
    /// Managed variable arguments.
    VarArg,
    /// Unmanaged, convention given by modifiers.
    Unmanaged,
    /// Native variable arguments.
    NativeVarArg,
    /// Any other value (kept as is).
    Other(u8),
}

impl CallConv {
    fn from_kind(kind: u8) -> CallConv {
        match u32::from(kind) {
            sys::IMAGE_CEE_CS_CALLCONV_DEFAULT => CallConv::Default,
            sys::IMAGE_CEE_CS_CALLCONV_C => CallConv::C,
            sys::IMAGE_CEE_CS_CALLCONV_STDCALL => CallConv::StdCall,
            sys::IMAGE_CEE_CS_CALLCONV_THISCALL => CallConv::ThisCall,
            sys::IMAGE_CEE_CS_CALLCONV_FASTCALL => CallConv::FastCall,
            sys::IMAGE_CEE_CS_CALLCONV_VARARG => CallConv::VarArg,
            sys::IMAGE_CEE_CS_CALLCONV_UNMANAGED => CallConv::Unmanaged,
            sys::IMAGE_CEE_CS_CALLCONV_NATIVEVARARG => CallConv::NativeVarArg,
            _ => CallConv::Other(kind),
        }
    }
}

/// A method signature (MethodDefSig, MethodRefSig, StandAloneMethodSig or a function pointer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MethodSig {
    /// The calling convention kind.
    pub call_conv: CallConv,
    /// Number of generic parameters of the method (0 if it is not generic).
    pub generic_param_count: u32,
    /// An instance method (`this` is passed).
    pub has_this: bool,
    /// `this` is listed explicitly as the first parameter.
    pub explicit_this: bool,
    /// The return type.
    pub ret: TypeSig,
    /// The parameter types, without `this`.
    pub params: Vec<TypeSig>,
    /// For vararg call sites: the index in `params` where the variable part starts.
    pub sentinel: Option<usize>,
}

/// A property signature (`PropertySig`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PropertySig {
    /// An instance property.
    pub has_this: bool,
    /// The property type.
    pub ty: TypeSig,
    /// Indexer parameters.
    pub params: Vec<TypeSig>,
}

/// Any signature blob, told apart by its first byte.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Signature {
    /// A method or function pointer signature.
    Method(MethodSig),
    /// A field's type (`FIELD`).
    Field(TypeSig),
    /// Local variable types (`LOCAL_SIG`).
    Locals(Vec<TypeSig>),
    /// A property signature (`PROPERTY`).
    Property(PropertySig),
    /// The type arguments of a MethodSpec (`GENERICINST`).
    MethodSpec(Vec<TypeSig>),
}

impl Signature {
    /// Parses a blob of any kind, dispatching on its calling convention byte.
    pub fn parse(blob: &[u8]) -> SigResult<Signature> {
        let first = *blob.first().ok_or(SigError {
            offset: 0,
            kind: SigErrorKind::UnexpectedEnd,
        })?;
        match u32::from(first & 0x0f) {
            sys::IMAGE_CEE_CS_CALLCONV_FIELD => parse_field(blob).map(Signature::Field),
            sys::IMAGE_CEE_CS_CALLCONV_LOCAL_SIG => parse_locals(blob).map(Signature::Locals),
            sys::IMAGE_CEE_CS_CALLCONV_PROPERTY => parse_property(blob).map(Signature::Property),
            sys::IMAGE_CEE_CS_CALLCONV_GENERICINST => {
                parse_method_spec(blob).map(Signature::MethodSpec)
            }
            _ => MethodSig::parse(blob).map(Signature::Method),
        }
    }
}

impl MethodSig {
    /// Parses a method signature (the blob of `GetMethodProps`, `GetMemberRefProps` for a
    /// method, or a standalone method signature).
    pub fn parse(blob: &[u8]) -> SigResult<MethodSig> {
        let mut r = Reader::new(blob);
        r.method_sig(0)
    }

    /// The number of parameters, without `this`.
    pub fn param_count(&self) -> usize {
        self.params.len()
    }
}

impl TypeSig {
    /// Parses one type, e.g. the blob of a TypeSpec (`GetTypeSpecFromToken`).
    pub fn parse(blob: &[u8]) -> SigResult<TypeSig> {
        Reader::new(blob).ty(0)
    }

    /// The type without any custom modifiers on the outside.
    pub fn strip_modifiers(&self) -> &TypeSig {
        let mut t = self;
        while let TypeSig::Modified { ty, .. } = t {
            t = ty;
        }
        t
    }

    /// True for the primitive types that have a one-byte element type code (including
    /// `string` and `object`).
    pub fn is_primitive(&self) -> bool {
        self.primitive_element_type().is_some()
    }

    /// The `ELEMENT_TYPE_*` code of a primitive type.
    pub fn primitive_element_type(&self) -> Option<u32> {
        Some(match self {
            TypeSig::Void => sys::ELEMENT_TYPE_VOID,
            TypeSig::Boolean => sys::ELEMENT_TYPE_BOOLEAN,
            TypeSig::Char => sys::ELEMENT_TYPE_CHAR,
            TypeSig::I1 => sys::ELEMENT_TYPE_I1,
            TypeSig::U1 => sys::ELEMENT_TYPE_U1,
            TypeSig::I2 => sys::ELEMENT_TYPE_I2,
            TypeSig::U2 => sys::ELEMENT_TYPE_U2,
            TypeSig::I4 => sys::ELEMENT_TYPE_I4,
            TypeSig::U4 => sys::ELEMENT_TYPE_U4,
            TypeSig::I8 => sys::ELEMENT_TYPE_I8,
            TypeSig::U8 => sys::ELEMENT_TYPE_U8,
            TypeSig::R4 => sys::ELEMENT_TYPE_R4,
            TypeSig::R8 => sys::ELEMENT_TYPE_R8,
            TypeSig::I => sys::ELEMENT_TYPE_I,
            TypeSig::U => sys::ELEMENT_TYPE_U,
            TypeSig::String => sys::ELEMENT_TYPE_STRING,
            TypeSig::Object => sys::ELEMENT_TYPE_OBJECT,
            TypeSig::TypedByRef => sys::ELEMENT_TYPE_TYPEDBYREF,
            _ => return None,
        })
    }

    /// The primitive type of an `ELEMENT_TYPE_*` code (as `IsArrayClass` reports element
    /// types), or `None` for codes that need more than one byte.
    pub fn from_element_type(code: u32) -> Option<TypeSig> {
        Some(match code {
            sys::ELEMENT_TYPE_VOID => TypeSig::Void,
            sys::ELEMENT_TYPE_BOOLEAN => TypeSig::Boolean,
            sys::ELEMENT_TYPE_CHAR => TypeSig::Char,
            sys::ELEMENT_TYPE_I1 => TypeSig::I1,
            sys::ELEMENT_TYPE_U1 => TypeSig::U1,
            sys::ELEMENT_TYPE_I2 => TypeSig::I2,
            sys::ELEMENT_TYPE_U2 => TypeSig::U2,
            sys::ELEMENT_TYPE_I4 => TypeSig::I4,
            sys::ELEMENT_TYPE_U4 => TypeSig::U4,
            sys::ELEMENT_TYPE_I8 => TypeSig::I8,
            sys::ELEMENT_TYPE_U8 => TypeSig::U8,
            sys::ELEMENT_TYPE_R4 => TypeSig::R4,
            sys::ELEMENT_TYPE_R8 => TypeSig::R8,
            sys::ELEMENT_TYPE_I => TypeSig::I,
            sys::ELEMENT_TYPE_U => TypeSig::U,
            sys::ELEMENT_TYPE_STRING => TypeSig::String,
            sys::ELEMENT_TYPE_OBJECT => TypeSig::Object,
            sys::ELEMENT_TYPE_TYPEDBYREF => TypeSig::TypedByRef,
            _ => return None,
        })
    }
}

/// Parses a field signature (`FIELD` CustomMod* Type) and returns the field's type.
pub fn parse_field(blob: &[u8]) -> SigResult<TypeSig> {
    let mut r = Reader::new(blob);
    r.expect_kind(sys::IMAGE_CEE_CS_CALLCONV_FIELD)?;
    r.ty(0)
}

/// Parses a local variable signature (`LOCAL_SIG` Count Local*), e.g. the blob
/// `GetSigFromToken` returns for a method body's local signature token.
pub fn parse_locals(blob: &[u8]) -> SigResult<Vec<TypeSig>> {
    let mut r = Reader::new(blob);
    r.expect_kind(sys::IMAGE_CEE_CS_CALLCONV_LOCAL_SIG)?;
    let count = r.count()?;
    let mut locals = Vec::with_capacity(count.min(16));
    for _ in 0..count {
        locals.push(r.ty(0)?);
    }
    Ok(locals)
}

/// Parses a property signature (`PROPERTY` Count CustomMod* Type Param*).
pub fn parse_property(blob: &[u8]) -> SigResult<PropertySig> {
    let mut r = Reader::new(blob);
    let first = r.expect_kind(sys::IMAGE_CEE_CS_CALLCONV_PROPERTY)?;
    let count = r.count()?;
    let ty = r.ty(0)?;
    let mut params = Vec::with_capacity(count.min(16));
    for _ in 0..count {
        params.push(r.ty(0)?);
    }
    Ok(PropertySig {
        has_this: u32::from(first) & sys::IMAGE_CEE_CS_CALLCONV_HASTHIS != 0,
        ty,
        params,
    })
}

/// Parses a MethodSpec instantiation blob (`GENERICINST` Count Type*): the method's type
/// arguments.
pub fn parse_method_spec(blob: &[u8]) -> SigResult<Vec<TypeSig>> {
    let mut r = Reader::new(blob);
    r.expect_kind(sys::IMAGE_CEE_CS_CALLCONV_GENERICINST)?;
    let count = r.count()?;
    let mut args = Vec::with_capacity(count.min(16));
    for _ in 0..count {
        args.push(r.ty(0)?);
    }
    Ok(args)
}

/// Decodes a TypeDefOrRefOrSpecEncoded value into a token.
pub fn decode_type_token(encoded: u32) -> Option<Token> {
    let table = match encoded & 3 {
        0 => sys::mdtTypeDef,
        1 => sys::mdtTypeRef,
        2 => sys::mdtTypeSpec,
        _ => return None,
    };
    Some(Token((encoded >> 2) | table))
}

/// Reads the compressed unsigned integer (ECMA-335 II.23.2) at the start of `bytes`: its value
/// and its size (1, 2 or 4 bytes). `None` when the first byte starts no compressed integer
/// (`111xxxxx`) or the bytes end before the integer does.
pub fn read_compressed(bytes: &[u8]) -> Option<(u32, usize)> {
    let first = *bytes.first()?;
    if first & 0x80 == 0 {
        Some((u32::from(first), 1))
    } else if first & 0xC0 == 0x80 {
        Some((
            (u32::from(first & 0x3F) << 8) | u32::from(*bytes.get(1)?),
            2,
        ))
    } else if first & 0xE0 == 0xC0 {
        let v = (u32::from(first & 0x1F) << 24)
            | (u32::from(*bytes.get(1)?) << 16)
            | (u32::from(*bytes.get(2)?) << 8)
            | u32::from(*bytes.get(3)?);
        Some((v, 4))
    } else {
        None
    }
}

/// A cursor over a blob. Every read checks bounds.
struct Reader<'a> {
    blob: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(blob: &'a [u8]) -> Self {
        Reader { blob, pos: 0 }
    }

    fn err<T>(&self, kind: SigErrorKind) -> SigResult<T> {
        Err(SigError {
            offset: self.pos,
            kind,
        })
    }

    fn remaining(&self) -> usize {
        self.blob.len().saturating_sub(self.pos)
    }

    fn peek(&self) -> SigResult<u8> {
        match self.blob.get(self.pos) {
            Some(&b) => Ok(b),
            None => self.err(SigErrorKind::UnexpectedEnd),
        }
    }

    fn byte(&mut self) -> SigResult<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads the first byte and checks that its kind (low nibble) is `kind`.
    fn expect_kind(&mut self, kind: u32) -> SigResult<u8> {
        let b = self.peek()?;
        if u32::from(b & 0x0f) != kind {
            return self.err(SigErrorKind::BadCallingConvention(b));
        }
        self.pos += 1;
        Ok(b)
    }

    /// A compressed unsigned integer (1, 2 or 4 bytes) and the number of bytes it used.
    fn compressed_with_len(&mut self) -> SigResult<(u32, usize)> {
        let b0 = self.peek()?;
        let Some((v, len)) = read_compressed(&self.blob[self.pos..]) else {
            if b0 & 0xE0 == 0xE0 {
                return self.err(SigErrorKind::BadCompressedInt(b0));
            }
            return Err(SigError {
                offset: self.blob.len(),
                kind: SigErrorKind::UnexpectedEnd,
            });
        };
        self.pos += len;
        Ok((v, len))
    }

    fn compressed(&mut self) -> SigResult<u32> {
        self.compressed_with_len().map(|(v, _)| v)
    }

    /// A compressed signed integer: the two's complement value rotated so that the sign bit
    /// is the lowest bit, then compressed like an unsigned one.
    fn compressed_signed(&mut self) -> SigResult<i32> {
        let (raw, len) = self.compressed_with_len()?;
        let magnitude = (raw >> 1) as i32;
        if raw & 1 == 0 {
            return Ok(magnitude);
        }
        let bias: i32 = match len {
            1 => 0x40,
            2 => 0x2000,
            _ => 0x1000_0000,
        };
        Ok(magnitude - bias)
    }

    /// A runtime type handle (`ELEMENT_TYPE_INTERNAL`'s operand): a pointer-sized word.
    fn handle(&mut self) -> SigResult<u64> {
        const WORD: usize = core::mem::size_of::<usize>();
        if self.remaining() < WORD {
            return Err(SigError {
                offset: self.blob.len(),
                kind: SigErrorKind::UnexpectedEnd,
            });
        }
        let mut bytes = [0u8; 8];
        bytes[..WORD].copy_from_slice(&self.blob[self.pos..self.pos + WORD]);
        self.pos += WORD;
        Ok(u64::from_le_bytes(bytes))
    }

    /// A count of items that each take at least one byte: rejected when the rest of the blob
    /// is too short to hold that many.
    fn count(&mut self) -> SigResult<usize> {
        let start = self.pos;
        let n = self.compressed()?;
        if n as usize > self.remaining() {
            return Err(SigError {
                offset: start,
                kind: SigErrorKind::CountTooLarge(n),
            });
        }
        Ok(n as usize)
    }

    /// A count of compressed integers (array sizes/bounds): same check.
    fn small_count(&mut self) -> SigResult<usize> {
        self.count()
    }

    fn type_token(&mut self) -> SigResult<Token> {
        let start = self.pos;
        let v = self.compressed()?;
        decode_type_token(v).ok_or(SigError {
            offset: start,
            kind: SigErrorKind::BadTypeToken(v),
        })
    }

    fn boxed(&mut self, depth: usize) -> SigResult<Box<TypeSig>> {
        self.ty(depth + 1).map(Box::new)
    }

    /// One type, with any prefixes (custom modifiers, `PINNED`, `BYREF`).
    fn ty(&mut self, depth: usize) -> SigResult<TypeSig> {
        if depth > MAX_DEPTH {
            return self.err(SigErrorKind::TooDeep);
        }
        let start = self.pos;
        let code = self.byte()?;
        if let Some(primitive) = TypeSig::from_element_type(u32::from(code)) {
            return Ok(primitive);
        }
        let t = match u32::from(code) {
            sys::ELEMENT_TYPE_CLASS => TypeSig::Class(self.type_token()?),
            sys::ELEMENT_TYPE_VALUETYPE => TypeSig::ValueType(self.type_token()?),
            sys::ELEMENT_TYPE_VAR => TypeSig::Var(self.compressed()?),
            sys::ELEMENT_TYPE_MVAR => TypeSig::MVar(self.compressed()?),
            sys::ELEMENT_TYPE_SZARRAY => TypeSig::SzArray(self.boxed(depth)?),
            sys::ELEMENT_TYPE_BYREF => TypeSig::ByRef(self.boxed(depth)?),
            sys::ELEMENT_TYPE_PTR => TypeSig::Ptr(self.boxed(depth)?),
            sys::ELEMENT_TYPE_PINNED => TypeSig::Pinned(self.boxed(depth)?),
            sys::ELEMENT_TYPE_CMOD_REQD | sys::ELEMENT_TYPE_CMOD_OPT => {
                let modifier = self.type_token()?;
                TypeSig::Modified {
                    required: u32::from(code) == sys::ELEMENT_TYPE_CMOD_REQD,
                    modifier,
                    ty: self.boxed(depth)?,
                }
            }
            sys::ELEMENT_TYPE_ARRAY => {
                let elem = self.boxed(depth)?;
                let rank = self.compressed()?;
                let n_sizes = self.small_count()?;
                let mut sizes = Vec::with_capacity(n_sizes.min(8));
                for _ in 0..n_sizes {
                    sizes.push(self.compressed()?);
                }
                let n_bounds = self.small_count()?;
                let mut lower_bounds = Vec::with_capacity(n_bounds.min(8));
                for _ in 0..n_bounds {
                    lower_bounds.push(self.compressed_signed()?);
                }
                TypeSig::Array(
                    elem,
                    ArrayShape {
                        rank,
                        sizes,
                        lower_bounds,
                    },
                )
            }
            sys::ELEMENT_TYPE_GENERICINST => {
                let kind_at = self.pos;
                let kind = self.byte()?;
                let value_type = match u32::from(kind) {
                    sys::ELEMENT_TYPE_CLASS => false,
                    sys::ELEMENT_TYPE_VALUETYPE => true,
                    sys::ELEMENT_TYPE_INTERNAL => {
                        let generic = self.handle()?;
                        let count = self.count()?;
                        let mut args = Vec::with_capacity(count.min(16));
                        for _ in 0..count {
                            args.push(self.ty(depth + 1)?);
                        }
                        return Ok(TypeSig::InternalGenericInst { generic, args });
                    }
                    _ => {
                        return Err(SigError {
                            offset: kind_at,
                            kind: SigErrorKind::BadElementType(kind),
                        });
                    }
                };
                let generic = self.type_token()?;
                let count = self.count()?;
                let mut args = Vec::with_capacity(count.min(16));
                for _ in 0..count {
                    args.push(self.ty(depth + 1)?);
                }
                TypeSig::GenericInst {
                    value_type,
                    generic,
                    args,
                }
            }
            sys::ELEMENT_TYPE_FNPTR => TypeSig::FnPtr(Box::new(self.method_sig(depth + 1)?)),
            sys::ELEMENT_TYPE_INTERNAL => TypeSig::Internal(self.handle()?),
            sys::ELEMENT_TYPE_SENTINEL => {
                return Err(SigError {
                    offset: start,
                    kind: SigErrorKind::MisplacedSentinel,
                });
            }
            _ => {
                return Err(SigError {
                    offset: start,
                    kind: SigErrorKind::BadElementType(code),
                });
            }
        };
        Ok(t)
    }

    fn method_sig(&mut self, depth: usize) -> SigResult<MethodSig> {
        if depth > MAX_DEPTH {
            return self.err(SigErrorKind::TooDeep);
        }
        let first = self.peek()?;
        let kind = first & 0x0f;
        if matches!(
            u32::from(kind),
            sys::IMAGE_CEE_CS_CALLCONV_FIELD
                | sys::IMAGE_CEE_CS_CALLCONV_LOCAL_SIG
                | sys::IMAGE_CEE_CS_CALLCONV_PROPERTY
                | sys::IMAGE_CEE_CS_CALLCONV_GENERICINST
        ) {
            return self.err(SigErrorKind::BadCallingConvention(first));
        }
        self.pos += 1;
        let flags = u32::from(first);
        let generic_param_count = if flags & sys::IMAGE_CEE_CS_CALLCONV_GENERIC != 0 {
            self.compressed()?
        } else {
            0
        };
        let count = self.count()?;
        let ret = self.ty(depth + 1)?;
        let mut params = Vec::with_capacity(count.min(16));
        let mut sentinel = None;
        while params.len() < count {
            if u32::from(self.peek()?) == sys::ELEMENT_TYPE_SENTINEL {
                if sentinel.is_some() {
                    return self.err(SigErrorKind::MisplacedSentinel);
                }
                sentinel = Some(params.len());
                self.pos += 1;
                continue;
            }
            params.push(self.ty(depth + 1)?);
        }
        Ok(MethodSig {
            call_conv: CallConv::from_kind(kind),
            generic_param_count,
            has_this: flags & sys::IMAGE_CEE_CS_CALLCONV_HASTHIS != 0,
            explicit_this: flags & sys::IMAGE_CEE_CS_CALLCONV_EXPLICITTHIS != 0,
            ret,
            params,
            sentinel,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(t: TypeSig) -> Box<TypeSig> {
        Box::new(t)
    }

    // Tokens used below, with their TypeDefOrRefOrSpecEncoded forms.
    const TD2: Token = Token(0x0200_0002); // (2 << 2) | 0 = 0x08
    const TR5: Token = Token(0x0100_0005); // (5 << 2) | 1 = 0x15
    const TS1: Token = Token(0x1b00_0001); // (1 << 2) | 2 = 0x06

    #[test]
    fn compressed_unsigned_integers() {
        // The examples of ECMA-335 II.23.2.
        for (bytes, value) in [
            (&[0x03][..], 0x03u32),
            (&[0x7f][..], 0x7f),
            (&[0x80, 0x80][..], 0x80),
            (&[0xae, 0x57][..], 0x2e57),
            (&[0xbf, 0xff][..], 0x3fff),
            (&[0xc0, 0x00, 0x40, 0x00][..], 0x4000),
            (&[0xdf, 0xff, 0xff, 0xff][..], 0x1fff_ffff),
        ] {
            let mut r = Reader::new(bytes);
            assert_eq!(r.compressed(), Ok(value), "{bytes:02x?}");
            assert_eq!(r.pos, bytes.len());
        }
        assert_eq!(
            Reader::new(&[0xe0]).compressed().unwrap_err().kind,
            SigErrorKind::BadCompressedInt(0xe0)
        );
        assert_eq!(
            Reader::new(&[0xc0, 0x00]).compressed().unwrap_err().kind,
            SigErrorKind::UnexpectedEnd
        );
    }

    #[test]
    fn compressed_signed_integers() {
        // The examples of ECMA-335 II.23.2.
        for (bytes, value) in [
            (&[0x06][..], 3i32),
            (&[0x7b][..], -3),
            (&[0x80, 0x80][..], 64),
            (&[0x01][..], -64),
            (&[0xc0, 0x00, 0x40, 0x00][..], 8192),
            (&[0x80, 0x01][..], -8192),
            (&[0xdf, 0xff, 0xff, 0xfe][..], 268_435_455),
            (&[0xc0, 0x00, 0x00, 0x01][..], -268_435_456),
        ] {
            assert_eq!(
                Reader::new(bytes).compressed_signed(),
                Ok(value),
                "{bytes:02x?}"
            );
        }
    }

    #[test]
    fn type_tokens() {
        assert_eq!(decode_type_token(0x08), Some(TD2));
        assert_eq!(decode_type_token(0x15), Some(TR5));
        assert_eq!(decode_type_token(0x06), Some(TS1));
        assert_eq!(decode_type_token(0x07), None);
        assert_eq!(
            TypeSig::parse(&[0x12, 0x07]).unwrap_err().kind,
            SigErrorKind::BadTypeToken(7)
        );
    }

    #[test]
    fn every_primitive() {
        for code in 0x01u8..=0x1c {
            let Some(expected) = TypeSig::from_element_type(u32::from(code)) else {
                continue;
            };
            assert_eq!(TypeSig::parse(&[code]), Ok(expected.clone()));
            assert_eq!(expected.primitive_element_type(), Some(u32::from(code)));
        }
        assert_eq!(TypeSig::parse(&[0x08]), Ok(TypeSig::I4));
        assert_eq!(TypeSig::parse(&[0x0e]), Ok(TypeSig::String));
        assert_eq!(TypeSig::parse(&[0x1c]), Ok(TypeSig::Object));
        assert_eq!(TypeSig::parse(&[0x16]), Ok(TypeSig::TypedByRef));
        assert_eq!(TypeSig::parse(&[0x18]), Ok(TypeSig::I));
        assert_eq!(TypeSig::parse(&[0x19]), Ok(TypeSig::U));
    }

    #[test]
    fn class_valuetype_and_generic_inst() {
        assert_eq!(TypeSig::parse(&[0x12, 0x15]), Ok(TypeSig::Class(TR5)));
        assert_eq!(TypeSig::parse(&[0x11, 0x08]), Ok(TypeSig::ValueType(TD2)));
        // Dictionary<string, List<int>>: GENERICINST CLASS TR5 2 STRING (GENERICINST CLASS TD2 1 I4)
        let blob = [0x15, 0x12, 0x15, 0x02, 0x0e, 0x15, 0x12, 0x08, 0x01, 0x08];
        assert_eq!(
            TypeSig::parse(&blob),
            Ok(TypeSig::GenericInst {
                value_type: false,
                generic: TR5,
                args: vec![
                    TypeSig::String,
                    TypeSig::GenericInst {
                        value_type: false,
                        generic: TD2,
                        args: vec![TypeSig::I4]
                    }
                ],
            })
        );
        // Nullable<int>: GENERICINST VALUETYPE ...
        assert_eq!(
            TypeSig::parse(&[0x15, 0x11, 0x15, 0x01, 0x08]),
            Ok(TypeSig::GenericInst {
                value_type: true,
                generic: TR5,
                args: vec![TypeSig::I4]
            })
        );
        // GENERICINST must be followed by CLASS or VALUETYPE.
        assert_eq!(
            TypeSig::parse(&[0x15, 0x08, 0x15, 0x01, 0x08]).unwrap_err(),
            SigError {
                offset: 1,
                kind: SigErrorKind::BadElementType(0x08)
            }
        );
    }

    #[test]
    fn generic_parameters() {
        assert_eq!(TypeSig::parse(&[0x13, 0x00]), Ok(TypeSig::Var(0)));
        assert_eq!(TypeSig::parse(&[0x1e, 0x02]), Ok(TypeSig::MVar(2)));
        assert_eq!(TypeSig::parse(&[0x1e, 0x80, 0x80]), Ok(TypeSig::MVar(0x80)));
    }

    #[test]
    fn arrays() {
        // string[][]
        assert_eq!(
            TypeSig::parse(&[0x1d, 0x1d, 0x0e]),
            Ok(TypeSig::SzArray(b(TypeSig::SzArray(b(TypeSig::String)))))
        );
        // int[,]: ARRAY I4 rank 2, no sizes, no bounds (what C# emits)
        assert_eq!(
            TypeSig::parse(&[0x14, 0x08, 0x02, 0x00, 0x00]),
            Ok(TypeSig::Array(
                b(TypeSig::I4),
                ArrayShape {
                    rank: 2,
                    sizes: vec![],
                    lower_bounds: vec![]
                }
            ))
        );
        // double[3 (lo -1), 5 (lo 0), ]: rank 3, sizes [3, 5], bounds [-1, 0]
        assert_eq!(
            TypeSig::parse(&[0x14, 0x0d, 0x03, 0x02, 0x03, 0x05, 0x02, 0x7f, 0x00]),
            Ok(TypeSig::Array(
                b(TypeSig::R8),
                ArrayShape {
                    rank: 3,
                    sizes: vec![3, 5],
                    lower_bounds: vec![-1, 0]
                }
            ))
        );
    }

    #[test]
    fn byref_pointer_pinned_and_modifiers() {
        assert_eq!(
            TypeSig::parse(&[0x10, 0x08]),
            Ok(TypeSig::ByRef(b(TypeSig::I4)))
        );
        assert_eq!(
            TypeSig::parse(&[0x0f, 0x0f, 0x01]),
            Ok(TypeSig::Ptr(b(TypeSig::Ptr(b(TypeSig::Void)))))
        );
        assert_eq!(
            TypeSig::parse(&[0x45, 0x10, 0x03]),
            Ok(TypeSig::Pinned(b(TypeSig::ByRef(b(TypeSig::Char)))))
        );
        // modreq(TR5) modopt(TD2) int32
        let t = TypeSig::parse(&[0x1f, 0x15, 0x20, 0x08, 0x08]).unwrap();
        assert_eq!(
            t,
            TypeSig::Modified {
                required: true,
                modifier: TR5,
                ty: b(TypeSig::Modified {
                    required: false,
                    modifier: TD2,
                    ty: b(TypeSig::I4)
                })
            }
        );
        assert_eq!(t.strip_modifiers(), &TypeSig::I4);
    }

    #[test]
    fn generic_instance_of_an_internal_type_handle() {
        // ReadOnlySpan<char> in a compiled regular expression's method (.NET 8): GENERICINST
        // INTERNAL <handle> 1 CHAR.
        let mut blob = vec![0x15, 0x21];
        blob.extend_from_slice(&0x7fe8_51df_e0f0u64.to_le_bytes()[..size_of::<usize>()]);
        blob.extend_from_slice(&[0x01, 0x03]);
        assert_eq!(
            TypeSig::parse(&blob),
            Ok(TypeSig::InternalGenericInst {
                generic: 0x7fe8_51df_e0f0 & (usize::MAX as u64),
                args: vec![TypeSig::Char],
            })
        );
    }

    #[test]
    fn internal_type_handle() {
        let mut blob = vec![0x21];
        blob.extend_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes()[..size_of::<usize>()]);
        let expected = if size_of::<usize>() == 8 {
            0x1122_3344_5566_7788
        } else {
            0x5566_7788
        };
        assert_eq!(TypeSig::parse(&blob), Ok(TypeSig::Internal(expected)));
        assert_eq!(
            TypeSig::parse(&blob[..3]).unwrap_err().kind,
            SigErrorKind::UnexpectedEnd
        );
    }

    #[test]
    fn method_signatures() {
        // static void M()
        assert_eq!(
            MethodSig::parse(&[0x00, 0x00, 0x01]),
            Ok(MethodSig {
                call_conv: CallConv::Default,
                generic_param_count: 0,
                has_this: false,
                explicit_this: false,
                ret: TypeSig::Void,
                params: vec![],
                sentinel: None,
            })
        );
        // instance int32 Put(!0, int32)
        let m = MethodSig::parse(&[0x20, 0x02, 0x08, 0x13, 0x00, 0x08]).unwrap();
        assert!(m.has_this);
        assert_eq!(m.ret, TypeSig::I4);
        assert_eq!(m.params, vec![TypeSig::Var(0), TypeSig::I4]);
        // static !!1[] Map<2>(!!0[], class TR5<!!0, !!1>)
        let m = MethodSig::parse(&[
            0x10, 0x02, 0x02, 0x1d, 0x1e, 0x01, 0x1d, 0x1e, 0x00, 0x15, 0x12, 0x15, 0x02, 0x1e,
            0x00, 0x1e, 0x01,
        ])
        .unwrap();
        assert_eq!(m.generic_param_count, 2);
        assert!(!m.has_this);
        assert_eq!(m.ret, TypeSig::SzArray(b(TypeSig::MVar(1))));
        assert_eq!(
            m.params,
            vec![
                TypeSig::SzArray(b(TypeSig::MVar(0))),
                TypeSig::GenericInst {
                    value_type: false,
                    generic: TR5,
                    args: vec![TypeSig::MVar(0), TypeSig::MVar(1)]
                }
            ]
        );
        // instance explicit thiscall
        let m = MethodSig::parse(&[0x63, 0x00, 0x01]).unwrap();
        assert!(m.has_this && m.explicit_this);
        assert_eq!(m.call_conv, CallConv::ThisCall);
        // ref return and out param: static int32& M(int32&)
        let m = MethodSig::parse(&[0x00, 0x01, 0x10, 0x08, 0x10, 0x08]).unwrap();
        assert_eq!(m.ret, TypeSig::ByRef(b(TypeSig::I4)));
        assert_eq!(m.params, vec![TypeSig::ByRef(b(TypeSig::I4))]);
    }

    #[test]
    fn vararg_call_site_with_sentinel() {
        // vararg void M(int32, ..., string, float64)
        let m = MethodSig::parse(&[0x05, 0x03, 0x01, 0x08, 0x41, 0x0e, 0x0d]).unwrap();
        assert_eq!(m.call_conv, CallConv::VarArg);
        assert_eq!(m.params, vec![TypeSig::I4, TypeSig::String, TypeSig::R8]);
        assert_eq!(m.sentinel, Some(1));
        // Two sentinels, or one outside a parameter list, are errors.
        assert_eq!(
            MethodSig::parse(&[0x05, 0x02, 0x01, 0x41, 0x08, 0x41, 0x08])
                .unwrap_err()
                .kind,
            SigErrorKind::MisplacedSentinel
        );
        assert_eq!(
            TypeSig::parse(&[0x41]).unwrap_err().kind,
            SigErrorKind::MisplacedSentinel
        );
    }

    #[test]
    fn function_pointers() {
        // method unmanaged cdecl int32 *(float64)
        assert_eq!(
            TypeSig::parse(&[0x1b, 0x01, 0x01, 0x08, 0x0d]),
            Ok(TypeSig::FnPtr(Box::new(MethodSig {
                call_conv: CallConv::C,
                generic_param_count: 0,
                has_this: false,
                explicit_this: false,
                ret: TypeSig::I4,
                params: vec![TypeSig::R8],
                sentinel: None,
            })))
        );
    }

    #[test]
    fn fields_locals_properties_and_method_specs() {
        assert_eq!(
            parse_field(&[0x06, 0x1d, 0x08]),
            Ok(TypeSig::SzArray(b(TypeSig::I4)))
        );
        assert_eq!(
            parse_field(&[0x00, 0x08]).unwrap_err().kind,
            SigErrorKind::BadCallingConvention(0)
        );
        // locals: int32, pinned string, typedref, modreq(TD2) int32&
        assert_eq!(
            parse_locals(&[0x07, 0x04, 0x08, 0x45, 0x0e, 0x16, 0x1f, 0x08, 0x10, 0x08]),
            Ok(vec![
                TypeSig::I4,
                TypeSig::Pinned(b(TypeSig::String)),
                TypeSig::TypedByRef,
                TypeSig::Modified {
                    required: true,
                    modifier: TD2,
                    ty: b(TypeSig::ByRef(b(TypeSig::I4)))
                },
            ])
        );
        // instance string Item[int32]
        assert_eq!(
            parse_property(&[0x28, 0x01, 0x0e, 0x08]),
            Ok(PropertySig {
                has_this: true,
                ty: TypeSig::String,
                params: vec![TypeSig::I4]
            })
        );
        // <int32, string>
        assert_eq!(
            parse_method_spec(&[0x0a, 0x02, 0x08, 0x0e]),
            Ok(vec![TypeSig::I4, TypeSig::String])
        );
        assert!(matches!(
            Signature::parse(&[0x0a, 0x01, 0x08]),
            Ok(Signature::MethodSpec(_))
        ));
        assert!(matches!(
            Signature::parse(&[0x06, 0x08]),
            Ok(Signature::Field(TypeSig::I4))
        ));
        assert!(matches!(
            Signature::parse(&[0x07, 0x00]),
            Ok(Signature::Locals(v)) if v.is_empty()
        ));
        assert!(matches!(
            Signature::parse(&[0x08, 0x00, 0x08]),
            Ok(Signature::Property(_))
        ));
        assert!(matches!(
            Signature::parse(&[0x20, 0x00, 0x01]),
            Ok(Signature::Method(_))
        ));
        assert_eq!(
            MethodSig::parse(&[0x06, 0x08]).unwrap_err().kind,
            SigErrorKind::BadCallingConvention(6)
        );
    }

    #[test]
    fn truncated_and_bad_blobs() {
        assert_eq!(
            TypeSig::parse(&[]).unwrap_err().kind,
            SigErrorKind::UnexpectedEnd
        );
        assert_eq!(
            Signature::parse(&[]).unwrap_err().kind,
            SigErrorKind::UnexpectedEnd
        );
        assert_eq!(
            MethodSig::parse(&[0x00, 0x02, 0x01, 0x08])
                .unwrap_err()
                .kind,
            SigErrorKind::UnexpectedEnd
        );
        assert_eq!(
            TypeSig::parse(&[0x1d]).unwrap_err(),
            SigError {
                offset: 1,
                kind: SigErrorKind::UnexpectedEnd
            }
        );
        assert_eq!(
            TypeSig::parse(&[0x17]).unwrap_err().kind,
            SigErrorKind::BadElementType(0x17)
        );
        // A parameter count the blob cannot hold is rejected before anything is allocated.
        assert_eq!(
            MethodSig::parse(&[0x00, 0xdf, 0xff, 0xff, 0xff, 0x01]).unwrap_err(),
            SigError {
                offset: 1,
                kind: SigErrorKind::CountTooLarge(0x1fff_ffff)
            }
        );
        // So is a generic argument count.
        assert_eq!(
            TypeSig::parse(&[0x15, 0x12, 0x08, 0x7f, 0x08])
                .unwrap_err()
                .kind,
            SigErrorKind::CountTooLarge(0x7f)
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let mut ok = vec![0x1d; MAX_DEPTH];
        ok.push(0x08);
        assert!(TypeSig::parse(&ok).is_ok());
        let mut deep = vec![0x1d; MAX_DEPTH + 1];
        deep.push(0x08);
        assert_eq!(
            TypeSig::parse(&deep).unwrap_err().kind,
            SigErrorKind::TooDeep
        );
        // Function pointers nest method signatures: bounded too.
        let mut fnptrs = Vec::new();
        for _ in 0..200 {
            fnptrs.extend_from_slice(&[0x1b, 0x00, 0x00]);
        }
        fnptrs.push(0x01);
        assert_eq!(
            TypeSig::parse(&fnptrs).unwrap_err().kind,
            SigErrorKind::TooDeep
        );
        // A huge blob of nested arrays fails fast instead of overflowing the stack.
        let huge = vec![0x1d; 1 << 20];
        assert_eq!(
            TypeSig::parse(&huge).unwrap_err().kind,
            SigErrorKind::TooDeep
        );
    }

    #[test]
    fn errors_convert_and_display() {
        let e = TypeSig::parse(&[0x17]).unwrap_err();
        assert_eq!(e.to_string(), "bad element type 0x17 at byte 0");
        let e: crate::error::Error = e.into();
        assert!(matches!(e, crate::error::Error::InvalidData { .. }));
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        /// Bytes biased toward element types and small counts, so that the parsers get deep.
        fn sig_byte() -> impl Strategy<Value = u8> {
            prop_oneof![
                4 => 0x00u8..0x23,
                1 => prop::sample::select(vec![0x41u8, 0x45, 0x80, 0xc0, 0xff, 0x1f, 0x20]),
                1 => any::<u8>(),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4096))]

            #[test]
            fn arbitrary_bytes_never_panic(blob in prop::collection::vec(any::<u8>(), 0..64)) {
                let _ = Signature::parse(&blob);
                let _ = MethodSig::parse(&blob);
                let _ = TypeSig::parse(&blob);
                let _ = parse_field(&blob);
                let _ = parse_locals(&blob);
                let _ = parse_property(&blob);
                let _ = parse_method_spec(&blob);
            }

            #[test]
            fn signature_like_bytes_never_panic(blob in prop::collection::vec(sig_byte(), 0..256)) {
                let _ = Signature::parse(&blob);
                let _ = MethodSig::parse(&blob);
                let _ = TypeSig::parse(&blob);
                let _ = parse_locals(&blob);
            }

            #[test]
            fn errors_point_inside_the_blob(blob in prop::collection::vec(sig_byte(), 0..128)) {
                if let Err(e) = TypeSig::parse(&blob) {
                    prop_assert!(e.offset <= blob.len());
                }
            }
        }
    }
}
