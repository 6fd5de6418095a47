//! The executable mappings of this process and what each native module offers: load bias,
//! call frame information (registered with framehop on first use, and looked up to find where
//! a function without a symbol starts), function symbols and the GNU build id.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use clrprof_symbols::{DEBUG_ROOT, SymbolTable, build_id, build_id_hex, demangle};
use framehop::x86_64::{CacheX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};
use gimli::{BaseAddresses, EhFrame, EhFrameHdr, LittleEndian, UnwindSection};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, ReadCache, ReadRef, elf};

use super::{MapsLine, ModuleInfo, NativeFunction, NativeSymbol};
use crate::recorder::sys;

/// An image's bytes, or a range of them (a section): its file mapped into memory, or the
/// vDSO's copy. Shared, so handing sections to framehop copies nothing.
#[derive(Clone)]
pub(super) struct Bytes {
    whole: Arc<Whole>,
    range: Range<usize>,
}

/// What a [`Bytes`] is a range of.
enum Whole {
    Mapped(sys::MappedFile),
    Copied(Box<[u8]>),
}

impl Bytes {
    fn new(whole: Whole) -> Bytes {
        let len = match &whole {
            Whole::Mapped(m) => m.len(),
            Whole::Copied(c) => c.len(),
        };
        Bytes {
            whole: Arc::new(whole),
            range: 0..len,
        }
    }

    /// The bytes at `offset..offset + len` of these, if they are all there.
    fn slice(&self, offset: u64, len: u64) -> Option<Bytes> {
        let start = self
            .range
            .start
            .checked_add(usize::try_from(offset).ok()?)?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        (end <= self.range.end).then(|| Bytes {
            whole: Arc::clone(&self.whole),
            range: start..end,
        })
    }
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes::new(Whole::Copied(Box::default()))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        let whole: &[u8] = match &*self.whole {
            Whole::Mapped(m) => m,
            Whole::Copied(c) => c,
        };
        &whole[self.range.clone()]
    }
}

/// Re-reading `/proc/self/maps` because of an unknown address happens at most this often.
const REFRESH_INTERVAL: Duration = Duration::from_millis(100);

/// Highest user-space address on x86-64 (the user half of a 57-bit LA57 address space).
pub(super) const USER_MAX: usize = 0x00ff_ffff_ffff_ffff;

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
    /// The file mapped into memory, on first use; `None` when it cannot be, or no longer
    /// holds what the process mapped.
    mapped: OnceLock<Option<Bytes>>,
    /// Unwind sections, read on first use; `None` when unavailable.
    cfi: OnceLock<Option<Arc<Cfi>>>,
    /// Function symbols, read on first use; `None` when unavailable.
    symbols: OnceLock<Option<SymbolTable>>,
    /// The GNU build id in hexadecimal, read on first use; empty when there is none.
    build_id: OnceLock<Arc<str>>,
    /// Set once a [`ModuleReader`] was handed this image to read.
    handed_out: AtomicBool,
}

/// What a native module's frames are named with, read on a thread of its own when a stack
/// first passes through it ([`ModuleMap::reader_for`]): reading a module's symbol table and unwind sections takes
/// milliseconds (tens for the runtime's own library), and the sampler, which must read every
/// thread's captures before their rings fill, should not be the one to wait for it.
pub struct ModuleReader {
    image: Arc<Image>,
    start: usize,
    end: usize,
    offset: u64,
    /// Whether the symbol table is read too (see [`ModuleMap::leave_symbols_to_reader`]).
    symbols: bool,
}

impl ModuleReader {
    /// Reads the module's unwind sections, symbol table and build id (what was read already
    /// is kept; a reader that gets there second waits for the first).
    pub fn read(&self) {
        let image = &self.image;
        let _ = image.cfi(self.start, self.end, self.offset);
        if self.symbols {
            let _ = image.symbols(self.start, self.end, self.offset);
        }
        let _ = image.build_id(self.start, self.end, self.offset);
    }
}

/// The unwind sections of one image, with the addresses (SVMAs) framehop needs to resolve
/// section-relative pointers.
struct Cfi {
    eh_frame: Option<(Bytes, Range<u64>)>,
    eh_frame_hdr: Option<(Bytes, Range<u64>)>,
    debug_frame: Option<Bytes>,
    text: Option<Range<u64>>,
    got: Option<Range<u64>>,
    /// The procedure linkage table's stubs (`.plt`, `.plt.sec`): one FDE covers each whole
    /// section, but every 16 bytes of it are a function of their own (`name@plt`).
    plt: [Option<Range<u64>>; 2],
}

/// The size of a stub of the procedure linkage table.
const PLT_STUB: u64 = 16;

/// Whether a mapping's CFI is known to framehop.
enum CfiState {
    /// Not looked at yet.
    Unknown,
    /// No usable CFI: the frame-pointer rule applies.
    Missing,
    /// Its own framehop unwinder, which knows this module alone, and its cache of unwind rules.
    Registered(Box<ModuleUnwinder>),
}

/// A framehop unwinder for one module, and its rule cache. One per module, not one for all:
/// framehop invalidates every cached rule of an unwinder when a module is added to it, and
/// modules are added as stacks first pass through them (measured on a thread-pool server
/// under load: 433 of 1,179 cache misses were rules dropped that way, each a new parse of
/// the function's CFI), and its cache is 509 slots indexed by address, which the hot return
/// addresses of several modules shared.
pub(super) struct ModuleUnwinder {
    pub(super) framehop: UnwinderX86_64<Bytes>,
    pub(super) cache: CacheX86_64,
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
    /// The runtime's double-mapped executable memory (its `memfd:doublemapper` file), where
    /// .NET 7 and later keep the code they generate and their copy of the write barriers.
    double_mapped: bool,
}

/// The path the runtime's double-mapped executable memory shows in the memory map.
const DOUBLE_MAPPER: &str = "/memfd:doublemapper";

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
    /// The loader's library counters when the map was last read (see [`sys::library_loads`]).
    loads_seen: Option<(u64, u64)>,
    /// The text of the latest whole read of `/proc/self/maps` and `CLOCK_MONOTONIC` before it:
    /// the sampler finds other mappings in it too (see [`Self::latest_read`]). Empty where
    /// the kernel lists the executable mappings alone (see [`Self::refresh`]).
    text: (u64, String),
    /// The symbol tables of modules read from their files are left to the reader of the
    /// trace ([`Self::leave_symbols_to_reader`]).
    symbols_left_to_reader: bool,
    /// The map, asked for its executable mappings alone where the kernel can.
    query: sys::MapsQuery,
}

/// An executable mapping as `PROCMAP_QUERY` describes it, with the fields a maps line has.
struct QueriedLine {
    start: usize,
    end: usize,
    offset: u64,
    dev: String,
    inode: u64,
    path: String,
    deleted: bool,
}

impl QueriedLine {
    fn as_line(&self) -> MapsLine<'_> {
        MapsLine {
            start: self.start,
            end: self.end,
            executable: true,
            offset: self.offset,
            dev: &self.dev,
            inode: self.inode,
            path: &self.path,
            deleted: self.deleted,
        }
    }
}

/// Room for a mapping's name: a path of `PATH_MAX` bytes and the kernel's ` (deleted)`.
const NAME_ROOM: usize = 4096 + 16;
/// More executable mappings than any process has: a listing that goes on is cut here.
const MAX_CODE_MAPPINGS: usize = 1 << 16;

impl Default for ModuleMap {
    fn default() -> Self {
        Self::new()
    }
}

impl ModuleMap {
    /// Reads `/proc/self/maps` (an unreadable one leaves the map empty).
    pub fn new() -> ModuleMap {
        ModuleMap::asking(sys::MapsQuery::default())
    }

    /// Reads the memory map, asking `query` for its executable mappings where it answers.
    pub(super) fn asking(query: sys::MapsQuery) -> ModuleMap {
        let mut map = ModuleMap {
            mappings: Vec::new(),
            files: HashMap::new(),
            generation: 0,
            last_refresh: None,
            loads_seen: None,
            text: (0, String::new()),
            symbols_left_to_reader: false,
            query,
        };
        map.refresh();
        map
    }

    /// Leaves naming the functions of modules read from their files to the reader of the trace
    /// (the CLI, which names a frame from its module's path and build id and its function's
    /// start, and reads the module's symbols out of the program's process): their symbol
    /// tables are not read here, and [`Self::locate`] gives a function's start from the
    /// unwind information alone. The vDSO and files deleted since they were mapped, which the
    /// reader cannot open, are named here still.
    pub fn leave_symbols_to_reader(&mut self) {
        self.symbols_left_to_reader = true;
    }

    /// Whether `image`'s symbol table is read here (see [`Self::leave_symbols_to_reader`]).
    fn reads_symbols(&self, image: &Image) -> bool {
        !self.symbols_left_to_reader || !matches!(image.source, Source::File { deleted: false, .. })
    }

    /// The executable mappings, by start address, as the kernel lists them one at a time
    /// (`None` where it cannot).
    fn query_code(&mut self) -> Option<Vec<QueriedLine>> {
        let mut lines = Vec::new();
        let mut name = vec![0u8; NAME_ROOM];
        let mut addr = 0;
        while lines.len() < MAX_CODE_MAPPINGS {
            let Some(m) = self.query.next_code(addr, &mut name)? else {
                break;
            };
            let full = String::from_utf8_lossy(&name[..m.name_len]);
            let path = full.strip_suffix(" (deleted)");
            lines.push(QueriedLine {
                start: m.start,
                end: m.end,
                offset: m.offset,
                dev: format!("{:02x}:{:02x}", m.dev_major, m.dev_minor),
                inode: m.inode,
                path: path.unwrap_or(&full).to_owned(),
                deleted: path.is_some(),
            });
            if m.end <= addr {
                break; // no progress: never happens, but never loop
            }
            addr = m.end;
        }
        Some(lines)
    }

    /// Re-reads `/proc/self/maps`, keeping what is known about mappings that did not
    /// change. Returns true if the native modules changed (then [`Self::generation`] grew);
    /// other code mappings (JIT code heaps) are tracked without counting as a change.
    pub fn refresh(&mut self) -> bool {
        self.last_refresh = Some(Instant::now());
        // Read before the map: a library the loader counts later is looked for again.
        self.loads_seen = sys::library_loads();
        let read_at = sys::monotonic_ns();
        // The kernel lists the executable mappings alone where it can (a few dozen of the
        // hundreds of lines, each of which the whole map formats: reading it was most of this
        // refresh); else the whole map is read.
        let queried = self.query_code();
        let text = match queried {
            Some(_) => String::new(),
            None => match std::fs::read_to_string("/proc/self/maps") {
                Ok(text) => text,
                Err(_) => return false,
            },
        };
        let entries: Vec<MapsLine<'_>> = match &queried {
            Some(lines) => lines.iter().map(QueriedLine::as_line).collect(),
            None => text.lines().filter_map(MapsLine::parse).collect(),
        };
        let old_len = self.mappings.len();
        let old_native = self.mappings.iter().filter(|m| m.image.is_some()).count();
        let mut old = std::mem::take(&mut self.mappings).into_iter().peekable();
        let mut files = HashMap::with_capacity(self.files.len());
        let mut mappings = Vec::with_capacity(old_len);
        let mut kept_native = 0;
        for entry in &entries {
            if !entry.executable || entry.start >= entry.end {
                continue;
            }
            if mappings
                .last()
                .is_some_and(|m: &Mapping| m.end > entry.start)
            {
                continue; // not sorted or overlapping: never happens, but stay consistent
            }
            let image = self.image_for(entry, &mut files);
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
                    double_mapped: entry.path == DOUBLE_MAPPER,
                }
            }));
        }
        let new_native = mappings.iter().filter(|m| m.image.is_some()).count();
        let changed = kept_native != old_native || kept_native != new_native;
        self.mappings = mappings;
        self.files = files;
        // A listing of executable mappings alone is no text for others to read.
        self.text = (if queried.is_some() { 0 } else { read_at }, text);
        if changed {
            self.generation += 1;
        }
        changed
    }

    /// The text of the latest read of `/proc/self/maps`, every mapping's line, and
    /// `CLOCK_MONOTONIC` just before it was read (`None` before any whole read, and where the
    /// kernel lists the executable mappings alone).
    pub fn latest_read(&self) -> Option<(u64, &str)> {
        (self.text.0 != 0).then_some((self.text.0, self.text.1.as_str()))
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
    /// and `addr`'s offset in it (see [`Self::locate`]). `None` if `addr` is in no native
    /// module, or in no function of its symbol table, or the module has none.
    pub fn symbolize(&self, addr: usize) -> Option<NativeSymbol> {
        let function = self.locate(addr)?;
        Some(NativeSymbol {
            offset: function.svma?.checked_sub(function.start?)? as usize,
            symbol: function.name?,
            library: function.library,
        })
    }

    /// The native function containing `addr`: its module (path and build id), and where the
    /// function starts and its name, from the module's symbol table; for an address no symbol
    /// covers (a stripped library), where the function starts from the module's unwind
    /// information, without a name. The module's symbol table, unwind sections and build id
    /// are read the first time (the table can take milliseconds: see the `clrprof-symbols`
    /// crate), then kept for as long as the module stays mapped. `None` if `addr` is in no
    /// native module.
    pub fn locate(&self, addr: usize) -> Option<NativeFunction> {
        let m = &self.mappings[self.find(addr)?];
        let image = m.image.as_ref()?;
        let mut function = NativeFunction {
            library: image.name.clone(),
            build_id: image.build_id(m.start, m.end, m.offset),
            svma: None,
            start: None,
            name: None,
        };
        let Some(bias) = m.bias else {
            return Some(function);
        };
        let svma = (addr as u64).wrapping_sub(bias as u64);
        function.svma = Some(svma);
        let symbol = self
            .reads_symbols(image)
            .then(|| image.symbols(m.start, m.end, m.offset))
            .flatten()
            .and_then(|table| table.lookup(svma));
        if let Some((name, offset)) = symbol {
            function.start = Some(svma - offset);
            function.name = Some(demangle(name));
        } else if let Some(cfi) = image.cfi(m.start, m.end, m.offset) {
            function.start = cfi.function_start(svma);
        }
        Some(function)
    }

    /// Where the function containing `addr` starts (numbered as the ELF file numbers it)
    /// according to its module's unwind information alone.
    #[cfg(test)]
    pub(super) fn function_start_by_unwind_info(&self, addr: usize) -> Option<u64> {
        let m = &self.mappings[self.find(addr)?];
        let cfi = m.image.as_ref()?.cfi(m.start, m.end, m.offset)?;
        cfi.function_start((addr as u64).wrapping_sub(m.bias? as u64))
    }

    /// The symbol table of the native module containing `addr`, read if it was not yet.
    pub fn symbol_table(&self, addr: usize) -> Option<&SymbolTable> {
        let m = &self.mappings[self.find(addr)?];
        m.image.as_ref()?.symbols(m.start, m.end, m.offset)
    }

    /// The reader of the native module containing `addr`, if it was never handed out: read
    /// it (on another thread) before its frames are named. Only modules a stack passes through
    /// are read: a process maps many libraries whose code no sample meets (the agent's own,
    /// most of the C++ runtime's), and their symbol tables would cost milliseconds each.
    pub fn reader_for(&self, addr: usize) -> Option<ModuleReader> {
        let m = &self.mappings[self.find(addr)?];
        let image = m.image.as_ref()?;
        (!image.handed_out.swap(true, Ordering::AcqRel)).then(|| ModuleReader {
            image: Arc::clone(image),
            start: m.start,
            end: m.end,
            offset: m.offset,
            symbols: self.reads_symbols(image),
        })
    }

    /// True if naming `addr` ([`Self::locate`]) reads nothing more: its module's symbol
    /// table, unwind sections and build id were read (or it is in no native module).
    pub fn names_ready(&self, addr: usize) -> bool {
        let Some(i) = self.find(addr) else {
            return true;
        };
        self.mappings[i].image.as_ref().is_none_or(|image| {
            (image.symbols.get().is_some() || !self.reads_symbols(image))
                && image.cfi.get().is_some()
                && image.build_id.get().is_some()
        })
    }

    /// The executable mapping of the first block of the runtime's double-mapped memory (file
    /// offset 0 of its `memfd:doublemapper`), `[start, end)`, if there is one.
    pub fn double_mapped_head(&self) -> Option<(usize, usize)> {
        self.mappings
            .iter()
            .find(|m| m.double_mapped && m.offset == 0)
            .map(|m| (m.start, m.end))
    }

    /// The code of the native module whose file is named `file_name` (its path's last part),
    /// as its file holds it: where its executable mapping starts, and that mapping's bytes
    /// read from the file (mapped on first use, then kept with the module), `code[0]` being
    /// the byte at `start`. `None` if no such module is mapped or its file cannot be read.
    pub fn module_code(&self, file_name: &str) -> Option<(usize, &[u8])> {
        let (m, image) = self.mappings.iter().find_map(|m| {
            let image = m.image.as_ref()?;
            let name = image.name.rsplit('/').next()?;
            (name == file_name).then_some((m, image))
        })?;
        // Mapped on first use; the image keeps it mapped for as long as it lives.
        let file: &[u8] = image.bytes(m.start, m.end, m.offset)?;
        let from = usize::try_from(m.offset).ok()?;
        let to = from.checked_add(m.end - m.start)?.min(file.len());
        Some((m.start, file.get(from..to)?))
    }

    /// True if `addr` lies in any executable mapping, native or not.
    pub fn contains_code(&self, addr: usize) -> bool {
        self.find(addr).is_some()
    }

    /// The index of the executable mapping containing `addr`.
    pub(super) fn find(&self, addr: usize) -> Option<usize> {
        let i = self.mappings.partition_point(|m| m.start <= addr);
        let i = i.checked_sub(1)?;
        (addr < self.mappings[i].end).then_some(i)
    }

    pub(super) fn refresh_due(&self) -> bool {
        self.last_refresh
            .is_none_or(|t| t.elapsed() >= REFRESH_INTERVAL)
    }

    /// Whether the memory map should be read again: a native library may have been loaded or
    /// unloaded since it was last read (see [`Self::libraries_may_have_changed`]), or that was
    /// `every` ago or more.
    pub fn reread_due(&self, every: Duration) -> bool {
        self.libraries_may_have_changed() || self.last_refresh.is_none_or(|t| t.elapsed() >= every)
    }

    /// Whether a native library may have been loaded or unloaded since the map was last read:
    /// the loader's counters moved (where they cannot be read, once the refresh interval has
    /// passed). Code the runtime maps itself has no unwind tables, so only the loader's
    /// libraries can give an unknown address frames to unwind.
    pub(super) fn libraries_may_have_changed(&self) -> bool {
        match (sys::library_loads(), self.loads_seen) {
            (Some(now), Some(seen)) => now != seen,
            _ => self.refresh_due(),
        }
    }

    /// The unwinder of mapping `i`'s CFI, made the first time it is asked for; `None` if the
    /// mapping has none.
    pub(super) fn unwinder(&mut self, i: usize) -> Option<&mut ModuleUnwinder> {
        let m = &mut self.mappings[i];
        if matches!(m.state, CfiState::Unknown) {
            let module = match (&m.image, m.bias) {
                (Some(image), Some(bias)) => image
                    .cfi(m.start, m.end, m.offset)
                    .map(|cfi| cfi.module(&image.name, m.start, m.end, bias)),
                _ => None,
            };
            m.state = match module {
                Some(module) => {
                    let mut framehop = UnwinderX86_64::new();
                    framehop.add_module(module);
                    CfiState::Registered(Box::new(ModuleUnwinder {
                        framehop,
                        cache: CacheX86_64::new(),
                    }))
                }
                None => CfiState::Missing,
            };
        }
        match &mut m.state {
            CfiState::Registered(unwinder) => Some(unwinder),
            _ => None,
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

impl Image {
    /// Reads a mapped file's ELF and program headers; `None` if it is not a 64-bit x86-64
    /// ELF (or cannot be opened).
    fn from_file(entry: &MapsLine<'_>) -> Option<Arc<Image>> {
        let file = open_mapped(entry.path, entry.deleted, entry.start, entry.end)?;
        let cache = ReadCache::new(file);
        let loads = program_loads(&cache)?;
        let source = Source::File {
            path: entry.path.to_owned(),
            deleted: entry.deleted,
        };
        Some(Image::new(entry.path.to_owned(), source, loads))
    }

    /// Reads the vDSO image from memory.
    fn from_memory(start: usize, end: usize) -> Option<Arc<Image>> {
        let mut bytes = vec![0u8; end - start];
        if !sys::read_process_memory(start, &mut bytes) {
            return None;
        }
        let loads = program_loads(bytes.as_slice())?;
        let source = Source::Memory(Bytes::new(Whole::Copied(bytes.into())));
        Some(Image::new("[vdso]".to_owned(), source, loads))
    }

    /// An image of which nothing is read yet but its program headers.
    fn new(name: String, source: Source, loads: Vec<Load>) -> Arc<Image> {
        Arc::new(Image {
            name,
            source,
            loads,
            mapped: OnceLock::new(),
            cfi: OnceLock::new(),
            symbols: OnceLock::new(),
            build_id: OnceLock::new(),
            handed_out: AtomicBool::new(false),
        })
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
                let cfi = Cfi::read(self.bytes(start, end, offset)?);
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
                let bytes = self.bytes(start, end, offset)?;
                let path = match &self.source {
                    Source::Memory(_) => None,
                    Source::File { path, .. } => Some(Path::new(path)),
                };
                SymbolTable::read_mapping(&bytes[..], path, debug_root, &|file| {
                    let mapped = sys::MappedFile::map(file)?;
                    Some(Box::new(mapped))
                })
            })
            .as_ref()
    }
}

impl Image {
    /// The GNU build id in lowercase hexadecimal, read on first use (empty if it has none or
    /// the file cannot be read).
    fn build_id(&self, start: usize, end: usize, offset: u64) -> Arc<str> {
        self.build_id
            .get_or_init(|| {
                let id = self
                    .bytes(start, end, offset)
                    .and_then(|bytes| build_id(&bytes[..]));
                build_id_hex(&id.unwrap_or_default()).into()
            })
            .clone()
    }

    /// The image's bytes: the vDSO's copy, or its file mapped into memory on first use, if
    /// the file still holds the bytes mapped at `[start, end)` from file offset `offset`.
    fn bytes(&self, start: usize, end: usize, offset: u64) -> Option<&Bytes> {
        match &self.source {
            Source::Memory(bytes) => Some(bytes),
            Source::File { path, deleted } => self
                .mapped
                .get_or_init(|| {
                    let file = open_mapped(path, *deleted, start, end)?;
                    if !matches_memory(&file, start, end, offset) {
                        return None;
                    }
                    sys::MappedFile::map(&file).map(|m| Bytes::new(Whole::Mapped(m)))
                })
                .as_ref(),
        }
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
    fn read(image: &Bytes) -> Option<Cfi> {
        let data: &[u8] = image;
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
            let (offset, len) = s.file_range(endian)?;
            (len > 0).then(|| image.slice(offset, len)).flatten()
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
            plt: [range(b".plt"), range(b".plt.sec")],
        })
    }

    fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    /// Where the function containing `svma` starts: in the procedure linkage table, its
    /// stub's start; elsewhere the initial location of the `.eh_frame` FDE that covers it,
    /// found through `.eh_frame_hdr`'s binary-search table. `None` if the module has no such
    /// table or no FDE covers the address. Never panics on bad data.
    fn function_start(&self, svma: u64) -> Option<u64> {
        if let Some(plt) = self.plt.iter().flatten().find(|r| r.contains(&svma)) {
            return Some(svma - (svma - plt.start) % PLT_STUB);
        }
        let (hdr, hdr_svma) = self.eh_frame_hdr.as_ref()?;
        let (eh_frame, eh_frame_svma) = self.eh_frame.as_ref()?;
        let mut bases = BaseAddresses::default()
            .set_eh_frame_hdr(hdr_svma.start)
            .set_eh_frame(eh_frame_svma.start);
        if let Some(text) = &self.text {
            bases = bases.set_text(text.start);
        }
        if let Some(got) = &self.got {
            bases = bases.set_got(got.start);
        }
        std::panic::catch_unwind(|| {
            let hdr = EhFrameHdr::new(hdr, LittleEndian).parse(&bases, 8).ok()?;
            let eh_frame = EhFrame::new(eh_frame, LittleEndian);
            let fde = hdr
                .table()?
                .fde_for_address(&eh_frame, &bases, svma, EhFrame::cie_from_offset)
                .ok()?;
            Some(fde.initial_address())
        })
        .ok()
        .flatten()
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
