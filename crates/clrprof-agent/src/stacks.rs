//! The session's stack interner: one prefix tree of frames for every stack the agent writes
//! (CPU samples from the sampler thread, allocation stacks from the allocating threads), so
//! that `StackDef` ids are unique in a trace and shared stacks are written once. A function is
//! named (its `FunctionDef`) when a stack node is first made for it, after the lock is
//! released, so interning a known stack costs no name lookup. Also the walk of the calling
//! thread's managed stack that allocation and throw-site stacks share.

use std::sync::Mutex;

use rustc_hash::FxBuildHasher;

use clrprof_sdk::stack::SnapshotFlags;
use clrprof_sdk::{ProfilerInfo, ThreadId};
use clrprof_trace::{FrameKind, IlPosition, Record, StackNodes};

use crate::transport::Transport;

/// Managed frames that got their first stack node are named after the interner's lock is
/// released, up to this many per call (any more are named under the lock).
const NAME_AFTER_UNLOCK: usize = 256;

/// One frame of a stack to intern: its kind, its id (`FunctionID`, native frame id, ...) and,
/// for a managed frame, where in its method's IL it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    pub kind: FrameKind,
    pub id: u64,
    pub il: IlPosition,
}

impl Frame {
    /// A frame whose place in its method is not known (or not a managed frame).
    pub fn of(kind: FrameKind, id: u64) -> Frame {
        Frame {
            kind,
            id,
            il: IlPosition::Unknown,
        }
    }
}

/// Interned stack nodes, numbered from 1.
#[derive(Default)]
pub struct StackInterner {
    nodes: Mutex<StackNodes<FxBuildHasher>>,
}

impl StackInterner {
    /// The node of a whole stack, frames given from the outermost to the innermost; 0 for an
    /// empty stack. Takes the lock once. `name` is called for each managed frame that is in
    /// a new node (so every function of a written `StackDef` is named once it is first seen,
    /// and frames already interned cost no name lookup).
    pub fn intern_path(
        &self,
        out: &Transport,
        frames: impl Iterator<Item = Frame>,
        name: impl FnMut(u64),
    ) -> u32 {
        self.extend_path(out, 0, frames, |_| {}, name)
    }

    /// Like [`StackInterner::intern_path`], starting below the node `parent`; `interned` sees
    /// each frame's node id in order.
    pub fn extend_path(
        &self,
        out: &Transport,
        parent: u32,
        frames: impl Iterator<Item = Frame>,
        mut interned: impl FnMut(u32),
        mut name: impl FnMut(u64),
    ) -> u32 {
        let mut new = [0u64; NAME_AFTER_UNLOCK];
        let mut new_len = 0;
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        let mut node = parent;
        for frame in frames {
            let (id, created) = Self::node(&mut nodes, out, node, frame);
            if created && matches!(frame.kind, FrameKind::Managed | FrameKind::AsyncCaller) {
                if new_len < NAME_AFTER_UNLOCK {
                    new[new_len] = frame.id;
                    new_len += 1;
                } else {
                    name(frame.id);
                }
            }
            interned(id);
            node = id;
        }
        drop(nodes);
        new[..new_len].iter().for_each(|&frame| name(frame));
        node
    }

    /// The node for `frame` called from `parent`, and whether it is new (its `StackDef` is
    /// written then).
    fn node(
        nodes: &mut StackNodes<FxBuildHasher>,
        out: &Transport,
        parent: u32,
        frame: Frame,
    ) -> (u32, bool) {
        let (id, new) = nodes.node(parent, frame.kind, frame.id, frame.il);
        if let Some(def) = new {
            out.push_record(&Record::StackDef(def));
        }
        (id, new.is_some())
    }
}

/// A managed frame of a stack the runtime walked: its function, and the return address it was
/// at (the instruction after its call).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ManagedFrame {
    /// The FunctionID.
    pub function: usize,
    /// The return address (0: unknown).
    pub ip: usize,
}

/// Walks the calling thread's managed stack (`DoStackSnapshot` on the current thread) into
/// `frames`, innermost first, skipping native chains between managed frames. Returns how many
/// frames were written and whether there were more than `frames` holds. Does not allocate.
pub fn managed_stack(info: &ProfilerInfo, frames: &mut [ManagedFrame]) -> (usize, bool) {
    let mut depth = 0;
    let mut truncated = false;
    let _ = info.do_stack_snapshot(ThreadId::NULL, SnapshotFlags::DEFAULT, &mut |frame| {
        if frame.function.is_null() {
            return true; // a native chain between managed frames
        }
        if depth == frames.len() {
            truncated = true;
            return false;
        }
        frames[depth] = ManagedFrame {
            function: frame.function.0,
            ip: frame.ip,
        };
        depth += 1;
        true
    });
    (depth, truncated)
}
