//! Where managed methods start and how their frames are laid out, for the unwinder
//! ([`crate::unwind::managed`]): the runtime tells which method version contains an address
//! (`GetFunctionFromIP2`, then `GetNativeCodeStartAddresses` and `GetCodeInfo4` for the code
//! ranges of each of its versions: tiers, on-stack replacement, ReJIT), and the first bytes of
//! that version are its prologue. Both are asked once per method version; addresses that are not
//! managed code are remembered too (a bounded number of them).

use std::collections::BTreeMap;

use clrprof_sdk::ProfilerInfo;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::recorder::sys;
use crate::unwind::MethodShapes;
use crate::unwind::managed::{CODE_WINDOW, PROLOGUE_BYTES, Shape, decode_prologue};

/// Addresses known not to be managed code, at most.
const NOT_MANAGED_KEPT: usize = 1 << 16;
/// Code windows kept (the bytes at interrupted instructions and before return addresses).
const CODE_KEPT: usize = 1 << 16;

/// The managed code the sampler has seen.
pub struct RuntimeShapes {
    info: ProfilerInfo,
    /// Code ranges by start: (end, the start of the method version, its shape).
    ranges: BTreeMap<usize, (usize, usize, Option<Shape>)>,
    not_managed: FxHashSet<usize>,
    code: FxHashMap<usize, Option<[u8; CODE_WINDOW]>>,
}

impl RuntimeShapes {
    /// Shapes told by `info`'s runtime.
    pub fn new(info: ProfilerInfo) -> RuntimeShapes {
        RuntimeShapes {
            info,
            ranges: BTreeMap::new(),
            not_managed: FxHashSet::default(),
            code: FxHashMap::default(),
        }
    }

    fn known(&self, pc: usize) -> Option<(usize, Option<Shape>)> {
        let (_, &(end, start, shape)) = self.ranges.range(..=pc).next_back()?;
        (pc < end).then_some((start, shape))
    }

    /// Asks the runtime about `pc` and remembers the answer.
    fn learn(&mut self, pc: usize) -> Option<(usize, Option<Shape>)> {
        let jited = self.info.get_function_from_ip2(pc).ok()?;
        let starts = self
            .info
            .get_native_code_start_addresses(jited.function, jited.rejit)
            .ok()?;
        for start in starts {
            let Ok(blocks) = self.info.get_code_info4(start) else {
                continue;
            };
            if !blocks
                .iter()
                .any(|b| b.start <= pc && pc < b.start.saturating_add(b.size))
            {
                continue;
            }
            let mut code = [0u8; PROLOGUE_BYTES];
            let shape = sys::read_process_memory(start, &mut code)
                .then(|| decode_prologue(&code))
                .flatten();
            for b in &blocks {
                self.ranges
                    .insert(b.start, (b.start.saturating_add(b.size), start, shape));
            }
            return Some((start, shape));
        }
        None
    }
}

impl MethodShapes for RuntimeShapes {
    fn code_at(&mut self, addr: usize) -> Option<[u8; CODE_WINDOW]> {
        if let Some(known) = self.code.get(&addr) {
            return *known;
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
