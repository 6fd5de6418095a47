//! A trace's stacks as the profile model's frames and stacks: one naming of trace frames
//! (managed and generated code, native functions, where a stack ends early, async callers and
//! their `[await]` markers) for every profile built from Stack records: samples, call counts,
//! allocations, lock waits; as logical or physical stacks ([`StackView`]).

use std::collections::HashMap;

use clrprof_trace::{FrameKind as TraceFrameKind, IlPosition, StackCut, StackDef};

use crate::builder::ProfileBuilder;
use crate::lines::{Place, SourceLines, SourceRoots};
use crate::model::{FrameIndex, FrameKind, LineIndex, StackIndex};
use crate::names::Names;

/// The name of the marker between an async caller and what it awaits.
pub const AWAIT_FRAME: &str = "[await]";

/// Which stack a sample taken in an async continuation shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StackView {
    /// The logical stack: the async methods that await the continuation, each followed by an
    /// `[await]` frame, then the continuation's frames; the thread pool's frames that called
    /// the continuation are left out.
    #[default]
    Logical,
    /// The thread's own frames only (`--no-async`).
    Physical,
}

/// Interns a trace's frames and stacks into one [`ProfileBuilder`], each once.
pub(crate) struct ModelStacks<'t> {
    names: &'t Names,
    defs: &'t HashMap<u32, StackDef>,
    view: StackView,
    frames: HashMap<(u8, u64), FrameIndex>,
    /// Each trace stack's model stack, and whether it holds an async caller.
    stacks: HashMap<u32, (Option<StackIndex>, bool)>,
    /// Where managed frames' source lines come from, when the profile has lines.
    lines: Option<SourceLines>,
}

impl<'t> ModelStacks<'t> {
    /// For a trace's definitions and Stack records, shown as `view` says.
    pub(crate) fn new(
        names: &'t Names,
        defs: &'t HashMap<u32, StackDef>,
        view: StackView,
    ) -> ModelStacks<'t> {
        ModelStacks {
            names,
            defs,
            view,
            frames: HashMap::new(),
            stacks: HashMap::new(),
            lines: None,
        }
    }

    /// Gives managed frames the source line they were at, from their module's symbols (found
    /// beside it or through `roots`).
    pub(crate) fn with_lines(mut self, roots: SourceRoots) -> ModelStacks<'t> {
        self.lines = Some(SourceLines::new(roots));
        self
    }

    /// The model's line for a trace frame at IL position `il`, if it has one.
    fn line(
        &mut self,
        b: &mut ProfileBuilder,
        kind: TraceFrameKind,
        id: u64,
        il: IlPosition,
    ) -> Option<LineIndex> {
        let lines = self.lines.as_mut()?;
        if kind != TraceFrameKind::Managed || il == IlPosition::Unknown {
            return None;
        }
        match lines.place(self.names, id, il) {
            Place::Line { file, line } => Some(b.intern_line(&file, line)),
            Place::IlOffset { .. } | Place::Unknown => None,
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
                TraceFrameKind::Managed | TraceFrameKind::AsyncCaller => b.intern_frame(
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
                TraceFrameKind::Await => b.intern_frame(AWAIT_FRAME, "", FrameKind::Await),
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
        if let Some(&(s, _)) = self.stacks.get(&id) {
            return s;
        }
        // Collect the chain up to a resolved ancestor, then intern it root first.
        let stacks = self.defs;
        let mut chain = Vec::new();
        let mut cur = id;
        let mut parent: Option<StackIndex> = None;
        let mut in_chain = false;
        while cur != 0 {
            if let Some(&(s, async_above)) = self.stacks.get(&cur) {
                parent = s;
                in_chain = async_above;
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
            let kind = def.frame_kind;
            let is_async = matches!(kind, TraceFrameKind::AsyncCaller | TraceFrameKind::Await);
            match self.view {
                StackView::Physical if is_async => {}
                view => {
                    // The logical stack starts at the first async caller: the frames above it
                    // are the thread pool's, which called the continuation.
                    if view == StackView::Logical
                        && kind == TraceFrameKind::AsyncCaller
                        && !in_chain
                    {
                        parent = None;
                    }
                    let frame = self.frame(b, kind, def.frame);
                    let line = self.line(b, kind, def.frame, def.il);
                    parent = Some(b.intern_stack_at(parent, frame, line));
                }
            }
            in_chain |= is_async;
            self.stacks.insert(sid, (parent, in_chain));
        }
        self.stacks.get(&id).and_then(|&(s, _)| s)
    }

    /// Adds `sample` to thread `tid` (named from `names`) at trace stack `id` with a type's
    /// frame called from its innermost frame (what was allocated there, the lock waited for):
    /// the frame of `key` in `types`, made with the name `name` gives the first time.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_under_type<K: std::hash::Hash + Eq>(
        &mut self,
        b: &mut ProfileBuilder,
        names: &Names,
        tid: u32,
        id: u32,
        types: &mut HashMap<K, FrameIndex>,
        key: K,
        name: impl FnOnce() -> String,
        sample: crate::model::Sample,
    ) {
        let leaf = *types
            .entry(key)
            .or_insert_with(|| b.intern_frame(&name(), "", FrameKind::Type));
        let parent = self.stack(b, id);
        let stack = Some(b.intern_stack(parent, leaf));
        let thread = b.thread(tid, &names.name_of_tid(tid));
        b.add_sample(thread, crate::model::Sample { stack, ..sample });
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
        TraceFrameKind::Managed | TraceFrameKind::AsyncCaller => names.function(id),
        TraceFrameKind::Await => AWAIT_FRAME.into(),
        TraceFrameKind::Native => names.native_frame(id).0,
        TraceFrameKind::Truncated => crate::threads::stack_cut_name(StackCut::from_u64(id)),
        TraceFrameKind::Other(_) => "[unknown frame]".into(),
    }
}

/// For each stack of `defs` whose frames (kinds and ids, root to leaf) are those of a stack
/// with a smaller id at other IL positions, that stack's id; stacks that are the first of
/// their frames are left out.
pub(crate) fn same_functions(defs: &HashMap<u32, StackDef>) -> HashMap<u32, u32> {
    let mut ids: Vec<u32> = defs.keys().copied().collect();
    ids.sort_unstable();
    // Each stack's canonical id, by (canonical parent, kind, frame).
    let mut canonical: HashMap<u32, u32> = HashMap::new();
    let mut first: HashMap<(u32, u8, u64), u32> = HashMap::new();
    let mut out = HashMap::new();
    for id in ids {
        let def = &defs[&id];
        // Parents come before their children (the writers define a node's parent first); a
        // parent not seen yet stands for itself.
        let parent = canonical.get(&def.parent).copied().unwrap_or(def.parent);
        let c = *first
            .entry((parent, def.frame_kind.to_u8(), def.frame))
            .or_insert(id);
        canonical.insert(id, c);
        if c != id {
            out.insert(id, c);
        }
    }
    out
}
