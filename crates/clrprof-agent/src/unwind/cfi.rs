//! The x86-64 Linux unwinder: framehop's CFI interpretation over a [`ModuleMap`], inside the
//! shared walk.

use framehop::x86_64::UnwindRegsX86_64;
use framehop::{FrameAddress, Unwinder as _};

use super::modules::{ModuleMap, USER_MAX};
use super::{
    FrameAt, FrameRules, Interrupted, MethodShapes, NativeFunction, StackReader, Step, Stop, Tail,
    UnwindStats, walk,
};

/// Unwinds copied stacks of this process. Keep one (on the sampler thread) for the whole
/// session: it caches module data and unwind rules across calls.
pub struct Unwinder {
    modules: ModuleMap,
    window: Vec<u8>,
    stats: UnwindStats,
    /// Counts the changes that can make a remembered walk wrong (see [`Self::forget_walks`]).
    epoch: u64,
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
            window: Vec::with_capacity(super::LIVE_CHUNK),
            stats: UnwindStats::default(),
            epoch: 0,
        }
    }
    /// Leaves naming native functions from their modules' symbols to the reader of the trace
    /// (see `ModuleMap::leave_symbols_to_reader`).
    pub fn leave_symbols_to_reader(&mut self) {
        self.modules.leave_symbols_to_reader();
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
            self.forget_walks();
        }
        changed
    }

    /// Makes the walks remembered so far unusable: the modules changed, or the runtime unloaded
    /// code (the same addresses may hold other code, with other frames).
    pub fn forget_walks(&mut self) {
        self.epoch += 1;
    }

    /// What the last [`Self::unwind`] did.
    pub fn last_stats(&self) -> UnwindStats {
        self.stats
    }

    /// Finds the native function containing `addr` with the module map this unwinder
    /// shares (see [`ModuleMap::locate`]). An address in no known mapping makes it re-read
    /// the memory map first (at most once per refresh interval), in case a library was
    /// loaded since.
    pub fn locate(&mut self, addr: usize) -> Option<NativeFunction> {
        self.refresh_modules_for(addr);
        self.modules.locate(addr)
    }

    /// Re-reads the memory map if `addr` is in no known mapping, at most once per refresh
    /// interval (a library may have been loaded since).
    pub fn refresh_modules_for(&mut self, addr: usize) {
        if !self.modules.contains_code(addr)
            && (0x10000..=USER_MAX).contains(&addr)
            && self.modules.refresh_due()
        {
            self.refresh_modules();
        }
    }

    /// Unwinds the stack of `thread`, appending code addresses to `out`, innermost first: the
    /// interrupted pc, then return addresses, until `out` holds [`super::MAX_FRAMES`]. `tail`
    /// is what this thread's stack looked like beyond the handler's chain last time (if it is
    /// to be reused); `shapes` tells where managed methods start and how their frames are laid
    /// out. Returns (and keeps, see [`Self::last_stats`]) what the walk did. Never panics;
    /// bad input only shortens the result.
    pub fn unwind(
        &mut self,
        thread: Interrupted<'_>,
        tail: Option<&mut Tail>,
        out: &mut Vec<usize>,
        shapes: &mut dyn MethodShapes,
    ) -> UnwindStats {
        let mut modules_changed = false;
        let mut rules = Rules {
            modules: &mut self.modules,
            refreshed: false,
            modules_changed: &mut modules_changed,
            shapes,
        };
        self.stats = walk(thread, tail, out, &mut self.window, &mut rules, self.epoch);
        if modules_changed {
            self.forget_walks();
        }
        self.stats
    }
}

/// The frame rules of one walk: framehop's CFI of each module of the module map, and managed
/// shapes.
struct Rules<'a> {
    modules: &'a mut ModuleMap,
    /// The memory map was re-read during this walk already.
    refreshed: bool,
    /// ... and it changed.
    modules_changed: &'a mut bool,
    shapes: &'a mut dyn MethodShapes,
}

impl FrameRules for Rules<'_> {
    fn cfi(&mut self, at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step> {
        let lookup = at.lookup();
        let i = match self.modules.find(lookup) {
            Some(i) => i,
            None => {
                // Perhaps a library loaded since the last look: re-read the maps, at most once
                // per unwind, and only if the loader says one did (not for managed code, which
                // is in none).
                let plausible =
                    (0x10000..=USER_MAX).contains(&lookup) && !self.shapes.is_managed(lookup);
                if self.refreshed || !plausible || !self.modules.libraries_may_have_changed() {
                    return None;
                }
                self.refreshed = true;
                if self.modules.refresh() {
                    // Walks remembered before are not checked against the new modules: the
                    // unwinder's epoch moves on at its next call.
                    *self.modules_changed = true;
                }
                self.modules.find(lookup)?
            }
        };
        let module = self.modules.unwinder(i)?;
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
            match module
                .framehop
                .unwind_frame(address, &mut fregs, &mut module.cache, &mut read)
            {
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
    }

    fn managed(&mut self, at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step> {
        super::managed_rule(self.shapes, at, reader)
    }
}
