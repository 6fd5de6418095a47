//! IL method bodies (ECMA-335 Partition II §25.4): parsing what the runtime hands out and
//! building what it accepts.
//!
//! A body is a header, the IL code, and optional extra data sections after the code. The
//! header is either *tiny* (one byte: up to 63 bytes of code, max stack 8, no locals, no
//! exception handling) or *fat* (12 bytes, 4-byte aligned: flags, max stack, code size and the
//! StandAloneSig token of the locals). The only extra section the runtime uses is the
//! exception-handling table, in a *small* (12-byte clauses, 16-bit offsets, 8-bit lengths) or
//! *fat* (24-byte clauses, 32-bit fields) form, starting at the first 4-byte boundary after
//! the code.
//!
//! [`IlBody::parse`] reads bytes exactly the way the runtime does (same format tests, same
//! clause count rule, exception table only if it is the first section) and never panics: any
//! input gives a body or an [`IlError`]. [`IlBody::encode`] writes the smallest header that
//! keeps the body's meaning (tiny whenever the body allows it) and the smallest exception
//! table form. Sections other than a leading exception table are ignored by the runtime and
//! dropped by the parser.
//!
//! ```
//! use clrprof_sdk::il::{IlBody, ldc_i4, op};
//!
//! // `return 41;` as a compiler writes it: tiny header (3 bytes of code), ldc.i4.s 41, ret.
//! let original = [0x0E, 0x1F, 41, 0x2A];
//! let mut body = IlBody::parse(&original).unwrap();
//! assert_eq!(body.code, [op::LDC_I4_S, 41, op::RET]);
//!
//! // Make it return 42.
//! body.code = [ldc_i4(42), vec![op::RET]].concat();
//! assert_eq!(body.encode().unwrap(), [0x0E, 0x1F, 42, 0x2A]);
//! ```
//!
//! [`Method`] decodes the code into instructions (every opcode of ECMA-335, prefixes and
//! `switch` included) whose branch targets and exception clause boundaries are [`Label`]s, so
//! code can be inserted anywhere; encoding widens the short branches that no longer reach and
//! otherwise gives back the original bytes. [`basic_blocks`], [`max_stack`] and
//! [`Method::il_map`] (for `SetILInstrumentedCodeMap`) work on it, [`counters`] adds a hit
//! counter to every block, and [`calls`] counts a method's entries and the calls it makes.
//!
//! ```
//! use clrprof_sdk::il::{Method, OpCode, Operand, asm, basic_blocks};
//!
//! // `return x ? 1 : 2;`: ldarg.0; brfalse.s +2; ldc.i4.1; ret; ldc.i4.2; ret
//! let mut m = Method::parse(&[0x1E, 0x02, 0x2C, 0x02, 0x17, 0x2A, 0x18, 0x2A]).unwrap();
//! let blocks = basic_blocks(&m);
//! assert_eq!(blocks.len(), 3);
//! // A nop at the start of every block (last first, so that indexes stay valid). The branch
//! // now lands on the nop of its target block.
//! for b in blocks.iter().rev() {
//!     m.insert_before(b.start, [asm::op(OpCode::NOP, Operand::None)]);
//! }
//! assert_eq!(
//!     m.encode().unwrap(),
//!     [0x2A, 0x00, 0x02, 0x2C, 0x03, 0x00, 0x17, 0x2A, 0x00, 0x18, 0x2A]
//! );
//! ```

use core::fmt;

use clrprof_sys as sys;

mod blocks;
pub mod calls;
pub mod counters;
mod instruction;
mod locals;
mod method;
#[cfg(test)]
mod model_tests;
mod opcodes;
mod stack;

pub use blocks::{BasicBlock, basic_blocks};
pub use instruction::{Instruction, Label, Operand};
pub use locals::append_local;
pub use method::{Clause, Handler, Layout, Method};
pub use opcodes::{ALL as ALL_OPCODES, Flow, OpCode, OpInfo, OperandKind, StackCount};
pub use stack::{CallSite, max_stack};

/// Instructions to insert, for [`Method::insert_before`].
pub mod asm {
    pub use super::instruction::{ldc_i4, op};
}

use crate::error::Error;
use crate::ids::Token;

/// Maximum code size of a tiny header (exclusive).
const TINY_MAX_CODE: usize = 64;
/// Maximum stack a tiny header implies.
const TINY_MAX_STACK: u16 = 8;
/// Size of a standard fat header in bytes.
const FAT_HEADER_LEN: usize = 12;
/// Size of an exception-table section header (small: kind, size, 2 reserved; fat: kind, 24-bit size).
const SECTION_HEADER_LEN: usize = 4;
/// Size of one small exception clause.
const SMALL_CLAUSE_LEN: usize = 12;
/// Size of one fat exception clause.
const FAT_CLAUSE_LEN: usize = 24;
/// Largest clause count whose small section size fits the 8-bit `DataSize`.
const SMALL_MAX_CLAUSES: usize = (0xFF - SECTION_HEADER_LEN) / SMALL_CLAUSE_LEN;
/// Largest value of a fat section's 24-bit `DataSize`.
const FAT_MAX_DATA_SIZE: usize = 0x00FF_FFFF;

const FLAG_FORMAT_MASK_TINY: u8 = (sys::CorILMethod_FormatMask >> 1) as u8;
const FLAG_FORMAT_MASK: u8 = sys::CorILMethod_FormatMask as u8;
const FLAG_TINY: u8 = sys::CorILMethod_TinyFormat as u8;
const FLAG_FAT: u16 = sys::CorILMethod_FatFormat as u16;
const FLAG_MORE_SECTS: u16 = sys::CorILMethod_MoreSects as u16;
const FLAG_INIT_LOCALS: u16 = sys::CorILMethod_InitLocals as u16;
const SECT_EH: u8 = sys::CorILMethod_Sect_EHTable as u8;
const SECT_KIND_MASK: u8 = sys::CorILMethod_Sect_KindMask as u8;
const SECT_FAT: u8 = sys::CorILMethod_Sect_FatFormat as u8;
const SECT_MORE: u8 = sys::CorILMethod_Sect_MoreSects as u8;

/// A few IL opcodes (single-byte forms), for building small bodies by hand.
pub mod op {
    /// `nop`
    pub const NOP: u8 = 0x00;
    /// `ldarg.0`
    pub const LDARG_0: u8 = 0x02;
    /// `ldarg.1`
    pub const LDARG_1: u8 = 0x03;
    /// `ldloc.0`
    pub const LDLOC_0: u8 = 0x06;
    /// `stloc.0`
    pub const STLOC_0: u8 = 0x0A;
    /// `ldnull`
    pub const LDNULL: u8 = 0x14;
    /// `ldc.i4.m1`
    pub const LDC_I4_M1: u8 = 0x15;
    /// `ldc.i4.0` (`ldc.i4.1` … `ldc.i4.8` follow it).
    pub const LDC_I4_0: u8 = 0x16;
    /// `ldc.i4.s <int8>`
    pub const LDC_I4_S: u8 = 0x1F;
    /// `ldc.i4 <int32>`
    pub const LDC_I4: u8 = 0x20;
    /// `ldc.i8 <int64>`
    pub const LDC_I8: u8 = 0x21;
    /// `dup`
    pub const DUP: u8 = 0x25;
    /// `pop`
    pub const POP: u8 = 0x26;
    /// `call <method token>`
    pub const CALL: u8 = 0x28;
    /// `ret`
    pub const RET: u8 = 0x2A;
    /// `br.s <int8>`
    pub const BR_S: u8 = 0x2B;
    /// `br <int32>`
    pub const BR: u8 = 0x38;
    /// `add`
    pub const ADD: u8 = 0x58;
    /// `callvirt <method token>`
    pub const CALLVIRT: u8 = 0x6F;
    /// `ldstr <string token>`
    pub const LDSTR: u8 = 0x72;
    /// `newobj <ctor token>`
    pub const NEWOBJ: u8 = 0x73;
    /// `ldsfld <field token>`
    pub const LDSFLD: u8 = 0x7E;
    /// `stsfld <field token>`
    pub const STSFLD: u8 = 0x80;
    /// `leave.s <int8>`
    pub const LEAVE_S: u8 = 0xDE;
    /// `endfinally`
    pub const ENDFINALLY: u8 = 0xDC;
}

/// The shortest encoding of `ldc.i4 value` (`ldc.i4.m1`, `ldc.i4.0`..`8`, `ldc.i4.s` or
/// `ldc.i4`).
pub fn ldc_i4(value: i32) -> Vec<u8> {
    let (opcode, operand) = instruction::ldc_i4(value);
    let mut bytes = Vec::with_capacity(5);
    opcode.write(&mut bytes);
    match operand {
        Operand::I1(v) => bytes.push(v as u8),
        Operand::I4(v) => bytes.extend_from_slice(&v.to_le_bytes()),
        _ => {}
    }
    bytes
}

/// What went wrong parsing or encoding an IL body.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum IlError {
    /// The bytes end before the body does.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes the body needs from its start.
        needed: usize,
        /// Bytes there were.
        available: usize,
    },
    /// The first byte is neither a tiny nor a fat header.
    UnknownFormat(u8),
    /// A fat header whose `Size` field is below 3 DWORDs.
    BadHeaderSize(u8),
    /// An extra section whose size is smaller than its own header.
    BadSection {
        /// Offset of the section from the start of the body.
        offset: usize,
        /// Its `DataSize`.
        data_size: u32,
    },
    /// The body is too large for its format (code over 4 GB, a 24-bit section size exceeded,
    /// offsets that overflow 32 bits).
    TooLarge {
        /// What overflowed.
        what: &'static str,
    },
    /// The code is not valid IL (an unknown opcode, a branch into an instruction, a stack
    /// that underflows, ...).
    InvalidCode {
        /// IL offset of the offending instruction (0 when it has none yet).
        offset: u32,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for IlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IlError::Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "IL body truncated in the {what}: needs {needed} bytes, has {available}"
            ),
            IlError::UnknownFormat(b) => {
                write!(
                    f,
                    "IL header byte {b:#04x} is neither a tiny nor a fat header"
                )
            }
            IlError::BadHeaderSize(s) => {
                write!(f, "fat IL header declares {s} DWORDs; at least 3 required")
            }
            IlError::BadSection { offset, data_size } => write!(
                f,
                "IL extra section at offset {offset} declares size {data_size}, smaller than its header"
            ),
            IlError::TooLarge { what } => write!(f, "IL body too large: {what}"),
            IlError::InvalidCode { offset, what } => {
                write!(f, "invalid IL at offset {offset:#x}: {what}")
            }
        }
    }
}

impl std::error::Error for IlError {}

impl From<IlError> for Error {
    fn from(e: IlError) -> Self {
        Error::InvalidData {
            context: "IL method body",
            reason: e.to_string(),
        }
    }
}

/// The kind of an exception-handling clause, with the value that depends on it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ClauseKind {
    /// A typed handler: `catch (T)`, with the TypeDef/TypeRef/TypeSpec token of `T`.
    Catch(Token),
    /// A filter handler; the filter block starts at this IL offset and ends at the handler.
    Filter {
        /// IL offset of the filter block.
        filter_offset: u32,
    },
    /// A `finally` block.
    Finally,
    /// A `fault` block (a finally that runs only when an exception escapes).
    Fault,
    /// A flag combination the SDK does not name (kept as is).
    Other {
        /// The raw `CorExceptionFlag` bits.
        flags: u32,
        /// The raw class-token-or-filter-offset field.
        value: u32,
    },
}

impl ClauseKind {
    /// Decodes the raw `Flags` and `ClassToken`/`FilterOffset` fields.
    pub const fn from_raw(flags: u32, value: u32) -> ClauseKind {
        match flags {
            sys::COR_ILEXCEPTION_CLAUSE_NONE => ClauseKind::Catch(Token(value)),
            sys::COR_ILEXCEPTION_CLAUSE_FILTER => ClauseKind::Filter {
                filter_offset: value,
            },
            sys::COR_ILEXCEPTION_CLAUSE_FINALLY => ClauseKind::Finally,
            sys::COR_ILEXCEPTION_CLAUSE_FAULT => ClauseKind::Fault,
            _ => ClauseKind::Other { flags, value },
        }
    }

    /// The raw `(Flags, ClassToken-or-FilterOffset)` pair.
    pub const fn to_raw(self) -> (u32, u32) {
        match self {
            ClauseKind::Catch(token) => (sys::COR_ILEXCEPTION_CLAUSE_NONE, token.0),
            ClauseKind::Filter { filter_offset } => {
                (sys::COR_ILEXCEPTION_CLAUSE_FILTER, filter_offset)
            }
            ClauseKind::Finally => (sys::COR_ILEXCEPTION_CLAUSE_FINALLY, 0),
            ClauseKind::Fault => (sys::COR_ILEXCEPTION_CLAUSE_FAULT, 0),
            ClauseKind::Other { flags, value } => (flags, value),
        }
    }
}

/// One exception-handling clause: a protected `try` range and its handler, as IL offsets
/// from the start of the code.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ExceptionClause {
    /// Catch, filter, finally or fault.
    pub kind: ClauseKind,
    /// Start of the protected block.
    pub try_offset: u32,
    /// Length of the protected block in bytes.
    pub try_length: u32,
    /// Start of the handler.
    pub handler_offset: u32,
    /// Length of the handler in bytes.
    pub handler_length: u32,
}

impl ExceptionClause {
    /// True when every field fits the small clause format.
    pub fn fits_small(&self) -> bool {
        let (flags, _) = self.kind.to_raw();
        flags <= 0xFFFF
            && self.try_offset <= 0xFFFF
            && self.try_length <= 0xFF
            && self.handler_offset <= 0xFFFF
            && self.handler_length <= 0xFF
    }

    /// The IL offsets this clause holds (try, handler, and filter start), shifted by `delta`.
    fn shifted(self, delta: u32) -> Option<ExceptionClause> {
        let kind = match self.kind {
            ClauseKind::Filter { filter_offset } => ClauseKind::Filter {
                filter_offset: filter_offset.checked_add(delta)?,
            },
            other => other,
        };
        Some(ExceptionClause {
            kind,
            try_offset: self.try_offset.checked_add(delta)?,
            try_length: self.try_length,
            handler_offset: self.handler_offset.checked_add(delta)?,
            handler_length: self.handler_length,
        })
    }
}

/// Which header a body was stored with.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum HeaderFormat {
    /// The one-byte header.
    Tiny,
    /// The 12-byte (or longer) header.
    Fat,
}

impl HeaderFormat {
    /// The format the first byte of a body announces, as the runtime decides it; `None` for
    /// an empty slice or a byte that is neither.
    pub fn of(bytes: &[u8]) -> Option<HeaderFormat> {
        let first = *bytes.first()?;
        if first & FLAG_FORMAT_MASK_TINY == FLAG_TINY {
            Some(HeaderFormat::Tiny)
        } else if first & FLAG_FORMAT_MASK == FLAG_FAT as u8 {
            Some(HeaderFormat::Fat)
        } else {
            None
        }
    }
}

/// The forms a body is written in: header, and exception table clauses. Forms a body does not
/// fit (a tiny header for 64 bytes of code) are replaced by the larger ones.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Encoding {
    /// The header format wanted.
    pub header: HeaderFormat,
    /// Fat exception clauses even when small ones would do.
    pub fat_clauses: bool,
}

impl Default for Encoding {
    /// The smallest forms.
    fn default() -> Self {
        Encoding {
            header: HeaderFormat::Tiny,
            fat_clauses: false,
        }
    }
}

impl Encoding {
    /// The forms a stored body uses; `None` when the bytes are not a body.
    pub fn of(bytes: &[u8]) -> Option<Encoding> {
        let header = HeaderFormat::of(bytes)?;
        let mut fat_clauses = false;
        if header == HeaderFormat::Fat && bytes.len() >= FAT_HEADER_LEN {
            let flags = read_u16(bytes, 0);
            if flags & FLAG_MORE_SECTS != 0 {
                let code_start = ((flags >> 12) as usize) * 4;
                let sect = align4(code_start + read_u32(bytes, 4) as usize)?;
                fat_clauses = bytes.get(sect)? & SECT_FAT != 0;
            }
        }
        Some(Encoding {
            header,
            fat_clauses,
        })
    }
}

/// An IL method body: header fields, code and exception clauses.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct IlBody {
    /// Maximum evaluation stack depth (8 for a tiny header).
    pub max_stack: u16,
    /// StandAloneSig token of the local variable signature; `Token(0)` for no locals.
    pub local_var_sig: Token,
    /// Zero-initialise locals (`CorILMethod_InitLocals`, C#'s `localsinit`).
    pub init_locals: bool,
    /// The IL code.
    pub code: Vec<u8>,
    /// Exception-handling clauses, in the order the runtime searches them (innermost first).
    pub clauses: Vec<ExceptionClause>,
}

impl Default for IlBody {
    fn default() -> Self {
        IlBody::new(Vec::new())
    }
}

fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn align4(n: usize) -> Option<usize> {
    n.checked_add(3).map(|n| n & !3)
}

fn need(bytes: &[u8], what: &'static str, needed: Option<usize>) -> Result<usize, IlError> {
    match needed {
        Some(n) if n <= bytes.len() => Ok(n),
        Some(n) => Err(IlError::Truncated {
            what,
            needed: n,
            available: bytes.len(),
        }),
        None => Err(IlError::TooLarge {
            what: "offsets overflow the address space",
        }),
    }
}

impl IlBody {
    /// A body with the given code, max stack 8, no locals and no exception handling (what a
    /// tiny header describes).
    pub fn new(code: Vec<u8>) -> IlBody {
        IlBody {
            max_stack: TINY_MAX_STACK,
            local_var_sig: Token(0),
            init_locals: false,
            code,
            clauses: Vec::new(),
        }
    }

    /// Parses a body that starts at `bytes[0]`; bytes after its end are ignored.
    pub fn parse(bytes: &[u8]) -> Result<IlBody, IlError> {
        IlBody::parse_prefix(bytes).map(|(body, _)| body)
    }

    /// Parses a body that starts at `bytes[0]` and also returns how many bytes it occupies
    /// (header, code and every extra section, as the runtime's own size computation counts
    /// them).
    pub fn parse_prefix(bytes: &[u8]) -> Result<(IlBody, usize), IlError> {
        match HeaderFormat::of(bytes) {
            None => match bytes.first() {
                None => Err(IlError::Truncated {
                    what: "header",
                    needed: 1,
                    available: 0,
                }),
                Some(&b) => Err(IlError::UnknownFormat(b)),
            },
            Some(HeaderFormat::Tiny) => {
                let end = need(bytes, "code", Some(1 + (bytes[0] >> 2) as usize))?;
                Ok((IlBody::new(bytes[1..end].to_vec()), end))
            }
            Some(HeaderFormat::Fat) => IlBody::parse_fat(bytes),
        }
    }

    fn parse_fat(bytes: &[u8]) -> Result<(IlBody, usize), IlError> {
        need(bytes, "header", Some(FAT_HEADER_LEN))?;
        let flags_size = read_u16(bytes, 0);
        let flags = flags_size & 0x0FFF;
        let header_dwords = (flags_size >> 12) as u8;
        if (header_dwords as usize) * 4 < FAT_HEADER_LEN {
            return Err(IlError::BadHeaderSize(header_dwords));
        }
        let max_stack = read_u16(bytes, 2);
        let code_size = read_u32(bytes, 4) as usize;
        let local_var_sig = Token(read_u32(bytes, 8));
        let code_start = need(bytes, "header", Some(header_dwords as usize * 4))?;
        let code_end = need(bytes, "code", code_start.checked_add(code_size))?;
        let mut body = IlBody {
            max_stack,
            local_var_sig,
            init_locals: flags & FLAG_INIT_LOCALS != 0,
            code: bytes[code_start..code_end].to_vec(),
            clauses: Vec::new(),
        };
        let mut end = code_end;
        if flags & FLAG_MORE_SECTS != 0 {
            let mut pos = align4(code_end).ok_or(IlError::TooLarge {
                what: "offsets overflow the address space",
            })?;
            let mut first = true;
            loop {
                need(bytes, "section header", pos.checked_add(2))?;
                let kind = bytes[pos];
                let fat = kind & SECT_FAT != 0;
                let (data_size, header_len) = if fat {
                    need(bytes, "section header", pos.checked_add(4))?;
                    (read_u32(bytes, pos) >> 8, 4)
                } else {
                    (bytes[pos + 1] as u32, 2)
                };
                let is_eh = kind & SECT_KIND_MASK == SECT_EH;
                let clause_len = if fat {
                    FAT_CLAUSE_LEN
                } else {
                    SMALL_CLAUSE_LEN
                };
                // The runtime counts clauses as DataSize / clause size (old compilers left the
                // section header out of DataSize) and then sizes the section from that count.
                let count = data_size as usize / clause_len;
                let size = if is_eh {
                    SECTION_HEADER_LEN + count * clause_len
                } else {
                    data_size as usize
                };
                if size < header_len {
                    return Err(IlError::BadSection {
                        offset: pos,
                        data_size,
                    });
                }
                let sect_end = need(bytes, "extra section", pos.checked_add(size))?;
                if is_eh && first {
                    let data = &bytes[pos + SECTION_HEADER_LEN..sect_end];
                    body.clauses = data
                        .chunks_exact(clause_len)
                        .map(|c| parse_clause(c, fat))
                        .collect();
                }
                end = sect_end;
                first = false;
                if kind & SECT_MORE == 0 {
                    break;
                }
                pos = align4(sect_end).ok_or(IlError::TooLarge {
                    what: "offsets overflow the address space",
                })?;
            }
        }
        Ok((body, end))
    }

    /// True when the body can be written with a tiny header: less than 64 bytes of code, max
    /// stack at most 8, no locals, no `init_locals` and no exception clauses.
    pub fn fits_tiny(&self) -> bool {
        self.code.len() < TINY_MAX_CODE
            && self.max_stack <= TINY_MAX_STACK
            && self.local_var_sig.0 == 0
            && !self.init_locals
            && self.clauses.is_empty()
    }

    /// The header format [`IlBody::encode`] will use.
    pub fn header_format(&self) -> HeaderFormat {
        if self.fits_tiny() {
            HeaderFormat::Tiny
        } else {
            HeaderFormat::Fat
        }
    }

    /// Writes the body: a tiny header when [`IlBody::fits_tiny`], else a fat header, the code,
    /// and (for clauses) an exception table at the next 4-byte boundary, small when every
    /// clause fits and there are at most 20, else fat. The result must be placed at a 4-byte
    /// aligned address when it has a fat header (the runtime aligns sections by address).
    pub fn encode(&self) -> Result<Vec<u8>, IlError> {
        self.encode_with(Encoding::default())
    }

    /// Writes the body like [`IlBody::encode`], in the forms of `encoding` where the body fits
    /// them (a fat header for a body that could be tiny, fat clauses that could be small): what
    /// re-encoding a body read from a file byte for byte needs.
    pub fn encode_with(&self, encoding: Encoding) -> Result<Vec<u8>, IlError> {
        if self.fits_tiny() && encoding.header == HeaderFormat::Tiny {
            let mut out = Vec::with_capacity(1 + self.code.len());
            out.push(((self.code.len() as u8) << 2) | FLAG_TINY);
            out.extend_from_slice(&self.code);
            return Ok(out);
        }
        let code_size = u32::try_from(self.code.len()).map_err(|_| IlError::TooLarge {
            what: "code is larger than 4 GB",
        })?;
        let mut flags = FLAG_FAT;
        if self.init_locals {
            flags |= FLAG_INIT_LOCALS;
        }
        if !self.clauses.is_empty() {
            flags |= FLAG_MORE_SECTS;
        }
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        out.extend_from_slice(&(flags | 0x3000).to_le_bytes());
        out.extend_from_slice(&self.max_stack.to_le_bytes());
        out.extend_from_slice(&code_size.to_le_bytes());
        out.extend_from_slice(&self.local_var_sig.0.to_le_bytes());
        out.extend_from_slice(&self.code);
        if self.clauses.is_empty() {
            return Ok(out);
        }
        while out.len() % 4 != 0 {
            out.push(0);
        }
        let small = !encoding.fat_clauses
            && self.clauses.len() <= SMALL_MAX_CLAUSES
            && self.clauses.iter().all(ExceptionClause::fits_small);
        if small {
            let size = SECTION_HEADER_LEN + self.clauses.len() * SMALL_CLAUSE_LEN;
            out.extend_from_slice(&[SECT_EH, size as u8, 0, 0]);
            for c in &self.clauses {
                let (flags, value) = c.kind.to_raw();
                out.extend_from_slice(&(flags as u16).to_le_bytes());
                out.extend_from_slice(&(c.try_offset as u16).to_le_bytes());
                out.push(c.try_length as u8);
                out.extend_from_slice(&(c.handler_offset as u16).to_le_bytes());
                out.push(c.handler_length as u8);
                out.extend_from_slice(&value.to_le_bytes());
            }
        } else {
            let size = self
                .clauses
                .len()
                .checked_mul(FAT_CLAUSE_LEN)
                .and_then(|n| n.checked_add(SECTION_HEADER_LEN))
                .filter(|&n| n <= FAT_MAX_DATA_SIZE)
                .ok_or(IlError::TooLarge {
                    what: "too many exception clauses for one section",
                })?;
            out.extend_from_slice(
                &(((size as u32) << 8) | (SECT_EH | SECT_FAT) as u32).to_le_bytes(),
            );
            for c in &self.clauses {
                let (flags, value) = c.kind.to_raw();
                for field in [
                    flags,
                    c.try_offset,
                    c.try_length,
                    c.handler_offset,
                    c.handler_length,
                    value,
                ] {
                    out.extend_from_slice(&field.to_le_bytes());
                }
            }
        }
        Ok(out)
    }

    fn encoded_len_hint(&self) -> usize {
        FAT_HEADER_LEN
            + self.code.len()
            + 3
            + SECTION_HEADER_LEN
            + self.clauses.len() * FAT_CLAUSE_LEN
    }

    /// Inserts `prologue` before the existing code.
    ///
    /// Exception clause offsets (try, handler, filter) move by `prologue.len()`; branch
    /// targets inside the old code are relative and need no change. `prologue_stack` is the
    /// deepest evaluation stack the prologue reaches; it must leave the stack empty (so the
    /// old code starts as before), and the new max stack is the larger of the two. The
    /// prologue must not branch into the old code except by falling through.
    ///
    /// Returns the offset the old code now starts at (for an IL map,
    /// `SetILInstrumentedCodeMap`).
    pub fn prepend(&mut self, prologue: &[u8], prologue_stack: u16) -> Result<u32, IlError> {
        let delta = u32::try_from(prologue.len()).map_err(|_| IlError::TooLarge {
            what: "prologue is larger than 4 GB",
        })?;
        let total = self.code.len().checked_add(prologue.len());
        if total.is_none_or(|n| u32::try_from(n).is_err()) {
            return Err(IlError::TooLarge {
                what: "code is larger than 4 GB",
            });
        }
        let clauses = self
            .clauses
            .iter()
            .map(|c| c.shifted(delta))
            .collect::<Option<Vec<_>>>()
            .ok_or(IlError::TooLarge {
                what: "exception clause offsets overflow 32 bits",
            })?;
        self.clauses = clauses;
        self.code.splice(0..0, prologue.iter().copied());
        self.max_stack = self.max_stack.max(prologue_stack);
        Ok(delta)
    }
}

fn parse_clause(c: &[u8], fat: bool) -> ExceptionClause {
    if fat {
        ExceptionClause {
            kind: ClauseKind::from_raw(read_u32(c, 0), read_u32(c, 20)),
            try_offset: read_u32(c, 4),
            try_length: read_u32(c, 8),
            handler_offset: read_u32(c, 12),
            handler_length: read_u32(c, 16),
        }
    } else {
        ExceptionClause {
            kind: ClauseKind::from_raw(read_u16(c, 0) as u32, read_u32(c, 8)),
            try_offset: read_u16(c, 2) as u32,
            try_length: c[4] as u32,
            handler_offset: read_u16(c, 5) as u32,
            handler_length: c[7] as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn catch(token: u32, t: u32, tl: u32, h: u32, hl: u32) -> ExceptionClause {
        ExceptionClause {
            kind: ClauseKind::Catch(Token(token)),
            try_offset: t,
            try_length: tl,
            handler_offset: h,
            handler_length: hl,
        }
    }

    /// Parses, checks the body and the consumed length, re-encodes and expects the same bytes.
    fn round_trip(bytes: &[u8], expected: &IlBody) {
        let (body, len) = IlBody::parse_prefix(bytes).unwrap();
        assert_eq!(&body, expected);
        assert_eq!(len, bytes.len());
        assert_eq!(body.encode().unwrap(), bytes);
    }

    #[test]
    fn tiny_body() {
        // ldc.i4.s 41; ret
        let bytes = [0x0E, 0x1F, 0x29, 0x2A];
        let body = IlBody::new(vec![0x1F, 0x29, 0x2A]);
        round_trip(&bytes, &body);
        assert_eq!(HeaderFormat::of(&bytes), Some(HeaderFormat::Tiny));
        assert_eq!(body.header_format(), HeaderFormat::Tiny);
        // Trailing bytes belong to something else.
        let (_, len) = IlBody::parse_prefix(&[0x0E, 0x1F, 0x29, 0x2A, 0xFF, 0xFF]).unwrap();
        assert_eq!(len, 4);
        // Odd code sizes use format bits 0b110 (CorILMethod_TinyFormat1).
        round_trip(&[0x06, 0x2A], &IlBody::new(vec![0x2A]));
        // Empty code and the largest tiny body.
        round_trip(&[0x02], &IlBody::new(vec![]));
        let mut big = vec![0xFE];
        big.extend(std::iter::repeat_n(0x00, 63));
        round_trip(&big, &IlBody::new(vec![0; 63]));
    }

    #[test]
    fn fat_body_with_locals() {
        let mut bytes = vec![
            0x13, 0x30, // flags: fat | init locals, size 3
            0x02, 0x00, // max stack 2
            0x05, 0x00, 0x00, 0x00, // code size 5
            0x01, 0x00, 0x00, 0x11, // local sig 0x11000001
        ];
        let code = [0x16, 0x0A, 0x06, 0x2A, 0x00];
        bytes.extend_from_slice(&code);
        let body = IlBody {
            max_stack: 2,
            local_var_sig: Token(0x1100_0001),
            init_locals: true,
            code: code.to_vec(),
            clauses: vec![],
        };
        round_trip(&bytes, &body);
        assert_eq!(HeaderFormat::of(&bytes), Some(HeaderFormat::Fat));
    }

    #[test]
    fn fat_because_of_size_or_stack() {
        // 64 bytes of code does not fit a tiny header.
        let body = IlBody::new(vec![0; 64]);
        let bytes = body.encode().unwrap();
        assert_eq!(&bytes[..12], &[0x03, 0x30, 8, 0, 64, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes.len(), 76);
        round_trip(&bytes, &body);
        // Neither does a stack of 9.
        let body = IlBody {
            max_stack: 9,
            ..IlBody::new(vec![0x2A])
        };
        round_trip(&[0x03, 0x30, 9, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x2A], &body);
        // A fat header that could have been tiny encodes tiny (same meaning).
        let fat = [0x03, 0x30, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x2A];
        assert_eq!(IlBody::parse(&fat).unwrap().encode().unwrap(), [0x06, 0x2A]);
    }

    #[test]
    fn fat_with_small_eh() {
        // try { 1 byte nop; leave.s } finally { endfinally } and a catch, 15 bytes of code.
        let code: Vec<u8> = (0..15).collect();
        let mut bytes = vec![0x1B, 0x30, 3, 0, 15, 0, 0, 0, 0, 0, 0, 0];
        bytes.extend_from_slice(&code);
        bytes.push(0); // pad 27 -> 28
        bytes.extend_from_slice(&[0x01, 28, 0, 0]); // small EH, 2 clauses
        bytes.extend_from_slice(&[0x02, 0x00, 0x01, 0x00, 0x05, 0x06, 0x00, 0x02, 0, 0, 0, 0]);
        bytes.extend_from_slice(&[
            0x00, 0x00, 0x00, 0x00, 0x08, 0x09, 0x00, 0x06, 0x05, 0x00, 0x00, 0x01,
        ]);
        let body = IlBody {
            max_stack: 3,
            local_var_sig: Token(0),
            init_locals: true,
            code,
            clauses: vec![
                ExceptionClause {
                    kind: ClauseKind::Finally,
                    try_offset: 1,
                    try_length: 5,
                    handler_offset: 6,
                    handler_length: 2,
                },
                catch(0x0100_0005, 0, 8, 9, 6),
            ],
        };
        round_trip(&bytes, &body);
    }

    #[test]
    fn fat_with_fat_eh() {
        // A try longer than 255 bytes needs fat clauses.
        let code = vec![0u8; 300];
        let mut bytes = vec![0x0B, 0x30, 1, 0];
        bytes.extend_from_slice(&300u32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&code); // 312: already aligned
        bytes.extend_from_slice(&[0x41, 52, 0, 0]); // fat EH, 2 clauses
        for v in [1u32, 0, 280, 280, 10, 290] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        for v in [4u32, 0, 10, 10, 2, 0] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let body = IlBody {
            max_stack: 1,
            local_var_sig: Token(0),
            init_locals: false,
            code,
            clauses: vec![
                ExceptionClause {
                    kind: ClauseKind::Filter { filter_offset: 290 },
                    try_offset: 0,
                    try_length: 280,
                    handler_offset: 280,
                    handler_length: 10,
                },
                ExceptionClause {
                    kind: ClauseKind::Fault,
                    try_offset: 0,
                    try_length: 10,
                    handler_offset: 10,
                    handler_length: 2,
                },
            ],
        };
        round_trip(&bytes, &body);
    }

    #[test]
    fn many_clauses_switch_to_fat_section() {
        let clauses: Vec<_> = (0..21).map(|i| catch(0x0100_0001, i, 1, 30, 1)).collect();
        let body = IlBody {
            clauses: clauses.clone(),
            ..IlBody::new(vec![0; 32])
        };
        let bytes = body.encode().unwrap();
        assert_eq!(bytes[44], 0x41);
        assert_eq!(IlBody::parse(&bytes).unwrap(), body);
        let body20 = IlBody {
            clauses: clauses[..20].to_vec(),
            ..IlBody::new(vec![0; 32])
        };
        let bytes = body20.encode().unwrap();
        assert_eq!(&bytes[44..46], &[0x01, 244]);
        assert_eq!(IlBody::parse(&bytes).unwrap(), body20);
    }

    #[test]
    fn eh_quirks_match_the_runtime() {
        // DataSize written without the section header (old VB/MC++ compilers): still 1 clause.
        let mut bytes = vec![0x0B, 0x30, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x2A];
        bytes.extend_from_slice(&[0x01, 12, 0, 0]);
        bytes.extend_from_slice(&[2, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0]);
        let (body, len) = IlBody::parse_prefix(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!(body.clauses.len(), 1);
        assert_eq!(body.clauses[0].kind, ClauseKind::Finally);
        // An exception table that is not the first section is ignored, as the runtime does;
        // every section still counts towards the size.
        let mut bytes = vec![0x0B, 0x30, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x2A];
        bytes.extend_from_slice(&[0x82, 4, 0xAA, 0xBB]); // OptIL table, more follow
        bytes.extend_from_slice(&[0x01, 16, 0, 0]);
        bytes.extend_from_slice(&[2, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0]);
        let (body, len) = IlBody::parse_prefix(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert!(body.clauses.is_empty());
    }

    #[test]
    fn errors() {
        assert!(matches!(
            IlBody::parse(&[]),
            Err(IlError::Truncated { needed: 1, .. })
        ));
        assert_eq!(IlBody::parse(&[0x00]), Err(IlError::UnknownFormat(0)));
        assert_eq!(IlBody::parse(&[0x07]), Err(IlError::UnknownFormat(7)));
        assert!(matches!(
            IlBody::parse(&[0x0E, 0x1F]),
            Err(IlError::Truncated {
                what: "code",
                needed: 4,
                available: 2
            })
        ));
        assert!(matches!(
            IlBody::parse(&[0x03, 0x30, 8, 0]),
            Err(IlError::Truncated { what: "header", .. })
        ));
        assert_eq!(
            IlBody::parse(&[0x03, 0x20, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(IlError::BadHeaderSize(2))
        );
        // Fat header, MoreSects set, but no section.
        assert!(matches!(
            IlBody::parse(&[0x0B, 0x30, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(IlError::Truncated {
                what: "section header",
                ..
            })
        ));
        // A non-EH small section of size 1 is smaller than its header.
        assert_eq!(
            IlBody::parse(&[0x0B, 0x30, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 1]),
            Err(IlError::BadSection {
                offset: 12,
                data_size: 1
            })
        );
        let e: Error = IlError::UnknownFormat(0).into();
        assert!(e.to_string().contains("neither a tiny nor a fat"));
    }

    #[test]
    fn longer_fat_header_is_accepted() {
        // Size 4 DWORDs: the code starts at 16.
        let bytes = [
            0x03, 0x40, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE, 0x2A,
        ];
        let (body, len) = IlBody::parse_prefix(&bytes).unwrap();
        assert_eq!(body.code, [0x2A]);
        assert_eq!(len, 17);
    }

    #[test]
    fn prepend_shifts_clauses_and_raises_stack() {
        let mut body = IlBody {
            max_stack: 1,
            local_var_sig: Token(0x1100_0002),
            init_locals: true,
            code: vec![0x00; 20],
            clauses: vec![
                catch(0x0100_0001, 0, 10, 10, 5),
                ExceptionClause {
                    kind: ClauseKind::Filter { filter_offset: 15 },
                    try_offset: 2,
                    try_length: 3,
                    handler_offset: 18,
                    handler_length: 2,
                },
            ],
        };
        // ldc.i4.s 7; ldc.i4.1; add; pop
        let prologue = [0x1F, 7, 0x17, 0x58, 0x26];
        assert_eq!(body.prepend(&prologue, 2).unwrap(), 5);
        assert_eq!(body.max_stack, 2);
        assert_eq!(&body.code[..5], &prologue);
        assert_eq!(body.code.len(), 25);
        assert_eq!(body.clauses[0], catch(0x0100_0001, 5, 10, 15, 5));
        assert_eq!(
            body.clauses[1],
            ExceptionClause {
                kind: ClauseKind::Filter { filter_offset: 20 },
                try_offset: 7,
                try_length: 3,
                handler_offset: 23,
                handler_length: 2,
            }
        );
        // A deeper existing stack is kept.
        body.max_stack = 6;
        body.prepend(&[0x00], 1).unwrap();
        assert_eq!(body.max_stack, 6);
        assert_eq!(body.clauses[0].try_offset, 6);
        assert_eq!(IlBody::parse(&body.encode().unwrap()).unwrap(), body);
        // Overflowing offsets are refused and leave the body unchanged.
        let mut far = IlBody {
            clauses: vec![catch(1, u32::MAX, 1, 0, 1)],
            ..IlBody::new(vec![0])
        };
        let before = far.clone();
        assert!(far.prepend(&[0], 1).is_err());
        assert_eq!(far, before);
    }

    #[test]
    fn ldc_i4_forms() {
        assert_eq!(ldc_i4(-1), [0x15]);
        assert_eq!(ldc_i4(0), [0x16]);
        assert_eq!(ldc_i4(8), [0x1E]);
        assert_eq!(ldc_i4(42), [0x1F, 42]);
        assert_eq!(ldc_i4(-128), [0x1F, 0x80]);
        assert_eq!(ldc_i4(128), [0x20, 128, 0, 0, 0]);
        assert_eq!(ldc_i4(-129), [0x20, 0x7F, 0xFF, 0xFF, 0xFF]);
    }

    fn clause_strategy() -> impl Strategy<Value = ExceptionClause> {
        let kind = prop_oneof![
            any::<u32>().prop_map(|t| ClauseKind::Catch(Token(t))),
            any::<u32>().prop_map(|o| ClauseKind::Filter { filter_offset: o }),
            Just(ClauseKind::Finally),
            Just(ClauseKind::Fault),
            (any::<u32>(), any::<u32>())
                .prop_filter("named kinds", |(f, _)| ![0, 1, 2, 4].contains(f))
                .prop_map(|(flags, value)| ClauseKind::Other { flags, value }),
        ];
        // Mostly small values, so both section forms are exercised.
        let field = prop_oneof![0u32..300, any::<u32>()];
        (kind, field.clone(), field.clone(), field.clone(), field).prop_map(
            |(kind, try_offset, try_length, handler_offset, handler_length)| ExceptionClause {
                kind,
                try_offset,
                try_length,
                handler_offset,
                handler_length,
            },
        )
    }

    fn body_strategy() -> impl Strategy<Value = IlBody> {
        (
            prop_oneof![0u16..10, any::<u16>()],
            prop_oneof![Just(0u32), any::<u32>()],
            any::<bool>(),
            proptest::collection::vec(any::<u8>(), 0..100),
            proptest::collection::vec(clause_strategy(), 0..25),
        )
            .prop_map(|(max_stack, sig, init_locals, code, clauses)| IlBody {
                max_stack,
                local_var_sig: Token(sig),
                init_locals,
                code,
                clauses,
            })
    }

    proptest! {
        #[test]
        fn parse_is_total(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            // Never panics; whatever parses re-encodes to something that parses the same.
            if let Ok((body, len)) = IlBody::parse_prefix(&bytes) {
                prop_assert!(len <= bytes.len());
                let again = body.encode().unwrap();
                let mut normalized = body.clone();
                if normalized.fits_tiny() {
                    normalized.max_stack = 8;
                }
                prop_assert_eq!(IlBody::parse(&again).unwrap(), normalized);
            }
        }

        #[test]
        fn fat_headers_with_sections_are_total(
            tail in proptest::collection::vec(any::<u8>(), 0..200),
            code_size in 0u32..40,
            flags in any::<u16>(),
        ) {
            // Steer random input into the section parser: a valid fat header with MoreSects.
            let mut bytes = ((flags & 0x0FF0) | 0x300B).to_le_bytes().to_vec();
            bytes.extend_from_slice(&[8, 0]);
            bytes.extend_from_slice(&code_size.to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(&tail);
            let _ = IlBody::parse_prefix(&bytes);
        }

        #[test]
        fn encode_then_parse_round_trips(body in body_strategy()) {
            let bytes = body.encode().unwrap();
            let (parsed, len) = IlBody::parse_prefix(&bytes).unwrap();
            prop_assert_eq!(len, bytes.len());
            let mut expected = body.clone();
            if body.fits_tiny() {
                expected.max_stack = 8;
                prop_assert_eq!(bytes.len(), 1 + body.code.len());
            }
            prop_assert_eq!(parsed, expected);
            // Encoding is canonical: a second round gives the same bytes.
            prop_assert_eq!(IlBody::parse(&bytes).unwrap().encode().unwrap(), bytes);
        }
    }
}
