//! Where in its IL a managed frame was: the native-to-IL map of the code version that ran
//! (`GetILToNativeMapping3` on the version's start, `GetILToNativeMapping2` where the runtime
//! has no version 3), and the IL position of a native offset in it. The sampler keeps maps per
//! code version ([`crate::sampler`]); stacks taken in the runtime's callbacks and events
//! (allocations, lock waits, exceptions) ask [`CallbackPositions`], a bounded cache shared by
//! the threads that run them, emptied when the runtime unloads code (another method may then
//! have the same addresses).

use std::sync::Mutex;

use clrprof_sdk::ProfilerInfo;
use clrprof_sdk::info::{CodeInfo, IlOffset, IlToNativeMap, JitedFunction};
use clrprof_trace::IlPosition;
use rustc_hash::FxHashMap;

use crate::sampler::gone_code::GoneCode;

/// A code version's native-to-IL map: `(first native offset, one past the last, position)`,
/// by first native offset.
pub type IlMap = Box<[(u32, u32, IlPosition)]>;

/// Positions of return addresses kept at most; past that the cache starts afresh.
const POSITIONS_KEPT: usize = 1 << 14;

/// The map of the code version `start` of `jited`.
pub fn code_version_map(info: &ProfilerInfo, start: usize, jited: JitedFunction) -> IlMap {
    info.get_il_to_native_mapping3(start)
        .or_else(|_| info.get_il_to_native_mapping2(jited.function, jited.rejit))
        .map(|entries| il_map(&entries))
        .unwrap_or_default()
}

/// A runtime's native-to-IL map as it is kept: entries that say an IL position,
/// sorted by native offset (the prologue as IL offset 0, code of no IL left out).
pub fn il_map(entries: &[IlToNativeMap]) -> IlMap {
    let mut map: Vec<(u32, u32, IlPosition)> = entries
        .iter()
        .filter(|e| e.native_end > e.native_start)
        .filter_map(|e| {
            let position = match e.il_offset {
                IlOffset::Offset(offset) => IlPosition::At(offset),
                IlOffset::Prolog => IlPosition::At(0),
                IlOffset::Epilog => IlPosition::Epilogue,
                IlOffset::NoMapping => return None,
            };
            Some((e.native_start, e.native_end, position))
        })
        .collect();
    map.sort_unstable_by_key(|&(start, end, _)| (start, end));
    map.into_boxed_slice()
}

/// The IL position of native offset `offset` in `map`: the entry that covers it (the
/// narrowest, where entries nest).
pub fn position_in(map: &[(u32, u32, IlPosition)], offset: u32) -> IlPosition {
    let upto = map.partition_point(|&(start, _, _)| start <= offset);
    map[..upto]
        .iter()
        .rev()
        .filter(|&&(_, end, _)| offset < end)
        .min_by_key(|&&(start, end, _)| end - start)
        .map_or(IlPosition::Unknown, |&(_, _, position)| position)
}

/// The IL positions of the code addresses in stacks the runtime's callbacks and events take,
/// by address, for every thread that runs them.
#[derive(Default)]
pub struct CallbackPositions {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// [`GoneCode`]'s epoch when the cache was filled.
    epoch: u64,
    positions: FxHashMap<usize, IlPosition>,
}

impl CallbackPositions {
    /// Where the managed code at `ip` (an instruction's address: a return address minus one)
    /// was in its method's IL. The runtime is asked without the cache's lock held.
    pub fn position(&self, info: &ProfilerInfo, gone: &GoneCode, ip: usize) -> IlPosition {
        let epoch = gone.epoch();
        {
            let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if c.epoch != epoch {
                c.positions.clear();
                c.epoch = epoch;
            }
            if let Some(&p) = c.positions.get(&ip) {
                return p;
            }
        }
        let position = ask(info, ip);
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.epoch == epoch {
            if c.positions.len() >= POSITIONS_KEPT {
                c.positions.clear();
            }
            c.positions.insert(ip, position);
        }
        position
    }
}

/// Asks the runtime where `ip` is: its method version, that version's code blocks, the map.
/// Inside some callbacks (an allocation's, a lock wait's) the runtime refuses the questions
/// about code versions (`CORPROF_E_UNSUPPORTED_CALL_SEQUENCE`); the method's current code is
/// asked about then (`GetFunctionFromIP`, `GetCodeInfo2`, `GetILToNativeMapping`), which is
/// right when `ip` is in it, and left unknown when `ip` is in an older version.
fn ask(info: &ProfilerInfo, ip: usize) -> IlPosition {
    let contains = |blocks: &[CodeInfo]| {
        blocks
            .iter()
            .any(|b| b.start <= ip && ip < b.start.saturating_add(b.size))
    };
    let at = |start: usize, map: &IlMap| {
        u32::try_from(ip - start).map_or(IlPosition::Unknown, |offset| position_in(map, offset))
    };
    match info.get_function_from_ip2(ip) {
        Ok(jited) => {
            let Ok(starts) = info.get_native_code_start_addresses(jited.function, jited.rejit)
            else {
                return IlPosition::Unknown;
            };
            for start in starts {
                if info.get_code_info4(start).is_ok_and(|b| contains(&b)) {
                    return at(start, &code_version_map(info, start, jited));
                }
            }
            IlPosition::Unknown
        }
        Err(_) => {
            let Ok(function) = info.get_function_from_ip(ip) else {
                return IlPosition::Unknown;
            };
            match info.get_code_info2(function) {
                Ok(blocks) if contains(&blocks) => {
                    let map = info
                        .get_il_to_native_mapping(function)
                        .map(|entries| il_map(&entries))
                        .unwrap_or_default();
                    at(blocks[0].start, &map)
                }
                _ => IlPosition::Unknown,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(il_offset: IlOffset, native_start: u32, native_end: u32) -> IlToNativeMap {
        IlToNativeMap {
            il_offset,
            native_start,
            native_end,
        }
    }

    #[test]
    fn native_offsets_find_their_il_positions() {
        let map = il_map(&[
            entry(IlOffset::Offset(0x10), 0x30, 0x48),
            entry(IlOffset::Prolog, 0, 0x12),
            entry(IlOffset::Offset(0), 0x12, 0x30),
            entry(IlOffset::NoMapping, 0x48, 0x50),
            entry(IlOffset::Epilog, 0x50, 0x58),
            entry(IlOffset::Offset(0x20), 0x58, 0x58),
        ]);
        assert_eq!(position_in(&map, 0), IlPosition::At(0), "the prologue");
        assert_eq!(position_in(&map, 0x2f), IlPosition::At(0));
        assert_eq!(position_in(&map, 0x30), IlPosition::At(0x10));
        assert_eq!(position_in(&map, 0x47), IlPosition::At(0x10));
        assert_eq!(
            position_in(&map, 0x48),
            IlPosition::Unknown,
            "code of no IL"
        );
        assert_eq!(position_in(&map, 0x57), IlPosition::Epilogue);
        assert_eq!(
            position_in(&map, 0x58),
            IlPosition::Unknown,
            "past the code"
        );
        assert_eq!(position_in(&[], 7), IlPosition::Unknown);
    }

    #[test]
    fn the_narrowest_entry_wins_where_entries_nest() {
        let map = il_map(&[
            entry(IlOffset::Offset(4), 0x10, 0x40),
            entry(IlOffset::Offset(9), 0x20, 0x28),
        ]);
        assert_eq!(position_in(&map, 0x24), IlPosition::At(9));
        assert_eq!(position_in(&map, 0x30), IlPosition::At(4));
    }
}
