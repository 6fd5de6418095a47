//! End to end: the runtime views (`report --exceptions|--jit|--loads|--threads|--native|
//! --suspensions`) and the Chrome timeline state exactly what tests/programs/Timeline.cs did.

use std::sync::OnceLock;

use clrprof_e2e::*;
use serde_json::Value;

/// One recording of Timeline.cs with every runtime event and CPU samples, shared by the
/// tests of this file.
fn timeline() -> &'static (Program, Recording) {
    static TRACE: OnceLock<(Program, Recording)> = OnceLock::new();
    TRACE.get_or_init(|| {
        let program = compile("Timeline");
        let rec = record(&program, &[], &["--events", "all"]);
        rec.output.assert_success();
        (program, rec)
    })
}

/// `report --<view> --format json`.
fn view(name: &str) -> Value {
    timeline().1.report_json_with(&[&format!("--{name}")])
}

fn find<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|x| x[key] == value)
        .unwrap_or_else(|| panic!("no {key} = {value} in {list:#}"))
}

/// The strings at `key` of a list of objects, or of a list of strings when `key` is empty.
fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|x| if key.is_empty() { x } else { &x[key] })
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn program_output_is_unchanged() {
    let (program, rec) = timeline();
    let plain = program.run(&[]);
    plain.assert_success();
    assert_eq!(rec.output.stdout_str(), plain.stdout_str());
}

#[test]
fn exceptions_are_followed_from_throw_to_catcher_with_the_rethrow_as_the_same_exception() {
    let json = view("exceptions");
    let groups: Vec<&Value> = json["exceptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["type"] == "TimelineException")
        .collect();
    assert_eq!(groups.len(), 1, "one (type, thrower, catcher): {json:#}");
    let g = groups[0];
    assert_eq!(g["count"], 7, "the rethrow is not a new exception");
    assert_eq!(g["throw_function"], "Thrower.Throw(int)");
    assert_eq!(g["throw_module"], "Timeline.dll");
    assert_eq!(g["catch_function"], "Catcher.CatchIt(int)");
    assert_eq!(g["message"], "failure #1");
    let mut messages = names(&g["messages"], "");
    messages.sort();
    let expected: Vec<String> = (1..=7).map(|i| format!("failure #{i}")).collect();
    assert_eq!(messages, expected);
    assert_eq!(g["rethrows"], 1);
    assert_eq!(
        g["rethrow_functions"],
        serde_json::json!([{ "function": "Catcher.CatchIt(int)", "count": 1 }])
    );
    assert_eq!(g["filters_run"], 7, "the `when` filter, once per exception");
    // Finally blocks run by the unwinding: Middle.Call's for every exception, and the inner
    // one of CatchIt once, when the rethrow leaves it (the others run on the normal path).
    assert_eq!(
        g["finally_blocks"],
        serde_json::json!([
            { "function": "Catcher.CatchIt(int)", "count": 1 },
            { "function": "Middle.Call(int)", "count": 7 },
        ])
    );
    // Throw, Middle.Call and CatchIt for each; CatchIt once more for the rethrow.
    assert_eq!(g["frames_unwound"], 7 * 3 + 1);
    let stack = names(&g["throw_stack"], "");
    assert_eq!(
        stack[..4],
        [
            "Thrower.Throw(int)",
            "Middle.Call(int)",
            "Catcher.CatchIt(int)",
            "Program.Main(string[])"
        ]
    );
    let total = g["throw_to_catch_ns"].as_u64().unwrap();
    let max = g["max_throw_to_catch_ns"].as_u64().unwrap();
    assert!(0 < max && max <= total, "{g}");

    // The runtime reported 8 throws: 7 exceptions and the rethrow.
    let full = timeline().1.report_json();
    assert_eq!(full["events"]["ExceptionThrown"], 8);

    let text = timeline().1.report(&["--exceptions"]);
    text.assert_success();
    let text = text.stdout_str();
    for line in [
        "Exceptions (7 thrown, 1 rethrown)",
        "7 x TimelineException",
        "message   \"failure #1\" (+6 other)",
        "thrown in Thrower.Throw(int)",
        "rethrown  1 x in Catcher.CatchIt(int)",
        "finally   7 x in Middle.Call(int)",
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
}

#[test]
fn every_pinvoke_call_is_counted_and_timed() {
    let json = view("native");
    let abs = find(&json["native"], "target", "libc!abs");
    assert_eq!(abs["function"], "Native.Abs(int)");
    assert_eq!(abs["direction"], "pinvoke");
    assert_eq!(abs["calls"], 1000);
    let total = abs["total_ns"].as_u64().unwrap();
    let max = abs["max_ns"].as_u64().unwrap();
    assert!(0 < max && max <= total, "{abs}");
}

#[test]
fn named_threads_have_their_names_and_lifetimes() {
    let json = view("threads");
    for name in ["timeline-a", "timeline-b"] {
        let t = find(&json["threads"], "name", name);
        assert!(t["tid"].as_u64().unwrap() > 0);
        let created = t["created_ns"].as_u64().unwrap();
        let destroyed = t["destroyed_ns"].as_u64().unwrap();
        assert_eq!(t["lifetime_ns"], destroyed - created);
        // Each sleeps 20 ms in Work.Run.
        assert!(destroyed - created >= 20_000_000, "{t}");
    }
}

/// The threads view names every thread as a reader knows it: the main thread `main`, the
/// runtime's threads by their whole names (not the kernel's 15 bytes, `.NET Tiered Com`),
/// without the runtime's internal thread ids; the full report says its events in one line.
#[test]
fn threads_are_named_whole_and_the_report_opens_without_raw_event_counts() {
    let (_, rec) = timeline();
    let json = view("threads");
    let session = rec.report_json();
    let pid = session["session"]["pid"].as_u64().unwrap();
    let all = json["threads"].as_array().unwrap();
    let first = all
        .iter()
        .find(|t| t["tid"].as_u64() == Some(pid))
        .unwrap_or_else(|| panic!("no thread {pid} in {all:#?}"));
    assert_eq!(first["name"], "main", "{first}");
    for t in all {
        let name = t["name"].as_str().unwrap();
        assert!(
            !(name.len() == 15 && name.starts_with(".NET ")),
            "a name cut by the kernel: {name:?}"
        );
    }
    let out = rec.report(&["--threads"]);
    out.assert_success();
    let text = out.stdout_str();
    assert!(!text.contains("managed id"), "{text}");
    assert!(text.contains(" main\n"), "{text}");

    let out = rec.report(&[]);
    out.assert_success();
    let text = out.stdout_str();
    let events = text.lines().filter(|l| l.starts_with("Events: ")).count();
    assert_eq!(events, 1, "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())
                && l.trim_end().ends_with("  JITCompilationStarted")),
        "{text}"
    );
}

#[test]
fn jit_view_has_il_sizes_and_the_startup_view_lists_the_app() {
    let json = view("jit");
    let known = find(&json["jit"], "method", "Program.KnownMethod(int, string)");
    assert_eq!(known["module"], "Timeline.dll");
    assert_eq!(known["kind"], "jit");
    assert_eq!(known["count"], 1);
    // ldarg.0, ldarg.1, callvirt (opcode + token), add, ret.
    assert_eq!(known["il_bytes"], 1 + 1 + 5 + 1 + 1);
    assert!(known["jit_ns"].as_u64().unwrap() > 0);
    let module = find(&json["jit_modules"], "module", "Timeline.dll");
    assert!(module["methods"].as_u64().unwrap() >= 8, "{module}");

    let startup = &json["startup"];
    assert_eq!(startup["main"], "Program.Main(string[])", "{startup:#}");
    assert_eq!(startup["module"], "Timeline.dll");
    let assemblies = names(&startup["assemblies"], "name");
    assert!(
        assemblies.contains(&"Timeline".to_string()),
        "{assemblies:?}"
    );
    assert!(assemblies.contains(&"System.Private.CoreLib".to_string()));
    // Main's own compilation is part of startup; KnownMethod's is not.
    assert!(startup["methods_compiled"].as_u64().unwrap() >= 1);
    let main_ns = startup["main_ns"].as_u64().unwrap();
    assert!(main_ns > 0);
}

#[test]
fn loads_are_listed_with_their_status() {
    let json = view("loads");
    let app = find(&json["loads"], "name", "Timeline");
    assert_eq!(app["kind"], "assembly");
    assert_eq!(app["status"], 0);
    assert_eq!(app["failed"], false);
    let class = find(&json["loads"], "name", "TimelineException");
    assert_eq!(class["kind"], "class");
}

#[test]
fn suspensions_say_which_were_for_gc() {
    let json = view("suspensions");
    let gc = find(&json["suspensions"], "reason", "gc");
    assert_eq!(gc["for_gc"], true);
    // At least the two induced collections.
    assert!(gc["count"].as_u64().unwrap() >= 2, "{gc}");
    assert!(gc["total_ns"].as_u64().unwrap() > 0);
}

#[test]
fn chrome_timeline_has_threads_gc_pauses_and_runtime_activity() {
    let rec = &timeline().1;
    let out = rec.report(&["--format", "chrome"]);
    out.assert_success();
    let json: Value = serde_json::from_slice(&out.stdout).expect("chrome JSON");
    let events = json["traceEvents"].as_array().unwrap();
    let track = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == name)
            .map(|e| e["tid"].as_u64().unwrap())
    };
    let on = |tid: u64, cat: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["tid"] == tid && e["cat"] == cat)
            .collect()
    };
    let gc = track("GC").expect("a GC track");
    let induced: Vec<_> = on(gc, "gc")
        .into_iter()
        .filter(|e| e["args"]["reason"] == "induced")
        .collect();
    assert_eq!(induced.len(), 2, "two induced GCs");
    for e in &induced {
        assert_eq!(e["ph"], "X");
        assert_eq!(e["name"], "GC gen 2");
        assert!(e["dur"].as_f64().unwrap() > 0.0);
    }
    let suspensions = track("Runtime suspensions").expect("a suspensions track");
    assert!(on(suspensions, "suspension").len() >= 2);

    // Each named thread has a runtime track; the main thread's holds the native calls and
    // the exceptions.
    let threads = view("threads");
    for name in ["timeline-a", "timeline-b"] {
        let tid = find(&threads["threads"], "name", name)["tid"]
            .as_u64()
            .unwrap();
        assert!(
            track(&format!("runtime: {name} ({tid})")).is_some(),
            "no runtime track for {name}"
        );
    }
    let pid = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["cat"] == "native")
        .map(|e| e["pid"].as_u64().unwrap())
        .unwrap();
    let main = track(&format!("runtime: main ({pid})")).expect("the main thread's runtime track");
    let abs = on(main, "native")
        .into_iter()
        .filter(|e| e["name"] == "libc!abs")
        .count();
    assert_eq!(abs, 1000);
    let exceptions = on(main, "exception");
    assert_eq!(exceptions.len(), 7);
    assert!(exceptions.iter().all(|e| e["name"] == "TimelineException"));
    // CPU samples are on the threads' own tracks.
    assert!(events.iter().any(|e| e["cat"] == "sample"));
}

#[test]
fn precompiled_methods_are_listed_unless_transitions_are_recorded() {
    let program = compile("Timeline");
    let rec = record(&program, &[], &["--mode", "none", "--events", "jit"]);
    rec.output.assert_success();
    let out = rec.report(&["--jit", "--format", "json"]);
    out.assert_success();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The framework is precompiled (ReadyToRun); the test program is not.
    let corelib = find(&json["jit_modules"], "module", "System.Private.CoreLib.dll");
    assert!(corelib["precompiled"].as_u64().unwrap() > 0, "{corelib}");
    let precompiled: Vec<&Value> = json["jit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["kind"] == "precompiled")
        .collect();
    assert_eq!(
        precompiled.len() as u64,
        json["jit_modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["precompiled"].as_u64().unwrap())
            .sum::<u64>()
    );
    assert!(
        precompiled
            .iter()
            .all(|j| j["count"] == 0 && j["precompiled"] == true)
    );
    assert!(
        precompiled
            .iter()
            .any(|j| j["il_bytes"].as_u64().unwrap() > 0)
    );
    let known = find(&json["jit"], "method", "Program.KnownMethod(int, string)");
    assert_eq!(known["precompiled"], false);
    assert_eq!(known["il_bytes"], 9);

    // With native transitions recorded the runtime uses no precompiled code at all.
    let all = view("jit");
    assert!(
        all["jit_modules"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["precompiled"] == 0),
        "{:#}",
        all["jit_modules"]
    );
}
