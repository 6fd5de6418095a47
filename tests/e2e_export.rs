//! Export mode end to end: `tests/programs/Continuous.cs` profiled by environment variables
//! alone (the runtime's three, and clrprof's `CLRPROF_EXPORT_*`; no `clrprof` process), with a
//! period of 1 s, pointed at a real OpenTelemetry Collector (built by `cargo xtask setup`): what
//! the Collector received and forwarded, decoded with the official generated messages, holds
//! the program's resource, its hot method, its exactly 7 exceptions at their site and the bytes
//! of its allocations; the program's output is unchanged. A wrong variable costs the program
//! nothing but one line on standard error; backends that fail are `e2e_export_faults.rs`'s.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use clrprof_e2e::{
    CaptureServer, ChildGuard, Collector, Dotnet, LINES_LOOPS, OutputExt, PdbKind, Program,
    agent_lib, clrprof, compile, default_timeout, line_markers, lines_loop_shares,
    with_portable_pdb,
};
use prost::Message;

mod export_common;
use export_common::*;

#[test]
fn the_agent_alone_ships_every_period_to_the_collector_over_otlp_http() {
    the_agent_alone_ships_every_period_to_the_collector(Otlp::Http);
}

#[test]
fn the_agent_alone_ships_every_period_to_the_collector_over_otlp_grpc() {
    the_agent_alone_ships_every_period_to_the_collector(Otlp::Grpc);
}

fn the_agent_alone_ships_every_period_to_the_collector(otlp: Otlp) {
    let program = compile("Continuous");
    let plain = program.run(&[]);
    plain.assert_success();
    let collector = Collector::start();
    let endpoint = otlp.endpoint(collector.ports());
    let (output, pid) = run(&mut exported(
        &program,
        &[],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PROTOCOL", otlp.protocol()),
            ("CLRPROF_EXPORT_SERVICE", "continuous-test"),
            ("CLRPROF_EXPORT_VERSION", "1.2.3"),
            (
                "CLRPROF_EXPORT_LABELS",
                "deployment.environment=e2e,team=profiling",
            ),
            ("CLRPROF_EXPORT_PERIOD", "1"),
        ],
    ));
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout, "profiling changed the output");
    // Every period was delivered: the agent says nothing.
    assert_eq!(output.stderr_str(), "", "{}", collector.log());

    let bodies = settled(&collector);
    let (samples, resources) = read(&bodies);
    // One request per period that had samples (how many depends on how fast the machine ran
    // the program); the empty stderr above says every one of them was delivered.
    assert!(!bodies.is_empty());
    let dotnet = Dotnet::get();
    let version = dotnet.version.clone();
    for attributes in &resources {
        let get = |k: &str| attributes.get(k).map(String::as_str);
        assert_eq!(
            get("service.name"),
            Some("continuous-test"),
            "{attributes:?}"
        );
        assert_eq!(get("service.version"), Some("1.2.3"));
        assert_eq!(get("process.pid"), Some(pid.to_string().as_str()));
        assert_eq!(get("process.executable.name"), Some("dotnet"));
        assert_eq!(get("process.runtime.name"), Some(".NET"));
        assert_eq!(get("process.runtime.version"), Some(version.as_str()));
        assert_eq!(get("deployment.environment"), Some("e2e"));
        assert_eq!(get("team"), Some("profiling"));
        assert!(get("host.name").is_some_and(|h| !h.is_empty()));
    }

    // CPU: the hot method, under Main, in the module of the program, has most of the CPU time.
    let cpu_total = total(&samples, "cpu", |_| true);
    let spin = total(&samples, "cpu", |s| {
        s.frames.windows(2).any(|w| w == [MAIN, SPIN])
    });
    assert!(
        spin > cpu_total / 2,
        "Spin has {spin} of {cpu_total} ns of CPU"
    );
    let spin_sample = samples
        .iter()
        .find(|s| s.sample_type == "cpu" && s.frames.last().map(String::as_str) == Some(SPIN))
        .expect("a sample in Spin");
    assert_eq!(spin_sample.modules.last().unwrap(), "Continuous.dll");
    // CPU samples every 10 ms of a thread's CPU (100 Hz, the default).
    assert!(spin >= 500_000_000, "Spin has {spin} ns of CPU");
    // No wall-clock profile unless asked for.
    assert_eq!(total(&samples, "wall", |_| true), 0);

    // Exceptions: exactly the 7 the program threw, at their site, with their type.
    let site = [
        MAIN.to_string(),
        RUN.to_string(),
        THROW.to_string(),
        "System.InvalidOperationException".to_string(),
    ];
    let exceptions: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.sample_type == "exceptions")
        .collect();
    assert_eq!(
        total(&samples, "exceptions", |s| s.frames.ends_with(&site[1..])),
        7,
        "{exceptions:#?}"
    );
    assert!(
        exceptions
            .iter()
            .filter(|s| s.frames.ends_with(&site[1..]))
            .all(|s| s.frames == site),
        "{exceptions:#?}"
    );

    // Allocations: the runtime's allocation ticks, in process where the runtime offers them
    // (.NET 5 and later). Each tick stands for the bytes allocated since the previous one
    // (about 100 KB), of the type of the object that crossed the threshold: Blob's bytes are
    // the 96,000,000 the program allocated, less at most the one tick's worth after Blob's
    // last tick, plus the unused ends of allocation contexts (see docs/memory-profiling.md).
    let blob = total(&samples, "alloc_space", |s| {
        s.frames.last().map(String::as_str) == Some("Continuous.Blob")
    });
    if dotnet.major_minor() >= (5, 0) {
        let truth = 96_000_000i64;
        assert!(
            (truth - 102_400..=truth * 115 / 100).contains(&blob),
            "ticks of Blob stand for {blob} bytes, the program allocated {truth}"
        );
        let blob_sample = samples
            .iter()
            .find(|s| {
                s.sample_type == "alloc_space"
                    && s.frames.last().map(String::as_str) == Some("Continuous.Blob")
            })
            .unwrap();
        assert_eq!(
            blob_sample.frames[blob_sample.frames.len() - 3..],
            [MAIN, ALLOCATE, "Continuous.Blob"]
        );
        // The ticks do not say how many objects.
        assert_eq!(total(&samples, "alloc_objects", |_| true), 0);
    } else {
        // CoreCLR 3.1 gives a profiler no in-process event session: no allocation profile
        // (and none of lock waits), silently when they were not asked for by name.
        assert_eq!(total(&samples, "alloc_space", |_| true), 0);
        assert!(samples.iter().all(|s| s.sample_type != "alloc_space"));
    }
}

#[test]
fn the_bytes_on_the_wire_read_the_same_with_the_official_python_messages() {
    use std::io::Read;

    let program = compile("Continuous");
    let plain = program.run(&[]);
    plain.assert_success();
    // The agent's own requests, as they came over OTLP/HTTP (the Collector re-encodes).
    let server = CaptureServer::start();
    let (output, pid) = run(&mut exported(
        &program,
        &[],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &server.endpoint()),
            ("CLRPROF_EXPORT_SERVICE", "on-the-wire"),
            ("CLRPROF_EXPORT_LABELS", "team=profiling"),
            ("CLRPROF_EXPORT_PERIOD", "1"),
            ("CLRPROF_EXPORT_PROFILES", "all"),
        ],
    ));
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout, "profiling changed the output");
    let requests: Vec<Vec<u8>> = server
        .wait_for(1, FORWARD_TIMEOUT)
        .iter()
        .map(|gzipped| {
            let mut request = Vec::new();
            flate2::read::GzDecoder::new(&gzipped[..])
                .read_to_end(&mut request)
                .expect("a gzip'd body");
            request
        })
        .collect();

    let python = clrprof_e2e::decode_otlp_with_python(&requests);
    // Every field the agent wrote is one the protos define.
    assert_eq!(python["unknown_fields"], 0, "{python}");
    let (samples, resources) = read(&requests);
    let ours: Vec<serde_json::Value> = samples
        .iter()
        .map(|s| {
            serde_json::json!({
                "type": s.sample_type,
                "frames": s.frames,
                "modules": s.modules,
                "value": s.value,
            })
        })
        .collect();
    let theirs: Vec<serde_json::Value> = python["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            serde_json::json!({
                "type": s["type"],
                "frames": s["frames"],
                "modules": s["modules"],
                "value": s["value"],
            })
        })
        .collect();
    assert!(!ours.is_empty());
    assert_eq!(theirs, ours);
    let theirs: Vec<BTreeMap<String, String>> =
        serde_json::from_value(python["resources"].clone()).expect("resources");
    assert_eq!(theirs, resources);
    assert_eq!(resources[0]["service.name"], "on-the-wire");
    assert_eq!(resources[0]["team"], "profiling");
    assert_eq!(resources[0]["process.pid"], pid.to_string());
    // The hot method is there, with CPU time in nanoseconds.
    assert!(
        python["samples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["type"] == "cpu"
                && s["unit"] == "nanoseconds"
                && s["frames"].as_array().unwrap().last().unwrap() == SPIN),
        "{python}"
    );
}

#[test]
fn exported_frames_carry_their_source_lines() {
    let program = compile("Lines");
    let markers = line_markers("Lines.cs");
    exported_lines_match(&program, &markers, "Mono symbols");
    let (_dir, embedded) = with_portable_pdb(&program, PdbKind::Embedded);
    exported_lines_match(&embedded, &markers, "an embedded portable PDB");
}

/// `CLRPROF_EXPORT_SOURCE_ROOTS` names the files of exported frames as `report --source-root`
/// finds them: the directory the symbols name (where the program was built) becomes the one
/// the rule gives; the first rule that matches applies.
#[test]
fn exported_file_names_follow_the_source_roots() {
    let program = compile("Lines");
    let file_of_the_loops = |roots: Option<&str>| -> String {
        let collector = Collector::start();
        let endpoint = collector.otlp_http_endpoint();
        let mut vars = vec![
            ("CLRPROF_EXPORT_ENDPOINT", endpoint.as_str()),
            ("CLRPROF_EXPORT_PERIOD", "1"),
            ("CLRPROF_EXPORT_PROFILES", "cpu"),
            ("CLRPROF_EXPORT_CPU_RATE", "1000"),
        ];
        if let Some(roots) = roots {
            vars.push(("CLRPROF_EXPORT_SOURCE_ROOTS", roots));
        }
        let (output, _) = run(&mut exported(&program, &["20"], &vars));
        output.assert_success();
        assert_eq!(output.stderr_str(), "", "{}", collector.log());
        let (samples, _) = read(&settled(&collector));
        let files: std::collections::BTreeSet<String> = samples
            .iter()
            .filter_map(|s| {
                let i = s
                    .frames
                    .iter()
                    .rposition(|f| f.starts_with("Lines.Loops("))?;
                Some(s.lines[i].0.clone()).filter(|f| !f.is_empty())
            })
            .collect();
        assert_eq!(files.len(), 1, "{files:?}\n{samples:?}");
        files.into_iter().next().unwrap()
    };
    let built = file_of_the_loops(None);
    let (dir, name) = built
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("no directory in {built}"));
    assert_eq!(name, "Lines.cs");
    let rules = format!("/nowhere=/elsewhere;{dir}=src/app;{dir}=/second");
    assert_eq!(file_of_the_loops(Some(&rules)), "src/app/Lines.cs");
}

/// Runs `tests/programs/Lines.cs` exporting CPU to a Collector, and checks that the CPU the
/// exported profiles put on each of its three loops' lines has the share the program measured
/// with its thread's CPU clock, within 5 points (as `report --lines` must).
#[track_caller]
fn exported_lines_match(program: &Program, markers: &BTreeMap<String, u32>, symbols: &str) {
    let collector = Collector::start();
    let endpoint = collector.otlp_http_endpoint();
    // 200 rounds: about 2.5 s of CPU, 2,500 samples at 1 kHz, so that a share of 30% is within
    // about 1 point of the truth by sampling (the bound is 5).
    let (output, _) = run(&mut exported(
        program,
        &["200"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", &endpoint),
            ("CLRPROF_EXPORT_PERIOD", "1"),
            ("CLRPROF_EXPORT_PROFILES", "cpu"),
            ("CLRPROF_EXPORT_CPU_RATE", "1000"),
        ],
    ));
    output.assert_success();
    assert_eq!(output.stderr_str(), "", "{}", collector.log());
    let want = lines_loop_shares(&output.stdout_str());
    let (samples, _) = read(&settled(&collector));
    // A sample's line in the method is that of its innermost frame in `Lines.Loops`; a frame
    // in the runtime's code called from the method without a call site the runtime's map
    // knows (its P/Invoke to the CPU clock) has no line, as in `report --lines` (`?`).
    let mut on_line: BTreeMap<i64, i64> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.sample_type == "cpu") {
        if let Some(i) = s.frames.iter().rposition(|f| f.starts_with("Lines.Loops(")) {
            let (file, line) = &s.lines[i];
            assert!(
                file.is_empty() || file.ends_with("Lines.cs"),
                "{symbols}: {s:?}"
            );
            *on_line.entry(*line).or_default() += s.value;
        }
    }
    // What finding the lines cost is said on every profile: the modules whose symbols were
    // looked for (the program's, the framework's) and the time it took.
    assert!(
        samples
            .iter()
            .all(|s| s.attributes.get("clrprof.symbol_modules_read") >= Some(&1)),
        "{symbols}: {samples:?}"
    );
    let cpu = LINES_LOOPS.map(|m| on_line.get(&i64::from(markers[m])).copied().unwrap_or(0) as f64);
    let all: f64 = cpu.iter().sum();
    assert!(
        all > 0.0,
        "{symbols}: no CPU on the loops' lines: {on_line:?}"
    );
    let got = cpu.map(|c| c * 100.0 / all);
    for k in 0..3 {
        assert!(
            (got[k] - want[k]).abs() <= 5.0,
            "{symbols}: {} has {:.1}% of the loops' CPU in the exported profiles, {:.1}% by \
             the program's clock (all: exported {got:?}, program {want:?}; by line {on_line:?})",
            LINES_LOOPS[k],
            got[k],
            want[k]
        );
    }
}

#[test]
fn record_export_runs_the_program_in_export_mode() {
    let program = compile("Continuous");
    let collector = Collector::start();
    let endpoint = collector.otlp_http_endpoint();
    let output = clrprof_record_unchanged(
        &program,
        &[
            "--export",
            &endpoint,
            "--service",
            "launched",
            "--label",
            "way=record",
            "--period",
            "1",
        ],
    );
    let stderr = output.stderr_str();
    assert!(
        stderr.starts_with(&format!(
            "clrprof: export mode: every 1 s, launched sends cpu, alloc, lock, exceptions \
             profiles to {endpoint} (no trace is written)\n"
        )),
        "{stderr}"
    );
    let (samples, resources) = read(&settled(&collector));
    assert!(!resources.is_empty());
    for attributes in &resources {
        assert_eq!(
            attributes.get("service.name").map(String::as_str),
            Some("launched")
        );
        assert_eq!(attributes.get("way").map(String::as_str), Some("record"));
    }
    assert!(
        total(&samples, "cpu", |s| s
            .frames
            .windows(2)
            .any(|w| w == [MAIN, SPIN]))
            > 0,
        "no CPU in Spin: {samples:#?}"
    );
    // Export settings need --export, and --export takes no recording option.
    let refused = clrprof_running(&program, &["record", "--service", "x"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        refused
            .stderr_str()
            .contains("--service is a setting of export mode: use it with --export URL"),
        "{}",
        refused.stderr_str()
    );
    let conflict = clrprof_running(
        &program,
        &[
            "record",
            "--export",
            &endpoint,
            "--service",
            "x",
            "--rate",
            "99",
        ],
    );
    assert_eq!(conflict.status.code(), Some(2), "{}", conflict.stderr_str());
    assert!(
        conflict.stderr_str().contains("cannot be used with"),
        "{}",
        conflict.stderr_str()
    );
}

#[test]
fn record_export_with_a_trace_beside_ships_what_the_trace_holds() {
    let program = compile("Continuous");
    let collector = Collector::start();
    let endpoint = collector.otlp_http_endpoint();
    let dir = clrprof_e2e::temp_dir();
    let trace = dir.path().join("beside.clrprof");
    let trace_arg = trace.display().to_string();
    let output = clrprof_record_unchanged(
        &program,
        &[
            "--export",
            &endpoint,
            "--service",
            "beside",
            "--period",
            "1",
            "--profiles",
            "cpu,exceptions",
            "--cpu-rate",
            "1000",
            "-o",
            &trace_arg,
        ],
    );
    let stderr = output.stderr_str();
    assert!(
        stderr.starts_with(&format!(
            "clrprof: export mode: every 1 s, beside sends cpu, exceptions profiles to \
             {endpoint}, and a trace of it to {trace_arg}\n"
        )),
        "{stderr}"
    );
    let (samples, resources) = read(&settled(&collector));
    assert!(
        resources
            .iter()
            .all(|r| r.get("service.name").map(String::as_str) == Some("beside"))
    );
    // The same records went to both: the hot method has the same share of the CPU in the
    // profiles the Collector received as in the trace's report (every period was delivered,
    // so the two hold the same samples).
    let cpu_total = total(&samples, "cpu", |_| true);
    let spin = total_under(&samples, "cpu", SPIN);
    assert!(cpu_total > 0 && spin > 0, "{samples:#?}");
    let exported_share = spin as f64 / cpu_total as f64;
    let json = clrprof_e2e::report_json(&trace);
    let functions = json["functions"].as_array().expect("functions[]");
    let self_sum: u64 = functions.iter().map(|f| f["self"].as_u64().unwrap()).sum();
    let spin_in_trace = functions
        .iter()
        .find(|f| f["name"] == SPIN)
        .and_then(|f| f["total"].as_u64())
        .unwrap_or_else(|| panic!("no {SPIN} in {}", json["functions"]));
    let trace_share = spin_in_trace as f64 / self_sum as f64;
    assert!(
        (exported_share - trace_share).abs() <= 0.01,
        "Spin has {:.2}% of the CPU exported and {:.2}% in the trace",
        exported_share * 100.0,
        trace_share * 100.0
    );
    assert_eq!(
        self_sum as i64, cpu_total,
        "the CPU in the trace and exported"
    );
    // The 7 throws, in both.
    assert_eq!(total(&samples, "exceptions", |_| true), 7);
    let sites = json["exceptions"].as_array().expect("exceptions[]");
    let thrown: u64 = sites.iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(thrown, 7, "{}", json["exceptions"]);
    assert!(
        sites.iter().all(|e| e["throw_function"] == THROW),
        "{}",
        json["exceptions"]
    );
}

/// `Attachee.cs` running, driven through its stdin: `ready` once its diagnostics socket is open.
#[cfg(target_os = "linux")]
struct Running {
    guard: ChildGuard,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

#[cfg(target_os = "linux")]
impl Running {
    fn start() -> Running {
        use std::io::BufRead;
        let program = compile("Attachee");
        let mut cmd = program.command();
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut guard = ChildGuard::spawn(&mut cmd);
        let stdin = guard.child_mut().stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(guard.child_mut().stdout.take().unwrap());
        let mut ready = String::new();
        stdout.read_line(&mut ready).unwrap();
        assert_eq!(ready.trim_end(), "ready");
        Running {
            guard,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, command: &str) -> String {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }
}

#[cfg(target_os = "linux")]
#[test]
fn attach_export_ships_periods_from_a_running_process_until_stop() {
    const SPIN_OF_ATTACHEE: &str = "Attachee.Spin()";
    let mut program = Running::start();
    let pid = program.guard.id().to_string();
    let collector = Collector::start();
    let endpoint = collector.otlp_http_endpoint();
    let started = clrprof(&[
        "attach",
        &pid,
        "--export",
        &endpoint,
        "--service",
        "attached",
        "--period",
        "1",
    ]);
    started.assert_success();
    assert!(
        started.stderr_str().starts_with(&format!(
            "clrprof: export mode started in process {pid}: every 1 s, attached sends cpu, alloc, \
             lock, exceptions profiles to {endpoint}; `clrprof attach {pid} --stop` ends it\n"
        )),
        "{}",
        started.stderr_str()
    );
    // The spinner throws, catches and collects on and on: CPU and exceptions for two periods.
    assert_eq!(program.send("spin"), "spinning");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(program.send("stop"), "stopped");

    let stopped = clrprof(&["attach", &pid, "--stop"]);
    stopped.assert_success();
    assert_eq!(
        stopped.stderr_str(),
        format!(
            "clrprof: export mode in process {pid} ended: its last period was sent, and the \
             agent detaches\n"
        )
    );
    let (samples, resources) = read(&settled(&collector));
    assert!(!resources.is_empty());
    for attributes in &resources {
        let get = |k: &str| attributes.get(k).map(String::as_str);
        assert_eq!(get("service.name"), Some("attached"), "{attributes:?}");
        assert_eq!(get("process.pid"), Some(pid.as_str()));
    }
    assert!(
        total_under(&samples, "cpu", SPIN_OF_ATTACHEE) > 0,
        "no CPU in {SPIN_OF_ATTACHEE}: {samples:#?}"
    );
    assert!(
        total_under(&samples, "exceptions", SPIN_OF_ATTACHEE) > 0,
        "no exception thrown under {SPIN_OF_ATTACHEE}"
    );

    // The program goes on unprofiled; nothing is left to stop.
    let received = collector.forwarded.wait_for(0, Duration::ZERO).len();
    assert_eq!(program.send("round 2"), "rounds 2: total 2, caught 2");
    let again = clrprof(&["attach", &pid, "--stop"]);
    again.assert_exit_code(1);
    assert!(
        again.stderr_str().contains(&format!(
            "process {pid} runs no export mode that `clrprof attach --export` started"
        )),
        "{}",
        again.stderr_str()
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        collector.forwarded.wait_for(0, Duration::ZERO).len(),
        received,
        "a profile came after the stop"
    );

    // Export mode again in the same process, under another name, and its stop.
    clrprof(&[
        "attach",
        &pid,
        "--export",
        &endpoint,
        "--service",
        "again",
        "--period",
        "1",
    ])
    .assert_success();
    assert_eq!(program.send("spin"), "spinning");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(program.send("stop"), "stopped");
    clrprof(&["attach", &pid, "--stop"]).assert_success();
    // Every request of the second export mode, not the first to arrive.
    let bodies = settled_beyond(&collector, received);
    let (again, resources) = read(&bodies[received..]);
    assert!(
        resources
            .iter()
            .all(|r| r.get("service.name").map(String::as_str) == Some("again")),
        "{resources:?}"
    );
    assert!(
        total_under(&again, "cpu", SPIN_OF_ATTACHEE) > 0,
        "no CPU in {SPIN_OF_ATTACHEE} the second time, in {} requests: {:?}",
        bodies.len() - received,
        again
            .iter()
            .map(|s| (&s.sample_type, s.frames.last(), s.value))
            .collect::<Vec<_>>()
    );
    let bye = program.send("exit");
    assert!(bye.starts_with("bye: total 2"), "{bye}");
    let out = program.guard.wait_with_output(default_timeout());
    out.assert_exit_code(0);
}

#[test]
fn a_wrong_variable_is_one_line_and_the_program_runs_unprofiled() {
    let program = compile("Continuous");
    let plain = program.run(&["short"]);
    plain.assert_success();
    let (output, _) = run(&mut exported(
        &program,
        &["short"],
        &[
            ("CLRPROF_EXPORT_ENDPOINT", "http://127.0.0.1:4318"),
            ("CLRPROF_EXPORT_PROTOCOL", "otlp-json"),
        ],
    ));
    assert_eq!(output.status.code(), plain.status.code());
    assert_eq!(output.stdout, plain.stdout);
    assert_eq!(
        output.stderr_str(),
        "clrprof: CLRPROF_EXPORT_PROTOCOL=otlp-json: unknown protocol (otlp-http, otlp-grpc or pyroscope); \
         the program runs without profiling\n"
    );
}

/// The functions of a pprof location, leaf first as pprof lists them.
fn pprof_frames(profile: &clrprof_pprof::Profile, sample: &clrprof_pprof::Sample) -> Vec<String> {
    let string = |i: i64| profile.string_table[i as usize].clone();
    sample
        .location_id
        .iter()
        .flat_map(|&id| {
            let location = profile.location.iter().find(|l| l.id == id).unwrap();
            location.line.iter().map(|line| {
                let f = profile
                    .function
                    .iter()
                    .find(|f| f.id == line.function_id)
                    .unwrap();
                string(f.name)
            })
        })
        .collect()
}

#[test]
fn clrprof_env_gives_the_variables_that_push_to_pyroscope() {
    use clrprof_export::pyroscope::PushRequest;
    use std::io::Read;

    let program = compile("Continuous");
    let plain = program.run(&[]);
    plain.assert_success();
    let server = CaptureServer::start();
    let env = clrprof(&[
        "env",
        "--endpoint",
        &server.endpoint(),
        "--protocol",
        "pyroscope",
        "--service",
        "continuous-push",
        "--label",
        "region=eu",
        "--period",
        "1",
        "--profiles",
        "cpu,exceptions",
        "--format",
        "docker",
    ]);
    env.assert_success();
    let vars: Vec<(String, String)> = env
        .stdout_str()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("NAME=value");
            (k.to_string(), v.to_string())
        })
        .collect();
    // The agent's real path, the one the tests built.
    assert!(
        vars.contains(&(
            "CORECLR_PROFILER_PATH".into(),
            agent_lib().canonicalize().unwrap().display().to_string()
        )),
        "{vars:?}"
    );
    let mut cmd = program.command();
    cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    let (output, _) = run(&mut cmd);
    output.assert_success();
    assert_eq!(output.stdout, plain.stdout);
    assert_eq!(output.stderr_str(), "");

    let bodies = server.wait_for(1, FORWARD_TIMEOUT);
    std::thread::sleep(Duration::from_secs(1));
    let bodies = server.wait_for(bodies.len(), FORWARD_TIMEOUT);
    let mut spin_cpu = 0;
    let mut exceptions = 0;
    for body in &bodies {
        let push = PushRequest::decode(&body[..]).expect("a push.v1.PushRequest");
        for series in &push.series {
            let labels: BTreeMap<&str, &str> = series
                .labels
                .iter()
                .map(|l| (l.name.as_str(), l.value.as_str()))
                .collect();
            assert_eq!(labels["service_name"], "continuous-push");
            assert_eq!(labels["region"], "eu");
            let name = labels["__name__"];
            assert!(["process_cpu", "exception"].contains(&name), "{labels:?}");
            for raw in &series.samples {
                let mut bytes = Vec::new();
                flate2::read::GzDecoder::new(&raw.raw_profile[..])
                    .read_to_end(&mut bytes)
                    .expect("a gzip'd pprof");
                let profile = clrprof_pprof::Profile::decode(&bytes[..]).expect("a pprof");
                for sample in &profile.sample {
                    let frames = pprof_frames(&profile, sample);
                    match name {
                        "process_cpu" if frames.first().map(String::as_str) == Some(SPIN) => {
                            spin_cpu += sample.value[0]
                        }
                        "exception" if frames.get(1).map(String::as_str) == Some(THROW) => {
                            assert_eq!(
                                frames,
                                ["System.InvalidOperationException", THROW, RUN, MAIN]
                            );
                            exceptions += sample.value[0]
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(spin_cpu >= 500_000_000, "Spin has {spin_cpu} ns of CPU");
    assert_eq!(exceptions, 7);
}
