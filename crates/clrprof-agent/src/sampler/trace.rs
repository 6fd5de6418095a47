//! Trace mode's sampling: each tick reads every thread's current call tree node (one atomic
//! load: the enter/leave hooks keep it up to date) and adds the CPU and wall time since the
//! thread's previous tick to that node. Nothing is interrupted.

use std::sync::atomic::Ordering;

use clrprof_sdk::FunctionId;
use clrprof_trace::{FrameKind, Sample, ThreadState};

use crate::recorder::cct::{self, Node};
use crate::recorder::sys;
use crate::recorder::threads::{self, MAX_THREADS, ThreadSlot};
use crate::session::Session;
use crate::stacks::Frame;

/// The previous tick of one registry slot.
#[derive(Clone, Copy, Default)]
struct Last {
    tid: u32,
    cpu_ns: u64,
    tick_ns: u64,
}

/// Trace mode's per-tick work.
pub struct TraceTicker {
    session: &'static Session,
    last: Vec<Last>,
}

impl TraceTicker {
    /// A ticker for `session`.
    pub fn new(session: &'static Session) -> TraceTicker {
        TraceTicker {
            session,
            last: vec![Last::default(); MAX_THREADS],
        }
    }

    /// Updates slot `index`'s previous tick; returns the (cpu, wall) since, or `None` on first
    /// sight or if the thread is gone.
    fn deltas(&mut self, index: usize, slot: &ThreadSlot, now: u64) -> Option<(u64, u64)> {
        let tid = slot.tid.load(Ordering::Relaxed);
        let cpu = sys::thread_cpu_ns(tid)?;
        let last = &mut self.last[index];
        if last.tid != tid {
            *last = Last {
                tid,
                cpu_ns: cpu,
                tick_ns: now,
            };
            return None;
        }
        let d = (
            cpu.saturating_sub(last.cpu_ns),
            now.saturating_sub(last.tick_ns),
        );
        last.cpu_ns = cpu;
        last.tick_ns = now;
        Some(d)
    }

    /// One tick.
    pub fn tick(&mut self) {
        let now = sys::monotonic_ns();
        let ts = self.session.since_start(now);
        for (i, slot) in threads::in_use().iter().enumerate() {
            if !slot.is_live() {
                continue;
            }
            let Some(state) = cct::state_of(slot) else {
                continue;
            };
            let Some((cpu, wall)) = self.deltas(i, slot, now) else {
                continue;
            };
            let node = state.current();
            let times = state.times(node);
            times.self_samples.fetch_add(1, Ordering::Relaxed);
            times.self_cpu_ns.fetch_add(cpu, Ordering::Relaxed);
            times.self_wall_ns.fetch_add(wall, Ordering::Relaxed);
            let stack = self.stack_of_node(node);
            self.session.out.push_sample(&Sample {
                ts,
                tid: state.tid(),
                stack,
                cpu_ns: cpu,
                wall_ns: wall,
                state: if cpu > 0 {
                    ThreadState::Running
                } else {
                    ThreadState::Blocked
                },
                ..Default::default()
            });
        }
    }

    /// Forgets slot `index` (its thread ended).
    pub fn forget(&mut self, index: usize) {
        self.last[index] = Last::default();
    }

    /// The interned stack of a call tree node, computed once per node.
    fn stack_of_node(&mut self, node: &Node) -> u32 {
        let cached = node.stack_id.load(Ordering::Relaxed);
        if cached != 0 || node.function() == 0 {
            return cached;
        }
        // Walk up to the nearest node that already has an id (or the root).
        let mut chain: Vec<&Node> = Vec::new();
        let mut n = Some(node);
        let mut parent_stack = 0u32;
        while let Some(cur) = n {
            if cur.function() == 0 {
                break;
            }
            let id = cur.stack_id.load(Ordering::Relaxed);
            if id != 0 {
                parent_stack = id;
                break;
            }
            chain.push(cur);
            n = cur.parent();
        }
        let s = self.session;
        let path = chain.iter().rev().map(|cur| {
            let f = FunctionId(cur.function());
            Frame::of(FrameKind::Managed, s.defs.function_id(f))
        });
        let mut unset = chain.iter().rev();
        s.stacks.extend_path(
            &s.out,
            parent_stack,
            path,
            |id| {
                if let Some(cur) = unset.next() {
                    cur.stack_id.store(id, Ordering::Relaxed);
                }
            },
            |f| s.defs.define_function(&s.info, &s.out, f),
        )
    }
}
