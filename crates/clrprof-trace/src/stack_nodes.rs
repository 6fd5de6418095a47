//! The stack tree's nodes as a writer numbers them: each `(caller node, frame kind, frame)`
//! gets one [`StackDef`] id, the first time it is seen. The agent numbers every stack it
//! writes with one (under a lock, with a fast hasher), and the CLI numbers the stacks of the
//! runtime's events it reads itself with another, after the agent's ids.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::{FrameKind, IlPosition, StackDef};

/// Interned stack nodes: `(parent, frame kind, frame, IL position)` to node id.
#[derive(Debug, Clone)]
pub struct StackNodes<S = RandomState> {
    nodes: HashMap<(u32, u8, u64, u32), u32, S>,
    next: u32,
}

impl<S: BuildHasher + Default> Default for StackNodes<S> {
    fn default() -> Self {
        StackNodes::after(0)
    }
}

impl<S: BuildHasher + Default> StackNodes<S> {
    /// No nodes yet; the first gets id `last + 1` (0 is the root, the caller of outermost
    /// frames).
    pub fn after(last: u32) -> StackNodes<S> {
        StackNodes {
            nodes: HashMap::default(),
            next: last.saturating_add(1),
        }
    }

    /// The node of `frame` (of `kind`, at IL position `il`) called from the node `parent`: its
    /// id, and its
    /// definition if it is new (to be written before the id is used).
    pub fn node(
        &mut self,
        parent: u32,
        kind: FrameKind,
        frame: u64,
        il: IlPosition,
    ) -> (u32, Option<StackDef>) {
        let mut created = None;
        let next = &mut self.next;
        let id = *self
            .nodes
            .entry((parent, kind.to_u8(), frame, il.to_u32()))
            .or_insert_with(|| {
                let id = *next;
                *next = next.saturating_add(1);
                created = Some(StackDef {
                    id,
                    parent,
                    frame_kind: kind,
                    frame,
                    il,
                });
                id
            });
        (id, created)
    }

    /// The node of a whole stack of `kind` frames, given innermost first (0 for an empty
    /// stack); `new` sees the definition of each new node, callers first.
    pub fn path(
        &mut self,
        kind: FrameKind,
        innermost_first: &[u64],
        mut new: impl FnMut(StackDef),
    ) -> u32 {
        let mut parent = 0;
        for &frame in innermost_first.iter().rev() {
            let (id, def) = self.node(parent, kind, frame, IlPosition::Unknown);
            if let Some(def) = def {
                new(def);
            }
            parent = id;
        }
        parent
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_numbered_once_in_order() {
        let mut nodes: StackNodes = StackNodes::default();
        assert!(nodes.is_empty());
        let (a, def) = nodes.node(0, FrameKind::Managed, 7, IlPosition::Unknown);
        assert_eq!(
            (a, def),
            (
                1,
                Some(StackDef {
                    id: 1,
                    parent: 0,
                    frame_kind: FrameKind::Managed,
                    frame: 7,
                    il: IlPosition::Unknown,
                })
            )
        );
        assert_eq!(
            nodes.node(0, FrameKind::Managed, 7, IlPosition::Unknown),
            (1, None)
        );
        // The same frame under another parent, or of another kind, is another node.
        assert_eq!(
            nodes.node(1, FrameKind::Managed, 7, IlPosition::Unknown).0,
            2
        );
        assert_eq!(
            nodes.node(0, FrameKind::Native, 7, IlPosition::Unknown).0,
            3
        );
        assert_eq!(nodes.len(), 3);
    }

    #[test]
    fn whole_stacks_after_another_writers_nodes() {
        let mut defs = Vec::new();
        let mut nodes: StackNodes = StackNodes::after(41);
        let a = nodes.path(FrameKind::Managed, &[3, 2, 1], |d| defs.push(d));
        let b = nodes.path(FrameKind::Managed, &[4, 2, 1], |d| defs.push(d));
        assert_eq!(
            nodes.path(FrameKind::Managed, &[3, 2, 1], |d| defs.push(d)),
            a
        );
        assert_eq!((a, b), (44, 45));
        let defs: Vec<(u32, u32, u64)> = defs.iter().map(|d| (d.id, d.parent, d.frame)).collect();
        assert_eq!(defs, [(42, 0, 1), (43, 42, 2), (44, 43, 3), (45, 43, 4)]);
        assert_eq!(nodes.path(FrameKind::Managed, &[], |_| unreachable!()), 0);
        // Ids stop at the last one rather than wrap.
        let mut full: StackNodes = StackNodes::after(u32::MAX);
        assert_eq!(
            full.node(0, FrameKind::Managed, 1, IlPosition::Unknown).0,
            u32::MAX
        );
    }
}
