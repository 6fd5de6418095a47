//! Managed threads, and the exception clause the current thread is running.

use core::ffi::c_void;
use core::fmt;
use core::ptr;

use clrprof_sys::*;

use super::enumerators::ThreadEnum;
use super::{ProfilerInfo, ok};
use crate::error::Result;
use crate::ids::{AppDomainId, ContextId, ThreadId};

/// The runtime's OS handle for a thread (`HANDLE`), as `GetHandleFromThread` returns it. On
/// Windows, duplicate it (`DuplicateHandle`) before use; on Linux it is a PAL handle with no
/// meaning outside the runtime.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadHandle(pub usize);

impl fmt::Debug for ThreadHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadHandle({:#x})", self.0)
    }
}

/// Kind of exception clause (`COR_PRF_CLAUSE_TYPE`). An open set: unknown values are kept.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClauseType(pub u32);

impl ClauseType {
    /// No clause.
    pub const NONE: ClauseType = ClauseType(COR_PRF_CLAUSE_NONE);
    /// An exception filter (`when` clause).
    pub const FILTER: ClauseType = ClauseType(COR_PRF_CLAUSE_FILTER);
    /// A `catch` block.
    pub const CATCH: ClauseType = ClauseType(COR_PRF_CLAUSE_CATCH);
    /// A `finally` (or fault) block.
    pub const FINALLY: ClauseType = ClauseType(COR_PRF_CLAUSE_FINALLY);

    /// The constant's name, or `None` for an unknown value.
    pub fn name(self) -> Option<&'static str> {
        match self {
            ClauseType::NONE => Some("NONE"),
            ClauseType::FILTER => Some("FILTER"),
            ClauseType::CATCH => Some("CATCH"),
            ClauseType::FINALLY => Some("FINALLY"),
            _ => None,
        }
    }
}

impl fmt::Debug for ClauseType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "ClauseType::{name}"),
            None => write!(f, "ClauseType({})", self.0),
        }
    }
}

/// The exception clause being run (`COR_PRF_EX_CLAUSE_INFO`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ExceptionClauseInfo {
    /// Filter, catch or finally.
    pub clause_type: ClauseType,
    /// Native address of the clause's code.
    pub program_counter: usize,
    /// Frame pointer of the clause's frame.
    pub frame_pointer: usize,
    /// IA64 backing store pointer; 0 elsewhere.
    pub shadow_stack_pointer: usize,
}

impl ProfilerInfo {
    /// The runtime's OS thread handle of a managed thread
    /// (`ICorProfilerInfo::GetHandleFromThread`). From a callback or a profiler thread.
    pub fn get_handle_from_thread(&self, thread: ThreadId) -> Result<ThreadHandle> {
        const M: &str = "ICorProfilerInfo::GetHandleFromThread";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut handle: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `handle` is a valid out-param.
        ok(M, unsafe {
            (vt.GetHandleFromThread)(self.this(), thread.0, &mut handle)
        })?;
        Ok(ThreadHandle(handle as usize))
    }

    /// The OS thread id (Linux TID, Windows thread id) a managed thread currently runs on
    /// (`ICorProfilerInfo::GetThreadInfo`). From a callback or a profiler thread.
    pub fn get_thread_info(&self, thread: ThreadId) -> Result<u32> {
        const M: &str = "ICorProfilerInfo::GetThreadInfo";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut os_id = 0u32;
        // SAFETY: `this` is live; `os_id` is a valid out-param.
        ok(M, unsafe {
            (vt.GetThreadInfo)(self.this(), thread.0, &mut os_id)
        })?;
        Ok(os_id)
    }

    /// The managed ThreadID of the calling thread (`ICorProfilerInfo::GetCurrentThreadID`).
    /// Any time; `CORPROF_E_NOT_MANAGED_THREAD` on threads that never ran managed code (the
    /// profiler's own threads, GC threads, and the main thread during `Initialize`).
    pub fn get_current_thread_id(&self) -> Result<ThreadId> {
        const M: &str = "ICorProfilerInfo::GetCurrentThreadID";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut thread: ThreadID = 0;
        // SAFETY: `this` is live; `thread` is a valid out-param.
        ok(M, unsafe {
            (vt.GetCurrentThreadID)(self.this(), &mut thread)
        })?;
        Ok(ThreadId(thread))
    }

    /// The context of a managed thread (`ICorProfilerInfo::GetThreadContext`); on CoreCLR
    /// the same value as its application domain. Any time.
    pub fn get_thread_context(&self, thread: ThreadId) -> Result<ContextId> {
        const M: &str = "ICorProfilerInfo::GetThreadContext";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        let mut context: ContextID = 0;
        // SAFETY: `this` is live; `context` is a valid out-param.
        ok(M, unsafe {
            (vt.GetThreadContext)(self.this(), thread.0, &mut context)
        })?;
        Ok(ContextId(context))
    }

    /// The application domain a managed thread is in; [`ThreadId::NULL`] means the calling
    /// thread (`ICorProfilerInfo2::GetThreadAppDomain`). Any time.
    pub fn get_thread_app_domain(&self, thread: ThreadId) -> Result<AppDomainId> {
        const M: &str = "ICorProfilerInfo2::GetThreadAppDomain";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut domain: AppDomainID = 0;
        // SAFETY: `this` is live; `domain` is a valid out-param.
        ok(M, unsafe {
            (vt.GetThreadAppDomain)(self.this(), thread.0, &mut domain)
        })?;
        Ok(AppDomainId(domain))
    }

    /// A snapshot of every managed thread (`ICorProfilerInfo4::EnumThreads`). From a
    /// callback or a profiler thread.
    pub fn enum_threads(&self) -> Result<ThreadEnum> {
        const M: &str = "ICorProfilerInfo4::EnumThreads";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `raw` is a valid out-param.
        ok(M, unsafe { (vt.EnumThreads)(self.this(), &mut raw) })?;
        // SAFETY: on success `raw` is an owned ICorProfilerThreadEnum.
        unsafe { ThreadEnum::from_raw(M, raw) }
    }

    /// Prepares the calling thread for use with the runtime's locks
    /// (`ICorProfilerInfo4::InitializeCurrentThread`). Call it once on each profiler thread
    /// before it suspends the runtime or requests a ReJIT, to avoid deadlocks.
    pub fn initialize_current_thread(&self) -> Result<()> {
        const M: &str = "ICorProfilerInfo4::InitializeCurrentThread";
        let vt = self.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        // SAFETY: `this` is live.
        ok(M, unsafe { (vt.InitializeCurrentThread)(self.this()) })
    }

    /// The exception clause the calling thread is running or has just left, `None` when no
    /// clause is active (`ICorProfilerInfo2::GetNotifiedExceptionClauseInfo`, which answers
    /// S_FALSE). From the exception callbacks (`ExceptionCatcherEnter`,
    /// `ExceptionUnwindFinallyEnter`, `ExceptionFilterEnter` and their `Leave` pairs).
    pub fn get_notified_exception_clause_info(&self) -> Result<Option<ExceptionClauseInfo>> {
        const M: &str = "ICorProfilerInfo2::GetNotifiedExceptionClauseInfo";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut info = COR_PRF_EX_CLAUSE_INFO::default();
        // SAFETY: `this` is live; `info` is a valid out-param.
        let hr = unsafe { (vt.GetNotifiedExceptionClauseInfo)(self.this(), &mut info) };
        ok(M, hr)?;
        if hr == S_FALSE {
            return Ok(None);
        }
        Ok(Some(ExceptionClauseInfo {
            clause_type: ClauseType(info.clauseType),
            program_counter: info.programCounter,
            frame_pointer: info.framePointer,
            shadow_stack_pointer: info.shadowStackPointer,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clause_types_print_by_name() {
        assert_eq!(format!("{:?}", ClauseType::CATCH), "ClauseType::CATCH");
        assert_eq!(format!("{:?}", ClauseType(9)), "ClauseType(9)");
        assert_eq!(format!("{:?}", ThreadHandle(0x10)), "ThreadHandle(0x10)");
    }
}
