//! Proves the harness works: programs compile with mcs and run on the installed runtime, their
//! output is deterministic, and child processes never outlive a failing test.

use std::process::Command;
use std::time::{Duration, Instant};

use clrprof_e2e::{
    ChildGuard, DEFAULT_RUNTIME, Dotnet, OutputExt, REFERENCE_RUNTIME, ROOT_ENV, RUNTIME_ENV,
    RUNTIMES, compile, compile_source, run_command_timeout,
};

#[test]
fn runtime_is_installed() {
    let dotnet = Dotnet::get();
    assert!(dotnet.muxer.is_file(), "{dotnet:?}");
    assert!(
        dotnet.framework_dir.join("libcoreclr.so").is_file(),
        "{dotnet:?}"
    );
    if std::env::var_os(ROOT_ENV).is_none() {
        let asked = std::env::var(RUNTIME_ENV).unwrap_or_else(|_| DEFAULT_RUNTIME.to_string());
        assert_eq!(dotnet.version, asked);
        let tfm = match asked.as_str() {
            "3.1.23" => "netcoreapp3.1",
            "8.0.4" => "net8.0",
            other => panic!("no moniker known for {other}"),
        };
        assert_eq!(dotnet.tfm(), tfm);
        assert!(
            dotnet
                .framework_dir
                .ends_with(format!("shared/Microsoft.NETCore.App/{asked}")),
            "{dotnet:?}"
        );
    }
}

/// A program is compiled once, against the reference runtime's framework, and each runtime
/// runs the same assembly with its own runtimeconfig.json.
#[test]
fn programs_are_compiled_once_for_every_runtime() {
    const SOURCE: &str = r#"
class Version {
    static void Main() {
        System.Console.WriteLine(System.Environment.Version);
    }
}
"#;
    let programs: Vec<_> = RUNTIMES
        .iter()
        .map(|r| Dotnet::pinned_runtime(r.version).compile_source("Version", SOURCE))
        .collect();
    let bytes = std::fs::read(&programs[0].dll).unwrap();
    for (program, runtime) in programs.iter().zip(&RUNTIMES) {
        assert_eq!(program.dotnet.version, runtime.version);
        assert_eq!(
            program.dll.parent().unwrap().file_name().unwrap(),
            runtime.version,
            "{}",
            program.dll.display()
        );
        assert_eq!(
            program.dll.parent().unwrap().parent(),
            programs[0].dll.parent().unwrap().parent(),
            "one build directory"
        );
        assert_eq!(
            std::fs::read(&program.dll).unwrap(),
            bytes,
            "the same assembly"
        );
        let config =
            std::fs::read_to_string(program.dll.with_file_name("Version.runtimeconfig.json"))
                .unwrap();
        let config: serde_json::Value = serde_json::from_str(&config).unwrap();
        let (tfm, framework) = match runtime.version {
            "3.1.23" => ("netcoreapp3.1", "3.1.0"),
            "8.0.4" => ("net8.0", "8.0.0"),
            other => panic!("no moniker known for {other}"),
        };
        assert_eq!(
            config,
            serde_json::json!({"runtimeOptions": {"tfm": tfm, "framework": {
                "name": "Microsoft.NETCore.App", "version": framework}}})
        );
        // The runtimeconfig.json chooses the runtime: it says its own version.
        let out = program.run(&[]);
        out.assert_success();
        assert_eq!(out.stdout_str(), format!("{}\n", runtime.version));
    }
    // Compiled against the reference framework, whichever runtime runs it.
    if std::env::var_os(ROOT_ENV).is_some() {
        return;
    }
    assert!(
        Dotnet::reference()
            .framework_dir
            .ends_with(format!("shared/Microsoft.NETCore.App/{REFERENCE_RUNTIME}")),
        "{:?}",
        Dotnet::reference()
    );
}

#[test]
fn hello_runs_on_the_installed_runtime() {
    let hello = compile("Hello");
    let out = hello.run(&["a", "b c"]);
    out.assert_success();
    assert_eq!(
        out.stdout_str(),
        "Hello from clrprof's test program!\nargs: 2 [a] [b c]\nsum(1..100) = 5050\n"
    );
    assert_eq!(out.stderr_str(), "");
}

#[test]
fn events_program_output_is_exact() {
    let out = compile("Events").run(&[]);
    out.assert_success();
    assert_eq!(
        out.stdout_str(),
        "known: answer=42\n\
         allocations: 1000 Events.Payload, checksum=499500\n\
         exceptions: thrown=7 caught=7 filters=14 finally=14 last=\"clrprof test exception #7\"\n\
         threads: started=3 joined=3 results=[worker-1:299995, worker-2:599990, worker-3:899985]\n\
         gc: induced gen0 x2, gen1 x1, gen2 x1\n\
         pinvoke: getpid calls=5 consistent=True\n\
         done\n"
    );
}

#[test]
fn doubles_program_output_is_exact() {
    let out = compile("Doubles").run(&[]);
    out.assert_success();
    assert_eq!(
        out.stdout_str(),
        "Mix = 406.75\n\
         Scale = 4.25\n\
         MakePair = (4.5, -1.5)\n\
         SumPair = 13.5\n\
         MakeQuad = (2, 6, 12, 20)\n\
         Mixed = 20.25\n\
         Loop = 145148.76872537588\n"
    );
}

#[test]
fn compiled_programs_are_cached() {
    let first = compile("Hello");
    let modified = || std::fs::metadata(&first.dll).unwrap().modified().unwrap();
    let before = modified();
    let again = compile("Hello");
    assert_eq!(first.dll, again.dll);
    assert_eq!(modified(), before, "the cached program was compiled again");
}

#[test]
fn concurrent_compiles_of_one_program_are_safe() {
    const SOURCE: &str = r#"
class Concurrent {
    static int Main(string[] args) {
        System.Console.WriteLine("concurrent " + args.Length);
        return 3;
    }
}
"#;
    let programs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| compile_source("Concurrent", SOURCE)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for program in &programs {
        assert_eq!(program.dll, programs[0].dll);
        let out = program.run(&["x"]);
        assert_eq!(out.status.code(), Some(3), "{}", out.describe());
        assert_eq!(out.stdout_str(), "concurrent 1\n");
    }
}

#[test]
#[should_panic(expected = "mcs could not compile program `Broken`")]
fn compile_errors_panic_with_mcs_output() {
    compile_source(
        "Broken",
        "class Broken { static void Main() { undefined(); } }",
    );
}

#[test]
#[should_panic(expected = "did not finish within")]
fn hung_processes_time_out() {
    run_command_timeout(Command::new("sleep").arg("30"), Duration::from_millis(200));
}

/// A test that panics while its child (and the child's own child) still run leaves nothing
/// behind.
#[cfg(target_os = "linux")]
#[test]
fn guard_kills_the_process_tree_when_a_test_panics() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let result = std::panic::catch_unwind(|| {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 60 & echo $!; wait"])
            .stdout(Stdio::piped());
        let mut guard = ChildGuard::spawn(&mut cmd);
        let mut line = String::new();
        BufReader::new(guard.child_mut().stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        std::panic::panic_any((guard.id(), grandchild));
    });
    let (child, grandchild) = *result.unwrap_err().downcast::<(u32, u32)>().unwrap();
    for pid in [child, grandchild] {
        let deadline = Instant::now() + Duration::from_secs(5);
        while is_alive(pid) {
            assert!(Instant::now() < deadline, "process {pid} survived the test");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Running or stopped; a zombie (killed, not yet reaped by its new parent) counts as dead.
#[cfg(target_os = "linux")]
fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}
