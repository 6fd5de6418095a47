//! The computations: top table, merged tree, metrics, thread selection and filters.

mod common;

use clrprof_analysis::{
    Analysis, CallNodeRecord, CallTree, Error, FrameIndex, FunctionRow, Label, Metric, Profile,
    ProfileKind, Query, StackIndex, StackNode, TopTable,
};
use common::{sample_profile, trace_profile};

const MS: u64 = 1_000_000;

fn top(profile: &Profile, query: &Query) -> (TopTable, Vec<(String, FunctionRow)>) {
    let a = Analysis::new(profile, query, false).unwrap();
    let table = a.top(query.top);
    let rows = table
        .rows
        .iter()
        .map(|r| (r.label.name(profile).into_owned(), r.clone()))
        .collect();
    (table, rows)
}

/// The query that keeps only the stacks with a frame matching `filter`.
fn filtered(filter: &str) -> Query {
    Query {
        filter: Some(filter.into()),
        ..Query::default()
    }
}

/// The query of the thread `thread` names (a name or a tid).
fn on_thread(thread: &str) -> Query {
    Query {
        thread: Some(thread.into()),
        ..Query::default()
    }
}

/// Renders `p` in every format, each of which must succeed.
#[track_caller]
fn assert_every_format_renders(p: &Profile) {
    for format in clrprof_analysis::Format::ALL {
        let mut out = Vec::new();
        format
            .renderer()
            .render(p, &Query::default(), &mut out)
            .unwrap_or_else(|e| panic!("{format}: {e}"));
    }
}

fn row<'a>(rows: &'a [(String, FunctionRow)], name: &str) -> &'a FunctionRow {
    &rows
        .iter()
        .find(|(n, _)| n.starts_with(name))
        .unwrap_or_else(|| panic!("no row for {name}"))
        .1
}

fn has_row(rows: &[(String, FunctionRow)], name: &str) -> bool {
    rows.iter().any(|(n, _)| n.starts_with(name))
}

#[test]
fn self_and_total_in_sample_mode() {
    let p = sample_profile();
    let (table, rows) = top(&p, &Query::default());
    assert_eq!(table.metric, Metric::Cpu);
    assert_eq!(table.grand_total, 13 * MS + MS / 2);
    let parse_line = row(&rows, "MyApp.Parser.ParseLine");
    assert_eq!(
        (parse_line.self_weight, parse_line.total_weight),
        (9 * MS, 9 * MS)
    );
    assert_eq!(parse_line.calls, None);
    let main = row(&rows, "MyApp.Program.Main");
    assert_eq!((main.self_weight, main.total_weight), (0, 10 * MS));
    let parse_file = row(&rows, "MyApp.Parser.ParseFile");
    assert_eq!(
        (parse_file.self_weight, parse_file.total_weight),
        (MS, 7 * MS)
    );
    // Sorted by self weight, heaviest first.
    assert_eq!(rows[0].0, "MyApp.Parser.ParseLine(string, int)");
    assert!(
        rows.windows(2)
            .all(|w| w[0].1.self_weight >= w[1].1.self_weight)
    );
    // The module comes with the row.
    assert_eq!(parse_line.label.module(&p), "MyApp.dll");
}

#[test]
fn recursion_is_counted_once_per_stack() {
    let p = sample_profile();
    let (_, rows) = top(&p, &Query::default());
    let fib = row(&rows, "MyApp.Compute.Fib");
    // Two samples of Fib;Fib;Fib and one of Fib: 3 ms, not 2*3 + 1 = 7 ms.
    assert_eq!(fib.self_weight, 3 * MS);
    assert_eq!(fib.total_weight, 3 * MS);
}

#[test]
fn indirect_recursion_is_counted_once_per_stack() {
    let p = Profile::from_stacks(&[
        ("t", vec!["A", "B", "A", "B", "C"], 5, 5),
        ("t", vec!["A", "B", "A"], 2, 2),
    ]);
    let (table, rows) = top(&p, &Query::default());
    assert_eq!(table.grand_total, 7);
    assert_eq!(row(&rows, "A").total_weight, 7);
    assert_eq!(row(&rows, "A").self_weight, 2);
    assert_eq!(row(&rows, "B").total_weight, 7);
    assert_eq!(row(&rows, "B").self_weight, 0);
    assert_eq!(row(&rows, "C").total_weight, 5);
    // The merged tree keeps the recursion as distinct nodes.
    let a = Analysis::new(&p, &Query::default(), false).unwrap();
    assert_eq!(a.tree.nodes.len(), 1 + 5);
}

#[test]
fn cpu_metric_excludes_idle_samples_and_wall_includes_them() {
    let p = sample_profile();
    let (_, rows) = top(&p, &Query::default());
    assert!(!has_row(&rows, "System.Threading.Monitor.Wait"));

    let wall = Query {
        metric: Some(Metric::Wall),
        ..Query::default()
    };
    let (table, rows) = top(&p, &wall);
    assert_eq!(table.grand_total, 18 * MS);
    assert_eq!(
        row(&rows, "System.Threading.Monitor.Wait").self_weight,
        4 * MS
    );

    let samples = Query {
        metric: Some(Metric::Samples),
        ..Query::default()
    };
    let (table, rows) = top(&p, &samples);
    assert_eq!(table.grand_total, 18);
    assert_eq!(row(&rows, "MyApp.Program.Main").total_weight, 14);
}

#[test]
fn samples_without_managed_frames_get_their_own_row() {
    let p = sample_profile();
    let (_, rows) = top(&p, &Query::default());
    let r = row(&rows, "[no managed frames]");
    assert_eq!(r.label, Label::NoStack);
    assert_eq!(r.self_weight, MS / 2);
}

#[test]
fn thread_selection_by_tid_and_name() {
    let p = sample_profile();
    let by_name = on_thread("worker");
    let (table, rows) = top(&p, &by_name);
    assert_eq!(table.grand_total, 3 * MS);
    assert!(!has_row(&rows, "MyApp.Program.Main"));
    assert_eq!(row(&rows, "MyApp.Parser.ParseLine").self_weight, 3 * MS);

    let worker_tid = p.threads.iter().find(|t| t.name == "worker").unwrap().tid;
    let by_tid = on_thread(&worker_tid.to_string());
    assert_eq!(top(&p, &by_tid).0, table);

    let missing = on_thread("nope");
    match Analysis::new(&p, &missing, false) {
        Err(Error::NoSuchThread {
            selector,
            available,
        }) => {
            assert_eq!(selector, "nope");
            assert!(available.contains("worker (2)"), "{available}");
        }
        other => panic!("expected NoSuchThread, got {other:?}"),
    }
}

#[test]
fn filter_keeps_only_stacks_with_a_matching_frame() {
    let p = sample_profile();
    let q = filtered("Parser.");
    let (table, rows) = top(&p, &q);
    // ParseLine (6 + 3 ms) and ParseFile's own 1 ms.
    assert_eq!(table.grand_total, 10 * MS);
    assert!(!has_row(&rows, "MyApp.Compute.Fib"));
    assert!(!has_row(&rows, "[no managed frames]"));
    // Callers of matching frames stay, with the weight of the kept stacks only.
    assert_eq!(row(&rows, "MyApp.Program.Main").total_weight, 7 * MS);
    assert_eq!(row(&rows, "MyApp.Worker.Run").total_weight, 3 * MS);

    // Case-sensitive.
    let q = filtered("parser.");
    assert!(top(&p, &q).1.is_empty());
}

#[test]
fn filter_and_thread_combine() {
    let p = sample_profile();
    let q = Query {
        filter: Some("ParseLine".into()),
        thread: Some("main".into()),
        ..Query::default()
    };
    assert_eq!(top(&p, &q).0.grand_total, 6 * MS);
}

#[test]
fn top_n_truncates_and_counts_the_rest() {
    let p = sample_profile();
    let (all, _) = top(&p, &Query::default());
    let q = Query {
        top: Some(2),
        ..Query::default()
    };
    let (table, rows) = top(&p, &q);
    assert_eq!(rows.len(), 2);
    assert_eq!(table.omitted, all.rows.len() - 2);
    assert_eq!(table.rows[..], all.rows[..2]);
    assert_eq!(table.grand_total, all.grand_total);
}

#[test]
fn merged_tree_merges_threads_or_splits_them() {
    let p = sample_profile();
    let merged = Analysis::new(&p, &Query::default(), false).unwrap();
    let split = Analysis::new(&p, &Query::default(), true).unwrap();
    assert_eq!(merged.tree.total(), split.tree.total());
    let root_labels: Vec<Label> = split.tree.nodes[0]
        .children
        .iter()
        .map(|&c| split.tree.nodes[c].label)
        .collect();
    assert_eq!(root_labels, vec![Label::Thread(0), Label::Thread(1)]);
    // Heaviest first.
    let top_child = merged.tree.nodes[0].children[0];
    assert_eq!(
        merged.tree.nodes[top_child].label.name(&p),
        "MyApp.Program.Main(string[])"
    );
    // Totals are sums of self values below.
    for (i, n) in merged.tree.nodes.iter().enumerate() {
        let below: u64 = n
            .children
            .iter()
            .map(|&c| merged.tree.nodes[c].total_values.cpu_ns)
            .sum();
        assert_eq!(
            n.total_values.cpu_ns,
            n.self_values.cpu_ns + below,
            "node {i}"
        );
    }
    assert_eq!(merged.tree.threads.len(), 2);
    assert_eq!(merged.tree.threads[1].values.cpu_ns, 3 * MS);
    // The top table is the same from either tree.
    assert_eq!(merged.top(None), split.top(None));
}

#[test]
fn trace_mode_counts_exact_calls() {
    let p = trace_profile();
    let (table, rows) = top(&p, &Query::default());
    assert_eq!(table.grand_total, 15 * MS);
    let parse_line = row(&rows, "MyApp.Parser.ParseLine");
    assert_eq!(parse_line.calls, Some(250));
    assert_eq!(parse_line.self_weight, 9 * MS);
    // Calls of a recursive function: every call, at every depth.
    let fib = row(&rows, "MyApp.Compute.Fib");
    assert_eq!(fib.calls, Some(1 + 2 + 4));
    assert_eq!((fib.self_weight, fib.total_weight), (4 * MS, 4 * MS));
    assert_eq!(row(&rows, "MyApp.Program.Main").total_weight, 12 * MS);
    assert_eq!(row(&rows, "MyApp.Worker.Run").calls, Some(1));
}

#[test]
fn calls_metric_is_trace_only() {
    let q = Query {
        metric: Some(Metric::Calls),
        ..Query::default()
    };
    let err = Analysis::new(&sample_profile(), &q, false).unwrap_err();
    assert!(matches!(
        err,
        Error::MetricUnavailable {
            metric: Metric::Calls
        }
    ));

    let p = trace_profile();
    let (table, rows) = top(&p, &q);
    assert_eq!(table.grand_total, 1 + 2 + 200 + 1 + 2 + 4 + 1 + 50);
    let fib = row(&rows, "MyApp.Compute.Fib");
    assert_eq!((fib.self_weight, fib.total_weight), (7, 7));
    assert_eq!(row(&rows, "MyApp.Program.Main").total_weight, 210);
}

#[test]
fn trace_filter_keeps_callers_as_context() {
    let p = trace_profile();
    let q = filtered("ParseLine");
    let (table, rows) = top(&p, &q);
    assert_eq!(table.grand_total, 9 * MS);
    assert!(!has_row(&rows, "MyApp.Compute.Fib"));
    let main = row(&rows, "MyApp.Program.Main");
    // Main's own sample is left out, its exact calls are kept.
    assert_eq!(
        (main.self_weight, main.total_weight, main.calls),
        (0, 6 * MS, Some(1))
    );
    assert_eq!(row(&rows, "MyApp.Parser.ParseFile").calls, Some(2));
    assert_eq!(row(&rows, "MyApp.Parser.ParseLine").calls, Some(250));
}

#[test]
fn trace_thread_without_call_tree_falls_back_to_samples() {
    let mut p = trace_profile();
    let sampled = sample_profile();
    // Graft the sampled profile's worker thread (and its frames and stacks) on.
    let base_frame = p.frames.len() as u32;
    p.frames.extend(sampled.frames.iter().cloned());
    let base_stack = p.stacks.len() as u32;
    p.stacks.extend(sampled.stacks.iter().map(|s| StackNode {
        parent: s.parent.map(|x| StackIndex(x.0 + base_stack)),
        frame: FrameIndex(s.frame.0 + base_frame),
        line: None,
    }));
    let mut worker = sampled.threads[1].clone();
    worker.tid = 99;
    worker.name = "sampled".into();
    for s in &mut worker.samples {
        s.stack = s.stack.map(|x| StackIndex(x.0 + base_stack));
    }
    p.threads.push(worker);
    p.validate().unwrap();
    let a = Analysis::new(&p, &Query::default(), false).unwrap();
    assert_eq!(a.grand_total(), 18 * MS);
    assert!(
        a.notes()
            .iter()
            .any(|n| n.contains("sampled (99) has no call tree"))
    );
}

#[test]
fn call_tree_from_records_orders_parents_first() {
    let rec = |id, parent, frame, calls| CallNodeRecord {
        id,
        parent,
        frame: FrameIndex(frame),
        calls,
        self_samples: 0,
        self_cpu_ns: 0,
        self_wall_ns: 0,
    };
    let (tree, dropped) = CallTree::from_records(&[
        rec(3, Some(2), 2, 30),
        rec(2, Some(1), 1, 20),
        rec(1, None, 0, 10),
        rec(9, Some(77), 5, 1), // parent never written: becomes a root
        rec(2, Some(1), 4, 99), // duplicate id: dropped
    ]);
    assert_eq!(dropped, 1);
    assert_eq!(tree.nodes.len(), 4);
    for (i, n) in tree.nodes.iter().enumerate() {
        assert!(n.parent.is_none_or(|p| p < i));
    }
    let by_calls = |c: u64| tree.nodes.iter().position(|n| n.calls == c).unwrap();
    assert_eq!(tree.nodes[by_calls(30)].parent, Some(by_calls(20)));
    assert_eq!(tree.nodes[by_calls(20)].parent, Some(by_calls(10)));
    assert_eq!(tree.nodes[by_calls(10)].parent, None);
    assert_eq!(tree.nodes[by_calls(1)].parent, None);

    // A cycle is cut rather than looping forever.
    let (tree, _) = CallTree::from_records(&[rec(1, Some(2), 0, 1), rec(2, Some(1), 0, 2)]);
    assert_eq!(tree.nodes.len(), 2);
    assert_eq!(tree.nodes.iter().filter(|n| n.parent.is_none()).count(), 1);
}

#[test]
fn invalid_profiles_are_errors_not_panics() {
    let mut p = sample_profile();
    p.stacks.push(StackNode {
        parent: Some(StackIndex(10_000)),
        frame: FrameIndex(0),
        line: None,
    });
    assert!(matches!(
        Analysis::new(&p, &Query::default(), false),
        Err(Error::InvalidProfile(_))
    ));
    let mut p = sample_profile();
    p.threads[0].samples[0].stack = Some(StackIndex(10_000));
    assert!(matches!(p.validate(), Err(Error::InvalidProfile(_))));
}

#[test]
fn empty_profile_has_an_empty_table() {
    let p = Profile::new(ProfileKind::Sample);
    let (table, rows) = top(&p, &Query::default());
    assert_eq!(table.grand_total, 0);
    assert!(rows.is_empty());
}

#[test]
fn names_parse() {
    use clrprof_analysis::Format;
    assert_eq!("Wall".parse::<Metric>().unwrap(), Metric::Wall);
    assert_eq!("bytes".parse::<Metric>().unwrap(), Metric::Bytes);
    assert_eq!("objects".parse::<Metric>().unwrap(), Metric::Objects);
    assert!(matches!(
        "heat".parse::<Metric>(),
        Err(Error::UnknownMetric(_))
    ));
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>().unwrap(), f);
    }
    assert!(matches!(
        "svg".parse::<Format>(),
        Err(Error::UnknownFormat(_))
    ));
}

#[test]
fn huge_values_saturate_instead_of_panicking() {
    let p = Profile::from_stacks(&[
        ("t", vec!["A", "B"], u64::MAX, u64::MAX),
        ("t", vec!["A", "C"], u64::MAX, 1),
    ]);
    let (table, rows) = top(&p, &Query::default());
    assert_eq!(table.grand_total, u64::MAX);
    assert_eq!(row(&rows, "A").total_weight, u64::MAX);
    assert_every_format_renders(&p);
}

#[test]
fn deep_recursion_renders_without_overflowing_the_stack() {
    let names: Vec<String> = (0..3000).map(|i| format!("F{}", i % 3)).collect();
    let stack: Vec<&str> = names.iter().map(String::as_str).collect();
    let p = Profile::from_stacks(&[
        ("t", stack.clone(), 5, 5),
        ("t", stack[..10].to_vec(), 1, 1),
    ]);
    let (table, rows) = top(&p, &Query::default());
    assert_eq!(table.grand_total, 6);
    assert_eq!(row(&rows, "F0").total_weight, 6);
    assert_eq!(row(&rows, "F2").self_weight, 5);
    assert_every_format_renders(&p);
}
