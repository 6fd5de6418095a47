//! Golden-file tests of the text, folded and JSON outputs. `CLRPROF_BLESS=1 cargo test`
//! rewrites the files under `tests/golden/`.

mod common;

use clrprof_analysis::output::{Folded, Json, Render, Text};
use clrprof_analysis::{Metric, Profile, Query};
use common::{check_golden, sample_profile, trace_profile};

fn render(r: &dyn Render, p: &Profile, q: &Query) -> String {
    let mut out = Vec::new();
    r.render(p, q, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn tree_text() -> Text {
    Text {
        tree: true,
        ..Text::default()
    }
}

#[test]
fn text_sample_mode() {
    let out = render(&Text::default(), &sample_profile(), &Query::default());
    check_golden("text-sample.txt", &out);
}

#[test]
fn text_sample_mode_wall_tree() {
    let q = Query {
        metric: Some(Metric::Wall),
        ..Query::default()
    };
    let out = render(&tree_text(), &sample_profile(), &q);
    check_golden("text-sample-wall-tree.txt", &out);
}

#[test]
fn text_sample_mode_filtered_thread_top() {
    let q = Query {
        thread: Some("main".into()),
        filter: Some("Parse".into()),
        top: Some(2),
        ..Query::default()
    };
    let out = render(&tree_text(), &sample_profile(), &q);
    check_golden("text-sample-filtered.txt", &out);
}

#[test]
fn text_trace_mode_tree() {
    let out = render(&tree_text(), &trace_profile(), &Query::default());
    check_golden("text-trace-tree.txt", &out);
}

/// Within a width every line fits: names shortened (method name last), the module column
/// narrowed or left out, a deep tree's indentation stopped at its depth.
#[test]
fn text_trace_mode_tree_in_72_columns() {
    let text = Text {
        width: Some(72),
        ..tree_text()
    };
    let out = render(&text, &trace_profile(), &Query::default());
    for line in out.lines() {
        assert!(line.chars().count() <= 72, "{line:?}\n{out}");
    }
    check_golden("text-trace-tree-72.txt", &out);
}

#[test]
fn text_tree_elides_small_paths() {
    let mut rows = vec![("t", vec!["Main", "Hot"], 1000, 1000)];
    rows.push(("t", vec!["Main", "Tiny"], 1, 1));
    let text = Text {
        tree: true,
        per_thread: true,
        ..Text::default()
    };
    let out = render(&text, &Profile::from_stacks(&rows), &Query::default());
    let tree = &out[out.find("Call tree").unwrap()..];
    assert!(tree.contains(" Hot"), "{out}");
    assert!(!tree.contains(" Tiny"), "{out}");
    assert!(
        tree.contains("(1 call path under 0.50% of the total not shown)"),
        "{out}"
    );
    check_golden("text-elided.txt", &out);
}

#[test]
fn folded_sample_mode() {
    let out = render(&Folded::default(), &sample_profile(), &Query::default());
    check_golden("folded-sample.txt", &out);
}

#[test]
fn folded_per_thread_wall() {
    let q = Query {
        metric: Some(Metric::Wall),
        ..Query::default()
    };
    let out = render(&Folded { per_thread: true }, &sample_profile(), &q);
    check_golden("folded-sample-per-thread-wall.txt", &out);
}

#[test]
fn folded_trace_mode_calls() {
    let q = Query {
        metric: Some(Metric::Calls),
        ..Query::default()
    };
    let out = render(&Folded::default(), &trace_profile(), &q);
    check_golden("folded-trace-calls.txt", &out);
}

#[test]
fn folded_escapes_separators() {
    let p = Profile::from_stacks(&[("t", vec!["a;b", "c\nd"], 3, 3)]);
    let out = render(&Folded::default(), &p, &Query::default());
    assert_eq!(out, "a:b;c d 3\n");
}

#[test]
fn folded_marks_the_module_of_names_found_in_two_modules() {
    // `Lib.Util.Run()` in two assemblies: flame-graph tools would merge two frames of one
    // name, so the folded names carry the module there, and only there.
    let main = "App.dll!App.Program.Main(string[])";
    let p = Profile::from_stacks(&[
        ("main", vec![main, "A.dll!Lib.Util.Run()"], 3, 3),
        ("main", vec![main, "B.dll!Lib.Util.Run()"], 2, 2),
        (
            "main",
            vec![main, "B.dll!Lib.Util.Run()", "App.dll!Lib.Log.Write()"],
            4,
            4,
        ),
        ("main", vec![main, "App.dll!App.Program.Other()"], 1, 1),
    ]);
    let out = render(&Folded::default(), &p, &Query::default());
    check_golden("folded-same-name-two-modules.txt", &out);
}

#[test]
fn json_sample_mode() {
    let q = Query {
        top: Some(5),
        ..Query::default()
    };
    let out = render(&Json::default(), &sample_profile(), &q);
    check_golden("json-sample.json", &out);
}

#[test]
fn json_trace_mode() {
    let out = render(&Json::default(), &trace_profile(), &Query::default());
    check_golden("json-trace.json", &out);
}

#[test]
fn json_has_the_documented_keys() {
    let out = render(&Json::default(), &sample_profile(), &Query::default());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "mode",
        "metric",
        "unit",
        "total",
        "samples",
        "cpu_threads",
        "functions",
        "call_tree",
        "notes",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["mode"], "sample");
    assert_eq!(v["unit"], "ns");
    assert!(v["functions"][0]["calls"].is_null());
    let nodes = v["call_tree"]["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["kind"], "root");
    assert_eq!(nodes[0]["total"], v["total"]);
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(n["id"], i);
        if i > 0 {
            assert!(n["parent"].as_u64().unwrap() < i as u64);
        }
    }

    let out = render(&Json::default(), &trace_profile(), &Query::default());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mode"], "trace");
    assert!(v["functions"][0]["calls"].is_u64());
}
