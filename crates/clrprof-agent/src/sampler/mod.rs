//! The sampler thread: one tick every `1/rate` seconds, one sample per profiled thread.
//!
//! Both CPU modes sample; what a sample reads differs:
//! - **sample mode** asks each thread that used CPU since its last sample for its stack (a
//!   signal; see `recorder::capture`), while the rest of the program keeps running: nothing is
//!   suspended. A thread that has not run since its last sample is not interrupted at all: its
//!   stack cannot have changed, so its previous stack is repeated with zero CPU time. That is
//!   how wall-clock time of sleeping and blocked threads is counted without waking them.
//! - **trace mode** reads each thread's current call tree node (one atomic load: the hooks
//!   keep it up to date) and adds the sample's CPU and wall time to that node.
//!
//! CPU time per thread comes from the kernel's per-thread CPU clock, so a sample's `cpu_ns` is
//! exactly the CPU the thread used since its previous sample, and `wall_ns` the time between
//! the two ticks. Everything that may allocate or lock (naming, interning, encoding) happens
//! here, on the sampler thread, never on a sampled thread. This thread never runs managed
//! code, which keeps it a "native" thread for the runtime: it may call the runtime's
//! asynchronous methods (GetFunctionFromIP, GetFunctionInfo2) at any time.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use clrprof_sdk::FunctionId;
use clrprof_trace::{FrameKind, NativeFrameDef, Record, Sample, ThreadState as RunState};

use crate::config::Mode;
use crate::recorder::cct::Node;
use crate::recorder::threads::{self, MAX_FRAMES, MAX_THREADS, ThreadSlot};
use crate::recorder::{capture, sys};
use crate::session::Session;
use crate::unwind::{Regs, Unwinder};

/// How often the sampler re-reads the process's memory map for newly loaded libraries.
const MODULE_REFRESH_NS: u64 = 1_000_000_000;

/// How long to wait for sampled threads to answer before counting them as missed.
const ANSWER_TIMEOUT_NS: u64 = 20_000_000;
/// Deepest stack kept in a sample (deeper stacks are cut at the root end).
const MAX_STACK: usize = MAX_FRAMES;

/// Sampler counters, reported in the trace.
#[derive(Default)]
pub struct SamplerStats {
    /// Ticks run.
    pub ticks: AtomicU64,
    /// Threads that did not answer a stack request in time.
    pub missed: AtomicU64,
    /// Stacks cut because they were deeper than the limit.
    pub truncated: AtomicU64,
    /// CPU time the sampler thread itself used: the profiler's own cost, outside the program's
    /// threads.
    pub cpu_ns: AtomicU64,
}

/// A running sampler thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling for `session` (which must live for the rest of the process).
    pub fn start(session: &'static Session) -> Option<Sampler> {
        if session.config.mode == Mode::Sample && !capture::install() {
            session.warn(
                "stack sampling is not supported on this platform; no samples will be recorded",
            );
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("clrprof-sampler".into())
            .spawn(move || SamplerLoop::new(session).run(&stop_flag))
            .ok()?;
        Some(Sampler {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The `[start, end)` of the mapping of this process that holds `addr` (`/proc/self/maps`).
fn mapping_containing(addr: usize) -> Option<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let range = line.split_whitespace().next()?;
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        (start <= addr && addr < end).then_some((start, end))
    })
}

/// Randomized sampling intervals.
///
/// A sampler that ticks at a fixed period falls into step with a program whose work is
/// periodic too (a loop alternating two calls of fixed length): every tick then lands in the
/// same phase of the loop, and one function gets far more samples than its share of time
/// (measured: a method using 15% of the CPU got 27% of the samples at 1 kHz and 72% at 500 Hz).
/// Drawing each interval uniformly from [0.5, 1.5] x the period keeps the mean rate and breaks
/// any such lock-step.
struct Jitter(u64);

impl Jitter {
    fn new(seed: u64) -> Jitter {
        Jitter(seed | 1)
    }

    /// The next interval for a nominal `period_ns`.
    fn interval(&mut self, period_ns: u64) -> u64 {
        // xorshift64: cheap, no allocation, plenty random for spreading ticks.
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        period_ns / 2 + x % period_ns.max(1)
    }
}

/// What the sampler remembers about each registry slot.
#[derive(Clone, Copy, Default)]
struct Book {
    tid: u32,
    last_cpu_ns: u64,
    last_tick_ns: u64,
    last_stack: u32,
    has_stack: bool,
}

/// A resolved frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum FrameRef {
    Managed(usize),
    Native(u64),
}

struct SamplerLoop {
    session: &'static Session,
    interval_ns: u64,
    books: Vec<Book>,
    ips: HashMap<usize, FrameRef>,
    natives: HashMap<(String, String), u64>,
    frames: Vec<usize>,
    path: Vec<FrameRef>,
    /// This tick's captures: (slot, CPU, wall) of each thread asked for its stack.
    targets: Vec<(usize, u64, u64)>,
    unwinder: Unwinder,
    modules_generation: u64,
    modules_checked_ns: u64,
}

impl SamplerLoop {
    fn new(session: &'static Session) -> SamplerLoop {
        SamplerLoop {
            session,
            interval_ns: 1_000_000_000 / u64::from(session.config.rate_hz.max(1)),
            books: vec![Book::default(); MAX_THREADS],
            ips: HashMap::new(),
            natives: HashMap::new(),
            frames: Vec::with_capacity(MAX_FRAMES),
            path: Vec::with_capacity(MAX_FRAMES),
            targets: Vec::with_capacity(MAX_THREADS),
            unwinder: Unwinder::new(),
            modules_generation: u64::MAX,
            modules_checked_ns: 0,
        }
    }

    /// Re-reads the memory map now and then, and tells the signal handler where native code
    /// is (it copies the stack only when interrupted there).
    fn refresh_modules(&mut self, now: u64) {
        if self.modules_generation != u64::MAX
            && now.saturating_sub(self.modules_checked_ns) < MODULE_REFRESH_NS
        {
            return;
        }
        self.modules_checked_ns = now;
        self.unwinder.refresh_modules();
        let generation = self.unwinder.modules().generation();
        if generation != self.modules_generation {
            self.modules_generation = generation;
            capture::publish_native_ranges(&self.unwinder.modules().native_ranges());
        }
    }

    fn run(mut self, stop: &AtomicBool) {
        let mut deadline = sys::monotonic_ns();
        let mut jitter = Jitter::new(deadline);
        while !stop.load(Ordering::Acquire) {
            deadline += jitter.interval(self.interval_ns);
            let now = sys::monotonic_ns();
            if deadline > now {
                std::thread::sleep(Duration::from_nanos(deadline - now));
            } else {
                deadline = now; // fell behind: do not try to catch up with a burst
            }
            self.session
                .sampler_stats
                .ticks
                .fetch_add(1, Ordering::Relaxed);
            match self.session.config.mode {
                Mode::Sample => self.tick_sample(),
                Mode::Trace => self.tick_trace(),
                Mode::None => {}
            }
            self.release_dead();
            if let Some(cpu) = sys::thread_cpu_ns(sys::gettid()) {
                self.session
                    .sampler_stats
                    .cpu_ns
                    .store(cpu, Ordering::Relaxed);
            }
        }
    }

    /// Updates the slot's book; returns (cpu, wall) deltas, or None on first sight or if the
    /// thread is gone.
    fn deltas(&mut self, index: usize, slot: &ThreadSlot, now: u64) -> Option<(u64, u64)> {
        let tid = slot.tid.load(Ordering::Relaxed);
        let cpu = sys::thread_cpu_ns(tid)?;
        let book = &mut self.books[index];
        if book.tid != tid {
            *book = Book {
                tid,
                last_cpu_ns: cpu,
                last_tick_ns: now,
                ..Book::default()
            };
            return None;
        }
        let d = (
            cpu.saturating_sub(book.last_cpu_ns),
            now.saturating_sub(book.last_tick_ns),
        );
        book.last_cpu_ns = cpu;
        book.last_tick_ns = now;
        Some(d)
    }

    fn tick_sample(&mut self) {
        let now = sys::monotonic_ns();
        self.refresh_modules(now);
        let ts = self.session.since_start(now);
        // Decide first, then count, then signal: the handlers count down from the total.
        self.targets.clear();
        for (i, slot) in threads::SLOTS.iter().enumerate() {
            if !slot.is_live() {
                continue;
            }
            let first_sight = self.books[i].tid != slot.tid.load(Ordering::Relaxed);
            match self.deltas(i, slot, now) {
                // First sight: learn the stack now, so that a thread that never runs again
                // still has one (no sample yet: there is no interval to weigh).
                None if first_sight => self.targets.push((i, 0, 0)),
                None => {}
                Some((0, wall)) if self.books[i].has_stack => {
                    let book = self.books[i];
                    self.emit(ts, book.tid, book.last_stack, 0, wall);
                }
                Some((cpu, wall)) => self.targets.push((i, cpu, wall)),
            }
        }
        if self.targets.is_empty() {
            return;
        }
        capture::begin_tick(self.targets.len());
        for &(i, _, _) in &self.targets {
            if !capture::request(&threads::SLOTS[i]) {
                // Gone: nobody will answer for it.
                capture::PENDING.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.wait_for_answers();
        let targets = std::mem::take(&mut self.targets);
        for &(i, cpu, wall) in &targets {
            let slot = &threads::SLOTS[i];
            if !capture::answered(slot) {
                self.session
                    .sampler_stats
                    .missed
                    .fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if slot.stack_hi.load(Ordering::Acquire) == 0 {
                // Adopted after an attach: its stack is the mapping it was interrupted in;
                // from the next capture on, the handler walks it.
                let rsp = slot.regs[1].load(Ordering::Relaxed);
                let (lo, hi) = mapping_containing(rsp).unwrap_or((1, 1));
                slot.stack_lo.store(lo, Ordering::Relaxed);
                slot.stack_hi.store(hi, Ordering::Release);
                continue;
            }
            let mut frames = std::mem::take(&mut self.frames);
            frames.clear();
            let (regs, copy) = capture::copied(slot);
            if copy.is_empty() {
                capture::frames(slot, &mut frames);
            } else {
                // Interrupted in native code: unwind it with its call frame information.
                let regs = Regs {
                    rip: regs[0],
                    rsp: regs[1],
                    rbp: regs[2],
                };
                let stack_hi = slot.stack_hi.load(Ordering::Relaxed);
                self.unwinder.unwind(regs, copy, stack_hi, &mut frames);
            }
            let stack = self.stack_from_ips(&frames);
            self.frames = frames;
            let book = &mut self.books[i];
            book.last_stack = stack;
            book.has_stack = true;
            let tid = book.tid;
            if wall > 0 {
                self.emit(ts, tid, stack, cpu, wall);
            }
        }
        self.targets = targets;
    }

    fn wait_for_answers(&self) {
        /// Longest single wait: bounds the cost of a wake-up lost to a late answer.
        const WAIT_SLICE_NS: u64 = 1_000_000;
        let start = sys::monotonic_ns();
        loop {
            let pending = capture::PENDING.load(Ordering::Acquire);
            if self
                .targets
                .iter()
                .all(|&(i, _, _)| capture::answered(&threads::SLOTS[i]))
            {
                return;
            }
            let waited = sys::monotonic_ns().saturating_sub(start);
            if waited >= ANSWER_TIMEOUT_NS {
                return;
            }
            sys::futex_wait(
                &capture::PENDING,
                pending,
                (ANSWER_TIMEOUT_NS - waited).min(WAIT_SLICE_NS),
            );
        }
    }

    fn tick_trace(&mut self) {
        let now = sys::monotonic_ns();
        let ts = self.session.since_start(now);
        for (i, slot) in threads::SLOTS.iter().enumerate() {
            if !slot.is_live() {
                continue;
            }
            let Some(state) = slot.trace_state() else {
                continue;
            };
            let Some((cpu, wall)) = self.deltas(i, slot, now) else {
                continue;
            };
            let node = state.current();
            let times = state.times(node);
            times.self_samples.fetch_add(1, Ordering::Relaxed);
            times.self_cpu_ns.fetch_add(cpu, Ordering::Relaxed);
            times.self_wall_ns.fetch_add(wall, Ordering::Relaxed);
            let stack = self.stack_of_node(node);
            self.emit(ts, state.tid(), stack, cpu, wall);
        }
    }

    fn emit(&self, ts: u64, tid: u32, stack: u32, cpu_ns: u64, wall_ns: u64) {
        let state = if cpu_ns > 0 {
            RunState::Running
        } else {
            RunState::Blocked
        };
        self.session.out.push_sample(&Sample {
            ts,
            tid,
            stack,
            cpu_ns,
            wall_ns,
            state,
        });
    }

    /// Frees the slots of threads that ended (after their last samples were taken).
    fn release_dead(&mut self) {
        for (i, slot) in threads::SLOTS.iter().enumerate() {
            if slot.is_dead() {
                self.books[i] = Book::default();
                slot.release();
            }
        }
    }

    /// Turns the captured addresses (innermost first) into an interned stack id.
    fn stack_from_ips(&mut self, ips: &[usize]) -> u32 {
        self.path.clear();
        for (k, &ip) in ips.iter().enumerate() {
            // Return addresses point after the call; look up the call instruction itself.
            let lookup = if k == 0 { ip } else { ip.saturating_sub(1) };
            let frame = self.resolve(lookup);
            if self.path.last() != Some(&frame) {
                self.path.push(frame);
            }
        }
        // Keep native frames inside managed code (the runtime, GC, native calls), drop the
        // thread-start frames outside the outermost managed frame.
        match self
            .path
            .iter()
            .rposition(|f| matches!(f, FrameRef::Managed(_)))
        {
            Some(outermost) => self.path.truncate(outermost + 1),
            None => self.path.truncate(1),
        }
        if self.path.len() >= MAX_STACK {
            self.session
                .sampler_stats
                .truncated
                .fetch_add(1, Ordering::Relaxed);
        }
        let s = self.session;
        let path = self.path.iter().rev().map(|f| match *f {
            FrameRef::Managed(f) => (FrameKind::Managed, f as u64),
            FrameRef::Native(id) => (FrameKind::Native, id),
        });
        s.stacks.intern_path(&s.out, path, |f| {
            s.defs.function(&s.info, &s.out, FunctionId(f as usize))
        })
    }

    fn resolve(&mut self, ip: usize) -> FrameRef {
        if let Some(f) = self.ips.get(&ip) {
            return *f;
        }
        let s = self.session;
        let frame = match s.info.get_function_from_ip(ip) {
            Ok(function) if !function.is_null() => FrameRef::Managed(function.0),
            _ => {
                // The module's symbol table names local functions too (the GC, libc's string
                // functions); dladdr, which knows only exported symbols, is the fallback for
                // modules without one.
                let (library, symbol) = match self.unwinder.symbolize(ip) {
                    Some(sym) => (sym.library, sym.symbol),
                    None => match sys::native_symbol(ip) {
                        Some(sym) => (sym.library, sym.symbol),
                        None => (String::new(), String::new()),
                    },
                };
                let next = self.natives.len() as u64 + 1;
                let id = *self
                    .natives
                    .entry((library.clone(), symbol.clone()))
                    .or_insert_with(|| {
                        s.out.push_record(&Record::NativeFrameDef(NativeFrameDef {
                            id: next,
                            address: ip as u64,
                            library,
                            symbol,
                        }));
                        next
                    });
                FrameRef::Native(id)
            }
        };
        self.ips.insert(ip, frame);
        frame
    }

    /// The interned stack of a call tree node, computed once per node.
    fn stack_of_node(&mut self, node: &Node) -> u32 {
        let cached = node.stack_id.load(Ordering::Relaxed);
        if cached != 0 || node.function() == 0 {
            return cached;
        }
        // Walk up to the nearest node that already has an id (or the root).
        let mut chain: Vec<&Node> = Vec::new();
        let mut n = Some(node);
        let mut parent_stack = 0u32;
        while let Some(cur) = n {
            if cur.function() == 0 {
                break;
            }
            let id = cur.stack_id.load(Ordering::Relaxed);
            if id != 0 {
                parent_stack = id;
                break;
            }
            chain.push(cur);
            n = cur.parent();
        }
        let s = self.session;
        let path = chain
            .iter()
            .rev()
            .map(|cur| (FrameKind::Managed, cur.function() as u64));
        let mut unset = chain.iter().rev();
        s.stacks.extend_path(
            &s.out,
            parent_stack,
            path,
            |id| {
                if let Some(cur) = unset.next() {
                    cur.stack_id.store(id, Ordering::Relaxed);
                }
            },
            |f| s.defs.function(&s.info, &s.out, FunctionId(f as usize)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_mapping_of_a_stack_address() {
        let local = 0u64;
        let addr = &local as *const u64 as usize;
        let (lo, hi) = mapping_containing(addr).expect("the stack is mapped");
        assert!(lo <= addr && addr < hi);
        assert!(mapping_containing(0).is_none());
    }
}
