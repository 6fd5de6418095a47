//! Pins the callback-side vtables (ICorProfilerCallback .. 11 and the small interfaces) to the
//! IDL order written down in `tests/slots/`, and to the slots observed on a real runtime.

mod common;

use std::collections::HashSet;
use std::mem::size_of;

use clrprof_sys::*;

const CALLBACK_LISTING: &str = include_str!("slots/callback.txt");

#[test]
fn callback11_matches_listing() {
    common::check_listing::<ICorProfilerCallback11Vtbl>(CALLBACK_LISTING);
}

#[test]
fn every_callback_version_matches_its_prefix_of_the_listing() {
    common::check_listing_prefix::<ICorProfilerCallbackVtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback2Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback3Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback4Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback5Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback6Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback7Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback8Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback9Vtbl>(CALLBACK_LISTING);
    common::check_listing_prefix::<ICorProfilerCallback10Vtbl>(CALLBACK_LISTING);
}

#[test]
fn misc_interfaces_match_listings() {
    common::check_listing::<IClassFactoryVtbl>(include_str!("slots/misc/IClassFactory.txt"));
    common::check_listing::<ICorProfilerFunctionControlVtbl>(include_str!(
        "slots/misc/ICorProfilerFunctionControl.txt"
    ));
    common::check_listing::<ICorProfilerAssemblyReferenceProviderVtbl>(include_str!(
        "slots/misc/ICorProfilerAssemblyReferenceProvider.txt"
    ));
    common::check_listing::<ICorProfilerObjectEnumVtbl>(include_str!(
        "slots/misc/ICorProfilerObjectEnum.txt"
    ));
    common::check_listing::<ICorProfilerFunctionEnumVtbl>(include_str!(
        "slots/misc/ICorProfilerFunctionEnum.txt"
    ));
    common::check_listing::<ICorProfilerModuleEnumVtbl>(include_str!(
        "slots/misc/ICorProfilerModuleEnum.txt"
    ));
    common::check_listing::<ICorProfilerMethodEnumVtbl>(include_str!(
        "slots/misc/ICorProfilerMethodEnum.txt"
    ));
    common::check_listing::<ICorProfilerThreadEnumVtbl>(include_str!(
        "slots/misc/ICorProfilerThreadEnum.txt"
    ));
    common::check_listing::<IMethodMallocVtbl>(include_str!("slots/misc/IMethodMalloc.txt"));
}

/// Slots a hand-made vtable was called through by CoreCLR 3.1.23 on Linux x86_64.
#[test]
fn slots_observed_on_a_real_runtime() {
    type V = ICorProfilerCallback11Vtbl;
    common::assert_slot::<V>("Initialize", 3);
    common::assert_slot::<V>("Shutdown", 4);
    common::assert_slot::<V>("ModuleLoadFinished", 14);
    common::assert_slot::<V>("JITCompilationStarted", 23);
    common::assert_slot::<V>("ThreadCreated", 29);
    common::assert_slot::<V>("ThreadDestroyed", 30);
    common::assert_slot::<V>("ObjectAllocated", 50);
    common::assert_slot::<V>("ExceptionThrown", 54);
    common::assert_slot::<V>("GarbageCollectionStarted", 73);
    common::assert_slot::<V>("GarbageCollectionFinished", 75);
    common::assert_slot::<V>("InitializeForAttach", 80);
    common::assert_slot::<V>("ProfilerAttachComplete", 81);
    common::assert_slot::<IMethodMallocVtbl>("Alloc", 3);

    // The runtime's ICorProfilerCallback9 vtable is 95 pointers long.
    assert_eq!(ICorProfilerCallback9Vtbl::all_slots().len(), 95);
    assert_eq!(
        size_of::<ICorProfilerCallback9Vtbl>(),
        95 * size_of::<usize>()
    );
}

/// Every vtable struct is exactly one pointer per slot: no padding, no stray fields.
#[test]
fn vtable_sizes_are_one_word_per_slot() {
    fn check<V: Vtable>() {
        assert_eq!(
            size_of::<V>(),
            V::all_slots().len() * size_of::<usize>(),
            "{}",
            V::INTERFACE
        );
    }
    check::<ICorProfilerCallbackVtbl>();
    check::<ICorProfilerCallback2Vtbl>();
    check::<ICorProfilerCallback3Vtbl>();
    check::<ICorProfilerCallback4Vtbl>();
    check::<ICorProfilerCallback5Vtbl>();
    check::<ICorProfilerCallback6Vtbl>();
    check::<ICorProfilerCallback7Vtbl>();
    check::<ICorProfilerCallback8Vtbl>();
    check::<ICorProfilerCallback9Vtbl>();
    check::<ICorProfilerCallback10Vtbl>();
    check::<ICorProfilerCallback11Vtbl>();
    check::<IClassFactoryVtbl>();
    check::<ICorProfilerFunctionControlVtbl>();
    check::<ICorProfilerAssemblyReferenceProviderVtbl>();
    check::<ICorProfilerObjectEnumVtbl>();
    check::<ICorProfilerFunctionEnumVtbl>();
    check::<ICorProfilerModuleEnumVtbl>();
    check::<ICorProfilerMethodEnumVtbl>();
    check::<ICorProfilerThreadEnumVtbl>();
    check::<IMethodMallocVtbl>();
    assert_eq!(ICorProfilerCallbackVtbl::all_slots().len(), 72);
    assert_eq!(ICorProfilerCallback11Vtbl::all_slots().len(), 98);
}

#[test]
fn every_iid_is_distinct() {
    let mut seen = HashSet::new();
    for (name, iid) in KNOWN_IIDS {
        assert!(seen.insert(*iid), "{name} repeats {iid}");
    }
    let names: HashSet<&str> = KNOWN_IIDS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), KNOWN_IIDS.len());
    // 2 COM + 11 callback + 15 info + 8 small interfaces.
    assert_eq!(KNOWN_IIDS.len(), 36);
}
