//! Errors returned by the SDK: the failing HRESULT with its name, a method the runtime lacks,
//! data the runtime gave that cannot be used, or the profiler's own failure with its cause.

use core::fmt;
use std::sync::Arc;

use clrprof_sys::HRESULT;

/// An HRESULT, printed with its symbolic name when it has one
/// (`0x80131374 CORPROF_E_INCONSISTENT_WITH_FLAGS`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HResult(pub HRESULT);

impl HResult {
    /// `S_OK`.
    pub const OK: HResult = HResult(0);
    /// `S_FALSE`: success, but "nothing" (an empty enumeration, a resource module...).
    pub const FALSE: HResult = HResult(1);

    /// True for success codes (`S_OK`, `S_FALSE`, ...).
    pub const fn is_ok(self) -> bool {
        self.0 >= 0
    }

    /// The symbolic name (`E_NOTIMPL`, `CORPROF_E_NOT_MANAGED_THREAD`, ...), if known.
    pub fn name(self) -> Option<&'static str> {
        clrprof_sys::hresult::hresult_name(self.0)
    }
}

impl fmt::Display for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{:#010X} {name}", self.0 as u32),
            None => write!(f, "{:#010X}", self.0 as u32),
        }
    }
}

impl fmt::Debug for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What went wrong in a call to the profiling API, or in the profiler's own work during a
/// callback.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Error {
    /// The runtime returned a failure HRESULT from `method`.
    Failed {
        /// The COM method, e.g. `"ICorProfilerInfo2::GetFunctionInfo2"`.
        method: &'static str,
        /// What it returned.
        hr: HResult,
    },
    /// The method belongs to an interface version the runtime does not implement.
    NotSupported {
        /// The COM method.
        method: &'static str,
        /// The `ICorProfilerInfoN` version that introduced it.
        required: u32,
        /// The highest version the runtime answered to QueryInterface.
        available: u32,
    },
    /// The runtime answered, but with data the SDK cannot use (a malformed signature, a
    /// name that is not UTF-16, a count larger than the buffer it gave...).
    InvalidData {
        /// Where it happened.
        context: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The profiler's own work failed, not the runtime: a socket it could not reach, a file it
    /// could not create. The cause is kept whole (an `io::Error` keeps its `ErrorKind`); the
    /// error shows it with the chain of its own causes.
    Profiler {
        /// What the profiler was doing, e.g. `"clrprof agent: start"`.
        context: &'static str,
        /// Why it failed.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// The profiler's own failure `source` while doing `context`.
    pub fn profiler(
        context: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Profiler {
            context,
            source: Arc::new(source),
        }
    }
}

/// Equal when of the same kind with equal fields; two profiler failures are equal when they
/// share their context and their very cause (errors have no equality of their own).
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Error::Failed { method, hr },
                Error::Failed {
                    method: m2,
                    hr: hr2,
                },
            ) => method == m2 && hr == hr2,
            (
                Error::NotSupported {
                    method,
                    required,
                    available,
                },
                Error::NotSupported {
                    method: m2,
                    required: r2,
                    available: a2,
                },
            ) => method == m2 && required == r2 && available == a2,
            (
                Error::InvalidData { context, reason },
                Error::InvalidData {
                    context: c2,
                    reason: r2,
                },
            ) => context == c2 && reason == r2,
            (
                Error::Profiler { context, source },
                Error::Profiler {
                    context: c2,
                    source: s2,
                },
            ) => context == c2 && Arc::ptr_eq(source, s2),
            _ => false,
        }
    }
}

impl Eq for Error {}

impl Error {
    /// The HRESULT to hand back to the runtime for this error.
    pub fn hresult(&self) -> HResult {
        match self {
            Error::Failed { hr, .. } => *hr,
            Error::NotSupported { .. } => HResult(clrprof_sys::hresult::E_NOTIMPL),
            Error::InvalidData { .. } | Error::Profiler { .. } => {
                HResult(clrprof_sys::hresult::E_FAIL)
            }
        }
    }

    /// True when the call failed with exactly `hr`.
    pub fn is(&self, hr: HRESULT) -> bool {
        matches!(self, Error::Failed { hr: h, .. } if h.0 == hr)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Failed { method, hr } => write!(f, "{method} failed: {hr}"),
            Error::NotSupported {
                method,
                required,
                available,
            } => write!(
                f,
                "{method} needs ICorProfilerInfo{required}, but this runtime implements only up to ICorProfilerInfo{available}"
            ),
            Error::InvalidData { context, reason } => write!(f, "{context}: {reason}"),
            Error::Profiler { context, source } => {
                write!(f, "{context}: {source}")?;
                let mut cause = source.source();
                while let Some(c) = cause {
                    write!(f, ": {c}")?;
                    cause = c.source();
                }
                Ok(())
            }
        }
    }
}

/// No source: the message already holds every cause (a profiler failure's whole chain).
impl std::error::Error for Error {}

/// The SDK's result type.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Turns an HRESULT from `method` into a `Result`, keeping success codes other than `S_OK`
/// (callers that care about `S_FALSE` match on the returned value).
pub fn check(method: &'static str, hr: HRESULT) -> Result<HResult> {
    if hr >= 0 {
        Ok(HResult(hr))
    } else {
        Err(Error::Failed {
            method,
            hr: HResult(hr),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_known_hresults() {
        let hr = HResult(0x8013_1374_u32 as i32);
        assert_eq!(hr.name(), Some("CORPROF_E_INCONSISTENT_WITH_FLAGS"));
        assert_eq!(
            hr.to_string(),
            "0x80131374 CORPROF_E_INCONSISTENT_WITH_FLAGS"
        );
        let e = Error::Failed {
            method: "ICorProfilerInfo::SetEventMask",
            hr,
        };
        assert_eq!(
            e.to_string(),
            "ICorProfilerInfo::SetEventMask failed: 0x80131374 CORPROF_E_INCONSISTENT_WITH_FLAGS"
        );
        assert!(e.is(0x8013_1374_u32 as i32));
    }

    #[test]
    fn check_keeps_success_codes() {
        assert_eq!(check("m", 1).unwrap(), HResult::FALSE);
        assert!(check("m", -1).is_err());
    }

    #[test]
    fn not_supported_says_which_versions() {
        let e = Error::NotSupported {
            method: "ICorProfilerInfo12::EventPipeStartSession",
            required: 12,
            available: 11,
        };
        assert!(e.to_string().contains("ICorProfilerInfo12"));
        assert!(e.to_string().contains("up to ICorProfilerInfo11"));
        assert_eq!(e.hresult().0, clrprof_sys::hresult::E_NOTIMPL);
    }
}
