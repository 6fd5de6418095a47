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
//! - the callers of the latest stack whose callers were not known, with the node of each of
//!   their frames: the next sample's callers most often share their outer part (a thread's
//!   samples are read one after the other, and a new stack of a thread differs from its
//!   previous one in its innermost frames), and only the frames below the shared part are
//!   named and interned then, below its node.
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
    last: LastCallers<F>,
}

/// The callers of the latest stack interned without [`KnownStacks::callers`]' help.
struct LastCallers<F> {
    /// Their addresses, outermost first.
    ips: Vec<usize>,
    /// For each address, the frame it was named (a native frame right below one of the same
    /// function is that frame) and the node of the path from the root down to it.
    frames: Vec<(F, u32)>,
    cut: Option<StackCut>,
}

impl<F> Default for LastCallers<F> {
    fn default() -> Self {
        LastCallers {
            ips: Vec::new(),
            frames: Vec::new(),
            cut: None,
        }
    }
}

/// The outer part a stack's callers share with the latest callers interned: how many
/// addresses, and the frame and node of the innermost of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shared<F> {
    pub len: usize,
    pub innermost: F,
    pub node: u32,
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
            last: LastCallers::default(),
        }
    }
}

impl<F: Copy> KnownStacks<F> {
    /// Forgets everything.
    pub fn clear(&mut self) {
        self.whole.clear();
        self.callers.clear();
        self.forget_last_callers();
    }

    /// Forgets the latest callers (they held code that may be collected: see
    /// [`Self::set_last_callers`]).
    pub fn forget_last_callers(&mut self) {
        self.last.ips.clear();
        self.last.frames.clear();
    }

    /// What callers `ips` (innermost first) of a stack that ended as `cut` share with the
    /// latest callers interned from their outermost address on (`None`: nothing).
    pub fn shared_callers(&self, ips: &[usize], cut: Option<StackCut>) -> Option<Shared<F>> {
        let last = &self.last;
        if last.cut != cut {
            return None;
        }
        let len = last
            .ips
            .iter()
            .zip(ips.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let &(innermost, node) = last.frames.get(len.checked_sub(1)?)?;
        Some(Shared {
            len,
            innermost,
            node,
        })
    }

    /// Remembers callers `ips` (innermost first) of a stack that ended as `cut` as the latest:
    /// the frames and nodes of their `shared` outermost addresses are those of the latest
    /// callers (see [`Self::shared_callers`]), `rest` gives those of the others, outermost
    /// first. Callers that hold generated code are not to be remembered (its memory may hold
    /// other code before the runtime says it was collected).
    pub fn set_last_callers(
        &mut self,
        ips: &[usize],
        cut: Option<StackCut>,
        shared: usize,
        rest: impl Iterator<Item = (F, u32)>,
    ) {
        let last = &mut self.last;
        last.cut = cut;
        last.ips.clear();
        last.ips.extend(ips.iter().rev());
        last.frames.truncate(shared);
        last.frames.extend(rest);
        if last.frames.len() != last.ips.len() {
            self.forget_last_callers();
        }
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

    #[test]
    fn callers_share_their_outer_part_with_the_latest_callers() {
        let mut known = KnownStacks::<char>::default();
        assert_eq!(known.shared_callers(&[3, 2, 1], None), None, "none yet");
        // Callers 1 (outermost), 2, 3: frames a, b, b (3 is b's too), nodes 10, 11, 11.
        known.set_last_callers(
            &[3, 2, 1],
            None,
            0,
            [('a', 10), ('b', 11), ('b', 11)].into_iter(),
        );
        let shared = |known: &KnownStacks<char>, ips: &[usize], cut| {
            known
                .shared_callers(ips, cut)
                .map(|s| (s.len, s.innermost, s.node))
        };
        assert_eq!(shared(&known, &[4, 2, 1], None), Some((2, 'b', 11)));
        assert_eq!(shared(&known, &[5, 4, 3, 2, 1], None), Some((3, 'b', 11)));
        assert_eq!(shared(&known, &[1], None), Some((1, 'a', 10)));
        assert_eq!(shared(&known, &[2, 1, 9], None), None, "another outermost");
        assert_eq!(shared(&known, &[2, 1], Some(StackCut::TooDeep)), None);
        // The next callers keep the shared part's frames and nodes.
        known.set_last_callers(&[4, 2, 1], None, 2, [('c', 12)].into_iter());
        assert_eq!(shared(&known, &[4, 2, 1], None), Some((3, 'c', 12)));
        assert_eq!(shared(&known, &[7, 2, 1], None), Some((2, 'b', 11)));
        // Frames that do not match the addresses leave nothing to share.
        known.set_last_callers(&[4, 2, 1], None, 0, [('a', 10)].into_iter());
        assert_eq!(shared(&known, &[4, 2, 1], None), None);
        known.set_last_callers(&[4, 2, 1], None, 2, [('c', 12)].into_iter());
        assert_eq!(shared(&known, &[4, 2, 1], None), None);
        known.set_last_callers(&[2, 1], None, 0, [('a', 10), ('b', 11)].into_iter());
        known.clear();
        assert_eq!(shared(&known, &[2, 1], None), None, "cleared");
    }
}
