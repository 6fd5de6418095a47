//! Heap snapshots: the object graph of one snapshot, its dominator tree, and per type the
//! count, shallow bytes and retained bytes; the objects retaining the most with a path from a
//! root; and the difference between two snapshots.
//!
//! Memory stays proportional to the heap, in flat arrays: a snapshot is kept as parallel
//! vectors (address, class, size, reference offsets, reference targets) while the trace is
//! read; the analysis maps addresses to indices by binary search over the sorted addresses,
//! builds successor and predecessor lists in compressed (offset + target) form, and computes
//! immediate dominators with the iterative algorithm of Cooper, Harvey and Kennedy over a
//! reverse postorder from a virtual root whose children are the roots. Objects no root reaches
//! (.NET 8's non-GC heap: string literals and type objects that compiled code refers to by
//! address) hang off the virtual root themselves, counted by type. The snapshot as read is in
//! `snapshot.rs`.
//!
//! Static fields (`HeapStatic`, format 1.10) are roots of their own, ahead of the runtime's:
//! the virtual root references each static's value directly, named `root: static
//! Class.Field`. The runtime's array of statics (`object[]`, held by a handle) still
//! references the values too, so it no longer dominates them: a static's value is shown as
//! the static's, not as the array's, and its retained size is its own subtree's as before.

use std::collections::HashMap;

use serde::Serialize;

pub use super::snapshot::{GENERATION_NAMES, NON_GC, SnapshotData, StaticRoot};

use crate::names::Names;

/// One type of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapTypeRow {
    /// The type's display name.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Live objects.
    pub count: u64,
    /// Their own bytes.
    pub shallow_bytes: u64,
    /// The retained bytes of the type's instances that no other instance of the type
    /// dominates: what the instances keep alive on their own, counted once. (Objects kept
    /// alive only by two instances together are not included.)
    pub retained_bytes: u64,
    /// Objects per generation `[0, 1, 2, LOH, POH, non-GC heap]`: how many collections they
    /// survived (0, 1, 2 or more) for the small object heap. All 0 when the trace has no
    /// generation ranges.
    pub generations: [u64; 6],
}

/// Objects and bytes in one generation of a snapshot: the age histogram.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenerationRow {
    /// `gen0` (survived no collection), `gen1` (one), `gen2` (two or more), `loh` (large
    /// object heap), `poh` (pinned object heap), `non_gc` (in no generation: the non-GC heap,
    /// see [`NON_GC`]).
    pub generation: &'static str,
    /// Objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Objects of one type that no reported root reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreachedRow {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Objects.
    pub objects: u64,
    /// Of those, on the non-GC heap.
    pub non_gc: u64,
}

/// An object that retains much, with a path from a root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retainer {
    /// Its type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Its address.
    pub address: u64,
    /// Its own bytes.
    pub shallow_bytes: u64,
    /// The bytes it alone keeps alive (its dominator subtree).
    pub retained_bytes: u64,
    /// From the root to it: the root (`root: handle, pinning`, or `root: static
    /// Cache.Entries` for a static field's value) then each object's type.
    pub path: Vec<String>,
    /// The static field whose value it is (`static Cache.Entries`), if any.
    #[serde(rename = "static", skip_serializing_if = "Option::is_none")]
    pub static_field: Option<String>,
}

/// A snapshot, analysed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeapReport {
    /// The snapshot's number.
    pub snapshot: u32,
    /// The collection it was taken in.
    pub gc: u32,
    /// Live objects.
    pub objects: u64,
    /// Their bytes.
    pub total_bytes: u64,
    /// Roots reported.
    pub roots: u64,
    /// Objects no reported root reaches.
    pub unreached_objects: u64,
    /// Of those, the objects on the non-GC heap ([`NON_GC`]): nothing roots them, compiled
    /// code refers to them by address.
    pub unreached_non_gc: u64,
    /// The unreached objects by type, most first.
    pub unreached_types: Vec<UnreachedRow>,
    /// References to addresses that are not objects of the snapshot (ignored).
    pub dangling_refs: u64,
    /// References the agent cut.
    pub refs_cut: u64,
    /// Types, most retained bytes first.
    pub types: Vec<HeapTypeRow>,
    /// Objects and bytes per generation (empty when the trace has no generation ranges).
    pub generations: Vec<GenerationRow>,
    /// The objects retaining the most (outside the roots' own), largest first.
    pub top_retainers: Vec<Retainer>,
}

/// One type's change between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapDiffRow {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Objects in the first snapshot.
    pub count_before: u64,
    /// Objects in the second.
    pub count_after: u64,
    /// `count_after - count_before`.
    pub count_delta: i64,
    /// Change of shallow bytes.
    pub shallow_bytes_delta: i64,
    /// Change of retained bytes.
    pub retained_bytes_delta: i64,
}

/// What grew (or shrank) between two snapshots, biggest change of shallow bytes first;
/// unchanged types are left out.
pub fn diff(before: &HeapReport, after: &HeapReport) -> Vec<HeapDiffRow> {
    let mut rows: HashMap<&str, HeapDiffRow> = HashMap::new();
    tally(
        &mut rows,
        before,
        |r| &mut r.count_before,
        i64::saturating_sub,
    );
    tally(
        &mut rows,
        after,
        |r| &mut r.count_after,
        i64::saturating_add,
    );
    let mut out: Vec<HeapDiffRow> = rows
        .into_values()
        .filter(|r| r.count_delta != 0 || r.shallow_bytes_delta != 0 || r.retained_bytes_delta != 0)
        .collect();
    out.sort_by(|a, b| {
        b.shallow_bytes_delta
            .abs()
            .cmp(&a.shallow_bytes_delta.abs())
            .then(a.type_name.cmp(&b.type_name))
    });
    out
}

/// Enters one snapshot's types in the rows of [`diff`]: `count` is the row's object count in
/// this snapshot; `change` moves each delta by the snapshot's value (subtracting the first
/// snapshot's, adding the second's).
fn tally<'a>(
    rows: &mut HashMap<&'a str, HeapDiffRow>,
    report: &'a HeapReport,
    count: fn(&mut HeapDiffRow) -> &mut u64,
    change: fn(i64, i64) -> i64,
) {
    for t in &report.types {
        let r = rows.entry(&t.type_name).or_insert_with(|| HeapDiffRow {
            type_name: t.type_name.clone(),
            count_before: 0,
            count_after: 0,
            count_delta: 0,
            shallow_bytes_delta: 0,
            retained_bytes_delta: 0,
        });
        *count(r) = t.count;
        r.count_delta = change(r.count_delta, t.count as i64);
        r.shallow_bytes_delta = change(r.shallow_bytes_delta, t.shallow_bytes as i64);
        r.retained_bytes_delta = change(r.retained_bytes_delta, t.retained_bytes as i64);
    }
}

const NONE: u32 = u32::MAX;

/// Name of a root kind and flags.
pub fn root_name(kind: u8, flags: u8) -> String {
    let mut s = String::from(match kind {
        1 => "root: stack",
        2 => "root: finalizer queue",
        3 => "root: handle",
        _ => "root: other",
    });
    for (bit, name) in [
        (1u8, "pinning"),
        (2, "weak"),
        (4, "interior"),
        (8, "ref-counted"),
    ] {
        if flags & bit != 0 {
            s.push_str(", ");
            s.push_str(name);
        }
    }
    s
}

/// How a static field is named: `static Namespace.Class.Field`, `thread static ...` for a
/// `[ThreadStatic]`'s value.
pub fn static_name(names: &Names, r: &StaticRoot) -> String {
    let kind = if r.thread == 0 {
        "static"
    } else {
        "thread static"
    };
    format!("{kind} {}.{}", names.class(r.class), r.field)
}

/// What reaches an object straight from the virtual root.
#[derive(Clone, Copy)]
enum RootLabel {
    /// A root the runtime reported: its kind and flags.
    Runtime(u8, u8),
    /// A static field: its index in the sorted statics.
    Static(usize),
}

/// Compressed adjacency lists: the neighbours of `v` are `targets[ends[v-1]..ends[v]]`.
struct Adjacency {
    ends: Vec<u64>,
    targets: Vec<u32>,
}

impl Adjacency {
    fn of(&self, v: usize) -> &[u32] {
        let start = if v == 0 { 0 } else { self.ends[v - 1] as usize };
        &self.targets[start..self.ends[v] as usize]
    }
}

/// Analyses a snapshot. `progress` is told what is being done (for a status line).
pub fn analyze(
    s: &SnapshotData,
    names: &Names,
    top: usize,
    progress: &mut dyn FnMut(&str),
) -> HeapReport {
    let n = s.addresses.len();
    let root = n; // the virtual root
    progress(&format!("snapshot {}: indexing {n} objects", s.number));
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by_key(|&i| s.addresses[i as usize]);
    let sorted: Vec<u64> = order.iter().map(|&i| s.addresses[i as usize]).collect();
    let index_of =
        |address: u64| -> Option<u32> { sorted.binary_search(&address).ok().map(|p| order[p]) };

    progress(&format!("snapshot {}: building the graph", s.number));
    // Successors, the virtual root last: its successors are the non-weak roots.
    let mut dangling = 0u64;
    let mut succ = Adjacency {
        ends: Vec::with_capacity(n + 1),
        targets: Vec::with_capacity(s.refs.len()),
    };
    let mut start = 0usize;
    for v in 0..n {
        let end = s.ref_ends[v] as usize;
        for &r in &s.refs[start..end] {
            match index_of(r) {
                Some(t) => succ.targets.push(t),
                None => dangling += u64::from(r != 0),
            }
        }
        succ.ends.push(succ.targets.len() as u64);
        start = end;
    }
    let mut root_kind: HashMap<u32, RootLabel> = HashMap::new();
    // Static fields first, in name order: an object several statics hold is named by the
    // first, and reached from the root through its static before any other root.
    let mut statics: Vec<(String, u64)> = s
        .statics
        .iter()
        .map(|r| (static_name(names, r), r.object))
        .collect();
    statics.sort_unstable();
    statics.dedup();
    for (i, &(_, address)) in statics.iter().enumerate() {
        if let Some(t) = index_of(address) {
            succ.targets.push(t);
            root_kind.entry(t).or_insert(RootLabel::Static(i));
        }
    }
    for &(address, kind, flags) in &s.roots {
        if flags & 2 != 0 {
            continue; // weak references keep nothing alive
        }
        if let Some(t) = index_of(address) {
            succ.targets.push(t);
            root_kind
                .entry(t)
                .or_insert(RootLabel::Runtime(kind, flags));
        }
    }
    succ.ends.push(succ.targets.len() as u64);
    drop(order);
    drop(sorted);

    // Depth-first from the virtual root: postorder numbers. Unreached objects start their own
    // trees below the virtual root.
    progress(&format!("snapshot {}: ordering", s.number));
    let total = n + 1;
    let mut post = vec![NONE; total]; // postorder number of each node
    let mut postorder: Vec<u32> = Vec::with_capacity(total);
    let mut extra_root = vec![false; total];
    let mut stack: Vec<(u32, u64)> = Vec::new();
    let mut visited = vec![false; total];
    let mut dfs =
        |start: usize, visited: &mut Vec<bool>, post: &mut Vec<u32>, postorder: &mut Vec<u32>| {
            visited[start] = true;
            stack.push((start as u32, 0));
            while let Some(&mut (v, ref mut next)) = stack.last_mut() {
                let children = succ.of(v as usize);
                if (*next as usize) < children.len() {
                    let c = children[*next as usize] as usize;
                    *next += 1;
                    if !visited[c] {
                        visited[c] = true;
                        stack.push((c as u32, 0));
                    }
                } else {
                    post[v as usize] = postorder.len() as u32;
                    postorder.push(v);
                    stack.pop();
                }
            }
        };
    // The virtual root goes last in postorder: visit its subtree, then the unreached.
    visited[root] = true;
    for &c in succ.of(root) {
        if !visited[c as usize] {
            dfs(c as usize, &mut visited, &mut post, &mut postorder);
        }
    }
    let mut unreached = 0u64;
    for v in 0..n {
        if !visited[v] {
            unreached += 1;
            extra_root[v] = true;
            dfs(v, &mut visited, &mut post, &mut postorder);
        }
    }
    post[root] = postorder.len() as u32;
    postorder.push(root as u32);
    drop(visited);

    progress(&format!("snapshot {}: predecessors", s.number));
    let mut counts = vec![0u64; total];
    for &t in &succ.targets {
        counts[t as usize] += 1;
    }
    let mut ends = Vec::with_capacity(total);
    let mut acc = 0u64;
    for c in &counts {
        acc += c;
        ends.push(acc);
    }
    let mut fill: Vec<u64> = ends.iter().zip(&counts).map(|(e, c)| e - c).collect();
    drop(counts);
    let mut targets = vec![0u32; succ.targets.len()];
    for v in 0..total {
        for &t in succ.of(v) {
            targets[fill[t as usize] as usize] = v as u32;
            fill[t as usize] += 1;
        }
    }
    drop(fill);
    let pred = Adjacency { ends, targets };

    progress(&format!("snapshot {}: dominators", s.number));
    let mut idom = vec![NONE; total];
    idom[root] = root as u32;
    for v in 0..n {
        if extra_root[v] {
            idom[v] = root as u32;
        }
    }
    let intersect = |idom: &[u32], mut a: u32, mut b: u32| -> u32 {
        while a != b {
            while post[a as usize] < post[b as usize] {
                a = idom[a as usize];
            }
            while post[b as usize] < post[a as usize] {
                b = idom[b as usize];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        // Reverse postorder, without the virtual root.
        for &v in postorder.iter().rev().skip(1) {
            let v = v as usize;
            if extra_root[v] {
                continue;
            }
            let mut new = NONE;
            for &p in pred.of(v) {
                if idom[p as usize] == NONE {
                    continue;
                }
                new = if new == NONE {
                    p
                } else {
                    intersect(&idom, p, new)
                };
            }
            if new != NONE && idom[v] != new {
                idom[v] = new;
                changed = true;
            }
        }
    }
    drop(pred);

    progress(&format!("snapshot {}: retained sizes", s.number));
    let mut retained: Vec<u64> = s.sizes.iter().copied().chain([0]).collect();
    for &v in &postorder {
        let v = v as usize;
        if v != root && idom[v] != NONE {
            retained[idom[v] as usize] = retained[idom[v] as usize].saturating_add(retained[v]);
        }
    }

    // Per type: the retained bytes of the instances no other instance of the type dominates.
    // A depth-first walk of the dominator tree keeps, per class, how many ancestors are
    // instances of it.
    progress(&format!("snapshot {}: per type", s.number));
    let classes = s.class_ids.len();
    let mut child_counts = vec![0u64; total];
    for v in 0..n {
        if idom[v] != NONE {
            child_counts[idom[v] as usize] += 1;
        }
    }
    let mut child_ends = Vec::with_capacity(total);
    let mut acc = 0u64;
    for c in &child_counts {
        acc += c;
        child_ends.push(acc);
    }
    let mut fill: Vec<u64> = child_ends
        .iter()
        .zip(&child_counts)
        .map(|(e, c)| e - c)
        .collect();
    drop(child_counts);
    let mut child_targets = vec![0u32; acc as usize];
    for (v, &d) in idom.iter().enumerate().take(n) {
        if d != NONE {
            child_targets[fill[d as usize] as usize] = v as u32;
            fill[d as usize] += 1;
        }
    }
    drop(fill);
    let children = Adjacency {
        ends: child_ends,
        targets: child_targets,
    };
    let mut count = vec![0u64; classes];
    let mut by_generation = vec![[0u64; 6]; classes];
    let mut generation_totals = [(0u64, 0u64); 6];
    let mut unreached_by_class = vec![(0u64, 0u64); classes];
    for v in 0..n {
        let generation = s.generation_of(s.addresses[v]);
        if let Some(g) = generation {
            by_generation[s.classes[v] as usize][g] += 1;
            generation_totals[g].0 += 1;
            generation_totals[g].1 = generation_totals[g].1.saturating_add(s.sizes[v]);
        }
        if extra_root[v] {
            let row = &mut unreached_by_class[s.classes[v] as usize];
            row.0 += 1;
            row.1 += u64::from(generation == Some(NON_GC));
        }
    }
    let mut shallow = vec![0u64; classes];
    let mut type_retained = vec![0u64; classes];
    let mut active = vec![0u32; classes];
    let mut walk: Vec<(u32, u64)> = vec![(root as u32, 0)];
    while let Some(&mut (v, ref mut next)) = walk.last_mut() {
        let kids = children.of(v as usize);
        if (*next as usize) < kids.len() {
            let c = kids[*next as usize] as usize;
            *next += 1;
            let class = s.classes[c] as usize;
            count[class] += 1;
            shallow[class] = shallow[class].saturating_add(s.sizes[c]);
            if active[class] == 0 {
                type_retained[class] = type_retained[class].saturating_add(retained[c]);
            }
            active[class] += 1;
            walk.push((c as u32, 0));
        } else {
            if (v as usize) != root {
                active[s.classes[v as usize] as usize] -= 1;
            }
            walk.pop();
        }
    }
    drop(children);

    let class_name = |c: usize| names.class(s.class_ids[c]);
    let mut types: Vec<HeapTypeRow> = (0..classes)
        .map(|c| HeapTypeRow {
            type_name: class_name(c),
            count: count[c],
            shallow_bytes: shallow[c],
            retained_bytes: type_retained[c],
            generations: by_generation[c],
        })
        .collect();
    let generations = if s.ranges.is_empty() {
        Vec::new()
    } else {
        GENERATION_NAMES
            .into_iter()
            .zip(generation_totals)
            .map(|(generation, (objects, bytes))| GenerationRow {
                generation,
                objects,
                bytes,
            })
            .collect()
    };
    types.sort_by(|a, b| {
        b.retained_bytes
            .cmp(&a.retained_bytes)
            .then(b.shallow_bytes.cmp(&a.shallow_bytes))
            .then(a.type_name.cmp(&b.type_name))
    });

    // Top retainers, with a shortest path from a root (breadth-first parents).
    progress(&format!("snapshot {}: paths from roots", s.number));
    let mut candidates: Vec<u32> = (0..n as u32).collect();
    let k = top.min(n);
    if k > 0 && k < n {
        candidates.select_nth_unstable_by(k - 1, |&a, &b| {
            retained[b as usize].cmp(&retained[a as usize])
        });
    }
    candidates.truncate(k);
    candidates.sort_by(|&a, &b| {
        retained[b as usize]
            .cmp(&retained[a as usize])
            .then(a.cmp(&b))
    });
    let mut parent = vec![NONE; total];
    let mut queue: std::collections::VecDeque<u32> = std::collections::VecDeque::new();
    parent[root] = root as u32;
    queue.push_back(root as u32);
    while let Some(v) = queue.pop_front() {
        for &c in succ.of(v as usize) {
            if parent[c as usize] == NONE {
                parent[c as usize] = v;
                queue.push_back(c);
            }
        }
    }
    let top_retainers = candidates
        .into_iter()
        .map(|v| {
            let mut chain = Vec::new();
            let mut cur = v;
            while cur != NONE && cur as usize != root && chain.len() <= n {
                chain.push(cur);
                cur = parent[cur as usize];
            }
            chain.reverse();
            let mut path = Vec::with_capacity(chain.len() + 1);
            match chain.first().and_then(|first| root_kind.get(first)) {
                Some(&RootLabel::Runtime(kind, flags)) if cur as usize == root => {
                    path.push(root_name(kind, flags));
                }
                Some(&RootLabel::Static(i)) if cur as usize == root => {
                    path.push(format!("root: {}", statics[i].0));
                }
                _ => path.push("(no root reported)".to_string()),
            }
            let static_field = match root_kind.get(&v) {
                Some(&RootLabel::Static(i)) => Some(statics[i].0.clone()),
                _ => None,
            };
            path.extend(
                chain
                    .iter()
                    .map(|&o| class_name(s.classes[o as usize] as usize)),
            );
            Retainer {
                type_name: class_name(s.classes[v as usize] as usize),
                address: s.addresses[v as usize],
                shallow_bytes: s.sizes[v as usize],
                retained_bytes: retained[v as usize],
                path,
                static_field,
            }
        })
        .collect();

    let mut unreached_types: Vec<UnreachedRow> = unreached_by_class
        .iter()
        .enumerate()
        .filter(|(_, r)| r.0 > 0)
        .map(|(c, &(objects, non_gc))| UnreachedRow {
            type_name: class_name(c),
            objects,
            non_gc,
        })
        .collect();
    unreached_types.sort_by(|a, b| {
        b.objects
            .cmp(&a.objects)
            .then(a.type_name.cmp(&b.type_name))
    });
    HeapReport {
        snapshot: s.number,
        gc: s.gc,
        objects: n as u64,
        total_bytes: s.sizes.iter().fold(0u64, |a, &b| a.saturating_add(b)),
        roots: s.roots.len() as u64,
        unreached_objects: unreached,
        unreached_non_gc: unreached_by_class.iter().map(|r| r.1).sum(),
        unreached_types,
        dangling_refs: dangling,
        refs_cut: s.refs_cut,
        types,
        generations,
        top_retainers,
    }
}

#[cfg(test)]
#[path = "heap_tests.rs"]
mod tests;
