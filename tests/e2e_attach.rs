#![cfg(unix)]
//! End to end: `clrprof ps` and `clrprof attach` on a running program (`Attachee.cs`), which
//! throws and collects on command, so that what happens while the agent is attached is exact.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use clrprof_e2e::*;

/// The running test program, driven through its stdin.
struct Attachee {
    guard: ChildGuard,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Every line it printed so far.
    printed: Vec<String>,
}

impl Attachee {
    fn start() -> Attachee {
        Attachee::start_with(Stdio::inherit())
    }

    /// [`Attachee::start`] with the program's standard error into `log` (where `contend` says
    /// how long its waiter waited).
    fn start_logging(log: &Path) -> Attachee {
        Attachee::start_with(Stdio::from(std::fs::File::create(log).unwrap()))
    }

    fn start_with(stderr: Stdio) -> Attachee {
        let program = compile("Attachee");
        let mut cmd = program.command();
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut guard = ChildGuard::spawn(&mut cmd);
        let stdin = guard.child_mut().stdin.take().unwrap();
        let stdout = BufReader::new(guard.child_mut().stdout.take().unwrap());
        let mut a = Attachee {
            guard,
            stdin,
            stdout,
            printed: Vec::new(),
        };
        // `ready` comes from Main, after the runtime opened its diagnostics socket.
        assert_eq!(a.line(), "ready");
        a
    }

    fn pid(&self) -> u32 {
        self.guard.id()
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        self.printed.push(line.clone());
        line
    }

    /// Sends a command and returns the line it answers.
    fn send(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        self.line()
    }

    /// Sends `exit`, waits for the program's end and checks it ended well.
    fn exit(mut self) -> Vec<String> {
        let bye = self.send("exit");
        let out = self.guard.wait_with_output(default_timeout());
        assert_eq!(out.status.code(), Some(0), "{bye}\n{}", out.describe());
        self.printed
    }
}

/// A `clrprof attach` that records until it is interrupted (Ctrl-C).
struct Attach {
    guard: ChildGuard,
    stderr: BufReader<std::process::ChildStderr>,
    said: String,
}

impl Attach {
    /// Starts `clrprof attach PID -o TRACE ARGS` and waits until it says it is attached.
    fn start(pid: u32, trace: &Path, args: &[&str]) -> Attach {
        Self::start_with_env(pid, trace, args, &[])
    }

    /// [`Attach::start`] with more environment variables for clrprof.
    fn start_with_env(pid: u32, trace: &Path, args: &[&str], env: &[(&str, &Path)]) -> Attach {
        let mut cmd = Command::new(clrprof_bin());
        cmd.envs(env.iter().map(|(k, v)| (*k, *v)));
        cmd.arg("attach")
            .arg(pid.to_string())
            .arg("-o")
            .arg(trace)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(&mut cmd);
        let mut stderr = BufReader::new(guard.child_mut().stderr.take().unwrap());
        let mut said = String::new();
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let out = guard.wait_with_output(default_timeout());
                panic!(
                    "clrprof attach ended before attaching: {said}\n{}",
                    out.describe()
                );
            }
            said.push_str(&line);
            if line.starts_with("clrprof: attached to process") {
                return Attach {
                    guard,
                    stderr,
                    said,
                };
            }
        }
    }

    /// Interrupts it as Ctrl-C would, and waits for the detach; returns what it said.
    fn stop(self) -> String {
        self.signal("-INT")
    }

    /// Sends it `signal` (`-TERM`), and waits for the detach; returns what it said.
    fn signal(self, signal: &str) -> String {
        send_signal(signal, self.guard.id());
        self.wait()
    }

    /// Waits for it to detach and end (at the end of `--duration`); returns what it said.
    fn wait(mut self) -> String {
        let out = self.guard.wait_with_output(default_timeout());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stderr, &mut rest).unwrap();
        self.said.push_str(&rest);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            self.said,
            out.describe()
        );
        assert!(self.said.contains("detached from process"), "{}", self.said);
        self.said
    }
}

/// Exceptions of the test program's type, and induced GCs, in a trace.
fn probe_counts(trace: &Path) -> (u64, u64) {
    let json = report_json(trace);
    let exceptions = json["exceptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "AttachProbeException")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    let induced = json["gcs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["reason"] == "induced")
        .count() as u64;
    (exceptions, induced)
}

#[test]
fn ps_lists_the_running_program() {
    let program = Attachee::start();
    let out = clrprof(&["ps"]);
    out.assert_success();
    let text = out.stdout_str();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&program.pid().to_string()))
        .unwrap_or_else(|| panic!("pid {} not listed:\n{text}", program.pid()));
    assert!(line.contains("Attachee.dll"), "{line}");
    let version = &Dotnet::get().version;
    assert!(line.contains(version.as_str()), "{line} lacks {version}");
    assert!(text.starts_with("     PID  RUNTIME"), "{text}");
    let printed = program.exit();
    assert_eq!(printed, ["ready", "bye: total 0, caught 0"]);
}

#[test]
fn the_ipc_client_finds_the_runtime_and_reads_its_replies() {
    let program = Attachee::start();
    let pid = program.pid();
    let socket = clrprof_ipc::discovery::socket_path(pid).unwrap();
    let name = socket.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with(&format!("dotnet-diagnostic-{pid}-")) && name.ends_with("-socket"),
        "{name}"
    );
    assert!(
        clrprof_ipc::discovery::list()
            .iter()
            .any(|p| p.pid == pid && p.socket == socket)
    );
    let runtime = clrprof_ipc::discovery::runtime_dir(pid).unwrap();
    assert!(
        runtime.ends_with(&Dotnet::get().version),
        "{}",
        runtime.display()
    );
    // ProcessInfo came with .NET 5: 3.1 answers with an error reply, which the client reads.
    if Dotnet::get().major_minor() < (5, 0) {
        match clrprof_ipc::client::process_info(pid) {
            Err(clrprof_ipc::Error::Refused { hresult }) => {
                assert_eq!(hresult, clrprof_ipc::message::DS_IPC_E_UNKNOWN_COMMAND)
            }
            other => panic!("{other:?}"),
        }
    } else {
        let info = clrprof_ipc::client::process_info(pid).unwrap();
        assert_eq!(info.pid, u64::from(pid));
        assert!(info.command_line.contains("Attachee.dll"), "{info:?}");
    }
    // An attach without clrprof's client data: the agent refuses to start, the runtime says
    // so in its reply, and the program goes on.
    let err = clrprof_ipc::client::attach_profiler(
        pid,
        Duration::from_secs(10),
        clrprof_trace::protocol::AGENT_CLSID,
        agent_lib().to_str().unwrap(),
        b"not clrprof's",
    )
    .unwrap_err();
    assert!(matches!(err, clrprof_ipc::Error::Refused { .. }), "{err:?}");
    assert_eq!(program.exit(), ["ready", "bye: total 0, caught 0"]);
}

#[test]
fn attach_records_exactly_what_happens_while_attached_then_detaches() {
    let mut program = Attachee::start();
    let dir = temp_dir();
    assert_eq!(program.send("round 3"), "rounds 3: total 3, caught 3");

    let first = dir.path().join("first.clrprof");
    let attach = Attach::start(
        program.pid(),
        &first,
        &["--mode", "none", "--events", "gc,exception,runtime"],
    );
    assert_eq!(program.send("round 7"), "rounds 7: total 10, caught 10");
    attach.stop();
    assert_eq!(
        probe_counts(&first),
        (7, 7),
        "exactly the 7 rounds run while attached"
    );
    let json = report_json(&first);
    let events = &json["events"];
    for kind in [
        "InitializeForAttach",
        "ProfilerAttachComplete",
        "ProfilerDetachSucceeded",
    ] {
        assert_eq!(events[kind], 1, "{kind}: {events}");
    }
    assert_eq!(events["Initialize"], serde_json::Value::Null, "{events}");
    assert_eq!(json["session"]["ended_cleanly"], true);
    assert_eq!(json["session"]["pid"], program.pid());
    assert_eq!(
        json["session"]["runtime"],
        format!("CoreCLR {}", Dotnet::get().version).as_str()
    );
    let report = report(&first, &[]);
    report.assert_success();
    let text = report.stdout_str();
    assert!(text.contains("Exceptions (7 thrown, 0 rethrown)"), "{text}");
    assert!(text.contains("AttachProbeException"), "{text}");

    // Detached: the program goes on, and can be attached again.
    assert_eq!(program.send("round 4"), "rounds 4: total 14, caught 14");
    let second = dir.path().join("second.clrprof");
    let attach = Attach::start(
        program.pid(),
        &second,
        &["--mode", "none", "--events", "gc,exception"],
    );
    assert_eq!(program.send("round 2"), "rounds 2: total 16, caught 16");
    attach.stop();
    assert_eq!(probe_counts(&second), (2, 2));

    assert_eq!(program.send("round 1"), "rounds 1: total 17, caught 17");
    assert_eq!(
        program.exit(),
        [
            "ready",
            "rounds 3: total 3, caught 3",
            "rounds 7: total 10, caught 10",
            "rounds 4: total 14, caught 14",
            "rounds 2: total 16, caught 16",
            "rounds 1: total 17, caught 17",
            "bye: total 17, caught 17",
        ],
        "the program printed what it prints without a profiler"
    );
}

#[test]
fn attach_for_a_duration_records_the_window_and_samples_threads_that_were_running() {
    let mut program = Attachee::start();
    let dir = temp_dir();
    // Spinning starts before the attach: the runtime never announces that thread (nor the
    // main thread) to an attached profiler; the agent finds them with EnumThreads.
    assert_eq!(program.send("spin"), "spinning");
    let trace = dir.path().join("window.clrprof");
    let attach = Attach::start(
        program.pid(),
        &trace,
        &["--duration", "2", "--events", "gc,exception"],
    );
    assert!(
        attach.said.contains("recording for 2.0 s"),
        "{}",
        attach.said
    );
    attach.wait();
    assert_eq!(program.send("stop"), "stopped");

    let (exceptions, induced) = probe_counts(&trace);
    assert!(exceptions > 0 && induced > 0, "{exceptions} {induced}");
    let report = report(&trace, &[]);
    report.assert_success();
    let text = report.stdout_str();
    assert!(text.contains("AttachProbeException"), "{text}");
    assert!(text.contains("induced"), "{text}");
    let json = report_json(&trace);
    assert_eq!(json["session"]["mode"], "sample");
    assert_eq!(json["session"]["ended_cleanly"], true);
    // The 2 s window, not the program's life (it had been running before).
    let duration = json["session"]["duration_ns"].as_u64().unwrap();
    assert!(
        (2_000_000_000..10_000_000_000).contains(&duration),
        "{duration}"
    );
    let sampled = |json: &serde_json::Value, name: &str| {
        json["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == name && f["total"].as_u64().unwrap() > 0)
    };
    // The spinning thread uses CPU; the main thread waits for a line on stdin, which costs no
    // CPU: it is in the wall-clock view.
    assert!(sampled(&json, "Attachee.Spin()"), "{}", json["functions"]);
    let wall = clrprof(&[
        "report",
        trace.to_str().unwrap(),
        "--format",
        "json",
        "--metric",
        "wall",
    ]);
    wall.assert_success();
    let wall: serde_json::Value = serde_json::from_slice(&wall.stdout).unwrap();
    assert!(sampled(&wall, "Attachee.Main()"), "{}", wall["functions"]);
    assert!(
        wall["cpu_threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["tid"] == program.pid()),
        "the main thread is sampled: {}",
        wall["cpu_threads"]
    );
    let printed = program.exit();
    assert_eq!(
        printed,
        ["ready", "spinning", "stopped", "bye: total 0, caught 0"]
    );
}

/// True if process `pid` has a handler for SIGPROF (the agent's sampling signal).
fn catches_sigprof(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .unwrap();
    mask & (1 << (27 - 1)) != 0
}

#[test]
fn twenty_attach_detach_cycles_leave_the_program_healthy() {
    let mut program = Attachee::start();
    let dir = temp_dir();
    assert!(!catches_sigprof(program.pid()));
    let mut total = 0;
    for cycle in 0..20 {
        let trace = dir.path().join(format!("cycle{cycle}.clrprof"));
        // Sample mode (the default): the sampler's signal handler comes and goes each time.
        let attach = Attach::start(program.pid(), &trace, &["--events", "exception"]);
        assert!(catches_sigprof(program.pid()), "cycle {cycle}");
        total += 1;
        assert_eq!(
            program.send("round 1"),
            format!("rounds 1: total {total}, caught {total}")
        );
        attach.stop();
        assert!(
            !catches_sigprof(program.pid()),
            "handler restored, cycle {cycle}"
        );
        assert_eq!(probe_counts(&trace).0, 1, "cycle {cycle}");
    }
    assert_eq!(program.send("round 5"), "rounds 5: total 25, caught 25");
    let printed = program.exit();
    assert_eq!(printed.len(), 1 + 20 + 1 + 1);
    assert_eq!(printed.last().unwrap(), "bye: total 25, caught 25");
}

#[test]
fn attach_to_a_missing_or_non_dotnet_process_says_so() {
    // A pid above the kernel's maximum cannot exist.
    let out = clrprof(&["attach", "4194305", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(err.contains("there is no process 4194305"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let mut sleeper = ChildGuard::spawn(Command::new("sleep").arg("60"));
    let pid = sleeper.id().to_string();
    let out = clrprof(&["attach", &pid, "--duration", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(
        err.contains(&format!("process {pid} is not a .NET process")),
        "{err}"
    );
    sleeper.kill();
}

#[test]
fn what_the_runtime_refuses_after_attach_is_refused_with_the_reason() {
    let program = Attachee::start();
    let pid = program.pid().to_string();
    let out = clrprof(&["attach", &pid, "--mode", "trace", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(
        err.contains("--mode trace cannot be used with attach"),
        "{err}"
    );
    assert!(err.contains("enter/leave hooks"), "{err}");
    assert!(
        err.contains("CORPROF_E_UNSUPPORTED_FOR_ATTACHING_PROFILER"),
        "{err}"
    );

    for method in ["sampled", "all"] {
        let out = clrprof(&["attach", &pid, "--alloc", method, "--duration", "1"]);
        assert_eq!(out.status.code(), Some(1), "{}", out.describe());
        let err = out.stderr_str();
        assert!(
            err.contains(&format!(
                "--alloc {method} cannot be used with attach: it needs the runtime's allocation callback"
            )),
            "{err}"
        );
        assert!(
            err.contains("`--alloc` alone (the runtime's allocation ticks) works after attach"),
            "{err}"
        );
    }

    let out = clrprof(&[
        "attach",
        &pid,
        "--events",
        "gc,transition",
        "--duration",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(
        err.contains("`transition` events cannot be recorded with attach"),
        "{err}"
    );

    // Nothing was loaded: the program is untouched.
    assert!(
        !std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .unwrap()
            .contains("libclrprof_agent"),
        "the agent was not loaded"
    );
    assert_eq!(program.exit(), ["ready", "bye: total 0, caught 0"]);
}

#[test]
fn a_second_attach_while_attached_is_refused_clearly() {
    let program = Attachee::start();
    let dir = temp_dir();
    let attach = Attach::start(
        program.pid(),
        &dir.path().join("one.clrprof"),
        &["--mode", "none", "--events", "gc"],
    );
    let pid = program.pid().to_string();
    let other = dir.path().join("two.clrprof");
    let out = clrprof(&[
        "attach",
        &pid,
        "--duration",
        "1",
        "-o",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", out.describe());
    let err = out.stderr_str();
    assert!(err.contains("a profiler is already loaded"), "{err}");
    assert!(!other.exists(), "no trace is left behind");
    attach.stop();
    assert_eq!(program.exit(), ["ready", "bye: total 0, caught 0"]);
}

/// The entries of `dir` that are clrprof's private directories.
fn private_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("clrprof-"))
        .collect();
    names.sort();
    names
}

#[test]
fn sigterm_and_sighup_to_attach_detach_and_the_program_runs_on() {
    let mut program = Attachee::start();
    let dir = temp_dir();
    let tmp = temp_dir();
    let mut total = 0;
    for (signal, name) in [
        ("-TERM", "signal 15 (SIGTERM)"),
        ("-HUP", "signal 1 (SIGHUP)"),
    ] {
        let trace = dir.path().join(format!("{name}.clrprof"));
        let attach = Attach::start_with_env(
            program.pid(),
            &trace,
            &["--mode", "none", "--events", "exception,runtime"],
            &[("TMPDIR", tmp.path())],
        );
        assert_eq!(private_dirs(tmp.path()).len(), 1, "{signal}: the socket's");
        total += 2;
        assert_eq!(
            program.send("round 2"),
            format!("rounds 2: total {total}, caught {total}")
        );
        let said = attach.signal(signal);
        assert!(
            said.contains(&format!(
                "clrprof: {name} received: detaching from process {}",
                program.pid()
            )),
            "{said}"
        );
        assert_eq!(probe_counts(&trace).0, 2, "{signal}");
        let json = report_json(&trace);
        assert_eq!(json["session"]["ended_cleanly"], true, "{signal}");
        assert_eq!(json["events"]["ProfilerDetachSucceeded"], 1, "{signal}");
        assert_eq!(private_dirs(tmp.path()), Vec::<String>::new(), "{signal}");
    }
    // Unharmed, and attachable again.
    let again = dir.path().join("again.clrprof");
    let attach = Attach::start(
        program.pid(),
        &again,
        &["--mode", "none", "--events", "exception"],
    );
    assert_eq!(program.send("round 1"), "rounds 1: total 5, caught 5");
    attach.stop();
    assert_eq!(probe_counts(&again).0, 1);
    assert_eq!(program.exit().last().unwrap(), "bye: total 5, caught 5");
}

/// What one attach of [`five_attach_cycles_each_sample_as_well_as_the_first`] measured.
#[derive(Debug)]
struct Cycle {
    /// The busy thread's CPU samples and the CPU time they account for.
    samples: u64,
    cpu_ns: u64,
    /// Wall-clock samples of every thread (the main thread waits for a line on stdin).
    wall_samples: u64,
    samples_dropped: u64,
}

#[test]
fn five_attach_cycles_each_sample_as_well_as_the_first() {
    let mut program = Attachee::start();
    assert_eq!(program.send("burn"), "burning");
    let pid = program.pid();
    let dir = temp_dir();
    let mut cycles = Vec::new();
    for cycle in 0..5 {
        let trace = dir.path().join(format!("cycle{cycle}.clrprof"));
        Attach::start(pid, &trace, &["--duration", "2"]).wait();
        let json = report_json(&trace);
        let duration_ns = json["session"]["duration_ns"].as_u64().unwrap();
        let threads = json["cpu_threads"].as_array().unwrap();
        for t in threads {
            // A capture an earlier attach left behind once came out as a sample of "thread 0"
            // carrying the CPU since that attach armed the clock.
            assert_ne!(
                t["tid"].as_u64(),
                Some(0),
                "cycle {cycle}: a sample of no thread: {t}"
            );
            // The library stays loaded between attaches: nothing of an earlier one may count.
            assert!(
                t["wall_ns"].as_u64().unwrap() <= duration_ns,
                "cycle {cycle}: a thread's wall time lies within the attach ({duration_ns} ns): {t}"
            );
        }
        let busy = threads
            .iter()
            .max_by_key(|t| t["cpu_ns"].as_u64().unwrap())
            .unwrap();
        cycles.push(Cycle {
            samples: busy["samples"].as_u64().unwrap(),
            cpu_ns: busy["cpu_ns"].as_u64().unwrap(),
            wall_samples: json["counters"]["wall_samples"].as_u64().unwrap(),
            samples_dropped: json["session"]["samples_dropped"].as_u64().unwrap(),
        });
    }
    eprintln!("per attach ({}): {cycles:#?}", Dotnet::current_label());
    let rate = |c: &Cycle| c.samples as f64 / (c.cpu_ns as f64 / 1e9);
    let first = &cycles[0];
    assert!(first.samples > 100, "{first:?}");
    for (i, c) in cycles.iter().enumerate() {
        // CPU samples per second of the busy thread's CPU, as in the first attach.
        assert!(
            rate(c) >= 0.7 * rate(first) && rate(c) <= 1.3 * rate(first),
            "attach {}: {:.0} samples per CPU second, the first {:.0}: {cycles:#?}",
            i + 1,
            rate(c),
            rate(first)
        );
        // Every thread answers the wall-clock sampler in every attach.
        assert!(
            c.wall_samples * 2 >= first.wall_samples,
            "attach {}: {cycles:#?}",
            i + 1
        );
        assert!(
            c.samples_dropped * 4 <= c.samples,
            "attach {}: {cycles:#?}",
            i + 1
        );
    }
    assert_eq!(program.send("stop"), "stopped");
    assert_eq!(program.exit().last().unwrap(), "bye: total 0, caught 0");
}

#[test]
fn attach_with_a_closed_stderr_detaches_and_exits_as_usual() {
    let mut program = Attachee::start();
    let dir = temp_dir();
    let trace = dir.path().join("closed.clrprof");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = Command::new(clrprof_bin());
    cmd.arg("attach")
        .arg(program.pid().to_string())
        .args([
            "--mode",
            "none",
            "--events",
            "exception",
            "--duration",
            "3",
            "-o",
        ])
        .arg(&trace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer);
    let mut guard = ChildGuard::spawn(&mut cmd);
    // Attached once the agent is in the process.
    let maps = format!("/proc/{}/maps", program.pid());
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&maps)
        .unwrap()
        .contains("libclrprof_agent")
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never attached"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(program.send("round 2"), "rounds 2: total 2, caught 2");
    let out = guard.wait_with_output(default_timeout());
    assert_eq!(out.status.code(), Some(0), "{}", out.describe());
    assert_eq!(probe_counts(&trace).0, 2);
    assert_eq!(report_json(&trace)["session"]["ended_cleanly"], true);
    assert_eq!(program.send("round 1"), "rounds 1: total 3, caught 3");
    assert_eq!(program.exit().last().unwrap(), "bye: total 3, caught 3");
}

/// What `Attachee`'s `alloc N` allocates: N objects of 80 bytes.
const PROBE_BYTES: u64 = 80;
/// The bytes one allocation tick stands for, at most (the runtime's tick threshold).
const TICK_BYTES: u64 = 100 * 1024;

#[test]
fn attach_alloc_records_the_allocation_ticks_of_the_window() {
    let mut program = Attachee::start();
    let dir = temp_dir();
    let trace = dir.path().join("alloc.clrprof");
    let n: u64 = 2_500_000;
    let alloc = format!("alloc {n}");
    // Before, during and after the attach: only the middle batch is in the trace.
    assert_eq!(program.send(&alloc), format!("allocated {n}"));
    // No collection is under way when the session starts: a background collection of the
    // first batch that ended after it would turn the GC's events on with no GCEnd before the
    // first tick (1 run in 8 here), and the report could not say when the ticks began. A
    // blocking collection waits for a background one to finish.
    assert_eq!(program.send("collect"), "collected");
    let attach = Attach::start(program.pid(), &trace, &["--mode", "none", "--alloc"]);
    // On Linux the GC turns its events on only when it collects: where clrprof's session on
    // the diagnostics socket reads the ticks (CoreCLR 3.1), they begin at the first collection
    // after the attach, and the report says when. A collection before the batch makes the
    // whole batch the window on every runtime.
    assert_eq!(program.send("collect"), "collected");
    assert_eq!(program.send(&alloc), format!("allocated {n}"));
    attach.stop();
    assert_eq!(program.send(&alloc), format!("allocated {n}"));

    let json = report_json(&trace);
    assert_eq!(json["session"]["ended_cleanly"], true);
    assert_eq!(json["allocation_mode"], "ticks");
    // Who read them: the agent through its own EventPipe session on .NET 5 and later, clrprof
    // through one on the diagnostics socket on CoreCLR 3.1 (no in-process sessions there).
    let in_process = assert_tick_reader(&json);
    let counters = &json["counters"];
    let ticks = json["allocation_records"].as_u64().unwrap();
    if in_process {
        assert_eq!(counters["allocation_ticks"], ticks, "{counters:#}");
        assert_eq!(counters["allocation_ticks_other_thread"], 0, "{counters:#}");
        assert_eq!(json["allocations_dropped"], 0);
        // The agent's session turns the GC's events on at once.
        assert_eq!(json["allocation_ticks_from_ns"], serde_json::Value::Null);
    } else {
        // The runtime numbered every event it wrote: none were dropped.
        assert_eq!(counters["allocation_ticks_lost"], 0, "{counters:#}");
        // The ticks began at the induced collection, inside the recording.
        let from = json["allocation_ticks_from_ns"]
            .as_u64()
            .unwrap_or_else(|| panic!("no allocation_ticks_from_ns: {counters:#}\n{json:#}"));
        let duration = json["session"]["duration_ns"].as_u64().unwrap();
        assert!(from > 0 && from < duration, "{from} of {duration}");
    }
    assert_eq!(json["allocated_objects"], 0, "ticks count no objects");
    // One batch: 200,000,000 bytes, every tick of the type in the one method that allocates
    // it. The ticks stand for the bytes since the previous tick: the batch's last bytes, less
    // than a tick, have none, and the unused ends of allocation contexts add a little (as in
    // e2e_memory). The ticks of a heap count every thread's allocations: a tick that another
    // thread's allocation triggers during the batch (the runtime's own, which depend on the
    // environment) names that allocation's type and stands for the batch's bytes since the
    // previous tick too. So the window's ticks of every type stand for the batch less its last
    // bytes, and those of the probe for that less what other types' ticks took.
    let truth = n * PROBE_BYTES;
    let row = json["allocations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "AttachAllocProbe")
        .unwrap_or_else(|| panic!("no AttachAllocProbe: {:#}", json["allocations"]));
    let bytes = row["bytes"].as_u64().unwrap();
    let all = json["allocated_bytes"].as_u64().unwrap();
    let others = all - bytes;
    assert!(
        all >= truth - TICK_BYTES && bytes >= truth - TICK_BYTES - others,
        "the ticks stand for {bytes} bytes of AttachAllocProbe and {others} of other types, the \
         program allocated {truth} while attached: {:#}",
        json["allocations"]
    );
    assert!(
        bytes <= truth + truth * 15 / 100,
        "the ticks stand for {bytes} bytes of AttachAllocProbe, the program allocated {truth} while attached"
    );
    let by: Vec<&str> = row["allocated_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["function"].as_str().unwrap())
        .collect();
    assert_eq!(by, ["Attachee.Allocate(int)"], "{row:#}");
    assert_eq!(
        json["allocation_stacks"][0]["frames"],
        serde_json::json!(["Attachee.Allocate(int)", "Attachee.Main()"])
    );

    let text = report(&trace, &["--alloc"]).assert_success().stdout_str();
    assert!(
        text.contains("the runtime's allocation ticks") && text.contains("AttachAllocProbe"),
        "{text}"
    );
    assert_eq!(
        text.contains("The ticks began at the runtime's first garbage collection"),
        !in_process,
        "{text}"
    );
    assert_eq!(
        program.exit(),
        [
            "ready",
            "allocated 2500000",
            "collected",
            "collected",
            "allocated 2500000",
            "allocated 2500000",
            "bye: total 0, caught 0"
        ]
    );
}

#[test]
fn attach_contention_records_the_contended_locks_of_the_window() {
    let dir = temp_dir();
    let log = dir.path().join("attachee.stderr");
    let mut program = Attachee::start_logging(&log);
    let trace = dir.path().join("contention.clrprof");
    // Five contended rounds before the attach, twenty while attached.
    assert_eq!(program.send("contend 5"), "contended 5");
    let attach = Attach::start(program.pid(), &trace, &["--mode", "none", "--contention"]);
    assert_eq!(program.send("contend 20"), "contended 20");
    attach.stop();
    let printed = program.exit();
    assert_eq!(
        printed,
        [
            "ready",
            "contended 5",
            "contended 20",
            "bye: total 0, caught 0"
        ]
    );
    let waited: Vec<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("waited_us ")?.parse::<u64>().ok())
        .collect();
    assert_eq!(waited.len(), 2, "{waited:?}");
    let truth = waited[1] * 1000;

    let whole = report_json(&trace);
    assert_eq!(whole["session"]["ended_cleanly"], true);
    let counters = &whole["counters"];
    let json = report_json_with(&trace, &["--contention"]);
    let in_process = Dotnet::get().has_in_process_eventpipe();
    assert_eq!(
        counters["contention_reader"],
        u64::from(in_process),
        "{counters:#}"
    );
    assert_eq!(counters["contention_unpaired"], 0, "{counters:#}");
    assert_eq!(counters["contention_unreadable"], 0, "{counters:#}");
    let c = &json["contention"];
    assert_eq!(c["count"], 20, "{c:#}");
    assert_eq!(counters["contention_written"], 20, "{counters:#}");
    // .NET 8's events name the lock's type and its holder; CoreCLR 3.1's neither.
    let lock_type = if in_process {
        "AttachLedger"
    } else {
        "[unknown type]"
    };
    let rows = c["locks"].as_array().expect("locks[]");
    assert_eq!(rows.len(), 1, "{c:#}");
    let row = &rows[0];
    assert_eq!(row["lock_type"], lock_type, "{row:#}");
    assert_eq!(row["count"], 20, "{row:#}");
    assert_eq!(row["site"], "Attachee.Take()", "{row:#}");
    let names = |key: &str| thread_names(&row[key]);
    assert_eq!(names("waiters"), ["waiter"], "{row:#}");
    if in_process {
        assert_eq!(names("holders"), ["holder"], "{row:#}");
    } else {
        assert!(names("holders").is_empty(), "{row:#}");
    }
    // The waits add up to what the waiter measured around its `lock` statements while
    // attached, within 10% (as in e2e_contention).
    let total = row["total_wait_ns"].as_u64().unwrap();
    assert!(
        total.abs_diff(truth) * 10 <= truth,
        "reported {total} ns, the program waited {truth} ns"
    );
}
