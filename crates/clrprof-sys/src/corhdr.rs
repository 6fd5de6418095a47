//! Metadata and IL definitions from `corhdr.h`: element types, token kinds, attribute flags,
//! calling conventions and the IL method header layouts.
//!
//! Every C enum is a `pub type Name = u32` plus one `pub const` per enumerator, with the
//! header's names. `CorElementType`, the `md*` token types, `RID` and the signature pointer
//! types live in [`crate::types`].

use core::ffi::c_char;

use crate::types::{CorElementType, RID, ULONG32, mdSignature, mdToken};

/// `MDUTF8CSTR`: a NUL-terminated UTF-8 name inside the metadata heap.
pub type MDUTF8CSTR = *const c_char;
/// `MDUTF8STR`: a writable NUL-terminated UTF-8 string.
pub type MDUTF8STR = *mut c_char;

// ---------------------------------------------------------------------------------------------
// CorElementType: the type codes of signatures.
// ---------------------------------------------------------------------------------------------

pub const ELEMENT_TYPE_END: CorElementType = 0x00;
pub const ELEMENT_TYPE_VOID: CorElementType = 0x01;
pub const ELEMENT_TYPE_BOOLEAN: CorElementType = 0x02;
pub const ELEMENT_TYPE_CHAR: CorElementType = 0x03;
pub const ELEMENT_TYPE_I1: CorElementType = 0x04;
pub const ELEMENT_TYPE_U1: CorElementType = 0x05;
pub const ELEMENT_TYPE_I2: CorElementType = 0x06;
pub const ELEMENT_TYPE_U2: CorElementType = 0x07;
pub const ELEMENT_TYPE_I4: CorElementType = 0x08;
pub const ELEMENT_TYPE_U4: CorElementType = 0x09;
pub const ELEMENT_TYPE_I8: CorElementType = 0x0a;
pub const ELEMENT_TYPE_U8: CorElementType = 0x0b;
pub const ELEMENT_TYPE_R4: CorElementType = 0x0c;
pub const ELEMENT_TYPE_R8: CorElementType = 0x0d;
pub const ELEMENT_TYPE_STRING: CorElementType = 0x0e;
/// `PTR <type>`.
pub const ELEMENT_TYPE_PTR: CorElementType = 0x0f;
/// `BYREF <type>`.
pub const ELEMENT_TYPE_BYREF: CorElementType = 0x10;
/// `VALUETYPE <TypeDefOrRef token>`.
pub const ELEMENT_TYPE_VALUETYPE: CorElementType = 0x11;
/// `CLASS <TypeDefOrRef token>`.
pub const ELEMENT_TYPE_CLASS: CorElementType = 0x12;
/// `VAR <number>`: a type parameter of the enclosing type.
pub const ELEMENT_TYPE_VAR: CorElementType = 0x13;
/// `ARRAY <type> <rank> <bcount> <bounds...> <lbcount> <lower bounds...>`.
pub const ELEMENT_TYPE_ARRAY: CorElementType = 0x14;
/// `GENERICINST <generic type> <argCnt> <args...>`.
pub const ELEMENT_TYPE_GENERICINST: CorElementType = 0x15;
/// `TYPEDREF`: a typed reference (no arguments).
pub const ELEMENT_TYPE_TYPEDBYREF: CorElementType = 0x16;
/// Native-size signed integer (`IntPtr`).
pub const ELEMENT_TYPE_I: CorElementType = 0x18;
/// Native-size unsigned integer (`UIntPtr`).
pub const ELEMENT_TYPE_U: CorElementType = 0x19;
/// `FNPTR <complete method signature>`.
pub const ELEMENT_TYPE_FNPTR: CorElementType = 0x1b;
/// Shortcut for `System.Object`.
pub const ELEMENT_TYPE_OBJECT: CorElementType = 0x1c;
/// `SZARRAY <type>`: single-dimension, zero-lower-bound array.
pub const ELEMENT_TYPE_SZARRAY: CorElementType = 0x1d;
/// `MVAR <number>`: a type parameter of the enclosing method.
pub const ELEMENT_TYPE_MVAR: CorElementType = 0x1e;
/// Required custom modifier: `CMOD_REQD <TypeDefOrRef token>`.
pub const ELEMENT_TYPE_CMOD_REQD: CorElementType = 0x1f;
/// Optional custom modifier: `CMOD_OPT <TypeDefOrRef token>`.
pub const ELEMENT_TYPE_CMOD_OPT: CorElementType = 0x20;
/// Runtime-internal type handle; never persisted.
pub const ELEMENT_TYPE_INTERNAL: CorElementType = 0x21;
/// First invalid base element type.
pub const ELEMENT_TYPE_MAX: CorElementType = 0x22;
/// Bit set on the modifier codes below.
pub const ELEMENT_TYPE_MODIFIER: CorElementType = 0x40;
/// Sentinel separating fixed from variable arguments in a vararg call site.
pub const ELEMENT_TYPE_SENTINEL: CorElementType = 0x01 | ELEMENT_TYPE_MODIFIER;
/// Marks a pinned local.
pub const ELEMENT_TYPE_PINNED: CorElementType = 0x05 | ELEMENT_TYPE_MODIFIER;

// ---------------------------------------------------------------------------------------------
// CorTokenType and token helpers.
// ---------------------------------------------------------------------------------------------

/// `CorTokenType`: the table a token refers to, in its top byte.
pub type CorTokenType = u32;

pub const mdtModule: CorTokenType = 0x00000000;
pub const mdtTypeRef: CorTokenType = 0x01000000;
pub const mdtTypeDef: CorTokenType = 0x02000000;
pub const mdtFieldDef: CorTokenType = 0x04000000;
pub const mdtMethodDef: CorTokenType = 0x06000000;
pub const mdtParamDef: CorTokenType = 0x08000000;
pub const mdtInterfaceImpl: CorTokenType = 0x09000000;
pub const mdtMemberRef: CorTokenType = 0x0a000000;
pub const mdtCustomAttribute: CorTokenType = 0x0c000000;
pub const mdtPermission: CorTokenType = 0x0e000000;
pub const mdtSignature: CorTokenType = 0x11000000;
pub const mdtEvent: CorTokenType = 0x14000000;
pub const mdtProperty: CorTokenType = 0x17000000;
pub const mdtMethodImpl: CorTokenType = 0x19000000;
pub const mdtModuleRef: CorTokenType = 0x1a000000;
pub const mdtTypeSpec: CorTokenType = 0x1b000000;
pub const mdtAssembly: CorTokenType = 0x20000000;
pub const mdtAssemblyRef: CorTokenType = 0x23000000;
pub const mdtFile: CorTokenType = 0x26000000;
pub const mdtExportedType: CorTokenType = 0x27000000;
pub const mdtManifestResource: CorTokenType = 0x28000000;
pub const mdtGenericParam: CorTokenType = 0x2a000000;
pub const mdtMethodSpec: CorTokenType = 0x2b000000;
pub const mdtGenericParamConstraint: CorTokenType = 0x2c000000;
/// User string heap (`ldstr` operands); not a table.
pub const mdtString: CorTokenType = 0x70000000;
pub const mdtName: CorTokenType = 0x71000000;
/// Marks runtime base types; not a metadata table.
pub const mdtBaseType: CorTokenType = 0x72000000;

/// `RidFromToken`: the row number (low 24 bits) of a token.
pub const fn RidFromToken(tk: mdToken) -> RID {
    tk & 0x00ff_ffff
}

/// `TypeFromToken`: the table tag (top byte, still shifted) of a token; compare with `mdt*`.
pub const fn TypeFromToken(tk: mdToken) -> ULONG32 {
    tk & 0xff00_0000
}

/// `TokenFromRid`: builds a token from a row number and a `mdt*` tag.
pub const fn TokenFromRid(rid: RID, tktype: CorTokenType) -> mdToken {
    rid | tktype
}

/// `IsNilToken`: true when the token's row number is 0.
pub const fn IsNilToken(tk: mdToken) -> bool {
    RidFromToken(tk) == 0
}

pub const mdTokenNil: mdToken = 0;
pub const mdModuleNil: mdToken = mdtModule;
pub const mdTypeRefNil: mdToken = mdtTypeRef;
pub const mdTypeDefNil: mdToken = mdtTypeDef;
pub const mdFieldDefNil: mdToken = mdtFieldDef;
pub const mdMethodDefNil: mdToken = mdtMethodDef;
pub const mdParamDefNil: mdToken = mdtParamDef;
pub const mdInterfaceImplNil: mdToken = mdtInterfaceImpl;
pub const mdMemberRefNil: mdToken = mdtMemberRef;
pub const mdCustomAttributeNil: mdToken = mdtCustomAttribute;
pub const mdPermissionNil: mdToken = mdtPermission;
pub const mdSignatureNil: mdToken = mdtSignature;
pub const mdEventNil: mdToken = mdtEvent;
pub const mdPropertyNil: mdToken = mdtProperty;
pub const mdModuleRefNil: mdToken = mdtModuleRef;
pub const mdTypeSpecNil: mdToken = mdtTypeSpec;
pub const mdAssemblyNil: mdToken = mdtAssembly;
pub const mdAssemblyRefNil: mdToken = mdtAssemblyRef;
pub const mdFileNil: mdToken = mdtFile;
pub const mdExportedTypeNil: mdToken = mdtExportedType;
pub const mdManifestResourceNil: mdToken = mdtManifestResource;
pub const mdGenericParamNil: mdToken = mdtGenericParam;
pub const mdGenericParamConstraintNil: mdToken = mdtGenericParamConstraint;
pub const mdMethodSpecNil: mdToken = mdtMethodSpec;
pub const mdStringNil: mdToken = mdtString;

// ---------------------------------------------------------------------------------------------
// Calling conventions (first byte of a signature).
// ---------------------------------------------------------------------------------------------

/// `CorUnmanagedCallingConvention`.
pub type CorUnmanagedCallingConvention = u32;

pub const IMAGE_CEE_UNMANAGED_CALLCONV_C: CorUnmanagedCallingConvention = 0x1;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_STDCALL: CorUnmanagedCallingConvention = 0x2;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_THISCALL: CorUnmanagedCallingConvention = 0x3;
pub const IMAGE_CEE_UNMANAGED_CALLCONV_FASTCALL: CorUnmanagedCallingConvention = 0x4;

/// `CorCallingConvention`: the low 4 bits name the kind, the high bits are flags.
pub type CorCallingConvention = u32;

pub const IMAGE_CEE_CS_CALLCONV_DEFAULT: CorCallingConvention = 0x0;
pub const IMAGE_CEE_CS_CALLCONV_C: CorCallingConvention = IMAGE_CEE_UNMANAGED_CALLCONV_C;
pub const IMAGE_CEE_CS_CALLCONV_STDCALL: CorCallingConvention =
    IMAGE_CEE_UNMANAGED_CALLCONV_STDCALL;
pub const IMAGE_CEE_CS_CALLCONV_THISCALL: CorCallingConvention =
    IMAGE_CEE_UNMANAGED_CALLCONV_THISCALL;
pub const IMAGE_CEE_CS_CALLCONV_FASTCALL: CorCallingConvention =
    IMAGE_CEE_UNMANAGED_CALLCONV_FASTCALL;
pub const IMAGE_CEE_CS_CALLCONV_VARARG: CorCallingConvention = 0x5;
pub const IMAGE_CEE_CS_CALLCONV_FIELD: CorCallingConvention = 0x6;
pub const IMAGE_CEE_CS_CALLCONV_LOCAL_SIG: CorCallingConvention = 0x7;
pub const IMAGE_CEE_CS_CALLCONV_PROPERTY: CorCallingConvention = 0x8;
/// Unmanaged calling convention encoded as modopts.
pub const IMAGE_CEE_CS_CALLCONV_UNMANAGED: CorCallingConvention = 0x9;
/// Generic method instantiation (a MethodSpec signature).
pub const IMAGE_CEE_CS_CALLCONV_GENERICINST: CorCallingConvention = 0xa;
/// Used only for 64-bit vararg P/Invoke calls.
pub const IMAGE_CEE_CS_CALLCONV_NATIVEVARARG: CorCallingConvention = 0xb;
/// First invalid calling convention.
pub const IMAGE_CEE_CS_CALLCONV_MAX: CorCallingConvention = 0xc;
/// The kind is the bottom 4 bits.
pub const IMAGE_CEE_CS_CALLCONV_MASK: CorCallingConvention = 0x0f;
/// The method has a `this` parameter.
pub const IMAGE_CEE_CS_CALLCONV_HASTHIS: CorCallingConvention = 0x20;
/// `this` is written explicitly in the parameter list.
pub const IMAGE_CEE_CS_CALLCONV_EXPLICITTHIS: CorCallingConvention = 0x40;
/// Generic method: a type-argument count precedes the parameter count.
pub const IMAGE_CEE_CS_CALLCONV_GENERIC: CorCallingConvention = 0x10;
/// `IMAGE_CEE_CS_CALLCONV_INSTANTIATION` (a `#define` alias of `GENERICINST`).
pub const IMAGE_CEE_CS_CALLCONV_INSTANTIATION: CorCallingConvention =
    IMAGE_CEE_CS_CALLCONV_GENERICINST;
/// `IMAGE_CEE_CS_CALLCONV_DEFAULT_HASTHIS` (a `#define`).
pub const IMAGE_CEE_CS_CALLCONV_DEFAULT_HASTHIS: CorCallingConvention =
    IMAGE_CEE_CS_CALLCONV_DEFAULT | IMAGE_CEE_CS_CALLCONV_HASTHIS;

// ---------------------------------------------------------------------------------------------
// CorTypeAttr (TypeDef flags).
// ---------------------------------------------------------------------------------------------

/// `CorTypeAttr`: TypeDef / ExportedType flags (from `GetTypeDefProps`).
pub type CorTypeAttr = u32;

pub const tdVisibilityMask: CorTypeAttr = 0x00000007;
pub const tdNotPublic: CorTypeAttr = 0x00000000;
pub const tdPublic: CorTypeAttr = 0x00000001;
pub const tdNestedPublic: CorTypeAttr = 0x00000002;
pub const tdNestedPrivate: CorTypeAttr = 0x00000003;
pub const tdNestedFamily: CorTypeAttr = 0x00000004;
pub const tdNestedAssembly: CorTypeAttr = 0x00000005;
pub const tdNestedFamANDAssem: CorTypeAttr = 0x00000006;
pub const tdNestedFamORAssem: CorTypeAttr = 0x00000007;
pub const tdLayoutMask: CorTypeAttr = 0x00000018;
pub const tdAutoLayout: CorTypeAttr = 0x00000000;
pub const tdSequentialLayout: CorTypeAttr = 0x00000008;
pub const tdExplicitLayout: CorTypeAttr = 0x00000010;
pub const tdClassSemanticsMask: CorTypeAttr = 0x00000020;
pub const tdClass: CorTypeAttr = 0x00000000;
pub const tdInterface: CorTypeAttr = 0x00000020;
pub const tdAbstract: CorTypeAttr = 0x00000080;
pub const tdSealed: CorTypeAttr = 0x00000100;
pub const tdSpecialName: CorTypeAttr = 0x00000400;
pub const tdImport: CorTypeAttr = 0x00001000;
pub const tdSerializable: CorTypeAttr = 0x00002000;
pub const tdWindowsRuntime: CorTypeAttr = 0x00004000;
pub const tdStringFormatMask: CorTypeAttr = 0x00030000;
pub const tdAnsiClass: CorTypeAttr = 0x00000000;
pub const tdUnicodeClass: CorTypeAttr = 0x00010000;
pub const tdAutoClass: CorTypeAttr = 0x00020000;
pub const tdCustomFormatClass: CorTypeAttr = 0x00030000;
pub const tdCustomFormatMask: CorTypeAttr = 0x00C00000;
pub const tdBeforeFieldInit: CorTypeAttr = 0x00100000;
pub const tdForwarder: CorTypeAttr = 0x00200000;
pub const tdReservedMask: CorTypeAttr = 0x00040800;
pub const tdRTSpecialName: CorTypeAttr = 0x00000800;
pub const tdHasSecurity: CorTypeAttr = 0x00040000;

/// `IsTdNested`: the type is nested (any nested visibility).
pub const fn IsTdNested(x: CorTypeAttr) -> bool {
    (x & tdVisibilityMask) >= tdNestedPublic
}

/// `IsTdInterface`: the type is an interface.
pub const fn IsTdInterface(x: CorTypeAttr) -> bool {
    (x & tdClassSemanticsMask) == tdInterface
}

// ---------------------------------------------------------------------------------------------
// CorMethodAttr (MethodDef flags).
// ---------------------------------------------------------------------------------------------

/// `CorMethodAttr`: MethodDef flags (`pdwAttr` of `GetMethodProps`).
pub type CorMethodAttr = u32;

pub const mdMemberAccessMask: CorMethodAttr = 0x0007;
pub const mdPrivateScope: CorMethodAttr = 0x0000;
pub const mdPrivate: CorMethodAttr = 0x0001;
pub const mdFamANDAssem: CorMethodAttr = 0x0002;
pub const mdAssem: CorMethodAttr = 0x0003;
pub const mdFamily: CorMethodAttr = 0x0004;
pub const mdFamORAssem: CorMethodAttr = 0x0005;
pub const mdPublic: CorMethodAttr = 0x0006;
pub const mdStatic: CorMethodAttr = 0x0010;
pub const mdFinal: CorMethodAttr = 0x0020;
pub const mdVirtual: CorMethodAttr = 0x0040;
pub const mdHideBySig: CorMethodAttr = 0x0080;
pub const mdVtableLayoutMask: CorMethodAttr = 0x0100;
pub const mdReuseSlot: CorMethodAttr = 0x0000;
pub const mdNewSlot: CorMethodAttr = 0x0100;
pub const mdCheckAccessOnOverride: CorMethodAttr = 0x0200;
pub const mdAbstract: CorMethodAttr = 0x0400;
pub const mdSpecialName: CorMethodAttr = 0x0800;
pub const mdPinvokeImpl: CorMethodAttr = 0x2000;
pub const mdUnmanagedExport: CorMethodAttr = 0x0008;
pub const mdReservedMask: CorMethodAttr = 0xd000;
pub const mdRTSpecialName: CorMethodAttr = 0x1000;
pub const mdHasSecurity: CorMethodAttr = 0x4000;
pub const mdRequireSecObject: CorMethodAttr = 0x8000;

// ---------------------------------------------------------------------------------------------
// CorFieldAttr (FieldDef flags).
// ---------------------------------------------------------------------------------------------

/// `CorFieldAttr`: FieldDef flags (`pdwAttr` of `GetFieldProps`).
pub type CorFieldAttr = u32;

pub const fdFieldAccessMask: CorFieldAttr = 0x0007;
pub const fdPrivateScope: CorFieldAttr = 0x0000;
pub const fdPrivate: CorFieldAttr = 0x0001;
pub const fdFamANDAssem: CorFieldAttr = 0x0002;
pub const fdAssembly: CorFieldAttr = 0x0003;
pub const fdFamily: CorFieldAttr = 0x0004;
pub const fdFamORAssem: CorFieldAttr = 0x0005;
pub const fdPublic: CorFieldAttr = 0x0006;
pub const fdStatic: CorFieldAttr = 0x0010;
pub const fdInitOnly: CorFieldAttr = 0x0020;
pub const fdLiteral: CorFieldAttr = 0x0040;
pub const fdNotSerialized: CorFieldAttr = 0x0080;
pub const fdSpecialName: CorFieldAttr = 0x0200;
pub const fdPinvokeImpl: CorFieldAttr = 0x2000;
pub const fdReservedMask: CorFieldAttr = 0x9500;
pub const fdRTSpecialName: CorFieldAttr = 0x0400;
pub const fdHasFieldMarshal: CorFieldAttr = 0x1000;
pub const fdHasDefault: CorFieldAttr = 0x8000;
pub const fdHasFieldRVA: CorFieldAttr = 0x0100;

// ---------------------------------------------------------------------------------------------
// CorParamAttr (Param flags).
// ---------------------------------------------------------------------------------------------

/// `CorParamAttr`: Param flags (`pdwAttr` of `GetParamProps`).
pub type CorParamAttr = u32;

pub const pdIn: CorParamAttr = 0x0001;
pub const pdOut: CorParamAttr = 0x0002;
pub const pdOptional: CorParamAttr = 0x0010;
pub const pdReservedMask: CorParamAttr = 0xf000;
pub const pdHasDefault: CorParamAttr = 0x1000;
pub const pdHasFieldMarshal: CorParamAttr = 0x2000;
pub const pdUnused: CorParamAttr = 0xcfe0;

// ---------------------------------------------------------------------------------------------
// CorMethodImpl (MethodDef implementation flags).
// ---------------------------------------------------------------------------------------------

/// `CorMethodImpl`: implementation flags (`pdwImplFlags` of `GetMethodProps`).
pub type CorMethodImpl = u32;

pub const miCodeTypeMask: CorMethodImpl = 0x0003;
pub const miIL: CorMethodImpl = 0x0000;
pub const miNative: CorMethodImpl = 0x0001;
pub const miOPTIL: CorMethodImpl = 0x0002;
pub const miRuntime: CorMethodImpl = 0x0003;
pub const miManagedMask: CorMethodImpl = 0x0004;
pub const miUnmanaged: CorMethodImpl = 0x0004;
pub const miManaged: CorMethodImpl = 0x0000;
pub const miForwardRef: CorMethodImpl = 0x0010;
pub const miPreserveSig: CorMethodImpl = 0x0080;
pub const miInternalCall: CorMethodImpl = 0x1000;
pub const miSynchronized: CorMethodImpl = 0x0020;
pub const miNoInlining: CorMethodImpl = 0x0008;
pub const miAggressiveInlining: CorMethodImpl = 0x0100;
pub const miNoOptimization: CorMethodImpl = 0x0040;
pub const miAggressiveOptimization: CorMethodImpl = 0x0200;
/// Flags allowed in `MethodImplAttribute.Value`.
pub const miUserMask: CorMethodImpl = miManagedMask
    | miForwardRef
    | miPreserveSig
    | miInternalCall
    | miSynchronized
    | miNoInlining
    | miAggressiveInlining
    | miNoOptimization
    | miAggressiveOptimization;
pub const miMaxMethodImplVal: CorMethodImpl = 0xffff;

// ---------------------------------------------------------------------------------------------
// CorOpenFlags (dwOpenFlags of ICorProfilerInfo::GetModuleMetaData).
// ---------------------------------------------------------------------------------------------

/// `CorOpenFlags`: only `ofRead` and `ofWrite` are valid for `GetModuleMetaData`.
pub type CorOpenFlags = u32;

pub const ofRead: CorOpenFlags = 0x00000000;
pub const ofWrite: CorOpenFlags = 0x00000001;
pub const ofReadWriteMask: CorOpenFlags = 0x00000001;
pub const ofCopyMemory: CorOpenFlags = 0x00000002;
pub const ofReadOnly: CorOpenFlags = 0x00000010;
pub const ofTakeOwnership: CorOpenFlags = 0x00000020;
pub const ofNoTypeLib: CorOpenFlags = 0x00000080;
pub const ofNoTransform: CorOpenFlags = 0x00001000;
pub const ofReserved1: CorOpenFlags = 0x00000100;
pub const ofReserved2: CorOpenFlags = 0x00000200;
pub const ofReserved3: CorOpenFlags = 0x00000400;
pub const ofReserved: CorOpenFlags = 0xffffef40;

// ---------------------------------------------------------------------------------------------
// IL method headers (ECMA-335 II.25.4) and their extra data sections.
// ---------------------------------------------------------------------------------------------

/// `CorILMethodFlags`: the low bits of a tiny header byte or of the fat header's `Flags`.
pub type CorILMethodFlags = u32;

/// Zero-initialise all locals.
pub const CorILMethod_InitLocals: CorILMethodFlags = 0x0010;
/// Extra data sections (EH tables) follow the code.
pub const CorILMethod_MoreSects: CorILMethodFlags = 0x0008;
/// Not used.
pub const CorILMethod_CompressedIL: CorILMethodFlags = 0x0040;
pub const CorILMethod_FormatShift: CorILMethodFlags = 3;
/// Mask of the header format bits (`(1 << FormatShift) - 1`).
pub const CorILMethod_FormatMask: CorILMethodFlags = (1 << CorILMethod_FormatShift) - 1;
/// Tiny header, even code size.
pub const CorILMethod_TinyFormat: CorILMethodFlags = 0x0002;
pub const CorILMethod_SmallFormat: CorILMethodFlags = 0x0000;
/// Fat header.
pub const CorILMethod_FatFormat: CorILMethodFlags = 0x0003;
/// Tiny header, odd code size.
pub const CorILMethod_TinyFormat1: CorILMethodFlags = 0x0006;

/// `CorILMethodSect`: the `Kind` byte of an extra data section.
pub type CorILMethodSect = u32;

pub const CorILMethod_Sect_Reserved: CorILMethodSect = 0;
/// The section is an exception-handling table.
pub const CorILMethod_Sect_EHTable: CorILMethodSect = 1;
pub const CorILMethod_Sect_OptILTable: CorILMethodSect = 2;
/// Mask of the section kind.
pub const CorILMethod_Sect_KindMask: CorILMethodSect = 0x3F;
/// The section uses the fat layout (24-bit size, fat clauses).
pub const CorILMethod_Sect_FatFormat: CorILMethodSect = 0x40;
/// Another section follows this one.
pub const CorILMethod_Sect_MoreSects: CorILMethodSect = 0x80;

/// Largest `DataSize` of a small section (`COR_ILMETHOD_SECT_SMALL_MAX_DATASIZE`).
pub const COR_ILMETHOD_SECT_SMALL_MAX_DATASIZE: u32 = 0xFF;

/// `CorExceptionFlag`: the kind of an exception-handling clause.
pub type CorExceptionFlag = u32;

/// A typed (catch) handler.
pub const COR_ILEXCEPTION_CLAUSE_NONE: CorExceptionFlag = 0x0000;
pub const COR_ILEXCEPTION_CLAUSE_OFFSETLEN: CorExceptionFlag = 0x0000;
pub const COR_ILEXCEPTION_CLAUSE_DEPRECATED: CorExceptionFlag = 0x0000;
/// The clause has a filter; `ClassTokenOrFilterOffset` is the filter's IL offset.
pub const COR_ILEXCEPTION_CLAUSE_FILTER: CorExceptionFlag = 0x0001;
pub const COR_ILEXCEPTION_CLAUSE_FINALLY: CorExceptionFlag = 0x0002;
/// A finally that runs only on exception.
pub const COR_ILEXCEPTION_CLAUSE_FAULT: CorExceptionFlag = 0x0004;
/// Duplicated into a funclet (runtime-internal).
pub const COR_ILEXCEPTION_CLAUSE_DUPLICATED: CorExceptionFlag = 0x0008;

/// `IMAGE_COR_ILMETHOD_TINY`: one byte, `CorILMethod_TinyFormat` in the low 2 bits and the
/// code size (< 64 bytes) in the high 6; no locals, max stack 8, no sections.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IMAGE_COR_ILMETHOD_TINY {
    pub Flags_CodeSize: u8,
}

impl IMAGE_COR_ILMETHOD_TINY {
    /// A tiny header for `code_size` bytes of IL (must be below 64).
    pub const fn new(code_size: u8) -> Self {
        IMAGE_COR_ILMETHOD_TINY {
            Flags_CodeSize: (code_size << 2) | CorILMethod_TinyFormat as u8,
        }
    }

    /// The size in bytes of the IL that follows the header.
    pub const fn CodeSize(&self) -> u32 {
        (self.Flags_CodeSize >> 2) as u32
    }
}

/// `IMAGE_COR_ILMETHOD_FAT`: 12 bytes, 4-byte aligned.
///
/// The C header declares the first 32 bits as the bitfields `Flags : 12`, `Size : 4` (header
/// size in DWORDs, currently 3) and `MaxStack : 16`; on little-endian targets that is the
/// 16-bit word `Flags_Size` followed by the 16-bit `MaxStack`, as laid out here.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IMAGE_COR_ILMETHOD_FAT {
    /// Bits 0..12: `CorILMethodFlags` (incl. `CorILMethod_FatFormat`); bits 12..16: `Size`.
    pub Flags_Size: u16,
    /// Maximum number of items on the operand stack.
    pub MaxStack: u16,
    /// Size in bytes of the IL that follows the header.
    pub CodeSize: u32,
    /// StandAloneSig token of the locals signature, or 0 for none.
    pub LocalVarSigTok: mdSignature,
}

impl IMAGE_COR_ILMETHOD_FAT {
    /// A fat header of the standard size (3 DWORDs); `flags` must include
    /// `CorILMethod_FatFormat`.
    pub const fn new(
        flags: CorILMethodFlags,
        max_stack: u16,
        code_size: u32,
        local_var_sig_tok: mdSignature,
    ) -> Self {
        IMAGE_COR_ILMETHOD_FAT {
            Flags_Size: ((flags & 0x0fff) as u16) | (3 << 12),
            MaxStack: max_stack,
            CodeSize: code_size,
            LocalVarSigTok: local_var_sig_tok,
        }
    }

    /// The 12-bit `Flags` field.
    pub const fn Flags(&self) -> CorILMethodFlags {
        (self.Flags_Size & 0x0fff) as u32
    }

    /// The 4-bit `Size` field: header size in DWORDs.
    pub const fn Size(&self) -> u32 {
        (self.Flags_Size >> 12) as u32
    }
}

/// `IMAGE_COR_ILMETHOD_SECT_SMALL`: header of a small extra data section.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IMAGE_COR_ILMETHOD_SECT_SMALL {
    /// `CorILMethodSect` bits.
    pub Kind: u8,
    /// Size of the section in bytes, this header included.
    pub DataSize: u8,
}

/// `IMAGE_COR_ILMETHOD_SECT_FAT`: header of a fat extra data section; the C bitfields
/// `Kind : 8` and `DataSize : 24` share one little-endian 32-bit word.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IMAGE_COR_ILMETHOD_SECT_FAT {
    pub Kind_DataSize: u32,
}

impl IMAGE_COR_ILMETHOD_SECT_FAT {
    /// A fat section header.
    pub const fn new(kind: CorILMethodSect, data_size: u32) -> Self {
        IMAGE_COR_ILMETHOD_SECT_FAT {
            Kind_DataSize: (kind & 0xff) | (data_size << 8),
        }
    }

    /// `CorILMethodSect` bits.
    pub const fn Kind(&self) -> CorILMethodSect {
        self.Kind_DataSize & 0xff
    }

    /// Size of the section in bytes, this header included.
    pub const fn DataSize(&self) -> u32 {
        self.Kind_DataSize >> 8
    }
}

/// `IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_FAT`: one clause of a fat EH section (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_FAT {
    pub Flags: CorExceptionFlag,
    pub TryOffset: u32,
    pub TryLength: u32,
    pub HandlerOffset: u32,
    pub HandlerLength: u32,
    /// The C union of `ClassToken` (typed handlers) and `FilterOffset` (filters).
    pub ClassTokenOrFilterOffset: u32,
}

/// `IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_SMALL`: one clause of a small EH section (12 bytes).
///
/// The C bitfields are packed into little-endian 32-bit words: word 0 holds `Flags : 16` and
/// `TryOffset : 16`; word 1 holds `TryLength : 8`, `HandlerOffset : 16`, `HandlerLength : 8`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_SMALL {
    pub Flags_TryOffset: u32,
    pub TryLength_HandlerOffset_HandlerLength: u32,
    /// The C union of `ClassToken` (typed handlers) and `FilterOffset` (filters).
    pub ClassTokenOrFilterOffset: u32,
}

impl IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_SMALL {
    pub const fn Flags(&self) -> CorExceptionFlag {
        self.Flags_TryOffset & 0xffff
    }
    pub const fn TryOffset(&self) -> u32 {
        self.Flags_TryOffset >> 16
    }
    pub const fn TryLength(&self) -> u32 {
        self.TryLength_HandlerOffset_HandlerLength & 0xff
    }
    pub const fn HandlerOffset(&self) -> u32 {
        (self.TryLength_HandlerOffset_HandlerLength >> 8) & 0xffff
    }
    pub const fn HandlerLength(&self) -> u32 {
        self.TryLength_HandlerOffset_HandlerLength >> 24
    }
}

const _: () = {
    assert!(core::mem::size_of::<IMAGE_COR_ILMETHOD_TINY>() == 1);
    assert!(core::mem::size_of::<IMAGE_COR_ILMETHOD_FAT>() == 12);
    assert!(core::mem::align_of::<IMAGE_COR_ILMETHOD_FAT>() == 4);
    assert!(core::mem::size_of::<IMAGE_COR_ILMETHOD_SECT_SMALL>() == 2);
    assert!(core::mem::size_of::<IMAGE_COR_ILMETHOD_SECT_FAT>() == 4);
    assert!(core::mem::size_of::<IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_FAT>() == 24);
    assert!(core::mem::size_of::<IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_SMALL>() == 12);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_helpers() {
        let tk: mdToken = 0x0600_002a;
        assert_eq!(TypeFromToken(tk), mdtMethodDef);
        assert_eq!(RidFromToken(tk), 0x2a);
        assert_eq!(TokenFromRid(0x2a, mdtMethodDef), tk);
        assert!(IsNilToken(mdTypeDefNil));
        assert!(!IsNilToken(tk));
        assert_eq!(TypeFromToken(0x7000_0001), mdtString);
    }

    #[test]
    fn element_types_and_callconv() {
        assert_eq!(ELEMENT_TYPE_SENTINEL, 0x41);
        assert_eq!(ELEMENT_TYPE_PINNED, 0x45);
        assert_eq!(ELEMENT_TYPE_SZARRAY, 0x1d);
        assert_eq!(IMAGE_CEE_CS_CALLCONV_DEFAULT_HASTHIS, 0x20);
        assert_eq!(CorILMethod_FormatMask, 0x7);
    }

    #[test]
    fn il_headers() {
        // A tiny header for 5 bytes of IL is 5 << 2 | 2; only the low 2 bits name the format.
        let tiny = IMAGE_COR_ILMETHOD_TINY::new(5);
        assert_eq!(tiny.Flags_CodeSize, 0x16);
        assert_eq!(tiny.CodeSize(), 5);
        assert_eq!(tiny.Flags_CodeSize as u32 & 0x3, CorILMethod_TinyFormat);

        let fat = IMAGE_COR_ILMETHOD_FAT::new(
            CorILMethod_FatFormat | CorILMethod_InitLocals,
            8,
            100,
            0x1100_0001,
        );
        assert_eq!(fat.Flags(), 0x13);
        assert_eq!(fat.Size(), 3);
        // The first two bytes of a standard fat header are 0x13 0x30.
        assert_eq!(fat.Flags_Size.to_le_bytes(), [0x13, 0x30]);

        let sect = IMAGE_COR_ILMETHOD_SECT_FAT::new(
            CorILMethod_Sect_EHTable | CorILMethod_Sect_FatFormat,
            4 + 24,
        );
        assert_eq!(sect.Kind(), 0x41);
        assert_eq!(sect.DataSize(), 28);

        let clause = IMAGE_COR_ILMETHOD_SECT_EH_CLAUSE_SMALL {
            Flags_TryOffset: COR_ILEXCEPTION_CLAUSE_FINALLY | (0x10 << 16),
            TryLength_HandlerOffset_HandlerLength: 0x05 | (0x0015 << 8) | (0x07 << 24),
            ClassTokenOrFilterOffset: 0,
        };
        assert_eq!(clause.Flags(), COR_ILEXCEPTION_CLAUSE_FINALLY);
        assert_eq!(clause.TryOffset(), 0x10);
        assert_eq!(clause.TryLength(), 5);
        assert_eq!(clause.HandlerOffset(), 0x15);
        assert_eq!(clause.HandlerLength(), 7);
    }
}
