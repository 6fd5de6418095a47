//! Heap snapshots name the roots that are static fields (`static Statics.Cache.Entries`) in
//! paths from roots and in top retainers, in text, JSON and HTML, with the retained sizes the
//! snapshot's dominator tree gives. The program, `tests/programs/Statics.cs`, documents what
//! each static holds; `tests/programs/StaticsPlugin.cs` is the second assembly. A generic
//! class's static cannot be named: the runtime gives no address for it.

use clrprof_e2e::{OutputExt, Recording, compile, compile_source, programs_dir, record_unchanged};
use serde_json::Value;

/// A node of the program: header, method table and a `long`.
const NODE: u64 = 24;
/// An array's header on 64-bit: header, method table, length (padded).
const ARRAY: u64 = 24;

/// `Statics PLUGIN.dll` with a snapshot in each collection: the program's one is the induced
/// one, with everything alive.
fn recorded() -> (Recording, String) {
    let program = compile("Statics");
    let source = std::fs::read_to_string(programs_dir().join("StaticsPlugin.cs")).unwrap();
    let plugin = compile_source("StaticsPlugin", &source);
    let plugin = plugin.dll.to_str().unwrap();
    let rec = record_unchanged(
        &program,
        &[plugin],
        &[
            "--mode",
            "none",
            "--events",
            "gc",
            "--heap-snapshot",
            "every-gc",
        ],
    );
    assert_eq!(
        rec.output.stdout_str(),
        "entries=1000 table=500 current=200 items=300 numbers=3000\n"
    );
    let json = rec.report_json();
    let induced: Vec<&Value> = json["gc"]["gcs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["reason"] == "induced")
        .collect();
    assert_eq!(induced.len(), 1, "{:#}", json["gc"]);
    let snapshot = json["heap"]["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["gc"] == induced[0]["index"])
        .unwrap_or_else(|| panic!("no snapshot of the induced GC: {:#}", json["heap"]))["snapshot"]
        .to_string();
    (rec, snapshot)
}

/// The top retainer that is the value of `field`.
fn retainer<'a>(retainers: &'a [Value], field: &str) -> &'a Value {
    retainers
        .iter()
        .find(|r| r["static"] == field)
        .unwrap_or_else(|| panic!("no top retainer is {field}: {retainers:#?}"))
}

/// The top retainer that is the value of `field`, checking that it is a `type_name` whose path
/// from the roots is the static itself, then that value.
#[track_caller]
fn static_value<'a>(retainers: &'a [Value], field: &str, type_name: &str) -> &'a Value {
    let value = retainer(retainers, field);
    assert_eq!(value["type"], type_name);
    assert_eq!(path(value), [format!("root: {field}").as_str(), type_name]);
    value
}

fn path(r: &Value) -> Vec<&str> {
    r["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect()
}

fn shallow(r: &Value) -> u64 {
    r["shallow_bytes"].as_u64().unwrap()
}

#[test]
fn heap_paths_and_top_retainers_name_static_fields() {
    let (rec, snapshot) = recorded();
    let json = rec.report_json_with(&["--snapshot", &snapshot, "--top", "200"]);
    let heap = &json["heap"];
    let retainers = heap["top_retainers"].as_array().unwrap();

    // Each static's value, named by its field, with a path from the static itself, and the
    // bytes it alone keeps alive: its own subtree.
    let dictionary = "System.Collections.Generic.Dictionary<int, Statics.Node>";
    let entries = static_value(retainers, "static Statics.Cache.Entries", dictionary);
    // 1,103 buckets (int) and entries (24 bytes: hash code, next, key, value), 1,000 nodes.
    let buckets = (ARRAY + 1_103 * 4).div_ceil(8) * 8;
    assert_eq!(
        entries["retained_bytes"].as_u64().unwrap(),
        shallow(entries) + buckets + ARRAY + 1_103 * 24 + 1_000 * NODE,
        "{entries:#}"
    );

    let table = static_value(retainers, "static Statics.Cache.Table", "Statics.Node[]");
    assert_eq!(shallow(table), ARRAY + 500 * 8);
    assert_eq!(table["retained_bytes"], ARRAY + 500 * 8 + 500 * NODE);

    let list = "System.Collections.Generic.List<Statics.Node>";
    let current = static_value(retainers, "thread static Statics.Cache.Current", list);
    assert_eq!(
        current["retained_bytes"].as_u64().unwrap(),
        shallow(current) + ARRAY + 200 * 8 + 200 * NODE,
        "{current:#}"
    );

    // The generic class's static is not named (the runtime gives no address for the statics
    // of a generic instantiation): its list is reached through the runtime's array of
    // statics, with the same retained size.
    let items = retainers
        .iter()
        .find(|r| r["type"] == list && r["static"].is_null())
        .unwrap_or_else(|| panic!("no unnamed {list}: {retainers:#?}"));
    assert_eq!(path(items)[1..], ["object[]", list], "{items:#}");
    assert!(path(items)[0].starts_with("root: handle"), "{items:#}");
    assert_eq!(
        items["retained_bytes"].as_u64().unwrap(),
        shallow(items) + ARRAY + 300 * 8 + 300 * NODE,
        "{items:#}"
    );

    let numbers = static_value(retainers, "static Plugin.Store.Numbers", "int[]");
    assert_eq!(numbers["retained_bytes"], ARRAY + 3_000 * 4);

    // What a static holds is reached through it: the dictionary's entries.
    let entry_array = retainers
        .iter()
        .find(|r| {
            r["type"]
                .as_str()
                .is_some_and(|t| t.starts_with(dictionary) && t.ends_with("[]"))
        })
        .unwrap_or_else(|| panic!("no entry array: {retainers:#?}"));
    assert_eq!(entry_array["static"], Value::Null);
    assert_eq!(
        path(entry_array)[..2],
        ["root: static Statics.Cache.Entries", dictionary]
    );
    // The runtime's arrays of statics no longer retain what the named statics hold: none
    // retains as much as the dictionary alone.
    let dictionary_retained = entries["retained_bytes"].as_u64().unwrap();
    for r in retainers {
        if r["type"] == "object[]" {
            assert!(
                r["retained_bytes"].as_u64().unwrap() < dictionary_retained,
                "{r:#}"
            );
        }
    }
    // A null static and a const are no roots.
    for r in retainers {
        let name = r["static"].as_str().unwrap_or("");
        assert!(
            !name.ends_with(".Missing") && !name.ends_with(".Name"),
            "{r:#}"
        );
    }

    // Text: the retainer's line and its path.
    let text = rec.report(&["--heap", "--snapshot", &snapshot, "--top", "200"]);
    text.assert_success();
    let text = text.stdout_str();
    assert!(
        text.contains(&format!(
            "static Statics.Cache.Entries: {dictionary} retains"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "root: static Statics.Cache.Entries -> {dictionary}\n"
        )),
        "{text}"
    );

    // HTML: the page carries the names (its script shows `static` before the type).
    let page = rec.dir.path().join("heap.html");
    rec.report(&[
        "--heap",
        "--snapshot",
        &snapshot,
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ])
    .assert_success();
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("static Statics.Cache.Entries"),
        "no static in the page"
    );
    assert!(page.contains("r.static"), "the page does not show statics");

    // The agent's counters: nothing dropped.
    let counters = &json["counters"];
    assert_eq!(counters["heap_static_fields_dropped"], 0, "{counters:#}");
    assert_eq!(counters["heap_statics_dropped"], 0, "{counters:#}");
    assert!(
        counters["heap_static_fields"].as_u64().unwrap() >= 5,
        "{counters:#}"
    );
    // Registry<__Canon>.Items and Registry<Statics.Node>.Items at least.
    assert!(
        counters["heap_statics_unset"].as_u64().unwrap() >= 2,
        "{counters:#}"
    );
}
