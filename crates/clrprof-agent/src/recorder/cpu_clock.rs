//! Per-thread CPU clocks that interrupt a thread after each period of CPU time it uses: what
//! triggers sample mode's CPU samples. A thread that does not run is never interrupted.
//!
//! Two clocks, chosen once per session by [`choose`]:
//!
//! - **perf task-clock** (preferred): a `perf_event_open` software event counting the thread's
//!   own CPU time (`PERF_COUNT_SW_TASK_CLOCK`, user mode only, which is what an unprivileged
//!   process may ask for its own threads), with an overflow every period. The overflow signal
//!   goes to the thread itself (`F_SETSIG` = `SIGPROF`, `F_SETOWN_EX` with `F_OWNER_TID`),
//!   and the event stops after each overflow (`event_limit` 1) until the handler re-arms it
//!   with `PERF_EVENT_IOC_REFRESH`. The kernel's high-resolution timer behind it keeps the
//!   period asked: 1 kHz gives 1,000 samples per CPU second.
//! - **thread CPU-time timer** (fallback, for kernels or containers that refuse perf events): a
//!   POSIX timer on the thread's CPU clock (`timer_create` on its `CLOCK_THREAD_CPUTIME_ID`,
//!   `SIGEV_THREAD_ID`), as async-profiler's `ctimer` and Datadog's .NET profiler do. Such
//!   timers are checked at the scheduler tick only: a kernel built with `HZ=250` delivers at
//!   most 250 signals per CPU second whatever the period. Each sample's weight is the CPU the
//!   thread really used since its previous one, so the figures stay right; only the resolution
//!   drops, and the report says which clock was used and the rate reached.
//!
//! Each armed thread holds one file descriptor (perf) or one POSIX timer. The runtime raises
//! its soft descriptor limit to the hard limit at startup, and the descriptors are
//! close-on-exec, so children never see them. Everything here except [`on_signal`] runs on the
//! sampler thread or on the thread being armed; [`on_signal`] is async-signal-safe.

use core::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use super::threads::ThreadSlot;

/// Which clock triggers CPU samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    /// A perf task-clock event per thread.
    PerfTaskClock,
    /// A POSIX timer on each thread's CPU-time clock.
    ThreadCpuTimer,
}

impl ClockKind {
    /// The name written in the trace (`SamplerInfo.cpu_clock`).
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::PerfTaskClock => "perf task-clock",
            ClockKind::ThreadCpuTimer => "thread CPU-time timer",
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            ClockKind::PerfTaskClock => 1,
            ClockKind::ThreadCpuTimer => 2,
        }
    }

    fn from_u8(v: u8) -> Option<ClockKind> {
        match v {
            1 => Some(ClockKind::PerfTaskClock),
            2 => Some(ClockKind::ThreadCpuTimer),
            _ => None,
        }
    }
}

/// The session's clock (0: none chosen, CPU samples off).
static CLOCK: AtomicU8 = AtomicU8::new(0);
/// The session's sampling period, in nanoseconds of a thread's CPU time.
static PERIOD_NS: AtomicU64 = AtomicU64::new(1_000_000);

/// The session's mean sampling period, in nanoseconds of a thread's CPU time.
pub fn period_ns() -> u64 {
    PERIOD_NS.load(Ordering::Relaxed)
}

/// The next period, drawn uniformly from [0.5, 1.5] x the mean with the thread's generator
/// `rng` (xorshift). A fixed period falls into step with a program whose work is periodic (a
/// loop alternating two calls of fixed length), and one of them then gets far more samples than
/// its share of the CPU (measured: 89% of the samples for 85% of the time); drawing each
/// period breaks that. Async-signal-safe.
pub fn next_period(rng: &core::sync::atomic::AtomicU64) -> u64 {
    let mut x = rng.load(Ordering::Relaxed) | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng.store(x, Ordering::Relaxed);
    let mean = period_ns().max(2);
    mean / 2 + x % mean
}

/// The shortest period a clock is set to: perf's own floor for timer-driven software events.
pub const MIN_PERIOD_NS: u64 = 10_000;

/// The period to set on `slot`'s clock from its handler, which started at the thread's CPU
/// time `cpu_now`: the next draw counted from when this signal was due, not from now. A
/// signal reaches its handler some microseconds of CPU after the clock expired (measured: 30
/// us on average in a VM), and counting each period from the handler would lengthen every
/// period by that much (measured: 967 signals per second of CPU at 1000/s asked).
/// Async-signal-safe.
pub fn schedule_next(slot: &ThreadSlot, cpu_now: u64) -> u64 {
    let drawn = next_period(&slot.rng);
    let due = slot.due_cpu.load(Ordering::Relaxed);
    let target = if due == 0 {
        cpu_now + drawn
    } else {
        (due + drawn).max(cpu_now + MIN_PERIOD_NS)
    };
    slot.due_cpu.store(target, Ordering::Relaxed);
    target - cpu_now
}

/// The clock [`choose`] picked, if CPU sampling is on.
pub fn current() -> Option<ClockKind> {
    ClockKind::from_u8(CLOCK.load(Ordering::Acquire))
}

/// Turns CPU sampling off: threads registered from now on are not armed.
pub fn clear() {
    CLOCK.store(0, Ordering::Release);
}

/// An armed clock: a perf event's file descriptor or a POSIX timer's kernel id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Armed {
    /// The clock.
    pub kind: ClockKind,
    /// Descriptor or timer id.
    pub handle: i32,
}

impl Armed {
    /// The slot's armed clock, if it has one. Async-signal-safe.
    pub fn of(slot: &ThreadSlot) -> Option<Armed> {
        slot.clock().and_then(Armed::decode)
    }

    /// The value a thread slot keeps: the kind's code above the handle.
    fn encode(self) -> u64 {
        (u64::from(self.kind.to_u8()) << 32) | u64::from(self.handle as u32)
    }

    fn decode(value: u64) -> Option<Armed> {
        let kind = ClockKind::from_u8(u8::try_from(value >> 32).ok()?)?;
        Some(Armed {
            kind,
            handle: value as u32 as i32,
        })
    }
}

/// Arms the session's clock on `slot`'s thread, unless it was armed (or tried) already or
/// CPU sampling is off. Not async-signal-safe; called by the thread itself when it registers
/// and by the sampler for threads it adopted.
pub fn arm_slot(slot: &ThreadSlot, signal: i32) {
    let Some(kind) = current() else {
        return;
    };
    if !slot.begin_arming() {
        return;
    }
    let tid = slot.tid.load(Ordering::Acquire);
    let cpu = super::sys::thread_cpu_ns(tid).unwrap_or(0);
    slot.cpu_at_arm.store(cpu, Ordering::Release);
    slot.rng.store(
        u64::from(tid).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        Ordering::Relaxed,
    );
    let first = next_period(&slot.rng);
    slot.due_cpu
        .store(if cpu == 0 { 0 } else { cpu + first }, Ordering::Relaxed);
    // The clock is published in the slot while it is still stopped, and started only then:
    // its first signal can come one period after it starts (sooner than a preempted sampler
    // thread gets to publish it), and a handler that finds no clock in the slot does not
    // re-arm it, which would leave it stopped until the sampler notices.
    let opened = open(kind, tid, first, signal);
    slot.finish_arming(opened.map(Armed::encode));
    if let Some(armed) = opened
        && !rearm(armed, first)
    {
        // It could not be started: the slot is given up like one whose clock failed to open.
        if let Some(armed) = slot.take_clock().and_then(Armed::decode) {
            disarm(armed);
        }
        if slot.begin_arming() {
            slot.finish_arming(None);
        }
    }
    if current().is_none() {
        // Sampling stopped while this clock was being armed, after the sampler's last pass:
        // nobody else will disarm it.
        disarm_slot(slot);
    }
}

/// Stops `slot`'s clock, if it has one.
pub fn disarm_slot(slot: &ThreadSlot) {
    if let Some(armed) = slot.take_clock().and_then(Armed::decode) {
        disarm(armed);
    }
}

/// What made the sampling signal arrive, as its `siginfo` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A perf event overflowed (the event is stopped until re-armed).
    Perf,
    /// A POSIX timer expired.
    Timer,
    /// Another thread sent it (`tgkill`: the sampler asking where a thread waits).
    Sent,
    /// Anything else (the kernel could not queue the signal's details).
    Unknown,
}

/// Reads the origin of a signal from the `si_code` of its `siginfo`. Async-signal-safe.
pub fn origin(si_code: i32) -> Origin {
    // The perf overflow signal comes through the file-descriptor signal path with the band of
    // the wake-up: POLL_HUP once the event stopped at its limit (POLL_IN otherwise).
    // Linux's si_code values (<asm-generic/siginfo.h>).
    const POLL_IN: i32 = 1;
    const POLL_HUP: i32 = 6;
    const SI_USER: i32 = 0;
    const SI_TIMER: i32 = -2;
    const SI_TKILL: i32 = -6;
    match si_code {
        POLL_IN | POLL_HUP => Origin::Perf,
        SI_TIMER => Origin::Timer,
        SI_TKILL | SI_USER => Origin::Sent,
        _ => Origin::Unknown,
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Armed, CLOCK, ClockKind, MIN_PERIOD_NS, Ordering};
    use perf_event_open_sys as perf;

    // fcntl commands of Linux's <fcntl.h> (glibc's `_GNU_SOURCE` part) that the libc crate
    // does not define for glibc targets: which signal a descriptor's readiness sends, and to
    // which thread.
    const F_SETSIG: libc::c_int = 10;
    const F_SETOWN_EX: libc::c_int = 15;
    const F_OWNER_TID: libc::c_int = 0;

    /// `struct f_owner_ex`.
    #[repr(C)]
    struct FOwnerEx {
        kind: libc::c_int,
        pid: libc::pid_t,
    }

    /// The kernel's clock id of thread `tid`'s CPU clock: `(~tid << 3) | CPUCLOCK_SCHED` with
    /// the per-thread bit (`MAKE_THREAD_CPUCLOCK`).
    fn thread_clock_id(tid: u32) -> libc::clockid_t {
        ((!(tid as libc::clockid_t)) << 3) | 6
    }

    /// Opens a stopped perf task-clock event on thread `tid` whose overflow every `period_ns`
    /// of its CPU time sends `signal` to that thread. Returns the descriptor.
    fn open_perf(tid: u32, period_ns: u64, signal: i32) -> Option<i32> {
        let mut attr = perf::bindings::perf_event_attr {
            type_: perf::bindings::PERF_TYPE_SOFTWARE,
            size: core::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
            config: u64::from(perf::bindings::PERF_COUNT_SW_TASK_CLOCK),
            ..Default::default()
        };
        attr.__bindgen_anon_1.sample_period = period_ns.max(MIN_PERIOD_NS);
        attr.set_disabled(1);
        attr.set_exclude_kernel(1);
        attr.set_exclude_hv(1);
        // SAFETY: `attr` is a valid, initialized perf_event_attr whose `size` matches its
        // type; the call reads it and returns a new descriptor or -1.
        let fd = unsafe {
            perf::perf_event_open(
                &mut attr,
                tid as libc::pid_t,
                -1,
                -1,
                libc::c_ulong::from(perf::bindings::PERF_FLAG_FD_CLOEXEC),
            )
        };
        if fd < 0 {
            return None;
        }
        let owner = FOwnerEx {
            kind: F_OWNER_TID,
            pid: tid as libc::pid_t,
        };
        // SAFETY: fcntl on a descriptor we own, with plain integer arguments and a pointer to
        // a valid `struct f_owner_ex` for F_SETOWN_EX.
        let routed = unsafe {
            libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC | libc::O_NONBLOCK) == 0
                && libc::fcntl(fd, F_SETSIG, signal) == 0
                && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
        };
        if !routed {
            // SAFETY: closing the descriptor opened above, used nowhere else.
            unsafe { libc::close(fd) };
            return None;
        }
        Some(fd)
    }

    /// Starts (or restarts) a perf event for one more overflow. Async-signal-safe.
    pub fn refresh_perf(fd: i32) -> bool {
        // SAFETY: an ioctl with an integer argument on a perf descriptor; a stale descriptor
        // only makes it fail.
        unsafe { perf::ioctls::REFRESH(fd, 1) == 0 }
    }

    /// Arms `armed` for one more signal after `period_ns` of its thread's CPU time.
    /// Async-signal-safe (two system calls at most).
    pub fn rearm(armed: Armed, period_ns: u64) -> bool {
        match armed.kind {
            ClockKind::PerfTaskClock => {
                let period = period_ns.max(MIN_PERIOD_NS);
                // SAFETY: PERF_EVENT_IOC_PERIOD reads a u64 through the pointer passed as the
                // ioctl's argument; `period` lives across the call.
                unsafe { perf::ioctls::PERIOD(armed.handle, &period as *const u64 as u64) };
                refresh_perf(armed.handle)
            }
            ClockKind::ThreadCpuTimer => set_timer(armed.handle, period_ns),
        }
    }

    /// Sets a POSIX timer to expire once, after `period_ns`.
    fn set_timer(id: i32, period_ns: u64) -> bool {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (period_ns % 1_000_000_000).max(1) as libc::c_long,
            },
        };
        // SAFETY: arms a timer of this process with a valid itimerspec; no old value asked. A
        // stale id only makes it fail.
        unsafe {
            libc::syscall(
                libc::SYS_timer_settime,
                id,
                0,
                &spec as *const libc::itimerspec,
                core::ptr::null_mut::<libc::itimerspec>(),
            ) == 0
        }
    }

    /// Creates a stopped POSIX timer on thread `tid`'s CPU clock that, once set, sends `signal`
    /// to that thread (the handler sets each next expiry). Returns the kernel's timer id.
    fn create_timer(tid: u32, signal: i32) -> Option<i32> {
        // SAFETY: a zeroed sigevent is valid plain data; the fields we need are set below.
        let mut event: libc::sigevent = unsafe { core::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signal;
        event.sigev_notify_thread_id = tid as libc::c_int;
        let mut id: libc::c_int = 0;
        // SAFETY: the raw system call (not glibc's wrapper, whose timer_t hides the kernel id)
        // reads `event` and writes the new timer's id into `id`; both are valid locals.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_timer_create,
                thread_clock_id(tid),
                &mut event as *mut libc::sigevent,
                &mut id as *mut libc::c_int,
            )
        };
        (rc == 0).then_some(id)
    }

    fn delete_timer(id: i32) {
        // SAFETY: deletes a timer of this process by id; a stale id only makes it fail.
        unsafe { libc::syscall(libc::SYS_timer_delete, id) };
    }

    /// Picks the clock for this session: the first of `allowed` that works on the calling
    /// thread (perf task-clock where the kernel allows it, else the CPU-time timer), with
    /// `period_ns` of CPU time between samples. `None` if none works.
    pub fn choose(allowed: &[ClockKind], period_ns: u64, signal: i32) -> Option<ClockKind> {
        let tid = crate::recorder::sys::gettid();
        let works = |kind: ClockKind| match kind {
            ClockKind::PerfTaskClock => open_perf(tid, 1_000_000_000, signal).map(|fd| {
                // SAFETY: closing the probe's descriptor; it was never enabled.
                unsafe { libc::close(fd) };
            }),
            ClockKind::ThreadCpuTimer => create_timer(tid, signal).map(delete_timer),
        };
        let kind = allowed.iter().copied().find(|&k| works(k).is_some())?;
        super::PERIOD_NS.store(period_ns, Ordering::Relaxed);
        CLOCK.store(kind.to_u8(), Ordering::Release);
        Some(kind)
    }

    /// Opens a stopped `kind` clock on thread `tid` whose signal, once started with
    /// [`rearm`], comes after `period_ns` of its CPU time.
    pub fn open(kind: ClockKind, tid: u32, period_ns: u64, signal: i32) -> Option<Armed> {
        let handle = match kind {
            ClockKind::PerfTaskClock => open_perf(tid, period_ns, signal)?,
            ClockKind::ThreadCpuTimer => create_timer(tid, signal)?,
        };
        Some(Armed { kind, handle })
    }

    /// Stops and frees an armed clock. Signals it already sent may still be pending.
    pub fn disarm(armed: Armed) {
        match armed.kind {
            // SAFETY: closes a descriptor this module opened and nobody else uses.
            ClockKind::PerfTaskClock => unsafe {
                libc::close(armed.handle);
            },
            ClockKind::ThreadCpuTimer => delete_timer(armed.handle),
        }
    }

    /// The value of a perf event's counter (its thread's CPU time while the event was
    /// enabled): it stops growing while the event is stopped, which is how the sampler
    /// notices an event whose re-arming was missed.
    pub fn perf_count(fd: i32) -> Option<u64> {
        let mut value = 0u64;
        // SAFETY: reads 8 bytes into a local u64 from a perf descriptor.
        let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
        (n == 8).then_some(value)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Armed, ClockKind};

    /// No per-thread CPU clocks on this platform.
    pub fn choose(_allowed: &[ClockKind], _period_ns: u64, _signal: i32) -> Option<ClockKind> {
        None
    }

    /// Nothing to open.
    pub fn open(_kind: ClockKind, _tid: u32, _period_ns: u64, _signal: i32) -> Option<Armed> {
        None
    }

    /// Nothing to disarm.
    pub fn disarm(_armed: Armed) {}

    /// Nothing to re-arm.
    pub fn refresh_perf(_fd: i32) -> bool {
        false
    }

    /// Nothing to re-arm.
    pub fn rearm(_armed: Armed, _period_ns: u64) -> bool {
        false
    }

    /// No perf events.
    pub fn perf_count(_fd: i32) -> Option<u64> {
        None
    }
}

pub use imp::{choose, disarm, open, perf_count, rearm, refresh_perf};
