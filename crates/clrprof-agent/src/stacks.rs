//! The session's stack interner: one prefix tree of frames for every stack the agent writes
//! (CPU samples from the sampler thread, allocation stacks from the allocating threads), so
//! that `StackDef` ids are unique in a trace and shared stacks are written once.

use std::collections::HashMap;
use std::sync::Mutex;

use clrprof_trace::{FrameKind, Record, StackDef};

use crate::transport::Transport;

/// Interned stack nodes: `(parent, frame kind, frame)` to node id.
#[derive(Default)]
pub struct StackInterner {
    nodes: Mutex<HashMap<(u32, u8, u64), u32>>,
}

impl StackInterner {
    /// The node for `frame` called from `parent` (0 for a root), writing its `StackDef` the
    /// first time.
    pub fn intern(&self, out: &Transport, parent: u32, kind: FrameKind, frame: u64) -> u32 {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        Self::node(&mut nodes, out, parent, kind, frame)
    }

    /// The node of a whole stack, frames given from the outermost to the innermost; 0 for an
    /// empty stack. Takes the lock once.
    pub fn intern_path(
        &self,
        out: &Transport,
        frames: impl Iterator<Item = (FrameKind, u64)>,
    ) -> u32 {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        frames.fold(0, |parent, (kind, frame)| {
            Self::node(&mut nodes, out, parent, kind, frame)
        })
    }

    fn node(
        nodes: &mut HashMap<(u32, u8, u64), u32>,
        out: &Transport,
        parent: u32,
        kind: FrameKind,
        frame: u64,
    ) -> u32 {
        let next = nodes.len() as u32 + 1;
        *nodes
            .entry((parent, kind.to_u8(), frame))
            .or_insert_with(|| {
                out.push_record(&Record::StackDef(StackDef {
                    id: next,
                    parent,
                    frame_kind: kind,
                    frame,
                }));
                next
            })
    }
}
