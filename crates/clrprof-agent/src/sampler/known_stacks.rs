//! Stacks the sampler interned before, by their code addresses, so that a sample costs hash
//! lookups rather than a name lookup and an interning step per frame.
//!
//! Two caches, both bounded (each starts afresh when full) and both emptied when names by
//! address may have changed (code unloaded, a library loaded):
//!
//! - whole stacks, by all their addresses and how they ended: a sample whose every address
//!   was seen before, in the same order;
//! - callers, by every address but the innermost: a CPU-bound method is sampled at a new
//!   instruction almost every time while its callers stay the same, so its samples differ in
//!   one address only. Its callers' node is looked up here, and only the innermost frame is
//!   named and interned below it.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};

use clrprof_trace::StackCut;

/// How many entries each cache keeps before it starts again.
const KEPT: usize = 1 << 16;

/// The caches; `F` is the sampler's resolved frame.
pub(super) struct KnownStacks<F> {
    whole: FxHashMap<u64, Entry<u32>>,
    callers: FxHashMap<u64, Entry<Callers<F>>>,
}

/// The interned callers of a stack: the node of their path (with the marker of how the stack
/// ended), and their innermost frame (a native frame directly below one of the same function
/// is the same frame).
#[derive(Clone, Copy)]
pub(super) struct Callers<F> {
    pub node: u32,
    pub innermost: Option<F>,
}

struct Entry<V> {
    ips: Box<[usize]>,
    cut: Option<StackCut>,
    value: V,
}

impl<F: Copy> Default for KnownStacks<F> {
    fn default() -> Self {
        KnownStacks {
            whole: FxHashMap::default(),
            callers: FxHashMap::default(),
        }
    }
}

impl<F: Copy> KnownStacks<F> {
    /// Forgets everything.
    pub fn clear(&mut self) {
        self.whole.clear();
        self.callers.clear();
    }

    /// The id of the stack of `ips` (innermost first) that ended as `cut`, if known.
    pub fn whole(&self, ips: &[usize], cut: Option<StackCut>) -> Option<u32> {
        lookup(&self.whole, ips, cut)
    }

    /// Remembers the id of a whole stack.
    pub fn remember_whole(&mut self, ips: &[usize], cut: Option<StackCut>, id: u32) {
        remember(&mut self.whole, ips, cut, id);
    }

    /// The interned callers `ips` (every address of a stack but the innermost) of a stack that
    /// ended as `cut`, if known.
    pub fn callers(&self, ips: &[usize], cut: Option<StackCut>) -> Option<Callers<F>> {
        lookup(&self.callers, ips, cut)
    }

    /// Remembers interned callers.
    pub fn remember_callers(&mut self, ips: &[usize], cut: Option<StackCut>, callers: Callers<F>) {
        remember(&mut self.callers, ips, cut, callers);
    }
}

fn key(ips: &[usize], cut: Option<StackCut>) -> u64 {
    let mut h = FxHasher::default();
    ips.hash(&mut h);
    cut.map(StackCut::to_u64).hash(&mut h);
    h.finish()
}

fn lookup<V: Copy>(
    map: &FxHashMap<u64, Entry<V>>,
    ips: &[usize],
    cut: Option<StackCut>,
) -> Option<V> {
    map.get(&key(ips, cut))
        .filter(|e| e.cut == cut && *e.ips == *ips)
        .map(|e| e.value)
}

fn remember<V>(map: &mut FxHashMap<u64, Entry<V>>, ips: &[usize], cut: Option<StackCut>, value: V) {
    if map.len() >= KEPT {
        map.clear();
    }
    map.insert(
        key(ips, cut),
        Entry {
            ips: ips.into(),
            cut,
            value,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_known_by_every_address_and_how_they_ended() {
        let mut known = KnownStacks::<u8>::default();
        known.remember_whole(&[1, 2, 3], None, 7);
        assert_eq!(known.whole(&[1, 2, 3], None), Some(7));
        assert_eq!(known.whole(&[1, 2], None), None);
        assert_eq!(known.whole(&[1, 2, 3], Some(StackCut::TooDeep)), None);
        known.remember_callers(
            &[2, 3],
            None,
            Callers {
                node: 5,
                innermost: Some(9),
            },
        );
        let callers = known.callers(&[2, 3], None).unwrap();
        assert_eq!((callers.node, callers.innermost), (5, Some(9)));
        assert!(known.callers(&[3], None).is_none());
        known.clear();
        assert_eq!(known.whole(&[1, 2, 3], None), None);
        assert!(known.callers(&[2, 3], None).is_none());
    }
}
