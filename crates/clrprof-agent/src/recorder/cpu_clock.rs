//! Per-thread CPU clocks that interrupt a thread after each period of CPU time it uses: what
//! triggers sample mode's CPU samples. A thread that does not run is never interrupted.
//!
//! Two clocks:
//!
//! - **thread CPU-time timer**: a POSIX timer on the thread's CPU clock (`timer_create` on its
//!   `CLOCK_THREAD_CPUTIME_ID`, `SIGEV_THREAD_ID`), as async-profiler's `ctimer`, Go's
//!   runtime/pprof and Datadog's .NET profiler do. It counts user and system time, costs
//!   nothing when its thread is switched in or out, and its signal is delivered on the return
//!   to user space, so time in the kernel (page faults, system calls) is charged to the user
//!   frame that entered it. The kernel checks such timers at its scheduler tick only: a kernel
//!   built with `HZ=250` delivers at most 250 signals per CPU second whatever the period.
//! - **perf task-clock**: a `perf_event_open` software event counting the thread's CPU time
//!   (`PERF_COUNT_SW_TASK_CLOCK`) with an overflow every period: the period asked, 1 kHz and
//!   more. It counts kernel time too where the system allows it (`perf_event_paranoid` <= 1,
//!   or `CAP_PERFMON`); elsewhere only user time (the kernel drops a period that ends in kernel
//!   mode). The overflow signal goes to the thread itself (`F_SETSIG` = `SIGPROF`,
//!   `F_SETOWN_EX` with `F_OWNER_TID`). The event runs on from one overflow to the next: the
//!   handler touches it only now and then, to draw its period again ([`after_signal`]). Its
//!   price is paid on every switch of its thread: the kernel schedules the event out and in
//!   and cancels and starts its high-resolution timer (measured here: 4-5 us per switch, and
//!   40 us more per thread created), which made a server whose threads switch thousands of
//!   times a second pay 1.5x its CPU per request. Any change to the event from its thread
//!   costs as much (the kernel stops and starts that timer with interrupts off): an event
//!   stopped at each overflow and started again by the handler (`PERF_EVENT_IOC_PERIOD`, then
//!   `PERF_EVENT_IOC_REFRESH`) cost the handler 6.7 us of its 9.5 in this machine's VM, the
//!   event left running 2.8 in all (`bench/programs/Fib.cs` at 1 kHz, medians of 4 runs).
//!
//! The default ([`Policy::Adaptive`]) takes the best of both, since a perf event's cost is
//! per switch: every thread starts on the timer, which costs nothing; the sampler moves a
//! thread that runs long between switches (one that computes on and on) to a perf event
//! (kernel time included), which costs it next to nothing, and a thread that is switched
//! often for its CPU (a server's pool thread, waking for every request; a thread spinning on
//! `sched_yield`) back to the timer ([`crate::sampler`]). Where perf events that count
//! kernel time are refused, every thread is on the timer. `--cpu-clock perf` and
//! `--cpu-clock timer` fix one clock for every thread. Each sample's weight is the CPU its
//! thread really used since its previous one, whichever clock took it, so the figures stay
//! right; only the resolution differs, and the report says which clocks ran and the rate
//! reached.
//!
//! Each armed thread holds one file descriptor (perf) or one POSIX timer. The runtime raises
//! its soft descriptor limit to the hard limit at startup, and the descriptors are
//! close-on-exec, so children never see them. Everything here except [`on_signal`] runs on the
//! sampler thread or on the thread being armed; [`on_signal`] is async-signal-safe.

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

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

/// Which clocks a session's threads get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Every thread on this clock.
    Fixed(ClockKind),
    /// Threads on the CPU-time timer, those that run long between switches on a perf event
    /// (see the module's documentation).
    Adaptive,
}

impl Policy {
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn to_u8(self) -> u8 {
        match self {
            Policy::Fixed(kind) => kind.to_u8(),
            Policy::Adaptive => 3,
        }
    }

    fn from_u8(v: u8) -> Option<Policy> {
        match v {
            3 => Some(Policy::Adaptive),
            v => ClockKind::from_u8(v).map(Policy::Fixed),
        }
    }

    /// The clock a thread gets when it is armed.
    pub fn first_clock(self) -> ClockKind {
        match self {
            Policy::Fixed(kind) => kind,
            // A perf event costs a thread at every switch; until the thread is seen to run
            // long between switches, the timer, which costs it nothing.
            Policy::Adaptive => ClockKind::ThreadCpuTimer,
        }
    }
}

/// The clocks a session chose (see [`choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chosen {
    /// Which clocks the threads get.
    pub policy: Policy,
    /// Whether perf events count the time threads spend in the kernel.
    pub perf_kernel: bool,
}

impl Chosen {
    /// What the trace says ran (`SamplerInfo.cpu_clock`).
    pub fn name(self) -> &'static str {
        match (self.policy, self.perf_kernel) {
            (Policy::Adaptive, _) => {
                "CPU-time timers, perf task-clock on threads that run long between switches"
            }
            (Policy::Fixed(ClockKind::ThreadCpuTimer), _) => "thread CPU-time timer",
            (Policy::Fixed(ClockKind::PerfTaskClock), true) => "perf task-clock",
            (Policy::Fixed(ClockKind::PerfTaskClock), false) => "perf task-clock (user time only)",
        }
    }
}

/// The session's policy (0: none chosen, CPU samples off).
static POLICY: AtomicU8 = AtomicU8::new(0);
/// Whether the session's perf events count kernel time.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
static PERF_KERNEL: AtomicBool = AtomicBool::new(false);
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

/// Signals of a perf event between two changes of its period (see [`after_signal`]).
const PERF_STRETCH: u32 = 8;

/// What the handler does to `slot`'s clock `armed` after a signal of it, the thread's CPU time
/// having been `cpu_now` when the handler started. A CPU-time timer fires once: it is set
/// again, for the next draw counted from when this signal was due ([`schedule_next`]). A perf
/// event runs on at the period it has for [`PERF_STRETCH`] signals, then gets another: a
/// fixed period falls into step with a periodic program (see [`next_period`]), and a period
/// that changes every few signals breaks the step as well (each stretch starts at a random
/// point of the program's cycle, and its samples are a random period apart), at an eighth of
/// the cost. Stretches come in pairs, a draw then its mirror around the mean, so that each
/// pair takes its signals at exactly the rate asked (draws alone left a second's rate 3.5% off
/// on average). Each new period starts counting when the handler sets it, so the time from
/// the overflow to the handler (tens of microseconds in a VM) is lost once per stretch: about
/// 4 signals in 1,000 fewer than asked. Async-signal-safe; false if the clock could not be
/// set.
pub fn after_signal(slot: &ThreadSlot, armed: Armed, cpu_now: u64) -> bool {
    match armed.kind {
        ClockKind::ThreadCpuTimer => imp::start(armed, schedule_next(slot, cpu_now)),
        ClockKind::PerfTaskClock => {
            let left = slot.stretch_left.load(Ordering::Relaxed);
            if left > 1 {
                slot.stretch_left.store(left - 1, Ordering::Relaxed);
                return true;
            }
            imp::set_perf_period(armed.handle, next_stretch(slot))
        }
    }
}

/// The period of `slot`'s perf event's next stretch: the mirror of the last draw around the
/// mean if it is due, else a new draw. Async-signal-safe.
fn next_stretch(slot: &ThreadSlot) -> u64 {
    match slot.mirror_ns.swap(0, Ordering::Relaxed) {
        0 => {
            let drawn = next_period(&slot.rng);
            begin_pair(slot, drawn);
            drawn
        }
        mirror => {
            slot.stretch_left.store(PERF_STRETCH, Ordering::Relaxed);
            mirror
        }
    }
}

/// Makes `drawn` the period of the first stretch of a pair on `slot`'s perf event, its mirror
/// around the mean the next one's. Async-signal-safe.
fn begin_pair(slot: &ThreadSlot, drawn: u64) {
    slot.stretch_left.store(PERF_STRETCH, Ordering::Relaxed);
    slot.mirror_ns.store(
        (2 * period_ns()).saturating_sub(drawn).max(1),
        Ordering::Relaxed,
    );
}

/// Starts `slot`'s clock `armed` (see [`start`]), its first signal after `period_ns`; a perf
/// event's first pair of stretches starts with that period.
pub fn start_slot(slot: &ThreadSlot, armed: Armed, period_ns: u64) -> bool {
    if armed.kind == ClockKind::PerfTaskClock {
        begin_pair(slot, period_ns);
    }
    start(armed, period_ns)
}

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

/// The policy [`choose`] picked, if CPU sampling is on.
pub fn current() -> Option<Policy> {
    Policy::from_u8(POLICY.load(Ordering::Acquire))
}

/// Turns CPU sampling off: threads registered from now on are not armed.
pub fn clear() {
    POLICY.store(0, Ordering::Release);
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
pub fn arm_slot(slot: &'static ThreadSlot, signal: i32) {
    let Some(kind) = current().map(Policy::first_clock) else {
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
    // set it again, which would leave a timer unset until the sampler notices.
    let opened = open_for(slot, kind, tid, first, signal);
    slot.finish_arming(opened.map(Armed::encode));
    if let Some(armed) = opened
        && !start_slot(slot, armed, first)
    {
        // It could not be started: the slot is given up like one whose clock failed to open.
        if let Some(armed) = slot.take_clock().and_then(Armed::decode) {
            retire(slot, armed);
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

/// Moves `slot`'s thread from its armed clock to a `to` clock, its next period counted from
/// the thread's CPU time `cpu_now`. Called by the sampler only (the thread's handler only
/// sees to the clock it finds in the slot; a signal of the old clock still on its way is a
/// CPU sample all the same). Returns false, leaving the old clock, if the new one could not
/// be opened.
pub fn switch_slot(slot: &'static ThreadSlot, to: ClockKind, cpu_now: u64, signal: i32) -> bool {
    let Some(old) = Armed::of(slot) else {
        return false;
    };
    if old.kind == to {
        return true;
    }
    let tid = slot.tid.load(Ordering::Acquire);
    let period = next_period(&slot.rng);
    let Some(new) = open_for(slot, to, tid, period, signal) else {
        return false;
    };
    if !slot.replace_clock(old.encode(), new.encode()) {
        // Disarmed meanwhile (the thread ended, or sampling stopped).
        retire(slot, new);
        return false;
    }
    slot.due_cpu.store(cpu_now + period, Ordering::Relaxed);
    let started = start_slot(slot, new, period);
    retire(slot, old);
    if !started {
        disarm_slot(slot);
    }
    started
}

/// Stops `slot`'s clock, if it has one.
pub fn disarm_slot(slot: &'static ThreadSlot) {
    if let Some(armed) = slot.take_clock().and_then(Armed::decode) {
        retire(slot, armed);
    }
}

/// Opens a stopped `kind` clock for `slot`'s thread `tid`; a perf event's ring is published
/// in the slot (before the caller publishes the clock).
fn open_for(
    slot: &'static ThreadSlot,
    kind: ClockKind,
    tid: u32,
    period_ns: u64,
    signal: i32,
) -> Option<Armed> {
    let (armed, ring) = open(kind, tid, period_ns, signal)?;
    if ring != 0 {
        slot.perf_ring.store(ring, Ordering::SeqCst);
    }
    Some(armed)
}

/// How long [`retire`] waits for a thread to leave its signal handler before it leaves the
/// freeing of a perf event to [`reap_retired`].
const HANDLER_WAIT_NS: u64 = 2_000_000;

/// Perf events taken out of a slot while its thread was in its handler (preempted there, on a
/// busy machine): stopped, their descriptor and ring to be freed once the thread is out.
static RETIRED: std::sync::Mutex<Vec<(&'static ThreadSlot, Armed, usize)>> =
    std::sync::Mutex::new(Vec::new());

/// Whether `slot`'s thread is out of its signal handler, waiting up to `wait_ns` for it: a
/// handler that started before the slot's clock changed may still use the old clock's
/// resources; one that started after sees the new clock (both sides order these steps
/// sequentially consistently).
fn out_of_handler(slot: &ThreadSlot, wait_ns: u64) -> bool {
    if slot.tid.load(Ordering::Acquire) == super::sys::gettid() {
        return true;
    }
    let deadline = super::sys::monotonic_ns() + wait_ns;
    loop {
        if slot.in_handler.load(Ordering::SeqCst) == 0 {
            return true;
        }
        if super::sys::monotonic_ns() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// Stops and frees `armed`, a clock `slot` no longer holds (taken out or replaced). A timer
/// goes at once (a handler re-arming a deleted timer only fails). A perf event is stopped at
/// once, and its descriptor and ring are freed once no handler of the thread can be using
/// them: now, or later by [`reap_retired`].
fn retire(slot: &'static ThreadSlot, armed: Armed) {
    if armed.kind == ClockKind::ThreadCpuTimer {
        disarm(armed);
        return;
    }
    let ring = slot.perf_ring.swap(0, Ordering::SeqCst);
    if out_of_handler(slot, HANDLER_WAIT_NS) {
        unmap_ring(ring);
        disarm(armed);
    } else {
        stop_perf(armed.handle);
        RETIRED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((slot, armed, ring));
    }
}

/// Frees the perf events [`retire`] had to leave, whose threads are out of their handlers now
/// (the sampler calls it at every tick; what is left when sampling ends stays until the
/// process does).
pub fn reap_retired() {
    let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    retired.retain(|&(slot, armed, ring)| {
        if slot.in_handler.load(Ordering::SeqCst) == 0 {
            unmap_ring(ring);
            disarm(armed);
            false
        } else {
            true
        }
    });
}

/// Where the period of a perf event ended (its overflow sent the signal), as the kernel
/// recorded it then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodEnd {
    /// In kernel mode (a system call, a page fault).
    pub in_kernel: bool,
    /// The instruction pointer then (a kernel address if `in_kernel`).
    pub ip: usize,
    /// The event's count then: its thread's CPU time since the event was first started.
    pub count: u64,
}

/// The thread's CPU time where the period of `armed`, a perf event of the calling thread,
/// ended at `end`: its CPU time `cpu_enter` when its handler started less what the event
/// counted since (a little early by the handler's work up to here, under a microsecond, as
/// the count is read after `cpu_enter`; never after `cpu_enter`). A period that ends in
/// the kernel sends its signal only when the thread returns to user space (the end of a long
/// `munmap`, a page fault): weighed up to the handler, such a sample took the time from the
/// period's end to the return away from the next one, and code that enters the kernel for
/// long got more than its share (measured: `munmap` 6.9% where `perf` says 4.0%). `None` if
/// the event cannot be read. Async-signal-safe (one system call).
pub fn perf_period_end_cpu(armed: Armed, end: PeriodEnd, cpu_enter: u64) -> Option<u64> {
    let since = perf_count(armed.handle)?.checked_sub(end.count)?;
    Some(cpu_enter.saturating_sub(since))
}

/// Where the period of `slot`'s perf event that just ended ended: `None` if the event has no
/// ring or wrote no record. Consumes the ring's records. Async-signal-safe (memory reads and
/// writes only).
pub fn perf_period_end(slot: &ThreadSlot) -> Option<PeriodEnd> {
    ring_period_end(slot.perf_ring.load(Ordering::SeqCst))
}

/// What made the sampling signal arrive, as its `siginfo` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A perf event overflowed.
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
    use super::{
        Armed, Chosen, ClockKind, MIN_PERIOD_NS, Ordering, PERF_KERNEL, POLICY, PeriodEnd, Policy,
    };
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
    /// of its CPU time sends `signal` to that thread, counting its time in the kernel too if
    /// `kernel`. Returns the descriptor.
    fn open_perf(tid: u32, period_ns: u64, signal: i32, kernel: bool) -> Option<i32> {
        let mut attr = perf::bindings::perf_event_attr {
            type_: perf::bindings::PERF_TYPE_SOFTWARE,
            size: core::mem::size_of::<perf::bindings::perf_event_attr>() as u32,
            config: u64::from(perf::bindings::PERF_COUNT_SW_TASK_CLOCK),
            ..Default::default()
        };
        attr.__bindgen_anon_1.sample_period = period_ns.max(MIN_PERIOD_NS);
        // Each overflow writes a record of its header, instruction pointer and count into the
        // event's ring (see `ring_period_end`); the ring never asks for a wake-up of its own (the handler empties it
        // at every overflow, long before a page of records is pending), so the overflow's
        // signal stays the only one.
        attr.sample_type =
            u64::from(perf::bindings::PERF_SAMPLE_IP | perf::bindings::PERF_SAMPLE_READ);
        attr.set_watermark(1);
        attr.__bindgen_anon_2.wakeup_watermark = RING_DATA_BYTES as u32;
        attr.set_disabled(1);
        attr.set_exclude_kernel(u64::from(!kernel));
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

    /// Stops a perf event (it counts and signals no more until started again).
    pub fn stop_perf(fd: i32) {
        // SAFETY: an ioctl with an integer argument on a perf descriptor.
        unsafe { perf::ioctls::DISABLE(fd, 0) };
    }

    /// Makes a perf event's period `period_ns` of its thread's CPU time from now on (a running
    /// event starts counting the new period now). Async-signal-safe.
    pub fn set_perf_period(fd: i32, period_ns: u64) -> bool {
        let period = period_ns.max(MIN_PERIOD_NS);
        // SAFETY: PERF_EVENT_IOC_PERIOD reads a u64 through the pointer passed as the ioctl's
        // argument; `period` lives across the call. A stale descriptor only makes it fail.
        unsafe { perf::ioctls::PERIOD(fd, &period as *const u64 as u64) == 0 }
    }

    /// Starts `armed`: its first signal after `period_ns` of its thread's CPU time, a perf
    /// event's next ones every period after that until its period is set again, a timer's
    /// none until it is set again. Also restarts a clock that stopped or lost its signal (an
    /// event already running only gets the new period). Async-signal-safe (two system calls
    /// at most).
    pub fn start(armed: Armed, period_ns: u64) -> bool {
        match armed.kind {
            ClockKind::PerfTaskClock => {
                set_perf_period(armed.handle, period_ns)
                    // SAFETY: an ioctl with an integer argument on a perf descriptor; a stale
                    // descriptor only makes it fail.
                    && unsafe { perf::ioctls::ENABLE(armed.handle, 0) == 0 }
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

    /// Picks the clocks for this session as `wanted` asks, with `period_ns` of CPU time
    /// between samples, trying each on the calling thread: the adaptive policy needs the
    /// timer, and perf events that count kernel time for its busy threads (without them every
    /// thread stays on the timer; without the timer, perf events for all); a fixed clock is
    /// that clock or nothing (perf events count kernel time where the system allows it).
    /// `None` if no clock works.
    pub fn choose(wanted: Policy, period_ns: u64, signal: i32) -> Option<Chosen> {
        let tid = crate::recorder::sys::gettid();
        let perf_works = |kernel: bool| {
            open_perf(tid, 1_000_000_000, signal, kernel).map(|fd| {
                // SAFETY: closing the probe's descriptor; it was never enabled.
                unsafe { libc::close(fd) };
            })
        };
        let perf = || match (perf_works(true), perf_works(false)) {
            (Some(()), _) => Some(true),
            (None, Some(())) => Some(false),
            (None, None) => None,
        };
        let timer = create_timer(tid, signal).map(delete_timer).is_some();
        let chosen = match wanted {
            Policy::Adaptive if timer => Chosen {
                policy: if perf_works(true).is_some() {
                    Policy::Adaptive
                } else {
                    Policy::Fixed(ClockKind::ThreadCpuTimer)
                },
                perf_kernel: true,
            },
            Policy::Adaptive | Policy::Fixed(ClockKind::PerfTaskClock) => Chosen {
                policy: Policy::Fixed(ClockKind::PerfTaskClock),
                perf_kernel: perf()?,
            },
            Policy::Fixed(ClockKind::ThreadCpuTimer) if timer => Chosen {
                policy: wanted,
                perf_kernel: false,
            },
            Policy::Fixed(ClockKind::ThreadCpuTimer) => return None,
        };
        super::PERIOD_NS.store(period_ns, Ordering::Relaxed);
        PERF_KERNEL.store(chosen.perf_kernel, Ordering::Relaxed);
        POLICY.store(chosen.policy.to_u8(), Ordering::Release);
        Some(chosen)
    }

    /// Opens a stopped `kind` clock on thread `tid` whose signal, once started with
    /// [`start`], comes after `period_ns` of its CPU time. A perf event comes with its ring
    /// (0 if it could not be mapped: the mode of its periods is then not known).
    pub fn open(kind: ClockKind, tid: u32, period_ns: u64, signal: i32) -> Option<(Armed, usize)> {
        match kind {
            ClockKind::PerfTaskClock => {
                let kernel = PERF_KERNEL.load(Ordering::Relaxed);
                let fd = open_perf(tid, period_ns, signal, kernel)?;
                let ring = if kernel { map_ring(fd) } else { 0 };
                Some((Armed { kind, handle: fd }, ring))
            }
            ClockKind::ThreadCpuTimer => Some((
                Armed {
                    kind,
                    handle: create_timer(tid, signal)?,
                },
                0,
            )),
        }
    }

    /// Bytes of a perf event's ring's data area: one page, 170 records of 24 bytes.
    const RING_DATA_BYTES: usize = 4096;
    /// Bytes of a ring's mapping: the control page and the data.
    const RING_MAP_BYTES: usize = 4096 + RING_DATA_BYTES;

    /// Maps perf event `fd`'s ring; 0 if it cannot be mapped (the system's page size is not
    /// 4 KiB, or the kernel refused).
    fn map_ring(fd: i32) -> usize {
        // SAFETY: sysconf has no memory effects.
        if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != 4096 {
            return 0;
        }
        // SAFETY: maps a perf descriptor we own, shared, read-write (so that the reader can
        // move `data_tail`); the kernel checks the size (1 + 2^n pages).
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                RING_MAP_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED { 0 } else { p as usize }
    }

    /// Unmaps a ring [`map_ring`] mapped (0: nothing).
    pub fn unmap_ring(ring: usize) {
        if ring != 0 {
            // SAFETY: `ring` is a mapping of RING_MAP_BYTES this module made, which no one
            // reads any more (see `retire`).
            unsafe { libc::munmap(ring as *mut libc::c_void, RING_MAP_BYTES) };
        }
    }

    /// Where the newest sample record in `ring` was taken (see `perf_period_end`), consuming
    /// every record. Async-signal-safe.
    pub fn ring_period_end(ring: usize) -> Option<PeriodEnd> {
        use core::sync::atomic::AtomicU64;
        if ring == 0 {
            return None;
        }
        let page = ring as *mut perf::bindings::perf_event_mmap_page;
        // SAFETY: `ring` is a live mapping of RING_MAP_BYTES (its owner unmaps it only once
        // this thread is out of its handler); `data_head` and `data_tail` are naturally
        // aligned u64s in its control page, which the kernel and this reader share as the
        // perf ABI says: head read with acquire, tail written with release.
        let (head, tail) = unsafe {
            (
                AtomicU64::from_ptr(core::ptr::addr_of_mut!((*page).data_head)),
                AtomicU64::from_ptr(core::ptr::addr_of_mut!((*page).data_tail)),
            )
        };
        // The u64 at byte `at` of the record stream (records are 8-byte aligned, and one may
        // wrap around the end of the data area).
        let word = |at: u64| {
            let offset = (at % RING_DATA_BYTES as u64) as usize;
            // SAFETY: `offset` is a multiple of 8 below RING_DATA_BYTES, so the word lies
            // within the data area, which starts one page into the mapping.
            unsafe { core::ptr::read_volatile((ring + 4096 + offset) as *const u64) }
        };
        let end = head.load(Ordering::Acquire);
        let mut at = tail.load(Ordering::Relaxed);
        let mut newest = None;
        while end.saturating_sub(at) >= 8 {
            // perf_event_header: type (u32), misc (u16), size (u16), little-endian.
            let header = word(at);
            let (kind, misc, size) = (header as u32, (header >> 32) as u16, (header >> 48) as u16);
            if size < 8 || u64::from(size) > end - at {
                break;
            }
            // A sample record: the header, the IP, the count (`PERF_SAMPLE_READ` with no
            // `read_format`).
            if kind == perf::bindings::PERF_RECORD_SAMPLE && size >= 24 {
                let cpumode = u32::from(misc) & perf::bindings::PERF_RECORD_MISC_CPUMODE_MASK;
                newest = Some(PeriodEnd {
                    in_kernel: cpumode == perf::bindings::PERF_RECORD_MISC_KERNEL,
                    ip: word(at + 8) as usize,
                    count: word(at + 16),
                });
            }
            at += u64::from(size);
        }
        tail.store(end, Ordering::Release);
        newest
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
    /// notices an event that stopped.
    pub fn perf_count(fd: i32) -> Option<u64> {
        let mut value = 0u64;
        // SAFETY: reads 8 bytes into a local u64 from a perf descriptor.
        let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
        (n == 8).then_some(value)
    }

    /// Whether a POSIX timer is set (still counting down); `None` if it cannot be read. A
    /// one-shot timer that expired is no longer set, whether its signal reached the handler
    /// or not (a signal already pending absorbs it: SIGPROF is not queued).
    pub fn timer_set(id: i32) -> Option<bool> {
        let mut value = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        // SAFETY: reads a timer of this process into a local itimerspec. A stale id only makes
        // it fail.
        let ok = unsafe {
            libc::syscall(
                libc::SYS_timer_gettime,
                id,
                &mut value as *mut libc::itimerspec,
            ) == 0
        };
        ok.then_some(value.it_value.tv_sec != 0 || value.it_value.tv_nsec != 0)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_one_shot_timer_is_set_until_it_expires() {
            let tid = crate::recorder::sys::gettid();
            // SIGURG is ignored by default: the expiry has no effect on the test.
            let id = create_timer(tid, libc::SIGURG).expect("a CPU-time timer");
            assert_eq!(timer_set(id), Some(false), "created stopped");
            let start = crate::recorder::sys::thread_cpu_ns(tid).unwrap();
            assert!(set_timer(id, 20_000_000));
            assert_eq!(timer_set(id), Some(true), "counting down");
            let used = || crate::recorder::sys::thread_cpu_ns(tid).unwrap() - start;
            // The kernel looks at the timer at a scheduler tick that finds the thread running:
            // on a loaded machine the thread may run 20 ms between ticks (woken threads take
            // the CPU from it) and meet no tick for a while; 2 s of CPU without one fails.
            let mut x = 0u64;
            while timer_set(id) == Some(true) && used() < 2_000_000_000 {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            }
            let expired_after = used();
            assert_eq!(
                timer_set(id),
                Some(false),
                "expired ({expired_after} ns of CPU)"
            );
            assert!(
                expired_after >= 20_000_000,
                "expired after {expired_after} ns of CPU"
            );
            delete_timer(id);
            assert_eq!(timer_set(id), None, "deleted");
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Armed, Chosen, ClockKind, Policy};

    /// No per-thread CPU clocks on this platform.
    pub fn choose(_wanted: Policy, _period_ns: u64, _signal: i32) -> Option<Chosen> {
        None
    }

    /// Nothing to open.
    pub fn open(
        _kind: ClockKind,
        _tid: u32,
        _period_ns: u64,
        _signal: i32,
    ) -> Option<(Armed, usize)> {
        None
    }

    /// No rings.
    pub fn unmap_ring(_ring: usize) {}

    /// No rings.
    pub fn ring_period_end(_ring: usize) -> Option<super::PeriodEnd> {
        None
    }

    /// Nothing to disarm.
    pub fn disarm(_armed: Armed) {}

    /// Nothing to stop.
    pub fn stop_perf(_fd: i32) {}

    /// No perf events.
    pub fn set_perf_period(_fd: i32, _period_ns: u64) -> bool {
        false
    }

    /// Nothing to start.
    pub fn start(_armed: Armed, _period_ns: u64) -> bool {
        false
    }

    /// No perf events.
    pub fn perf_count(_fd: i32) -> Option<u64> {
        None
    }

    /// No timers.
    pub fn timer_set(_id: i32) -> Option<bool> {
        None
    }
}

pub use imp::{choose, disarm, open, perf_count, timer_set};
use imp::{ring_period_end, start, stop_perf, unmap_ring};
