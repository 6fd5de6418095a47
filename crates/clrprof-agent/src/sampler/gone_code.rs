//! Code the runtime says is gone (a collected dynamic method, an unloaded module's methods),
//! passed from the unload callbacks to the sampler thread, which drops what it cached about
//! that code: the frames its addresses resolved to and its code ranges and prologue shapes.
//! The runtime may put other code at the same addresses, under the same FunctionIDs.
//!
//! Each notice carries the time of the unload: captures taken before it still hold the old
//! code (the method ran, then it was collected) and are resolved with what the sampler knew;
//! captures taken after it may hold new code at the same addresses and are resolved afresh.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use clrprof_sdk::FunctionId;

/// Functions kept for the sampler at most; past that it forgets all it cached instead.
const MAX_PENDING: usize = 4096;

/// The functions gone that the sampler has not forgotten yet.
#[derive(Default)]
pub struct GoneCode {
    /// Bumped at every notice, so the sampler's check is one atomic load.
    epoch: AtomicU64,
    pending: Mutex<Pending>,
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
}
