//! The flame graphs of the HTML report: each metric's merged tree, split per thread, as flat
//! arrays (frame, parent, self weight) in depth-first order, and the frame table they share.
//!
//! A tree with more nodes than the budget keeps its heaviest nodes (those whose inclusive
//! weight is above a threshold, which is a connected top of the tree since a node weighs at
//! least as much as any callee) and puts what it leaves out of each node into one
//! `[smaller stacks]` child, so every width stays exact.

use std::collections::HashMap;

use serde::Serialize;

use crate::model::{FrameCategory, Profile};
use crate::query::{Metric, Query};
use crate::tree::{Label, MergedTree, NO_STACK_NAME};
use crate::{Analysis, Error};

/// Name of the node standing for the callees a tree left out.
pub(super) const SMALLER_STACKS: &str = "[smaller stacks]";

/// Frames of every flame graph, by index: `name`, `module` and colour category.
#[derive(Debug, Default, Serialize)]
pub(super) struct FrameTable {
    name: Vec<String>,
    module: Vec<String>,
    cat: Vec<u8>,
    #[serde(skip)]
    index: HashMap<(String, String, u8), u32>,
}

impl FrameTable {
    /// The index of a frame, added if new.
    pub(super) fn get(&mut self, name: &str, module: &str, cat: FrameCategory) -> u32 {
        let c = FrameCategory::ALL
            .iter()
            .position(|&x| x == cat)
            .unwrap_or(0) as u8;
        let key = (name.to_owned(), module.to_owned(), c);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.name.len() as u32;
        self.name.push(name.to_owned());
        self.module.push(module.to_owned());
        self.cat.push(c);
        self.index.insert(key, i);
        i
    }

    /// The index of a profile's frame, added if new; `ids` caches the profile's frames
    /// (`u32::MAX`: not added yet), so that only frames drawn enter the table.
    pub(super) fn frame(&mut self, profile: &Profile, ids: &mut Vec<u32>, frame: usize) -> u32 {
        if ids.len() != profile.frames.len() {
            *ids = vec![u32::MAX; profile.frames.len()];
        }
        if ids[frame] == u32::MAX {
            let f = &profile.frames[frame];
            ids[frame] = self.get(&f.name, &f.module, f.category());
        }
        ids[frame]
    }
}

/// One flame graph: a metric's tree, split per thread.
#[derive(Debug, Serialize)]
pub(super) struct FlameTree {
    /// `cpu`, `wall`, `calls`, `bytes`, ...
    pub metric: Metric,
    /// What it shows, for the selector: `CPU time`, `allocated bytes`, ...
    pub label: &'static str,
    /// `ns`, `calls`, `bytes`, ...
    pub unit: &'static str,
    /// Per node: a frame index, or `-1 - t` for thread `t` of the report's thread list.
    pub f: Vec<i64>,
    /// Per node: the parent's position; `-1` for a thread node.
    pub p: Vec<i64>,
    /// Per node: the weight with the node innermost.
    pub v: Vec<u64>,
    /// Nodes of the full tree (with a weight).
    pub nodes: usize,
    /// Nodes left out (into `[smaller stacks]`).
    pub left_out: usize,
}

/// The tree of `metric` over `profile`'s threads; `threads` maps a profile thread to its
/// position in the report's thread list.
pub(super) fn flame_tree(
    profile: &Profile,
    metric: Metric,
    frames: &mut FrameTable,
    threads: &[usize],
    max_nodes: usize,
) -> Result<FlameTree, Error> {
    let query = Query {
        metric: Some(metric),
        ..Query::default()
    };
    let a = Analysis::new(profile, &query, true)?;
    let tree = &a.tree;
    let mut ids = Vec::new();
    let no_stack = frames.get(NO_STACK_NAME, "", FrameCategory::Marker);
    let smaller = frames.get(SMALLER_STACKS, "", FrameCategory::Marker);
    let total = |n: usize| tree.nodes[n].total_values.get(metric);

    let weighed = tree
        .nodes
        .iter()
        .skip(1)
        .filter(|n| n.total_values.get(metric) > 0);
    let nodes = weighed.clone().count();
    // Keep the nodes heavier than the (max_nodes + 1)-th heaviest.
    let threshold = if nodes > max_nodes {
        let mut totals: Vec<u64> = weighed.map(|n| n.total_values.get(metric)).collect();
        let (_, nth, _) = totals.select_nth_unstable_by(max_nodes, |a, b| b.cmp(a));
        *nth
    } else {
        0
    };
    let keep = |n: usize| {
        total(n) > threshold || matches!(tree.nodes[n].label, Label::Thread(_)) && total(n) > 0
    };

    let mut out = FlameTree {
        metric,
        label: metric.description(),
        unit: metric.unit(),
        f: Vec::new(),
        p: Vec::new(),
        v: Vec::new(),
        nodes,
        left_out: 0,
    };
    // (merged-tree node, parent's position)
    let mut stack: Vec<(usize, i64)> = tree.nodes[MergedTree::ROOT]
        .children
        .iter()
        .rev()
        .map(|&c| (c, -1))
        .collect();
    while let Some((n, parent)) = stack.pop() {
        if !keep(n) {
            continue;
        }
        let node = &tree.nodes[n];
        let id = out.f.len() as i64;
        out.f.push(match node.label {
            Label::Thread(t) => -1 - threads[t] as i64,
            Label::Frame(f) => i64::from(frames.frame(profile, &mut ids, f.index())),
            Label::NoStack | Label::Root => i64::from(no_stack),
        });
        out.p.push(parent);
        out.v.push(node.self_values.get(metric));
        let mut left = 0u64;
        for &c in &node.children {
            if !keep(c) && total(c) > 0 {
                left = left.saturating_add(total(c));
                out.left_out += 1;
            }
        }
        if left > 0 {
            out.f.push(i64::from(smaller));
            out.p.push(id);
            out.v.push(left);
        }
        stack.extend(node.children.iter().rev().map(|&c| (c, id)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_over_budget_keeps_its_heaviest_nodes_and_exact_widths() {
        let p = Profile::from_stacks(&[
            ("main", vec!["Main", "Hot"], 900, 900),
            ("main", vec!["Main", "Cold1"], 30, 30),
            ("main", vec!["Main", "Cold2"], 20, 20),
            ("worker", vec!["Run"], 50, 50),
        ]);
        let mut frames = FrameTable::default();
        let all = flame_tree(&p, Metric::Cpu, &mut frames, &[0, 1], 100).unwrap();
        // main, Main, Hot, Cold1, Cold2, worker, Run
        assert_eq!(all.f.len(), 7);
        assert_eq!(all.v.iter().sum::<u64>(), 1000);
        let cut = flame_tree(&p, Metric::Cpu, &mut frames, &[0, 1], 4).unwrap();
        assert_eq!(cut.left_out, 3, "Cold1, Cold2 and Run");
        assert_eq!(cut.v.iter().sum::<u64>(), 1000, "widths stay exact");
        let names: Vec<String> = cut
            .f
            .iter()
            .map(|&f| match f {
                f if f < 0 => format!("thread {}", -1 - f),
                f => frames.name[f as usize].clone(),
            })
            .collect();
        assert_eq!(
            names,
            [
                "thread 0",
                "Main",
                SMALLER_STACKS,
                "Hot",
                "thread 1",
                SMALLER_STACKS
            ]
        );
    }
}
