//! Enter/leave/tail-call (ELT) hooks: a callback on every call and return of managed code.
//!
//! # Two ways to hook
//!
//! **Fast path** ([`install_hooks`], `SetEnterLeaveFunctionHooks3`). The JIT emits a call to the
//! hook in the prolog of every method (enter), before its return (leave) and before a tail
//! call that leaves the frame (tail call, which *replaces* leave for that frame). The hook
//! receives only the [`ClientId`] (the FunctionID, or what the [function id
//! mapper](set_function_id_mapper) returned for it). No runtime code runs in between, so this
//! costs a few nanoseconds per call, but the JIT'd code calls the hook **without following
//! the C calling convention**: live argument registers (enter) or return registers (leave)
//! must survive. The SDK's naked trampolines (`enter_trampoline`, `leave_trampoline`,
//! `tailcall_trampoline`, public on x86_64 Linux) save exactly what the JIT needs saved, then
//! call a plain Rust `fn` from [`EltHandlers`].
//!
//! **Slow path** ([`install_hooks_with_info`], `SetEnterLeaveFunctionHooks3WithInfo`). The JIT
//! calls a runtime helper that saves the registers, then calls the hook as an ordinary C
//! function with the id and an [`EltInfo`]; with that, the hook can ask for the frame, the
//! arguments ([`ProfilerInfo::get_function_enter3_info`]) and the return value
//! ([`ProfilerInfo::get_function_leave3_info`]). It is an order of magnitude slower.
//!
//! # Event mask
//!
//! Both need `COR_PRF_MONITOR_ENTERLEAVE`. **Set the mask before installing**: the runtime
//! checks it at registration. The slow path needs at least one of
//! `COR_PRF_ENABLE_FUNCTION_ARGS` (argument ranges), `COR_PRF_ENABLE_FUNCTION_RETVAL` (return
//! value) and `COR_PRF_ENABLE_FRAME_INFO` (the [`FrameInfo`]); the fast path needs none of
//! them. Getting this wrong fails with `CORPROF_E_INCONSISTENT_WITH_FLAGS` (`0x80131374`):
//! registering fast-path hooks with one of the three set, slow-path hooks with none set, or
//! asking a `get_function_*3_info` call for information the mask does not enable. Hooks may
//! only be registered from `Initialize`. Inlined methods get no hooks (add
//! `COR_PRF_DISABLE_INLINING` to see them), and enabling ELT makes the runtime JIT the
//! framework instead of using its precompiled (ReadyToRun) code.
//!
//! # Rules for handlers
//!
//! A handler runs inside every managed call, on the calling thread, with the garbage collector
//! unable to run. It must be short, must not block (a blocked hook stalls every GC), must not
//! call managed code, and should not allocate on the hot path. It **must not panic**: the SDK
//! catches a panic at the trampoline (so it never unwinds into JIT'd code) and counts it
//! ([`stats`]), but the hook's work is lost. Handlers may run on a thread the runtime does not
//! know yet (reverse P/Invoke), so use your own thread-local state or the OS thread id, not
//! `GetCurrentThreadID`. Exceptions unwind managed frames without calling leave (the runtime
//! reports `ExceptionUnwindFunctionEnter/Leave` instead).
//!
//! # Platforms
//!
//! The trampolines exist for x86_64 Linux (System V ABI), where the register contract was
//! read from the JIT of .NET Core 3.1 to .NET 10 and measured on 3.1. On every other target
//! this module compiles, [`SUPPORTED`] is false and [`install_hooks`] /
//! [`install_hooks_with_info`] return an error without registering anything; the raw
//! `ProfilerInfo::set_enter_leave_function_hooks*` wrappers exist everywhere.

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::panic::{AssertUnwindSafe, catch_unwind};

use clrprof_sys::*;

use crate::error::{Error, HResult, Result};
use crate::ids::{ClientId, EltInfo, FrameInfo, FunctionId};
use crate::info::{ProfilerInfo, ok};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod sysv;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub use sysv::{
    enter_trampoline, enter_with_info_wrapper, leave_trampoline, leave_with_info_wrapper,
    noop_hook, tailcall_trampoline, tailcall_with_info_wrapper,
};

/// True where the SDK has trampolines ([`install_hooks`], [`install_hooks_with_info`]):
/// x86_64 Linux.
pub const SUPPORTED: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

// ----- handlers -----

/// The stack pointer of a hooked method's caller, as the runtime passes it to the fast-path
/// hooks (`r15` at enter, `rsi` at leave and tail call). It identifies the method's frame: it is
/// the same at a frame's enter and at its leave, and it decreases as the stack deepens, so a
/// shadow stack can tell which frames an exception unwound without a leave.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct CallerSp(pub usize);

/// The Rust functions the fast-path trampolines call, with the function's id and its frame's
/// [`CallerSp`]. `None` makes that hook return at once.
///
/// See the [module documentation](self) for what a handler may do.
#[derive(Clone, Copy, Debug, Default)]
pub struct EltHandlers {
    /// Called at the start of every hooked method, before its body.
    pub enter: Option<fn(ClientId, CallerSp)>,
    /// Called when a hooked method returns normally.
    pub leave: Option<fn(ClientId, CallerSp)>,
    /// Called instead of `leave` when a hooked method leaves its frame through a tail call
    /// (the callee then gets its own `enter`).
    pub tailcall: Option<fn(ClientId, CallerSp)>,
}

/// The Rust functions the slow-path wrappers call, with the [`EltInfo`] that
/// [`ProfilerInfo::get_function_enter3_info`] and friends need. `None` makes that hook return
/// at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct EltInfoHandlers {
    /// Called at the start of every hooked method.
    pub enter: Option<fn(ClientId, EltInfo)>,
    /// Called when a hooked method returns normally.
    pub leave: Option<fn(ClientId, EltInfo)>,
    /// Called instead of `leave` when a hooked method leaves through a tail call.
    pub tailcall: Option<fn(ClientId, EltInfo)>,
}

static HANDLER_PANICS: AtomicU64 = AtomicU64::new(0);
static MAPPER_PANICS: AtomicU64 = AtomicU64::new(0);
static MAPPER_ZERO_IDS: AtomicU64 = AtomicU64::new(0);

/// The handler slots and the shims the trampolines call (unused where there are none).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
mod slots {
    use super::*;

    // The handlers the trampolines call, as untyped pointers (null = none). The trampolines load
    // them with a plain 64-bit load; they are set before the hooks are registered.
    pub(super) static ENTER_HANDLER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());
    pub(super) static LEAVE_HANDLER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());
    pub(super) static TAILCALL_HANDLER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());
    pub(super) static ENTER_INFO_HANDLER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());
    pub(super) static LEAVE_INFO_HANDLER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());
    pub(super) static TAILCALL_INFO_HANDLER: AtomicPtr<()> = AtomicPtr::new(ptr::null_mut());

    pub(super) fn store_fast(slot: &AtomicPtr<()>, handler: Option<fn(ClientId, CallerSp)>) {
        slot.store(
            handler.map_or(ptr::null_mut(), |f| f as *mut ()),
            Ordering::Release,
        );
    }

    pub(super) fn store_info(slot: &AtomicPtr<()>, handler: Option<fn(ClientId, EltInfo)>) {
        slot.store(
            handler.map_or(ptr::null_mut(), |f| f as *mut ()),
            Ordering::Release,
        );
    }

    /// Called by the fast-path trampolines with the id, the caller's stack pointer and the
    /// (non-null) handler they loaded.
    ///
    /// # Safety
    /// `handler` must come from one of the fast-path handler statics, i.e. be a
    /// `fn(ClientId, CallerSp)`.
    pub(super) unsafe extern "C" fn run_fast_handler(
        id: usize,
        caller_sp: usize,
        handler: *mut (),
    ) {
        // SAFETY: the statics only ever hold null or a `fn(ClientId, CallerSp)` cast to a
        // pointer (`store_fast`), and the trampoline only calls us with a non-null one.
        let f = unsafe { core::mem::transmute::<*mut (), fn(ClientId, CallerSp)>(handler) };
        if catch_unwind(AssertUnwindSafe(|| f(ClientId(id), CallerSp(caller_sp)))).is_err() {
            HANDLER_PANICS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Called by the slow-path wrappers with the id, the ELT info and the (non-null) handler.
    ///
    /// # Safety
    /// `handler` must come from one of the slow-path handler statics, i.e. be a
    /// `fn(ClientId, EltInfo)`.
    pub(super) unsafe extern "C" fn run_info_handler(id: usize, elt: usize, handler: *mut ()) {
        // SAFETY: the statics only ever hold null or a `fn(ClientId, EltInfo)` cast to a pointer
        // (`store_info`), and the wrapper only calls us with a non-null one.
        let f = unsafe { core::mem::transmute::<*mut (), fn(ClientId, EltInfo)>(handler) };
        if catch_unwind(AssertUnwindSafe(|| f(ClientId(id), EltInfo(elt)))).is_err() {
            HANDLER_PANICS.fetch_add(1, Ordering::Relaxed);
        }
    }
}
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use slots::*;

/// Problems the SDK absorbed at the hook boundary instead of letting them reach the runtime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EltStats {
    /// Panics caught in ELT handlers (the hook returned normally).
    pub handler_panics: u64,
    /// Panics caught in the function id mapper (the function was left unhooked).
    pub mapper_panics: u64,
    /// Times the mapper returned `Some(0)` (the function was left unhooked).
    pub mapper_zero_ids: u64,
}

/// The counters of [`EltStats`] since the process started.
pub fn stats() -> EltStats {
    EltStats {
        handler_panics: HANDLER_PANICS.load(Ordering::Relaxed),
        mapper_panics: MAPPER_PANICS.load(Ordering::Relaxed),
        mapper_zero_ids: MAPPER_ZERO_IDS.load(Ordering::Relaxed),
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn unsupported(method: &'static str) -> Error {
    Error::Failed {
        method,
        hr: HResult(hresult::E_NOTIMPL),
    }
}

/// Sets the handlers the fast-path trampolines call, without registering anything with the
/// runtime: for a profiler that registers its own hand-written hooks and `jmp`s to
/// [`enter_trampoline`] / [`leave_trampoline`] / [`tailcall_trampoline`] on its slow path.
/// Elsewhere than x86_64 Linux there are no trampolines and this does nothing.
pub fn set_handlers(handlers: EltHandlers) {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        store_fast(&ENTER_HANDLER, handlers.enter);
        store_fast(&LEAVE_HANDLER, handlers.leave);
        store_fast(&TAILCALL_HANDLER, handlers.tailcall);
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    let _ = handlers;
}

/// Registers hooks that do nothing at all ([`noop_hook`]: a single `ret`) for enter, leave and
/// tail call: the cost floor of the enter/leave mechanism, for measurements.
///
/// Same event mask requirements and errors as [`install_hooks`].
pub fn install_noop_hooks(info: &ProfilerInfo) -> Result<()> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        // SAFETY: `noop_hook` touches no register and no memory, so it satisfies the enter,
        // leave and tail-call register contracts.
        unsafe {
            info.set_enter_leave_function_hooks3(Some(noop_hook), Some(noop_hook), Some(noop_hook))
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = info;
        Err(unsupported(
            "clrprof_sdk::elt::install_noop_hooks (ELT trampolines exist only for x86_64 Linux)",
        ))
    }
}

/// Registers the SDK's fast-path trampolines (`SetEnterLeaveFunctionHooks3`) and makes them
/// call `handlers`.
///
/// Call from `Initialize`, after setting an event mask with `COR_PRF_MONITOR_ENTERLEAVE` and
/// none of `COR_PRF_ENABLE_FUNCTION_ARGS`, `_FUNCTION_RETVAL`, `_FRAME_INFO`. Calling it again replaces
/// the handlers (the trampolines stay registered). Handlers receive the FunctionID unless a
/// [mapper](set_function_id_mapper) is installed.
///
/// # Errors
/// On targets other than x86_64 Linux (see [`SUPPORTED`]) it registers nothing and returns
/// `Error::Failed` with `E_NOTIMPL` and a method name saying so; otherwise what the runtime
/// returned (e.g. `CORPROF_E_UNSUPPORTED_CALL_SEQUENCE` outside `Initialize`).
pub fn install_hooks(info: &ProfilerInfo, handlers: EltHandlers) -> Result<()> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        set_handlers(handlers);
        // SAFETY: the trampolines obey the fast-path register contract (see `sysv`): they
        // preserve every register the JIT expects to survive and keep the stack aligned.
        unsafe {
            info.set_enter_leave_function_hooks3(
                Some(enter_trampoline),
                Some(leave_trampoline),
                Some(tailcall_trampoline),
            )
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = (info, handlers);
        Err(unsupported(
            "clrprof_sdk::elt::install_hooks (ELT trampolines exist only for x86_64 Linux)",
        ))
    }
}

/// Registers the SDK's slow-path wrappers (`SetEnterLeaveFunctionHooks3WithInfo`) and makes
/// them call `handlers`.
///
/// Call from `Initialize`, after setting an event mask with `COR_PRF_MONITOR_ENTERLEAVE` plus
/// at least one of `COR_PRF_ENABLE_FUNCTION_ARGS`, `COR_PRF_ENABLE_FUNCTION_RETVAL`,
/// `COR_PRF_ENABLE_FRAME_INFO`: the ones for the `get_function_*3_info` calls the handlers make.
///
/// The wrappers are needed even though the runtime calls the hook as a C function: on .NET
/// Core 3.1 the runtime's helper saves xmm0–xmm7 before the call but restores only xmm0 and
/// xmm1 afterwards, so a hook that uses SSE (any Rust code may) would corrupt the
/// floating-point arguments of the profiled method. The wrappers save and restore
/// xmm0–xmm7 around the handler.
///
/// # Errors
/// As [`install_hooks`].
pub fn install_hooks_with_info(info: &ProfilerInfo, handlers: EltInfoHandlers) -> Result<()> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        store_info(&ENTER_INFO_HANDLER, handlers.enter);
        store_info(&LEAVE_INFO_HANDLER, handlers.leave);
        store_info(&TAILCALL_INFO_HANDLER, handlers.tailcall);
        // SAFETY: the wrappers are C-ABI functions of the `...WithInfo` signatures that also
        // preserve xmm0-xmm7 (see `sysv`).
        unsafe {
            info.set_enter_leave_function_hooks3_with_info(
                Some(enter_with_info_wrapper),
                Some(leave_with_info_wrapper),
                Some(tailcall_with_info_wrapper),
            )
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = (info, handlers);
        Err(unsupported(
            "clrprof_sdk::elt::install_hooks_with_info (ELT wrappers exist only for x86_64 Linux)",
        ))
    }
}

// ----- function id mapper -----

/// Installs `mapper` as the runtime's function id mapper (`SetFunctionIDMapper2`).
///
/// The runtime calls it once per function, when the function is JIT-compiled, before any hook
/// for it fires. `None` means "do not hook this function" (no enter/leave/tail-call calls for
/// it at all, which is the cheapest filter there is); `Some(id)` hooks it, and the hooks
/// receive `ClientId(id)` instead of the FunctionID, e.g. an index into your own table.
///
/// The client id **must not be 0**: the SDK treats `Some(0)` like `None` (the function is not
/// hooked) and counts it in [`EltStats::mapper_zero_ids`]. A panic in the mapper is caught,
/// counted in [`EltStats::mapper_panics`], and the function is not hooked. The slow-path info
/// calls ([`ProfilerInfo::get_function_enter3_info`], ...) need the real FunctionID, so keep a
/// way back from your client id to it.
///
/// Call from `Initialize`, before hooks can fire.
pub fn set_function_id_mapper(
    info: &ProfilerInfo,
    mapper: fn(FunctionId) -> Option<usize>,
) -> Result<()> {
    // SAFETY: `mapper_shim` is a `FunctionIDMapper2` that never unwinds and writes only
    // through the `pbHookFunction` pointer the runtime passes; the client data is a `fn`
    // pointer, valid for the life of the program.
    unsafe { info.set_function_id_mapper2(Some(mapper_shim), mapper as *mut c_void) }
}

/// The `FunctionIDMapper2` that calls the Rust mapper passed as client data.
///
/// # Safety
/// `client_data` must be a `fn(FunctionId) -> Option<usize>`; `hook` must be null or writable.
unsafe extern "system" fn mapper_shim(
    function: FunctionID,
    client_data: *mut c_void,
    hook: *mut BOOL,
) -> UINT_PTR {
    // SAFETY: `set_function_id_mapper` registers this shim only with a
    // `fn(FunctionId) -> Option<usize>` as client data.
    let mapper = unsafe {
        core::mem::transmute::<*mut c_void, fn(FunctionId) -> Option<usize>>(client_data)
    };
    let (hooked, id) = match catch_unwind(|| mapper(FunctionId(function))) {
        Ok(Some(0)) => {
            MAPPER_ZERO_IDS.fetch_add(1, Ordering::Relaxed);
            (FALSE, 0)
        }
        Ok(Some(id)) => (TRUE, id),
        Ok(None) => (FALSE, 0),
        Err(_) => {
            MAPPER_PANICS.fetch_add(1, Ordering::Relaxed);
            (FALSE, 0)
        }
    };
    if !hook.is_null() {
        // SAFETY: the runtime passes a pointer to its BOOL out-parameter.
        unsafe { *hook = hooked };
    }
    // The runtime ignores the id when `*hook` is FALSE; give it the FunctionID back anyway.
    if hooked == TRUE { id } else { function }
}

// ----- argument and return-value ranges -----

/// One contiguous piece of argument (or return value) memory, as the runtime reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArgumentRange {
    /// Address of the first byte.
    pub start: usize,
    /// Length in bytes.
    pub len: u32,
}

impl ArgumentRange {
    /// The bytes of the range.
    ///
    /// # Safety
    /// Only valid inside the hook that obtained the range (the memory is the runtime helper's
    /// register save area and the method's stack frame); the returned slice must not be used
    /// after the hook returns.
    pub unsafe fn bytes<'a>(&self) -> &'a [u8] {
        if self.start == 0 || self.len == 0 {
            return &[];
        }
        // SAFETY: the caller guarantees we are inside the hook that got the range, where the
        // runtime guarantees `len` readable bytes at `start`.
        unsafe { core::slice::from_raw_parts(self.start as *const u8, self.len as usize) }
    }

    /// The range read as a `T`, if the range is exactly `size_of::<T>()` bytes long (an `f64`
    /// argument is 8 bytes, an `f32` 4, a reference 8 ...); `None` otherwise.
    ///
    /// # Safety
    /// As [`ArgumentRange::bytes`], and every bit pattern of the right size must be a valid
    /// `T` (plain numbers: integers, floats, `#[repr(C)]` structs of them).
    pub unsafe fn read<T: Copy>(&self) -> Option<T> {
        if self.start == 0 || self.len as usize != core::mem::size_of::<T>() {
            return None;
        }
        // SAFETY: inside the hook (caller's guarantee) `len == size_of::<T>()` bytes are
        // readable at `start`; the caller guarantees any bit pattern is a valid `T`; the read
        // is unaligned-safe.
        Some(unsafe { ptr::read_unaligned(self.start as *const T) })
    }
}

const INLINE_RANGES: usize = 8;

/// The argument ranges of a call, left to right (`this` first for instance methods). Holds up
/// to 8 ranges without allocating.
#[derive(Clone, Debug)]
pub struct ArgumentRanges {
    inline: [ArgumentRange; INLINE_RANGES],
    heap: Vec<ArgumentRange>,
    len: usize,
    total_size: u32,
}

impl ArgumentRanges {
    fn empty() -> Self {
        ArgumentRanges {
            inline: [ArgumentRange::default(); INLINE_RANGES],
            heap: Vec::new(),
            len: 0,
            total_size: 0,
        }
    }

    /// The ranges.
    pub fn as_slice(&self) -> &[ArgumentRange] {
        if self.len <= INLINE_RANGES {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    /// The number of ranges (arguments, counting `this`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a method without arguments.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sum of the ranges' lengths, as the runtime reports it.
    pub fn total_size(&self) -> u32 {
        self.total_size
    }

    /// Range `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<ArgumentRange> {
        self.as_slice().get(i).copied()
    }

    /// Iterates over the ranges.
    pub fn iter(&self) -> core::slice::Iter<'_, ArgumentRange> {
        self.as_slice().iter()
    }
}

impl<'a> IntoIterator for &'a ArgumentRanges {
    type Item = &'a ArgumentRange;
    type IntoIter = core::slice::Iter<'a, ArgumentRange>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// What `GetFunctionEnter3Info` reports.
#[derive(Clone, Debug)]
pub struct EnterInfo {
    /// The frame (null unless `COR_PRF_ENABLE_FRAME_INFO` is set), for `get_function_info2`.
    pub frame: FrameInfo,
    /// The arguments (empty unless `COR_PRF_ENABLE_FUNCTION_ARGS` is set).
    pub args: ArgumentRanges,
}

/// What `GetFunctionLeave3Info` reports.
#[derive(Clone, Copy, Debug)]
pub struct LeaveInfo {
    /// The frame (null unless `COR_PRF_ENABLE_FRAME_INFO` is set).
    pub frame: FrameInfo,
    /// The return value; `None` for `void` methods and unless `COR_PRF_ENABLE_FUNCTION_RETVAL`
    /// is set.
    pub retval: Option<ArgumentRange>,
}

/// `COR_PRF_FUNCTION_ARGUMENT_INFO` with room for `INLINE_RANGES` ranges.
#[repr(C)]
struct InlineArgumentInfo {
    head: COR_PRF_FUNCTION_ARGUMENT_INFO,
    more: [COR_PRF_FUNCTION_ARGUMENT_RANGE; INLINE_RANGES - 1],
}

/// Reads `count` ranges following the header at `info`.
///
/// # Safety
/// `info` must point at a header followed by at least `count` ranges.
unsafe fn copy_ranges(
    info: *const COR_PRF_FUNCTION_ARGUMENT_INFO,
    count: usize,
    out: &mut ArgumentRanges,
) {
    // SAFETY: the caller guarantees `count` ranges after the header; `addr_of!` avoids
    // creating a reference to the 1-element array past its declared length.
    let first = unsafe { ptr::addr_of!((*info).ranges).cast::<COR_PRF_FUNCTION_ARGUMENT_RANGE>() };
    let convert = |i: usize| {
        // SAFETY: `i < count`, within the caller-guaranteed buffer.
        let r = unsafe { ptr::read(first.add(i)) };
        ArgumentRange {
            start: r.startAddress,
            len: r.length,
        }
    };
    out.len = count;
    if count <= INLINE_RANGES {
        for i in 0..count {
            out.inline[i] = convert(i);
        }
    } else {
        out.heap = (0..count).map(convert).collect();
    }
}

// ----- ICorProfilerInfo wrappers -----

impl ProfilerInfo {
    /// `ICorProfilerInfo::SetEnterLeaveFunctionHooks`: the deprecated .NET 1 hooks. Only from
    /// `Initialize`.
    ///
    /// # Safety
    /// The runtime calls the hooks from JIT'd code; each must obey the register contract of
    /// its hook kind on this platform (on x86_64 Linux, see the [`elt`](crate::elt) module),
    /// never unwind, and stay valid for the life of the process.
    pub unsafe fn set_enter_leave_function_hooks(
        &self,
        enter: Option<FunctionEnter>,
        leave: Option<FunctionLeave>,
        tailcall: Option<FunctionTailcall>,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo::SetEnterLeaveFunctionHooks";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live; the caller vouches for the hooks.
        ok(M, unsafe {
            (vt.SetEnterLeaveFunctionHooks)(self.this(), enter, leave, tailcall)
        })
    }

    /// `ICorProfilerInfo2::SetEnterLeaveFunctionHooks2`: the deprecated .NET 2 hooks. Only
    /// from `Initialize`.
    ///
    /// # Safety
    /// As [`ProfilerInfo::set_enter_leave_function_hooks`].
    pub unsafe fn set_enter_leave_function_hooks2(
        &self,
        enter: Option<FunctionEnter2>,
        leave: Option<FunctionLeave2>,
        tailcall: Option<FunctionTailcall2>,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo2::SetEnterLeaveFunctionHooks2";
        let vt = self.vt::<ICorProfilerInfo2Vtbl>(2, M)?;
        // SAFETY: `this` is live; the caller vouches for the hooks.
        ok(M, unsafe {
            (vt.SetEnterLeaveFunctionHooks2)(self.this(), enter, leave, tailcall)
        })
    }

    /// `ICorProfilerInfo3::SetEnterLeaveFunctionHooks3`: raw fast-path hooks. Only from
    /// `Initialize`. [`crate::elt::install_hooks`] is the safe way.
    ///
    /// # Safety
    /// JIT'd code calls the hooks without following the C ABI: on x86_64 Linux the enter hook
    /// gets the id in r14 and must preserve rdi, rsi, rdx, rcx, r8, r9, xmm0–xmm7 (128 bits)
    /// and the callee-saved registers; leave and tail-call get it in rdi and must preserve rax,
    /// rdx, xmm0, xmm1 and the callee-saved registers. Hooks must never unwind and must stay
    /// valid for the life of the process. `elt::enter_trampoline` and friends qualify.
    pub unsafe fn set_enter_leave_function_hooks3(
        &self,
        enter: Option<FunctionEnter3>,
        leave: Option<FunctionLeave3>,
        tailcall: Option<FunctionTailcall3>,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo3::SetEnterLeaveFunctionHooks3";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        // SAFETY: `this` is live; the caller vouches for the hooks.
        ok(M, unsafe {
            (vt.SetEnterLeaveFunctionHooks3)(self.this(), enter, leave, tailcall)
        })
    }

    /// `ICorProfilerInfo3::SetEnterLeaveFunctionHooks3WithInfo`: raw slow-path hooks. Only
    /// from `Initialize`. [`crate::elt::install_hooks_with_info`] is the safe way.
    ///
    /// # Safety
    /// The hooks are called as C functions, but on .NET Core 3.1 x86_64 Linux they must also
    /// preserve xmm2–xmm7 (the runtime's helper does not restore them); they must never unwind
    /// and must stay valid for the life of the process.
    pub unsafe fn set_enter_leave_function_hooks3_with_info(
        &self,
        enter: Option<FunctionEnter3WithInfo>,
        leave: Option<FunctionLeave3WithInfo>,
        tailcall: Option<FunctionTailcall3WithInfo>,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo3::SetEnterLeaveFunctionHooks3WithInfo";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        // SAFETY: `this` is live; the caller vouches for the hooks.
        ok(M, unsafe {
            (vt.SetEnterLeaveFunctionHooks3WithInfo)(self.this(), enter, leave, tailcall)
        })
    }

    /// `ICorProfilerInfo::SetFunctionIDMapper`: a raw mapper without client data.
    /// [`crate::elt::set_function_id_mapper`] is the safe way.
    ///
    /// # Safety
    /// The runtime calls `mapper` from the JIT on any thread: it must never unwind, must write
    /// `*pbHookFunction`, and must stay valid for the life of the process.
    pub unsafe fn set_function_id_mapper(&self, mapper: Option<FunctionIDMapper>) -> Result<()> {
        const M: &str = "ICorProfilerInfo::SetFunctionIDMapper";
        let vt = self.vt::<ICorProfilerInfoVtbl>(1, M)?;
        // SAFETY: `this` is live; the caller vouches for the mapper.
        ok(M, unsafe { (vt.SetFunctionIDMapper)(self.this(), mapper) })
    }

    /// `ICorProfilerInfo3::SetFunctionIDMapper2`: a raw mapper with client data.
    ///
    /// # Safety
    /// As [`ProfilerInfo::set_function_id_mapper`]; `client_data` must stay valid for as long
    /// as the mapper may be called (the life of the process).
    pub unsafe fn set_function_id_mapper2(
        &self,
        mapper: Option<FunctionIDMapper2>,
        client_data: *mut c_void,
    ) -> Result<()> {
        const M: &str = "ICorProfilerInfo3::SetFunctionIDMapper2";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        // SAFETY: `this` is live; the caller vouches for the mapper and its data.
        ok(M, unsafe {
            (vt.SetFunctionIDMapper2)(self.this(), mapper, client_data)
        })
    }

    /// `ICorProfilerInfo3::GetFunctionEnter3Info`: the frame and the argument ranges of the
    /// call being entered. Only inside a slow-path enter hook, with that hook's `elt`, and with
    /// the real FunctionID (not a mapper's client id). Up to 8 arguments need no allocation.
    ///
    /// The ranges point into the runtime helper's save area and the caller's stack; read them
    /// with [`ArgumentRange::bytes`] / [`ArgumentRange::read`] before the hook returns.
    pub fn get_function_enter3_info(
        &self,
        function: FunctionId,
        elt: EltInfo,
    ) -> Result<EnterInfo> {
        const M: &str = "ICorProfilerInfo3::GetFunctionEnter3Info";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut frame: COR_PRF_FRAME_INFO = 0;
        let mut out = ArgumentRanges::empty();
        let mut buf = InlineArgumentInfo {
            head: COR_PRF_FUNCTION_ARGUMENT_INFO::default(),
            more: [COR_PRF_FUNCTION_ARGUMENT_RANGE::default(); INLINE_RANGES - 1],
        };
        let mut size = core::mem::size_of::<InlineArgumentInfo>() as ULONG;
        // SAFETY: `this` is live; `buf` has `size` writable bytes; the caller passes the `elt`
        // of the running hook (documented requirement).
        let hr = unsafe {
            (vt.GetFunctionEnter3Info)(
                self.this(),
                function.0,
                elt.0,
                &mut frame,
                &mut size,
                &mut buf.head,
            )
        };
        if hr >= 0 {
            let count = (buf.head.numRanges as usize).min(INLINE_RANGES);
            out.total_size = buf.head.totalArgumentSize;
            // SAFETY: `buf` holds a header and `INLINE_RANGES` ranges; `count` is clamped.
            unsafe { copy_ranges(&buf.head, count, &mut out) };
            return Ok(EnterInfo {
                frame: FrameInfo(frame),
                args: out,
            });
        }
        if hr != hresult::E_NOT_SUFFICIENT_BUFFER
            || (size as usize) <= core::mem::size_of::<InlineArgumentInfo>()
        {
            return Err(Error::Failed {
                method: M,
                hr: HResult(hr),
            });
        }
        // More than INLINE_RANGES arguments: a heap buffer of `size` bytes, 8-byte aligned.
        let mut big = vec![0u64; (size as usize).div_ceil(8)];
        let capacity = (big.len() * 8) as ULONG;
        let mut size2 = capacity;
        let head = big.as_mut_ptr().cast::<COR_PRF_FUNCTION_ARGUMENT_INFO>();
        // SAFETY: `head` points at `capacity` writable, aligned bytes.
        let hr = unsafe {
            (vt.GetFunctionEnter3Info)(self.this(), function.0, elt.0, &mut frame, &mut size2, head)
        };
        ok(M, hr)?;
        // SAFETY: `head` is the buffer the runtime just filled.
        let (count, total) = unsafe { ((*head).numRanges as usize, (*head).totalArgumentSize) };
        let fits =
            (capacity as usize - 8) / core::mem::size_of::<COR_PRF_FUNCTION_ARGUMENT_RANGE>();
        out.total_size = total;
        // SAFETY: the buffer holds a header and `fits` ranges; `count` is clamped to it.
        unsafe { copy_ranges(head, count.min(fits), &mut out) };
        Ok(EnterInfo {
            frame: FrameInfo(frame),
            args: out,
        })
    }

    /// `ICorProfilerInfo3::GetFunctionLeave3Info`: the frame and the return value of the call
    /// returning. Only inside a slow-path leave hook, with that hook's `elt` and the real
    /// FunctionID. Does not allocate.
    ///
    /// Runtime bug on .NET Core 3.1 x86_64 Linux (measured): a struct returned in two
    /// registers (e.g. two doubles in xmm0:xmm1, or rax:rdx) is reported as the right length
    /// at the wrong address (the helper's saved rax and the slot after it), so its bytes are
    /// garbage. Scalar returns (integers, references, `float`, `double`) and structs returned
    /// through a hidden buffer are right.
    pub fn get_function_leave3_info(
        &self,
        function: FunctionId,
        elt: EltInfo,
    ) -> Result<LeaveInfo> {
        const M: &str = "ICorProfilerInfo3::GetFunctionLeave3Info";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut frame: COR_PRF_FRAME_INFO = 0;
        let mut range = COR_PRF_FUNCTION_ARGUMENT_RANGE::default();
        // SAFETY: `this` is live; the out-params are valid locals; the caller passes the `elt`
        // of the running hook.
        ok(M, unsafe {
            (vt.GetFunctionLeave3Info)(self.this(), function.0, elt.0, &mut frame, &mut range)
        })?;
        let retval = (range.length != 0).then_some(ArgumentRange {
            start: range.startAddress,
            len: range.length,
        });
        Ok(LeaveInfo {
            frame: FrameInfo(frame),
            retval,
        })
    }

    /// `ICorProfilerInfo3::GetFunctionTailcall3Info`: the frame of the call leaving through a
    /// tail call. Only inside a slow-path tail-call hook, with that hook's `elt` and the real
    /// FunctionID; needs `COR_PRF_ENABLE_FRAME_INFO`.
    pub fn get_function_tailcall3_info(
        &self,
        function: FunctionId,
        elt: EltInfo,
    ) -> Result<FrameInfo> {
        const M: &str = "ICorProfilerInfo3::GetFunctionTailcall3Info";
        let vt = self.vt::<ICorProfilerInfo3Vtbl>(3, M)?;
        let mut frame: COR_PRF_FRAME_INFO = 0;
        // SAFETY: `this` is live; `frame` is a valid local; the caller passes the `elt` of the
        // running hook.
        ok(M, unsafe {
            (vt.GetFunctionTailcall3Info)(self.this(), function.0, elt.0, &mut frame)
        })?;
        Ok(FrameInfo(frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: FunctionId) -> Option<usize> {
        None
    }
    fn zero(_: FunctionId) -> Option<usize> {
        Some(0)
    }
    fn plus_one(f: FunctionId) -> Option<usize> {
        Some(f.0 + 1)
    }
    fn panics(_: FunctionId) -> Option<usize> {
        panic!("mapper panic (expected by the test)")
    }

    fn map(mapper: fn(FunctionId) -> Option<usize>, function: usize) -> (BOOL, usize) {
        let mut hook: BOOL = 7;
        // SAFETY: the client data is a mapper fn, as `set_function_id_mapper` passes it.
        let id = unsafe { mapper_shim(function, mapper as *mut c_void, &mut hook) };
        (hook, id)
    }

    #[test]
    fn mapper_shim_maps_filters_and_rejects_zero() {
        assert_eq!(map(plus_one, 0x1000), (TRUE, 0x1001));
        assert_eq!(map(none, 0x1000), (FALSE, 0x1000));
        let before = stats();
        assert_eq!(map(zero, 0x1000), (FALSE, 0x1000));
        assert_eq!(map(panics, 0x2000), (FALSE, 0x2000));
        let after = stats();
        assert!(after.mapper_zero_ids > before.mapper_zero_ids);
        assert!(after.mapper_panics > before.mapper_panics);
    }

    #[test]
    fn argument_ranges_read_exact_sizes_only() {
        let value = 80.625f64;
        let range = ArgumentRange {
            start: &value as *const f64 as usize,
            len: 8,
        };
        // SAFETY: `value` is alive for the whole test.
        unsafe {
            assert_eq!(range.read::<f64>(), Some(80.625));
            assert_eq!(range.read::<f32>(), None);
            assert_eq!(range.bytes(), &80.625f64.to_ne_bytes());
            assert_eq!(ArgumentRange::default().bytes(), &[] as &[u8]);
        }
    }

    #[test]
    fn copy_ranges_inline_and_heap() {
        // A header (numRanges = 12, totalArgumentSize = 96) and 12 ranges of 16 bytes.
        let mut raw = [0u64; 1 + 2 * 12];
        raw[0] = 12 | (96u64 << 32);
        for i in 0..12 {
            raw[1 + 2 * i] = 0x1000 + i as u64;
            raw[2 + 2 * i] = 8;
        }
        let head = raw.as_ptr().cast::<COR_PRF_FUNCTION_ARGUMENT_INFO>();
        let expected: Vec<ArgumentRange> = (0..12)
            .map(|i| ArgumentRange {
                start: 0x1000 + i,
                len: 8,
            })
            .collect();
        let mut small = ArgumentRanges::empty();
        // SAFETY: `raw` holds a header and 12 ranges.
        unsafe { copy_ranges(head, 3, &mut small) };
        assert_eq!(small.as_slice(), &expected[..3]);
        assert!(small.heap.is_empty());
        let mut big = ArgumentRanges::empty();
        // SAFETY: as above.
        unsafe { copy_ranges(head, 12, &mut big) };
        assert_eq!(big.as_slice(), &expected[..]);
        assert_eq!(big.len(), 12);
        assert_eq!(big.iter().count(), 12);
    }

    #[test]
    fn handlers_default_to_none() {
        assert!(EltHandlers::default().enter.is_none());
        assert!(EltInfoHandlers::default().tailcall.is_none());
    }
}
