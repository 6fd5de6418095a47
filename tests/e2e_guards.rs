#![cfg(unix)]
//! End to end: what clrprof refuses before it starts, and what it says when the cause is not
//! clrprof's. An output that is one of the command's inputs, a second recording of the same
//! file, coverage of a program that never shut its runtime down, a closed standard error, and
//! each message that names the real cause (diagnostics disabled, a process already profiled,
//! a directory or a Windows executable as the program, argument limits, a trace still being
//! written, a header-only trace, a runtime that cannot start under a memory limit).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clrprof_e2e::*;

/// A copy of test program `name` (its `.dll` and runtime config) in `dir`, so that a test may
/// aim an output at it without risking the shared build.
fn copy_program(name: &str, dir: &Path) -> PathBuf {
    let program = compile(name);
    let dll = dir.join(format!("{name}.dll"));
    std::fs::copy(&program.dll, &dll).unwrap();
    let config = format!("{name}.runtimeconfig.json");
    std::fs::copy(program.dll.with_file_name(&config), dir.join(&config)).unwrap();
    dll
}

fn run(args: &[&str]) -> std::process::Output {
    clrprof(args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_runs() {
    let dir = temp_dir();
    let dll = copy_program("Hello", dir.path());
    let original = std::fs::read(&dll).unwrap();
    let dotnet = Dotnet::get().muxer.clone();
    let out_dir = temp_dir();
    let trace = out_dir.path().join("t.clrprof");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["record", "-o", s(&dll), "--", s(&dotnet), s(&dll)],
            format!("-o {} is an argument of the program, {}", s(&dll), s(&dll)),
        ),
        (
            vec!["record", "-o", s(&dll), "--", s(&dll)],
            format!("-o {} is the program, {}", s(&dll), s(&dll)),
        ),
        (
            vec!["coverage", "-o", s(&dll), "--", s(&dll)],
            format!("-o {} is the program, {}", s(&dll), s(&dll)),
        ),
        (
            vec!["coverage", "--trace", s(&dll), "--", s(&dotnet), s(&dll)],
            format!("--trace {} is an argument of the program", s(&dll)),
        ),
    ];
    for (args, says) in &cases {
        let r = run(args);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {}", r.describe());
        assert!(
            r.stderr_str().contains(says.as_str()),
            "{args:?}: {}",
            r.describe()
        );
        assert_eq!(r.stdout_str(), "", "{args:?}: the program never ran");
    }
    assert_eq!(
        std::fs::read(&dll).unwrap(),
        original,
        "the program is untouched"
    );
    assert_eq!(
        files_in(dir.path()),
        ["Hello.dll", "Hello.runtimeconfig.json"]
    );

    // Two outputs of one command, under two spellings of one name.
    let c = out_dir.path().join("c.txt");
    let also_c = out_dir.path().join(".").join("c.txt");
    let r = run(&[
        "coverage",
        "-o",
        s(&c),
        "--trace",
        s(&also_c),
        "--",
        s(&dll),
    ]);
    r.assert_exit_code(1);
    r.assert_stderr_contains("-o and --trace are the same file");
    assert!(!c.exists());

    // A report over the trace it reads, under its own name or through a link.
    let r = run(&[
        "record",
        "--mode",
        "none",
        "-o",
        s(&trace),
        "--",
        s(&dotnet),
        s(&dll),
    ]);
    r.assert_success();
    let recorded = std::fs::read(&trace).unwrap();
    let link = out_dir.path().join("link.clrprof");
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    for o in [
        trace.clone(),
        out_dir.path().join(".").join("t.clrprof"),
        link,
    ] {
        let r = run(&["report", s(&trace), "-o", s(&o)]);
        r.assert_exit_code(1);
        r.assert_stderr_contains(&format!("-o {} is the trace read, {}", s(&o), s(&trace)));
    }
    assert_eq!(std::fs::read(&trace).unwrap(), recorded);
    assert_eq!(files_in(out_dir.path()), ["link.clrprof", "t.clrprof"]);
}

/// `clrprof record` or `clrprof coverage` of `Attachee` (stdin and stdout piped), and its
/// output lines.
struct UnderClrprof {
    guard: ChildGuard,
    stdout: BufReader<std::process::ChildStdout>,
}

impl UnderClrprof {
    /// `clrprof record <clrprof_args> -o <trace>` of `Attachee`, once it is ready.
    fn record(trace: &Path, clrprof_args: &[&str]) -> UnderClrprof {
        Self::ready(record_command(
            &compile("Attachee"),
            &[],
            clrprof_args,
            trace,
        ))
    }

    /// `clrprof coverage <clrprof_args> -o <output>` of `Attachee`, once it is ready.
    fn coverage(output: &Path, clrprof_args: &[&str]) -> UnderClrprof {
        Self::ready(coverage_command(
            &compile("Attachee"),
            &[],
            clrprof_args,
            output,
        ))
    }

    /// Starts `cmd` and waits until the program says it is ready.
    fn ready(mut cmd: Command) -> UnderClrprof {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(&mut cmd);
        let stdout = BufReader::new(guard.child_mut().stdout.take().unwrap());
        let mut me = UnderClrprof { guard, stdout };
        assert_eq!(me.send(None), "ready");
        me
    }

    /// Sends a command (if any) and returns the next line the program prints.
    fn send(&mut self, command: Option<&str>) -> String {
        if let Some(command) = command {
            let stdin = self.guard.child_mut().stdin.as_mut().unwrap();
            writeln!(stdin, "{command}").unwrap();
            stdin.flush().unwrap();
        }
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }

    /// The pid of the program clrprof started.
    fn program_pid(&self) -> u32 {
        first_child(self.guard.id())
    }
}

#[test]
fn a_second_recording_of_the_same_file_is_refused_and_a_trace_being_written_says_so() {
    let dir = temp_dir();
    let trace = dir.path().join("same.clrprof");
    let mut first = UnderClrprof::record(&trace, &["--mode", "none", "--events", "exception"]);
    assert_eq!(first.send(Some("round 3")), "rounds 3: total 3, caught 3");

    let hello = compile("Hello");
    let second = {
        let mut cmd = record_command(&hello, &[], &["--mode", "none"], &trace);
        run_command(&mut cmd)
    };
    second.assert_exit_code(1);
    let partial = dir.path().join("same.clrprof.partial");
    second.assert_stderr_contains(&format!(
        "another clrprof is recording into {} right now (it is writing {})",
        s(&trace),
        s(&partial)
    ));
    assert_eq!(second.stdout_str(), "", "the second program never ran");
    assert_eq!(files_in(dir.path()), ["same.clrprof.partial"]);

    // Read while it is written: the report says so, not that the program crashed.
    std::thread::sleep(std::time::Duration::from_millis(600));
    let live = report(&partial, &[]);
    live.assert_success();
    let text = live.stdout_str();
    assert!(
        text.contains("still being recorded (the program has not ended yet)"),
        "{text}"
    );
    assert!(
        text.contains(
            "WARNING   the trace is still being written (a clrprof recording is running)"
        ),
        "{text}"
    );
    assert!(!text.contains("WITHOUT profiler shutdown"), "{text}");
    assert!(!text.contains("did not finish"), "{text}");

    assert_eq!(first.send(Some("exit")), "bye: total 3, caught 3");
    let out = first.guard.wait_with_output(default_timeout());
    out.assert_exit_code(0);
    assert_eq!(files_in(dir.path()), ["same.clrprof"]);
    let json = report_json(&trace);
    assert_eq!(json["events"]["ExceptionThrown"], 3);
    assert_eq!(json["session"]["integrity_notes"], serde_json::json!([]));
}

#[test]
fn coverage_of_a_program_that_never_shut_down_keeps_the_file_it_would_replace() {
    let dir = temp_dir();
    let good = dir.path().join("coverage.txt");
    let hello = compile("Hello");
    let r = run(&[
        "coverage",
        "-o",
        s(&good),
        "--",
        s(&hello.dotnet.muxer),
        s(&hello.dll),
    ]);
    r.assert_success();
    let kept = std::fs::read(&good).unwrap();
    assert!(!kept.is_empty());

    // FailFast: the runtime never shuts down, the agent never writes its counts.
    let crash = compile("Crash");
    let alone = crash.run(&[]);
    let code = {
        use std::os::unix::process::ExitStatusExt;
        128 + alone.status.signal().expect("Crash dies of a signal")
    };
    let raw = dir.path().join("raw.clrprof");
    let r = run(&[
        "coverage",
        "-o",
        s(&good),
        "--trace",
        s(&raw),
        "--",
        s(&crash.dotnet.muxer),
        s(&crash.dll),
    ]);
    r.assert_exit_code(code);
    let err = r.stderr_str();
    let end = clrprof_analysis::ending::program_end(-1, code - 128);
    assert!(
        err.contains(&format!(
            "clrprof: error: the program did not shut the runtime down ({end}), so the agent \
             never wrote its block counts: there is no coverage to report"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "the trace, with what was recorded, is {}; {} was not replaced",
            s(&raw),
            s(&good)
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&good).unwrap(), kept);
    assert_eq!(report_json(&raw)["session"]["program_end"], end.as_str());

    // The program killed from outside (the OOM killer, `kill -9`): the same.
    let mut covered = UnderClrprof::coverage(&good, &[]);
    send_signal("-KILL", covered.program_pid());
    let out = covered.guard.wait_with_output(default_timeout());
    out.assert_exit_code(128 + 9);
    out.assert_stderr_contains(
        "the program did not shut the runtime down (killed by signal 9 (SIGKILL))",
    );
    assert!(
        out.stderr_str()
            .contains(&format!("nothing was kept; {} was not replaced", s(&good))),
        "{}",
        out.describe()
    );
    assert_eq!(std::fs::read(&good).unwrap(), kept);
    assert_eq!(files_in(dir.path()), ["coverage.txt", "raw.clrprof"]);

    // Interrupted (SIGTERM to clrprof): the program gets it, its runtime shuts down, and the
    // coverage is the real one, with exactly the rounds it ran.
    let alone = {
        use std::os::unix::process::ExitStatusExt;
        let (mut guard, _stdin) = attachee_with(&[], dir.path());
        send_signal("-TERM", guard.id());
        let st = guard.wait_with_output(default_timeout()).status;
        st.code().unwrap_or_else(|| 128 + st.signal().unwrap())
    };
    let mut covered = UnderClrprof::coverage(&good, &["--format", "json"]);
    assert_eq!(covered.send(Some("round 2")), "rounds 2: total 2, caught 2");
    send_signal("-TERM", covered.guard.id());
    let out = covered.guard.wait_with_output(default_timeout());
    out.assert_exit_code(alone);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    let throw = json["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type_name"] == "Attachee" && m["method_name"] == "Throw")
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(throw["blocks"][0]["hits"], 2, "{throw:#}");
}

/// A pipe whose reading end is already closed: a standard error nobody reads (`2>&1 | head
/// -c 1` after the first byte).
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[test]
fn a_closed_stderr_never_makes_clrprof_panic_and_the_exit_code_survives() {
    let dir = temp_dir();
    let crash = compile("Crash");
    let trace = dir.path().join("t.clrprof");
    let expected = crash.run(&["exit", "3"]);
    assert_eq!(expected.status.code(), Some(3));

    // record, coverage: the program's own code.
    for sub in ["record", "coverage"] {
        let mut cmd = Command::new(clrprof_bin());
        cmd.args([sub, "-o", s(&trace), "--"])
            .arg(&crash.dotnet.muxer)
            .arg(&crash.dll)
            .args(["exit", "3"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(closed_pipe());
        apply_env(&mut cmd);
        let out = ChildGuard::spawn(&mut cmd).wait_with_output(default_timeout());
        assert_eq!(out.status.code(), Some(3), "{sub}: {}", out.describe());
        assert!(
            out.stdout_str().starts_with(&expected.stdout_str()),
            "{sub}"
        );
    }
    // The coverage run wrote its coverage over the trace's name: record once more.
    let mut cmd = Command::new(clrprof_bin());
    cmd.args(["record", "--events", "exception", "-o", s(&trace), "--"])
        .arg(&crash.dotnet.muxer)
        .arg(&crash.dll)
        .args(["exit", "3"])
        .stderr(closed_pipe());
    apply_env(&mut cmd);
    let out = run_command_keeping_stderr(&mut cmd);
    out.assert_exit_code(3);
    assert_eq!(report_json(&trace)["events"]["ExceptionThrown"], 3);

    // report: warnings go to the closed stderr, the report to stdout as always.
    let cut = dir.path().join("cut.clrprof");
    let bytes = std::fs::read(&trace).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let open = report(&cut, &["--format", "json"]);
    open.assert_success();
    assert!(open.stderr_str().contains("warning"), "{}", open.describe());
    let mut cmd = Command::new(clrprof_bin());
    cmd.arg("report")
        .arg(&cut)
        .args(["--format", "json"])
        .stderr(closed_pipe());
    let out = run_command_keeping_stderr(&mut cmd);
    out.assert_exit_code(0);
    assert_eq!(out.stdout, open.stdout);
    // An error to a closed stderr: exit 1, no panic (101).
    let mut cmd = Command::new(clrprof_bin());
    cmd.args(["report", "/nonexistent.clrprof"])
        .stderr(closed_pipe());
    let out = run_command_keeping_stderr(&mut cmd);
    out.assert_exit_code(1);
}

/// Runs `cmd` with the stderr it was given (stdin null, stdout captured).
fn run_command_keeping_stderr(cmd: &mut Command) -> std::process::Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    ChildGuard::spawn(cmd).wait_with_output(default_timeout())
}

#[test]
fn a_directory_or_a_windows_executable_as_the_program_is_named_as_such() {
    let dir = temp_dir();
    let dll = copy_program("Hello", dir.path());
    let r = run(&["record", "--", s(dir.path())]);
    r.assert_exit_code(1);
    r.assert_stderr_contains(&format!(
        "cannot start {}: it is a directory, not a program",
        s(dir.path())
    ));
    // A Windows executable: the PE header's first bytes, executable, with the app beside it.
    let exe = dir.path().join("Hello.exe");
    std::fs::write(
        &exe,
        b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dir.path().join("t.clrprof");
    let r = run(&["record", "-o", s(&out), "--", s(&exe)]);
    r.assert_exit_code(1);
    assert!(
        r.stderr_str().contains(&format!(
            "cannot start {}: it is a Windows executable (Exec format error); run the .NET app \
             beside it with dotnet: `clrprof record -- {}`",
            s(&exe),
            s(&dll)
        )),
        "{}",
        r.describe()
    );
    assert_eq!(
        files_in(dir.path()),
        ["Hello.dll", "Hello.exe", "Hello.runtimeconfig.json"]
    );
}

#[test]
fn argument_limits_are_checked_by_the_cli_with_the_real_bound() {
    let dir = temp_dir();
    let out = dir.path().join("t.clrprof");
    let r = run(&[
        "record",
        "--mode",
        "trace",
        "--max-nodes",
        "0",
        "-o",
        s(&out),
        "--",
        "/bin/true",
    ]);
    r.assert_exit_code(2);
    r.assert_stderr_contains("the call tree needs at least 1 node");
    let r = run(&["attach", "4194305", "--duration", "1e30"]);
    r.assert_exit_code(2);
    r.assert_stderr_contains(&format!(
        "the longest duration is {} s",
        std::time::Duration::MAX.as_secs()
    ));
    // Within the bound: accepted, and the attach fails for its own reason.
    let r = run(&["attach", "4194305", "--duration", "99999999999"]);
    r.assert_exit_code(1);
    r.assert_stderr_contains("there is no process 4194305");
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn a_header_only_trace_says_nothing_was_recorded_and_invents_nothing() {
    let hello = compile("Hello");
    let rec = record(&hello, &[], &["--mode", "none"]);
    rec.output.assert_success();
    let bytes = std::fs::read(&rec.trace).unwrap();
    let header_only = rec.dir.path().join("header.clrprof");
    std::fs::write(&header_only, &bytes[..clrprof_trace::HEADER_LEN]).unwrap();
    let why = "the recording did not finish, and the trace holds only its header: the \
               recording stopped before the agent sent anything (clrprof was stopped before the \
               program's runtime started, or the runtime never started): there is no figure to \
               show";
    let text = report(&header_only, &[]);
    text.assert_success();
    assert_eq!(
        text.stdout_str(),
        format!("Session\n  recorded  nothing was recorded\n  WARNING   {why}\n"),
        "no program, pid, mode or exit code that the trace does not hold"
    );
    let json = report_json(&header_only);
    assert_eq!(json["session"]["integrity"]["header_only"], true);
    assert_eq!(json["session"]["integrity_notes"], serde_json::json!([why]));
    assert_eq!(json["session"]["program_end"], serde_json::Value::Null);
    assert_eq!(json["session"]["exit_code"], serde_json::Value::Null);
    assert_eq!(json["session"]["records"], 0);
}

#[test]
fn a_runtime_that_cannot_start_under_a_memory_limit_is_named() {
    let hello = compile("Hello");
    let dir = temp_dir();
    let out = dir.path().join("t.clrprof");
    std::fs::write(&out, b"yesterday").unwrap();
    // A limit the runtime cannot start under, alone, on this runtime.
    let limit = "1000000";
    let shell = |command: &str| {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -v {limit} && exec {command}"))
            .env("DOTNET", &hello.dotnet.muxer)
            .env("DLL", &hello.dll)
            .env("CLRPROF", clrprof_bin())
            .env("OUT", &out);
        apply_env(&mut cmd);
        run_command(&mut cmd)
    };
    let alone = shell("\"$DOTNET\" \"$DLL\"");
    let code = alone.status.code().expect("the host exits");
    assert_ne!(
        code,
        0,
        "the runtime starts under {limit} KiB: {}",
        alone.describe()
    );
    alone.assert_stderr_contains("Failed to create CoreCLR");
    let r = shell("\"$CLRPROF\" record -o \"$OUT\" -- \"$DOTNET\" \"$DLL\"");
    r.assert_exit_code(code);
    let err = r.stderr_str();
    assert!(
        err.contains(&format!(
            "clrprof: error: the .NET runtime could not start (exit {code}, the status the .NET \
             host gives when it cannot create the runtime"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("the address space is limited (ulimit -v {limit})")),
        "{err}"
    );
    assert!(!err.contains("wrote"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"yesterday");
    assert_eq!(files_in(dir.path()), ["t.clrprof"]);
}

/// Starts a copy of `Attachee` with `env`, waits for `ready`.
fn attachee_with(env: &[(&str, &str)], dir: &Path) -> (ChildGuard, std::process::ChildStdin) {
    let dll = copy_program("Attachee", dir);
    let mut cmd = Command::new(&Dotnet::get().muxer);
    cmd.arg(&dll);
    apply_env(&mut cmd);
    cmd.envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut guard = ChildGuard::spawn(&mut cmd);
    let stdin = guard.child_mut().stdin.take().unwrap();
    let mut stdout = BufReader::new(guard.child_mut().stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    (guard, stdin)
}

/// `clrprof ps`'s line for `pid`.
fn ps_line(pid: u32) -> String {
    let out = run(&["ps"]);
    out.assert_success();
    out.stdout_str()
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()))
        .unwrap_or_else(|| panic!("pid {pid} not listed:\n{}", out.describe()))
        .to_string()
}

#[test]
fn ps_and_attach_agree_on_a_process_with_diagnostics_disabled() {
    let mut disabled = 0;
    for var in ["DOTNET_EnableDiagnostics", "COMPlus_EnableDiagnostics"] {
        let dir = temp_dir();
        let (guard, _stdin) = attachee_with(&[(var, "0")], dir.path());
        let pid = guard.id();
        let has_socket = clrprof_ipc::discovery::socket_path(pid).is_ok();
        let line = ps_line(pid);
        let out = dir.path().join("t.clrprof");
        let r = run(&["attach", &pid.to_string(), "--duration", "1", "-o", s(&out)]);
        if has_socket {
            // This runtime ignores that spelling: attachable like any other.
            assert!(!line.contains("cannot attach"), "{var}: {line}");
            assert_eq!(r.status.code(), Some(0), "{var}: {}", r.describe());
            continue;
        }
        disabled += 1;
        let why = format!(
            "diagnostics are disabled in that process ({var}=0 in its environment): the runtime \
             opened no diagnostics socket, so no profiler can attach"
        );
        assert!(
            line.contains(&format!("[cannot attach: {why}")),
            "{var}: {line}"
        );
        assert_eq!(r.status.code(), Some(1), "{var}: {}", r.describe());
        assert!(
            r.stderr_str()
                .contains(&format!("cannot attach to process {pid}: {why}")),
            "{var}: {}",
            r.describe()
        );
        assert!(!out.exists());
    }
    assert!(
        disabled > 0,
        "every runtime honours COMPlus_EnableDiagnostics=0"
    );
}

#[test]
fn ps_and_attach_agree_on_a_process_clrprof_record_is_recording() {
    let dir = temp_dir();
    let trace = dir.path().join("r.clrprof");
    let mut rec = UnderClrprof::record(&trace, &["--mode", "none", "--events", "exception"]);
    let pid = rec.program_pid();
    let why = format!(
        "a profiler is already loaded in that process ({}), and only one can be: it is being \
         recorded by `clrprof record` (pid {})",
        agent_lib().display(),
        rec.guard.id()
    );
    let line = ps_line(pid);
    assert!(line.contains(&format!("[cannot attach: {why}")), "{line}");
    let other = dir.path().join("a.clrprof");
    let r = run(&[
        "attach",
        &pid.to_string(),
        "--duration",
        "1",
        "-o",
        s(&other),
    ]);
    r.assert_exit_code(1);
    r.assert_stderr_contains(&format!("cannot attach to process {pid}: {why}"));
    assert!(!other.exists());
    assert_eq!(rec.send(Some("round 1")), "rounds 1: total 1, caught 1");
    assert_eq!(rec.send(Some("exit")), "bye: total 1, caught 1");
    let out = rec.guard.wait_with_output(default_timeout());
    out.assert_exit_code(0);
    assert_eq!(report_json(&trace)["events"]["ExceptionThrown"], 1);
}

#[test]
fn attach_refuses_to_write_over_a_file_the_process_runs() {
    let dir = temp_dir();
    let (guard, _stdin) = attachee_with(&[], dir.path());
    let dll = dir.path().join("Attachee.dll");
    let before = std::fs::read(&dll).unwrap();
    let r = run(&[
        "attach",
        &guard.id().to_string(),
        "--duration",
        "1",
        "-o",
        s(&dll),
    ]);
    r.assert_exit_code(1);
    r.assert_stderr_contains(&format!(
        "-o {} is a file process {} runs, {}",
        s(&dll),
        guard.id(),
        s(&dll)
    ));
    assert_eq!(std::fs::read(&dll).unwrap(), before);
    assert!(
        !std::fs::read_to_string(format!("/proc/{}/maps", guard.id()))
            .unwrap()
            .contains("libclrprof_agent"),
        "nothing was loaded"
    );
}
