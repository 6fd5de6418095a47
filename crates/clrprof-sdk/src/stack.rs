//! Managed stack walks: `DoStackSnapshot` on the current thread, and on every thread while the
//! runtime is suspended.
//!
//! # The current thread
//!
//! [`ProfilerInfo::do_stack_snapshot`] with [`ThreadId::NULL`] walks the calling thread, from
//! inside any callback (or hook) that runs on a managed thread; [`current_stack`] collects the
//! frames into a `Vec`. Needs `COR_PRF_ENABLE_STACK_SNAPSHOT` in the event mask
//! (`CORPROF_E_INCONSISTENT_WITH_FLAGS` otherwise).
//!
//! # Other threads
//!
//! On Linux the runtime cannot suspend one thread at a time, so walking another thread fails
//! with `E_NOTIMPL` unless the whole runtime is suspended first (`ICorProfilerInfo10`, .NET
//! Core 3.0+). [`ProfilerInfo::suspend`] does that and returns a [`SuspendedRuntime`] guard
//! that resumes on drop; [`walk_all_threads`] does suspend, enumerate, walk, resume in one
//! call. Call them from a thread of your own that never runs managed code (a `std::thread`
//! spawned from `Initialize`), or from a callback that is allowed to trigger a GC, never from
//! an ELT hook.
//!
//! While the runtime is suspended every managed thread is stopped at a safe point, possibly
//! holding locks; so between suspend and resume the SDK **allocates nothing, takes no lock and
//! looks up no names**: frames go into caller-preallocated [`FixedStack`]s and are named after
//! resuming (e.g. with [`crate::Namer`]). The threads are enumerated *inside* the suspension:
//! the runtime's `EnumThreads` is made for that (it skips the thread-store lock when a profiler
//! suspended the runtime, which already holds it), the list cannot change while it is walked,
//! and a ThreadID is never used after its thread could have exited (`DoStackSnapshot` trusts
//! the ThreadID it is given). The enumerator object itself is allocated by the runtime, not by
//! this process's Rust allocator; reading it goes into the pool's preallocated array.

use core::any::Any;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use clrprof_sys::*;

use crate::com::ComPtr;
use crate::error::{Error, HResult, Result};
use crate::ids::{FrameInfo, FunctionId, ThreadId};
use crate::info::{ProfilerInfo, ok};

/// `COR_PRF_SNAPSHOT_INFO`: options of `DoStackSnapshot`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SnapshotFlags(pub u32);

impl SnapshotFlags {
    /// No options.
    pub const DEFAULT: SnapshotFlags = SnapshotFlags(COR_PRF_SNAPSHOT_DEFAULT);
    /// Ask the runtime for a register context per frame (the SDK does not pass it on; only
    /// useful to match another tool's behaviour).
    pub const REGISTER_CONTEXT: SnapshotFlags = SnapshotFlags(COR_PRF_SNAPSHOT_REGISTER_CONTEXT);
}

/// One frame reported by `DoStackSnapshot`, innermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackFrame {
    /// The managed function, or [`FunctionId::NULL`] for a run of native frames.
    pub function: FunctionId,
    /// The instruction pointer in the frame (0 for some native runs).
    pub ip: usize,
    /// The frame handle for `get_function_info2`; valid only inside the snapshot callback.
    pub frame_info: FrameInfo,
}

/// What the runtime's callback reaches through `clientData`.
struct SnapshotState<'a> {
    callback: &'a mut dyn FnMut(StackFrame) -> bool,
    stopped: bool,
    panic: Option<Box<dyn Any + Send>>,
}

/// The `StackSnapshotCallback` handed to the runtime.
///
/// # Safety
/// `client_data` must be the `SnapshotState` passed by `do_stack_snapshot`.
unsafe extern "system" fn snapshot_callback(
    function: FunctionID,
    ip: UINT_PTR,
    frame_info: COR_PRF_FRAME_INFO,
    _context_size: ULONG32,
    _context: *mut BYTE,
    client_data: *mut c_void,
) -> HRESULT {
    // SAFETY: `do_stack_snapshot` passes a pointer to its live `SnapshotState` as client data,
    // and the runtime calls back only on the walking thread, during `DoStackSnapshot`.
    let state = unsafe { &mut *client_data.cast::<SnapshotState<'_>>() };
    if state.stopped || state.panic.is_some() {
        return hresult::E_ABORT;
    }
    let frame = StackFrame {
        function: FunctionId(function),
        ip,
        frame_info: FrameInfo(frame_info),
    };
    match catch_unwind(AssertUnwindSafe(|| (state.callback)(frame))) {
        Ok(true) => hresult::S_OK,
        Ok(false) => {
            state.stopped = true;
            hresult::E_ABORT
        }
        Err(payload) => {
            state.panic = Some(payload);
            hresult::E_ABORT
        }
    }
}

impl ProfilerInfo {
    /// `ICorProfilerInfo2::DoStackSnapshot`: calls `callback` for each frame of `thread`'s
    /// stack, innermost first, until it returns `false`. [`ThreadId::NULL`] is the current
    /// thread. Another thread can only be walked while the runtime is suspended (see the
    /// [module documentation](crate::stack)). Needs `COR_PRF_ENABLE_STACK_SNAPSHOT`.
    ///
    /// Returns `Ok` when the walk completed or `callback` stopped it. A panic in `callback`
    /// stops the walk and continues unwinding from here, after the runtime has returned.
    /// The SDK allocates nothing here.
    pub fn do_stack_snapshot(
        &self,
        thread: ThreadId,
        flags: SnapshotFlags,
        callback: &mut dyn FnMut(StackFrame) -> bool,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo2::DoStackSnapshot";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        let mut state = SnapshotState {
            callback,
            stopped: false,
            panic: None,
        };
        // SAFETY: `this` is live; the callback gets `state` back as client data, which
        // outlives the call; no seed context is passed.
        let hr = unsafe {
            (vt.DoStackSnapshot)(
                self.this(),
                thread.0,
                Some(snapshot_callback),
                flags.0,
                (&mut state as *mut SnapshotState<'_>).cast::<c_void>(),
                ptr::null(),
                0,
            )
        };
        if let Some(payload) = state.panic.take() {
            resume_unwind(payload);
        }
        if state.stopped && hr == hresult::CORPROF_E_STACKSNAPSHOT_ABORTED {
            return Ok(());
        }
        ok(M, hr)
    }

    /// `ICorProfilerInfo10::SuspendRuntime`: stops every managed thread at a safe point
    /// (blocking until they are), without a GC. Prefer [`ProfilerInfo::suspend`], whose guard
    /// cannot forget to resume.
    pub fn suspend_runtime(&self) -> Result<()> {
        const M: &str = "ICorProfilerInfo10::SuspendRuntime";
        let vt = self.vt::<ICorProfilerInfo10Vtbl>(10, M)?;
        // SAFETY: `this` is live; no arguments.
        ok(M, unsafe { (vt.SuspendRuntime)(self.this()) })
    }

    /// `ICorProfilerInfo10::ResumeRuntime`: undoes [`ProfilerInfo::suspend_runtime`]
    /// (`CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` if the profiler did not suspend).
    pub fn resume_runtime(&self) -> Result<()> {
        const M: &str = "ICorProfilerInfo10::ResumeRuntime";
        let vt = self.vt::<ICorProfilerInfo10Vtbl>(10, M)?;
        // SAFETY: `this` is live; no arguments.
        ok(M, unsafe { (vt.ResumeRuntime)(self.this()) })
    }

    /// Suspends the runtime and returns a guard that resumes it when dropped. While it lives,
    /// do not allocate, lock or look up names (see the [module documentation](crate::stack)).
    /// `CORPROF_E_SUSPENSION_IN_PROGRESS` when a GC or another suspension is under way (try
    /// again later); `CORPROF_E_RUNTIME_UNINITIALIZED` before the runtime has started.
    pub fn suspend(&self) -> Result<SuspendedRuntime<'_>> {
        self.suspend_runtime()?;
        Ok(SuspendedRuntime {
            info: self,
            active: true,
            _same_thread: PhantomData,
        })
    }
}

/// The frames of [`current_stack`]: every frame of the calling thread, innermost first
/// (including native runs, whose `function` is null). Allocates.
pub fn current_stack(info: &ProfilerInfo) -> Result<Vec<StackFrame>> {
    let mut frames = Vec::new();
    info.do_stack_snapshot(ThreadId::NULL, SnapshotFlags::DEFAULT, &mut |frame| {
        frames.push(frame);
        true
    })?;
    Ok(frames)
}

/// One frame as stored in a [`FixedStack`]: no frame handle, which dies with the walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RawFrame {
    /// The managed function, or [`FunctionId::NULL`] for a run of native frames.
    pub function: FunctionId,
    /// The instruction pointer in the frame.
    pub ip: usize,
}

/// A fixed-capacity stack buffer, allocated once and refilled by every walk without
/// allocating.
#[derive(Clone, Debug)]
pub struct FixedStack {
    thread: ThreadId,
    frames: Box<[RawFrame]>,
    len: usize,
    truncated: bool,
    error: Option<HResult>,
}

impl FixedStack {
    /// A buffer for up to `capacity` frames.
    pub fn with_capacity(capacity: usize) -> Self {
        FixedStack {
            thread: ThreadId::NULL,
            frames: vec![RawFrame::default(); capacity].into_boxed_slice(),
            len: 0,
            truncated: false,
            error: None,
        }
    }

    /// The number of frames it can hold.
    pub fn capacity(&self) -> usize {
        self.frames.len()
    }

    /// The frames of the last walk, innermost first.
    pub fn frames(&self) -> &[RawFrame] {
        &self.frames[..self.len]
    }

    /// The number of frames stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no frame is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The thread last walked into this buffer.
    pub fn thread(&self) -> ThreadId {
        self.thread
    }

    /// True when the stack had more frames than the capacity (the outermost ones are missing).
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The failure of the last walk, if it failed (the frames before the failure are kept).
    /// The runtime refuses some threads, e.g. with `E_FAIL` or
    /// `CORPROF_E_STACKSNAPSHOT_UNSAFE`; that is normal.
    pub fn error(&self) -> Option<HResult> {
        self.error
    }

    /// Forgets the frames (keeps the capacity).
    pub fn clear(&mut self) {
        self.thread = ThreadId::NULL;
        self.len = 0;
        self.truncated = false;
        self.error = None;
    }

    /// Appends a frame; `false` (and marks truncation) when full.
    fn push(&mut self, frame: RawFrame) -> bool {
        match self.frames.get_mut(self.len) {
            Some(slot) => {
                *slot = frame;
                self.len += 1;
                true
            }
            None => {
                self.truncated = true;
                false
            }
        }
    }
}

/// Preallocated buffers for [`walk_all_threads`]: room for `max_threads` threads of
/// `max_frames` frames each.
#[derive(Clone, Debug)]
pub struct StackPool {
    threads: Box<[ThreadId]>,
    stacks: Box<[FixedStack]>,
    walked: usize,
    total_threads: usize,
}

impl StackPool {
    /// Allocates the buffers (do this before suspending).
    pub fn new(max_threads: usize, max_frames: usize) -> Self {
        StackPool {
            threads: vec![ThreadId::NULL; max_threads].into_boxed_slice(),
            stacks: (0..max_threads)
                .map(|_| FixedStack::with_capacity(max_frames))
                .collect(),
            walked: 0,
            total_threads: 0,
        }
    }

    /// The stacks of the last walk, one per thread walked.
    pub fn stacks(&self) -> &[FixedStack] {
        &self.stacks[..self.walked]
    }

    /// The number of managed threads the runtime reported in the last walk.
    pub fn total_threads(&self) -> usize {
        self.total_threads
    }

    /// Threads the last walk skipped because the pool has room for fewer.
    pub fn missed_threads(&self) -> usize {
        self.total_threads.saturating_sub(self.walked)
    }
}

/// The runtime, suspended by [`ProfilerInfo::suspend`]; resumed when this is dropped (or by
/// [`SuspendedRuntime::resume`], which reports a failure to resume).
///
/// Not `Send`: resume on the thread that suspended.
#[derive(Debug)]
pub struct SuspendedRuntime<'a> {
    info: &'a ProfilerInfo,
    active: bool,
    _same_thread: PhantomData<*const ()>,
}

impl<'a> SuspendedRuntime<'a> {
    /// The profiler info this suspension was made with.
    pub fn info(&self) -> &'a ProfilerInfo {
        self.info
    }

    /// Walks `thread` into `out` (cleared first) and returns the number of frames stored.
    /// Allocates nothing. On failure the error is also recorded in `out` ([`FixedStack::error`])
    /// with the frames found before it.
    pub fn walk_thread(&self, thread: ThreadId, out: &mut FixedStack) -> Result<usize> {
        out.clear();
        out.thread = thread;
        let result = {
            let mut store = |frame: StackFrame| {
                out.push(RawFrame {
                    function: frame.function,
                    ip: frame.ip,
                })
            };
            self.info
                .do_stack_snapshot(thread, SnapshotFlags::DEFAULT, &mut store)
        };
        match result {
            Ok(()) => Ok(out.len),
            Err(e) => {
                out.error = Some(e.hresult());
                Err(e)
            }
        }
    }

    /// Stores the ThreadIDs of the managed threads (`ICorProfilerInfo4::EnumThreads`) into
    /// `out` and returns `(stored, total)`; `total > stored` when `out` is too short. The SDK
    /// allocates nothing (the runtime allocates its enumerator on its own heap).
    pub fn threads_into(&self, out: &mut [ThreadId]) -> Result<(usize, usize)> {
        const M: &str = "ICorProfilerInfo4::EnumThreads";
        let vt = self.info.vt::<ICorProfilerInfo4Vtbl>(4, M)?;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `this` is live; `raw` is a valid out-param.
        ok(M, unsafe { (vt.EnumThreads)(self.info.this(), &mut raw) })?;
        // SAFETY: on success `raw` is an owned ICorProfilerThreadEnum (or null).
        let threads = unsafe { ComPtr::<ICorProfilerThreadEnumVtbl>::from_raw(raw) }.ok_or(
            Error::Failed {
                method: M,
                hr: HResult(hresult::E_POINTER),
            },
        )?;
        let mut total: ULONG = 0;
        // SAFETY: live enumerator; `total` is a valid out-param.
        ok("ICorProfilerThreadEnum::GetCount", unsafe {
            (threads.vtbl().GetCount)(threads.as_raw(), &mut total)
        })?;
        if out.is_empty() {
            return Ok((0, total as usize));
        }
        let want = ULONG::try_from(out.len()).unwrap_or(ULONG::MAX);
        let mut fetched: ULONG = 0;
        // SAFETY: `out` has room for `want` ThreadIDs (`ThreadId` is a transparent
        // `ThreadID`); `fetched` is a valid out-param.
        ok("ICorProfilerThreadEnum::Next", unsafe {
            (threads.vtbl().Next)(
                threads.as_raw(),
                want,
                out.as_mut_ptr().cast::<ThreadID>(),
                &mut fetched,
            )
        })?;
        let stored = (fetched as usize).min(out.len());
        Ok((stored, (total as usize).max(stored)))
    }

    /// Enumerates the managed threads and walks each into `pool`. Allocates nothing. A thread
    /// the runtime refuses to walk keeps its error in its [`FixedStack::error`] and does not
    /// fail the whole walk.
    pub fn walk_all(&self, pool: &mut StackPool) -> Result<()> {
        pool.walked = 0;
        pool.total_threads = 0;
        let (stored, total) = self.threads_into(&mut pool.threads)?;
        let n = stored.min(pool.stacks.len());
        pool.total_threads = total;
        for i in 0..n {
            // Per-thread failures are recorded in the stack itself.
            let _ = self.walk_thread(pool.threads[i], &mut pool.stacks[i]);
        }
        pool.walked = n;
        Ok(())
    }

    /// Resumes the runtime now, reporting a failure.
    pub fn resume(mut self) -> Result<()> {
        self.active = false;
        self.info.resume_runtime()
    }
}

impl Drop for SuspendedRuntime<'_> {
    fn drop(&mut self) {
        if self.active {
            // Nothing better to do with a failure here; `resume` reports it.
            let _ = self.info.resume_runtime();
        }
    }
}

/// Suspends the runtime, enumerates the managed threads, walks each into `pool`, resumes, and
/// only then returns the stacks (one per thread walked; see [`StackPool::missed_threads`]).
///
/// Nothing is allocated, locked or named from start to end: `pool` must be allocated
/// beforehand, and functions are named after this returns. Call from a thread that never runs
/// managed code, or from a callback allowed to trigger a GC. Cost on .NET Core 3.1: a
/// stop-the-world pause of a few hundred microseconds for a handful of threads.
pub fn walk_all_threads<'p>(
    info: &ProfilerInfo,
    pool: &'p mut StackPool,
) -> Result<&'p [FixedStack]> {
    let suspended = info.suspend()?;
    let walked = suspended.walk_all(pool);
    let resumed = suspended.resume();
    walked?;
    resumed?;
    Ok(pool.stacks())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(
        frames: &[(usize, usize)],
        callback: &mut dyn FnMut(StackFrame) -> bool,
    ) -> (Vec<HRESULT>, bool) {
        let mut state = SnapshotState {
            callback,
            stopped: false,
            panic: None,
        };
        let mut results = Vec::new();
        for &(function, ip) in frames {
            // SAFETY: `state` is a live `SnapshotState`, as `do_stack_snapshot` passes it.
            results.push(unsafe {
                snapshot_callback(
                    function,
                    ip,
                    0,
                    0,
                    ptr::null_mut(),
                    (&mut state as *mut SnapshotState<'_>).cast(),
                )
            });
        }
        (results, state.stopped)
    }

    #[test]
    fn fixed_stack_fills_then_truncates() {
        let mut stack = FixedStack::with_capacity(2);
        let mut push = |f: StackFrame| {
            stack.push(RawFrame {
                function: f.function,
                ip: f.ip,
            })
        };
        let (results, stopped) = feed(&[(1, 10), (2, 20), (3, 30), (4, 40)], &mut push);
        assert_eq!(
            results,
            [
                hresult::S_OK,
                hresult::S_OK,
                hresult::E_ABORT,
                hresult::E_ABORT
            ]
        );
        assert!(stopped);
        assert_eq!(stack.len(), 2);
        assert!(stack.is_truncated());
        assert_eq!(
            stack.frames()[1],
            RawFrame {
                function: FunctionId(2),
                ip: 20
            }
        );
        stack.clear();
        assert!(stack.is_empty() && !stack.is_truncated() && stack.capacity() == 2);
    }

    #[test]
    fn a_panicking_callback_stops_the_walk_and_keeps_the_payload() {
        let mut calls = 0;
        let mut callback = |_: StackFrame| -> bool {
            calls += 1;
            panic!("callback panic (expected by the test)");
        };
        let mut state = SnapshotState {
            callback: &mut callback,
            stopped: false,
            panic: None,
        };
        for _ in 0..2 {
            // SAFETY: `state` is a live `SnapshotState`.
            let hr = unsafe {
                snapshot_callback(
                    1,
                    2,
                    0,
                    0,
                    ptr::null_mut(),
                    (&mut state as *mut SnapshotState<'_>).cast(),
                )
            };
            assert_eq!(hr, hresult::E_ABORT);
        }
        assert!(state.panic.is_some());
        drop(state);
        assert_eq!(calls, 1);
    }

    #[test]
    fn pool_reports_nothing_before_a_walk() {
        let pool = StackPool::new(4, 16);
        assert!(pool.stacks().is_empty());
        assert_eq!(pool.missed_threads(), 0);
        assert_eq!(pool.stacks.len(), 4);
        assert!(pool.stacks.iter().all(|s| s.capacity() == 16));
    }
}
