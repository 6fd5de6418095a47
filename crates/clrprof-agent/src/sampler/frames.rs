//! From a capture to an interned stack: unwinding (see [`crate::unwind`]), naming each code
//! address (managed through the runtime, native through ELF symbols or, in a stripped
//! library, the start of the function from its unwind information), and interning the stack
//! with the session's [`crate::stacks::StackInterner`].
//!
//! Everything is cached by address, so a stack seen before costs a few hash lookups. A native
//! frame is one per function: named frames by library and name (as before format 1.3),
//! unnamed ones by library and function start; each carries its module (path and GNU build
//! id, one `NativeModule` record per module) and the function's start as the module's ELF file
//! numbers it, so that `clrprof report --symbols` can name it later. A stack
//! the unwinder could not follow to the thread's start gets an outermost
//! [`FrameKind::Truncated`] node saying why ([`StackCut`]). A stack with a frame of the agent's
//! own library is the profiler's work done on a program thread (a callback): it is reported as
//! such, never as the program's.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustc_hash::{FxHashMap as HashMap, FxHashSet};

use clrprof_trace::config::NativeNames;
use clrprof_trace::{FrameKind, IlPosition, NativeFrameDef, NativeModuleDef, Record, StackCut};

use clrprof_sdk::FunctionId;

use crate::async_chains::AsyncChains;
use crate::defs::runtime_id;
use crate::recorder::ring::Capture;
use crate::recorder::ring::MAX_FRAMES;
use crate::recorder::sys;
use crate::recorder::threads::ThreadSlot;
use crate::session::Session;
use crate::stacks::Frame;
use crate::unwind::{Chain, Interrupted, MethodShapes, Regs, Stop, Tail, Unwinder};

use super::gone_code::Forget;
use super::known_stacks::{Callers, KnownStacks, Lookup};
use super::mappings::MapSnapshot;
use super::method_shapes::{CodeOwner, RuntimeShapes, code_owner};
use super::module_reading::ModuleReading;
use super::write_barrier::{WRITE_BARRIER, WriteBarrierCopy};

/// How often the loader's counters are checked for newly loaded or unloaded libraries (a
/// change makes the memory map be read again).
const MODULE_REFRESH_NS: u64 = 1_000_000_000;
/// How often the memory map is read again all the same. Reading it costs about a millisecond
/// in a .NET process (hundreds of mappings): read every second, it was 18% of the sampler's
/// CPU on a server at 100 Hz. Code the loader did not map (the runtime's code heaps and
/// stubs) makes the map be read when an address in it is first met (see `not_code`,
/// `in_anonymous_code`).
const MODULE_REREAD: std::time::Duration = std::time::Duration::from_secs(30);
/// How often, at most, an address in no known mapping makes the memory map be re-read.
const ANONYMOUS_REFRESH_NS: u64 = 50_000_000;
/// How long a frame in a library the memory map does not show yet waits to be named.
const UNNAMED_WAIT_NS: u64 = 2_000_000_000;
/// The name of a native frame in the runtime's stubs (see `StackBuilder::in_anonymous_code`)
/// whose kind its perf map does not tell (see [`super::stubs`]) and that is not the runtime's
/// copy of its write barriers (see [`super::write_barrier`]).
pub const RUNTIME_STUB: &str = "[runtime stub]";

/// What tells native frames apart: library and name for a named function, library and start
/// address for an unnamed one (0 when not even that is known).
type NativeKey = (String, String, u64);

/// The key that tells a native frame apart and its `NativeFrame` record (id 0, to be given):
/// named frames stay one per name; unnamed ones one per function start.
fn native_frame(
    ip: usize,
    library: String,
    symbol: String,
    module: u64,
    function: u64,
) -> (NativeKey, NativeFrameDef) {
    let key_function = if symbol.is_empty() { function } else { 0 };
    let key = (library.clone(), symbol.clone(), key_function);
    let def = NativeFrameDef {
        id: 0,
        address: ip as u64,
        library,
        symbol,
        module,
        function,
    };
    (key, def)
}

/// A resolved frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum FrameRef {
    /// A function's trace id (see `defs`), and where in its IL the frame was.
    Managed(u64, IlPosition),
    /// A method without metadata (dynamic method, IL stub), by trace id.
    Generated(u64, IlPosition),
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
    /// Async chains, where they are on: their callers are spliced into the stacks.
    chains: Option<&'static AsyncChains>,
    unwinder: Unwinder,
    shapes: RuntimeShapes,
    ips: HashMap<usize, FrameRef>,
    natives: HashMap<NativeKey, u64>,
    /// `NativeModule` ids by path and build id.
    modules: HashMap<(String, Arc<str>), u64>,
    /// The latest `NativeFrame` id given.
    next_native: u64,
    /// Frames given before their module could be named: id, address and when, named once it
    /// can be.
    unnamed: Vec<(u64, usize, u64)>,
    frames: Vec<usize>,
    path: Vec<FrameRef>,
    /// Scratch: for each address [`Self::resolve_path`] named, the index of its frame in
    /// `path`.
    path_of_ip: Vec<u32>,
    /// Scratch: the nodes of a path as it is interned.
    nodes: Vec<u32>,
    /// The executable mapping of the agent itself.
    agent_code: (usize, usize),
    modules_generation: u64,
    modules_checked_ns: u64,
    /// When an unknown address last made the memory map be re-read.
    anonymous_refreshed_ns: u64,
    /// Addresses found where a return address was expected that hold no code (a library's
    /// data, a stack, the heap).
    library_data: FxHashSet<usize>,
    /// The memory map of a recent moment: the stacks of adopted threads are found in it.
    maps: MapSnapshot,
    /// Scratch: a sample's async callers.
    callers: Vec<usize>,
    /// Stacks and callers interned before, by their code addresses (see [`Self::intern`]).
    known: KnownStacks<FrameRef>,
    /// The runtime's stubs, by kind, from its perf map.
    stubs: super::stubs::StubMap,
    /// The runtime's copy of its write barriers.
    write_barrier: WriteBarrierCopy,
    /// The stack of the thread whose capture is being resolved, `[lo, hi)`.
    stack: (usize, usize),
    /// Reads native modules on a thread of its own.
    reading: ModuleReading,
}

impl StackBuilder {
    /// The same builder, splicing the async callers of `chains` into its stacks.
    pub fn splicing(mut self, chains: Option<&'static AsyncChains>) -> StackBuilder {
        self.chains = chains;
        self
    }

    /// A builder for `session`'s samples.
    pub fn new(session: &'static Session) -> StackBuilder {
        let mut builder = StackBuilder {
            session,
            chains: None,
            unwinder: Unwinder::new(),
            shapes: RuntimeShapes::new(session.info.clone(), &session.gone_code),
            ips: HashMap::default(),
            natives: HashMap::default(),
            modules: HashMap::default(),
            next_native: 0,
            unnamed: Vec::new(),
            frames: Vec::with_capacity(MAX_FRAMES),
            path: Vec::with_capacity(MAX_FRAMES),
            path_of_ip: Vec::with_capacity(MAX_FRAMES),
            nodes: Vec::with_capacity(MAX_FRAMES + 1),
            agent_code: (0, 0),
            modules_generation: u64::MAX,
            modules_checked_ns: 0,
            anonymous_refreshed_ns: 0,
            library_data: FxHashSet::default(),
            maps: MapSnapshot::default(),
            callers: Vec::with_capacity(crate::async_chains::MAX_CALLERS),
            known: KnownStacks::default(),
            stubs: super::stubs::StubMap::default(),
            write_barrier: WriteBarrierCopy::default(),
            stack: (0, 0),
            reading: ModuleReading::default(),
        };
        if session.config.native_names == NativeNames::Reader {
            // The CLI names native functions from their modules' files.
            builder.unwinder.leave_symbols_to_reader();
        }
        builder.refresh_modules(sys::monotonic_ns());
        builder
    }

    /// Re-reads the memory map when the loader loaded or unloaded a library since (checked
    /// every [`MODULE_REFRESH_NS`]; read every [`MODULE_REREAD`] in any case), and finds the
    /// agent's own code in it.
    pub fn refresh_modules(&mut self, now: u64) {
        let first = self.modules_generation == u64::MAX;
        if !first && now.saturating_sub(self.modules_checked_ns) < MODULE_REFRESH_NS {
            return;
        }
        self.modules_checked_ns = now;
        if !first && !self.unwinder.modules().reread_due(MODULE_REREAD) {
            return;
        }
        self.unwinder.refresh_modules();
        let generation = self.unwinder.modules().generation();
        if generation != self.modules_generation {
            self.modules_generation = generation;
            // A library loaded or unloaded since: its addresses may be code now.
            self.library_data.clear();
            self.known.clear();
            let here = StackBuilder::new as fn(&'static Session) -> StackBuilder as usize;
            self.agent_code = self
                .unwinder
                .modules()
                .module_at(here)
                .map_or((0, 0), |m| (m.start, m.end));
        }
    }

    /// The stack that stands for CPU no sample saw: a lone marker ([`StackCut::Missed`] for
    /// dropped samples, [`StackCut::Unsampled`] after a thread's last sample).
    pub fn marker(&mut self, cut: StackCut) -> u32 {
        let s = self.session;
        let path = std::iter::once(Frame::of(FrameKind::Truncated, cut.to_u64()));
        s.stacks
            .intern_path(&s.out, path, |f| s.defs.define_function(&s.info, &s.out, f))
    }

    /// Drops what is cached about code the runtime unloaded (its addresses may hold other
    /// code from now on).
    pub fn forget(&mut self, forget: Forget) {
        self.unwinder.forget_walks();
        self.known.clear();
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
                    .filter(|((library, _, _), _)| library.is_empty())
                    .map(|(_, &id)| id)
                    .collect();
                self.ips.retain(|_, f| match *f {
                    FrameRef::Managed(id, _) | FrameRef::Generated(id, _) => {
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
            let (lo, hi) = self
                .maps
                .holding(rsp, capture.ts, self.unwinder.modules().latest_read())
                .map_or((1, 1), |m| (m.start, m.end));
            slot.stack_lo.store(lo, Ordering::Relaxed);
            slot.stack_hi.store(hi, Ordering::Release);
            stack_hi = hi;
            unknown = capture.depth <= 1;
        }
        self.stack = (slot.stack_lo.load(Ordering::Relaxed), stack_hi);
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
        let thread = Interrupted {
            regs,
            copy,
            chain,
            stack_hi,
        };
        self.shapes.set_capture_time(capture.ts);
        let stats = self
            .unwinder
            .unwind(thread, Some(tail), &mut frames, &mut self.shapes);
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
            Resolved::Program(self.intern(&frames, cut, capture.ts, capture.async_chain))
        };
        self.frames = frames;
        resolved
    }

    /// Turns code addresses (innermost first) into an interned stack id, with a cut marker
    /// at the root when the stack ends early, and the async callers of `async_chain` (the
    /// chain the thread resumed, 0 for none) above its `MoveNext` (see `crate::async_chains`).
    ///
    /// A stack without async callers is the same stack whenever its addresses and end are
    /// (names and their lives are looked up by address; what the runtime unloaded is
    /// forgotten, these stacks with it): a stack seen before costs one lookup, one whose
    /// callers were seen before (a new instruction of the same method) a lookup, the innermost
    /// frame's name and one node.
    fn intern(&mut self, ips: &[usize], cut: Option<StackCut>, ts: u64, async_chain: u32) -> u32 {
        if cut == Some(StackCut::TooDeep) {
            self.session
                .sampler_stats
                .truncated
                .fetch_add(1, Ordering::Relaxed);
        }
        let Some((&leaf, callers)) = ips.split_first().filter(|_| async_chain == 0) else {
            return self.intern_new(ips, cut, ts, async_chain);
        };
        let whole_key = match self.known.whole(ips, cut) {
            Lookup::Known(id) => return id,
            Lookup::Unknown(key) => key,
        };
        let above = match self.known.callers(callers, cut) {
            Lookup::Known(above) => above,
            Lookup::Unknown(key) => {
                let above = self.intern_callers(callers, cut, ts);
                // Generated code can be collected and its memory reused before the runtime
                // says so (see `Self::resolve`): callers in it are named again each time.
                if !self
                    .path
                    .iter()
                    .any(|f| matches!(f, FrameRef::Generated(..)))
                {
                    self.known.remember_callers(key, callers, cut, above);
                }
                above
            }
        };
        let leaf = self.resolve(leaf, ts);
        let id = if matches!(leaf, FrameRef::Native(_)) && above.innermost == Some(leaf) {
            // The innermost caller is the same native function: one frame.
            above.node
        } else {
            let s = self.session;
            s.stacks.extend_path(
                &s.out,
                above.node,
                std::iter::once(trace_frame(&leaf)),
                |_| {},
                |f| s.defs.define_function(&s.info, &s.out, f),
            )
        };
        self.known.remember_whole(whole_key, ips, cut, id);
        id
    }

    /// Names `ips` (innermost first) into `self.path`, the innermost as the address of a
    /// running instruction if `leaf`, the others as return addresses (the call is the
    /// instruction before), and which frame each address is into `self.path_of_ip`. Stops
    /// where an address cannot be a return address; returns how the stack ends.
    fn resolve_path(
        &mut self,
        ips: &[usize],
        leaf: bool,
        mut cut: Option<StackCut>,
        ts: u64,
    ) -> Option<StackCut> {
        self.path.clear();
        self.path_of_ip.clear();
        for (k, &ip) in ips.iter().enumerate() {
            let running = leaf && k == 0;
            if !running && self.not_code(ip) {
                // Not a return address: the walk took a word that was no frame's for one.
                // What it found beyond is not the thread's stack either.
                cut = Some(StackCut::BadFramePointer);
                break;
            }
            // Return addresses point after the call; look up the call instruction itself.
            let lookup = if running { ip } else { ip.saturating_sub(1) };
            let frame = self.resolve(lookup, ts);
            // Consecutive native frames of one function are one frame (a library without
            // symbols names all its frames alike); managed recursion stays as it is.
            if !(matches!(frame, FrameRef::Native(_)) && self.path.last() == Some(&frame)) {
                self.path.push(frame);
            }
            self.path_of_ip.push(self.path.len() as u32 - 1);
        }
        cut
    }

    /// Interns the callers of a stack (`ips`: its return addresses, innermost first) with the
    /// marker of how the stack ended. Where they share their outer part with the latest
    /// callers interned here (see [`KnownStacks::shared_callers`]), only the addresses below
    /// it are named, and interned below its node.
    fn intern_callers(
        &mut self,
        ips: &[usize],
        cut: Option<StackCut>,
        ts: u64,
    ) -> Callers<FrameRef> {
        let shared = self.known.shared_callers(ips, cut);
        let inner = &ips[..ips.len() - shared.map_or(0, |o| o.len)];
        let inner_cut = self.resolve_path(inner, false, cut, ts);
        // A word below the shared part that is no return address ends the stack there, as it
        // would have if every address had been named.
        let complete = self.path_of_ip.len() == inner.len();
        let outer = shared.filter(|_| complete);
        let s = self.session;
        let mut nodes = std::mem::take(&mut self.nodes);
        nodes.clear();
        let define = |f| s.defs.define_function(&s.info, &s.out, f);
        // How many of `path`'s outermost frames are the shared part's innermost one (a native
        // frame right below one of the same function is that frame), and how many of the
        // nodes interned now are above the path's (the marker's).
        let (merged, above) = match outer {
            Some(o) => {
                let merged = matches!(o.innermost, FrameRef::Native(_))
                    && self.path.last() == Some(&o.innermost);
                let below = &self.path[..self.path.len() - usize::from(merged)];
                let frames = below.iter().rev().map(trace_frame);
                s.stacks
                    .extend_path(&s.out, o.node, frames, |id| nodes.push(id), define);
                (usize::from(merged), 0)
            }
            None => {
                let marker = inner_cut.map(|c| Frame::of(FrameKind::Truncated, c.to_u64()));
                let frames = marker
                    .into_iter()
                    .chain(self.path.iter().rev().map(trace_frame));
                s.stacks
                    .extend_path(&s.out, 0, frames, |id| nodes.push(id), define);
                (0, usize::from(marker.is_some()))
            }
        };
        let node = nodes.last().copied().or(outer.map(|o| o.node)).unwrap_or(0);
        let innermost = self.path.first().copied().or(outer.map(|o| o.innermost));
        // Remembered as the latest callers, but for generated code (its memory may hold other
        // code before the runtime says it was collected) and a stack cut short below the
        // shared part.
        if complete
            && !self
                .path
                .iter()
                .any(|f| matches!(f, FrameRef::Generated(..)))
        {
            let interned = self.path.len() - merged;
            let node_of = |j: usize| match outer {
                Some(o) if j >= interned => o.node,
                _ => nodes[above + interned - 1 - j],
            };
            let rest = self.path_of_ip.iter().rev().map(|&j| {
                let j = j as usize;
                (self.path[j], node_of(j))
            });
            self.known
                .set_last_callers(ips, cut, outer.map_or(0, |o| o.len), rest);
        } else {
            self.known.forget_last_callers();
        }
        self.nodes = nodes;
        Callers { node, innermost }
    }

    /// [`Self::intern`] from scratch: each address named, the path interned.
    fn intern_new(
        &mut self,
        ips: &[usize],
        cut: Option<StackCut>,
        ts: u64,
        async_chain: u32,
    ) -> u32 {
        let cut = self.resolve_path(ips, true, cut, ts);
        let s = self.session;
        let (continuation, callers) = self.async_callers(async_chain);
        let marker = cut.map(|c| Frame::of(FrameKind::Truncated, c.to_u64()));
        let (inner, outer) = self
            .path
            .split_at(continuation.map_or(self.path.len(), |k| k + 1));
        let path = marker
            .into_iter()
            .chain(outer.iter().rev().map(trace_frame))
            .chain(callers.iter().rev().flat_map(|&f| {
                [
                    Frame::of(FrameKind::AsyncCaller, s.defs.function_id(FunctionId(f))),
                    Frame::of(FrameKind::Await, 0),
                ]
            }))
            .chain(inner.iter().rev().map(trace_frame));
        let id = s
            .stacks
            .intern_path(&s.out, path, |f| s.defs.define_function(&s.info, &s.out, f));
        self.callers = callers;
        id
    }

    /// Where the stack in `self.path` holds the `MoveNext` of `chain` (the index of its frame),
    /// and the async methods that await it, the nearest first (the `FunctionID`s of their
    /// `MoveNext`s): none when the thread resumed no chain or its `MoveNext` is not on the
    /// stack (the sample was taken in the probe around it).
    fn async_callers(&mut self, chain: u32) -> (Option<usize>, Vec<usize>) {
        let mut callers = std::mem::take(&mut self.callers);
        callers.clear();
        let Some(chains) = self.chains.filter(|_| chain != 0) else {
            return (None, callers);
        };
        let Some(method) = chains.chain(chain, &mut callers) else {
            return (None, callers);
        };
        let at = self.path.iter().position(|f| match *f {
            FrameRef::Managed(id, _) => chains.method_of(runtime_id(id)) == Some(method),
            _ => false,
        });
        let stats = &chains.stats;
        match at {
            Some(_) => stats.samples_spliced.fetch_add(1, Ordering::Relaxed),
            None => {
                callers.clear();
                stats.samples_unmatched.fetch_add(1, Ordering::Relaxed)
            }
        };
        (at, callers)
    }

    /// The `NativeFrame` id of the native function containing `ip`, defined on first use.
    ///
    /// An address in a module whose symbols are still being read (see [`Self::read_module_of`])
    /// or that the memory map does not show yet gets a frame of its own at once, named when
    /// the module has been read ([`Self::name_unnamed`]): the sampler goes on reading the
    /// threads' captures meanwhile.
    fn native(&mut self, ip: usize) -> u64 {
        if self.must_wait_to_name(ip) {
            self.next_native += 1;
            self.unnamed
                .push((self.next_native, ip, sys::monotonic_ns()));
            return self.next_native;
        }
        let (key, def) = self.describe(ip);
        let next = self.next_native + 1;
        let s = self.session;
        let id = *self.natives.entry(key).or_insert_with(|| {
            s.out
                .push_record(&Record::NativeFrameDef(NativeFrameDef { id: next, ..def }));
            next
        });
        self.next_native = self.next_native.max(id);
        id
    }

    /// Whether `ip` is better named later: its module is still being read, or it lies in a
    /// library loaded, or code the runtime made, since the memory map was last read (which is
    /// re-read for it now and then: see [`Unwinder::refresh_modules_for`]).
    fn must_wait_to_name(&mut self, ip: usize) -> bool {
        self.unwinder.refresh_modules_for(ip);
        let modules = self.unwinder.modules();
        if modules.contains_code(ip) {
            let unread = !modules.names_ready(ip);
            if unread {
                self.read_module_of(ip);
            }
            unread
        } else {
            // In a library the map does not show yet, or in no file: code the runtime made
            // since the map was read (a stub, a helper), named once the map shows it.
            sys::native_symbol(ip).is_none_or(|s| !s.library.is_empty())
        }
    }

    /// Defines the frames [`Self::native`] made before their modules could be named: those
    /// whose module has been read by now, or has waited [`UNNAMED_WAIT_NS`] for the memory
    /// map to show it, or (`wait`) all of them, reading what is left.
    pub fn name_unnamed(&mut self, wait: bool) {
        let now = sys::monotonic_ns();
        if wait && !self.unnamed.is_empty() {
            // The last look: with the memory map as it is now.
            self.anonymous_refreshed_ns = now;
            self.unwinder.refresh_modules();
        }
        let mut i = 0;
        while i < self.unnamed.len() {
            let (id, ip, since) = self.unnamed[i];
            let waited_enough = wait || now.saturating_sub(since) >= UNNAMED_WAIT_NS;
            if !waited_enough && self.must_wait_to_name(ip) {
                i += 1;
                continue;
            }
            self.unnamed.swap_remove(i);
            let (key, def) = self.describe(ip);
            // Later addresses of the same function take this frame.
            self.natives.entry(key).or_insert(id);
            self.session
                .out
                .push_record(&Record::NativeFrameDef(NativeFrameDef { id, ..def }));
        }
    }

    /// Hands the native module containing `ip`, the first time a stack passes through it, to
    /// the module reading thread (see [`ModuleReading`]).
    fn read_module_of(&mut self, ip: usize) {
        if let Some(reader) = self.unwinder.modules().reader_for(ip) {
            self.reading.read(self.session, reader);
        }
    }

    /// What names the native function containing `ip`: the key that tells native frames
    /// apart and its `NativeFrame` record (id 0, to be given).
    fn describe(&mut self, ip: usize) -> (NativeKey, NativeFrameDef) {
        // The module's symbol table names local functions too (the GC, libc's string
        // functions); where it has no symbol, the module's unwind information still tells where
        // the function starts. dladdr, which knows only exported symbols, is the fallback for
        // addresses that neither tells about.
        let located = self.unwinder.locate(ip);
        let module = located.as_ref().map_or(0, |f| self.module(f));
        let (library, symbol, function) = match located {
            Some(f) if f.name.is_some() || f.start.is_some() => {
                (f.library, f.name.unwrap_or_default(), f.start.unwrap_or(0))
            }
            located => match sys::native_symbol(ip) {
                Some(sym) => (sym.library, sym.symbol, 0),
                None if located.is_none() && self.in_anonymous_code(ip) => {
                    if let Some(kind) = self.stubs.kind_at(ip) {
                        (String::new(), kind.to_string(), 0)
                    } else if let Some(original) =
                        self.write_barrier.original_of(ip, self.unwinder.modules())
                    {
                        return self.describe_copied(original);
                    } else {
                        (String::new(), RUNTIME_STUB.to_owned(), 0)
                    }
                }
                None => (
                    located.map(|f| f.library).unwrap_or_default(),
                    String::new(),
                    0,
                ),
            },
        };
        native_frame(ip, library, symbol, module, function)
    }

    /// What names the runtime's write barriers running from its copy of them: the libcoreclr
    /// code at `original` they were copied from, named [`WRITE_BARRIER`] where libcoreclr's
    /// symbols do not name it (all barriers one frame then, as all stubs of a kind are).
    fn describe_copied(&mut self, original: usize) -> (NativeKey, NativeFrameDef) {
        let located = self.unwinder.locate(original);
        let module = located.as_ref().map_or(0, |f| self.module(f));
        let (library, symbol, function) = match located {
            Some(f) => (
                f.library,
                f.name.unwrap_or_else(|| WRITE_BARRIER.to_owned()),
                f.start.unwrap_or(0),
            ),
            None => (String::new(), WRITE_BARRIER.to_owned(), 0),
        };
        native_frame(original, library, symbol, module, function)
    }

    /// The `NativeModule` id of a function's module, defined on first use.
    fn module(&mut self, f: &crate::unwind::NativeFunction) -> u64 {
        let next = self.modules.len() as u64 + 1;
        let s = self.session;
        *self
            .modules
            .entry((f.library.clone(), f.build_id.clone()))
            .or_insert_with(|| {
                s.out.push_record(&Record::NativeModuleDef(NativeModuleDef {
                    id: next,
                    path: f.library.clone(),
                    build_id: f.build_id.to_string(),
                }));
                next
            })
    }

    /// Whether `ip`, found by the unwinder as a return address, cannot be one: it is no user
    /// space address (a word of other data: `0xf6fad761d26e75ff` was seen), it lies in the
    /// thread's own stack (a saved frame pointer or a local), in a library's data
    /// ([`Self::in_library_data`]), or in memory that holds no code (the heap, nothing mapped):
    /// what the memory map says of it now. Code the map did not show yet (what the runtime
    /// made since it was read) makes it be read again, at most every [`ANONYMOUS_REFRESH_NS`].
    fn not_code(&mut self, ip: usize) -> bool {
        const USER_SPACE_END: usize = 1 << 47;
        if !(0x1000..USER_SPACE_END).contains(&ip) {
            return true;
        }
        let (lo, hi) = self.stack;
        if lo <= ip && ip < hi {
            return true;
        }
        // A return address named before is code (the cache forgets code the runtime
        // unloaded), and so is one in managed code the unwinder has met: most frames of most
        // samples stop here.
        let lookup = ip.saturating_sub(1);
        if self.ips.contains_key(&lookup) || self.shapes.is_managed(lookup) {
            return false;
        }
        if self.in_library_data(ip) {
            return true;
        }
        if self.unwinder.modules().contains_code(ip) {
            return false;
        }
        if self.library_data.contains(&ip) {
            return true;
        }
        let data = !self.maps.now(ip).is_some_and(|m| m.executable);
        if data {
            self.library_data.insert(ip);
        } else {
            let now = sys::monotonic_ns();
            if now.saturating_sub(self.anonymous_refreshed_ns) >= ANONYMOUS_REFRESH_NS {
                self.anonymous_refreshed_ns = now;
                self.unwinder.refresh_modules();
            }
        }
        data
    }

    /// Whether `ip`, found by the unwinder as a return address, lies in a library's data (its
    /// read-only or writable segments) rather than in any code: no call returns there. The
    /// memory map is re-read first (at most every [`ANONYMOUS_REFRESH_NS`]) in case the
    /// library was loaded since.
    fn in_library_data(&mut self, ip: usize) -> bool {
        if self.unwinder.modules().contains_code(ip) {
            return false;
        }
        if self.library_data.contains(&ip) {
            return true;
        }
        if sys::native_symbol(ip).is_none_or(|s| s.library.is_empty()) {
            return false;
        }
        let now = sys::monotonic_ns();
        if now.saturating_sub(self.anonymous_refreshed_ns) >= ANONYMOUS_REFRESH_NS {
            self.anonymous_refreshed_ns = now;
            self.unwinder.refresh_modules();
        }
        let data = !self.unwinder.modules().contains_code(ip);
        if data {
            self.library_data.insert(ip);
        }
        data
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
    ///
    /// Generated code is freed when it is collected and its memory reused, sometimes before
    /// the runtime says so: its addresses are asked about again at every capture. The
    /// runtime answers for the address as it is now, and the sampler resolves captures some
    /// milliseconds after they were taken: a capture of a dynamic method that was collected
    /// meanwhile, its memory given to the next one, would be named after its successor. So
    /// when the runtime names other code than what was known at the address (cached, or a
    /// code range learnt earlier), and the runtime said that known method was collected after
    /// the capture was taken, the known method is the capture's.
    fn resolve(&mut self, ip: usize, ts: u64) -> FrameRef {
        let s = self.session;
        let owner = match self.ips.get(&ip) {
            Some(&FrameRef::Generated(id, il)) => match code_owner(&s.info, ip) {
                Some(owner) if s.defs.function_id(owner.jited.function) == id => {
                    return FrameRef::Generated(id, il);
                }
                _ if s.defs.ended_after(id, ts) => return FrameRef::Generated(id, il),
                owner => owner,
            },
            Some(&f) => return f,
            None => {
                // A generated method's range learnt earlier, whose life ended after the
                // capture: the address held its code then.
                // Or one collected after the capture before the sampler met it, whose
                // ranges the unload callback left.
                let before = self
                    .shapes
                    .known_generated(ip)
                    .filter(|b| s.defs.life_at_ended(b.jited.function, ts))
                    .or_else(|| s.gone_code.dying_at(ip, ts).map(CodeOwner::generated));
                let now = self.shapes.owner(ip);
                match before {
                    Some(b) if now.is_none_or(|n| n.jited.function != b.jited.function) => Some(b),
                    _ => now,
                }
            }
        };
        let frame = match owner {
            Some(owner) => {
                let function = owner.jited.function;
                let id = s.defs.function_seen_at(&s.info, &s.out, function, ts);
                let il = self.shapes.il_position(ip, owner.jited);
                let frame = if owner.generated {
                    FrameRef::Generated(id, il)
                } else {
                    FrameRef::Managed(id, il)
                };
                if id != s.defs.function_id(function) {
                    // The function's code was unloaded since the capture: the address may
                    // hold other code now, so this answer is for this capture alone.
                    return frame;
                }
                frame
            }
            None => FrameRef::Native(self.native(ip)),
        };
        self.ips.insert(ip, frame);
        frame
    }
}

/// The stack interner's frame of a resolved frame.
fn trace_frame(f: &FrameRef) -> Frame {
    match *f {
        FrameRef::Managed(id, il) | FrameRef::Generated(id, il) => Frame {
            kind: FrameKind::Managed,
            id,
            il,
        },
        FrameRef::Native(id) => Frame::of(FrameKind::Native, id),
    }
}
