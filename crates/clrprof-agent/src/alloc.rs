//! Allocations with their stacks (`--alloc all|sampled`; the runtime's allocation ticks of
//! `--alloc ticks` are in `alloc_ticks.rs` and use the stack walk and record writing here).
//!
//! The runtime calls `ObjectAllocated` on the allocating thread, right after the object is
//! made. For a recorded allocation the agent walks that thread's managed stack with
//! `DoStackSnapshot` on the current thread (allowed inside this callback, and exact: the
//! innermost frame is the method whose `new` allocated), interns it in the session's
//! [`StackInterner`](crate::stacks::StackInterner) and writes an `Allocation` record with the
//! class, the object's size from `GetObjectSize2` (rounded up to the heap's 8-byte alignment,
//! what the object takes) and, for an array, its length. Runtime
//! frames between the managed code and the callback are not part of the stack: the allocating
//! method is innermost.
//!
//! **Sampling** (`alloc=sampled`) picks allocations by bytes, as a Poisson process: each
//! thread counts down a random number of bytes drawn from an exponential distribution with
//! mean `alloc_interval`; the allocation that takes the count to zero or below is sampled
//! and a new count is drawn. Because the exponential distribution is memoryless, an
//! allocation of `size` bytes is sampled with probability `p = 1 - exp(-size / interval)`
//! whatever came before it, so weighting each sampled allocation by `1/p` (count) and
//! `size/p` (bytes) gives unbiased estimates of the totals, for small and large objects
//! alike. The record carries the interval; the CLI does the scaling. Deciding costs one
//! size query and a subtraction, without allocating or locking; only recorded allocations pay
//! for a stack walk, the stack table's lock and (the first time a function or class is seen)
//! its name. The record itself goes into the transport's fixed buffer, and is dropped and
//! counted (`allocations_dropped`) if that is full.

use std::cell::Cell;

use clrprof_sdk::{ClassId, FunctionId, ObjectId};
use clrprof_trace::{Allocation, FrameKind, IlPosition};

use crate::config::AllocMode;
use crate::recorder::sys;
use crate::session::Session;
use crate::stacks::{self, Frame, ManagedFrame};

/// Deepest allocation stack kept (deeper stacks are cut at the root end, marked truncated).
const MAX_ALLOC_FRAMES: usize = 256;
/// Objects at least this large go to the large object heap (the runtime's default).
const LOH_THRESHOLD: u64 = 85_000;

thread_local! {
    /// Bytes this thread may still allocate before its next sample; 0 = not drawn yet.
    static COUNTDOWN: Cell<u64> = const { Cell::new(0) };
    /// This thread's random state (xorshift64*); 0 = not seeded yet.
    static RANDOM: Cell<u64> = const { Cell::new(0) };
}

/// Handles one `ObjectAllocated` callback.
pub fn object_allocated(s: &Session, object: ObjectId, class: ClassId) {
    let interval = match s.config.alloc {
        // Ticks come from the runtime's events (`alloc_ticks.rs`), not from this callback.
        AllocMode::Off | AllocMode::Ticks => return,
        AllocMode::All => 0,
        AllocMode::Sampled => s.config.alloc_interval,
    };
    // What the object takes on the heap: the runtime's size rounded up to the alignment.
    let size = s
        .info
        .get_object_size2(object)
        .map_or(0, |n| crate::heap::aligned(n as u64));
    if interval > 0 && !sampled(size, interval) {
        return;
    }
    let stack = current_stack(s);
    s.defs.class(&s.info, &s.out, class);
    let mut flags = 0;
    if size >= LOH_THRESHOLD {
        flags |= Allocation::LARGE_OBJECT_HEAP;
    }
    // Arrays: the element count (the element type is in the class's name, e.g. `int[,]`).
    let array_length = match s.info.is_array_class(class) {
        Ok(Some(array)) => match s.info.get_array_len(object, array.rank) {
            Ok(len) => {
                flags |= Allocation::ARRAY;
                len
            }
            Err(_) => 0,
        },
        _ => 0,
    };
    // The transport counts it written or dropped.
    s.out.push_allocation(&Allocation {
        ts: s.now(),
        tid: sys::gettid(),
        class: class.as_u64(),
        size,
        stack,
        interval,
        flags,
        array_length,
    });
}

/// The calling thread's managed stack (`DoStackSnapshot` on the current thread), interned:
/// the innermost frame is the allocating method. Functions are named when first seen.
pub fn current_stack(s: &Session) -> u32 {
    let mut frames = [ManagedFrame::default(); MAX_ALLOC_FRAMES];
    let (depth, truncated) = stacks::managed_stack(&s.info, &mut frames);
    intern_managed(s, &frames[..depth], truncated)
}

/// Interns a stack of managed functions given innermost first (`truncated`: cut at the root
/// end), each at the IL position of its call (the instruction before its return address),
/// naming the functions seen for the first time.
pub fn intern_managed(s: &Session, frames: &[ManagedFrame], truncated: bool) -> u32 {
    let root = truncated.then_some(Frame::of(FrameKind::Truncated, 0));
    let path = root.into_iter().chain(frames.iter().rev().map(|f| Frame {
        kind: FrameKind::Managed,
        id: s.defs.function_id(FunctionId(f.function)),
        il: match f.ip {
            0 => IlPosition::Unknown,
            ip => s.il_positions.position(&s.info, &s.gone_code, ip - 1),
        },
    }));
    s.stacks
        .intern_path(&s.out, path, |f| s.defs.define_function(&s.info, &s.out, f))
}

/// Counts `size` bytes down this thread's countdown; true if this allocation is sampled.
fn sampled(size: u64, interval: u64) -> bool {
    COUNTDOWN.with(|countdown| {
        let left = match countdown.get() {
            0 => next_interval(interval),
            n => n,
        };
        if size < left {
            countdown.set(left - size);
            false
        } else {
            countdown.set(next_interval(interval));
            true
        }
    })
}

/// An exponentially distributed number of bytes with mean `mean` (at least 1).
fn next_interval(mean: u64) -> u64 {
    let r = RANDOM.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = (sys::monotonic_ns() ^ (u64::from(sys::gettid()) << 32)) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    });
    exponential(r, mean)
}

/// Maps a uniform 64-bit random number to an exponential with mean `mean`.
fn exponential(r: u64, mean: u64) -> u64 {
    // u in (0, 1]: never 0, so ln(u) is finite; capped at 40 means.
    let u = ((r >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let x = -u.ln() * mean as f64;
    (x.min(40.0 * mean as f64) as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_has_the_mean_asked_for() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let n = 200_000u64;
        let mut sum = 0u64;
        for _ in 0..n {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            sum += exponential(x.wrapping_mul(0x2545_f491_4f6c_dd1d), 1000);
        }
        let mean = sum as f64 / n as f64;
        assert!((mean - 1000.0).abs() < 15.0, "mean {mean}");
        assert_eq!(exponential(u64::MAX, 1000), 1); // u = 1: ln 1 = 0, at least 1 byte
        assert!(exponential(0, 1000) <= 40_000);
    }

    #[test]
    fn sampling_weights_estimate_the_true_totals() {
        // Objects of 3 sizes, sampled with a mean of 16 KiB and weighted by 1/p: each size's
        // estimated bytes and count are within 10% (more than 5 standard deviations).
        let interval = 16 << 10;
        let sizes = [24u64, 1_000, 100_000];
        let mut bytes = [0f64; 3];
        let mut objects = [0f64; 3];
        let mut truth = [0u64; 3];
        for i in 0..3_000_000u64 {
            let k = match i % 10 {
                0 => 2,
                1 | 2 => 1,
                _ => 0,
            };
            let size = sizes[k];
            truth[k] += 1;
            if sampled(size, interval) {
                let p = 1.0 - (-(size as f64) / interval as f64).exp();
                bytes[k] += size as f64 / p;
                objects[k] += 1.0 / p;
            }
        }
        for k in 0..3 {
            let n = truth[k] as f64;
            let size = sizes[k] as f64;
            assert!(
                (bytes[k] - n * size).abs() < 0.1 * n * size,
                "size {size}: {bytes:?}"
            );
            assert!((objects[k] - n).abs() < 0.1 * n, "size {size}: {objects:?}");
        }
    }
}
