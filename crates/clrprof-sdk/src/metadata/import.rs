//! [`MetaDataImport`]: safe calls into a module's `IMetaDataImport2` (or `IMetaDataImport`).
//!
//! Every method is named after its COM method in snake case (`GetMethodProps` →
//! [`MetaDataImport::get_method_props`]) and returns owned data: names become `String`s and
//! signature blobs `Vec<u8>`s copied out of the runtime's buffers before the call returns, so
//! nothing borrowed from the module outlives the call. Enumerations (`Enum*`) collect every
//! token into a `Vec` and always close their `HCORENUM`, on error too.
//!
//! Lookups that can legitimately find nothing (`FindTypeDefByName`, `GetNestedClassProps` on a
//! top-level type, `GetCustomAttributeByName` without the attribute) return `Ok(None)` rather
//! than an error.

use core::ffi::c_void;

use clrprof_sys::{self as sys, HCORENUM, HRESULT, mdToken};

use crate::com::ComPtr;
use crate::error::{Error, HResult, Result, check};
use crate::ids::Token;
use crate::wide::{read_wide, to_wide};

/// A module's metadata reader. Cheap to clone (one COM reference); callable from any thread.
///
/// Holds `IMetaDataImport2` when the runtime provides it (CoreCLR always does) and plain
/// `IMetaDataImport` otherwise; the generics methods ([`MetaDataImport::enum_generic_params`],
/// [`MetaDataImport::get_generic_param_props`], [`MetaDataImport::get_method_spec_props`],
/// [`MetaDataImport::get_version_string`]) then fail with `E_NOINTERFACE`.
#[derive(Clone, Debug)]
pub struct MetaDataImport {
    /// Points at `IMetaDataImport2` when `v2`, else `IMetaDataImport`; the former's vtable
    /// extends the latter's.
    ptr: ComPtr<sys::IMetaDataImportVtbl>,
    v2: bool,
}

/// What `GetMethodProps` reports about a MethodDef.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodProps {
    /// The method name (`Put`, `.ctor`, `get_Count`).
    pub name: String,
    /// The TypeDef that declares it.
    pub class: Token,
    /// `CorMethodAttr` flags (`mdStatic`, `mdVirtual`, ...).
    pub attributes: u32,
    /// The method signature blob (parse with [`super::MethodSig::parse`]).
    pub signature: Vec<u8>,
    /// RVA of the IL body (0 for abstract, P/Invoke and runtime methods).
    pub rva: u32,
    /// `CorMethodImpl` flags.
    pub impl_flags: u32,
}

impl MethodProps {
    /// True for static methods.
    pub fn is_static(&self) -> bool {
        self.attributes & sys::mdStatic != 0
    }
}

/// What `GetTypeDefProps` reports about a TypeDef.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDefProps {
    /// Namespace and name (`System.Collections.Generic.List`1`); nested types have only
    /// their own name (`Inner`).
    pub name: String,
    /// `CorTypeAttr` flags.
    pub flags: u32,
    /// The base type (TypeDef, TypeRef or TypeSpec), nil for interfaces and `System.Object`.
    pub extends: Token,
}

impl TypeDefProps {
    /// True when the type is nested in another (its visibility is one of the `tdNested*`).
    pub fn is_nested(&self) -> bool {
        self.flags & sys::tdVisibilityMask >= sys::tdNestedPublic
    }

    /// True for interfaces.
    pub fn is_interface(&self) -> bool {
        self.flags & sys::tdClassSemanticsMask == sys::tdInterface
    }
}

/// What `GetTypeRefProps` reports about a TypeRef.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeRefProps {
    /// Where the type is: an AssemblyRef, ModuleRef, Module, or (for nested types) the
    /// enclosing TypeRef.
    pub resolution_scope: Token,
    /// Namespace and name (only the name for nested types).
    pub name: String,
}

/// What `GetMemberRefProps` reports about a MemberRef.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRefProps {
    /// The owner: TypeRef, TypeDef, TypeSpec, ModuleRef or MethodDef.
    pub parent: Token,
    /// The member name.
    pub name: String,
    /// Method or field signature blob.
    pub signature: Vec<u8>,
}

/// A default value (`const` field or optional parameter), decoded.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Constant {
    /// `bool`.
    Boolean(bool),
    /// `char`.
    Char(u16),
    /// `sbyte`.
    I1(i8),
    /// `byte`.
    U1(u8),
    /// `short`.
    I2(i16),
    /// `ushort`.
    U2(u16),
    /// `int`.
    I4(i32),
    /// `uint`.
    U4(u32),
    /// `long`.
    I8(i64),
    /// `ulong`.
    U8(u64),
    /// `float`.
    R4(f32),
    /// `double`.
    R8(f64),
    /// `string`.
    String(String),
    /// A null reference (`= null` on a reference type).
    Null,
    /// An element type this SDK does not decode.
    Other(u32),
}

/// What `GetFieldProps` reports about a FieldDef.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldProps {
    /// The TypeDef that declares it.
    pub class: Token,
    /// The field name.
    pub name: String,
    /// `CorFieldAttr` flags.
    pub attributes: u32,
    /// The field signature blob (parse with [`super::signature::parse_field`]).
    pub signature: Vec<u8>,
    /// The literal value of a `const` field.
    pub constant: Option<Constant>,
}

/// What `GetParamProps` reports about a ParamDef.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamProps {
    /// The method it belongs to.
    pub method: Token,
    /// 1-based position; 0 is the return value.
    pub sequence: u32,
    /// The parameter name (may be empty).
    pub name: String,
    /// `CorParamAttr` flags (`pdIn`, `pdOut`, `pdOptional`, ...).
    pub attributes: u32,
    /// The default value of an optional parameter.
    pub default: Option<Constant>,
}

/// What `GetGenericParamProps` reports about a GenericParam.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenericParamProps {
    /// 0-based position in the owner's generic parameter list.
    pub sequence: u32,
    /// `CorGenericParamAttr` flags (variance, constraints).
    pub flags: u32,
    /// The TypeDef or MethodDef that declares it.
    pub owner: Token,
    /// The declared name (`T`, `TKey`).
    pub name: String,
}

/// What `GetMethodSpecProps` reports about a MethodSpec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodSpecProps {
    /// The generic method (MethodDef or MemberRef).
    pub parent: Token,
    /// The instantiation blob (parse with [`super::signature::parse_method_spec`]).
    pub instantiation: Vec<u8>,
}

/// What `GetScopeProps` reports about the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeProps {
    /// The module name as written in its metadata (`Names.dll`).
    pub name: String,
    /// The module version id, unique per build.
    pub mvid: sys::GUID,
}

/// What `IMetaDataAssemblyImport::GetAssemblyProps` reports about the module's assembly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssemblyProps {
    /// The simple name (`System.Private.CoreLib`).
    pub name: String,
    /// Major, minor, build and revision numbers.
    pub version: [u16; 4],
    /// `CorAssemblyFlags`.
    pub flags: u32,
}

/// Maps `CLDB_E_RECORD_NOTFOUND` to `Ok(None)`.
fn found<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is(sys::CLDB_E_RECORD_NOTFOUND) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Copies a blob the runtime pointed at.
///
/// # Safety
/// `ptr` must be null or valid for reads of `len` bytes.
unsafe fn copy_blob(ptr: *const u8, len: u32) -> Vec<u8> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { core::slice::from_raw_parts(ptr, len as usize) }.to_vec()
}

/// Decodes the default value `GetFieldProps`/`GetParamProps` pointed at.
///
/// # Safety
/// `ptr` must be null or point at a value of element type `element_type`, and for strings at
/// `chars` UTF-16 units, as the metadata API documents for `ppValue`/`pcchValue`.
unsafe fn read_constant(element_type: u32, ptr: *const c_void, chars: u32) -> Option<Constant> {
    if ptr.is_null() || element_type == sys::ELEMENT_TYPE_VOID {
        return None;
    }
    let bytes = |n: usize| -> [u8; 8] {
        let mut out = [0u8; 8];
        // SAFETY: the caller guarantees `ptr` points at a value of this element type, whose
        // size is `n`; the metadata heap gives no alignment guarantee, so copy bytewise.
        unsafe { core::ptr::copy_nonoverlapping(ptr.cast::<u8>(), out.as_mut_ptr(), n) };
        out
    };
    Some(match element_type {
        sys::ELEMENT_TYPE_BOOLEAN => Constant::Boolean(bytes(1)[0] != 0),
        sys::ELEMENT_TYPE_I1 => Constant::I1(bytes(1)[0] as i8),
        sys::ELEMENT_TYPE_U1 => Constant::U1(bytes(1)[0]),
        sys::ELEMENT_TYPE_CHAR => {
            let b = bytes(2);
            Constant::Char(u16::from_le_bytes([b[0], b[1]]))
        }
        sys::ELEMENT_TYPE_I2 => {
            let b = bytes(2);
            Constant::I2(i16::from_le_bytes([b[0], b[1]]))
        }
        sys::ELEMENT_TYPE_U2 => {
            let b = bytes(2);
            Constant::U2(u16::from_le_bytes([b[0], b[1]]))
        }
        sys::ELEMENT_TYPE_I4 => {
            let b = bytes(4);
            Constant::I4(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        sys::ELEMENT_TYPE_U4 => {
            let b = bytes(4);
            Constant::U4(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        sys::ELEMENT_TYPE_R4 => {
            let b = bytes(4);
            Constant::R4(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        sys::ELEMENT_TYPE_I8 => Constant::I8(i64::from_le_bytes(bytes(8))),
        sys::ELEMENT_TYPE_U8 => Constant::U8(u64::from_le_bytes(bytes(8))),
        sys::ELEMENT_TYPE_R8 => Constant::R8(f64::from_le_bytes(bytes(8))),
        sys::ELEMENT_TYPE_STRING => {
            // SAFETY: the caller guarantees `chars` UTF-16 units at `ptr`; bytewise copy for
            // the same alignment reason as above.
            let raw = unsafe { copy_blob(ptr.cast::<u8>(), chars.saturating_mul(2)) };
            let units: Vec<u16> = raw
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            Constant::String(String::from_utf16_lossy(&units))
        }
        sys::ELEMENT_TYPE_CLASS => Constant::Null,
        other => Constant::Other(other),
    })
}

/// Closes an `HCORENUM` when dropped.
struct EnumGuard<'a> {
    import: &'a MetaDataImport,
    handle: HCORENUM,
}

impl Drop for EnumGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: `handle` is null or an enumerator this import opened and nobody else closed;
        // CloseEnum accepts null.
        unsafe { (self.import.v1().CloseEnum)(self.import.this(), self.handle) };
    }
}

/// Tokens fetched per `Enum*` call.
const ENUM_BATCH: usize = 64;

impl MetaDataImport {
    /// Wraps an interface pointer, taking over the reference the caller owns.
    ///
    /// # Safety
    /// `raw` must be null or an owned reference to a live `IMetaDataImport2` (when
    /// `is_import2`) or `IMetaDataImport`.
    pub unsafe fn from_raw(raw: *mut c_void, is_import2: bool) -> Option<MetaDataImport> {
        // SAFETY: forwarded from the caller; IMetaDataImport2's vtable starts with
        // IMetaDataImport's, so either pointer may be viewed as the latter.
        let ptr = unsafe { ComPtr::<sys::IMetaDataImportVtbl>::from_raw(raw) }?;
        Some(MetaDataImport {
            ptr,
            v2: is_import2,
        })
    }

    /// Asks any metadata object (an `IMetaDataEmit`, an `IUnknown` from elsewhere) for
    /// `IMetaDataImport2`, falling back to `IMetaDataImport`.
    pub fn from_com<V>(object: &ComPtr<V>) -> Result<MetaDataImport> {
        match object.query::<sys::IMetaDataImportVtbl>(&sys::IID_IMetaDataImport2) {
            Ok(ptr) => Ok(MetaDataImport { ptr, v2: true }),
            Err(_) => {
                let ptr = object.query::<sys::IMetaDataImportVtbl>(&sys::IID_IMetaDataImport)?;
                Ok(MetaDataImport { ptr, v2: false })
            }
        }
    }

    /// True when this is an `IMetaDataImport2` (generics methods available).
    pub fn is_import2(&self) -> bool {
        self.v2
    }

    /// The raw interface pointer (`IMetaDataImport2*` when [`Self::is_import2`]), valid while
    /// `self` lives.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_raw()
    }

    fn this(&self) -> *mut c_void {
        self.ptr.as_raw()
    }

    fn v1(&self) -> &sys::IMetaDataImportVtbl {
        self.ptr.vtbl()
    }

    fn v2(&self, method: &'static str) -> Result<&sys::IMetaDataImport2Vtbl> {
        if !self.v2 {
            return Err(Error::Failed {
                method,
                hr: HResult(sys::E_NOINTERFACE),
            });
        }
        // SAFETY: `v2` is only set when the pointer is an IMetaDataImport2, whose vtable is
        // `IMetaDataImport2Vtbl`.
        Ok(unsafe { self.ptr.vtbl_as::<sys::IMetaDataImport2Vtbl>() })
    }

    /// Runs an `Enum*` method to the end: `call(&mut hEnum, buffer, capacity, &mut fetched)`.
    fn collect_tokens(
        &self,
        method: &'static str,
        mut call: impl FnMut(*mut HCORENUM, *mut mdToken, u32, *mut u32) -> HRESULT,
    ) -> Result<Vec<Token>> {
        let rows = self.enumerate(method, |h, [buf], cap, n| call(h, buf, cap, n))?;
        Ok(rows.into_iter().map(|[t]| t).collect())
    }

    /// Runs an `Enum*` method that fills `COLUMNS` parallel token arrays to the end:
    /// `call(&mut hEnum, buffers, capacity, &mut fetched)`; a row per token fetched.
    fn enumerate<const COLUMNS: usize>(
        &self,
        method: &'static str,
        mut call: impl FnMut(*mut HCORENUM, [*mut mdToken; COLUMNS], u32, *mut u32) -> HRESULT,
    ) -> Result<Vec<[Token; COLUMNS]>> {
        let mut guard = EnumGuard {
            import: self,
            handle: core::ptr::null_mut(),
        };
        let mut out = Vec::new();
        let mut bufs = [[0 as mdToken; ENUM_BATCH]; COLUMNS];
        loop {
            let mut fetched = 0u32;
            let hr = call(
                &mut guard.handle,
                bufs.each_mut().map(|buf| buf.as_mut_ptr()),
                ENUM_BATCH as u32,
                &mut fetched,
            );
            check(method, hr)?;
            let n = (fetched as usize).min(ENUM_BATCH);
            out.extend((0..n).map(|i| core::array::from_fn(|c| Token(bufs[c][i]))));
            if n == 0 || hr == sys::S_FALSE {
                return Ok(out);
            }
        }
    }

    /// Runs a method that points at a blob of the module's heap, `call(&mut blob, &mut len)`,
    /// and copies the blob.
    fn read_blob(
        &self,
        method: &'static str,
        call: impl FnOnce(*mut sys::PCCOR_SIGNATURE, *mut u32) -> HRESULT,
    ) -> Result<Vec<u8>> {
        let mut ptr: sys::PCCOR_SIGNATURE = core::ptr::null();
        let mut len = 0u32;
        check(method, call(&mut ptr, &mut len))?;
        // SAFETY: on success the runtime points at `len` bytes of the blob heap, alive while
        // the module is; we copy them at once.
        Ok(unsafe { copy_blob(ptr, len) })
    }

    // ----- Scope -----

    /// `GetScopeProps`: the module's name and MVID.
    pub fn get_scope_props(&self) -> Result<ScopeProps> {
        let mut mvid = sys::GUID::default();
        let name = read_wide("IMetaDataImport::GetScopeProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe { (self.v1().GetScopeProps)(self.this(), buf, cap, needed, &mut mvid) }
        })?;
        Ok(ScopeProps { name, mvid })
    }

    /// `GetModuleFromScope`: the Module token (always `0x00000001`).
    pub fn get_module_from_scope(&self) -> Result<Token> {
        let mut md: mdToken = 0;
        // SAFETY: `md` is a valid out-pointer.
        let hr = unsafe { (self.v1().GetModuleFromScope)(self.this(), &mut md) };
        check("IMetaDataImport::GetModuleFromScope", hr)?;
        Ok(Token(md))
    }

    /// `IsValidToken`: whether the token names an existing row of this module.
    pub fn is_valid_token(&self, token: Token) -> bool {
        // SAFETY: plain value argument.
        unsafe { (self.v1().IsValidToken)(self.this(), token.0) != 0 }
    }

    /// `IMetaDataImport2::GetVersionString`: the metadata version (`v4.0.30319`).
    pub fn get_version_string(&self) -> Result<String> {
        let vt = self.v2("IMetaDataImport2::GetVersionString")?;
        read_wide("IMetaDataImport2::GetVersionString", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; `needed` is a valid out-pointer.
            unsafe { (vt.GetVersionString)(self.this(), buf, cap, needed) }
        })
    }

    /// The assembly manifest reader of this module.
    pub fn assembly_import(&self) -> Result<MetaDataAssemblyImport> {
        Ok(MetaDataAssemblyImport {
            ptr: self
                .ptr
                .query::<sys::IMetaDataAssemblyImportVtbl>(&sys::IID_IMetaDataAssemblyImport)?,
        })
    }

    // ----- Types -----

    /// `GetTypeDefProps`.
    pub fn get_type_def_props(&self, type_def: Token) -> Result<TypeDefProps> {
        let mut flags = 0u32;
        let mut extends: mdToken = 0;
        let name = read_wide("IMetaDataImport::GetTypeDefProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetTypeDefProps)(
                    self.this(),
                    type_def.0,
                    buf,
                    cap,
                    needed,
                    &mut flags,
                    &mut extends,
                )
            }
        })?;
        Ok(TypeDefProps {
            name,
            flags,
            extends: Token(extends),
        })
    }

    /// `GetTypeRefProps`.
    pub fn get_type_ref_props(&self, type_ref: Token) -> Result<TypeRefProps> {
        let mut scope: mdToken = 0;
        let name = read_wide("IMetaDataImport::GetTypeRefProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetTypeRefProps)(self.this(), type_ref.0, &mut scope, buf, cap, needed)
            }
        })?;
        Ok(TypeRefProps {
            resolution_scope: Token(scope),
            name,
        })
    }

    /// `GetNestedClassProps`: the enclosing TypeDef of a nested type, `None` for a top-level
    /// type.
    pub fn get_nested_class_props(&self, type_def: Token) -> Result<Option<Token>> {
        let mut enclosing: mdToken = 0;
        // SAFETY: `enclosing` is a valid out-pointer.
        let hr =
            unsafe { (self.v1().GetNestedClassProps)(self.this(), type_def.0, &mut enclosing) };
        let r = found(check("IMetaDataImport::GetNestedClassProps", hr));
        Ok(r?.and_then(|_| Some(Token(enclosing)).filter(|t| !t.is_nil())))
    }

    /// `GetTypeSpecFromToken`: the TypeSpec's signature blob (parse with
    /// [`super::TypeSig::parse`]).
    pub fn get_type_spec_from_token(&self, type_spec: Token) -> Result<Vec<u8>> {
        self.read_blob("IMetaDataImport::GetTypeSpecFromToken", |ptr, len| {
            // SAFETY: `ptr` and `len` are valid out-pointers.
            unsafe { (self.v1().GetTypeSpecFromToken)(self.this(), type_spec.0, ptr, len) }
        })
    }

    /// `GetSigFromToken`: a standalone signature (e.g. a method body's locals; parse with
    /// [`super::signature::parse_locals`]).
    pub fn get_sig_from_token(&self, signature: Token) -> Result<Vec<u8>> {
        self.read_blob("IMetaDataImport::GetSigFromToken", |ptr, len| {
            // SAFETY: `ptr` and `len` are valid out-pointers.
            unsafe { (self.v1().GetSigFromToken)(self.this(), signature.0, ptr, len) }
        })
    }

    /// `FindTypeDefByName`: `name` is `Namespace.Name` for a top-level type (pass
    /// [`Token::NIL`] as `enclosing`) or the bare name for a nested one.
    pub fn find_type_def_by_name(&self, name: &str, enclosing: Token) -> Result<Option<Token>> {
        let wide = to_wide(name);
        let mut td: mdToken = 0;
        // SAFETY: `wide` is NUL-terminated and outlives the call; `td` is a valid out-pointer.
        let hr = unsafe {
            (self.v1().FindTypeDefByName)(self.this(), wide.as_ptr(), enclosing.0, &mut td)
        };
        found(check("IMetaDataImport::FindTypeDefByName", hr).map(|_| Token(td)))
    }

    /// `EnumTypeDefs`: every TypeDef of the module (without the `<Module>` pseudo-type).
    pub fn enum_type_defs(&self) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumTypeDefs", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumTypeDefs)(self.this(), h, buf, cap, n) }
        })
    }

    /// `EnumTypeRefs`: every TypeRef of the module.
    pub fn enum_type_refs(&self) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumTypeRefs", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumTypeRefs)(self.this(), h, buf, cap, n) }
        })
    }

    /// `EnumTypeSpecs`: every TypeSpec of the module (generic instantiations, arrays, ... the
    /// module's code refers to).
    pub fn enum_type_specs(&self) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumTypeSpecs", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumTypeSpecs)(self.this(), h, buf, cap, n) }
        })
    }

    /// `EnumInterfaceImpls`: the InterfaceImpl rows of a TypeDef.
    pub fn enum_interface_impls(&self, type_def: Token) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumInterfaceImpls", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumInterfaceImpls)(self.this(), h, type_def.0, buf, cap, n) }
        })
    }

    /// `GetInterfaceImplProps`: the implementing class and the interface
    /// (TypeDef/TypeRef/TypeSpec).
    pub fn get_interface_impl_props(&self, interface_impl: Token) -> Result<(Token, Token)> {
        let mut class: mdToken = 0;
        let mut iface: mdToken = 0;
        // SAFETY: the out-pointers are valid locals.
        let hr = unsafe {
            (self.v1().GetInterfaceImplProps)(self.this(), interface_impl.0, &mut class, &mut iface)
        };
        check("IMetaDataImport::GetInterfaceImplProps", hr)?;
        Ok((Token(class), Token(iface)))
    }

    // ----- Methods -----

    /// `GetMethodProps`.
    pub fn get_method_props(&self, method: Token) -> Result<MethodProps> {
        let mut class: mdToken = 0;
        let mut attributes = 0u32;
        let mut sig: sys::PCCOR_SIGNATURE = core::ptr::null();
        let mut sig_len = 0u32;
        let mut rva = 0u32;
        let mut impl_flags = 0u32;
        let name = read_wide("IMetaDataImport::GetMethodProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetMethodProps)(
                    self.this(),
                    method.0,
                    &mut class,
                    buf,
                    cap,
                    needed,
                    &mut attributes,
                    &mut sig,
                    &mut sig_len,
                    &mut rva,
                    &mut impl_flags,
                )
            }
        })?;
        Ok(MethodProps {
            name,
            class: Token(class),
            attributes,
            // SAFETY: the call succeeded, so `sig` points at `sig_len` bytes of the blob heap,
            // alive while the module is; we copy them at once.
            signature: unsafe { copy_blob(sig, sig_len) },
            rva,
            impl_flags,
        })
    }

    /// `EnumMethods`: the MethodDefs of a TypeDef.
    pub fn enum_methods(&self, type_def: Token) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumMethods", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumMethods)(self.this(), h, type_def.0, buf, cap, n) }
        })
    }

    /// `EnumMethodsWithName`: the MethodDefs of a TypeDef called `name` (all overloads).
    pub fn enum_methods_with_name(&self, type_def: Token, name: &str) -> Result<Vec<Token>> {
        let wide = to_wide(name);
        self.collect_tokens("IMetaDataImport::EnumMethodsWithName", |h, buf, cap, n| {
            // SAFETY: `wide` is NUL-terminated and outlives the enumeration; `h` is the guard's
            // handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe {
                (self.v1().EnumMethodsWithName)(
                    self.this(),
                    h,
                    type_def.0,
                    wide.as_ptr(),
                    buf,
                    cap,
                    n,
                )
            }
        })
    }

    /// `FindMethod`: the MethodDef of `type_def` called `name`, with exactly `signature` if
    /// given (else the first of that name).
    pub fn find_method(
        &self,
        type_def: Token,
        name: &str,
        signature: Option<&[u8]>,
    ) -> Result<Option<Token>> {
        let wide = to_wide(name);
        let (sig_ptr, sig_len) = match signature {
            Some(s) => (s.as_ptr(), s.len() as u32),
            None => (core::ptr::null(), 0),
        };
        let mut md: mdToken = 0;
        // SAFETY: `wide` and the signature slice outlive the call; `md` is a valid out-pointer.
        let hr = unsafe {
            (self.v1().FindMethod)(
                self.this(),
                type_def.0,
                wide.as_ptr(),
                sig_ptr,
                sig_len,
                &mut md,
            )
        };
        found(check("IMetaDataImport::FindMethod", hr).map(|_| Token(md)))
    }

    /// `EnumMethodImpls`: the (body, declaration) pairs of explicit interface implementations
    /// and overrides in a TypeDef.
    pub fn enum_method_impls(&self, type_def: Token) -> Result<Vec<(Token, Token)>> {
        let rows = self.enumerate(
            "IMetaDataImport::EnumMethodImpls",
            |h, [bodies, decls], cap, n| {
                // SAFETY: `h` is the guard's handle, `bodies` and `decls` each hold `cap`
                // tokens, `n` is valid.
                unsafe {
                    (self.v1().EnumMethodImpls)(self.this(), h, type_def.0, bodies, decls, cap, n)
                }
            },
        )?;
        Ok(rows.into_iter().map(|[body, decl]| (body, decl)).collect())
    }

    /// `GetMemberRefProps`.
    pub fn get_member_ref_props(&self, member_ref: Token) -> Result<MemberRefProps> {
        let mut parent: mdToken = 0;
        let mut sig: sys::PCCOR_SIGNATURE = core::ptr::null();
        let mut sig_len = 0u32;
        let name = read_wide("IMetaDataImport::GetMemberRefProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetMemberRefProps)(
                    self.this(),
                    member_ref.0,
                    &mut parent,
                    buf,
                    cap,
                    needed,
                    &mut sig,
                    &mut sig_len,
                )
            }
        })?;
        Ok(MemberRefProps {
            parent: Token(parent),
            name,
            // SAFETY: as in `get_method_props`.
            signature: unsafe { copy_blob(sig, sig_len) },
        })
    }

    /// `EnumMemberRefs`: the MemberRefs whose parent is `parent`.
    pub fn enum_member_refs(&self, parent: Token) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumMemberRefs", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumMemberRefs)(self.this(), h, parent.0, buf, cap, n) }
        })
    }

    // ----- Parameters -----

    /// `EnumParams`: the ParamDefs of a method (only parameters that have a row: names,
    /// attributes or defaults).
    pub fn enum_params(&self, method: Token) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumParams", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumParams)(self.this(), h, method.0, buf, cap, n) }
        })
    }

    /// `GetParamProps`.
    pub fn get_param_props(&self, param: Token) -> Result<ParamProps> {
        let mut method: mdToken = 0;
        let mut sequence = 0u32;
        let mut attributes = 0u32;
        let mut element_type = 0u32;
        let mut value: sys::UVCP_CONSTANT = core::ptr::null();
        let mut chars = 0u32;
        let name = read_wide("IMetaDataImport::GetParamProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetParamProps)(
                    self.this(),
                    param.0,
                    &mut method,
                    &mut sequence,
                    buf,
                    cap,
                    needed,
                    &mut attributes,
                    &mut element_type,
                    &mut value,
                    &mut chars,
                )
            }
        })?;
        Ok(ParamProps {
            method: Token(method),
            sequence,
            name,
            attributes,
            // SAFETY: on success `value` is null or points at a constant of `element_type`
            // (and `chars` units for a string) in the module's blob heap; decoded at once.
            default: unsafe { read_constant(element_type, value, chars) },
        })
    }

    /// The parameters of a method that have a ParamDef row, ordered by sequence (0, the
    /// return value, first when present).
    pub fn method_params(&self, method: Token) -> Result<Vec<ParamProps>> {
        let mut params = self
            .enum_params(method)?
            .into_iter()
            .map(|p| self.get_param_props(p))
            .collect::<Result<Vec<_>>>()?;
        params.sort_by_key(|p| p.sequence);
        Ok(params)
    }

    // ----- Fields -----

    /// `EnumFields`: the FieldDefs of a TypeDef.
    pub fn enum_fields(&self, type_def: Token) -> Result<Vec<Token>> {
        self.collect_tokens("IMetaDataImport::EnumFields", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (self.v1().EnumFields)(self.this(), h, type_def.0, buf, cap, n) }
        })
    }

    /// `GetFieldProps`.
    pub fn get_field_props(&self, field: Token) -> Result<FieldProps> {
        let mut class: mdToken = 0;
        let mut attributes = 0u32;
        let mut sig: sys::PCCOR_SIGNATURE = core::ptr::null();
        let mut sig_len = 0u32;
        let mut element_type = 0u32;
        let mut value: sys::UVCP_CONSTANT = core::ptr::null();
        let mut chars = 0u32;
        let name = read_wide("IMetaDataImport::GetFieldProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetFieldProps)(
                    self.this(),
                    field.0,
                    &mut class,
                    buf,
                    cap,
                    needed,
                    &mut attributes,
                    &mut sig,
                    &mut sig_len,
                    &mut element_type,
                    &mut value,
                    &mut chars,
                )
            }
        })?;
        Ok(FieldProps {
            class: Token(class),
            name,
            attributes,
            // SAFETY: as in `get_method_props`.
            signature: unsafe { copy_blob(sig, sig_len) },
            // SAFETY: as in `get_param_props`.
            constant: unsafe { read_constant(element_type, value, chars) },
        })
    }

    // ----- Generics -----

    /// `IMetaDataImport2::EnumGenericParams`: the GenericParams of a TypeDef or MethodDef,
    /// in table order (which is by sequence for metadata written by compilers).
    pub fn enum_generic_params(&self, owner: Token) -> Result<Vec<Token>> {
        let vt = self.v2("IMetaDataImport2::EnumGenericParams")?;
        self.collect_tokens("IMetaDataImport2::EnumGenericParams", |h, buf, cap, n| {
            // SAFETY: `h` is the guard's handle, `buf` holds `cap` tokens, `n` is valid.
            unsafe { (vt.EnumGenericParams)(self.this(), h, owner.0, buf, cap, n) }
        })
    }

    /// `IMetaDataImport2::GetGenericParamProps`.
    pub fn get_generic_param_props(&self, param: Token) -> Result<GenericParamProps> {
        let vt = self.v2("IMetaDataImport2::GetGenericParamProps")?;
        let mut sequence = 0u32;
        let mut flags = 0u32;
        let mut owner: mdToken = 0;
        let mut reserved = 0u32;
        let name = read_wide(
            "IMetaDataImport2::GetGenericParamProps",
            |cap, needed, buf| {
                // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
                unsafe {
                    (vt.GetGenericParamProps)(
                        self.this(),
                        param.0,
                        &mut sequence,
                        &mut flags,
                        &mut owner,
                        &mut reserved,
                        buf,
                        cap,
                        needed,
                    )
                }
            },
        )?;
        Ok(GenericParamProps {
            sequence,
            flags,
            owner: Token(owner),
            name,
        })
    }

    /// The declared names of the generic parameters of a TypeDef or MethodDef, by sequence
    /// (`["TKey", "TValue"]`); empty when it has none.
    pub fn generic_param_names(&self, owner: Token) -> Result<Vec<String>> {
        let mut props = self
            .enum_generic_params(owner)?
            .into_iter()
            .map(|p| self.get_generic_param_props(p))
            .collect::<Result<Vec<_>>>()?;
        props.sort_by_key(|p| p.sequence);
        Ok(props.into_iter().map(|p| p.name).collect())
    }

    /// `IMetaDataImport2::GetMethodSpecProps`.
    pub fn get_method_spec_props(&self, method_spec: Token) -> Result<MethodSpecProps> {
        let vt = self.v2("IMetaDataImport2::GetMethodSpecProps")?;
        let mut parent: mdToken = 0;
        let mut sig: sys::PCCOR_SIGNATURE = core::ptr::null();
        let mut sig_len = 0u32;
        // SAFETY: the out-pointers are valid locals.
        let hr = unsafe {
            (vt.GetMethodSpecProps)(
                self.this(),
                method_spec.0,
                &mut parent,
                &mut sig,
                &mut sig_len,
            )
        };
        check("IMetaDataImport2::GetMethodSpecProps", hr)?;
        Ok(MethodSpecProps {
            parent: Token(parent),
            // SAFETY: as in `get_method_props`.
            instantiation: unsafe { copy_blob(sig, sig_len) },
        })
    }

    // ----- Attributes and strings -----

    /// `GetCustomAttributeByName`: the value blob of the attribute of type `name` (full name,
    /// e.g. `System.Runtime.CompilerServices.CompilerGeneratedAttribute`) on `owner`, or
    /// `None` when it has none.
    pub fn get_custom_attribute_by_name(
        &self,
        owner: Token,
        name: &str,
    ) -> Result<Option<Vec<u8>>> {
        let wide = to_wide(name);
        let mut data: *const c_void = core::ptr::null();
        let mut len = 0u32;
        // SAFETY: `wide` is NUL-terminated and outlives the call; the out-pointers are valid.
        let hr = unsafe {
            (self.v1().GetCustomAttributeByName)(
                self.this(),
                owner.0,
                wide.as_ptr(),
                &mut data,
                &mut len,
            )
        };
        let hr = check("IMetaDataImport::GetCustomAttributeByName", hr)?;
        if hr == HResult::FALSE || data.is_null() {
            return Ok(None);
        }
        // SAFETY: on S_OK `data` points at `len` bytes of the blob heap; copied at once.
        Ok(Some(unsafe { copy_blob(data.cast(), len) }))
    }

    /// `GetUserString`: the literal of an `ldstr` token (`0x70......`), which may contain NULs.
    pub fn get_user_string(&self, string: Token) -> Result<String> {
        const METHOD: &str = "IMetaDataImport::GetUserString";
        let mut len = 0u32;
        // SAFETY: a null buffer of capacity 0 only asks for the length.
        let hr = unsafe {
            (self.v1().GetUserString)(self.this(), string.0, core::ptr::null_mut(), 0, &mut len)
        };
        check(METHOD, hr)?;
        if len == 0 {
            return Ok(String::new());
        }
        let mut buf = vec![0u16; len as usize];
        let mut again = 0u32;
        // SAFETY: `buf` holds `len` units; `again` is a valid out-pointer.
        let hr = unsafe {
            (self.v1().GetUserString)(self.this(), string.0, buf.as_mut_ptr(), len, &mut again)
        };
        check(METHOD, hr)?;
        let n = (again as usize).min(buf.len());
        Ok(String::from_utf16_lossy(&buf[..n]))
    }

    // ----- Platform invoke -----

    /// `GetPinvokeMap`: where a P/Invoke method (`pinvokeimpl`, `[DllImport]`) goes; `None`
    /// for a method that is not one.
    pub fn get_pinvoke_map(&self, method: Token) -> Result<Option<PinvokeMap>> {
        const METHOD: &str = "IMetaDataImport::GetPinvokeMap";
        let (mut flags, mut module_ref) = (0u32, 0 as mdToken);
        let entry_point = match read_wide(METHOD, |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; the out-pointers are valid locals.
            unsafe {
                (self.v1().GetPinvokeMap)(
                    self.this(),
                    method.0,
                    &mut flags,
                    buf,
                    cap,
                    needed,
                    &mut module_ref,
                )
            }
        }) {
            Ok(name) => name,
            // A method without a P/Invoke map answers CLDB_E_RECORD_NOTFOUND.
            Err(Error::Failed { hr, .. }) if hr.0 == sys::hresult::CLDB_E_RECORD_NOTFOUND => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        Ok(Some(PinvokeMap {
            flags,
            entry_point,
            module_ref: Token(module_ref),
        }))
    }

    /// `GetModuleRefProps`: the name of a ModuleRef (the library of a P/Invoke, as written in
    /// `[DllImport("libc")]`).
    pub fn get_module_ref_props(&self, module_ref: Token) -> Result<String> {
        read_wide("IMetaDataImport::GetModuleRefProps", |cap, needed, buf| {
            // SAFETY: `buf` holds `cap` units; `needed` is a valid out-pointer.
            unsafe { (self.v1().GetModuleRefProps)(self.this(), module_ref.0, buf, cap, needed) }
        })
    }
}

/// What `GetPinvokeMap` says about a P/Invoke method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinvokeMap {
    /// `CorPinvokeMap` flags (character set, calling convention, `SetLastError`...).
    pub flags: u32,
    /// The native function's name (`EntryPoint`, or the method's own name).
    pub entry_point: String,
    /// The ModuleRef naming the library (read with [`MetaDataImport::get_module_ref_props`]).
    pub module_ref: Token,
}

/// A module's assembly manifest reader (`IMetaDataAssemblyImport`).
#[derive(Clone, Debug)]
pub struct MetaDataAssemblyImport {
    ptr: ComPtr<sys::IMetaDataAssemblyImportVtbl>,
}

impl MetaDataAssemblyImport {
    /// `GetAssemblyFromScope`: the Assembly token (fails for a module without a manifest).
    pub fn get_assembly_from_scope(&self) -> Result<Token> {
        let mut tk: mdToken = 0;
        // SAFETY: `tk` is a valid out-pointer.
        let hr = unsafe { (self.ptr.vtbl().GetAssemblyFromScope)(self.ptr.as_raw(), &mut tk) };
        check("IMetaDataAssemblyImport::GetAssemblyFromScope", hr)?;
        Ok(Token(tk))
    }

    /// `GetAssemblyProps` of the module's own assembly: name, version and flags.
    pub fn get_assembly_props(&self) -> Result<AssemblyProps> {
        let assembly = self.get_assembly_from_scope()?;
        let mut flags = 0u32;
        let mut meta = sys::ASSEMBLYMETADATA {
            usMajorVersion: 0,
            usMinorVersion: 0,
            usBuildNumber: 0,
            usRevisionNumber: 0,
            szLocale: core::ptr::null_mut(),
            cbLocale: 0,
            rProcessor: core::ptr::null_mut(),
            ulProcessor: 0,
            rOS: core::ptr::null_mut(),
            ulOS: 0,
        };
        let name = read_wide(
            "IMetaDataAssemblyImport::GetAssemblyProps",
            |cap, needed, buf| {
                // The arrays in `meta` have capacity 0, so the runtime writes only counts.
                meta.cbLocale = 0;
                meta.ulProcessor = 0;
                meta.ulOS = 0;
                // SAFETY: `buf` holds `cap` units; `meta` has null arrays of capacity 0; the
                // other out-pointers are null (not wanted) or valid locals.
                unsafe {
                    (self.ptr.vtbl().GetAssemblyProps)(
                        self.ptr.as_raw(),
                        assembly.0,
                        core::ptr::null_mut(),
                        core::ptr::null_mut(),
                        core::ptr::null_mut(),
                        buf,
                        cap,
                        needed,
                        &mut meta,
                        &mut flags,
                    )
                }
            },
        )?;
        Ok(AssemblyProps {
            name,
            version: [
                meta.usMajorVersion,
                meta.usMinorVersion,
                meta.usBuildNumber,
                meta.usRevisionNumber,
            ],
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_decode() {
        let v = 0x1234_5678i32.to_le_bytes();
        // SAFETY: `v` holds 4 bytes, an I4.
        let c = unsafe { read_constant(sys::ELEMENT_TYPE_I4, v.as_ptr().cast(), 0) };
        assert_eq!(c, Some(Constant::I4(0x1234_5678)));
        let s: Vec<u8> = "hé".encode_utf16().flat_map(u16::to_le_bytes).collect();
        // SAFETY: `s` holds 2 UTF-16 units.
        let c = unsafe { read_constant(sys::ELEMENT_TYPE_STRING, s.as_ptr().cast(), 2) };
        assert_eq!(c, Some(Constant::String("hé".into())));
        // SAFETY: null pointer: nothing is read.
        let c = unsafe { read_constant(sys::ELEMENT_TYPE_I4, core::ptr::null(), 0) };
        assert_eq!(c, None);
        let d = 2.5f64.to_le_bytes();
        // SAFETY: `d` holds 8 bytes, an R8.
        let c = unsafe { read_constant(sys::ELEMENT_TYPE_R8, d.as_ptr().cast(), 0) };
        assert_eq!(c, Some(Constant::R8(2.5)));
    }

    #[test]
    fn not_found_is_none() {
        let e = Error::Failed {
            method: "m",
            hr: HResult(sys::CLDB_E_RECORD_NOTFOUND),
        };
        assert_eq!(found::<u32>(Err(e)), Ok(None));
        assert_eq!(found(Ok(3)), Ok(Some(3)));
        assert!(
            found::<u32>(Err(Error::Failed {
                method: "m",
                hr: HResult(sys::E_FAIL)
            }))
            .is_err()
        );
    }
}
