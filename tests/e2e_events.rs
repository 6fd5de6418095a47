//! End to end: `clrprof record` on a real CoreCLR records every category of runtime event,
//! and `clrprof report` states exactly what the program did (see tests/programs/Events.cs).

use clrprof_e2e::*;
use serde_json::Value;

fn events_trace() -> (Program, Recording, Value) {
    let program = compile("Events");
    let rec = record(&program, &[], &["--mode", "none", "--events", "all"]);
    rec.output.assert_success();
    let json = rec.report_json();
    (program, rec, json)
}

/// The report names the runtime by its real version (3.1 reports 4.0.30319.0 through the
/// profiling API; the agent reads the version from the runtime's directory).
#[test]
fn the_report_names_the_runtime_by_its_version() {
    let rec = record(&compile("Hello"), &[], &["--mode", "none"]);
    rec.output.assert_success();
    let expected = format!("CoreCLR {}", Dotnet::get().version);
    assert_eq!(rec.report_json()["session"]["runtime"], expected.as_str());
    let text = rec.report(&[]);
    text.assert_success();
    assert!(
        text.stdout_str()
            .lines()
            .any(|l| l.starts_with(&format!("  runtime   {expected}, agent "))),
        "{}",
        text.stdout_str()
    );
}

fn count(json: &Value, kind: &str) -> u64 {
    json["events"][kind].as_u64().unwrap_or(0)
}

#[test]
fn events_program_is_reported_exactly() {
    let (program, rec, json) = events_trace();

    // The program's own output is unchanged by profiling.
    let plain = program.run(&[]);
    plain.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        plain.stdout_str(),
        "profiled output differs"
    );

    // Session: the agent started and shut down normally.
    assert_eq!(
        json["session"]["ended_cleanly"], true,
        "{}",
        json["session"]
    );
    assert_eq!(json["session"]["exit_code"], 0);
    assert_eq!(json["session"]["events_dropped"], 0);

    // Exceptions: 7 ClrprofTestException, thrown by Thrower.Throw, caught in Catcher.CatchIt.
    let ours: Vec<&Value> = json["exceptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "ClrprofTestException")
        .collect();
    assert_eq!(
        ours.len(),
        1,
        "one (type, thrower, catcher) group: {:#?}",
        json["exceptions"]
    );
    assert_eq!(ours[0]["count"], 7);
    assert_eq!(ours[0]["throw_function"], "Thrower.Throw()");
    assert_eq!(ours[0]["catch_function"], "Catcher.CatchIt()");
    // Every step of the exception sequence, per the program's structure.
    assert_eq!(count(&json, "ExceptionThrown"), 7);
    assert_eq!(count(&json, "ExceptionCatcherEnter"), 7);
    assert_eq!(count(&json, "ExceptionCatcherLeave"), 7);
    assert_eq!(
        count(&json, "ExceptionSearchFilterEnter"),
        14,
        "2 `when` filters per throw"
    );
    assert_eq!(count(&json, "ExceptionSearchFilterLeave"), 14);
    assert_eq!(
        count(&json, "ExceptionUnwindFinallyEnter"),
        14,
        "2 finally blocks per throw"
    );
    assert_eq!(count(&json, "ExceptionUnwindFinallyLeave"), 14);
    assert_eq!(count(&json, "ExceptionSearchCatcherFound"), 7);
    // Unwinding passes 8 frames below the catcher (Throw, 2x Level3/2/1, ThrowDeep) and enters
    // the catcher frame itself; leave callbacks come for the 8 frames only.
    assert_eq!(count(&json, "ExceptionUnwindFunctionEnter"), 7 * 9);
    assert_eq!(count(&json, "ExceptionUnwindFunctionLeave"), 7 * 8);

    // Threads: worker-1..3 created and destroyed.
    let threads = json["threads"].as_array().unwrap();
    for name in ["worker-1", "worker-2", "worker-3"] {
        let t = threads
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no thread {name}: {threads:#?}"));
        let created = t["created_ns"].as_u64().expect("created while recording");
        let destroyed = t["destroyed_ns"]
            .as_u64()
            .expect("destroyed while recording");
        assert!(created < destroyed, "{t}");
        assert_eq!(t["lifetime_ns"], destroyed - created);
        assert!(t["tid"].as_u64().unwrap() > 0);
    }

    // GCs: the induced ones, in order, generations 0, 0, 1, 2.
    let induced: Vec<u64> = json["gcs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["reason"] == "induced")
        .map(|g| g["generation"].as_u64().unwrap())
        .collect();
    assert_eq!(induced, vec![0, 0, 1, 2], "{:#?}", json["gcs"]);
    assert_eq!(
        count(&json, "GarbageCollectionStarted"),
        count(&json, "GarbageCollectionFinished")
    );
    // Each GC suspends the runtime for the GC.
    let gc_suspensions = json["suspensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["reason"] == "gc")
        .expect("gc suspensions");
    assert!(
        gc_suspensions["count"].as_u64().unwrap() >= 4,
        "{gc_suspensions}"
    );

    // Modules and classes: the program's module and a known class.
    let modules = json["modules"].as_array().unwrap();
    assert!(
        modules.iter().any(|m| m["name"] == "Events.dll"),
        "{modules:#?}"
    );
    assert!(
        modules
            .iter()
            .any(|m| m["name"] == "System.Private.CoreLib.dll")
    );
    let classes = json["classes"].as_array().unwrap();
    assert!(
        classes.iter().any(|c| c == "Events.KnownClass"),
        "Events.KnownClass not loaded"
    );

    // JIT: the known method, by its readable name.
    let jit = json["jit"].as_array().unwrap();
    let known = jit
        .iter()
        .find(|j| j["method"] == "Events.KnownClass.KnownMethod(int, string)")
        .expect("KnownMethod JIT-compiled");
    assert_eq!(known["module"], "Events.dll");

    // P/Invoke: exactly 5 calls to getpid, each returned.
    let native = json["native"].as_array().unwrap();
    let getpid = native
        .iter()
        .find(|n| n["function"] == "Events.Native.getpid()")
        .unwrap_or_else(|| panic!("getpid calls: {native:#?}"));
    assert_eq!(getpid["target"], "libc!getpid");
    assert_eq!(getpid["direction"], "pinvoke");
    assert_eq!(getpid["calls"], 5, "{getpid}");
    assert_eq!(
        count(&json, "ManagedToUnmanagedTransition"),
        count(&json, "UnmanagedToManagedTransition")
    );

    // Runtime and app domain / assembly events are there too.
    assert_eq!(count(&json, "Initialize"), 1);
    assert_eq!(count(&json, "Shutdown"), 1);
    assert!(count(&json, "AppDomainCreationFinished") >= 1);
    assert!(count(&json, "AssemblyLoadFinished") >= 2);
}

#[test]
fn text_report_summarizes_every_category() {
    let (_, rec, _) = events_trace();
    let out = rec.report(&[]);
    out.assert_success();
    let text = out.stdout_str();
    for section in [
        "Session",
        "Events",
        "Exceptions (7 thrown, 0 rethrown)",
        "Threads",
        "Garbage collections",
        "Runtime suspensions",
        "Modules",
        "JIT",
        "Native calls",
    ] {
        assert!(text.contains(section), "no `{section}` in:\n{text}");
    }
    assert!(text.contains("ClrprofTestException"));
    assert!(text.contains("Catcher.CatchIt()"));
}

#[test]
fn only_the_chosen_categories_are_recorded() {
    let program = compile("Events");
    let rec = record(
        &program,
        &[],
        &["--mode", "none", "--events", "gc,exception"],
    );
    rec.output.assert_success();
    let json = rec.report_json();
    assert_eq!(count(&json, "ExceptionThrown"), 7);
    assert!(count(&json, "GarbageCollectionStarted") >= 4);
    assert_eq!(count(&json, "ClassLoadFinished"), 0);
    assert_eq!(count(&json, "JITCompilationFinished"), 0);
    assert_eq!(count(&json, "ThreadCreated"), 0);
}

/// A plain `record` takes the collections, which a reader of a CPU profile wants beside it
/// (as dotnet-trace's CPU profile does) and which cost little; exceptions, whose callbacks
/// cost tens of microseconds per exception, and threads only when asked; `--events none`
/// takes none.
#[test]
fn a_plain_record_takes_the_collections() {
    let program = compile("Events");
    let plain = record(&program, &[], &[]);
    plain.output.assert_success();
    let json = plain.report_json();
    assert!(
        count(&json, "GarbageCollectionStarted") >= 4,
        "{}",
        json["events"]
    );
    assert_eq!(count(&json, "ThreadCreated"), 0);
    assert_eq!(count(&json, "ExceptionThrown"), 0);
    let text = plain.report(&[]);
    text.assert_success();
    let text = text.stdout_str();
    assert!(text.contains("\nGarbage collections ("), "{text}");

    let none = record(&program, &[], &["--events", "none"]);
    none.output.assert_success();
    let json = none.report_json();
    assert_eq!(json["events"], serde_json::json!({}), "{}", json["events"]);
    let text = none.report(&[]);
    text.assert_success();
    assert!(
        text.stdout_str()
            .contains("\nEvents: none recorded (record --events"),
        "{}",
        text.stdout_str()
    );
}
