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

/// `listing` cut off after the last method of `interface`, to check an intermediate version.
fn listing_through(listing: &str, interface: &str) -> String {
    let lines: Vec<&str> = listing.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.split_whitespace().next() == Some(interface))
        .unwrap_or_else(|| panic!("{interface} is not in the listing"));
    lines[..=last].join("\n")
}

#[test]
fn info15_matches_listing() {
    common::check_listing::<ICorProfilerInfo15Vtbl>(INFO_LISTING);
}

#[test]
fn every_info_version_matches_its_prefix_of_the_listing() {
    let l = INFO_LISTING;
    common::check_listing::<ICorProfilerInfoVtbl>(&listing_through(l, "ICorProfilerInfo"));
    common::check_listing::<ICorProfilerInfo2Vtbl>(&listing_through(l, "ICorProfilerInfo2"));
    common::check_listing::<ICorProfilerInfo3Vtbl>(&listing_through(l, "ICorProfilerInfo3"));
    common::check_listing::<ICorProfilerInfo4Vtbl>(&listing_through(l, "ICorProfilerInfo4"));
    common::check_listing::<ICorProfilerInfo5Vtbl>(&listing_through(l, "ICorProfilerInfo5"));
    common::check_listing::<ICorProfilerInfo6Vtbl>(&listing_through(l, "ICorProfilerInfo6"));
    common::check_listing::<ICorProfilerInfo7Vtbl>(&listing_through(l, "ICorProfilerInfo7"));
    common::check_listing::<ICorProfilerInfo8Vtbl>(&listing_through(l, "ICorProfilerInfo8"));
    common::check_listing::<ICorProfilerInfo9Vtbl>(&listing_through(l, "ICorProfilerInfo9"));
    common::check_listing::<ICorProfilerInfo10Vtbl>(&listing_through(l, "ICorProfilerInfo10"));
    common::check_listing::<ICorProfilerInfo11Vtbl>(&listing_through(l, "ICorProfilerInfo11"));
    common::check_listing::<ICorProfilerInfo12Vtbl>(&listing_through(l, "ICorProfilerInfo12"));
    common::check_listing::<ICorProfilerInfo13Vtbl>(&listing_through(l, "ICorProfilerInfo13"));
    common::check_listing::<ICorProfilerInfo14Vtbl>(&listing_through(l, "ICorProfilerInfo14"));
}

#[test]
fn metadata_import_matches_listing() {
    common::check_listing::<IMetaDataImport2Vtbl>(METADATA_LISTING);
    common::check_listing::<IMetaDataImportVtbl>(&listing_through(
        METADATA_LISTING,
        "IMetaDataImport",
    ));
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
