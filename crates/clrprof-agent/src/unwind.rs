//! Native stack unwinding for sample mode, on the sampler thread.
//!
//! The signal handler walks the RBP chain, which is right for JIT-compiled code and
//! libcoreclr but not for glibc and most distro libraries, which are built without frame
//! pointers: a thread blocked in a futex wait would yield only its libc frame. When the
//! interrupted instruction lies in a native module, the handler also copies the top of the
//! stack; [`Unwinder::unwind`] then walks it here, frame by frame:
//!
//! - a pc inside an ELF module that has call frame information (`.eh_frame`, found through
//!   `.eh_frame_hdr`, or `.debug_frame` when a module has no `.eh_frame`) is unwound with that
//!   CFI: the CFA rule and where the return address and RBP were saved;
//! - any other pc (JIT code, stubs, modules without CFI) uses the frame-pointer rule: `[rbp]`
//!   is the caller's RBP, `[rbp + 8]` the return address, and the caller's RSP is `rbp + 16`.
//!   The frame pointer must be 8-aligned, at or above the current stack pointer and inside
//!   the stack, which makes the chain strictly increasing.
//!
//! Stack words come from the copy when they lie in it, otherwise from this process's live
//! memory through `process_vm_readv` (which fails cleanly on a bad address), and never from
//! outside `[rsp, stack_hi)`. The walk stops at a zero return address, the outermost frame
//! marked by CFI, an unusable frame pointer, a CFA that does not increase, an unreadable word
//! or [`MAX_FRAMES`] frames. Nothing here panics on bad input: bad CFI or garbage registers
//! just end the walk.
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
//! Module data are loaded lazily: [`ModuleMap`] lists the executable mappings from
//! `/proc/self/maps` and reads each ELF's program headers (for the load bias) when it first
//! sees the file, but reads its unwind sections only when a pc first falls in it, and its
//! symbol table (see [`crate::symbols`]) only when an address in it is first named. The vDSO
//! is read from memory. A file on disk is used only if its bytes match what is mapped.
//!
//! Only x86-64 Linux has the real thing; elsewhere the same API exists, knows no modules and
//! applies the frame-pointer rule to the copy alone.

use crate::recorder::sys;

pub use crate::recorder::threads::MAX_FRAMES;
pub use crate::symbols::NativeSymbol;

pub use native::{ModuleMap, Unwinder};

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
    /// A zero return address, or CFI that marks the outermost frame: a complete stack.
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
    /// Frames unwound with the frame-pointer rule.
    pub fp_frames: u32,
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
struct FrameAt {
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
enum Step {
    /// The caller's frame: its return address and its RSP and RBP.
    Caller { ra: usize, sp: usize, bp: usize },
    /// The walk ends here.
    Stop(Stop),
}

/// Reads 8-byte stack words inside `[lo, hi)`: from the handler's copy of `[lo, lo +
/// copy.len())`, else from live memory through a reusable window buffer.
struct StackReader<'a> {
    lo: usize,
    hi: usize,
    copy: &'a [u8],
    window: &'a mut Vec<u8>,
    window_at: usize,
    live_reads: u32,
    highest: usize,
}

impl<'a> StackReader<'a> {
    fn new(lo: usize, hi: usize, copy: &'a [u8], window: &'a mut Vec<u8>) -> StackReader<'a> {
        window.clear();
        let len = copy.len().min(hi.saturating_sub(lo));
        StackReader {
            lo,
            hi,
            copy: &copy[..len],
            window,
            window_at: 0,
            live_reads: 0,
            highest: lo,
        }
    }

    fn read(&mut self, addr: usize) -> Option<usize> {
        let end = addr.checked_add(8)?;
        if addr < self.lo || end > self.hi {
            return None;
        }
        self.highest = self.highest.max(end);
        let off = addr - self.lo;
        if let Some(bytes) = self.copy.get(off..off + 8) {
            return word(bytes);
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

/// The walk shared by every platform. `cfi` unwinds one frame with CFI, or returns `None`
/// when no CFI covers its pc (then the frame-pointer rule applies).
fn walk<F>(
    regs: Regs,
    copy: &[u8],
    stack_hi: usize,
    out: &mut Vec<usize>,
    window: &mut Vec<u8>,
    mut cfi: F,
) -> UnwindStats
where
    F: FnMut(FrameAt, &mut StackReader<'_>) -> Option<Step>,
{
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
    let mut reader = StackReader::new(regs.rsp, stack_hi, copy, window);
    let mut at = FrameAt {
        pc: regs.rip,
        first: true,
        sp: regs.rsp,
        bp: regs.rbp,
    };
    stats.stop = loop {
        if out.len() >= MAX_FRAMES {
            break Stop::Limit;
        }
        let step = match cfi(at, &mut reader) {
            Some(step) => {
                stats.cfi_frames += 1;
                step
            }
            None => {
                stats.fp_frames += 1;
                frame_pointer_step(&mut reader, at.sp, at.bp)
            }
        };
        let (ra, sp, bp) = match step {
            Step::Caller { ra, sp, bp } => (ra, sp, bp),
            Step::Stop(why) => break why,
        };
        if ra == 0 {
            break Stop::EndOfStack;
        }
        if sp <= at.sp {
            break Stop::CfaNotIncreasing;
        }
        if sp > stack_hi {
            break Stop::LeftStack;
        }
        out.push(ra);
        at = FrameAt {
            pc: ra,
            first: false,
            sp,
            bp,
        };
    };
    stats.live_reads = reader.live_reads;
    stats.stack_bytes = reader.highest - regs.rsp;
    stats
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod native {
    use std::collections::HashMap;
    use std::fs::File;
    use std::ops::Range;
    use std::os::unix::fs::FileExt;
    use std::path::Path;
    use std::sync::{Arc, OnceLock};
    use std::time::{Duration, Instant};

    use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
    use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _};
    use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
    use object::{Endianness, ReadCache, ReadRef, elf};

    use super::{ModuleInfo, NativeSymbol, Regs, Step, Stop, UnwindStats, walk};
    use crate::recorder::sys;
    use crate::symbols::{DEBUG_ROOT, SymbolTable, demangle};

    /// Section data handed to framehop (shared, so re-registering a module copies nothing).
    type Bytes = Arc<[u8]>;

    /// Re-reading `/proc/self/maps` because of an unknown address happens at most this often.
    const REFRESH_INTERVAL: Duration = Duration::from_millis(100);

    /// Highest user-space address on x86-64 (the user half of a 57-bit LA57 address space).
    const USER_MAX: usize = 0x00ff_ffff_ffff_ffff;

    /// How many bytes of a mapping are compared with the file before its CFI is trusted.
    const VERIFY_BYTES: usize = 64;

    /// One `PT_LOAD` program header.
    #[derive(Debug, Clone, Copy)]
    struct Load {
        vaddr: u64,
        offset: u64,
        filesz: u64,
        exec: bool,
    }

    /// Where an image's bytes come from.
    enum Source {
        /// A file; `deleted` when the maps line said "(deleted)" (then only
        /// `/proc/self/map_files` can open it).
        File { path: String, deleted: bool },
        /// An image read from memory (the vDSO).
        Memory(Bytes),
    }

    /// An ELF image mapped into this process.
    struct Image {
        name: String,
        source: Source,
        loads: Vec<Load>,
        /// Unwind sections, read on first use; `None` when unavailable.
        cfi: OnceLock<Option<Arc<Cfi>>>,
        /// Function symbols, read on first use; `None` when unavailable.
        symbols: OnceLock<Option<SymbolTable>>,
    }

    /// The unwind sections of one image, with the addresses (SVMAs) framehop needs to resolve
    /// section-relative pointers.
    struct Cfi {
        eh_frame: Option<(Bytes, Range<u64>)>,
        eh_frame_hdr: Option<(Bytes, Range<u64>)>,
        debug_frame: Option<Bytes>,
        text: Option<Range<u64>>,
        got: Option<Range<u64>>,
    }

    /// Whether a mapping's CFI is known to framehop.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum CfiState {
        /// Not looked at yet (or framehop was rebuilt since).
        Unknown,
        /// No usable CFI: the frame-pointer rule applies.
        Missing,
        /// Added to framehop.
        Registered,
    }

    /// One executable mapping.
    struct Mapping {
        start: usize,
        end: usize,
        offset: u64,
        /// The ELF image, for native code; `None` for anonymous or non-ELF code (JIT code,
        /// ReadyToRun images, double-mapped code).
        image: Option<Arc<Image>>,
        bias: Option<usize>,
        state: CfiState,
    }

    /// Identifies a mapped file: device, inode and path as `/proc/self/maps` shows them.
    type FileKey = (String, u64, String);

    /// The executable mappings of this process and the unwind data of its native modules.
    pub struct ModuleMap {
        /// Sorted by start; never overlapping.
        mappings: Vec<Mapping>,
        /// Every file seen mapped executable, ELF (`Some`) or not (`None`).
        files: HashMap<FileKey, Option<Arc<Image>>>,
        generation: u64,
        last_refresh: Option<Instant>,
    }

    impl Default for ModuleMap {
        fn default() -> Self {
            Self::new()
        }
    }

    impl ModuleMap {
        /// Reads `/proc/self/maps` (an unreadable one leaves the map empty).
        pub fn new() -> ModuleMap {
            let mut map = ModuleMap {
                mappings: Vec::new(),
                files: HashMap::new(),
                generation: 0,
                last_refresh: None,
            };
            map.refresh();
            map
        }

        /// Re-reads `/proc/self/maps`, keeping what is known about mappings that did not
        /// change. Returns true if the native modules changed (then [`Self::generation`] grew);
        /// other code mappings (JIT code heaps) are tracked without counting as a change.
        pub fn refresh(&mut self) -> bool {
            self.last_refresh = Some(Instant::now());
            let Ok(text) = std::fs::read_to_string("/proc/self/maps") else {
                return false;
            };
            let old_len = self.mappings.len();
            let old_native = self.mappings.iter().filter(|m| m.image.is_some()).count();
            let mut old = std::mem::take(&mut self.mappings).into_iter().peekable();
            let mut files = HashMap::with_capacity(self.files.len());
            let mut mappings = Vec::with_capacity(old_len);
            let mut kept_native = 0;
            for line in text.lines() {
                let Some(entry) = MapsLine::parse(line) else {
                    continue;
                };
                if !entry.executable || entry.start >= entry.end {
                    continue;
                }
                if mappings
                    .last()
                    .is_some_and(|m: &Mapping| m.end > entry.start)
                {
                    continue; // not sorted or overlapping: never happens, but stay consistent
                }
                let image = self.image_for(&entry, &mut files);
                // Reuse the old state of an identical mapping (both lists are sorted).
                while old.next_if(|m| m.start < entry.start).is_some() {}
                let same = old.next_if(|m| {
                    m.start == entry.start
                        && m.end == entry.end
                        && m.offset == entry.offset
                        && same_image(&m.image, &image)
                });
                kept_native += usize::from(same.as_ref().is_some_and(|m| m.image.is_some()));
                mappings.push(same.unwrap_or_else(|| {
                    Mapping {
                        start: entry.start,
                        end: entry.end,
                        offset: entry.offset,
                        bias: image
                            .as_ref()
                            .and_then(|i| i.bias(entry.start, entry.offset)),
                        image,
                        state: CfiState::Unknown,
                    }
                }));
            }
            let new_native = mappings.iter().filter(|m| m.image.is_some()).count();
            let changed = kept_native != old_native || kept_native != new_native;
            self.mappings = mappings;
            self.files = files;
            if changed {
                self.generation += 1;
            }
            changed
        }

        /// Finds (or creates) the image of a maps line.
        fn image_for(
            &self,
            entry: &MapsLine<'_>,
            files: &mut HashMap<FileKey, Option<Arc<Image>>>,
        ) -> Option<Arc<Image>> {
            if entry.path == "[vdso]" {
                // Kept while the same vDSO mapping stays; it never changes in practice.
                let key = (String::new(), entry.start as u64, entry.path.to_owned());
                return files
                    .entry(key.clone())
                    .or_insert_with(|| {
                        self.files
                            .get(&key)
                            .cloned()
                            .unwrap_or_else(|| Image::from_memory(entry.start, entry.end))
                    })
                    .clone();
            }
            if !entry.path.starts_with('/') {
                return None;
            }
            let key = (entry.dev.to_owned(), entry.inode, entry.path.to_owned());
            files
                .entry(key.clone())
                .or_insert_with(|| {
                    self.files
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| Image::from_file(entry))
                })
                .clone()
        }

        /// A counter that grows whenever the native modules change: republish
        /// [`Self::native_ranges`] when it moves.
        pub fn generation(&self) -> u64 {
            self.generation
        }

        /// True if `addr` lies in the code of a native (ELF) module or the vDSO.
        pub fn contains_native(&self, addr: usize) -> bool {
            self.find(addr)
                .is_some_and(|i| self.mappings[i].image.is_some())
        }

        /// The native code ranges `[start, end)`, sorted, adjacent ranges merged: what the
        /// signal handler checks to decide whether to copy the stack.
        pub fn native_ranges(&self) -> Vec<(usize, usize)> {
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            for m in self.mappings.iter().filter(|m| m.image.is_some()) {
                match ranges.last_mut() {
                    Some(last) if last.1 == m.start => last.1 = m.end,
                    _ => ranges.push((m.start, m.end)),
                }
            }
            ranges
        }

        /// The native module whose code contains `addr`.
        pub fn module_at(&self, addr: usize) -> Option<ModuleInfo<'_>> {
            let m = &self.mappings[self.find(addr)?];
            let image = m.image.as_ref()?;
            Some(ModuleInfo {
                start: m.start,
                end: m.end,
                path: &image.name,
                load_bias: m.bias,
            })
        }

        /// Names the native function containing `addr`: its module's path, its demangled name
        /// and `addr`'s offset in it. The module's symbol table is read the first time (that
        /// can take milliseconds: see [`crate::symbols`]), then kept for as long as the module
        /// stays mapped. `None` if `addr` is in no native module, or in no function of its
        /// symbol table, or the module has none.
        pub fn symbolize(&self, addr: usize) -> Option<NativeSymbol> {
            let m = &self.mappings[self.find(addr)?];
            let image = m.image.as_ref()?;
            let bias = m.bias?;
            let table = image.symbols(m.start, m.end, m.offset)?;
            let (name, offset) = table.lookup((addr as u64).wrapping_sub(bias as u64))?;
            Some(NativeSymbol {
                library: image.name.clone(),
                symbol: demangle(name),
                offset: offset as usize,
            })
        }

        /// The symbol table of the native module containing `addr`, read if it was not yet.
        pub fn symbol_table(&self, addr: usize) -> Option<&SymbolTable> {
            let m = &self.mappings[self.find(addr)?];
            m.image.as_ref()?.symbols(m.start, m.end, m.offset)
        }

        /// True if `addr` lies in any executable mapping, native or not.
        pub fn contains_code(&self, addr: usize) -> bool {
            self.find(addr).is_some()
        }

        /// The index of the executable mapping containing `addr`.
        fn find(&self, addr: usize) -> Option<usize> {
            let i = self.mappings.partition_point(|m| m.start <= addr);
            let i = i.checked_sub(1)?;
            (addr < self.mappings[i].end).then_some(i)
        }

        fn refresh_due(&self) -> bool {
            self.last_refresh
                .is_none_or(|t| t.elapsed() >= REFRESH_INTERVAL)
        }

        /// Makes sure mapping `i`'s CFI is registered with `framehop`; false if it has none.
        fn ensure_registered(&mut self, i: usize, framehop: &mut UnwinderX86_64<Bytes>) -> bool {
            let m = &mut self.mappings[i];
            match m.state {
                CfiState::Registered => return true,
                CfiState::Missing => return false,
                CfiState::Unknown => {}
            }
            let module = match (&m.image, m.bias) {
                (Some(image), Some(bias)) => image
                    .cfi(m.start, m.end, m.offset)
                    .map(|cfi| cfi.module(&image.name, m.start, m.end, bias)),
                _ => None,
            };
            match module {
                Some(module) => {
                    framehop.add_module(module);
                    m.state = CfiState::Registered;
                    true
                }
                None => {
                    m.state = CfiState::Missing;
                    false
                }
            }
        }

        /// Forgets every registration (framehop was replaced).
        fn unregister_all(&mut self) {
            for m in &mut self.mappings {
                if m.state == CfiState::Registered {
                    m.state = CfiState::Unknown;
                }
            }
        }
    }

    fn same_image(a: &Option<Arc<Image>>, b: &Option<Arc<Image>>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// The fields of one `/proc/self/maps` line that matter here.
    struct MapsLine<'a> {
        start: usize,
        end: usize,
        executable: bool,
        offset: u64,
        dev: &'a str,
        inode: u64,
        path: &'a str,
        deleted: bool,
    }

    impl<'a> MapsLine<'a> {
        /// Parses `start-end perms offset dev inode [path]`.
        fn parse(line: &'a str) -> Option<MapsLine<'a>> {
            let (range, rest) = field(line)?;
            let (perms, rest) = field(rest)?;
            let (offset, rest) = field(rest)?;
            let (dev, rest) = field(rest)?;
            let (inode, rest) = field(rest)?;
            let (start, end) = range.split_once('-')?;
            let mut path = rest.trim();
            let deleted = path.ends_with(" (deleted)");
            if deleted {
                path = path.trim_end_matches(" (deleted)");
            }
            Some(MapsLine {
                start: usize::from_str_radix(start, 16).ok()?,
                end: usize::from_str_radix(end, 16).ok()?,
                executable: perms.as_bytes().get(2) == Some(&b'x'),
                offset: u64::from_str_radix(offset, 16).ok()?,
                dev,
                inode: inode.parse().ok()?,
                path,
                deleted,
            })
        }
    }

    /// Splits off the first space-separated field.
    fn field(s: &str) -> Option<(&str, &str)> {
        let s = s.trim_start_matches(' ');
        let end = s.find(' ').unwrap_or(s.len());
        (end > 0).then(|| (&s[..end], &s[end..]))
    }

    impl Image {
        /// Reads a mapped file's ELF and program headers; `None` if it is not a 64-bit x86-64
        /// ELF (or cannot be opened).
        fn from_file(entry: &MapsLine<'_>) -> Option<Arc<Image>> {
            let file = open_mapped(entry.path, entry.deleted, entry.start, entry.end)?;
            let cache = ReadCache::new(file);
            let loads = program_loads(&cache)?;
            Some(Arc::new(Image {
                name: entry.path.to_owned(),
                source: Source::File {
                    path: entry.path.to_owned(),
                    deleted: entry.deleted,
                },
                loads,
                cfi: OnceLock::new(),
                symbols: OnceLock::new(),
            }))
        }

        /// Reads the vDSO image from memory.
        fn from_memory(start: usize, end: usize) -> Option<Arc<Image>> {
            let mut bytes = vec![0u8; end - start];
            if !sys::read_process_memory(start, &mut bytes) {
                return None;
            }
            let loads = program_loads(bytes.as_slice())?;
            Some(Arc::new(Image {
                name: "[vdso]".to_owned(),
                source: Source::Memory(bytes.into()),
                loads,
                cfi: OnceLock::new(),
                symbols: OnceLock::new(),
            }))
        }

        /// The load bias of a mapping of file offset `offset` at `start`, from the `PT_LOAD`
        /// header that maps that offset (executable ones first).
        fn bias(&self, start: usize, offset: u64) -> Option<usize> {
            let covers = |l: &&Load| {
                let first_page = l.offset & !0xfff;
                first_page <= offset && offset < l.offset.saturating_add(l.filesz.max(1))
            };
            let load = self
                .loads
                .iter()
                .filter(|l| l.exec)
                .find(covers)
                .or_else(|| self.loads.iter().find(covers))?;
            // start = bias + vaddr + (offset - p_offset)
            let bias = (start as u64)
                .wrapping_add(load.offset)
                .wrapping_sub(load.vaddr)
                .wrapping_sub(offset);
            usize::try_from(bias).ok()
        }

        /// The unwind sections, read on first use. The mapping `[start, end)` of file offset
        /// `offset` is used to check that the file still holds the mapped bytes.
        fn cfi(&self, start: usize, end: usize, offset: u64) -> Option<Arc<Cfi>> {
            self.cfi
                .get_or_init(|| {
                    let cfi = match &self.source {
                        Source::Memory(bytes) => Cfi::read(&bytes[..]),
                        Source::File { path, deleted } => {
                            let file = open_mapped(path, *deleted, start, end)?;
                            if !matches_memory(&file, start, end, offset) {
                                return None;
                            }
                            Cfi::read(&ReadCache::new(file))
                        }
                    };
                    cfi.filter(Cfi::has_cfi).map(Arc::new)
                })
                .clone()
        }

        /// The function symbols, read on first use, from a file that still holds the bytes
        /// mapped at `[start, end)` from file offset `offset`.
        fn symbols(&self, start: usize, end: usize, offset: u64) -> Option<&SymbolTable> {
            self.symbols
                .get_or_init(|| {
                    let debug_root = Path::new(DEBUG_ROOT);
                    match &self.source {
                        Source::Memory(bytes) => SymbolTable::read(&bytes[..], None, debug_root),
                        Source::File { path, deleted } => {
                            let file = open_mapped(path, *deleted, start, end)?;
                            if !matches_memory(&file, start, end, offset) {
                                return None;
                            }
                            let cache = ReadCache::new(file);
                            SymbolTable::read(&cache, Some(Path::new(path)), debug_root)
                        }
                    }
                })
                .as_ref()
        }
    }

    /// Opens the file behind a mapping: by path, else through `/proc/self/map_files` (which
    /// also reaches deleted or replaced files, where the kernel allows it).
    fn open_mapped(path: &str, deleted: bool, start: usize, end: usize) -> Option<File> {
        if !deleted && let Ok(file) = File::open(path) {
            return Some(file);
        }
        File::open(format!("/proc/self/map_files/{start:x}-{end:x}")).ok()
    }

    /// True if the file's bytes at `offset` are the ones mapped at `start` (or if the mapping
    /// cannot be read, as with execute-only pages).
    fn matches_memory(file: &File, start: usize, end: usize, offset: u64) -> bool {
        let n = VERIFY_BYTES.min(end - start);
        let mut mapped = [0u8; VERIFY_BYTES];
        let mut on_disk = [0u8; VERIFY_BYTES];
        if !sys::read_process_memory(start, &mut mapped[..n]) {
            return true;
        }
        file.read_exact_at(&mut on_disk[..n], offset).is_ok() && mapped[..n] == on_disk[..n]
    }

    /// The `PT_LOAD` headers of an x86-64 ELF64 image.
    fn program_loads<'data, R: ReadRef<'data>>(data: R) -> Option<Vec<Load>> {
        let header = elf::FileHeader64::<Endianness>::parse(data).ok()?;
        let endian = header.endian().ok()?;
        if header.e_machine(endian) != elf::EM_X86_64 {
            return None;
        }
        let loads = header
            .program_headers(endian, data)
            .ok()?
            .iter()
            .filter(|p| p.p_type(endian) == elf::PT_LOAD)
            .map(|p| Load {
                vaddr: p.p_vaddr(endian),
                offset: p.p_offset(endian),
                filesz: p.p_filesz(endian),
                exec: p.p_flags(endian) & elf::PF_X != 0,
            })
            .collect();
        Some(loads)
    }

    impl Cfi {
        /// Reads the unwind sections of an ELF image (`.debug_frame` only when there is no
        /// `.eh_frame`).
        fn read<'data, R: ReadRef<'data>>(data: R) -> Option<Cfi> {
            let header = elf::FileHeader64::<Endianness>::parse(data).ok()?;
            let endian = header.endian().ok()?;
            let sections = header.sections(endian, data).ok()?;
            let range = |name: &[u8]| {
                let (_, s) = sections.section_by_name(endian, name)?;
                let start = s.sh_addr(endian);
                Some(start..start.checked_add(s.sh_size(endian))?)
            };
            let bytes = |name: &[u8]| -> Option<Bytes> {
                let (_, s) = sections.section_by_name(endian, name)?;
                let data = s.data(endian, data).ok()?;
                (!data.is_empty()).then(|| Bytes::from(data))
            };
            let with_range = |name: &[u8]| Some((bytes(name)?, range(name)?));
            let eh_frame = with_range(b".eh_frame");
            let eh_frame_hdr = eh_frame.as_ref().and_then(|_| with_range(b".eh_frame_hdr"));
            let debug_frame = match eh_frame {
                Some(_) => None,
                None => bytes(b".debug_frame"),
            };
            Some(Cfi {
                eh_frame,
                eh_frame_hdr,
                debug_frame,
                text: range(b".text"),
                got: range(b".got"),
            })
        }

        fn has_cfi(&self) -> bool {
            self.eh_frame.is_some() || self.debug_frame.is_some()
        }

        /// A framehop module for the mapping `[start, end)` loaded with `bias`.
        fn module(&self, name: &str, start: usize, end: usize, bias: usize) -> Module<Bytes> {
            let info = ExplicitModuleSectionInfo {
                base_svma: 0,
                text_svma: self.text.clone(),
                got_svma: self.got.clone(),
                eh_frame_svma: self.eh_frame.as_ref().map(|(_, r)| r.clone()),
                eh_frame: self.eh_frame.as_ref().map(|(b, _)| b.clone()),
                eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|(_, r)| r.clone()),
                eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|(b, _)| b.clone()),
                debug_frame: self.debug_frame.clone(),
                ..ExplicitModuleSectionInfo::default()
            };
            Module::new(name.to_owned(), start as u64..end as u64, bias as u64, info)
        }
    }

    /// Unwinds copied stacks of this process. Keep one (on the sampler thread) for the whole
    /// session: it caches module data and unwind rules across calls.
    pub struct Unwinder {
        modules: ModuleMap,
        framehop: UnwinderX86_64<Bytes>,
        cache: CacheX86_64,
        window: Vec<u8>,
        stats: UnwindStats,
    }

    impl Default for Unwinder {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Unwinder {
        /// An unwinder for this process (reads `/proc/self/maps`).
        pub fn new() -> Unwinder {
            Unwinder {
                modules: ModuleMap::new(),
                framehop: UnwinderX86_64::new(),
                cache: CacheX86_64::new(),
                window: Vec::with_capacity(super::LIVE_CHUNK),
                stats: UnwindStats::default(),
            }
        }

        /// The module map (for [`ModuleMap::native_ranges`] and [`ModuleMap::generation`]).
        pub fn modules(&self) -> &ModuleMap {
            &self.modules
        }

        /// Re-reads the module list now (e.g. after the runtime loaded a native library).
        /// Returns true if it changed.
        pub fn refresh_modules(&mut self) -> bool {
            let changed = self.modules.refresh();
            if changed {
                self.framehop = UnwinderX86_64::new();
                self.modules.unregister_all();
            }
            changed
        }

        /// What the last [`Self::unwind`] did.
        pub fn last_stats(&self) -> UnwindStats {
            self.stats
        }

        /// Names the native function containing `addr` with the module map this unwinder
        /// shares (see [`ModuleMap::symbolize`]). An address in no known mapping makes it
        /// re-read the memory map first (at most once per refresh interval), in case a
        /// library was loaded since.
        pub fn symbolize(&mut self, addr: usize) -> Option<NativeSymbol> {
            if !self.modules.contains_code(addr)
                && (0x10000..=USER_MAX).contains(&addr)
                && self.modules.refresh_due()
            {
                self.refresh_modules();
            }
            self.modules.symbolize(addr)
        }

        /// Unwinds the stack of a thread interrupted with `regs`, appending code addresses
        /// to `out`, innermost first: `regs.rip`, then return addresses, until `out` holds
        /// [`super::MAX_FRAMES`]. `copy` holds the stack's bytes from `regs.rsp` up;
        /// `stack_hi` is the top of the stack. Never panics; bad input only shortens the
        /// result.
        pub fn unwind(&mut self, regs: Regs, copy: &[u8], stack_hi: usize, out: &mut Vec<usize>) {
            let Unwinder {
                modules,
                framehop,
                cache,
                window,
                stats,
            } = self;
            let mut refreshed = false;
            *stats = walk(regs, copy, stack_hi, out, window, |at, reader| {
                let lookup = at.lookup();
                let i = match modules.find(lookup) {
                    Some(i) => i,
                    None => {
                        // Perhaps a library loaded since the last look: re-read the maps,
                        // at most once per unwind and once per interval.
                        let plausible = (0x10000..=USER_MAX).contains(&lookup);
                        if refreshed || !plausible || !modules.refresh_due() {
                            return None;
                        }
                        refreshed = true;
                        if modules.refresh() {
                            *framehop = UnwinderX86_64::new();
                            modules.unregister_all();
                        }
                        modules.find(lookup)?
                    }
                };
                if !modules.ensure_registered(i, framehop) {
                    return None;
                }
                let address = if at.first {
                    FrameAddress::from_instruction_pointer(at.pc as u64)
                } else {
                    FrameAddress::from_return_address(at.pc as u64)?
                };
                let mut fregs = UnwindRegsX86_64::new(at.pc as u64, at.sp as u64, at.bp as u64);
                let mut read = |addr: u64| {
                    usize::try_from(addr)
                        .ok()
                        .and_then(|a| reader.read(a))
                        .map(|w| w as u64)
                        .ok_or(())
                };
                Some(
                    match framehop.unwind_frame(address, &mut fregs, cache, &mut read) {
                        Ok(Some(ra)) => Step::Caller {
                            ra: ra as usize,
                            sp: fregs.sp() as usize,
                            bp: fregs.bp() as usize,
                        },
                        Ok(None) => Step::Stop(Stop::EndOfStack),
                        Err(framehop::Error::CouldNotReadStack(_)) => Step::Stop(Stop::Unreadable),
                        Err(_) => Step::Stop(Stop::BadCfi),
                    },
                )
            });
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod native {
    use super::{ModuleInfo, NativeSymbol, Regs, UnwindStats, walk};

    /// No module list on this platform: every pc is "in no module".
    #[derive(Default)]
    pub struct ModuleMap;

    impl ModuleMap {
        /// An empty map.
        pub fn new() -> ModuleMap {
            ModuleMap
        }

        /// Nothing to re-read.
        pub fn refresh(&mut self) -> bool {
            false
        }

        /// Always 0.
        pub fn generation(&self) -> u64 {
            0
        }

        /// Always false.
        pub fn contains_native(&self, _addr: usize) -> bool {
            false
        }

        /// Always empty.
        pub fn native_ranges(&self) -> Vec<(usize, usize)> {
            Vec::new()
        }

        /// Always `None`.
        pub fn module_at(&self, _addr: usize) -> Option<ModuleInfo<'_>> {
            None
        }

        /// Always false.
        pub fn contains_code(&self, _addr: usize) -> bool {
            false
        }

        /// Always `None`.
        pub fn symbolize(&self, _addr: usize) -> Option<NativeSymbol> {
            None
        }
    }

    /// Frame-pointer unwinding over the copy only.
    #[derive(Default)]
    pub struct Unwinder {
        modules: ModuleMap,
        window: Vec<u8>,
        stats: UnwindStats,
    }

    impl Unwinder {
        /// A frame-pointer-only unwinder.
        pub fn new() -> Unwinder {
            Unwinder::default()
        }

        /// The (empty) module map.
        pub fn modules(&self) -> &ModuleMap {
            &self.modules
        }

        /// Nothing to re-read.
        pub fn refresh_modules(&mut self) -> bool {
            false
        }

        /// Always `None`: no symbol tables on this platform.
        pub fn symbolize(&mut self, _addr: usize) -> Option<NativeSymbol> {
            None
        }

        /// What the last [`Self::unwind`] did.
        pub fn last_stats(&self) -> UnwindStats {
            self.stats
        }

        /// Applies the frame-pointer rule to every frame; see the Linux version.
        pub fn unwind(&mut self, regs: Regs, copy: &[u8], stack_hi: usize, out: &mut Vec<usize>) {
            self.stats = walk(regs, copy, stack_hi, out, &mut self.window, |_, _| None);
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    /// A fake stack address, far from anything this process maps (checked where it matters).
    const FAKE_SP: usize = 0x5a5a_0000_0000;

    fn bytes_of(words: &[usize]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// A frame-pointer chain of three frames whose pcs are in no module, in a copy whose
    /// addresses are fake, so every word must come from the copy.
    fn synthetic_stack() -> (Vec<usize>, Regs, usize) {
        let at = |i: usize| FAKE_SP + i * 8;
        let mut words = vec![0usize; 32];
        words[4] = at(10); // frame record at word 4 -> caller's at 10
        words[5] = 0x10_1000;
        words[10] = at(20);
        words[11] = 0x10_2000;
        words[20] = 0; // outermost: zero return address
        words[21] = 0;
        let regs = Regs {
            rip: 0x10_0500,
            rsp: FAKE_SP,
            rbp: at(4),
        };
        (words, regs, at(32))
    }

    fn run(unwinder: &mut Unwinder, regs: Regs, copy: &[u8], hi: usize) -> Vec<usize> {
        let mut out = Vec::new();
        unwinder.unwind(regs, copy, hi, &mut out);
        out
    }

    #[test]
    fn frame_pointer_rule_for_pcs_in_no_module() {
        let mut buf = [0u8; 8];
        assert!(
            !sys::read_process_memory(FAKE_SP, &mut buf),
            "the fake stack is not mapped"
        );
        let mut u = Unwinder::new();
        let (words, regs, hi) = synthetic_stack();
        assert!(!u.modules().contains_native(regs.rip));
        let copy = bytes_of(&words);
        assert_eq!(
            run(&mut u, regs, &copy, hi),
            [0x10_0500, 0x10_1000, 0x10_2000]
        );
        let stats = u.last_stats();
        assert_eq!(stats.stop, Stop::EndOfStack);
        assert_eq!(
            (stats.fp_frames, stats.cfi_frames, stats.live_reads),
            (3, 0, 0)
        );
        assert_eq!(stats.stack_bytes, 22 * 8);

        // A misaligned frame pointer, or one below the stack pointer: only the pc.
        for rbp in [regs.rbp + 1, FAKE_SP - 16] {
            assert_eq!(run(&mut u, Regs { rbp, ..regs }, &copy, hi), [0x10_0500]);
            assert_eq!(u.last_stats().stop, Stop::BadFramePointer);
        }
        // A chain that goes back down, or leaves the stack, ends there.
        for next in [FAKE_SP + 4 * 8, FAKE_SP + 40 * 8] {
            let mut w = words.clone();
            w[10] = next;
            let out = run(&mut u, regs, &bytes_of(&w), hi);
            assert_eq!(out, [0x10_0500, 0x10_1000, 0x10_2000]);
            assert_eq!(u.last_stats().stop, Stop::BadFramePointer);
        }
        // No usable stack: only the pc.
        assert_eq!(run(&mut u, regs, &copy, FAKE_SP), [0x10_0500]);
        assert_eq!(u.last_stats().stop, Stop::NoStack);
        // A copy that ends early: the rest is read live, which fails on the fake address.
        assert_eq!(
            run(&mut u, regs, &copy[..8 * 8], hi),
            [0x10_0500, 0x10_1000]
        );
        let stats = u.last_stats();
        assert_eq!((stats.stop, stats.live_reads), (Stop::Unreadable, 1));
        // `out` is appended to, never beyond MAX_FRAMES.
        let mut out = vec![7; MAX_FRAMES - 1];
        u.unwind(regs, &copy, hi, &mut out);
        assert_eq!(out.len(), MAX_FRAMES);
        assert_eq!(
            (out[MAX_FRAMES - 1], u.last_stats().stop),
            (0x10_0500, Stop::Limit)
        );
        u.unwind(regs, &copy, hi, &mut out);
        assert_eq!(out.len(), MAX_FRAMES);
    }

    #[test]
    fn frame_pointer_chain_stops_at_max_frames() {
        let n = MAX_FRAMES + 50;
        let mut words = vec![0usize; 2 * n + 2];
        for f in 0..n {
            words[2 * f] = FAKE_SP + 16 * (f + 1);
            words[2 * f + 1] = 0x20_0000 + f;
        }
        let regs = Regs {
            rip: 0x10_0000,
            rsp: FAKE_SP,
            rbp: FAKE_SP,
        };
        let mut u = Unwinder::new();
        let out = run(&mut u, regs, &bytes_of(&words), FAKE_SP + words.len() * 8);
        assert_eq!(out.len(), MAX_FRAMES);
        assert_eq!(out[1..4], [0x20_0000, 0x20_0001, 0x20_0002]);
        assert_eq!(u.last_stats().stop, Stop::Limit);
    }

    #[test]
    fn unwinder_can_move_to_the_sampler_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Unwinder>();
        assert_send::<ModuleMap>();
    }

    #[test]
    fn garbage_never_panics() {
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        use std::cell::RefCell;

        let unwinder = RefCell::new(Unwinder::new());
        let mut code = unwinder.borrow().modules().native_ranges();
        if code.is_empty() {
            code.push((0x40_0000, 0x50_0000));
        }
        // A real, mapped buffer, so that some garbage stacks are read live.
        let real: Vec<u8> = (0..64 * 1024).map(|i| (i * 7) as u8).collect();
        let real_at = real.as_ptr() as usize;
        let strategy = (
            (0u8..3, any::<usize>()),
            (0u8..3, any::<usize>()),
            any::<usize>(),
            vec((0u8..5, any::<usize>()), 0..600),
            (0u8..3, any::<usize>()),
        );
        let config = Config {
            cases: 3000,
            failure_persistence: None,
            ..Config::default()
        };
        let pick_code = |r: usize| {
            let (lo, hi) = code[r % code.len()];
            lo + (r / 7) % (hi - lo)
        };
        TestRunner::new(config)
            .run(
                &strategy,
                |((rip_kind, rip), (sp_kind, sp), rbp, words, (hi_kind, hi))| {
                    let rip = if rip_kind == 0 { rip } else { pick_code(rip) };
                    let rsp = match sp_kind {
                        0 => sp,
                        1 => real_at + (sp % 4096) * 8,
                        _ => sp % 0x1_0000,
                    };
                    let copy: Vec<u8> = words
                        .iter()
                        .flat_map(|&(kind, w)| {
                            let w = match kind {
                                0 => w,
                                1 => rsp.wrapping_add(w % 8192),
                                2 => pick_code(w),
                                3 => w % 256,
                                _ => 0,
                            };
                            w.to_le_bytes()
                        })
                        .collect();
                    let stack_hi = match hi_kind {
                        0 => hi,
                        1 => rsp.saturating_add(copy.len()),
                        _ => rsp.saturating_add(hi % (128 * 1024)),
                    };
                    let mut out = Vec::new();
                    unwinder
                        .borrow_mut()
                        .unwind(Regs { rip, rsp, rbp }, &copy, stack_hi, &mut out);
                    prop_assert!(!out.is_empty() && out.len() <= MAX_FRAMES);
                    prop_assert_eq!(out[0], rip);
                    Ok(())
                },
            )
            .unwrap();
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    mod linux {
        use super::super::*;
        use core::ffi::{c_int, c_void};
        use std::cell::RefCell;
        use std::rc::Rc;

        /// The registers of the current instruction, as a signal handler would see them.
        macro_rules! current_regs {
            () => {{
                let (ip, sp, bp): (usize, usize, usize);
                // SAFETY: copies RIP, RSP and RBP into three output registers; touches no
                // memory, no stack and no flags.
                unsafe {
                    core::arch::asm!(
                        "lea {ip}, [rip]",
                        "mov {sp}, rsp",
                        "mov {bp}, rbp",
                        ip = out(reg) ip,
                        sp = out(reg) sp,
                        bp = out(reg) bp,
                        options(nomem, nostack, preserves_flags),
                    )
                };
                Regs {
                    rip: ip,
                    rsp: sp,
                    rbp: bp,
                }
            }};
        }

        type Action = Box<dyn FnOnce(Regs)>;

        thread_local! {
            static ON_COMPARE: RefCell<Option<Action>> = const { RefCell::new(None) };
        }

        /// qsort's comparator: on its first call, runs the pending action with its own
        /// registers, while libc's qsort frames are live below it.
        unsafe extern "C" fn compare(a: *const c_void, b: *const c_void) -> c_int {
            let regs = current_regs!();
            if let Some(action) = ON_COMPARE.with(|c| c.borrow_mut().take()) {
                action(regs);
            }
            // SAFETY: qsort passes pointers to two elements of the u32 array it sorts.
            let (a, b) = unsafe { (*a.cast::<u32>(), *b.cast::<u32>()) };
            a.cmp(&b) as c_int
        }

        /// Sorts with libc's qsort (no frame pointers in distro builds), running `action`
        /// inside the comparator.
        #[inline(never)]
        fn sort_calling(values: &mut [u32], action: Action) {
            ON_COMPARE.with(|c| *c.borrow_mut() = Some(action));
            // SAFETY: `values` is a live array of `values.len()` u32s and `compare` compares
            // two of its elements.
            unsafe { libc::qsort(values.as_mut_ptr().cast(), values.len(), 4, Some(compare)) };
        }

        /// Nests `depth` more native frames (with CFI) before sorting, for deeper stacks.
        #[inline(never)]
        fn nest(depth: usize, values: &mut [u32], action: Action) {
            if depth == 0 {
                sort_calling(values, action);
            } else {
                nest(depth - 1, std::hint::black_box(values), action);
            }
            std::hint::black_box(depth);
        }

        /// The current thread's stack from `rsp` up (at most `max` bytes) and its top.
        fn copy_stack(rsp: usize, max: usize) -> (Vec<u8>, usize) {
            let (_, hi) = sys::current_stack_bounds().expect("stack bounds");
            let mut copy = vec![0u8; (hi - rsp).min(max)];
            assert!(sys::read_process_memory(rsp, &mut copy));
            (copy, hi)
        }

        struct Walks {
            full: Vec<usize>,
            full_stats: UnwindStats,
            short: Vec<usize>,
            short_stats: UnwindStats,
            fp_only: Vec<usize>,
        }

        fn in_libc(map: &ModuleMap, addr: usize) -> bool {
            map.module_at(addr - 1)
                .is_some_and(|m| m.path.contains("/libc.so") || m.path.contains("/libc-"))
        }

        #[test]
        fn unwinds_through_libc_qsort() {
            let result: Rc<RefCell<Option<Walks>>> = Rc::default();
            let sink = Rc::clone(&result);
            let mut values: Vec<u32> = (0..64).rev().collect();
            sort_calling(
                &mut values,
                Box::new(move |regs| {
                    let (copy, hi) = copy_stack(regs.rsp, 256 * 1024);
                    let mut u = Unwinder::new();
                    let mut full = Vec::new();
                    u.unwind(regs, &copy, hi, &mut full);
                    let full_stats = u.last_stats();
                    let mut short = Vec::new();
                    u.unwind(regs, &copy[..64], hi, &mut short);
                    let short_stats = u.last_stats();
                    let mut fp_only = Vec::new();
                    let mut window = Vec::new();
                    walk(regs, &copy, hi, &mut fp_only, &mut window, |_, _| None);
                    *sink.borrow_mut() = Some(Walks {
                        full,
                        full_stats,
                        short,
                        short_stats,
                        fp_only,
                    });
                }),
            );
            assert!(values.windows(2).all(|w| w[0] <= w[1]));
            let walks = result.borrow_mut().take().expect("the comparator ran");
            let map = ModuleMap::new();
            let caller = sort_calling as *const () as usize;
            let in_caller = |a: usize| (caller..caller + 4096).contains(&a);
            let full = &walks.full;
            let describe = || {
                full.iter()
                    .map(|&a| {
                        let m = map.module_at(a.saturating_sub(1));
                        let s = sys::native_symbol(a.saturating_sub(1));
                        format!(
                            "{a:#x} {} {}",
                            m.map_or("?", |m| m.path),
                            s.map_or(String::new(), |s| s.symbol)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let libc_first = full[1..].iter().position(|&a| in_libc(&map, a));
            let back = full
                .iter()
                .skip(1)
                .position(|&a| in_caller(a))
                .map(|i| i + 1);
            let (Some(libc_first), Some(back)) = (libc_first, back) else {
                panic!(
                    "no libc frame or no caller frame ({:?}):\n{}",
                    walks.full_stats,
                    describe()
                );
            };
            assert_eq!(
                libc_first,
                0,
                "the comparator returns into libc:\n{}",
                describe()
            );
            assert!(
                full[1..back].iter().all(|&a| in_libc(&map, a)),
                "only libc between the comparator and its caller:\n{}",
                describe()
            );
            assert!(
                full[1..back].iter().any(|&a| {
                    sys::native_symbol(a - 1).is_some_and(|s| s.symbol.contains("qsort"))
                }),
                "a frame inside qsort:\n{}",
                describe()
            );
            assert!(
                walks.full_stats.cfi_frames as usize >= back,
                "{:?}",
                walks.full_stats
            );
            assert_eq!(walks.full_stats.live_reads, 0);
            // The walk goes on past the caller, up to the thread's first frame.
            assert!(full.len() > back + 2, "{}", describe());
            assert_eq!(walks.full_stats.stop, Stop::EndOfStack, "{}", describe());
            // A 64-byte copy: the rest of the stack is read live, with the same result.
            assert_eq!(&walks.short, full);
            assert!(walks.short_stats.live_reads > 0, "{:?}", walks.short_stats);
            // RBP is no frame pointer in libc: the frame-pointer walk loses the caller.
            eprintln!("{}", describe());
            eprintln!(
                "frame-pointer walk: {} frames, reaches the caller: {}",
                walks.fp_only.len(),
                walks.fp_only.iter().any(|&a| in_caller(a))
            );
        }

        #[test]
        fn module_map_lists_native_code() {
            let map = ModuleMap::new();
            let getpid = libc::getpid as *const () as usize;
            assert!(map.contains_native(getpid));
            let libc_module = map.module_at(getpid).expect("libc is a native module");
            assert!(libc_module.path.contains("libc"), "{libc_module:?}");
            let base = sys::native_symbol(getpid).expect("dladdr").base;
            assert_eq!(libc_module.load_bias, Some(base), "{libc_module:?}");
            let own = module_map_lists_native_code as *const () as usize;
            assert!(map.contains_native(own), "the test binary is native code");
            let heap = Box::new(0u64);
            assert!(!map.contains_native(&*heap as *const u64 as usize));
            assert!(!map.contains_native(0) && !map.contains_native(usize::MAX));
            let ranges = map.native_ranges();
            assert!(ranges.windows(2).all(|w| w[0].1 < w[1].0), "sorted, merged");
            assert!(ranges.iter().any(|&(lo, hi)| lo <= getpid && getpid < hi));
            assert!(
                ranges
                    .iter()
                    .any(|&(lo, _)| map.module_at(lo).is_some_and(|m| m.path == "[vdso]")),
                "the vDSO is native code"
            );
        }

        #[test]
        fn refresh_sees_new_mappings() {
            use std::os::fd::AsRawFd;

            let mut map = ModuleMap::new();
            let len = 4096;
            let map_exec = |fd: i32| {
                let flags = if fd < 0 { libc::MAP_ANONYMOUS } else { 0 };
                // SAFETY: a private mapping at no fixed address of `len` bytes (of `fd`'s file
                // from offset 0, or anonymous); nothing else is touched. Unmapped below.
                let p = unsafe {
                    libc::mmap(
                        core::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_EXEC,
                        libc::MAP_PRIVATE | flags,
                        fd,
                        0,
                    )
                };
                assert_ne!(p, libc::MAP_FAILED);
                p
            };
            // SAFETY: unmaps exactly a mapping made by `map_exec`.
            let unmap = |p: *mut libc::c_void| assert_eq!(unsafe { libc::munmap(p, len) }, 0);

            // A new anonymous executable mapping (a new JIT code heap): code, not native.
            let before = map.generation();
            let anon = map_exec(-1);
            map.refresh();
            assert!(map.contains_code(anon as usize), "known as code");
            assert!(!map.contains_native(anon as usize), "but not native");
            assert_eq!(map.generation(), before, "no native module changed");
            unmap(anon);

            // A new executable mapping of an ELF file (a library being loaded): native.
            let getpid = libc::getpid as *const () as usize;
            let libc_path = map.module_at(getpid).expect("libc").path.to_owned();
            let file = std::fs::File::open(&libc_path).expect("open libc");
            let elf = map_exec(file.as_raw_fd());
            assert!(!map.contains_native(elf as usize));
            assert!(map.refresh(), "a native module appeared");
            assert!(map.generation() > before);
            let module = map
                .module_at(elf as usize)
                .expect("the new mapping is native");
            assert_eq!(
                (module.path, module.load_bias),
                (&*libc_path, Some(elf as usize))
            );
            unmap(elf);
            assert!(map.refresh(), "a native module went away");
            assert!(!map.contains_code(elf as usize));
        }

        /// Cost of one unwind of a libc -> native (CFI) -> ... stack, warm caches. Run with
        /// `cargo test --release -p clrprof-agent unwind_cost -- --ignored --nocapture`.
        #[test]
        #[ignore]
        fn unwind_cost() {
            let mut values: Vec<u32> = (0..64).rev().collect();
            nest(
                20,
                &mut values,
                Box::new(|regs| {
                    let (copy, hi) = copy_stack(regs.rsp, 256 * 1024);
                    let started = std::time::Instant::now();
                    let mut u = Unwinder::new();
                    let mut out = Vec::with_capacity(MAX_FRAMES);
                    u.unwind(regs, &copy, hi, &mut out);
                    let cold = started.elapsed();
                    let stats = u.last_stats();
                    eprintln!(
                        "cold (maps + CFI loads + first unwind): {cold:?}; {} frames, {stats:?}",
                        out.len()
                    );
                    let mut map = ModuleMap::new();
                    let started = std::time::Instant::now();
                    for _ in 0..100 {
                        map.refresh();
                    }
                    eprintln!(
                        "ModuleMap::refresh (nothing new, {} native ranges): {:?}",
                        map.native_ranges().len(),
                        started.elapsed() / 100
                    );
                    for (label, copy_len) in [
                        ("16 KiB copy", 16 * 1024),
                        ("needed copy", stats.stack_bytes),
                        ("1 KiB copy + live reads", 1024),
                    ] {
                        let copy = &copy[..copy_len.min(copy.len())];
                        let rounds = 20_000;
                        let started = std::time::Instant::now();
                        for _ in 0..rounds {
                            out.clear();
                            u.unwind(regs, copy, hi, &mut out);
                        }
                        let per = started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
                        eprintln!(
                            "{label}: {per:.2} us per unwind, {} frames ({:.0} ns/frame), {:?}",
                            out.len(),
                            per * 1000.0 / out.len() as f64,
                            u.last_stats()
                        );
                    }
                }),
            );
        }
    }
}
