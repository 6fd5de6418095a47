//! Code the runtime says is gone (a collected dynamic method, an unloaded module's methods),
//! passed from the unload callbacks to the sampler thread, which drops what it cached about
//! that code: the frames its addresses resolved to and its code ranges and prologue shapes.
//! The runtime may put other code at the same addresses, under the same FunctionIDs.
//!
//! Each notice carries the time of the unload: captures taken before it still hold the old
//! code (the method ran, then it was collected) and are resolved with what the sampler knew;
//! captures taken after it may hold new code at the same addresses and are resolved afresh.
//!
//! A generated method (a dynamic method) can also be collected before the sampler ever met
//! its code: its captures wait in the threads' rings, and once its code is freed the runtime
//! no longer knows the addresses. So the unload callback, while the method still exists,
//! leaves its code ranges and the shape of its frame here ([`GoneCode::dying`]), and the
//! sampler looks an address up among them for a capture taken before the unload: to name it
//! ([`GoneCode::dying_at`]) and to unwind it ([`GoneCode::dying_shape_at`]).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use clrprof_sdk::FunctionId;

use crate::unwind::managed::Shape;

/// Functions kept for the sampler at most; past that it forgets all it cached instead.
const MAX_PENDING: usize = 4096;
/// Code ranges of collected generated methods kept at most (the oldest go first).
const MAX_DYING: usize = 4096;
/// How long the code ranges of a collected generated method are kept: far longer than a
/// capture waits in a ring for the sampler.
const DYING_KEPT_NS: u64 = 5_000_000_000;

/// The functions gone that the sampler has not forgotten yet.
#[derive(Default)]
pub struct GoneCode {
    /// Bumped at every notice, so the sampler's check is one atomic load.
    epoch: AtomicU64,
    pending: Mutex<Pending>,
    /// Entries of `dying`, so that the sampler's lookup is one atomic load when there are
    /// none.
    dying_len: AtomicUsize,
    dying: Mutex<VecDeque<DyingCode>>,
}

/// A code block of a generated method the runtime collected.
#[derive(Debug, Clone, Copy)]
struct DyingCode {
    /// `CLOCK_MONOTONIC` of the unload.
    ts: u64,
    start: usize,
    end: usize,
    function: FunctionId,
    /// Where the method's code starts and its frame's shape, as its prologue tells (`None`:
    /// not one the decoder knows, or unreadable).
    shape: Option<(usize, Shape)>,
}

#[derive(Default)]
struct Pending {
    /// `CLOCK_MONOTONIC` of each unload, and the function.
    functions: Vec<(u64, FunctionId)>,
    /// More than [`MAX_PENDING`] functions went (the latest at this time): forget everything.
    overflowed: Option<u64>,
}

/// What the sampler has to forget.
#[derive(Debug, PartialEq, Eq)]
pub enum Forget {
    /// The code of these functions.
    Functions(Vec<FunctionId>),
    /// Everything cached about managed code.
    All,
}

/// The sampler's view of the notices: the epoch it last saw, and whether notices newer than
/// the captures it resolved are still waiting.
#[derive(Debug, Default)]
pub struct GoneSeen {
    epoch: u64,
    waiting: bool,
}

impl GoneCode {
    /// Changes whenever the runtime says code is gone: caches of code addresses that saw
    /// another epoch may hold what is no longer true.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The runtime said these functions are gone at `CLOCK_MONOTONIC` time `ts` (called on
    /// the runtime's callback thread).
    pub fn notify_at(&self, ts: u64, functions: &[FunctionId]) {
        if functions.is_empty() {
            return;
        }
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if p.overflowed.is_some() || p.functions.len() + functions.len() > MAX_PENDING {
            p.overflowed = Some(ts);
            p.functions = Vec::new();
        } else {
            p.functions.extend(functions.iter().map(|&f| (ts, f)));
        }
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// The generated method `function`, whose code blocks are `blocks` (`[start, end)`) and
    /// whose frame is `shape` (its code's start and its prologue's shape), is collected at
    /// `CLOCK_MONOTONIC` time `ts` (called from the unload callback, while the runtime can
    /// still tell where its code is and the code is still there).
    pub fn dying(
        &self,
        ts: u64,
        function: FunctionId,
        blocks: impl Iterator<Item = (usize, usize)>,
        shape: Option<(usize, Shape)>,
    ) {
        let mut dying = self.dying.lock().unwrap_or_else(|e| e.into_inner());
        while dying
            .front()
            .is_some_and(|d| d.ts.saturating_add(DYING_KEPT_NS) < ts)
        {
            dying.pop_front();
        }
        for (start, end) in blocks {
            if dying.len() >= MAX_DYING {
                dying.pop_front();
            }
            dying.push_back(DyingCode {
                ts,
                start,
                end,
                function,
                shape,
            });
        }
        self.dying_len.store(dying.len(), Ordering::Release);
    }

    /// The collected generated method whose code held `ip` at `CLOCK_MONOTONIC` time `ts`:
    /// of the methods collected after `ts` whose code contained `ip`, the first collected
    /// (a later one got the address after it). One atomic load when none was collected.
    pub fn dying_at(&self, ip: usize, ts: u64) -> Option<FunctionId> {
        self.dying_with(ip, ts, |d| d.function)
    }

    /// The start and frame shape of the collected generated method whose code held `ip` at
    /// time `ts` (see [`Self::dying_at`]), if its prologue was one the decoder knows: without
    /// it, a capture in a method without a frame pointer would be unwound by the frame-pointer
    /// rule, which skips its caller.
    pub fn dying_shape_at(&self, ip: usize, ts: u64) -> Option<(usize, Shape)> {
        self.dying_with(ip, ts, |d| d.shape).flatten()
    }

    fn dying_with<T>(&self, ip: usize, ts: u64, what: impl Fn(&DyingCode) -> T) -> Option<T> {
        if self.dying_len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let dying = self.dying.lock().unwrap_or_else(|e| e.into_inner());
        dying
            .iter()
            .filter(|d| d.ts > ts && d.start <= ip && ip < d.end)
            .min_by_key(|d| d.ts)
            .map(what)
    }

    /// What went at or before `until` (a capture's time) and was not forgotten yet, if
    /// anything. Cheap when nothing is new: one atomic load.
    pub fn take(&self, seen: &mut GoneSeen, until: u64) -> Option<Forget> {
        let epoch = self.epoch.load(Ordering::Acquire);
        if epoch == seen.epoch && !seen.waiting {
            return None;
        }
        seen.epoch = epoch;
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = p.overflowed {
            if at > until {
                seen.waiting = true;
                return None;
            }
            p.overflowed = None;
            p.functions.clear();
            seen.waiting = false;
            return Some(Forget::All);
        }
        let (due, later): (Vec<_>, Vec<_>) = p.functions.iter().partition(|(ts, _)| *ts <= until);
        p.functions = later;
        seen.waiting = !p.functions.is_empty();
        (!due.is_empty()).then(|| Forget::Functions(due.into_iter().map(|(_, f)| f).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_each_notice_over_once_after_its_time() {
        let gone = GoneCode::default();
        let mut seen = GoneSeen::default();
        assert_eq!(gone.take(&mut seen, u64::MAX), None);
        gone.notify_at(100, &[FunctionId(0x10), FunctionId(0x20)]);
        gone.notify_at(200, &[FunctionId(0x30)]);
        // A capture taken before the first unload: nothing to forget yet.
        assert_eq!(gone.take(&mut seen, 50), None);
        assert_eq!(
            gone.take(&mut seen, 150),
            Some(Forget::Functions(vec![FunctionId(0x10), FunctionId(0x20)]))
        );
        assert_eq!(
            gone.take(&mut seen, 250),
            Some(Forget::Functions(vec![FunctionId(0x30)]))
        );
        assert_eq!(gone.take(&mut seen, u64::MAX), None);
        let many = vec![FunctionId(1); MAX_PENDING + 1];
        gone.notify_at(300, &many);
        assert_eq!(gone.take(&mut seen, 299), None);
        assert_eq!(gone.take(&mut seen, 300), Some(Forget::All));
        gone.notify_at(400, &[FunctionId(2)]);
        assert_eq!(
            gone.take(&mut seen, 400),
            Some(Forget::Functions(vec![FunctionId(2)]))
        );
    }

    #[test]
    fn names_an_address_by_the_first_method_collected_after_the_capture() {
        let gone = GoneCode::default();
        assert_eq!(gone.dying_at(0x1000, 0), None);
        // A method at [0x1000, 0x1100) collected at 100, then another put there, collected
        // at 200.
        gone.dying(100, FunctionId(0xa), [(0x1000, 0x1100)].into_iter(), None);
        gone.dying(
            200,
            FunctionId(0xb),
            [(0x1000, 0x1080), (0x2000, 0x2010)].into_iter(),
            None,
        );
        assert_eq!(gone.dying_at(0x1010, 50), Some(FunctionId(0xa)));
        assert_eq!(gone.dying_at(0x1010, 150), Some(FunctionId(0xb)));
        assert_eq!(gone.dying_at(0x10a0, 150), None);
        assert_eq!(gone.dying_at(0x2000, 10), Some(FunctionId(0xb)));
        assert_eq!(gone.dying_at(0x1010, 200), None);
        // Long after, the oldest ranges are let go.
        gone.dying(
            DYING_KEPT_NS + 150,
            FunctionId(0xc),
            [(0x3000, 0x3001)].into_iter(),
            None,
        );
        assert_eq!(gone.dying_at(0x1010, 50), Some(FunctionId(0xb)));
    }

    #[test]
    fn unwinds_an_address_with_the_shape_of_the_method_collected_after_the_capture() {
        use crate::unwind::managed::decode_prologue;
        // push rax; mov edi, -1: a frameless method; push rbp; ...: one with a frame pointer.
        let frameless = decode_prologue(&[0x50, 0xbf, 0xff, 0xff, 0xff, 0xff]).unwrap();
        let framed = decode_prologue(&[
            0x55, 0x53, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8d, 0x6c, 0x24, 0x20, 0x90,
        ])
        .unwrap();
        let gone = GoneCode::default();
        gone.dying(
            100,
            FunctionId(0xa),
            [(0x1000, 0x1100)].into_iter(),
            Some((0x1000, frameless)),
        );
        gone.dying(
            200,
            FunctionId(0xb),
            [(0x1000, 0x1100)].into_iter(),
            Some((0x1000, framed)),
        );
        gone.dying(300, FunctionId(0xc), [(0x1000, 0x1100)].into_iter(), None);
        assert_eq!(gone.dying_shape_at(0x1010, 50), Some((0x1000, frameless)));
        assert_eq!(gone.dying_shape_at(0x1010, 150), Some((0x1000, framed)));
        // Collected after the capture, its prologue unknown: no shape to guess with.
        assert_eq!(gone.dying_shape_at(0x1010, 250), None);
        assert_eq!(gone.dying_at(0x1010, 250), Some(FunctionId(0xc)));
        assert_eq!(gone.dying_shape_at(0x1200, 50), None);
    }
}
