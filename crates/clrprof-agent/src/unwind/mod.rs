//! Stack unwinding for sample mode, on the sampler thread.
//!
//! The signal handler walks the RBP chain at the moment of the sample (see
//! `recorder::capture`), which is right for JIT-compiled code and libcoreclr but not for glibc
//! and most distro libraries, which are built without frame pointers; when the interrupted
//! instruction lies in a native module it also copies the top of the stack. [`Unwinder`] turns
//! such a capture into the whole stack, frame by frame, down to the thread's start:
//!
//! - a pc inside an ELF module that has call frame information (`.eh_frame`, found through
//!   `.eh_frame_hdr`, or `.debug_frame` when a module has no `.eh_frame`) is unwound with that
//!   CFI: the CFA rule and where the return address and RBP were saved;
//! - any other pc (JIT code, stubs, modules without CFI) uses the frame-pointer rule: `[rbp]`
//!   is the caller's RBP, `[rbp + 8]` the return address, and the caller's RSP is `rbp + 16`.
//!   The frame pointer must be 8-aligned, at or above the current stack pointer and inside
//!   the stack, which makes the chain strictly increasing. When the handler's own walk read
//!   that very frame record, its frames are taken as they were at the sample ([`Chain`]),
//!   rather than from memory the thread has been using since;
//! - where the handler's chain ends (a frame without frame pointer, usually the thread's start
//!   in libc), the walk goes on from that frame with CFI again.
//!
//! Stack words come from the copy when they lie in it, otherwise from this process's live
//! memory through `process_vm_readv` (which fails cleanly on a bad address), and never from
//! outside `[rsp, stack_hi)`. The walk ends at the outermost frame marked by CFI (`clone3` or
//! `_start`: a complete stack), or early ([`Stop`]) at a zero return address, an unusable frame
//! pointer, a CFA that does not increase, an unreadable word or [`MAX_FRAMES`] frames. Nothing
//! here panics on bad input: bad CFI or garbage registers just end the walk.
//!
//! # Crate choice
//!
//! CFI is interpreted by `framehop` (the unwinder of the samply profiler), with `object`
//! reading ELF headers and sections from disk. framehop does exactly this job on the same
//! kind of input (a perf-style copy of the stack top plus the module list) and has been
//! hardened on real Linux stacks: it looks FDEs up through `.eh_frame_hdr`'s binary-search
//! table, evaluates the DWARF expressions that PLT entries use, and turns each CFI row into a
//! compact rule that it caches by address, so repeated samples of the same code cost a cache
//! hit per frame instead of a CFI interpretation. Using `gimli` directly would mean rewriting
//! that translation, caching and the x86-64 special cases ourselves. framehop tracks only
//! RIP, RSP and RBP, which is all x86-64 CFI needs outside of rare stack-realigning
//! functions (those end the walk).
//!
//! Module data are loaded lazily ([`ModuleMap`], in `modules.rs`): the executable mappings of
//! `/proc/self/maps`, each ELF's program headers (for the load bias) when it is first seen,
//! its unwind sections when a pc first falls in it, and its symbol table (see the
//! `clrprof-symbols` crate) and GNU build id when an address in it is first named. The vDSO is
//! read from memory. A file on disk is used only if its bytes match what is mapped. The CFI
//! walk itself is `cfi.rs`.
//!
//! Naming a native address ([`ModuleMap::locate`]) finds the function that contains it: by the
//! module's symbol table when it has a symbol there, else by the module's unwind information,
//! whose FDE for the address (found through `.eh_frame_hdr`'s binary-search table, with
//! `gimli`, which framehop already uses) starts exactly where the function starts. A stripped
//! library (.NET 8's libcoreclr) has an FDE for every function but symbols for its exports
//! only, so its functions stay apart, each known by its start address, which a symbol file can
//! name later (`clrprof report --symbols`).
//!
//! Only x86-64 Linux has the real thing; elsewhere (`fallback.rs`) the same API exists, knows
//! no modules and applies the frame-pointer rule alone.

use crate::recorder::sys;

use std::sync::Arc;

pub use crate::recorder::ring::MAX_FRAMES;

/// A native code address, named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NativeSymbol {
    /// Path of the module containing the address, as the process maps it.
    pub library: String,
    /// The readable (demangled) name of the function containing the address.
    pub symbol: String,
    /// Distance of the address from the function's first byte.
    pub offset: usize,
}

/// The native function containing a code address, as far as its module's files tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeFunction {
    /// Path of the module, as the process maps it (`[vdso]` for the vDSO).
    pub library: String,
    /// The module's GNU build id in lowercase hexadecimal (empty if it has none).
    pub build_id: Arc<str>,
    /// The address as the module's ELF file numbers it (the runtime address minus the load
    /// bias), if the load bias is known.
    pub svma: Option<u64>,
    /// Where the function starts, numbered like `svma`: from the symbol table, else from the
    /// unwind information (the FDE covering the address). `None` if neither tells.
    pub start: Option<u64>,
    /// The function's readable name, if the module's symbol table has one for it.
    pub name: Option<String>,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod cfi;
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod fallback;
pub mod managed;
mod maps_line;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod modules;
#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod naming_tests;
#[cfg(test)]
#[allow(unsafe_code)]
mod tests;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use cfi::Unwinder;
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub use fallback::{ModuleMap, ModuleReader, Unwinder};
pub use maps_line::MapsLine;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use modules::{ModuleMap, ModuleReader};

/// The frame records the signal handler read at the sample: `frames[0]` is the interrupted pc,
/// `frames[i]` the return address found in the frame record at `fps[i]` and `saved[i]` the
/// frame pointer saved there (`fps` increasing). They are what the stack held at the sample.
#[derive(Debug, Clone, Copy, Default)]
pub struct Chain<'a> {
    /// Code addresses, innermost first.
    pub frames: &'a [usize],
    /// Where each return address was found (`fps[0]` is unused).
    pub fps: &'a [usize],
    /// The saved frame pointer of each record (`saved[0]` is unused).
    pub saved: &'a [usize],
}

/// What the walks of one thread's stack keep for the next one.
///
/// - The outer part of the stack, from where the handler's chain ended to the thread's
///   start: it stays the same while the thread runs inside those frames (a caller's frame
///   cannot change while its callee's is live), so it is unwound once and reused while the
///   chain keeps ending at the same frame.
/// - The last few walks beyond the first frame ([`CallerMemo`]): a thread sampled again and
///   again in the same call path (a loop) has the same callers, whose unwinding is most of a
///   sample's cost. A walk whose first caller is one of them, and whose stack holds the same
///   words wherever that walk read one, would find the same frames: they are taken as they
///   are.
/// - Among those, the walk from the frame where the program's code (managed, or unwound by
///   frame pointer) last led into code with CFI: the native frames under the program (the
///   runtime's entry, the host, the thread's start), the same for every sample of a thread,
///   which a walk from another first caller (a recursion at another depth) reaches too. Once
///   it is remembered, the CFI frames walked per sample fell by 90% on a recursive workload,
///   by half on the others (`Realistic`, `Regex`).
#[derive(Debug, Clone, Default)]
pub struct Tail {
    /// pc, sp and bp where the chain ended.
    key: Option<(usize, usize, usize)>,
    frames: Vec<usize>,
    stop: Stop,
    /// Walks beyond the first frame, most recent first.
    callers: Vec<CallerMemo>,
    /// Scratch: the words read in the walk at hand.
    reads: Vec<(usize, Option<usize>)>,
}

/// How many walks beyond the first frame a thread keeps.
const CALLER_MEMOS: usize = 6;

impl Tail {
    /// Remembers a walk from the frame whose pc, sp and bp are `key`: what it found (`frames`,
    /// `stop`) in the unwinder's state `epoch`, and the words it read, which `reads` puts into
    /// the memo's buffer. The oldest memo's buffers are reused: no allocation once a thread has
    /// [`CALLER_MEMOS`] of them.
    fn remember(
        &mut self,
        key: (usize, usize, usize),
        frames: &[usize],
        stop: Stop,
        epoch: u64,
        reads: impl FnOnce(&mut Vec<(usize, Option<usize>)>),
    ) {
        let mut memo = if self.callers.len() >= CALLER_MEMOS {
            self.callers.pop().unwrap_or_default()
        } else {
            CallerMemo::default()
        };
        memo.key = key;
        reads(&mut memo.reads);
        memo.frames.clear();
        memo.frames.extend_from_slice(frames);
        memo.stop = stop;
        memo.epoch = epoch;
        self.callers.insert(0, memo);
    }
}

/// One walk beyond the first frame: where it started (the first caller's pc, sp and bp), every
/// stack word it read (and what it held, or that it could not be read), and what it found.
#[derive(Debug, Clone, Default)]
struct CallerMemo {
    key: (usize, usize, usize),
    /// The unwinder's state it was made in (see [`Unwinder::forget_walks`]).
    epoch: u64,
    reads: Vec<(usize, Option<usize>)>,
    frames: Vec<usize>,
    stop: Stop,
}

impl Chain<'_> {
    fn len(&self) -> usize {
        self.frames.len().min(self.fps.len()).min(self.saved.len())
    }

    /// The word the handler read at `addr`, if `addr` is a frame record's saved RBP or return
    /// address.
    fn word_at(&self, addr: usize) -> Option<usize> {
        if let Some(j) = self.at_fp(addr) {
            return Some(self.saved[j]);
        }
        let j = self.at_fp(addr.checked_sub(8)?)?;
        Some(self.frames[j])
    }

    /// The index of the frame whose record lies at `fp`, if the handler read it.
    fn at_fp(&self, fp: usize) -> Option<usize> {
        let n = self.len();
        if n < 2 || fp == 0 {
            return None;
        }
        let recorded = &self.fps[1..n];
        recorded.binary_search(&fp).ok().map(|i| i + 1)
    }
}

/// What the signal handler saw of an interrupted thread, which a walk of its stack starts from.
#[derive(Debug, Clone, Copy)]
pub struct Interrupted<'a> {
    /// Its registers.
    pub regs: Regs,
    /// The stack's bytes from `regs.rsp` up.
    pub copy: &'a [u8],
    /// The frame-pointer walk the handler did (empty if none).
    pub chain: Chain<'a>,
    /// The top of the thread's stack.
    pub stack_hi: usize,
}

/// The registers of an interrupted thread that unwinding starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regs {
    /// Instruction pointer.
    pub rip: usize,
    /// Stack pointer.
    pub rsp: usize,
    /// Frame pointer (or whatever the code keeps in RBP).
    pub rbp: usize,
}

/// Why an unwind ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stop {
    /// No unwind has run yet.
    #[default]
    NotRun,
    /// `out` reached [`MAX_FRAMES`].
    Limit,
    /// The stack pointer is not inside a usable stack (`rsp` too low or not below
    /// `stack_hi`): only the instruction pointer was recorded.
    NoStack,
    /// CFI that marks the outermost frame (or a zero return address by CFI): a complete
    /// stack.
    EndOfStack,
    /// The frame-pointer rule found RBP misaligned, below the stack pointer or outside the
    /// stack.
    BadFramePointer,
    /// The caller's stack pointer (CFA) was not above the callee's.
    CfaNotIncreasing,
    /// The caller's stack pointer would lie above the top of the stack.
    LeftStack,
    /// A stack word the rule needed could not be read (outside the stack, or unreadable).
    Unreadable,
    /// The module's CFI could not be used for this pc.
    BadCfi,
}

/// What the last [`Unwinder::unwind`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnwindStats {
    /// Frames unwound with CFI.
    pub cfi_frames: u32,
    /// Frames unwound with the frame-pointer rule (with the frame records the handler read
    /// where it read them).
    pub fp_frames: u32,
    /// Frames of managed methods unwound by their prologue's shape.
    pub managed_frames: u32,
    /// Frames taken from the thread's remembered tail.
    pub tail_frames: u32,
    /// Frames taken from a remembered walk beyond the first frame.
    pub memo_frames: u32,
    /// Reads of live memory (each fetches up to [`LIVE_CHUNK`] bytes) because a word was not
    /// in the copy.
    pub live_reads: u32,
    /// How far above `rsp` the walk read: the stack copy size that would have sufficed.
    pub stack_bytes: usize,
    /// Why the walk ended.
    pub stop: Stop,
}

/// A native module: one executable mapping of an ELF file (or the vDSO).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleInfo<'a> {
    /// Start of the executable mapping.
    pub start: usize,
    /// End (exclusive) of the executable mapping.
    pub end: usize,
    /// The file's path, or `[vdso]`.
    pub path: &'a str,
    /// Address where the ELF's virtual address 0 lies in this process (`avma - svma`), if the
    /// program headers could be read.
    pub load_bias: Option<usize>,
}

/// How many bytes one live read fetches (from the missing word upwards).
pub const LIVE_CHUNK: usize = 4096;

/// Stack pointers below this are garbage: nothing maps the first page.
const LOWEST_STACK: usize = 0x1000;

/// Where a frame is, as the per-frame CFI step sees it.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    allow(dead_code, reason = "only the CFI step reads the pc")
)]
pub(crate) struct FrameAt {
    pc: usize,
    /// True for the interrupted instruction; false for return addresses.
    first: bool,
    sp: usize,
    bp: usize,
}

#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    allow(dead_code, reason = "only the CFI step looks pcs up")
)]
impl FrameAt {
    /// The address to look unwind information up with: a return address points after the
    /// call, possibly into the next function, so callers are looked up one byte earlier.
    fn lookup(&self) -> usize {
        if self.first {
            self.pc
        } else {
            self.pc.wrapping_sub(1)
        }
    }
}

/// The result of unwinding one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The caller's frame: its return address and its RSP and RBP.
    Caller { ra: usize, sp: usize, bp: usize },
    /// The walk ends here.
    Stop(Stop),
}

/// Reads 8-byte stack words inside `[lo, hi)`: from the handler's copy of `[lo, lo +
/// copy.len())`, else from the frame records its chain walk read, else from live memory through
/// a reusable window buffer. The copy and the chain are what the stack held at the sample; live
/// memory is what it holds now, which is the same only for frames the thread has not left.
pub(crate) struct StackReader<'a> {
    lo: usize,
    hi: usize,
    copy: &'a [u8],
    chain: Chain<'a>,
    window: &'a mut Vec<u8>,
    window_at: usize,
    live_reads: u32,
    highest: usize,
    /// Where every read goes, while a walk is to be remembered.
    log: Option<Vec<(usize, Option<usize>)>>,
}

impl<'a> StackReader<'a> {
    fn new(
        lo: usize,
        hi: usize,
        copy: &'a [u8],
        chain: Chain<'a>,
        window: &'a mut Vec<u8>,
    ) -> StackReader<'a> {
        window.clear();
        let len = copy.len().min(hi.saturating_sub(lo));
        StackReader {
            lo,
            hi,
            copy: &copy[..len],
            chain,
            window,
            window_at: 0,
            live_reads: 0,
            highest: lo,
            log: None,
        }
    }

    pub(crate) fn read(&mut self, addr: usize) -> Option<usize> {
        let value = self.read_word(addr);
        if let Some(log) = self.log.as_mut() {
            log.push((addr, value));
        }
        value
    }

    fn read_word(&mut self, addr: usize) -> Option<usize> {
        let end = addr.checked_add(8)?;
        if addr < self.lo || end > self.hi {
            return None;
        }
        self.highest = self.highest.max(end);
        let off = addr - self.lo;
        if let Some(bytes) = self.copy.get(off..off + 8) {
            return word(bytes);
        }
        if let Some(value) = self.chain.word_at(addr) {
            return Some(value);
        }
        if addr >= self.window_at {
            let off = addr - self.window_at;
            if let Some(bytes) = self.window.get(off..off + 8) {
                return word(bytes);
            }
        }
        self.fetch(addr)
    }

    /// Reads live memory around `addr` into the window (or just the word, if that fails).
    fn fetch(&mut self, addr: usize) -> Option<usize> {
        self.live_reads += 1;
        let start = (addr & !63).max(self.lo);
        let len = LIVE_CHUNK.min(self.hi - start);
        self.window.clear();
        self.window.resize(len, 0);
        if sys::read_process_memory(start, self.window) {
            self.window_at = start;
            let off = addr - start;
            return self.window.get(off..off + 8).and_then(word);
        }
        self.window.clear();
        let mut bytes = [0u8; 8];
        sys::read_process_memory(addr, &mut bytes).then(|| usize::from_le_bytes(bytes))
    }
}

fn word(bytes: &[u8]) -> Option<usize> {
    <[u8; 8]>::try_from(bytes).ok().map(usize::from_le_bytes)
}

/// The frame-pointer rule, for code without CFI.
fn frame_pointer_step(reader: &mut StackReader<'_>, sp: usize, bp: usize) -> Step {
    let valid =
        bp.is_multiple_of(8) && bp >= sp && bp.checked_add(16).is_some_and(|e| e <= reader.hi);
    if !valid {
        return Step::Stop(Stop::BadFramePointer);
    }
    let Some(next_bp) = reader.read(bp) else {
        return Step::Stop(Stop::Unreadable);
    };
    match reader.read(bp + 8) {
        Some(ra) => Step::Caller {
            ra,
            sp: bp + 16,
            bp: next_bp,
        },
        None => Step::Stop(Stop::Unreadable),
    }
}

/// Where managed methods start and how their frames are laid out: the runtime knows (the
/// sampler asks it), the unwinder does not.
pub trait MethodShapes {
    /// The start of the code of the managed method version that contains `pc`, and the shape
    /// of its frame; `None` for code that is not managed, or whose prologue is not one the
    /// decoder knows.
    fn shape_at(&mut self, pc: usize) -> Option<(usize, managed::Shape)>;

    /// Whether `pc` is known to be managed code already (without asking the runtime).
    fn is_managed(&self, _pc: usize) -> bool {
        false
    }

    /// The code bytes at `addr` (`None` if they cannot be read). Code does not change while
    /// it is loaded, so an implementation may keep them.
    fn code_at(&mut self, addr: usize) -> Option<[u8; managed::CODE_WINDOW]> {
        let mut code = [0u8; managed::CODE_WINDOW];
        sys::read_process_memory(addr, &mut code).then_some(code)
    }
}

/// No managed code known: the frame-pointer rule for everything that has no CFI.
#[derive(Debug, Default)]
pub struct NoShapes;

impl MethodShapes for NoShapes {
    fn shape_at(&mut self, _pc: usize) -> Option<(usize, managed::Shape)> {
        None
    }
}

/// The managed rule: a method's prologue shape, where the frame-pointer rule would be wrong.
fn managed_rule(
    shapes: &mut dyn MethodShapes,
    at: FrameAt,
    reader: &mut StackReader<'_>,
) -> Option<Step> {
    let (start, shape) = shapes.shape_at(at.lookup())?;
    let code = if at.first {
        shapes.code_at(at.pc)
    } else {
        None
    };
    managed::step(
        &shape,
        start,
        at,
        code.as_ref().map_or(&[], |c| &c[..]),
        reader,
        shapes,
    )
}

/// How the walk unwinds one frame besides the frame-pointer rule: CFI of native modules, and
/// the prologue shapes of managed methods. Each returns `None` when it does not apply.
pub(crate) trait FrameRules {
    /// The step for a pc in a native module with call frame information.
    fn cfi(&mut self, at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step>;
    /// The step for a pc in managed code where the frame-pointer rule would be wrong.
    fn managed(&mut self, at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step>;
}

/// The walk shared by every platform, from where `thread` was interrupted: for each frame, `rules` first (CFI, managed shapes), then
/// the frame-pointer rule, with the frame records the handler read at the sample when it read
/// the one at hand (`chain`) and memory otherwise. Where the chain ends, the rest of the stack
/// is `tail`'s if it ended there last time too; beyond the first frame, it is one of `tail`'s
/// remembered walks if that walk started from the same caller and every word it read is the
/// same now (`epoch` is the unwinder's state: walks remembered in another are not used).
fn walk(
    thread: Interrupted<'_>,
    mut tail: Option<&mut Tail>,
    out: &mut Vec<usize>,
    window: &mut Vec<u8>,
    rules: &mut dyn FrameRules,
    epoch: u64,
) -> UnwindStats {
    let Interrupted {
        regs,
        copy,
        chain,
        stack_hi,
    } = thread;
    let mut stats = UnwindStats::default();
    if out.len() >= MAX_FRAMES {
        stats.stop = Stop::Limit;
        return stats;
    }
    out.push(regs.rip);
    if regs.rsp < LOWEST_STACK || stack_hi <= regs.rsp {
        stats.stop = Stop::NoStack;
        return stats;
    }
    let mut reader = StackReader::new(regs.rsp, stack_hi, copy, chain, window);
    let mut at = FrameAt {
        pc: regs.rip,
        first: true,
        sp: regs.rsp,
        bp: regs.rbp,
    };
    let chain_len = chain.len();
    // Where the tail being unwound starts in `out`, when it is to be remembered.
    let mut tail_from = None;
    // Where the walk beyond the first frame starts in `out`, and its first caller's pc, sp
    // and bp, when it is to be remembered.
    let mut memo_from = None;
    // The latest frame a step without CFI led to (from managed code or by frame pointer):
    // where it is in `out`, its pc, sp and bp, and how many reads were logged before it. The
    // walk from the last one on (the native frames under the program's code: the runtime's
    // entry, the host, the thread's start) is remembered too, for walks that reach it from
    // another first caller (a recursion at another depth).
    let mut below_program: Option<(usize, (usize, usize, usize), usize)> = None;
    stats.stop = loop {
        if out.len() >= MAX_FRAMES {
            break Stop::Limit;
        }
        // The handler's walk stopped above the frame record at hand: what lies beyond it is
        // the thread's tail.
        let chain_ended = chain_len > 1 && chain.at_fp(at.bp) == Some(chain_len - 1);
        let mut by_cfi = false;
        let step = if let Some(step) = rules.cfi(at, &mut reader) {
            stats.cfi_frames += 1;
            by_cfi = true;
            step
        } else if let Some(step) = rules.managed(at, &mut reader) {
            stats.managed_frames += 1;
            step
        } else {
            stats.fp_frames += 1;
            frame_pointer_step(&mut reader, at.sp, at.bp)
        };
        let (ra, sp, bp) = match step {
            Step::Caller { ra, sp, bp } => (ra, sp, bp),
            Step::Stop(why) => break why,
        };
        if ra == 0 {
            // The outermost frame says so in its CFI; a zero found by any other rule is a
            // frame record that does not hold what the rule expected.
            break if by_cfi {
                Stop::EndOfStack
            } else {
                Stop::BadFramePointer
            };
        }
        if sp <= at.sp {
            break Stop::CfaNotIncreasing;
        }
        if sp > stack_hi {
            break Stop::LeftStack;
        }
        let first = at.first;
        out.push(ra);
        at = FrameAt {
            pc: ra,
            first: false,
            sp,
            bp,
        };
        if (first || !by_cfi)
            && let Some(t) = tail.as_deref_mut()
        {
            let key = (ra, sp, bp);
            let known = t.callers.iter().position(|m| {
                m.key == key
                    && m.epoch == epoch
                    && m.reads
                        .iter()
                        .all(|&(addr, value)| reader.read_word(addr) == value)
            });
            if known.is_none() && !first {
                let logged = reader.log.as_ref().map_or(0, Vec::len);
                below_program = Some((out.len(), key, logged));
            }
            if let Some(i) = known {
                let memo = t.callers.remove(i);
                // A walk being remembered depends on the words this one read too.
                if let Some(log) = reader.log.as_mut() {
                    log.extend_from_slice(&memo.reads);
                }
                let room = MAX_FRAMES - out.len();
                out.extend(memo.frames.iter().take(room));
                stats.memo_frames += memo.frames.len().min(room) as u32;
                let stop = if memo.frames.len() > room {
                    Stop::Limit
                } else {
                    memo.stop
                };
                t.callers.insert(0, memo);
                break stop;
            }
            if first {
                // Remember this walk from here on: the words it reads, what it finds.
                let mut reads = std::mem::take(&mut t.reads);
                reads.clear();
                reader.log = Some(reads);
                memo_from = Some((out.len(), key));
            }
        }
        if chain_ended && let Some(t) = tail.as_deref_mut() {
            let key = (ra, sp, bp);
            if t.key == Some(key) {
                let room = MAX_FRAMES - out.len();
                out.extend(t.frames.iter().take(room));
                stats.tail_frames += t.frames.len().min(room) as u32;
                break if t.frames.len() > room {
                    Stop::Limit
                } else {
                    t.stop
                };
            }
            // Unwind it now and remember it.
            t.key = Some(key);
            t.frames.clear();
            tail_from = Some(out.len());
        }
    };
    if let Some(t) = tail {
        if let Some(from) = tail_from {
            t.frames.extend_from_slice(&out[from..]);
            t.stop = stats.stop;
        }
        if let (Some((from, key)), Some(reads)) = (memo_from, reader.log.take()) {
            // The walk below the program's code first (its reads are the end of this walk's).
            if let Some((below_from, below_key, logged)) = below_program
                && below_from > from
                && out.len() >= below_from + 2
                && !t
                    .callers
                    .iter()
                    .any(|m| m.key == below_key && m.epoch == epoch)
            {
                let below_reads = &reads[logged.min(reads.len())..];
                t.remember(below_key, &out[below_from..], stats.stop, epoch, |r| {
                    r.clear();
                    r.extend_from_slice(below_reads);
                });
            }
            // This walk's log becomes the memo's reads; the memo's old buffer is the next log.
            let mut spare = Vec::new();
            t.remember(key, &out[from..], stats.stop, epoch, |r| {
                spare = std::mem::replace(r, reads);
            });
            t.reads = spare;
        }
    }
    stats.live_reads = reader.live_reads;
    stats.stack_bytes = reader.highest - regs.rsp;
    stats
}
