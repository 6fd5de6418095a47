//! Every event kind is the vtable slot of the callback that reports it: check that against the
//! ABI crate's declared (and separately pinned) ICorProfilerCallback11 vtable.

use clrprof_sys::{ICorProfilerCallback11Vtbl, Vtable};
use clrprof_trace::EventKind;

#[test]
fn every_event_kind_is_its_callback_slot() {
    let slots = ICorProfilerCallback11Vtbl::all_slots();
    let callbacks: Vec<_> = slots.iter().filter(|s| s.interface != "IUnknown").collect();
    assert_eq!(
        EventKind::all().len(),
        callbacks.len(),
        "one event kind per callback"
    );
    for slot in callbacks {
        let kind = EventKind::from_name(slot.method)
            .unwrap_or_else(|| panic!("no EventKind for callback {}", slot.method));
        assert_eq!(kind.0 as usize, slot.index, "{}", slot.method);
        assert_eq!(kind.name(), Some(slot.method));
    }
}
