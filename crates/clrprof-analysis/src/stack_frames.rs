//! A trace's stacks as the profile model's frames and stacks: one naming of trace frames
//! (managed and generated code, native functions, where a stack ends early) for every profile
//! built from Stack records: samples, call counts, allocations, lock waits.

use std::collections::HashMap;

use clrprof_trace::{FrameKind as TraceFrameKind, StackCut, StackDef};

use crate::builder::ProfileBuilder;
use crate::model::{FrameIndex, FrameKind, StackIndex};
use crate::names::Names;

/// Interns a trace's frames and stacks into one [`ProfileBuilder`], each once.
pub(crate) struct ModelStacks<'t> {
    names: &'t Names,
    defs: &'t HashMap<u32, StackDef>,
    frames: HashMap<(u8, u64), FrameIndex>,
    stacks: HashMap<u32, Option<StackIndex>>,
}

impl<'t> ModelStacks<'t> {
    /// For a trace's definitions and Stack records.
    pub(crate) fn new(names: &'t Names, defs: &'t HashMap<u32, StackDef>) -> ModelStacks<'t> {
        ModelStacks {
            names,
            defs,
            frames: HashMap::new(),
            stacks: HashMap::new(),
        }
    }

    /// The model's frame for a trace frame: a function (generated code marked as such), a
    /// native function, or the reason its stack ends early.
    pub(crate) fn frame(
        &mut self,
        b: &mut ProfileBuilder,
        kind: TraceFrameKind,
        id: u64,
    ) -> FrameIndex {
        let names = self.names;
        *self
            .frames
            .entry((kind.to_u8(), id))
            .or_insert_with(|| match kind {
                TraceFrameKind::Managed => b.intern_frame(
                    &names.function(id),
                    &names.function_module(id),
                    if names.is_generated(id) {
                        FrameKind::Generated
                    } else {
                        FrameKind::Managed
                    },
                ),
                TraceFrameKind::Native => {
                    let (name, module) = names.native_frame(id);
                    b.intern_frame(&name, &module, FrameKind::Native)
                }
                _ => b.intern_frame(
                    &crate::threads::stack_cut_name(StackCut::from_u64(id)),
                    "",
                    FrameKind::Truncated,
                ),
            })
    }

    /// The model's stack for trace stack `id` (`None` for 0, no stack).
    pub(crate) fn stack(&mut self, b: &mut ProfileBuilder, id: u32) -> Option<StackIndex> {
        if id == 0 {
            return None;
        }
        if let Some(&s) = self.stacks.get(&id) {
            return s;
        }
        // Collect the chain up to a resolved ancestor, then intern it root first.
        let stacks = self.defs;
        let mut chain = Vec::new();
        let mut cur = id;
        let mut parent: Option<StackIndex> = None;
        while cur != 0 {
            if let Some(&s) = self.stacks.get(&cur) {
                parent = s;
                break;
            }
            let Some(def) = stacks.get(&cur) else {
                break;
            };
            chain.push(cur);
            cur = def.parent;
            if chain.len() > stacks.len() {
                break; // a cycle in a corrupt trace
            }
        }
        for sid in chain.into_iter().rev() {
            let def = &stacks[&sid];
            let frame = self.frame(b, def.frame_kind, def.frame);
            parent = Some(b.intern_stack(parent, frame));
            self.stacks.insert(sid, parent);
        }
        self.stacks.get(&id).copied().flatten()
    }

    /// The model's stack for trace stack `id` with `leaf` called from its innermost frame
    /// (what was allocated there, the lock waited for).
    pub(crate) fn stack_with_leaf(
        &mut self,
        b: &mut ProfileBuilder,
        id: u32,
        leaf: FrameIndex,
    ) -> Option<StackIndex> {
        let parent = self.stack(b, id);
        Some(b.intern_stack(parent, leaf))
    }
}

/// The frames of trace stack `id`, innermost first, with their kinds and ids.
pub(crate) fn stack_path(defs: &HashMap<u32, StackDef>, id: u32) -> Vec<(TraceFrameKind, u64)> {
    let mut out = Vec::new();
    let mut cur = id;
    while cur != 0 && out.len() <= defs.len() {
        let Some(def) = defs.get(&cur) else {
            break;
        };
        out.push((def.frame_kind, def.frame));
        cur = def.parent;
    }
    out
}

/// A trace frame's name, as the model's frames name it.
pub(crate) fn frame_name(names: &Names, (kind, id): (TraceFrameKind, u64)) -> String {
    match kind {
        TraceFrameKind::Managed => names.function(id),
        TraceFrameKind::Native => names.native_frame(id).0,
        TraceFrameKind::Truncated => crate::threads::stack_cut_name(StackCut::from_u64(id)),
        TraceFrameKind::Other(_) => "[unknown frame]".into(),
    }
}
