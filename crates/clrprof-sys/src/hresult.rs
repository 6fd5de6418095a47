//! HRESULT values the profiling and metadata APIs return: the generic COM ones from
//! `winerror.h` and the runtime's own from `corerror.h` (generated from `corerror.xml`), with
//! [`hresult_name`] to name any of them in a log or error message.
//!
//! Runtime HRESULTs are written as in `corerror.h`, through [`EMAKEHR`] / [`SMAKEHR`]
//! (facility `FACILITY_URT` = 0x13), so `CORPROF_E_INCONSISTENT_WITH_FLAGS` is
//! `EMAKEHR(0x1374)` = `0x80131374`.

use crate::types::HRESULT;

/// `SEVERITY_SUCCESS`: the severity bit of a success code.
pub const SEVERITY_SUCCESS: u32 = 0;
/// `SEVERITY_ERROR`: the severity bit of a failure code.
pub const SEVERITY_ERROR: u32 = 1;
/// `FACILITY_WIN32`: HRESULTs wrapping a Win32 error code.
pub const FACILITY_WIN32: u32 = 7;
/// `FACILITY_URT`: the .NET runtime's facility.
pub const FACILITY_URT: u32 = 0x13;

/// `MAKE_HRESULT(sev, fac, code)`.
pub const fn MAKE_HRESULT(sev: u32, fac: u32, code: u32) -> HRESULT {
    ((sev << 31) | (fac << 16) | code) as HRESULT
}

/// `SMAKEHR(val)`: a runtime (`FACILITY_URT`) success code.
pub const fn SMAKEHR(val: u32) -> HRESULT {
    MAKE_HRESULT(SEVERITY_SUCCESS, FACILITY_URT, val)
}

/// `EMAKEHR(val)`: a runtime (`FACILITY_URT`) failure code.
pub const fn EMAKEHR(val: u32) -> HRESULT {
    MAKE_HRESULT(SEVERITY_ERROR, FACILITY_URT, val)
}

/// `HRESULT_FROM_WIN32(x)`: wraps a Win32 error code (0 stays `S_OK`).
pub const fn HRESULT_FROM_WIN32(x: u32) -> HRESULT {
    if x as HRESULT <= 0 {
        x as HRESULT
    } else {
        MAKE_HRESULT(SEVERITY_ERROR, FACILITY_WIN32, x & 0xffff)
    }
}

/// `SUCCEEDED(hr)`: true for `S_OK`, `S_FALSE` and every other non-negative code.
pub const fn SUCCEEDED(hr: HRESULT) -> bool {
    hr >= 0
}

/// `FAILED(hr)`: true for every negative (severity-error) code.
pub const fn FAILED(hr: HRESULT) -> bool {
    hr < 0
}

/// Declares each HRESULT constant and records it in the table [`hresult_name`] searches.
macro_rules! hresults {
    ($( $(#[$attr:meta])* $name:ident = $value:expr; )*) => {
        $(
            $(#[$attr])*
            pub const $name: HRESULT = $value;
        )*

        /// Every HRESULT declared in this module, with its name.
        const NAMED: &[(HRESULT, &str)] = &[$(($name, stringify!($name)),)*];
    };
}

hresults! {
    // ----- Generic COM codes (winerror.h) -----
    S_OK = 0;
    /// Success, but "no" / nothing to return (e.g. `GetModuleMetaData` on a resource module).
    S_FALSE = 1;
    E_NOTIMPL = 0x80004001_u32 as HRESULT;
    E_NOINTERFACE = 0x80004002_u32 as HRESULT;
    E_POINTER = 0x80004003_u32 as HRESULT;
    E_ABORT = 0x80004004_u32 as HRESULT;
    E_FAIL = 0x80004005_u32 as HRESULT;
    E_UNEXPECTED = 0x8000FFFF_u32 as HRESULT;
    /// `CLASS_E_NOAGGREGATION`: `IClassFactory::CreateInstance` with a non-null outer object.
    CLASS_E_NOAGGREGATION = 0x80040110_u32 as HRESULT;
    /// `CLASS_E_CLASSNOTAVAILABLE`: `DllGetClassObject` asked for a CLSID this library lacks.
    CLASS_E_CLASSNOTAVAILABLE = 0x80040111_u32 as HRESULT;
    E_ACCESSDENIED = HRESULT_FROM_WIN32(5);
    E_HANDLE = HRESULT_FROM_WIN32(6);
    E_OUTOFMEMORY = 0x8007000E_u32 as HRESULT;
    E_INVALIDARG = HRESULT_FROM_WIN32(87);
    /// `HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER)`.
    E_NOT_SUFFICIENT_BUFFER = HRESULT_FROM_WIN32(122);

    // ----- Metadata (CLDB_*, META_*) -----
    /// A name or value was truncated to the caller's buffer (success code).
    CLDB_S_TRUNCATION = SMAKEHR(0x1106);
    META_S_DUPLICATE = SMAKEHR(0x1197);
    CLDB_E_FILE_BADREAD = EMAKEHR(0x1100);
    CLDB_E_FILE_BADWRITE = EMAKEHR(0x1101);
    CLDB_E_FILE_OLDVER = EMAKEHR(0x1107);
    CLDB_E_SMDUPLICATE = EMAKEHR(0x110a);
    CLDB_E_NO_DATA = EMAKEHR(0x110b);
    CLDB_E_INCOMPATIBLE = EMAKEHR(0x110d);
    CLDB_E_FILE_CORRUPT = EMAKEHR(0x110e);
    CLDB_E_BADUPDATEMODE = EMAKEHR(0x1110);
    CLDB_E_INDEX_NOTFOUND = EMAKEHR(0x1124);
    /// The record (e.g. a type or method looked up by name) was not found.
    CLDB_E_RECORD_NOTFOUND = EMAKEHR(0x1130);
    CLDB_E_RECORD_OUTOFORDER = EMAKEHR(0x1135);
    CLDB_E_TOO_BIG = EMAKEHR(0x1154);
    CLDB_E_INTERNALERROR = EMAKEHR(0x1fff);
    META_E_INVALID_TOKEN_TYPE = EMAKEHR(0x115f);
    META_E_BADMETADATA = EMAKEHR(0x118a);
    META_E_BAD_SIGNATURE = EMAKEHR(0x1192);
    META_E_BAD_INPUT_PARAMETER = EMAKEHR(0x1193);
    META_E_CANNOTRESOLVETYPEREF = EMAKEHR(0x1196);
    META_E_STRINGSPACE_FULL = EMAKEHR(0x1198);
    META_E_HAS_UNMARKALL = EMAKEHR(0x119a);
    META_E_MUST_CALL_UNMARKALL = EMAKEHR(0x119b);
    META_E_NOT_IN_ENC_MODE = EMAKEHR(0x11d4);

    // ----- Profiling API (CORPROF_E_*), as in the current runtime's corerror.h -----
    CORPROF_E_FUNCTION_NOT_COMPILED = EMAKEHR(0x1350);
    /// The ID is not fully loaded/defined yet.
    CORPROF_E_DATAINCOMPLETE = EMAKEHR(0x1351);
    /// The method has no IL (abstract, P/Invoke, runtime-implemented).
    CORPROF_E_FUNCTION_NOT_IL = EMAKEHR(0x1354);
    /// The calling thread has never run managed code.
    CORPROF_E_NOT_MANAGED_THREAD = EMAKEHR(0x1355);
    /// The function may only be called during the profiler's `Initialize`.
    CORPROF_E_CALL_ONLY_FROM_INIT = EMAKEHR(0x1356);
    CORPROF_E_NOT_YET_AVAILABLE = EMAKEHR(0x135b);
    CORPROF_E_TYPE_IS_PARAMETERIZED = EMAKEHR(0x135c);
    CORPROF_E_FUNCTION_IS_PARAMETERIZED = EMAKEHR(0x135d);
    CORPROF_E_STACKSNAPSHOT_INVALID_TGT_THREAD = EMAKEHR(0x135e);
    CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX = EMAKEHR(0x135f);
    CORPROF_E_STACKSNAPSHOT_UNSAFE = EMAKEHR(0x1360);
    CORPROF_E_STACKSNAPSHOT_ABORTED = EMAKEHR(0x1361);
    CORPROF_E_LITERALS_HAVE_NO_ADDRESS = EMAKEHR(0x1362);
    CORPROF_E_UNSUPPORTED_CALL_SEQUENCE = EMAKEHR(0x1363);
    CORPROF_E_ASYNCHRONOUS_UNSAFE = EMAKEHR(0x1364);
    CORPROF_E_CLASSID_IS_ARRAY = EMAKEHR(0x1365);
    CORPROF_E_CLASSID_IS_COMPOSITE = EMAKEHR(0x1366);
    CORPROF_E_PROFILER_DETACHING = EMAKEHR(0x1367);
    CORPROF_E_PROFILER_NOT_ATTACHABLE = EMAKEHR(0x1368);
    CORPROF_E_UNRECOGNIZED_PIPE_MSG_FORMAT = EMAKEHR(0x1369);
    /// An attach request was refused because a profiler is already loaded.
    CORPROF_E_PROFILER_ALREADY_ACTIVE = EMAKEHR(0x136a);
    CORPROF_E_PROFILEE_INCOMPATIBLE_WITH_TRIGGER = EMAKEHR(0x136b);
    CORPROF_E_IPC_FAILED = EMAKEHR(0x136c);
    CORPROF_E_PROFILEE_PROCESS_NOT_FOUND = EMAKEHR(0x136d);
    CORPROF_E_CALLBACK3_REQUIRED = EMAKEHR(0x136e);
    /// Not allowed for a profiler that attached after startup (e.g. ELT or allocation events).
    CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER = EMAKEHR(0x136f);
    CORPROF_E_IRREVERSIBLE_INSTRUMENTATION_PRESENT = EMAKEHR(0x1370);
    CORPROF_E_RUNTIME_UNINITIALIZED = EMAKEHR(0x1371);
    CORPROF_E_IMMUTABLE_FLAGS_SET = EMAKEHR(0x1372);
    CORPROF_E_PROFILER_NOT_YET_INITIALIZED = EMAKEHR(0x1373);
    /// The call needs (or conflicts with) flags in the current event mask.
    CORPROF_E_INCONSISTENT_WITH_FLAGS = EMAKEHR(0x1374);
    CORPROF_E_PROFILER_CANCEL_ACTIVATION = EMAKEHR(0x1375);
    CORPROF_E_CONCURRENT_GC_NOT_PROFILABLE = EMAKEHR(0x1376);
    CORPROF_E_DEBUGGING_DISABLED = EMAKEHR(0x1378);
    CORPROF_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC = EMAKEHR(0x1379);
    CORPROF_E_MODULE_IS_DYNAMIC = EMAKEHR(0x137a);
    CORPROF_E_CALLBACK4_REQUIRED = EMAKEHR(0x137b);
    /// ReJIT needs `COR_PRF_ENABLE_REJIT` set during initialization.
    CORPROF_E_REJIT_NOT_ENABLED = EMAKEHR(0x137c);
    CORPROF_E_FUNCTION_IS_COLLECTIBLE = EMAKEHR(0x137e);
    CORPROF_E_CALLBACK6_REQUIRED = EMAKEHR(0x1380);
    CORPROF_E_CALLBACK7_REQUIRED = EMAKEHR(0x1382);
    CORPROF_E_REJIT_INLINING_DISABLED = EMAKEHR(0x1383);
    CORPROF_E_SUSPENSION_IN_PROGRESS = EMAKEHR(0x1388);
    /// The object lives on a non-GC (frozen) heap.
    CORPROF_E_NOT_GC_OBJECT = EMAKEHR(0x1389);
    /// The module has Edit-and-Continue enabled (ReJIT refused).
    CORPROF_E_MODULE_IS_ENC = EMAKEHR(0x138a);

    // ----- CORPROF_E_* no longer in the runtime's public header -----
    /// Runtime-internal: reserved in corerror.xml, defined privately by the runtime's ReJIT code.
    CORPROF_E_RUNTIME_SUSPEND_REQUIRED = EMAKEHR(0x1381);
    /// .NET Framework 2.0 headers only.
    CORPROF_E_NOT_REJITABLE_METHODS = EMAKEHR(0x1352);
    /// .NET Framework 2.0 headers only.
    CORPROF_E_CANNOT_UPDATE_METHOD = EMAKEHR(0x1353);
    /// .NET Framework 2.0 headers only (in-process debugging).
    CORPROF_E_INPROC_NOT_ENABLED = EMAKEHR(0x1357);
    /// .NET Framework 2.0 headers only.
    CORPROF_E_JITMAPS_NOT_ENABLED = EMAKEHR(0x1358);
    /// .NET Framework 2.0 headers only (in-process debugging).
    CORPROF_E_INPROC_ALREADY_BEGUN = EMAKEHR(0x1359);
    /// .NET Framework 2.0 headers only (in-process debugging).
    CORPROF_E_INPROC_NOT_AVAILABLE = EMAKEHR(0x135a);
    /// .NET Framework 4 only: the event mask conflicts with a host's protection settings.
    CORPROF_E_INCONSISTENT_FLAGS_WITH_HOST_PROTECTION_SETTING = EMAKEHR(0x1377);

    // ----- Diagnostics IPC (error replies of the diagnostics socket) -----
    CORDIAGIPC_E_BAD_ENCODING = EMAKEHR(0x1384);
    CORDIAGIPC_E_UNKNOWN_COMMAND = EMAKEHR(0x1385);
    CORDIAGIPC_E_UNKNOWN_MAGIC = EMAKEHR(0x1386);
    CORDIAGIPC_E_UNKNOWN_ERROR = EMAKEHR(0x1387);
}

/// The symbolic name of `hr` if it is one of the HRESULTs declared in this module, e.g.
/// `hresult_name(0x80131374_u32 as i32) == Some("CORPROF_E_INCONSISTENT_WITH_FLAGS")`.
pub fn hresult_name(hr: HRESULT) -> Option<&'static str> {
    NAMED
        .iter()
        .find(|(value, _)| *value == hr)
        .map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_from_the_headers() {
        assert_eq!(S_OK, 0);
        assert_eq!(S_FALSE, 1);
        assert_eq!(E_FAIL as u32, 0x80004005);
        assert_eq!(E_NOTIMPL as u32, 0x80004001);
        assert_eq!(E_INVALIDARG as u32, 0x80070057);
        assert_eq!(E_ACCESSDENIED as u32, 0x80070005);
        assert_eq!(E_NOT_SUFFICIENT_BUFFER as u32, 0x8007007A);
        assert_eq!(CLDB_S_TRUNCATION, 0x00131106);
        assert_eq!(CLDB_E_RECORD_NOTFOUND as u32, 0x80131130);
        assert_eq!(CORPROF_E_FUNCTION_NOT_IL as u32, 0x80131354);
        assert_eq!(CORPROF_E_MODULE_IS_ENC as u32, 0x8013138A);
    }

    #[test]
    fn values_observed_on_a_real_runtime() {
        // Mixing ELT flags wrongly.
        assert_eq!(CORPROF_E_INCONSISTENT_WITH_FLAGS, 0x80131374_u32 as i32);
        // Second attach.
        assert_eq!(CORPROF_E_PROFILER_ALREADY_ACTIVE, 0x8013136A_u32 as i32);
        // ENTERLEAVE / OBJECT_ALLOCATED after attach.
        assert_eq!(
            CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER,
            0x8013136F_u32 as i32
        );
        // Cross-thread DoStackSnapshot without suspension on Linux.
        assert_eq!(E_NOTIMPL, 0x80004001_u32 as i32);
    }

    #[test]
    fn names() {
        assert_eq!(
            hresult_name(0x80131374_u32 as i32),
            Some("CORPROF_E_INCONSISTENT_WITH_FLAGS")
        );
        assert_eq!(
            hresult_name(0x8013136A_u32 as i32),
            Some("CORPROF_E_PROFILER_ALREADY_ACTIVE")
        );
        assert_eq!(
            hresult_name(0x8013136F_u32 as i32),
            Some("CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER")
        );
        assert_eq!(hresult_name(S_OK), Some("S_OK"));
        assert_eq!(hresult_name(E_NOINTERFACE), Some("E_NOINTERFACE"));
        assert_eq!(
            hresult_name(CLDB_E_RECORD_NOTFOUND),
            Some("CLDB_E_RECORD_NOTFOUND")
        );
        assert_eq!(hresult_name(0x12345678), None);
    }

    #[test]
    fn names_are_unambiguous() {
        for (i, (value, name)) in NAMED.iter().enumerate() {
            for (other, other_name) in &NAMED[i + 1..] {
                assert_ne!(value, other, "{name} and {other_name} share a value");
            }
        }
    }

    #[test]
    fn success_and_failure() {
        assert!(SUCCEEDED(S_FALSE));
        assert!(SUCCEEDED(CLDB_S_TRUNCATION));
        assert!(FAILED(E_FAIL));
        assert!(FAILED(CORPROF_E_DATAINCOMPLETE));
        assert_eq!(HRESULT_FROM_WIN32(0), S_OK);
    }
}
