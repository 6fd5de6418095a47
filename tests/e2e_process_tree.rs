//! End to end: `record` follows the .NET processes a program starts (a parent that starts
//! children of itself, a shell script that runs programs), `--no-children`, children run
//! at the same time, a crashing child and a child that outlives its parent.
//! Program: tests/programs/Tree.cs (its header states what each role does and counts).

use std::collections::HashMap;

use clrprof_e2e::*;
use serde_json::Value;

/// The processes of a trace: pid -> (command line, its JSON entry).
fn processes(rec: &Recording) -> Vec<Value> {
    let json = rec.report_json_with(&["--processes"]);
    json["processes"].as_array().expect("processes[]").clone()
}

/// Calls of `name` in the trace-mode JSON report of process `pid`.
fn calls_in(rec: &Recording, pid: u64, name: &str) -> u64 {
    let json = rec.report_json_with(&["--pid", &pid.to_string(), "--metric", "calls"]);
    let functions: HashMap<String, u64> = json["functions"]
        .as_array()
        .expect("functions[]")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["calls"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    *functions
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in process {pid}: {functions:?}"))
}

/// The process whose command line ends with `suffix`.
fn by_command<'a>(ps: &'a [Value], suffix: &str) -> &'a Value {
    let found: Vec<&Value> = ps
        .iter()
        .filter(|p| p["command_line"].as_str().unwrap().ends_with(suffix))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one process ending with {suffix:?} in {ps:#?}"
    );
    found[0]
}

#[test]
fn a_parent_and_its_two_children_are_each_recorded_with_exact_counts() {
    let program = compile("Tree");
    let rec = record(&program, &["parent"], &["--mode", "trace"]);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        "child 5: sum 10\nchild 7: sum 21\nparent: children exited 5 7\n"
    );
    assert_eq!(
        rec.output.stdout_str(),
        program.run(&["parent"]).stdout_str(),
        "profiled output differs"
    );
    let ps = processes(&rec);
    assert_eq!(ps.len(), 3, "{ps:#?}");
    let parent = by_command(&ps, "Tree.dll parent");
    let five = by_command(&ps, "Tree.dll child 5");
    let seven = by_command(&ps, "Tree.dll child 7");
    assert_eq!(parent["exit_code"], 0);
    assert_eq!(five["exit_code"], 5);
    assert_eq!(seven["exit_code"], 7);
    for p in [parent, five, seven] {
        assert_eq!(p["clean"], true, "{p}");
        assert_eq!(p["left_out"], false, "{p}");
    }
    assert_eq!(five["parent_pid"], parent["pid"]);
    assert_eq!(seven["parent_pid"], parent["pid"]);
    let pid = |p: &Value| p["pid"].as_u64().unwrap();
    assert_eq!(calls_in(&rec, pid(parent), "Work.Step(int)"), 3);
    assert_eq!(calls_in(&rec, pid(five), "Work.Step(int)"), 5);
    assert_eq!(calls_in(&rec, pid(seven), "Work.Step(int)"), 7);
    for p in [parent, five, seven] {
        assert_eq!(calls_in(&rec, pid(p), "Tree.Main(string[])"), 1);
    }

    // Merged: a process frame at the root of each process's stacks.
    let folded = rec.report(&["--format", "folded", "--metric", "calls"]);
    folded.assert_success();
    let text = folded.stdout_str();
    let step_calls = |label: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(label))
            .filter(|l| {
                let stack = l.rsplit_once(' ').unwrap().0;
                stack.ends_with(";Work.Step(int) [Tree.dll]")
            })
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let label = |p: &Value| format!("[process {}: ", pid(p));
    assert_eq!(step_calls(&label(parent)), 3, "{text}");
    assert_eq!(step_calls(&label(five)), 5, "{text}");
    assert_eq!(step_calls(&label(seven)), 7, "{text}");

    // Every process in the text and JSON reports.
    let report = rec.report(&[]);
    report.assert_success();
    let out = report.stdout_str();
    assert!(out.starts_with("Processes: 3\n"), "{out}");
    assert_eq!(out.matches("===== [process ").count(), 3, "{out}");
    let json = rec.report_json();
    assert_eq!(json["processes"].as_array().unwrap().len(), 3);

    // One Chrome timeline, each process's events under its own pid.
    let chrome = rec.report(&["--format", "chrome"]);
    chrome.assert_success();
    let timeline: Value = serde_json::from_str(&chrome.stdout_str()).unwrap();
    let events = timeline["traceEvents"].as_array().unwrap();
    for p in [parent, five, seven] {
        let named = events
            .iter()
            .any(|e| e["pid"] == p["pid"] && e["ph"] == "M" && e["name"] == "process_name");
        assert!(named, "no process_name of {} in the timeline", p["pid"]);
        let threads = events
            .iter()
            .filter(|e| e["pid"] == p["pid"] && e["ph"] == "M" && e["name"] == "thread_name")
            .count();
        assert!(threads > 0, "no threads of {}", p["pid"]);
    }
    assert_eq!(
        timeline["otherData"]["processes"].as_array().unwrap().len(),
        3
    );
    // The HTML report shows one process, and says how to pick it.
    let html = rec.report(&["--format", "html"]);
    assert!(!html.status.success());
    assert!(
        html.stderr_str()
            .contains("holds 3 processes; the HTML output shows one: pick it with --pid"),
        "{}",
        html.describe()
    );
    let one = rec.report(&["--format", "html", "--pid", &pid(five).to_string()]);
    one.assert_success();
}

/// With `--contention` and `--alloc ticks`, CoreCLR 3.1's events come through the CLI's
/// EventPipe sessions on the started process's diagnostics socket: its agent holds the
/// program's start until they run; a child's agent, for which the CLI runs none, is told so at
/// once and goes on (it would otherwise wait for them up to 5 s), and says what is missing.
#[test]
fn only_the_started_process_waits_for_the_clis_event_sessions() {
    let program = compile("Tree");
    let rec = record(&program, &["parent"], &["--contention", "--alloc", "ticks"]);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        "child 5: sum 10\nchild 7: sum 21\nparent: children exited 5 7\n"
    );
    let ps = processes(&rec);
    let counters = |p: &Value| {
        let pid = p["pid"].as_u64().unwrap().to_string();
        rec.report_json_with(&["--pid", &pid])["counters"].clone()
    };
    let parent = counters(by_command(&ps, "Tree.dll parent"));
    let children = [
        counters(by_command(&ps, "Tree.dll child 5")),
        counters(by_command(&ps, "Tree.dll child 7")),
    ];
    let stderr = rec.output.stderr_str();
    let missing = "over the diagnostics socket of the process it started only";
    if Dotnet::get().has_in_process_eventpipe() {
        // .NET 5 and later: every agent reads the events itself; nobody waits.
        for c in children.iter().chain([&parent]) {
            assert_eq!(c["cli_event_sessions_awaited"], Value::Null, "{c:#}");
        }
        assert!(!stderr.contains(missing), "{stderr}");
        // The children's agents never read the CLI's news: their connections end as usual.
        assert!(!stderr.contains("failed"), "{stderr}");
        return;
    }
    assert_eq!(parent["cli_event_sessions_awaited"], 2, "{parent:#}");
    assert_eq!(parent["cli_event_sessions_started"], 2, "{parent:#}");
    for c in &children {
        assert_eq!(c["cli_event_sessions_awaited"], 2, "{c:#}");
        assert_eq!(c["cli_event_sessions_started"], 0, "{c:#}");
        let held = c["cli_event_sessions_wait_ns"].as_u64().unwrap();
        assert!(held < 1_000_000_000, "a child was held {held} ns: {c:#}");
    }
    assert_eq!(stderr.matches(missing).count(), 2, "{stderr}");
    assert!(!stderr.contains("failed"), "{stderr}");
}

#[test]
fn no_children_records_only_the_started_process() {
    let program = compile("Tree");
    let rec = record(&program, &["parent"], &["--mode", "trace", "--no-children"]);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        "child 5: sum 10\nchild 7: sum 21\nparent: children exited 5 7\n"
    );
    let ps = processes(&rec);
    assert_eq!(ps.len(), 3, "{ps:#?}");
    let parent = by_command(&ps, "Tree.dll parent");
    assert_eq!(parent["left_out"], false);
    assert_eq!(by_command(&ps, "Tree.dll child 5")["left_out"], true);
    assert_eq!(by_command(&ps, "Tree.dll child 7")["left_out"], true);
    // Only the parent is reported, as a one-process trace.
    let json = rec.report_json_with(&["--metric", "calls"]);
    assert!(json.get("processes").is_none(), "{json}");
    assert_eq!(
        calls_in(&rec, parent["pid"].as_u64().unwrap(), "Work.Step(int)"),
        3
    );
}

#[test]
fn a_name_filter_picks_the_processes() {
    let program = compile("Tree");
    let rec = record(
        &program,
        &["parent"],
        &["--mode", "trace", "--name-filter", "child 7"],
    );
    rec.output.assert_success();
    let ps = processes(&rec);
    let recorded: Vec<&str> = ps
        .iter()
        .filter(|p| p["left_out"] == false)
        .map(|p| p["command_line"].as_str().unwrap())
        .collect();
    assert_eq!(recorded.len(), 1, "{ps:#?}");
    assert!(recorded[0].ends_with("Tree.dll child 7"), "{recorded:?}");
    let seven = by_command(&ps, "Tree.dll child 7");
    assert_eq!(
        calls_in(&rec, seven["pid"].as_u64().unwrap(), "Work.Step(int)"),
        7
    );
}

#[test]
fn children_started_at_the_same_instant_are_recorded_apart() {
    let program = compile("Tree");
    let rec = record(&program, &["parallel"], &["--mode", "trace"]);
    rec.output.assert_success();
    let out = rec.output.stdout_str();
    assert!(out.ends_with("parallel: children exited 5 7\n"), "{out}");
    assert!(
        out.contains("child 5: sum 10\n") && out.contains("child 7: sum 21\n"),
        "{out}"
    );
    let ps = processes(&rec);
    assert_eq!(ps.len(), 3, "{ps:#?}");
    let five = by_command(&ps, "Tree.dll child 5");
    let seven = by_command(&ps, "Tree.dll child 7");
    assert_eq!(five["exit_code"], 5);
    assert_eq!(seven["exit_code"], 7);
    assert_eq!(
        calls_in(&rec, five["pid"].as_u64().unwrap(), "Work.Step(int)"),
        5
    );
    assert_eq!(
        calls_in(&rec, seven["pid"].as_u64().unwrap(), "Work.Step(int)"),
        7
    );
}

#[test]
fn a_script_that_runs_two_programs_is_recorded() {
    let program = compile("Tree");
    let dir = temp_dir();
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\"{dotnet}\" \"{dll}\" child 5\n\"{dotnet}\" \"{dll}\" child 7\necho script done\n",
            dotnet = program.dotnet.muxer.display(),
            dll = program.dll.display()
        ),
    )
    .unwrap();
    let trace = dir.path().join("script.clrprof");
    let mut cmd = std::process::Command::new(clrprof_bin());
    cmd.args(["record", "--mode", "trace", "-o"])
        .arg(&trace)
        .arg("--")
        .arg("bash")
        .arg(&script);
    apply_env(&mut cmd);
    let output = run_command(&mut cmd);
    output.assert_success();
    assert_eq!(
        output.stdout_str(),
        "child 5: sum 10\nchild 7: sum 21\nscript done\n"
    );
    let json = report_json_with(&trace, &["--processes"]);
    let ps = json["processes"].as_array().unwrap().clone();
    assert_eq!(ps.len(), 2, "{ps:#?}");
    let five = by_command(&ps, "Tree.dll child 5");
    let seven = by_command(&ps, "Tree.dll child 7");
    assert_eq!(five["exit_code"], 5);
    assert_eq!(seven["exit_code"], 7);
    let calls = |p: &Value| {
        let j = report_json_with(
            &trace,
            &[
                "--pid",
                &p["pid"].as_u64().unwrap().to_string(),
                "--metric",
                "calls",
            ],
        );
        j["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "Work.Step(int)")
            .map(|f| f["calls"].as_u64().unwrap())
    };
    assert_eq!(calls(five), Some(5));
    assert_eq!(calls(seven), Some(7));
}

#[test]
fn a_crashing_child_loses_nothing_of_the_others() {
    let program = compile("Tree");
    let rec = record(&program, &["crashparent"], &["--mode", "trace"]);
    rec.output.assert_success();
    let out = rec.output.stdout_str();
    assert!(
        out.ends_with("crashparent: crash exited nonzero True, child exited 5\n"),
        "{out}"
    );
    let ps = processes(&rec);
    assert_eq!(ps.len(), 3, "{ps:#?}");
    let crash = by_command(&ps, "Tree.dll crash");
    assert_eq!(crash["clean"], false, "{crash}");
    assert_eq!(crash["exit_code"], Value::Null, "{crash}");
    assert_eq!(
        crash["ended"],
        "ended without an exit status (crashed or killed)"
    );
    let five = by_command(&ps, "Tree.dll child 5");
    assert_eq!(five["exit_code"], 5);
    assert_eq!(
        calls_in(&rec, five["pid"].as_u64().unwrap(), "Work.Step(int)"),
        5
    );
    let parent = by_command(&ps, "Tree.dll crashparent");
    assert_eq!(parent["exit_code"], 0);
}

#[test]
fn a_child_that_outlives_its_parent_is_recorded_to_its_end() {
    let program = compile("Tree");
    let rec = record(&program, &["orphan"], &["--mode", "trace"]);
    rec.output.assert_success();
    assert_eq!(rec.output.stdout_str(), "late: done\n");
    let ps = processes(&rec);
    assert_eq!(ps.len(), 2, "{ps:#?}");
    let late = by_command(&ps, "Tree.dll late");
    assert_eq!(late["exit_code"], 9);
    assert_eq!(late["clean"], true);
    assert_eq!(
        calls_in(&rec, late["pid"].as_u64().unwrap(), "Work.Step(int)"),
        4
    );
    assert_eq!(by_command(&ps, "Tree.dll orphan")["exit_code"], 0);
}
