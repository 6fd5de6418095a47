//! From a capture to an interned stack: unwinding (see [`crate::unwind`]), naming each code
//! address (managed through the runtime, native through ELF symbols), and interning the
//! stack with the session's [`crate::stacks::StackInterner`].
//!
//! Everything is cached by address, so a stack seen before costs a few hash lookups. A stack
//! the unwinder could not follow to the thread's start gets an outermost
//! [`FrameKind::Truncated`] node saying why ([`StackCut`]). A stack with a frame of the agent's
//! own library is the profiler's work done on a program thread (a callback): it is reported as
//! such, never as the program's.

use std::sync::atomic::Ordering;

use rustc_hash::{FxHashMap as HashMap, FxHashSet};

use clrprof_trace::{FrameKind, NativeFrameDef, Record, StackCut};

use crate::defs::runtime_id;
use crate::recorder::ring::Capture;
use crate::recorder::sys;
use crate::recorder::threads::{MAX_FRAMES, ThreadSlot};
use crate::session::Session;
use crate::unwind::{Chain, Regs, Stop, Tail, Unwinder};

use super::gone_code::Forget;
use super::method_shapes::{RuntimeShapes, code_owner};

/// How often the memory map is re-read for newly loaded libraries.
const MODULE_REFRESH_NS: u64 = 1_000_000_000;
/// How often, at most, an address in no known mapping makes the memory map be re-read.
const ANONYMOUS_REFRESH_NS: u64 = 50_000_000;
/// The name of a native frame in the runtime's stubs (see `StackBuilder::in_anonymous_code`).
pub const RUNTIME_STUB: &str = "[runtime stub]";

/// A resolved frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum FrameRef {
    /// A function's trace id (see `defs`).
    Managed(u64),
    /// A method without metadata (dynamic method, IL stub), by trace id.
    Generated(u64),
    Native(u64),
}

/// What a capture turned into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// The program's stack (an interned id; 0 for none).
    Program(u32),
    /// The agent's own code was running: the profiler's time.
    Agent,
}

/// The sampler's unwinder, name caches and scratch buffers.
pub struct StackBuilder {
    session: &'static Session,
    unwinder: Unwinder,
    shapes: RuntimeShapes,
    ips: HashMap<usize, FrameRef>,
    natives: HashMap<(String, String), u64>,
    frames: Vec<usize>,
    path: Vec<FrameRef>,
    /// The executable mapping of the agent itself.
    agent_code: (usize, usize),
    modules_generation: u64,
    modules_checked_ns: u64,
    /// When an unknown address last made the memory map be re-read.
    anonymous_refreshed_ns: u64,
}

impl StackBuilder {
    /// A builder for `session`'s samples.
    pub fn new(session: &'static Session) -> StackBuilder {
        let mut builder = StackBuilder {
            session,
            unwinder: Unwinder::new(),
            shapes: RuntimeShapes::new(session.info.clone()),
            ips: HashMap::default(),
            natives: HashMap::default(),
            frames: Vec::with_capacity(MAX_FRAMES),
            path: Vec::with_capacity(MAX_FRAMES),
            agent_code: (0, 0),
            modules_generation: u64::MAX,
            modules_checked_ns: 0,
            anonymous_refreshed_ns: 0,
        };
        builder.refresh_modules(sys::monotonic_ns());
        builder
    }

    /// Re-reads the memory map now and then (for libraries loaded since), and finds the agent's
    /// own code in it.
    pub fn refresh_modules(&mut self, now: u64) {
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
            let here = StackBuilder::new as fn(&'static Session) -> StackBuilder as usize;
            self.agent_code = self
                .unwinder
                .modules()
                .module_at(here)
                .map_or((0, 0), |m| (m.start, m.end));
        }
    }

    /// Drops what is cached about code the runtime unloaded (its addresses may hold other
    /// code from now on).
    pub fn forget(&mut self, forget: Forget) {
        match forget {
            Forget::All => {
                self.ips.clear();
                self.shapes.forget(None);
            }
            Forget::Functions(gone) => {
                let gone: FxHashSet<usize> = gone.iter().map(|f| f.0).collect();
                // Addresses outside any file may hold the next generated code.
                let outside: FxHashSet<u64> = self
                    .natives
                    .iter()
                    .filter(|((library, _), _)| library.is_empty())
                    .map(|(_, &id)| id)
                    .collect();
                self.ips.retain(|_, f| match *f {
                    FrameRef::Managed(id) | FrameRef::Generated(id) => {
                        !gone.contains(&runtime_id(id))
                    }
                    FrameRef::Native(id) => !outside.contains(&id),
                });
                self.shapes.forget(Some(&gone));
            }
        }
    }

    /// Unwinds and interns the stack a capture holds, reusing the thread's `tail`. The slot's
    /// stack bounds are learnt from the capture if they were unknown (a thread adopted after
    /// it started).
    pub fn resolve_capture(
        &mut self,
        slot: &ThreadSlot,
        capture: &Capture,
        tail: &mut Tail,
    ) -> Resolved {
        let [rip, rsp, rbp] = capture.regs;
        let mut stack_hi = slot.stack_hi.load(Ordering::Acquire);
        let mut unknown = false;
        if stack_hi == 0 {
            // Its first capture tells where its stack is; the handler walks it from now on.
            let (lo, hi) = mapping_containing(rsp).unwrap_or((1, 1));
            slot.stack_lo.store(lo, Ordering::Relaxed);
            slot.stack_hi.store(hi, Ordering::Release);
            stack_hi = hi;
            unknown = capture.depth <= 1;
        }
        let depth = (capture.depth as usize).min(MAX_FRAMES);
        let chain = Chain {
            frames: &capture.frames[..depth],
            fps: &capture.fps[..depth],
            saved: &capture.saved[..depth],
        };
        let copy = &capture.copy[..capture.copy_len.min(capture.copy.len())];
        let regs = Regs { rip, rsp, rbp };
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        let stats = self.unwinder.unwind(
            regs,
            copy,
            chain,
            Some(tail),
            stack_hi,
            &mut frames,
            &mut self.shapes,
        );
        let last = frames.last().copied().unwrap_or(0);
        let cut = match stats.stop {
            Stop::EndOfStack => None,
            Stop::Limit => Some(StackCut::TooDeep),
            Stop::NoStack if unknown => Some(StackCut::UnknownStack),
            Stop::NoStack => Some(StackCut::BadFramePointer),
            Stop::BadFramePointer if !self.unwinder.modules().contains_code(last) => {
                Some(StackCut::NoUnwindInfo)
            }
            Stop::BadFramePointer => Some(StackCut::BadFramePointer),
            Stop::Unreadable => Some(StackCut::Unreadable),
            Stop::CfaNotIncreasing | Stop::LeftStack | Stop::BadCfi | Stop::NotRun => {
                Some(StackCut::BadUnwindInfo)
            }
        };
        let resolved = if frames
            .iter()
            .any(|&ip| self.agent_code.0 <= ip && ip < self.agent_code.1)
        {
            Resolved::Agent
        } else {
            Resolved::Program(self.intern(&frames, cut, capture.ts))
        };
        self.frames = frames;
        resolved
    }

    /// Turns code addresses (innermost first) into an interned stack id, with a cut marker
    /// at the root when the stack ends early.
    fn intern(&mut self, ips: &[usize], cut: Option<StackCut>, ts: u64) -> u32 {
        self.path.clear();
        for (k, &ip) in ips.iter().enumerate() {
            // Return addresses point after the call; look up the call instruction itself.
            let lookup = if k == 0 { ip } else { ip.saturating_sub(1) };
            let frame = self.resolve(lookup, ts);
            // Consecutive native frames of one function are one frame (a library without
            // symbols names all its frames alike); managed recursion stays as it is.
            if matches!(frame, FrameRef::Native(_)) && self.path.last() == Some(&frame) {
                continue;
            }
            self.path.push(frame);
        }
        if cut == Some(StackCut::TooDeep) {
            self.session
                .sampler_stats
                .truncated
                .fetch_add(1, Ordering::Relaxed);
        }
        let s = self.session;
        let marker = cut.map(|c| (FrameKind::Truncated, c.to_u64()));
        let path = marker
            .into_iter()
            .chain(self.path.iter().rev().map(|f| match *f {
                FrameRef::Managed(f) | FrameRef::Generated(f) => (FrameKind::Managed, f),
                FrameRef::Native(id) => (FrameKind::Native, id),
            }));
        s.stacks
            .intern_path(&s.out, path, |f| s.defs.define_function(&s.info, &s.out, f))
    }

    /// Whether `ip` lies in executable memory that no file backs. In a .NET process that is
    /// the runtime's: its code heaps (managed code, which the runtime claims first) and its
    /// stubs (precode, virtual dispatch stubs, helper thunks), which it names nowhere the
    /// profiling API reaches. The memory map is re-read (at most every
    /// [`ANONYMOUS_REFRESH_NS`]) when `ip` is in no mapping known yet.
    fn in_anonymous_code(&mut self, ip: usize) -> bool {
        if !self.unwinder.modules().contains_code(ip) {
            let now = sys::monotonic_ns();
            if now.saturating_sub(self.anonymous_refreshed_ns) < ANONYMOUS_REFRESH_NS {
                return false;
            }
            self.anonymous_refreshed_ns = now;
            self.unwinder.refresh_modules();
        }
        self.unwinder.modules().contains_code(ip) && !self.unwinder.modules().contains_native(ip)
    }

    /// The frame of code address `ip` in a capture taken at `CLOCK_MONOTONIC` time `ts`.
    fn resolve(&mut self, ip: usize, ts: u64) -> FrameRef {
        let s = self.session;
        let owner = match self.ips.get(&ip) {
            // Generated code is freed when it is collected and its memory reused, sometimes
            // before the runtime says so: ask again whose code this is (the function and its
            // life, for a reused FunctionID).
            Some(&FrameRef::Generated(id)) => match code_owner(&s.info, ip) {
                Some(owner) if s.defs.function_id(owner.jited.function) == id => {
                    return FrameRef::Generated(id);
                }
                owner => owner,
            },
            Some(&f) => return f,
            None => code_owner(&s.info, ip),
        };
        let frame = match owner {
            Some(owner) => {
                let function = owner.jited.function;
                let id = s.defs.function_seen_at(&s.info, &s.out, function, ts);
                let frame = if owner.generated {
                    FrameRef::Generated(id)
                } else {
                    FrameRef::Managed(id)
                };
                if id != s.defs.function_id(function) {
                    // The function's code was unloaded since the capture: the address may
                    // hold other code now, so this answer is for this capture alone.
                    return frame;
                }
                frame
            }
            None => {
                // The module's symbol table names local functions too (the GC, libc's string
                // functions); dladdr, which knows only exported symbols, is the fallback for
                // modules without one.
                let (library, symbol) = match self.unwinder.symbolize(ip) {
                    Some(sym) => (sym.library, sym.symbol),
                    None => match sys::native_symbol(ip) {
                        Some(sym) => (sym.library, sym.symbol),
                        None if self.in_anonymous_code(ip) => {
                            (String::new(), RUNTIME_STUB.to_string())
                        }
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
}

/// The `[start, end)` of the mapping of this process that holds `addr` (`/proc/self/maps`).
pub fn mapping_containing(addr: usize) -> Option<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let range = line.split_whitespace().next()?;
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        (start <= addr && addr < end).then_some((start, end))
    })
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
