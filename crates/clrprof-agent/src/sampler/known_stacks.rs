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
//!
//! A stack is kept (its addresses copied) the second time it is met, not the first: a deep
//! recursion is sampled in a new stack almost every time, and keeping each of those cost more
//! than it saved (on `bench/programs/Fib.cs` at 1 kHz, a tenth of the sampler's CPU went to
//! growing its heap for stacks never met again). Until then only the stack's 64-bit hash is
//! remembered.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use clrprof_trace::StackCut;

/// How many entries each cache keeps before it starts again.
const KEPT: usize = 1 << 16;

/// The caches; `F` is the sampler's resolved frame.
pub(super) struct KnownStacks<F> {
    whole: Cache<u32>,
    callers: Cache<Callers<F>>,
}

/// The interned callers of a stack: the node of their path (with the marker of how the stack
/// ended), and their innermost frame (a native frame directly below one of the same function
/// is the same frame).
#[derive(Clone, Copy)]
pub(super) struct Callers<F> {
    pub node: u32,
    pub innermost: Option<F>,
}

/// A stack's hash: what a lookup that found nothing hands to the `remember` after it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct StackKey(u64);

/// What a lookup found.
pub(super) enum Lookup<V> {
    Known(V),
    Unknown(StackKey),
}

/// One cache: the stacks kept, and the hashes of those met once.
struct Cache<V> {
    kept: FxHashMap<u64, Entry<V>>,
    met_once: FxHashSet<u64>,
}

struct Entry<V> {
    ips: Box<[usize]>,
    cut: Option<StackCut>,
    value: V,
}

impl<V> Default for Cache<V> {
    fn default() -> Self {
        Cache {
            kept: FxHashMap::default(),
            met_once: FxHashSet::default(),
        }
    }
}

impl<V: Copy> Cache<V> {
    fn clear(&mut self) {
        self.kept.clear();
        self.met_once.clear();
    }

    fn lookup(&self, ips: &[usize], cut: Option<StackCut>) -> Lookup<V> {
        let key = key(ips, cut);
        match self.kept.get(&key.0) {
            Some(e) if e.cut == cut && *e.ips == *ips => Lookup::Known(e.value),
            _ => Lookup::Unknown(key),
        }
    }

    fn remember(&mut self, key: StackKey, ips: &[usize], cut: Option<StackCut>, value: V) {
        if self.met_once.len() >= KEPT {
            self.met_once.clear();
        }
        if self.met_once.insert(key.0) {
            return;
        }
        self.met_once.remove(&key.0);
        if self.kept.len() >= KEPT {
            self.kept.clear();
        }
        self.kept.insert(
            key.0,
            Entry {
                ips: ips.into(),
                cut,
                value,
            },
        );
    }
}

impl<F: Copy> Default for KnownStacks<F> {
    fn default() -> Self {
        KnownStacks {
            whole: Cache::default(),
            callers: Cache::default(),
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
    pub fn whole(&self, ips: &[usize], cut: Option<StackCut>) -> Lookup<u32> {
        self.whole.lookup(ips, cut)
    }

    /// Remembers the id of a whole stack that [`Self::whole`] did not know as `key` (kept
    /// the second time).
    pub fn remember_whole(&mut self, key: StackKey, ips: &[usize], cut: Option<StackCut>, id: u32) {
        self.whole.remember(key, ips, cut, id);
    }

    /// The interned callers `ips` (every address of a stack but the innermost) of a stack that
    /// ended as `cut`, if known.
    pub fn callers(&self, ips: &[usize], cut: Option<StackCut>) -> Lookup<Callers<F>> {
        self.callers.lookup(ips, cut)
    }

    /// Remembers interned callers that [`Self::callers`] did not know as `key` (kept the
    /// second time).
    pub fn remember_callers(
        &mut self,
        key: StackKey,
        ips: &[usize],
        cut: Option<StackCut>,
        callers: Callers<F>,
    ) {
        self.callers.remember(key, ips, cut, callers);
    }
}

fn key(ips: &[usize], cut: Option<StackCut>) -> StackKey {
    let mut h = FxHasher::default();
    ips.hash(&mut h);
    cut.map(StackCut::to_u64).hash(&mut h);
    StackKey(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found<V: Copy>(lookup: Lookup<V>) -> Option<V> {
        match lookup {
            Lookup::Known(v) => Some(v),
            Lookup::Unknown(_) => None,
        }
    }

    fn unknown<V>(lookup: Lookup<V>) -> StackKey {
        match lookup {
            Lookup::Known(_) => panic!("known already"),
            Lookup::Unknown(key) => key,
        }
    }

    #[test]
    fn stacks_are_known_by_every_address_and_how_they_ended_once_met_twice() {
        let mut known = KnownStacks::<u8>::default();
        for _ in 0..2 {
            let key = unknown(known.whole(&[1, 2, 3], None));
            known.remember_whole(key, &[1, 2, 3], None, 7);
        }
        assert_eq!(found(known.whole(&[1, 2, 3], None)), Some(7));
        assert_eq!(found(known.whole(&[1, 2], None)), None);
        assert_eq!(
            found(known.whole(&[1, 2, 3], Some(StackCut::TooDeep))),
            None
        );
        let callers = Callers {
            node: 5,
            innermost: Some(9),
        };
        let key = unknown(known.callers(&[2, 3], None));
        known.remember_callers(key, &[2, 3], None, callers);
        assert!(found(known.callers(&[2, 3], None)).is_none(), "met once");
        known.remember_callers(key, &[2, 3], None, callers);
        let callers = found(known.callers(&[2, 3], None)).unwrap();
        assert_eq!((callers.node, callers.innermost), (5, Some(9)));
        assert!(found(known.callers(&[3], None)).is_none());
        known.clear();
        assert_eq!(found(known.whole(&[1, 2, 3], None)), None);
        assert!(found(known.callers(&[2, 3], None)).is_none());
        let key = unknown(known.whole(&[1, 2, 3], None));
        known.remember_whole(key, &[1, 2, 3], None, 7);
        assert_eq!(
            found(known.whole(&[1, 2, 3], None)),
            None,
            "met once since cleared"
        );
    }
}
