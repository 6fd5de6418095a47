//! Where managed methods start and how their frames are laid out, for the unwinder
//! ([`crate::unwind::managed`]): the runtime tells which method version contains an address
//! ([`code_owner`], then `GetNativeCodeStartAddresses` and `GetCodeInfo4` for the code
//! ranges of each of its versions: tiers, on-stack replacement, ReJIT; `GetCodeInfo2` for a
//! dynamic method, which has one version), and the first bytes of that version are its
//! prologue. Both are asked once per method version; addresses that are not managed code are
//! remembered too (a bounded number of them). What is known of a method's code is dropped when
//! the runtime unloads it ([`RuntimeShapes::forget`]).

use std::collections::BTreeMap;

use clrprof_sdk::info::{CodeInfo, JitedFunction};
use clrprof_sdk::{FunctionId, ProfilerInfo, ReJitId};
use clrprof_trace::IlPosition;

use rustc_hash::{FxHashMap, FxHashSet};

use super::gone_code::GoneCode;
use crate::il_positions::{IlMap, code_version_map, position_in};
use crate::recorder::sys;
use crate::unwind::MethodShapes;
use crate::unwind::managed::{CODE_WINDOW, PROLOGUE_BYTES, Shape, decode_prologue};

/// Addresses known not to be managed code, at most.
const NOT_MANAGED_KEPT: usize = 1 << 16;
/// Code windows kept (the bytes at interrupted instructions and before return addresses).
const CODE_KEPT: usize = 1 << 16;
/// Bytes of whole code blocks kept (see [`RuntimeShapes::code_at`]), at most.
const BLOCK_BYTES_KEPT: usize = 8 << 20;
/// Code blocks larger than this are read a window at a time.
const BLOCK_MAX: usize = 64 << 10;
/// Native-to-IL maps kept (one per code version seen in a stack), at most.
const IL_MAPS_KEPT: usize = 1 << 16;

/// The managed code that contains an address.
#[derive(Debug, Clone, Copy)]
pub struct CodeOwner {
    /// The method version.
    pub jited: JitedFunction,
    /// A method without metadata (a dynamic method, an IL stub): its code is freed when it is
    /// collected, and the address may then hold other code.
    pub generated: bool,
}

impl CodeOwner {
    /// The code of generated method `function` (which has one version).
    pub fn generated(function: FunctionId) -> CodeOwner {
        CodeOwner {
            jited: JitedFunction {
                function,
                rejit: ReJitId(0),
            },
            generated: true,
        }
    }
}

/// The method version whose code contains `ip`, if it is managed code: `GetFunctionFromIP2`,
/// else `GetFunctionFromIP3` (ICorProfilerInfo8, where the runtime offers it), which also
/// answers for methods without metadata (dynamic methods, IL stubs), for which the first
/// refuses. Any time, from the sampler thread.
pub fn code_owner(info: &ProfilerInfo, ip: usize) -> Option<CodeOwner> {
    let (jited, generated) = match info.get_function_from_ip2(ip) {
        Ok(jited) => (jited, false),
        Err(_) => (info.get_function_from_ip3(ip).ok()?, true),
    };
    (!jited.function.is_null()).then_some(CodeOwner { jited, generated })
}

/// The shape of the frame of the code that starts at `start`, read from its prologue now.
pub fn prologue_at(start: usize) -> Option<Shape> {
    let mut code = [0u8; PROLOGUE_BYTES];
    sys::read_process_memory(start, &mut code)
        .then(|| decode_prologue(&code))
        .flatten()
}

/// A code range of a method version: where it ends, the version's start, its shape, and the
/// method version it belongs to.
#[derive(Clone, Copy)]
struct Range {
    end: usize,
    start: usize,
    shape: Option<Shape>,
    owner: CodeOwner,
}

/// The managed code the sampler has seen.
pub struct RuntimeShapes {
    info: ProfilerInfo,
    /// Code ranges by start.
    ranges: BTreeMap<usize, Range>,
    not_managed: FxHashSet<usize>,
    code: FxHashMap<usize, Option<[u8; CODE_WINDOW]>>,
    /// The bytes of whole code blocks of methods with metadata, by block start (`None`: the
    /// block could not be read), and how many bytes they hold.
    blocks: FxHashMap<usize, Option<Box<[u8]>>>,
    block_bytes: usize,
    /// Native-to-IL maps by code version start.
    il_maps: FxHashMap<usize, IlMap>,
    /// Generated methods collected after the capture being unwound, whose code the runtime
    /// no longer knows: their shapes, and the capture's `CLOCK_MONOTONIC` time.
    gone: &'static GoneCode,
    capture_ts: u64,
}

impl RuntimeShapes {
    /// Shapes told by `info`'s runtime, and for generated methods collected before the
    /// sampler met them, left in `gone` by the unload callback.
    pub fn new(info: ProfilerInfo, gone: &'static GoneCode) -> RuntimeShapes {
        RuntimeShapes {
            info,
            ranges: BTreeMap::new(),
            not_managed: FxHashSet::default(),
            code: FxHashMap::default(),
            blocks: FxHashMap::default(),
            block_bytes: 0,
            il_maps: FxHashMap::default(),
            gone,
            capture_ts: 0,
        }
    }

    /// The capture unwound next was taken at `CLOCK_MONOTONIC` time `ts`.
    pub fn set_capture_time(&mut self, ts: u64) {
        self.capture_ts = ts;
    }

    /// Forgets the code of `functions` (`None`: of every method), which the runtime unloaded:
    /// other code may be put at the same addresses. Addresses found not to be managed and
    /// code bytes are all forgotten (they may be the new code's).
    pub fn forget(&mut self, functions: Option<&FxHashSet<usize>>) {
        match functions {
            Some(gone) => {
                let starts: FxHashSet<usize> = self
                    .ranges
                    .values()
                    .filter(|r| gone.contains(&r.owner.jited.function.0))
                    .map(|r| r.start)
                    .collect();
                self.il_maps.retain(|start, _| !starts.contains(start));
                self.ranges
                    .retain(|_, r| !gone.contains(&r.owner.jited.function.0));
            }
            None => {
                self.ranges.clear();
                self.il_maps.clear();
            }
        }
        self.not_managed.clear();
        self.code.clear();
        self.blocks.clear();
        self.block_bytes = 0;
    }

    /// The code bytes at `addr` from the whole code block of a method with metadata that
    /// holds them, read once (a method's code does not change until the runtime unloads it:
    /// every instruction sampled in it after the first costs no read). `None` where the
    /// window is not inside such a known block (generated code, whose memory can hold other
    /// code before the runtime says it was collected, is read each time).
    fn code_in_block(&mut self, addr: usize) -> Option<[u8; CODE_WINDOW]> {
        let (&block, range) = self.ranges.range(..=addr).next_back()?;
        let end = range.end;
        let fits = addr.checked_add(CODE_WINDOW).is_some_and(|e| e <= end);
        if range.owner.generated || !fits {
            return None;
        }
        let bytes = self.block_bytes(block, end)?;
        let at = addr - block;
        bytes.get(at..at + CODE_WINDOW)?.try_into().ok()
    }

    /// The bytes of the code block `[block, end)` of a method with metadata, read whole the
    /// first time (`None`: larger than [`BLOCK_MAX`], or unreadable).
    fn block_bytes(&mut self, block: usize, end: usize) -> Option<&[u8]> {
        if end.checked_sub(block)? > BLOCK_MAX {
            return None;
        }
        if !self.blocks.contains_key(&block) {
            if self.block_bytes + (end - block) > BLOCK_BYTES_KEPT {
                self.blocks.clear();
                self.block_bytes = 0;
            }
            let mut bytes = vec![0u8; end - block].into_boxed_slice();
            let read = sys::read_process_memory(block, &mut bytes).then_some(bytes);
            self.block_bytes += read.as_ref().map_or(0, |b| b.len());
            self.blocks.insert(block, read);
        }
        self.blocks.get(&block)?.as_deref()
    }

    /// The first bytes of the code version starting at `start`, whose code blocks are
    /// `blocks`: from its first block, read whole (the unwinder reads code near return
    /// addresses in it next: one read of the process's memory instead of two, each of which
    /// waits for the memory map's lock while the JIT changes page protections), except for a
    /// method without metadata, whose memory can hold other code before the runtime says it
    /// was collected.
    fn prologue(&mut self, start: usize, blocks: &[CodeInfo], generated: bool) -> Option<Shape> {
        let first = blocks
            .iter()
            .find(|b| b.start == start && b.size >= PROLOGUE_BYTES);
        if let Some(b) = first.filter(|_| !generated)
            && let Some(bytes) = self.block_bytes(b.start, b.start.saturating_add(b.size))
        {
            return decode_prologue(bytes.get(..PROLOGUE_BYTES)?);
        }
        prologue_at(start)
    }

    /// Where in its method's IL the managed code at `pc` is (for a caller, `pc` is its return
    /// address less one: the call), from the native-to-IL map of the code version (tier, OSR
    /// variant, ReJIT version) that contains it, which the runtime is asked for once per
    /// version (`GetILToNativeMapping3`; where the runtime lacks it, `GetILToNativeMapping2`,
    /// which knows one version of a method). Unknown where the runtime has no map (code
    /// without IL) or the map does not cover `pc`.
    pub fn il_position(&mut self, pc: usize, jited: JitedFunction) -> IlPosition {
        let start = match self.known(pc).or_else(|| self.learn(pc)) {
            Some((start, _)) => start,
            None => return IlPosition::Unknown,
        };
        if !self.il_maps.contains_key(&start) {
            if self.il_maps.len() >= IL_MAPS_KEPT {
                self.il_maps.clear();
            }
            let map = code_version_map(&self.info, start, jited);
            self.il_maps.insert(start, map);
        }
        let offset = u32::try_from(pc - start).unwrap_or(u32::MAX);
        position_in(&self.il_maps[&start], offset)
    }

    fn known(&self, pc: usize) -> Option<(usize, Option<Shape>)> {
        self.known_range(pc).map(|r| (r.start, r.shape))
    }

    fn known_range(&self, pc: usize) -> Option<&Range> {
        let (_, r) = self.ranges.range(..=pc).next_back()?;
        (pc < r.end).then_some(r)
    }

    /// The method version whose code contains `pc`, if it is managed code. A method with
    /// metadata whose code ranges are known (the unwinder learned them, most often) is found
    /// there without asking the runtime: its code stays where it is until the runtime unloads
    /// it ([`forget`](Self::forget)). Generated code is asked about every time, since its
    /// memory can hold other code before the runtime says it was collected.
    /// The generated method whose code range, learnt earlier, contains `pc`: what the address
    /// held then, whatever the runtime says now.
    pub fn known_generated(&self, pc: usize) -> Option<CodeOwner> {
        self.known_range(pc)
            .filter(|r| r.owner.generated)
            .map(|r| r.owner)
    }

    pub fn owner(&mut self, pc: usize) -> Option<CodeOwner> {
        if let Some(r) = self.known_range(pc).filter(|r| !r.owner.generated) {
            return Some(r.owner);
        }
        let owner = code_owner(&self.info, pc)?;
        if self.known_range(pc).is_none() {
            self.learn_of(pc, owner);
        }
        Some(owner)
    }

    /// The code blocks of each version of `jited`'s method: per version start, its blocks.
    fn versions(&self, jited: JitedFunction) -> Vec<(usize, Vec<CodeInfo>)> {
        if let Ok(starts) = self
            .info
            .get_native_code_start_addresses(jited.function, jited.rejit)
        {
            return starts
                .into_iter()
                .filter_map(|start| Some((start, self.info.get_code_info4(start).ok()?)))
                .collect();
        }
        // A dynamic method: one version, whose first block starts it.
        match self.info.get_code_info2(jited.function) {
            Ok(blocks) if !blocks.is_empty() => vec![(blocks[0].start, blocks)],
            _ => Vec::new(),
        }
    }

    /// Asks the runtime about `pc` and remembers the answer.
    fn learn(&mut self, pc: usize) -> Option<(usize, Option<Shape>)> {
        let owner = code_owner(&self.info, pc)?;
        self.learn_of(pc, owner)
    }

    /// Remembers the code ranges of the version of `owner` that contains `pc`.
    fn learn_of(&mut self, pc: usize, owner: CodeOwner) -> Option<(usize, Option<Shape>)> {
        let jited = owner.jited;
        for (start, blocks) in self.versions(jited) {
            if !blocks
                .iter()
                .any(|b| b.start <= pc && pc < b.start.saturating_add(b.size))
            {
                continue;
            }
            let shape = self.prologue(start, &blocks, owner.generated);
            for b in &blocks {
                self.ranges.insert(
                    b.start,
                    Range {
                        end: b.start.saturating_add(b.size),
                        start,
                        shape,
                        owner,
                    },
                );
            }
            return Some((start, shape));
        }
        None
    }
}

impl MethodShapes for RuntimeShapes {
    fn is_managed(&self, pc: usize) -> bool {
        self.known(pc).is_some()
    }

    fn code_at(&mut self, addr: usize) -> Option<[u8; CODE_WINDOW]> {
        if let Some(known) = self.code.get(&addr) {
            return *known;
        }
        if let Some(code) = self.code_in_block(addr) {
            return Some(code);
        }
        if self.code.len() >= CODE_KEPT {
            self.code.clear();
        }
        let mut bytes = [0u8; CODE_WINDOW];
        let read = sys::read_process_memory(addr, &mut bytes).then_some(bytes);
        self.code.insert(addr, read);
        read
    }

    fn shape_at(&mut self, pc: usize) -> Option<(usize, Shape)> {
        let (start, shape) = match self.known(pc) {
            Some(found) => found,
            None => {
                if self.not_managed.contains(&pc) {
                    return None;
                }
                match self.learn(pc) {
                    Some(found) => found,
                    None => {
                        // Generated code collected since the capture (the runtime no longer
                        // knows it, and the address may hold other code by now): its shape
                        // as the unload callback saw it, for this capture alone.
                        if let Some(found) = self.gone.dying_shape_at(pc, self.capture_ts) {
                            return Some(found);
                        }
                        if self.not_managed.len() >= NOT_MANAGED_KEPT {
                            self.not_managed.clear();
                        }
                        self.not_managed.insert(pc);
                        return None;
                    }
                }
            }
        };
        Some((start, shape?))
    }
}
