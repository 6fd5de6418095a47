//! Tests of the heap snapshot analysis (`heap.rs`).

use super::*;
use clrprof_trace::{ClassDef, HeapObject, HeapStatic};

fn names(classes: &[(u64, &str)]) -> Names {
    let mut n = Names::default();
    for &(id, name) in classes {
        n.classes.insert(
            id,
            ClassDef {
                id,
                name: name.into(),
                ..ClassDef::default()
            },
        );
    }
    n
}

#[test]
fn list_of_nodes_retains_everything_below_it() {
    // handle -> list(1000) -> array(2000) -> node_i(100+i..) -> data_i
    let (list, array) = (1u64, 2u64);
    let mut objects = vec![(1000, list, 32, vec![2000]), (2000, array, 8024, vec![])];
    for i in 0..1000u64 {
        let node = 10_000 + i * 16;
        let data = 100_000 + i * 16;
        objects[1].3.push(node);
        objects.push((node, 3, 24, vec![data]));
        objects.push((data, 4, 1024, vec![]));
    }
    // A node shared by two lists is retained by neither list but by their common
    // dominator (the virtual root).
    let shared = (5_000_000, 3, 24, vec![]);
    objects.push(shared);
    objects.push((6_000_000, list, 32, vec![5_000_000]));
    objects[0].3.push(5_000_000);
    let mut s = SnapshotData::from_parts(1, objects, [(1000, 3, 1), (6_000_000, 1, 0), (42, 3, 0)]);
    // Nodes at 10_000.. in generation 2, their data at 100_000.. in generation 1.
    s.set_generation_ranges(vec![
        (100_000, 16_000, 1),
        (10_000, 16_000, 2),
        (0, 5_000, 0),
    ]);
    let n = names(&[(1, "List"), (2, "Node[]"), (3, "Node"), (4, "byte[]")]);
    let r = analyze(&s, &n, 3, &mut |_| {});
    let row = |t: &str| r.types.iter().find(|x| x.type_name == t).unwrap().clone();
    assert_eq!(row("Node").count, 1001);
    // The shared node and the second list lie in no generation: the non-GC heap's bucket.
    assert_eq!(row("Node").generations, [0, 0, 1000, 0, 0, 1]);
    assert_eq!(row("byte[]").generations, [0, 1000, 0, 0, 0, 0]);
    assert_eq!(row("List").generations, [1, 0, 0, 0, 0, 1]);
    assert_eq!(r.generations[NON_GC].objects, 2);
    let histogram: u64 = r.generations.iter().map(|g| g.objects).sum();
    assert_eq!(histogram, r.objects, "every object is in the age histogram");
    assert_eq!(r.generations[1].objects, 1000);
    assert_eq!(r.generations[1].bytes, 1000 * 1024);
    assert_eq!(row("byte[]").shallow_bytes, 1000 * 1024);
    assert_eq!(row("List").count, 2);
    // The lists' own subtrees; the shared node is dominated by neither list alone.
    assert_eq!(row("List").retained_bytes, 64 + 8024 + 1000 * (24 + 1024));
    assert_eq!(row("Node").retained_bytes, 1001 * 24 + 1000 * 1024);
    assert_eq!(r.unreached_objects, 0);
    let top = &r.top_retainers[0];
    assert_eq!(top.type_name, "List");
    assert_eq!(top.retained_bytes, 32 + 8024 + 1000 * (24 + 1024));
    assert_eq!(top.path, ["root: handle, pinning", "List"]);
    assert_eq!(r.top_retainers[1].type_name, "Node[]");
    assert_eq!(
        r.top_retainers[1].path,
        ["root: handle, pinning", "List", "Node[]"]
    );

    let mut grown = s.clone();
    grown.object(&HeapObject {
        snapshot: 1,
        object: 9_000_000,
        class: 3,
        size: 24,
        refs: vec![],
    });
    let after = analyze(&grown, &n, 3, &mut |_| {});
    assert_eq!(after.unreached_objects, 1);
    let d = diff(&r, &after);
    assert_eq!(d.len(), 1);
    assert_eq!(
        (
            d[0].type_name.as_str(),
            d[0].count_delta,
            d[0].shallow_bytes_delta
        ),
        ("Node", 1, 24)
    );
}

/// Retained sizes by brute force: `d` retains `v` if `v` cannot be reached from the roots
/// without `d`. Objects no root reaches get an edge from the root, in index order, like
/// `analyze` does.
fn naive_retained(sizes: &[u64], edges: &[Vec<usize>], roots: &[usize]) -> Vec<u64> {
    let n = sizes.len();
    let reach = |start: &[usize], without: Option<usize>, seen: &mut Vec<bool>| {
        let mut stack: Vec<usize> = start
            .iter()
            .copied()
            .filter(|&r| Some(r) != without)
            .collect();
        for &r in &stack {
            seen[r] = true;
        }
        while let Some(v) = stack.pop() {
            for &c in &edges[v] {
                if !seen[c] && Some(c) != without {
                    seen[c] = true;
                    stack.push(c);
                }
            }
        }
    };
    let mut entry: Vec<usize> = roots.to_vec();
    let mut seen = vec![false; n];
    reach(roots, None, &mut seen);
    for v in 0..n {
        if !seen[v] {
            entry.push(v);
            reach(&[v], None, &mut seen);
        }
    }
    (0..n)
        .map(|d| {
            let mut seen = vec![false; n];
            reach(&entry, Some(d), &mut seen);
            (0..n)
                .filter(|&v| v == d || !seen[v])
                .map(|v| sizes[v])
                .sum()
        })
        .collect()
}

#[test]
fn dominators_match_brute_force_on_random_graphs() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m.max(1)
    };
    for round in 0..300 {
        let n = 1 + next(30) as usize;
        let sizes: Vec<u64> = (0..n).map(|_| 8 + next(100)).collect();
        let edges: Vec<Vec<usize>> = (0..n)
            .map(|_| (0..next(4)).map(|_| next(n as u64) as usize).collect())
            .collect();
        let roots: Vec<usize> = (0..next(3)).map(|_| next(n as u64) as usize).collect();
        let address = |i: usize| 0x1000 + 16 * i as u64;
        let s = SnapshotData::from_parts(
            1,
            (0..n).map(|i| {
                let refs = edges[i].iter().map(|&t| address(t)).collect();
                (address(i), 1 + (i as u64 % 3), sizes[i], refs)
            }),
            roots.iter().map(|&r| (address(r), 1, 0)),
        );
        let report = analyze(&s, &Names::default(), n, &mut |_| {});
        let expected = naive_retained(&sizes, &edges, &roots);
        for r in &report.top_retainers {
            let i = ((r.address - 0x1000) / 16) as usize;
            assert_eq!(
                r.retained_bytes, expected[i],
                "round {round}, object {i}: {edges:?} roots {roots:?}"
            );
        }
        assert_eq!(report.top_retainers.len(), n);
    }
}

#[test]
fn static_fields_name_their_roots_instead_of_the_runtime_array() {
    // handle, pinning -> object[] (the runtime's statics) -> dictionary -> entries -> 10
    // nodes; the array also holds a string (a static with no record) and a thread
    // static's list -> 1 node.
    let (statics_array, dict, entries, node, text, list) = (1u64, 2, 3, 4, 5, 6);
    let mut objects = vec![
        (0x100, statics_array, 56, vec![0x200, 0x900, 0xa00]),
        (0x200, dict, 80, vec![0x300]),
        (0x300, entries, 264, vec![]),
        (0x900, text, 30, vec![]),
        (0xa00, list, 32, vec![0xb00]),
        (0xb00, node, 24, vec![]),
    ];
    for i in 0..10u64 {
        objects[2].3.push(0x400 + i * 0x10);
        objects.push((0x400 + i * 0x10, node, 24, vec![]));
    }
    let mut s = SnapshotData::from_parts(1, objects, [(0x100, 3, 1)]);
    let n = names(&[
        (1, "object[]"),
        (2, "System.Collections.Generic.Dictionary<int, Node>"),
        (3, "Entry[]"),
        (4, "Node"),
        (5, "string"),
        (6, "List<Node>"),
        (10, "App.Cache"),
    ]);
    let without = analyze(&s, &n, 3, &mut |_| {});
    assert_eq!(without.top_retainers[0].type_name, "object[]");
    assert_eq!(without.top_retainers[0].static_field, None);
    for (object, field, thread) in [(0x200, "Entries", 0), (0xa00, "Current", 0x55)] {
        s.static_root(&HeapStatic {
            snapshot: 1,
            object,
            class: 10,
            field: field.into(),
            thread,
        });
    }
    let r = analyze(&s, &n, 3, &mut |_| {});
    let dictionary = 80 + 264 + 10 * 24;
    let top = &r.top_retainers[0];
    assert_eq!(
        top.type_name,
        "System.Collections.Generic.Dictionary<int, Node>"
    );
    assert_eq!(
        top.static_field.as_deref(),
        Some("static App.Cache.Entries")
    );
    assert_eq!(top.retained_bytes, dictionary);
    assert_eq!(
        top.path,
        [
            "root: static App.Cache.Entries",
            "System.Collections.Generic.Dictionary<int, Node>"
        ]
    );
    // The same retained size as without the statics: its own subtree.
    let before = without
        .top_retainers
        .iter()
        .find(|x| x.address == 0x200)
        .unwrap();
    assert_eq!(before.retained_bytes, dictionary);
    assert_eq!(before.path[..2], ["root: handle, pinning", "object[]"]);
    // What the dictionary holds is reached through the static.
    assert_eq!(
        r.top_retainers[1].path,
        [
            "root: static App.Cache.Entries",
            "System.Collections.Generic.Dictionary<int, Node>",
            "Entry[]"
        ]
    );
    // The array keeps only what no static names: itself and the string.
    let array = r.types.iter().find(|t| t.type_name == "object[]").unwrap();
    assert_eq!(array.retained_bytes, 56 + 30);
    let list = r
        .types
        .iter()
        .find(|t| t.type_name == "List<Node>")
        .unwrap();
    assert_eq!(list.retained_bytes, 32 + 24);
    let all = analyze(&s, &n, 20, &mut |_| {});
    let current = all
        .top_retainers
        .iter()
        .find(|x| x.address == 0xa00)
        .unwrap();
    assert_eq!(
        current.static_field.as_deref(),
        Some("thread static App.Cache.Current")
    );
    assert_eq!(
        current.path,
        ["root: thread static App.Cache.Current", "List<Node>"]
    );
    // A node below the static is not a static's value.
    let node = all
        .top_retainers
        .iter()
        .find(|x| x.address == 0xb00)
        .unwrap();
    assert_eq!(node.static_field, None);
    assert_eq!(r.objects, without.objects);
    assert_eq!(r.total_bytes, without.total_bytes);
}

#[test]
fn cycles_and_weak_roots() {
    // a <-> b cycle under a root; c only weakly rooted (so unreached).
    let s = SnapshotData::from_parts(
        1,
        [
            (10, 1, 10, vec![20]),
            (20, 1, 20, vec![10]),
            (30, 2, 5, vec![]),
        ],
        [(10, 1, 0), (30, 3, 2)],
    );
    let r = analyze(&s, &names(&[(1, "A"), (2, "C")]), 5, &mut |_| {});
    let a = r.types.iter().find(|t| t.type_name == "A").unwrap();
    assert_eq!((a.count, a.shallow_bytes, a.retained_bytes), (2, 30, 30));
    assert_eq!(r.unreached_objects, 1);
    assert_eq!(r.top_retainers[0].retained_bytes, 30);
    assert_eq!(r.top_retainers[0].path, ["root: stack", "A"]);
}
