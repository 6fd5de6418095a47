//! `export_profiler!` as a profiler library uses it: the exported `DllGetClassObject` and
//! `DllCanUnloadNow`, and `instance::<P>()`.

use core::ffi::c_void;
use core::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_sdk::sys::{self, GUID, RawInterface};
use clrprof_sdk::{FunctionId, Profiler, Result};

#[derive(Default)]
struct Exported {
    jit: AtomicU64,
}

impl Profiler for Exported {
    fn jit_compilation_started(&self, _: FunctionId, _: bool) -> Result<()> {
        self.jit.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

const CLSID_TEXT: &str = "{5F1C2B7E-8A3D-4C6B-B0E9-7D2A1F4C8E63}";

clrprof_sdk::export_profiler!(Exported, CLSID_TEXT);

// The macro's functions are reached by symbol name, as the runtime's loader does.
unsafe extern "system" {
    fn DllGetClassObject(
        rclsid: *const GUID,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> sys::HRESULT;
    safe fn DllCanUnloadNow() -> sys::HRESULT;
}

/// A free function (like an enter/leave hook) reaching the instance.
fn hook() -> u64 {
    clrprof_sdk::instance::<Exported>().map_or(u64::MAX, |p| p.jit.load(Ordering::Relaxed))
}

#[test]
fn exported_entry_points_load_the_profiler() {
    let clsid = clrprof_sdk::export::parse_guid(CLSID_TEXT);
    assert_eq!(
        clsid,
        GUID::from_u128(0x5F1C2B7E_8A3D_4C6B_B0E9_7D2A1F4C8E63)
    );
    assert_eq!(DllCanUnloadNow(), sys::S_FALSE);
    assert_eq!(hook(), u64::MAX, "instance exists before CreateInstance");

    let mut factory = ptr::null_mut();
    // SAFETY: valid GUIDs and out-pointers, as the runtime passes them.
    unsafe {
        let wrong = GUID::from_u128(7);
        assert_eq!(
            DllGetClassObject(&wrong, &sys::IID_IClassFactory, &mut factory),
            sys::CLASS_E_CLASSNOTAVAILABLE
        );
        assert!(factory.is_null());
        assert_eq!(
            DllGetClassObject(&clsid, &sys::IID_IClassFactory, &mut factory),
            sys::S_OK
        );
        let cf = &*(*factory.cast::<RawInterface<sys::IClassFactoryVtbl>>()).vtbl;
        let mut object: *mut c_void = ptr::null_mut();
        assert_eq!(
            (cf.CreateInstance)(
                factory,
                ptr::null_mut(),
                &sys::IID_ICorProfilerCallback2,
                &mut object
            ),
            sys::S_OK
        );
        let cb = &*(*object.cast::<RawInterface<sys::ICorProfilerCallbackVtbl>>()).vtbl;
        assert_eq!((cb.JITCompilationStarted)(object, 1, 1), sys::S_OK);
        assert_eq!((cb.JITCompilationStarted)(object, 2, 1), sys::S_OK);
    }
    assert_eq!(hook(), 2);
}
