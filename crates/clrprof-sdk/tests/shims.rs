//! Drives the callback shims the way the runtime does, without a runtime: get the class
//! factory, create the callback object, then call its vtable's function pointers with fake
//! arguments and check what the `Profiler` saw and what went back to the caller.

use core::ffi::c_void;
use core::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use clrprof_sdk::export::{Export, parse_guid};
use clrprof_sdk::sys::{self, BOOL, GUID, HRESULT, RawInterface};
use clrprof_sdk::*;

// ---------------------------------------------------------------------------------------------
// Calling into the exported COM objects
// ---------------------------------------------------------------------------------------------

const CLSID: GUID = parse_guid("{0B6F8E2C-5D1A-4E7B-9C3F-2A8D4B6E1F70}");

/// The vtable of the COM object `obj`, read as `V` (which must be a prefix of its real vtable).
///
/// # Safety
/// `obj` must be a live COM object whose vtable starts with the layout of `V`.
unsafe fn vtbl<V>(obj: *mut c_void) -> &'static V {
    // SAFETY: per the contract; our objects' vtables are statics.
    unsafe { &*(*obj.cast::<RawInterface<V>>()).vtbl }
}

/// `DllGetClassObject` + `CreateInstance(ICorProfilerCallback2)`, as the runtime does it.
fn create<P: Profiler>(export: &'static Export<P>) -> *mut c_void {
    let mut factory = ptr::null_mut();
    // SAFETY: valid GUIDs and out-pointer.
    let hr = unsafe { export.get_class_object(&CLSID, &sys::IID_IClassFactory, &mut factory) };
    assert_eq!(hr, sys::S_OK);
    assert!(!factory.is_null());
    // SAFETY: `factory` is the class factory we just got.
    let cf = unsafe { vtbl::<sys::IClassFactoryVtbl>(factory) };
    let mut object = ptr::null_mut();
    // SAFETY: valid arguments, no aggregation.
    let hr = unsafe {
        (cf.CreateInstance)(
            factory,
            ptr::null_mut(),
            &sys::IID_ICorProfilerCallback2,
            &mut object,
        )
    };
    assert_eq!(hr, sys::S_OK);
    assert!(!object.is_null());
    // SAFETY: the factory is live; we give back the reference QueryInterface gave us.
    unsafe { (cf.base__.Release)(factory) };
    object
}

/// The callback vtable up to ICorProfilerCallback (version 1).
fn v1(obj: *mut c_void) -> &'static sys::ICorProfilerCallbackVtbl {
    // SAFETY: `obj` is a callback object from `create`, whose vtable is Callback11's.
    unsafe { vtbl(obj) }
}

/// The callback vtable up to ICorProfilerCallback2.
fn v2(obj: *mut c_void) -> &'static sys::ICorProfilerCallback2Vtbl {
    // SAFETY: as above.
    unsafe { vtbl(obj) }
}

/// The callback vtable up to ICorProfilerCallback3.
fn v3(obj: *mut c_void) -> &'static sys::ICorProfilerCallback3Vtbl {
    // SAFETY: as above.
    unsafe { vtbl(obj) }
}

/// The callback vtable up to ICorProfilerCallback4.
fn v4(obj: *mut c_void) -> &'static sys::ICorProfilerCallback4Vtbl {
    // SAFETY: as above.
    unsafe { vtbl(obj) }
}

/// The full callback vtable.
fn v11(obj: *mut c_void) -> &'static sys::ICorProfilerCallback11Vtbl {
    // SAFETY: as above.
    unsafe { vtbl(obj) }
}

fn events(p: &Recorder) -> Vec<String> {
    std::mem::take(&mut *p.events.lock().unwrap())
}

// ---------------------------------------------------------------------------------------------
// A profiler that writes down what it was told
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    info_version: AtomicU32,
    info: OnceLock<ProfilerInfo>,
}

impl Recorder {
    fn log(&self, event: String) {
        self.events.lock().unwrap().push(event);
    }
}

const FORBIDDEN_CALLEE: FunctionId = FunctionId(0xBAD);
const FAILING_FUNCTION: FunctionId = FunctionId(0xE11);

impl Profiler for Recorder {
    fn initialize(&self, info: ProfilerInfo) -> Result<()> {
        self.info_version.store(info.version(), Ordering::Relaxed);
        let _ = self.info.set(info);
        Ok(())
    }

    fn jit_compilation_started(&self, function: FunctionId, is_safe_to_block: bool) -> Result<()> {
        self.log(format!("jit {function:?} {is_safe_to_block}"));
        Ok(())
    }

    fn jit_cached_function_search_started(&self, function: FunctionId) -> Result<bool> {
        if function == FAILING_FUNCTION {
            return Err(Error::Failed {
                method: "test",
                hr: HResult(sys::CORPROF_E_NOT_MANAGED_THREAD),
            });
        }
        Ok(false)
    }

    fn jit_inlining(&self, caller: FunctionId, callee: FunctionId) -> Result<bool> {
        self.log(format!("inline {caller:?} {callee:?}"));
        Ok(callee != FORBIDDEN_CALLEE)
    }

    fn runtime_suspend_started(&self, reason: SuspendReason) -> Result<()> {
        self.log(format!("suspend {reason:?}"));
        Ok(())
    }

    fn object_references(
        &self,
        object: ObjectId,
        class: ClassId,
        references: &[ObjectId],
    ) -> Result<()> {
        self.log(format!("refs {object:?} {class:?} {references:?}"));
        Ok(())
    }

    fn thread_name_changed(&self, thread: ThreadId, name: &str) -> Result<()> {
        self.log(format!("name {thread:?} {name:?}"));
        Ok(())
    }

    fn garbage_collection_started(&self, generations: Generations, reason: GcReason) -> Result<()> {
        self.log(format!("gc {generations:?} {reason:?}"));
        Ok(())
    }

    fn root_references2(
        &self,
        roots: &[ObjectId],
        kinds: &[GcRootKind],
        flags: &[GcRootFlags],
        root_ids: &[usize],
    ) -> Result<()> {
        self.log(format!("roots {roots:?} {kinds:?} {flags:?} {root_ids:?}"));
        Ok(())
    }

    fn initialize_for_attach(&self, info: ProfilerInfo, client_data: &[u8]) -> Result<()> {
        self.log(format!("attach v{} {client_data:?}", info.version()));
        Ok(())
    }

    fn get_rejit_parameters(
        &self,
        module: ModuleId,
        method: Token,
        control: &FunctionControl,
    ) -> Result<()> {
        control.set_codegen_flags(CodegenFlags::DISABLE_INLINING)?;
        control.set_il_function_body(&[0x02, 0x2A])?;
        let map = control.set_il_instrumented_code_map(&[IlMapEntry {
            old_offset: 0,
            new_offset: 4,
        }]);
        self.log(format!("rejit {module:?} {method:?} map={map:?}"));
        Ok(())
    }

    fn dynamic_method_jit_compilation_started(
        &self,
        function: FunctionId,
        _is_safe_to_block: bool,
        il_header: &[u8],
    ) -> Result<()> {
        self.log(format!("dynamic {function:?} {il_header:?}"));
        Ok(())
    }

    fn event_pipe_event_delivered(&self, event: &EventPipeEvent<'_>) -> Result<()> {
        self.log(format!(
            "eventpipe {} {:?} {:?} {:?} {:?}",
            event.event_id, event.data, event.activity_id, event.thread, event.stack
        ));
        Ok(())
    }

    fn load_as_notification_only(&self) -> Result<bool> {
        Ok(true)
    }
}

// ---------------------------------------------------------------------------------------------
// Interfaces and loading
// ---------------------------------------------------------------------------------------------

const CALLBACK_IIDS: [GUID; 11] = [
    sys::IID_ICorProfilerCallback,
    sys::IID_ICorProfilerCallback2,
    sys::IID_ICorProfilerCallback3,
    sys::IID_ICorProfilerCallback4,
    sys::IID_ICorProfilerCallback5,
    sys::IID_ICorProfilerCallback6,
    sys::IID_ICorProfilerCallback7,
    sys::IID_ICorProfilerCallback8,
    sys::IID_ICorProfilerCallback9,
    sys::IID_ICorProfilerCallback10,
    sys::IID_ICorProfilerCallback11,
];

#[test]
fn query_interface_answers_every_callback_version_with_one_pointer() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let unknown = &v1(obj).base__;
    for iid in CALLBACK_IIDS.iter().chain([&sys::IID_IUnknown]) {
        let mut out = ptr::null_mut();
        // SAFETY: valid arguments.
        let hr = unsafe { (unknown.QueryInterface)(obj, iid, &mut out) };
        assert_eq!(hr, sys::S_OK, "{iid}");
        assert_eq!(out, obj, "{iid}");
        // SAFETY: give back the reference just taken.
        unsafe { (unknown.Release)(obj) };
    }
    // Each version asked is written down (other tests only ask for 2, as CreateInstance).
    assert_eq!(
        clrprof_sdk::export::callback_versions_asked(),
        (1..=11).collect::<Vec<u32>>()
    );
    for iid in [
        sys::IID_IClassFactory,
        sys::IID_ICorProfilerInfo,
        sys::IID_ICorProfilerInfo3,
        GUID::from_u128(0x1234),
    ] {
        let mut out = obj; // must be nulled on failure
        // SAFETY: valid arguments.
        let hr = unsafe { (unknown.QueryInterface)(obj, &iid, &mut out) };
        assert_eq!(hr, sys::E_NOINTERFACE, "{iid}");
        assert!(out.is_null(), "{iid}");
    }
    // SAFETY: null out-pointer and null IID are refused, not dereferenced.
    unsafe {
        assert_eq!(
            (unknown.QueryInterface)(obj, &sys::IID_IUnknown, ptr::null_mut()),
            sys::E_POINTER
        );
        let mut out = obj;
        assert_eq!(
            (unknown.QueryInterface)(obj, ptr::null(), &mut out),
            sys::E_POINTER
        );
        assert!(out.is_null());
    }
}

#[test]
fn reference_counts_are_kept_and_never_free() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let unknown = &v1(obj).base__;
    // SAFETY: `obj` is live (and stays live whatever its count: it is never freed).
    unsafe {
        let after_add = (unknown.AddRef)(obj);
        assert_eq!((unknown.Release)(obj), after_add - 1);
        // Release past zero stays at zero and the object keeps working.
        for _ in 0..5 {
            (unknown.Release)(obj);
        }
        assert_eq!((unknown.Release)(obj), 0);
        assert_eq!((v1(obj).JITCompilationStarted)(obj, 7, 1), sys::S_OK);
    }
    assert_eq!(
        events(EXPORT.instance().unwrap()),
        ["jit FunctionId(0x7) true"]
    );
}

#[test]
fn class_factory_contract() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let other = GUID::from_u128(0xDEAD_BEEF);
    let mut out = ptr::null_mut();
    // SAFETY: valid or null arguments throughout.
    unsafe {
        let mut stale = ptr::dangling_mut::<c_void>();
        assert_eq!(
            EXPORT.get_class_object(&other, &sys::IID_IClassFactory, &mut stale),
            sys::CLASS_E_CLASSNOTAVAILABLE
        );
        assert!(stale.is_null());
        assert_eq!(
            EXPORT.get_class_object(ptr::null(), &sys::IID_IClassFactory, &mut out),
            sys::CLASS_E_CLASSNOTAVAILABLE
        );
        assert_eq!(
            EXPORT.get_class_object(&CLSID, &sys::IID_IClassFactory, ptr::null_mut()),
            sys::E_POINTER
        );
        assert_eq!(
            EXPORT.get_class_object(&CLSID, &sys::IID_ICorProfilerCallback2, &mut out),
            sys::E_NOINTERFACE
        );
        assert_eq!(
            EXPORT.get_class_object(&CLSID, &sys::IID_IUnknown, &mut out),
            sys::S_OK
        );
        let factory = out;
        let cf = vtbl::<sys::IClassFactoryVtbl>(factory);
        assert_eq!((cf.LockServer)(factory, 1), sys::S_OK);

        assert!(EXPORT.instance().is_none(), "created before CreateInstance");
        let mut obj = ptr::dangling_mut::<c_void>();
        let outer = factory; // any non-null IUnknown
        assert_eq!(
            (cf.CreateInstance)(factory, outer, &sys::IID_ICorProfilerCallback2, &mut obj),
            sys::CLASS_E_NOAGGREGATION
        );
        assert!(obj.is_null());
        assert_eq!(
            (cf.CreateInstance)(factory, ptr::null_mut(), &sys::IID_IClassFactory, &mut obj),
            sys::E_NOINTERFACE
        );
        assert!(obj.is_null());
        let mut first = ptr::null_mut();
        let mut second = ptr::null_mut();
        assert_eq!(
            (cf.CreateInstance)(
                factory,
                ptr::null_mut(),
                &sys::IID_ICorProfilerCallback2,
                &mut first
            ),
            sys::S_OK
        );
        assert_eq!(
            (cf.CreateInstance)(
                factory,
                ptr::null_mut(),
                &sys::IID_ICorProfilerCallback9,
                &mut second
            ),
            sys::S_OK
        );
        assert_eq!(first, second, "one profiler instance per library");
        assert!(EXPORT.instance().is_some());
    }
    assert_eq!(EXPORT.clsid(), &CLSID);
}

// ---------------------------------------------------------------------------------------------
// Argument conversion
// ---------------------------------------------------------------------------------------------

#[test]
fn arguments_are_converted_to_typed_values() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let p = EXPORT.instance().unwrap();
    let v = v11(obj);
    let cb2 = v2(obj);
    let cb1 = &cb2.base__;

    let refs = [0x10usize, 0x20];
    let name: Vec<u16> = "worker #1".encode_utf16().collect();
    let roots = [0x100usize, 0x200];
    let kinds = [sys::COR_PRF_GC_ROOT_STACK, 42];
    let flags = [sys::COR_PRF_GC_ROOT_PINNING, 0x1_0000];
    let ids = [1usize, 2];
    let il = [0x0Au8, 0x2A];
    let data = [9u8, 8, 7];
    let activity = GUID::from_u128(0xAB);
    let stack = [0x1000usize, 0x2000, 0x3000];
    // SAFETY: every pointer is valid for the count passed with it, or null.
    unsafe {
        assert_eq!((cb1.JITCompilationStarted)(obj, 0x42, 0), sys::S_OK);
        assert_eq!((cb1.RuntimeSuspendStarted)(obj, 1), sys::S_OK);
        assert_eq!((cb1.RuntimeSuspendStarted)(obj, 77), sys::S_OK);
        assert_eq!(
            (cb1.ObjectReferences)(obj, 1, 2, 2, refs.as_ptr()),
            sys::S_OK
        );
        // A null array with a non-zero count is an empty slice, not a read through null.
        assert_eq!((cb1.ObjectReferences)(obj, 1, 2, 5, ptr::null()), sys::S_OK);
        assert_eq!(
            (cb2.ThreadNameChanged)(obj, 3, name.len() as u32, name.as_ptr()),
            sys::S_OK
        );
        assert_eq!((cb2.ThreadNameChanged)(obj, 3, 4, ptr::null()), sys::S_OK);
        assert_eq!(
            (cb2.RootReferences2)(
                obj,
                2,
                roots.as_ptr(),
                kinds.as_ptr(),
                flags.as_ptr(),
                ids.as_ptr()
            ),
            sys::S_OK
        );
        let cb8 = &v.base__.base__.base__;
        assert_eq!(
            (cb8.DynamicMethodJITCompilationStarted)(obj, 5, 1, il.as_ptr(), 2),
            sys::S_OK
        );
        assert_eq!(
            (v.base__.EventPipeEventDelivered)(
                obj,
                0xE0,
                17,
                1,
                0,
                ptr::null(),
                3,
                data.as_ptr(),
                &activity,
                ptr::null(),
                0x77,
                3,
                stack.as_ptr()
            ),
            sys::S_OK
        );
    }
    assert_eq!(
        events(p),
        [
            "jit FunctionId(0x42) false",
            "suspend SuspendReason::FOR_GC",
            "suspend SuspendReason(77)",
            "refs ObjectId(0x1) ClassId(0x2) [ObjectId(0x10), ObjectId(0x20)]",
            "refs ObjectId(0x1) ClassId(0x2) []",
            "name ThreadId(0x3) \"worker #1\"",
            "name ThreadId(0x3) \"\"",
            "roots [ObjectId(0x100), ObjectId(0x200)] [GcRootKind::STACK, GcRootKind(42)] \
             [GcRootFlags(PINNING), GcRootFlags(0x10000)] [1, 2]",
            "dynamic FunctionId(0x5) [10, 42]",
            "eventpipe 17 [9, 8, 7] Some({00000000-0000-0000-0000-0000000000AB}) \
             ThreadId(0x77) [4096, 8192, 12288]",
        ]
    );
}

#[test]
fn gc_started_bool_array_becomes_generations() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let p = EXPORT.instance().unwrap();
    let gc_started = v2(obj).GarbageCollectionStarted;
    let gen01: [BOOL; 4] = [1, 1, 0, 0];
    let full: [BOOL; 4] = [1, 1, 1, 1];
    // SAFETY: arrays of the stated length, or null.
    unsafe {
        assert_eq!(gc_started(obj, 4, gen01.as_ptr(), 0), sys::S_OK);
        assert_eq!(
            gc_started(obj, 4, full.as_ptr(), sys::COR_PRF_GC_INDUCED),
            sys::S_OK
        );
        assert_eq!(gc_started(obj, 4, ptr::null(), 0), sys::S_OK);
        assert_eq!(gc_started(obj, -3, full.as_ptr(), 0), sys::S_OK);
    }
    assert_eq!(
        events(p),
        [
            "gc Generations[GcGeneration::GEN_0, GcGeneration::GEN_1] GcReason::OTHER",
            "gc Generations[GcGeneration::GEN_0, GcGeneration::GEN_1, GcGeneration::GEN_2, \
             GcGeneration::LARGE_OBJECT_HEAP] GcReason::INDUCED",
            "gc Generations[] GcReason::OTHER",
            "gc Generations[] GcReason::OTHER",
        ]
    );
}

/// The slots a real runtime was observed to call, reached by index rather than
/// by field name: proves the vtable the SDK builds has the runtime's layout.
#[test]
fn observed_slot_numbers_reach_the_right_methods() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let p = EXPORT.instance().unwrap();
    // SAFETY: the callback vtable has 98 slots; the indices below are within it and the
    // signatures are those of the methods at those slots.
    unsafe {
        let table = *obj.cast::<*const usize>();
        let slot = |i: usize| *table.add(i);
        let jit: unsafe extern "system" fn(*mut c_void, usize, BOOL) -> HRESULT =
            core::mem::transmute(slot(23));
        let gc: unsafe extern "system" fn(*mut c_void, i32, *const BOOL, u32) -> HRESULT =
            core::mem::transmute(slot(73));
        let load_notification: unsafe extern "system" fn(*mut c_void, *mut BOOL) -> HRESULT =
            core::mem::transmute(slot(97));
        assert_eq!(jit(obj, 0x99, 1), sys::S_OK);
        let gens = [0, 0, 1];
        assert_eq!(gc(obj, 3, gens.as_ptr(), 1), sys::S_OK);
        let mut answer: BOOL = 0;
        assert_eq!(load_notification(obj, &mut answer), sys::S_OK);
        assert_eq!(answer, sys::TRUE);
    }
    assert_eq!(
        events(p),
        [
            "jit FunctionId(0x99) true",
            "gc Generations[GcGeneration::GEN_2] GcReason::INDUCED",
        ]
    );
    assert_eq!(
        core::mem::size_of::<sys::ICorProfilerCallback11Vtbl>() / core::mem::size_of::<usize>(),
        98
    );
}

// ---------------------------------------------------------------------------------------------
// Out-parameters and errors
// ---------------------------------------------------------------------------------------------

#[test]
fn out_params_are_written_on_success_only() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let cb1 = v1(obj);
    // SAFETY: valid out-pointers, or null.
    unsafe {
        let mut inline: BOOL = 7;
        assert_eq!((cb1.JITInlining)(obj, 1, 2, &mut inline), sys::S_OK);
        assert_eq!(inline, sys::TRUE);
        assert_eq!(
            (cb1.JITInlining)(obj, 1, FORBIDDEN_CALLEE.0, &mut inline),
            sys::S_OK
        );
        assert_eq!(inline, sys::FALSE);
        // A null out-pointer is skipped.
        assert_eq!((cb1.JITInlining)(obj, 1, 2, ptr::null_mut()), sys::S_OK);

        let mut use_cached: BOOL = 7;
        assert_eq!(
            (cb1.JITCachedFunctionSearchStarted)(obj, 1, &mut use_cached),
            sys::S_OK
        );
        assert_eq!(use_cached, sys::FALSE);
        // An error returns its HRESULT and leaves the out-param alone.
        let mut untouched: BOOL = 7;
        assert_eq!(
            (cb1.JITCachedFunctionSearchStarted)(obj, FAILING_FUNCTION.0, &mut untouched),
            sys::CORPROF_E_NOT_MANAGED_THREAD
        );
        assert_eq!(untouched, 7);

        let mut notification_only: BOOL = 0;
        assert_eq!(
            (v11(obj).LoadAsNotificationOnly)(obj, &mut notification_only),
            sys::S_OK
        );
        assert_eq!(notification_only, sys::TRUE);
    }
}

#[test]
fn default_methods_succeed_and_answer_the_neutral_value() {
    #[derive(Default)]
    struct Quiet;
    impl Profiler for Quiet {}
    static EXPORT: Export<Quiet> = Export::new(CLSID, Quiet::default);
    let obj = create(&EXPORT);
    let cb1 = v1(obj);
    // SAFETY: valid out-pointers.
    unsafe {
        let (mut inline, mut cached, mut notify) = (7, 7, 7);
        assert_eq!((cb1.Shutdown)(obj), sys::S_OK);
        assert_eq!((cb1.JITInlining)(obj, 1, 2, &mut inline), sys::S_OK);
        assert_eq!(
            (cb1.JITCachedFunctionSearchStarted)(obj, 1, &mut cached),
            sys::S_OK
        );
        assert_eq!(
            (v11(obj).LoadAsNotificationOnly)(obj, &mut notify),
            sys::S_OK
        );
        assert_eq!((inline, cached, notify), (sys::TRUE, sys::TRUE, sys::FALSE));
    }
}

#[test]
fn null_this_is_refused() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    // SAFETY: a null `this` is checked before anything is read.
    unsafe {
        assert_eq!(
            (v1(obj).JITCompilationStarted)(ptr::null_mut(), 1, 1),
            sys::E_POINTER
        );
    }
    assert!(events(EXPORT.instance().unwrap()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Panics
// ---------------------------------------------------------------------------------------------

struct Panicky;

impl Default for Panicky {
    fn default() -> Self {
        if PANIC_IN_DEFAULT.load(Ordering::Relaxed) {
            panic!("cannot construct");
        }
        Panicky
    }
}

static PANIC_IN_DEFAULT: AtomicBool = AtomicBool::new(false);

impl Profiler for Panicky {
    fn jit_compilation_started(&self, _: FunctionId, _: bool) -> Result<()> {
        panic!("bug in a callback");
    }
    fn jit_inlining(&self, _: FunctionId, _: FunctionId) -> Result<bool> {
        let v: Vec<u8> = Vec::new();
        let _ = v[3]; // index out of bounds
        Ok(false)
    }
}

/// The only test in this binary that panics inside a shim, so the counter's delta is exact.
#[test]
fn panics_become_e_fail_and_are_counted() {
    static EXPORT: Export<Panicky> = Export::new(CLSID, Panicky::default);
    static BROKEN: Export<Panicky> = Export::new(CLSID, Panicky::default);
    let before = panics_caught();
    let obj = create(&EXPORT);
    let cb1 = v1(obj);
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!((cb1.JITCompilationStarted)(obj, 1, 1), sys::E_FAIL);
        let mut inline: BOOL = 7;
        assert_eq!((cb1.JITInlining)(obj, 1, 2, &mut inline), sys::E_FAIL);
        assert_eq!(inline, 7, "out-param written after a panic");
        // The object still works after a panic.
        assert_eq!((cb1.Shutdown)(obj), sys::S_OK);
    }
    assert_eq!(panics_caught(), before + 2);

    // A panic while constructing the profiler fails CreateInstance instead of aborting.
    PANIC_IN_DEFAULT.store(true, Ordering::Relaxed);
    let mut factory = ptr::null_mut();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            BROKEN.get_class_object(&CLSID, &sys::IID_IClassFactory, &mut factory),
            sys::S_OK
        );
        let cf = vtbl::<sys::IClassFactoryVtbl>(factory);
        let mut out = ptr::null_mut();
        assert_eq!(
            (cf.CreateInstance)(
                factory,
                ptr::null_mut(),
                &sys::IID_ICorProfilerCallback2,
                &mut out
            ),
            sys::E_FAIL
        );
        assert!(out.is_null());
    }
    PANIC_IN_DEFAULT.store(false, Ordering::Relaxed);
    assert_eq!(panics_caught(), before + 3);
    assert!(BROKEN.instance().is_none());
}

// ---------------------------------------------------------------------------------------------
// Initialize with a fake ICorProfilerInfo
// ---------------------------------------------------------------------------------------------

/// A COM object that answers QueryInterface for exactly one IID.
#[repr(C)]
struct FakeUnknown {
    vtbl: &'static sys::IUnknownVtbl,
    answers: GUID,
    refs: AtomicU32,
}

impl FakeUnknown {
    const VTBL: sys::IUnknownVtbl = sys::IUnknownVtbl {
        QueryInterface: Self::query_interface,
        AddRef: Self::add_ref,
        Release: Self::release,
    };

    fn new(answers: GUID) -> Box<FakeUnknown> {
        Box::new(FakeUnknown {
            vtbl: &Self::VTBL,
            answers,
            refs: AtomicU32::new(1),
        })
    }

    fn as_raw(&self) -> *mut c_void {
        ptr::from_ref(self).cast_mut().cast()
    }

    unsafe extern "system" fn query_interface(
        this: *mut c_void,
        riid: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT {
        // SAFETY: the SDK calls with our own object, a valid IID and a writable out-pointer.
        unsafe {
            let me = &*this.cast::<FakeUnknown>();
            if *riid == me.answers {
                me.refs.fetch_add(1, Ordering::Relaxed);
                *ppv = this;
                sys::S_OK
            } else {
                *ppv = ptr::null_mut();
                sys::E_NOINTERFACE
            }
        }
    }

    unsafe extern "system" fn add_ref(this: *mut c_void) -> u32 {
        // SAFETY: called on our own live object.
        unsafe {
            (*this.cast::<FakeUnknown>())
                .refs
                .fetch_add(1, Ordering::Relaxed)
                + 1
        }
    }

    unsafe extern "system" fn release(this: *mut c_void) -> u32 {
        // SAFETY: called on our own live object (the test keeps the Box alive).
        unsafe {
            (*this.cast::<FakeUnknown>())
                .refs
                .fetch_sub(1, Ordering::Relaxed)
                - 1
        }
    }
}

#[test]
fn initialize_hands_over_the_highest_info_version() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let p = EXPORT.instance().unwrap();
    let info = FakeUnknown::new(sys::IID_ICorProfilerInfo3);
    // SAFETY: `info` is a live COM object.
    let hr = unsafe { (v1(obj).Initialize)(obj, info.as_raw()) };
    assert_eq!(hr, sys::S_OK);
    assert_eq!(p.info_version.load(Ordering::Relaxed), 3);
    // The profiler kept the ProfilerInfo, which holds one reference.
    assert_eq!(info.refs.load(Ordering::Relaxed), 2);
    // Leaked: the profiler (a static) still points at it.
    Box::leak(info);
}

#[test]
fn initialize_fails_when_no_info_interface_is_found() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let p = EXPORT.instance().unwrap();
    let info = FakeUnknown::new(GUID::from_u128(1));
    // SAFETY: `info` is a live COM object; null is refused.
    unsafe {
        assert_eq!((v1(obj).Initialize)(obj, info.as_raw()), sys::E_NOINTERFACE);
        assert_eq!((v1(obj).Initialize)(obj, ptr::null_mut()), sys::E_POINTER);
    }
    assert_eq!(
        p.info_version.load(Ordering::Relaxed),
        0,
        "initialize was called"
    );
    assert_eq!(info.refs.load(Ordering::Relaxed), 1, "reference leaked");
}

#[test]
fn initialize_for_attach_gets_client_data() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let info = FakeUnknown::new(sys::IID_ICorProfilerInfo11);
    let mut data = *b"hello";
    let cb3 = v3(obj);
    // SAFETY: live object; `data` holds 5 bytes.
    unsafe {
        assert_eq!(
            (cb3.InitializeForAttach)(obj, info.as_raw(), data.as_mut_ptr().cast(), 5),
            sys::S_OK
        );
        assert_eq!(
            (cb3.InitializeForAttach)(obj, info.as_raw(), ptr::null_mut(), 9),
            sys::S_OK
        );
    }
    assert_eq!(
        events(EXPORT.instance().unwrap()),
        ["attach v11 [104, 101, 108, 108, 111]", "attach v11 []"]
    );
    assert_eq!(info.refs.load(Ordering::Relaxed), 1);
}

// ---------------------------------------------------------------------------------------------
// GetReJITParameters with a fake ICorProfilerFunctionControl
// ---------------------------------------------------------------------------------------------

#[repr(C)]
struct FakeControl {
    vtbl: &'static sys::ICorProfilerFunctionControlVtbl,
    refs: AtomicU32,
    flags: AtomicU32,
    body: Mutex<Vec<u8>>,
}

impl FakeControl {
    const VTBL: sys::ICorProfilerFunctionControlVtbl = sys::ICorProfilerFunctionControlVtbl {
        base__: sys::IUnknownVtbl {
            QueryInterface: Self::query_interface,
            AddRef: Self::add_ref,
            Release: Self::release,
        },
        SetCodegenFlags: Self::set_codegen_flags,
        SetILFunctionBody: Self::set_il_function_body,
        SetILInstrumentedCodeMap: Self::set_il_instrumented_code_map,
    };

    /// # Safety
    /// `this` must be a live `FakeControl`.
    unsafe fn me<'a>(this: *mut c_void) -> &'a FakeControl {
        // SAFETY: per the contract.
        unsafe { &*this.cast::<FakeControl>() }
    }

    unsafe extern "system" fn query_interface(
        _: *mut c_void,
        _: *const GUID,
        ppv: *mut *mut c_void,
    ) -> HRESULT {
        // SAFETY: writable out-pointer.
        unsafe { *ppv = ptr::null_mut() };
        sys::E_NOINTERFACE
    }

    unsafe extern "system" fn add_ref(this: *mut c_void) -> u32 {
        // SAFETY: our own live object.
        unsafe { Self::me(this) }
            .refs
            .fetch_add(1, Ordering::Relaxed)
            + 1
    }

    unsafe extern "system" fn release(this: *mut c_void) -> u32 {
        // SAFETY: our own live object.
        unsafe { Self::me(this) }
            .refs
            .fetch_sub(1, Ordering::Relaxed)
            - 1
    }

    unsafe extern "system" fn set_codegen_flags(this: *mut c_void, flags: u32) -> HRESULT {
        // SAFETY: our own live object.
        unsafe { Self::me(this) }
            .flags
            .store(flags, Ordering::Relaxed);
        sys::S_OK
    }

    unsafe extern "system" fn set_il_function_body(
        this: *mut c_void,
        len: u32,
        body: *const u8,
    ) -> HRESULT {
        // SAFETY: our own live object; the SDK passes `len` readable bytes.
        unsafe {
            *Self::me(this).body.lock().unwrap() =
                core::slice::from_raw_parts(body, len as usize).to_vec();
        }
        sys::S_OK
    }

    unsafe extern "system" fn set_il_instrumented_code_map(
        _: *mut c_void,
        _: u32,
        _: *const sys::COR_IL_MAP,
    ) -> HRESULT {
        sys::E_NOTIMPL
    }
}

#[test]
fn rejit_parameters_go_through_function_control() {
    static EXPORT: Export<Recorder> = Export::new(CLSID, Recorder::default);
    let obj = create(&EXPORT);
    let control = FakeControl {
        vtbl: &FakeControl::VTBL,
        refs: AtomicU32::new(1),
        flags: AtomicU32::new(0),
        body: Mutex::new(Vec::new()),
    };
    let raw = ptr::from_ref(&control).cast_mut().cast::<c_void>();
    let cb4 = v4(obj);
    // SAFETY: `control` is a live COM object; null is refused.
    unsafe {
        assert_eq!(
            (cb4.GetReJITParameters)(obj, 0x50, 0x0600_0001, raw),
            sys::S_OK
        );
        assert_eq!(
            (cb4.GetReJITParameters)(obj, 0x50, 0x0600_0001, ptr::null_mut()),
            sys::E_POINTER
        );
    }
    assert_eq!(
        control.flags.load(Ordering::Relaxed),
        sys::COR_PRF_CODEGEN_DISABLE_INLINING
    );
    assert_eq!(*control.body.lock().unwrap(), [0x02, 0x2A]);
    assert_eq!(control.refs.load(Ordering::Relaxed), 1, "reference leaked");
    let events = events(EXPORT.instance().unwrap());
    assert_eq!(events.len(), 1);
    assert!(
        events[0].starts_with("rejit ModuleId(0x50) Token(0x06000001) map=Err(")
            && events[0].contains("E_NOTIMPL"),
        "{events:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Counter {
    jit: AtomicU64,
    per_thread: Mutex<std::collections::HashMap<u64, u64>>,
}

impl Profiler for Counter {
    fn jit_compilation_started(&self, function: FunctionId, _: bool) -> Result<()> {
        self.jit.fetch_add(1, Ordering::Relaxed);
        *self
            .per_thread
            .lock()
            .unwrap()
            .entry(function.as_u64())
            .or_default() += 1;
        Ok(())
    }
}

#[test]
fn callbacks_from_many_threads_reach_one_sync_instance() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Counter>();
    assert_send_sync::<Recorder>();

    static EXPORT: Export<Counter> = Export::new(CLSID, Counter::default);
    let obj = create(&EXPORT) as usize;
    std::thread::scope(|s| {
        for t in 0..8usize {
            s.spawn(move || {
                let obj = obj as *mut c_void;
                for _ in 0..1000 {
                    // SAFETY: the object is live for the whole process.
                    let hr = unsafe { (v1(obj).JITCompilationStarted)(obj, t, 1) };
                    assert_eq!(hr, sys::S_OK);
                }
            });
        }
    });
    let p = EXPORT.instance().unwrap();
    assert_eq!(p.jit.load(Ordering::Relaxed), 8000);
    let per_thread = p.per_thread.lock().unwrap();
    assert_eq!(per_thread.len(), 8);
    assert!(per_thread.values().all(|&n| n == 1000));
}
