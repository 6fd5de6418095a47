//! Pins the info-side vtables (ICorProfilerInfo .. 15, IMetaDataImport/2,
//! IMetaDataAssemblyImport) to the header order written down in `tests/slots/`, and to the
//! slots observed on a real runtime.

mod common;

use std::mem::size_of;

use clrprof_sys::*;

const INFO_LISTING: &str = include_str!("slots/info.txt");
const METADATA_LISTING: &str = include_str!("slots/metadata.txt");
const ASSEMBLY_IMPORT_LISTING: &str = include_str!("slots/metadata_assembly.txt");
const EMIT_LISTING: &str = include_str!("slots/metadata_emit.txt");

#[test]
fn info15_matches_listing() {
    common::check_listing::<ICorProfilerInfo15Vtbl>(INFO_LISTING);
}

#[test]
fn every_info_version_matches_its_prefix_of_the_listing() {
    common::check_listing_prefix::<ICorProfilerInfoVtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo2Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo3Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo4Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo5Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo6Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo7Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo8Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo9Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo10Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo11Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo12Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo13Vtbl>(INFO_LISTING);
    common::check_listing_prefix::<ICorProfilerInfo14Vtbl>(INFO_LISTING);
}

#[test]
fn metadata_import_matches_listing() {
    common::check_listing::<IMetaDataImport2Vtbl>(METADATA_LISTING);
    common::check_listing_prefix::<IMetaDataImportVtbl>(METADATA_LISTING);
    common::check_listing::<IMetaDataAssemblyImportVtbl>(ASSEMBLY_IMPORT_LISTING);
}

#[test]
fn metadata_emit_prefix_matches_listing() {
    common::check_listing::<IMetaDataEmitVtbl>(EMIT_LISTING);
    common::assert_slot::<IMetaDataEmitVtbl>("GetTokenFromSig", 23);
    common::assert_slot::<IMetaDataEmitVtbl>("GetTokenFromTypeSpec", 26);
    common::assert_slot::<IMetaDataEmitVtbl>("DefineField", 39);
}

/// Slots measured with hand-made vtables against CoreCLR 3.1.23 on Linux x86_64.
#[test]
fn slots_observed_on_a_real_runtime() {
    for (method, slot) in [
        ("GetFunctionInfo", 15),
        ("SetEventMask", 16),
        ("GetModuleInfo", 20),
        ("GetModuleMetaData", 21),
        ("GetILFunctionBody", 22),
        ("GetILFunctionBodyAllocator", 23),
        ("SetILFunctionBody", 24),
        ("DoStackSnapshot", 36),
        ("SetEnterLeaveFunctionHooks3", 61),
        ("SetEnterLeaveFunctionHooks3WithInfo", 62),
        ("GetFunctionEnter3Info", 63),
        ("GetRuntimeInformation", 67),
        ("EnumThreads", 71),
        ("SetEventMask2", 82),
        ("SuspendRuntime", 97),
        ("ResumeRuntime", 98),
    ] {
        common::assert_slot::<ICorProfilerInfo15Vtbl>(method, slot);
    }
    for (method, slot) in [
        ("CloseEnum", 3),
        ("FindTypeDefByName", 9),
        ("GetTypeDefProps", 12),
        ("EnumMethodsWithName", 19),
        ("GetMethodProps", 30),
    ] {
        common::assert_slot::<IMetaDataImport2Vtbl>(method, slot);
    }
}

#[test]
fn vtable_sizes() {
    let word = size_of::<usize>();
    // 3 IUnknown slots + 112 Info methods: the last, EnumerateGCHeapObjects, is slot 114.
    assert_eq!(size_of::<ICorProfilerInfo15Vtbl>(), 115 * word);
    assert_eq!(size_of::<ICorProfilerInfo11Vtbl>(), 101 * word);
    assert_eq!(size_of::<IMetaDataImportVtbl>(), 65 * word);
    assert_eq!(size_of::<IMetaDataImport2Vtbl>(), 73 * word);
    assert_eq!(size_of::<IMetaDataAssemblyImportVtbl>(), 17 * word);
    let last = ICorProfilerInfo15Vtbl::all_slots().pop().unwrap();
    assert_eq!(
        (last.interface, last.method, last.index),
        ("ICorProfilerInfo15", "EnumerateGCHeapObjects", 114)
    );
}
