//! Where there is no CFI unwinder (not x86-64 Linux): the same API, no modules, and the
//! frame-pointer rule alone.

use super::{
    FrameAt, FrameRules, Interrupted, MethodShapes, ModuleInfo, NativeFunction, NativeSymbol,
    StackReader, Step, Tail, UnwindStats, walk,
};

/// No module to read ahead on this platform.
pub struct ModuleReader;

impl ModuleReader {
    /// Nothing to read.
    pub fn read(&self) {}
}

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

    /// Never: there is nothing to read.
    pub fn reread_due(&self, _every: std::time::Duration) -> bool {
        false
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

    /// Nothing to read.
    pub fn reader_for(&self, _addr: usize) -> Option<ModuleReader> {
        None
    }

    /// No memory map is read here.
    pub fn latest_read(&self) -> Option<(u64, &str)> {
        None
    }

    /// Always true: naming reads nothing.
    pub fn names_ready(&self, _addr: usize) -> bool {
        true
    }

    /// No double-mapped memory is known here.
    pub fn double_mapped_head(&self) -> Option<(usize, usize)> {
        None
    }

    /// No module's code is read here.
    pub fn module_code(&self, _file_name: &str) -> Option<(usize, &[u8])> {
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

    /// Always `None`.
    pub fn locate(&self, _addr: usize) -> Option<NativeFunction> {
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
    /// Leaves naming native functions from their modules' symbols to the reader of the trace
    /// (see `ModuleMap::leave_symbols_to_reader`).
    pub fn leave_symbols_to_reader(&mut self) {
        // No module is read on this platform.
    }

    /// The (empty) module map.
    pub fn modules(&self) -> &ModuleMap {
        &self.modules
    }

    /// Nothing to re-read.
    pub fn refresh_modules(&mut self) -> bool {
        false
    }

    /// Nothing to re-read.
    pub fn refresh_modules_for(&mut self, _addr: usize) {}

    /// Always `None`: no modules on this platform.
    pub fn locate(&mut self, _addr: usize) -> Option<NativeFunction> {
        None
    }

    /// What the last [`Self::unwind`] did.
    pub fn last_stats(&self) -> UnwindStats {
        self.stats
    }

    /// Nothing is remembered across calls here but what the walk keeps per thread, which
    /// no module change can make wrong.
    pub fn forget_walks(&mut self) {}

    /// Applies the managed shapes and the frame-pointer rule; see the Linux version.
    pub fn unwind(
        &mut self,
        thread: Interrupted<'_>,
        tail: Option<&mut Tail>,
        out: &mut Vec<usize>,
        shapes: &mut dyn MethodShapes,
    ) -> UnwindStats {
        self.stats = walk(thread, tail, out, &mut self.window, &mut Rules(shapes), 0);
        self.stats
    }
}

/// No CFI here: only managed shapes.
struct Rules<'a>(&'a mut dyn MethodShapes);

impl FrameRules for Rules<'_> {
    fn cfi(&mut self, _at: FrameAt, _reader: &mut StackReader<'_>) -> Option<Step> {
        None
    }

    fn managed(&mut self, at: FrameAt, reader: &mut StackReader<'_>) -> Option<Step> {
        super::managed_rule(self.0, at, reader)
    }
}
