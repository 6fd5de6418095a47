#![cfg(unix)]
//! End to end: what `clrprof` does when things go wrong, and that it says so clearly.

use std::os::unix::fs::PermissionsExt;

use clrprof_e2e::*;

#[test]
fn a_program_that_is_not_dotnet_is_reported_as_agent_never_started() {
    let dir = temp_dir();
    let trace = dir.path().join("t.clrprof");
    let out = clrprof(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        "/bin/echo",
        "hello",
    ]);
    out.assert_exit_code(125);
    assert_eq!(out.stdout_str(), "hello\n", "the program itself ran");
    let err = out.stderr_str();
    assert!(err.contains("the agent never started"), "{err}");
    assert!(!trace.exists(), "no empty trace is left behind");
}

#[test]
fn an_agent_the_runtime_refuses_is_reported() {
    // A real profiler library, but with another CLSID: the runtime refuses to load it for ours.
    let program = compile("Hello");
    let dir = temp_dir();
    let trace = dir.path().join("t.clrprof");
    let wrong = example_lib("jit-counter");
    let out = clrprof(&[
        "record",
        "--agent",
        wrong.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
        "--",
        program.dotnet.muxer.to_str().unwrap(),
        program.dll.to_str().unwrap(),
    ]);
    out.assert_exit_code(125);
    out.assert_stderr_contains("the agent never started");
    assert_eq!(
        out.stdout_str(),
        program.run(&[]).stdout_str(),
        "the program ran unprofiled"
    );
}

#[test]
fn a_runtime_told_to_load_no_profiler_is_named() {
    // .NET 8 loads no profiler with `DOTNET_EnableDiagnostics=0` (CoreCLR 3.1 ignores that
    // spelling): clrprof says so, and how to close only the diagnostics socket.
    let program = compile("Hello");
    let rec = record_with_env(
        &program,
        &[],
        &["--mode", "none"],
        &[("DOTNET_EnableDiagnostics", "0")],
    );
    let err = rec.output.stderr_str();
    if Dotnet::get().loads_profilers_with_dotnet_enable_diagnostics_0() {
        rec.output.assert_success();
        assert!(!err.contains("EnableDiagnostics"), "{err}");
        return;
    }
    rec.output.assert_exit_code(125);
    assert!(err.contains("the agent never started"), "{err}");
    // The cause first, and not a question whether the program is .NET at all.
    assert!(
        err.contains(
            "diagnostics are disabled for the program (DOTNET_EnableDiagnostics=0 in its \
             environment)"
        ),
        "{err}"
    );
    assert!(
        !err.contains("a .NET (Core 3.1 or later) program?"),
        "{err}"
    );
    assert!(
        err.contains(
            "EnableDiagnostics=0 is set: .NET 8 then loads no profiler \
             (DOTNET_EnableDiagnostics_IPC=0 closes only the diagnostics socket)."
        ),
        "{err}"
    );
}

#[test]
fn a_missing_agent_is_an_error() {
    let out = clrprof(&[
        "record",
        "--agent",
        "/nonexistent/libclrprof_agent.so",
        "--",
        "/bin/true",
    ]);
    assert_eq!(out.status.code(), Some(1));
    out.assert_stderr_contains("does not exist");
    assert!(!out.stderr_str().contains("panicked"));
}

#[test]
fn an_agent_writable_by_others_is_refused() {
    let dir = temp_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join("libclrprof_agent.so");
    std::fs::copy(agent_lib(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = clrprof(&[
        "record",
        "--agent",
        copy.to_str().unwrap(),
        "--",
        "/bin/true",
    ]);
    out.assert_exit_code(1);
    out.assert_stderr_contains("writable by other users");
}

#[test]
fn exit_codes_pass_through() {
    let program = compile("Crash");
    let rec = record(
        &program,
        &["exit", "3"],
        &["--mode", "none", "--events", "exception"],
    );
    rec.output.assert_exit_code(3);
    assert_eq!(rec.output.stdout_str(), "crash: caught 3\n");
    let json = rec.report_json();
    assert_eq!(json["session"]["exit_code"], 3);
    assert_eq!(json["session"]["ended_cleanly"], true);
}

#[test]
fn a_crashed_program_leaves_a_readable_trace() {
    let program = compile("Crash");
    let rec = record(&program, &[], &["--events", "exception"]);
    // FailFast aborts: clrprof exits like a shell would, 128 + SIGABRT.
    rec.output.assert_exit_code(134);
    rec.output
        .assert_stderr_contains("ended without shutting the profiler down");
    let json = rec.report_json();
    assert_eq!(json["session"]["ended_cleanly"], false);
    assert_eq!(
        json["events"]["ExceptionThrown"], 3,
        "events before the crash are all there"
    );
    let text = rec.report(&[]);
    text.assert_success();
    assert!(
        text.stdout_str().contains("WITHOUT profiler shutdown"),
        "{}",
        text.stdout_str()
    );
}

#[test]
fn report_rejects_foreign_files_clearly_and_reads_cut_ones() {
    let program = compile("Hello");
    let rec = record(&program, &[], &["--mode", "none", "--events", "all"]);
    rec.output.assert_success();
    let bytes = std::fs::read(&rec.trace).unwrap();

    // A cut trace is read up to the cut, and says so (tests/e2e_reliability.rs has the
    // exact figures).
    let dir = temp_dir();
    let truncated = dir.path().join("truncated.clrprof");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = report(&truncated, &[]);
    out.assert_success();
    let text = out.stdout_str();
    assert!(
        text.contains("WARNING   the trace is cut short (truncated trace: "),
        "{text}"
    );
    assert!(!out.stderr_str().contains("panicked"), "{}", out.describe());

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some text\n").unwrap();
    let out = report(&text, &[]);
    assert_eq!(out.status.code(), Some(1));
    out.assert_stderr_contains("not a clrprof trace");

    let missing = dir.path().join("missing.clrprof");
    let out = report(&missing, &[]);
    assert_eq!(out.status.code(), Some(1));
    out.assert_stderr_contains("cannot open");

    let mut future = bytes.clone();
    future[8] = 9; // major version 9
    let newer = dir.path().join("newer.clrprof");
    std::fs::write(&newer, &future).unwrap();
    let out = report(&newer, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr_str().contains("newer"), "{}", out.describe());
}

#[test]
fn a_misspelled_option_before_the_program_is_refused_and_nothing_runs() {
    let dir = temp_dir();
    let trace = dir.path().join("t.clrprof");
    let ran = dir.path().join("ran");
    let o = trace.to_str().unwrap();
    let program = ["/bin/sh", "-c", "touch \"$0\"", ran.to_str().unwrap()];
    let with = |before: &[&str]| -> Vec<String> {
        before
            .iter()
            .chain(["--"].iter())
            .chain(program.iter())
            .map(|a| a.to_string())
            .collect()
    };
    for (args, similar) in [
        (with(&["record", "--allocs", "-o", o]), Some("--alloc")),
        (
            with(&["record", "-o", o, "--contentoin"]),
            Some("--contention"),
        ),
        (with(&["coverage", "--formatt", "json"]), Some("--format")),
        (
            vec!["attach".into(), "4194305".into(), "--allocs".into()],
            Some("--alloc"),
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = clrprof(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.describe());
        let err = out.stderr_str();
        let wrong = args
            .iter()
            .find(|a| a.starts_with("--") && a.len() > 2)
            .unwrap();
        assert!(
            err.contains(&format!("unexpected argument '{wrong}' found")),
            "{args:?}: {err}"
        );
        if let Some(similar) = similar {
            assert!(
                err.contains(&format!("a similar argument exists: '{similar}'")),
                "{args:?}: {err}"
            );
        }
        assert!(!err.contains("cannot start"), "{args:?}: {err}");
        assert!(!ran.exists(), "{args:?}: the program was started");
        assert!(!trace.exists(), "{args:?}");
    }
    // The program's own options, with or without `--`, are the program's.
    for args in [
        &["record", "-o", o, "--", "/bin/echo", "--alloc", "-o", "x"][..],
        &["record", "-o", o, "/bin/echo", "--alloc", "-o", "x"],
    ] {
        let out = clrprof(args);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", out.describe());
        assert_eq!(out.stdout_str(), "--alloc -o x\n", "{args:?}");
        assert!(
            out.stderr_str().contains("the agent never started"),
            "{args:?}"
        );
    }
}

/// No line of an error repeats another (`error: X` then `because: X`).
#[track_caller]
fn assert_said_once(stderr: &str) {
    let said: Vec<&str> = stderr
        .lines()
        .map(|l| {
            l.trim_start_matches("clrprof:")
                .trim()
                .trim_start_matches("error:")
                .trim_start_matches("because:")
                .trim()
        })
        .filter(|l| !l.is_empty())
        .collect();
    for (i, a) in said.iter().enumerate() {
        for (j, b) in said.iter().enumerate() {
            assert!(i == j || !a.contains(b), "said twice:\n{stderr}");
        }
    }
}

/// Errors are said once, before any output, with a hint where one helps; a program that
/// fails before a runtime loads the agent ends `record` with its own status.
#[test]
fn errors_are_said_once_before_any_output_with_the_program_s_own_status() {
    let program = compile("Hello");
    let rec = record(&program, &[], &[]);
    rec.output.assert_success();
    let dir = temp_dir();

    // A directory as the trace.
    let out = report(dir.path(), &[]);
    out.assert_exit_code(1);
    assert_said_once(&out.stderr_str());

    // A metric the trace does not have: refused before the session block.
    let out = rec.report(&["--metric", "calls"]);
    out.assert_exit_code(1);
    assert!(out.stdout.is_empty(), "{}", out.describe());
    assert!(out.stderr_str().contains("calls"), "{}", out.describe());
    let out = rec.report(&["--thread", "no-such-thread"]);
    out.assert_exit_code(1);
    assert!(out.stdout.is_empty(), "{}", out.describe());

    // `svg` names the flame graph.
    let svg = dir.path().join("f.svg");
    let out = rec.report(&["--format", "svg", "-o", svg.to_str().unwrap()]);
    out.assert_success();
    assert!(
        std::fs::read_to_string(&svg).unwrap().contains("<svg"),
        "{}",
        out.describe()
    );

    // A program the .NET host cannot run: its message, its status, and no hint about the agent.
    let not_assembly = dir.path().join("fake.dll");
    std::fs::copy("/bin/true", &not_assembly).unwrap();
    let missing = dir.path().join("Nope.dll");
    for dll in [&missing, &not_assembly] {
        let muxer = program.dotnet.muxer.to_str().unwrap();
        let own = run_command(std::process::Command::new(muxer).arg(dll));
        let own_code = own.status.code().expect("dotnet exits");
        assert_ne!(own_code, 0, "{}", own.describe());
        let trace = dir.path().join("t.clrprof");
        let out = clrprof(&[
            "record",
            "-o",
            trace.to_str().unwrap(),
            "--",
            muxer,
            dll.to_str().unwrap(),
        ]);
        out.assert_exit_code(own_code);
        let err = out.stderr_str();
        assert!(
            err.contains("nothing was recorded") && err.contains(&format!("exit {own_code}")),
            "{err}"
        );
        assert!(!err.contains("built for this platform"), "{err}");
        assert!(!trace.exists());
    }

    // `coverage -o DIR` is refused before the program runs.
    let started = std::time::Instant::now();
    let out = clrprof(&[
        "coverage",
        "-o",
        dir.path().to_str().unwrap(),
        "--",
        program.dotnet.muxer.to_str().unwrap(),
        program.dll.to_str().unwrap(),
    ]);
    out.assert_exit_code(1);
    assert!(
        out.stdout.is_empty(),
        "the program did not run: {}",
        out.describe()
    );
    assert!(
        out.stderr_str()
            .contains("is a directory; -o takes a file name"),
        "{}",
        out.describe()
    );
    eprintln!("coverage -o DIR refused in {:?}", started.elapsed());
}
