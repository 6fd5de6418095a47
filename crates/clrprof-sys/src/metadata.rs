//! The metadata reader interfaces of `cor.h`: `IMetaDataImport`, `IMetaDataImport2` and
//! `IMetaDataAssemblyImport`, obtained from `ICorProfilerInfo::GetModuleMetaData` (or
//! `GetTokenAndMetaDataFromFunction`) with the IIDs below.
//!
//! Methods and parameters keep cor.h's order, names and C types: out-buffers are `*mut`,
//! `LPCWSTR` and `void const *` are `*const`, interface pointers are `*mut c_void`. Name
//! lengths are in wide characters and include the terminating NUL; `Enum*` methods take an
//! `HCORENUM` that starts null and must be released with `CloseEnum`.

use core::ffi::c_void;

use crate::com_vtable;
use crate::corhdr::MDUTF8CSTR;
use crate::structs::{ASSEMBLYMETADATA, COR_FIELD_OFFSET};
use crate::types::*;
use crate::vtable::IUnknownVtbl;

/// IID of IMetaDataImport: {7DAC8207-D3AE-4C75-9B67-92801A497D44}.
pub const IID_IMetaDataImport: GUID = GUID::from_u128(0x7DAC8207_D3AE_4C75_9B67_92801A497D44);
/// IID of IMetaDataImport2: {FCE5EFA0-8BBA-4F8E-A036-8F2022B08466}.
pub const IID_IMetaDataImport2: GUID = GUID::from_u128(0xFCE5EFA0_8BBA_4F8E_A036_8F2022B08466);
/// IID of IMetaDataAssemblyImport: {EE62470B-E94B-424E-9B7C-2F00C9249F93}.
pub const IID_IMetaDataAssemblyImport: GUID =
    GUID::from_u128(0xEE62470B_E94B_424E_9B7C_2F00C9249F93);

com_vtable! {
    /// IMetaDataImport: reads the metadata tables of one module (types, members, signatures).
    pub struct IMetaDataImportVtbl("IMetaDataImport"): IUnknownVtbl {
        /// Returns nothing (`STDMETHOD_(void, CloseEnum)`); a null `hEnum` is allowed.
        fn CloseEnum(hEnum: HCORENUM) -> ();
        fn CountEnum(hEnum: HCORENUM, pulCount: *mut ULONG) -> HRESULT;
        fn ResetEnum(hEnum: HCORENUM, ulPos: ULONG) -> HRESULT;
        fn EnumTypeDefs(phEnum: *mut HCORENUM, rTypeDefs: *mut mdTypeDef, cMax: ULONG, pcTypeDefs: *mut ULONG) -> HRESULT;
        fn EnumInterfaceImpls(
            phEnum: *mut HCORENUM,
            td: mdTypeDef,
            rImpls: *mut mdInterfaceImpl,
            cMax: ULONG,
            pcImpls: *mut ULONG,
        ) -> HRESULT;
        fn EnumTypeRefs(phEnum: *mut HCORENUM, rTypeRefs: *mut mdTypeRef, cMax: ULONG, pcTypeRefs: *mut ULONG) -> HRESULT;
        /// `szTypeDef` is the full name (`Namespace.Type`); nested types need `tkEnclosingClass`.
        fn FindTypeDefByName(szTypeDef: LPCWSTR, tkEnclosingClass: mdToken, ptd: *mut mdTypeDef) -> HRESULT;
        fn GetScopeProps(szName: LPWSTR, cchName: ULONG, pchName: *mut ULONG, pmvid: *mut GUID) -> HRESULT;
        fn GetModuleFromScope(pmd: *mut mdModule) -> HRESULT;
        /// `szTypeDef` gets the full name; `*ptkExtends` the base TypeDef/TypeRef/TypeSpec.
        fn GetTypeDefProps(
            td: mdTypeDef,
            szTypeDef: LPWSTR,
            cchTypeDef: ULONG,
            pchTypeDef: *mut ULONG,
            pdwTypeDefFlags: *mut DWORD,
            ptkExtends: *mut mdToken,
        ) -> HRESULT;
        fn GetInterfaceImplProps(iiImpl: mdInterfaceImpl, pClass: *mut mdTypeDef, ptkIface: *mut mdToken) -> HRESULT;
        fn GetTypeRefProps(
            tr: mdTypeRef,
            ptkResolutionScope: *mut mdToken,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
        ) -> HRESULT;
        /// `ppIScope` receives the metadata interface `riid` of the defining module.
        fn ResolveTypeRef(tr: mdTypeRef, riid: REFIID, ppIScope: *mut *mut c_void, ptd: *mut mdTypeDef) -> HRESULT;
        fn EnumMembers(
            phEnum: *mut HCORENUM,
            cl: mdTypeDef,
            rMembers: *mut mdToken,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumMembersWithName(
            phEnum: *mut HCORENUM,
            cl: mdTypeDef,
            szName: LPCWSTR,
            rMembers: *mut mdToken,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumMethods(
            phEnum: *mut HCORENUM,
            cl: mdTypeDef,
            rMethods: *mut mdMethodDef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumMethodsWithName(
            phEnum: *mut HCORENUM,
            cl: mdTypeDef,
            szName: LPCWSTR,
            rMethods: *mut mdMethodDef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumFields(
            phEnum: *mut HCORENUM,
            cl: mdTypeDef,
            rFields: *mut mdFieldDef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumFieldsWithName(
            phEnum: *mut HCORENUM,
            cl: mdTypeDef,
            szName: LPCWSTR,
            rFields: *mut mdFieldDef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumParams(
            phEnum: *mut HCORENUM,
            mb: mdMethodDef,
            rParams: *mut mdParamDef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumMemberRefs(
            phEnum: *mut HCORENUM,
            tkParent: mdToken,
            rMemberRefs: *mut mdMemberRef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumMethodImpls(
            phEnum: *mut HCORENUM,
            td: mdTypeDef,
            rMethodBody: *mut mdToken,
            rMethodDecl: *mut mdToken,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumPermissionSets(
            phEnum: *mut HCORENUM,
            tk: mdToken,
            dwActions: DWORD,
            rPermission: *mut mdPermission,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn FindMember(
            td: mdTypeDef,
            szName: LPCWSTR,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            pmb: *mut mdToken,
        ) -> HRESULT;
        fn FindMethod(
            td: mdTypeDef,
            szName: LPCWSTR,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            pmb: *mut mdMethodDef,
        ) -> HRESULT;
        fn FindField(
            td: mdTypeDef,
            szName: LPCWSTR,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            pmb: *mut mdFieldDef,
        ) -> HRESULT;
        fn FindMemberRef(
            td: mdTypeRef,
            szName: LPCWSTR,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            pmr: *mut mdMemberRef,
        ) -> HRESULT;
        /// Name, owning class, `CorMethodAttr` flags, signature blob, RVA and `CorMethodImpl` flags.
        fn GetMethodProps(
            mb: mdMethodDef,
            pClass: *mut mdTypeDef,
            szMethod: LPWSTR,
            cchMethod: ULONG,
            pchMethod: *mut ULONG,
            pdwAttr: *mut DWORD,
            ppvSigBlob: *mut PCCOR_SIGNATURE,
            pcbSigBlob: *mut ULONG,
            pulCodeRVA: *mut ULONG,
            pdwImplFlags: *mut DWORD,
        ) -> HRESULT;
        fn GetMemberRefProps(
            mr: mdMemberRef,
            ptk: *mut mdToken,
            szMember: LPWSTR,
            cchMember: ULONG,
            pchMember: *mut ULONG,
            ppvSigBlob: *mut PCCOR_SIGNATURE,
            pbSig: *mut ULONG,
        ) -> HRESULT;
        fn EnumProperties(
            phEnum: *mut HCORENUM,
            td: mdTypeDef,
            rProperties: *mut mdProperty,
            cMax: ULONG,
            pcProperties: *mut ULONG,
        ) -> HRESULT;
        fn EnumEvents(phEnum: *mut HCORENUM, td: mdTypeDef, rEvents: *mut mdEvent, cMax: ULONG, pcEvents: *mut ULONG) -> HRESULT;
        /// cor.h declares the `szEvent` out-buffer as `LPCWSTR`.
        fn GetEventProps(
            ev: mdEvent,
            pClass: *mut mdTypeDef,
            szEvent: LPCWSTR,
            cchEvent: ULONG,
            pchEvent: *mut ULONG,
            pdwEventFlags: *mut DWORD,
            ptkEventType: *mut mdToken,
            pmdAddOn: *mut mdMethodDef,
            pmdRemoveOn: *mut mdMethodDef,
            pmdFire: *mut mdMethodDef,
            rmdOtherMethod: *mut mdMethodDef,
            cMax: ULONG,
            pcOtherMethod: *mut ULONG,
        ) -> HRESULT;
        fn EnumMethodSemantics(
            phEnum: *mut HCORENUM,
            mb: mdMethodDef,
            rEventProp: *mut mdToken,
            cMax: ULONG,
            pcEventProp: *mut ULONG,
        ) -> HRESULT;
        fn GetMethodSemantics(mb: mdMethodDef, tkEventProp: mdToken, pdwSemanticsFlags: *mut DWORD) -> HRESULT;
        fn GetClassLayout(
            td: mdTypeDef,
            pdwPackSize: *mut DWORD,
            rFieldOffset: *mut COR_FIELD_OFFSET,
            cMax: ULONG,
            pcFieldOffset: *mut ULONG,
            pulClassSize: *mut ULONG,
        ) -> HRESULT;
        fn GetFieldMarshal(tk: mdToken, ppvNativeType: *mut PCCOR_SIGNATURE, pcbNativeType: *mut ULONG) -> HRESULT;
        fn GetRVA(tk: mdToken, pulCodeRVA: *mut ULONG, pdwImplFlags: *mut DWORD) -> HRESULT;
        fn GetPermissionSetProps(
            pm: mdPermission,
            pdwAction: *mut DWORD,
            ppvPermission: *mut *const c_void,
            pcbPermission: *mut ULONG,
        ) -> HRESULT;
        fn GetSigFromToken(mdSig: mdSignature, ppvSig: *mut PCCOR_SIGNATURE, pcbSig: *mut ULONG) -> HRESULT;
        fn GetModuleRefProps(mur: mdModuleRef, szName: LPWSTR, cchName: ULONG, pchName: *mut ULONG) -> HRESULT;
        fn EnumModuleRefs(
            phEnum: *mut HCORENUM,
            rModuleRefs: *mut mdModuleRef,
            cmax: ULONG,
            pcModuleRefs: *mut ULONG,
        ) -> HRESULT;
        fn GetTypeSpecFromToken(typespec: mdTypeSpec, ppvSig: *mut PCCOR_SIGNATURE, pcbSig: *mut ULONG) -> HRESULT;
        /// Marked "not recommended" in cor.h; `*pszUtf8NamePtr` points into the string heap.
        fn GetNameFromToken(tk: mdToken, pszUtf8NamePtr: *mut MDUTF8CSTR) -> HRESULT;
        fn EnumUnresolvedMethods(
            phEnum: *mut HCORENUM,
            rMethods: *mut mdToken,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        /// `ldstr` literal of a `mdtString` token; not NUL-terminated, `*pchString` is its length.
        fn GetUserString(stk: mdString, szString: LPWSTR, cchString: ULONG, pchString: *mut ULONG) -> HRESULT;
        fn GetPinvokeMap(
            tk: mdToken,
            pdwMappingFlags: *mut DWORD,
            szImportName: LPWSTR,
            cchImportName: ULONG,
            pchImportName: *mut ULONG,
            pmrImportDLL: *mut mdModuleRef,
        ) -> HRESULT;
        fn EnumSignatures(
            phEnum: *mut HCORENUM,
            rSignatures: *mut mdSignature,
            cmax: ULONG,
            pcSignatures: *mut ULONG,
        ) -> HRESULT;
        fn EnumTypeSpecs(phEnum: *mut HCORENUM, rTypeSpecs: *mut mdTypeSpec, cmax: ULONG, pcTypeSpecs: *mut ULONG) -> HRESULT;
        fn EnumUserStrings(phEnum: *mut HCORENUM, rStrings: *mut mdString, cmax: ULONG, pcStrings: *mut ULONG) -> HRESULT;
        fn GetParamForMethodIndex(md: mdMethodDef, ulParamSeq: ULONG, ppd: *mut mdParamDef) -> HRESULT;
        fn EnumCustomAttributes(
            phEnum: *mut HCORENUM,
            tk: mdToken,
            tkType: mdToken,
            rCustomAttributes: *mut mdCustomAttribute,
            cMax: ULONG,
            pcCustomAttributes: *mut ULONG,
        ) -> HRESULT;
        fn GetCustomAttributeProps(
            cv: mdCustomAttribute,
            ptkObj: *mut mdToken,
            ptkType: *mut mdToken,
            ppBlob: *mut *const c_void,
            pcbSize: *mut ULONG,
        ) -> HRESULT;
        fn FindTypeRef(tkResolutionScope: mdToken, szName: LPCWSTR, ptr: *mut mdTypeRef) -> HRESULT;
        fn GetMemberProps(
            mb: mdToken,
            pClass: *mut mdTypeDef,
            szMember: LPWSTR,
            cchMember: ULONG,
            pchMember: *mut ULONG,
            pdwAttr: *mut DWORD,
            ppvSigBlob: *mut PCCOR_SIGNATURE,
            pcbSigBlob: *mut ULONG,
            pulCodeRVA: *mut ULONG,
            pdwImplFlags: *mut DWORD,
            pdwCPlusTypeFlag: *mut DWORD,
            ppValue: *mut UVCP_CONSTANT,
            pcchValue: *mut ULONG,
        ) -> HRESULT;
        fn GetFieldProps(
            mb: mdFieldDef,
            pClass: *mut mdTypeDef,
            szField: LPWSTR,
            cchField: ULONG,
            pchField: *mut ULONG,
            pdwAttr: *mut DWORD,
            ppvSigBlob: *mut PCCOR_SIGNATURE,
            pcbSigBlob: *mut ULONG,
            pdwCPlusTypeFlag: *mut DWORD,
            ppValue: *mut UVCP_CONSTANT,
            pcchValue: *mut ULONG,
        ) -> HRESULT;
        /// cor.h declares the `szProperty` out-buffer as `LPCWSTR`.
        fn GetPropertyProps(
            prop: mdProperty,
            pClass: *mut mdTypeDef,
            szProperty: LPCWSTR,
            cchProperty: ULONG,
            pchProperty: *mut ULONG,
            pdwPropFlags: *mut DWORD,
            ppvSig: *mut PCCOR_SIGNATURE,
            pbSig: *mut ULONG,
            pdwCPlusTypeFlag: *mut DWORD,
            ppDefaultValue: *mut UVCP_CONSTANT,
            pcchDefaultValue: *mut ULONG,
            pmdSetter: *mut mdMethodDef,
            pmdGetter: *mut mdMethodDef,
            rmdOtherMethod: *mut mdMethodDef,
            cMax: ULONG,
            pcOtherMethod: *mut ULONG,
        ) -> HRESULT;
        fn GetParamProps(
            tk: mdParamDef,
            pmd: *mut mdMethodDef,
            pulSequence: *mut ULONG,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
            pdwAttr: *mut DWORD,
            pdwCPlusTypeFlag: *mut DWORD,
            ppValue: *mut UVCP_CONSTANT,
            pcchValue: *mut ULONG,
        ) -> HRESULT;
        /// S_FALSE when the object has no attribute of that (full type) name.
        fn GetCustomAttributeByName(
            tkObj: mdToken,
            szName: LPCWSTR,
            ppData: *mut *const c_void,
            pcbData: *mut ULONG,
        ) -> HRESULT;
        /// Returns a BOOL, not an HRESULT (`STDMETHOD_(BOOL, IsValidToken)`).
        fn IsValidToken(tk: mdToken) -> BOOL;
        fn GetNestedClassProps(tdNestedClass: mdTypeDef, ptdEnclosingClass: *mut mdTypeDef) -> HRESULT;
        fn GetNativeCallConvFromSig(pvSig: *const c_void, cbSig: ULONG, pCallConv: *mut ULONG) -> HRESULT;
        fn IsGlobal(pd: mdToken, pbGlobal: *mut INT) -> HRESULT;
    }
}

com_vtable! {
    /// IMetaDataImport2: generics (generic parameters, MethodSpecs), PE kind and version string.
    pub struct IMetaDataImport2Vtbl("IMetaDataImport2"): IMetaDataImportVtbl {
        fn EnumGenericParams(
            phEnum: *mut HCORENUM,
            tk: mdToken,
            rGenericParams: *mut mdGenericParam,
            cMax: ULONG,
            pcGenericParams: *mut ULONG,
        ) -> HRESULT;
        fn GetGenericParamProps(
            gp: mdGenericParam,
            pulParamSeq: *mut ULONG,
            pdwParamFlags: *mut DWORD,
            ptOwner: *mut mdToken,
            reserved: *mut DWORD,
            wzname: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
        ) -> HRESULT;
        fn GetMethodSpecProps(
            mi: mdMethodSpec,
            tkParent: *mut mdToken,
            ppvSigBlob: *mut PCCOR_SIGNATURE,
            pcbSigBlob: *mut ULONG,
        ) -> HRESULT;
        fn EnumGenericParamConstraints(
            phEnum: *mut HCORENUM,
            tk: mdGenericParam,
            rGenericParamConstraints: *mut mdGenericParamConstraint,
            cMax: ULONG,
            pcGenericParamConstraints: *mut ULONG,
        ) -> HRESULT;
        fn GetGenericParamConstraintProps(
            gpc: mdGenericParamConstraint,
            ptGenericParam: *mut mdGenericParam,
            ptkConstraintType: *mut mdToken,
        ) -> HRESULT;
        /// `*pdwPEKind` is a combination of `CorPEKind`; `*pdwMAchine` the PE machine type.
        fn GetPEKind(pdwPEKind: *mut DWORD, pdwMAchine: *mut DWORD) -> HRESULT;
        fn GetVersionString(pwzBuf: LPWSTR, ccBufSize: DWORD, pccBufSize: *mut DWORD) -> HRESULT;
        fn EnumMethodSpecs(
            phEnum: *mut HCORENUM,
            tk: mdToken,
            rMethodSpecs: *mut mdMethodSpec,
            cMax: ULONG,
            pcMethodSpecs: *mut ULONG,
        ) -> HRESULT;
    }
}

com_vtable! {
    /// IMetaDataAssemblyImport: the assembly manifest (assembly name and version, references).
    pub struct IMetaDataAssemblyImportVtbl("IMetaDataAssemblyImport"): IUnknownVtbl {
        /// `mda` comes from `GetAssemblyFromScope`; `pMetaData` receives version and locale.
        fn GetAssemblyProps(
            mda: mdAssembly,
            ppbPublicKey: *mut *const c_void,
            pcbPublicKey: *mut ULONG,
            pulHashAlgId: *mut ULONG,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
            pMetaData: *mut ASSEMBLYMETADATA,
            pdwAssemblyFlags: *mut DWORD,
        ) -> HRESULT;
        fn GetAssemblyRefProps(
            mdar: mdAssemblyRef,
            ppbPublicKeyOrToken: *mut *const c_void,
            pcbPublicKeyOrToken: *mut ULONG,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
            pMetaData: *mut ASSEMBLYMETADATA,
            ppbHashValue: *mut *const c_void,
            pcbHashValue: *mut ULONG,
            pdwAssemblyRefFlags: *mut DWORD,
        ) -> HRESULT;
        fn GetFileProps(
            mdf: mdFile,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
            ppbHashValue: *mut *const c_void,
            pcbHashValue: *mut ULONG,
            pdwFileFlags: *mut DWORD,
        ) -> HRESULT;
        fn GetExportedTypeProps(
            mdct: mdExportedType,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
            ptkImplementation: *mut mdToken,
            ptkTypeDef: *mut mdTypeDef,
            pdwExportedTypeFlags: *mut DWORD,
        ) -> HRESULT;
        fn GetManifestResourceProps(
            mdmr: mdManifestResource,
            szName: LPWSTR,
            cchName: ULONG,
            pchName: *mut ULONG,
            ptkImplementation: *mut mdToken,
            pdwOffset: *mut DWORD,
            pdwResourceFlags: *mut DWORD,
        ) -> HRESULT;
        fn EnumAssemblyRefs(
            phEnum: *mut HCORENUM,
            rAssemblyRefs: *mut mdAssemblyRef,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumFiles(phEnum: *mut HCORENUM, rFiles: *mut mdFile, cMax: ULONG, pcTokens: *mut ULONG) -> HRESULT;
        fn EnumExportedTypes(
            phEnum: *mut HCORENUM,
            rExportedTypes: *mut mdExportedType,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn EnumManifestResources(
            phEnum: *mut HCORENUM,
            rManifestResources: *mut mdManifestResource,
            cMax: ULONG,
            pcTokens: *mut ULONG,
        ) -> HRESULT;
        fn GetAssemblyFromScope(ptkAssembly: *mut mdAssembly) -> HRESULT;
        fn FindExportedTypeByName(szName: LPCWSTR, mdtExportedType: mdToken, ptkExportedType: *mut mdExportedType) -> HRESULT;
        fn FindManifestResourceByName(szName: LPCWSTR, ptkManifestResource: *mut mdManifestResource) -> HRESULT;
        /// Returns nothing (`STDMETHOD_(void, CloseEnum)`).
        fn CloseEnum(hEnum: HCORENUM) -> ();
        /// `ppIUnk` receives up to `cMax` IMetaDataAssemblyImport pointers.
        fn FindAssembliesByName(
            szAppBase: LPCWSTR,
            szPrivateBin: LPCWSTR,
            szAssemblyName: LPCWSTR,
            ppIUnk: *mut *mut c_void,
            cMax: ULONG,
            pcAssemblies: *mut ULONG,
        ) -> HRESULT;
    }
}

/// IID of IMetaDataEmit: {BA3FEE4C-ECB9-4E41-83B7-183FA41CD859}.
pub const IID_IMetaDataEmit: GUID = GUID::from_u128(0xBA3FEE4C_ECB9_4E41_83B7_183FA41CD859);

com_vtable! {
    /// IMetaDataEmit, the first 37 methods (through `DefineField`: what IL rewriting needs to
    /// add local variable signatures and fields); the slots after them are not declared, so a pointer
    /// to the runtime's vtable may be read through this prefix. Obtained with
    /// `GetModuleMetaData(ofWrite, IID_IMetaDataEmit)`.
    pub struct IMetaDataEmitVtbl("IMetaDataEmit"): IUnknownVtbl {
        fn SetModuleProps(szName: LPCWSTR) -> HRESULT;
        fn Save(szFile: LPCWSTR, dwSaveFlags: DWORD) -> HRESULT;
        /// `pIStream` is an `IStream*`.
        fn SaveToStream(pIStream: *mut c_void, dwSaveFlags: DWORD) -> HRESULT;
        /// `fSave` is a `CorSaveSize`.
        fn GetSaveSize(fSave: DWORD, pdwSaveSize: *mut DWORD) -> HRESULT;
        fn DefineTypeDef(
            szTypeDef: LPCWSTR,
            dwTypeDefFlags: DWORD,
            tkExtends: mdToken,
            rtkImplements: *mut mdToken,
            ptd: *mut mdTypeDef,
        ) -> HRESULT;
        fn DefineNestedType(
            szTypeDef: LPCWSTR,
            dwTypeDefFlags: DWORD,
            tkExtends: mdToken,
            rtkImplements: *mut mdToken,
            tdEncloser: mdTypeDef,
            ptd: *mut mdTypeDef,
        ) -> HRESULT;
        /// `pUnk` is an `IUnknown*`.
        fn SetHandler(pUnk: *mut c_void) -> HRESULT;
        fn DefineMethod(
            td: mdTypeDef,
            szName: LPCWSTR,
            dwMethodFlags: DWORD,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            ulCodeRVA: ULONG,
            dwImplFlags: DWORD,
            pmd: *mut mdMethodDef,
        ) -> HRESULT;
        fn DefineMethodImpl(td: mdTypeDef, tkBody: mdToken, tkDecl: mdToken) -> HRESULT;
        fn DefineTypeRefByName(tkResolutionScope: mdToken, szName: LPCWSTR, ptr: *mut mdTypeRef) -> HRESULT;
        /// `pAssemImport`: IMetaDataAssemblyImport*, `pImport`: IMetaDataImport*,
        /// `pAssemEmit`: IMetaDataAssemblyEmit*.
        fn DefineImportType(
            pAssemImport: *mut c_void,
            pbHashValue: *const c_void,
            cbHashValue: ULONG,
            pImport: *mut c_void,
            tdImport: mdTypeDef,
            pAssemEmit: *mut c_void,
            ptr: *mut mdTypeRef,
        ) -> HRESULT;
        fn DefineMemberRef(
            tkImport: mdToken,
            szName: LPCWSTR,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            pmr: *mut mdMemberRef,
        ) -> HRESULT;
        /// `pAssemImport`: IMetaDataAssemblyImport*, `pImport`: IMetaDataImport*,
        /// `pAssemEmit`: IMetaDataAssemblyEmit*.
        fn DefineImportMember(
            pAssemImport: *mut c_void,
            pbHashValue: *const c_void,
            cbHashValue: ULONG,
            pImport: *mut c_void,
            mbMember: mdToken,
            pAssemEmit: *mut c_void,
            tkParent: mdToken,
            pmr: *mut mdMemberRef,
        ) -> HRESULT;
        fn DefineEvent(
            td: mdTypeDef,
            szEvent: LPCWSTR,
            dwEventFlags: DWORD,
            tkEventType: mdToken,
            mdAddOn: mdMethodDef,
            mdRemoveOn: mdMethodDef,
            mdFire: mdMethodDef,
            rmdOtherMethods: *mut mdMethodDef,
            pmdEvent: *mut mdEvent,
        ) -> HRESULT;
        fn SetClassLayout(
            td: mdTypeDef,
            dwPackSize: DWORD,
            rFieldOffsets: *mut COR_FIELD_OFFSET,
            ulClassSize: ULONG,
        ) -> HRESULT;
        fn DeleteClassLayout(td: mdTypeDef) -> HRESULT;
        fn SetFieldMarshal(tk: mdToken, pvNativeType: PCCOR_SIGNATURE, cbNativeType: ULONG) -> HRESULT;
        fn DeleteFieldMarshal(tk: mdToken) -> HRESULT;
        fn DefinePermissionSet(
            tk: mdToken,
            dwAction: DWORD,
            pvPermission: *const c_void,
            cbPermission: ULONG,
            ppm: *mut mdPermission,
        ) -> HRESULT;
        fn SetRVA(md: mdMethodDef, ulRVA: ULONG) -> HRESULT;
        /// A StandAloneSig token for the signature (a local variable signature, or a method
        /// signature for `calli`), new or existing.
        fn GetTokenFromSig(pvSig: PCCOR_SIGNATURE, cbSig: ULONG, pmsig: *mut mdSignature) -> HRESULT;
        fn DefineModuleRef(szName: LPCWSTR, pmur: *mut mdModuleRef) -> HRESULT;
        fn SetParent(mr: mdMemberRef, tk: mdToken) -> HRESULT;
        /// A TypeSpec token for the signature (e.g. a generic instantiation), new or existing.
        fn GetTokenFromTypeSpec(pvSig: PCCOR_SIGNATURE, cbSig: ULONG, ptypespec: *mut mdTypeSpec) -> HRESULT;
        fn SaveToMemory(pbData: *mut c_void, cbData: ULONG) -> HRESULT;
        fn DefineUserString(szString: LPCWSTR, cchString: ULONG, pstk: *mut mdString) -> HRESULT;
        fn DeleteToken(tkObj: mdToken) -> HRESULT;
        fn SetMethodProps(md: mdMethodDef, dwMethodFlags: DWORD, ulCodeRVA: ULONG, dwImplFlags: DWORD) -> HRESULT;
        fn SetTypeDefProps(
            td: mdTypeDef,
            dwTypeDefFlags: DWORD,
            tkExtends: mdToken,
            rtkImplements: *mut mdToken,
        ) -> HRESULT;
        fn SetEventProps(
            ev: mdEvent,
            dwEventFlags: DWORD,
            tkEventType: mdToken,
            mdAddOn: mdMethodDef,
            mdRemoveOn: mdMethodDef,
            mdFire: mdMethodDef,
            rmdOtherMethods: *mut mdMethodDef,
        ) -> HRESULT;
        fn SetPermissionSetProps(
            tk: mdToken,
            dwAction: DWORD,
            pvPermission: *const c_void,
            cbPermission: ULONG,
            ppm: *mut mdPermission,
        ) -> HRESULT;
        fn DefinePinvokeMap(tk: mdToken, dwMappingFlags: DWORD, szImportName: LPCWSTR, mrImportDLL: mdModuleRef) -> HRESULT;
        fn SetPinvokeMap(tk: mdToken, dwMappingFlags: DWORD, szImportName: LPCWSTR, mrImportDLL: mdModuleRef) -> HRESULT;
        fn DeletePinvokeMap(tk: mdToken) -> HRESULT;
        fn DefineCustomAttribute(
            tkOwner: mdToken,
            tkCtor: mdToken,
            pCustomAttribute: *const c_void,
            cbCustomAttribute: ULONG,
            pcv: *mut mdCustomAttribute,
        ) -> HRESULT;
        fn SetCustomAttributeValue(pcv: mdCustomAttribute, pCustomAttribute: *const c_void, cbCustomAttribute: ULONG) -> HRESULT;
        /// A new field of `td` (added to a type that is not loaded yet: in `ModuleLoadFinished`).
        fn DefineField(
            td: mdTypeDef,
            szName: LPCWSTR,
            dwFieldFlags: DWORD,
            pvSigBlob: PCCOR_SIGNATURE,
            cbSigBlob: ULONG,
            dwCPlusTypeFlag: DWORD,
            pValue: *const c_void,
            cchValue: ULONG,
            pmd: *mut mdFieldDef,
        ) -> HRESULT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_iid() {
        assert_eq!(
            IID_IMetaDataEmit.to_string(),
            "{BA3FEE4C-ECB9-4E41-83B7-183FA41CD859}"
        );
    }

    #[test]
    fn iids() {
        assert_eq!(
            IID_IMetaDataImport.to_string(),
            "{7DAC8207-D3AE-4C75-9B67-92801A497D44}"
        );
        assert_eq!(
            IID_IMetaDataImport2.to_string(),
            "{FCE5EFA0-8BBA-4F8E-A036-8F2022B08466}"
        );
        assert_eq!(
            IID_IMetaDataAssemblyImport.to_string(),
            "{EE62470B-E94B-424E-9B7C-2F00C9249F93}"
        );
        // cor.h spells the bytes out: EXTERN_GUID(IID_IMetaDataImport, 0x7dac8207, 0xd3ae,
        // 0x4c75, 0x9b, 0x67, 0x92, 0x80, 0x1a, 0x49, 0x7d, 0x44).
        assert_eq!(
            IID_IMetaDataImport.data4,
            [0x9b, 0x67, 0x92, 0x80, 0x1a, 0x49, 0x7d, 0x44]
        );
    }
}
