//! Profiles shared by the integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

use clrprof_analysis::{CallValues, Profile};

const MS: u64 = 1_000_000;

/// A sampling profile of two threads: a parser hot in `ParseLine`, a recursive `Fib`, an
/// idle wait, and a sample without managed frames.
pub fn sample_profile() -> Profile {
    let main = |leaf: &[&'static str]| {
        let mut v = vec!["MyApp.dll!MyApp.Program.Main(string[])"];
        v.extend_from_slice(leaf);
        v
    };
    let mut rows = Vec::new();
    for _ in 0..6 {
        rows.push((
            "main",
            main(&[
                "MyApp.dll!MyApp.Parser.ParseFile(string)",
                "MyApp.dll!MyApp.Parser.ParseLine(string, int)",
            ]),
            MS,
            MS,
        ));
    }
    rows.push((
        "main",
        main(&["MyApp.dll!MyApp.Parser.ParseFile(string)"]),
        MS,
        MS,
    ));
    for _ in 0..2 {
        rows.push((
            "main",
            main(&[
                "MyApp.dll!MyApp.Compute.Fib(int)",
                "MyApp.dll!MyApp.Compute.Fib(int)",
                "MyApp.dll!MyApp.Compute.Fib(int)",
            ]),
            MS,
            MS,
        ));
    }
    rows.push(("main", main(&["MyApp.dll!MyApp.Compute.Fib(int)"]), MS, MS));
    // Blocked: wall time, no CPU.
    for _ in 0..4 {
        rows.push((
            "main",
            main(&["System.Private.CoreLib.dll!System.Threading.Monitor.Wait(object)"]),
            0,
            MS,
        ));
    }
    rows.push(("main", vec![], MS / 2, MS));
    for _ in 0..3 {
        rows.push((
            "worker",
            vec![
                "System.Private.CoreLib.dll!System.Threading.ThreadHelper.ThreadStart()",
                "MyApp.dll!MyApp.Worker.Run()",
                "MyApp.dll!MyApp.Parser.ParseLine(string, int)",
            ],
            MS,
            MS,
        ));
    }
    let mut p = Profile::from_stacks(&rows);
    p.name = "MyApp".to_owned();
    p.pid = 4242;
    p.start_unix_ns = 1_700_000_000_000_000_000;
    p
}

fn cv(calls: u64, samples: u64) -> CallValues {
    CallValues {
        calls,
        self_samples: samples,
        self_cpu_ns: samples * MS,
        self_wall_ns: samples * MS,
    }
}

/// A trace-mode profile: exact calls per path, with a recursive `Fib` and a parser.
pub fn trace_profile() -> Profile {
    let main = "MyApp.dll!MyApp.Program.Main(string[])";
    let parse_file = "MyApp.dll!MyApp.Parser.ParseFile(string)";
    let parse_line = "MyApp.dll!MyApp.Parser.ParseLine(string, int)";
    let fib = "MyApp.dll!MyApp.Compute.Fib(int)";
    let run = "MyApp.dll!MyApp.Worker.Run()";
    let mut p = Profile::from_call_paths(&[
        ("main", vec![main], cv(1, 1)),
        ("main", vec![main, parse_file], cv(2, 1)),
        ("main", vec![main, parse_file, parse_line], cv(200, 6)),
        ("main", vec![main, fib], cv(1, 1)),
        ("main", vec![main, fib, fib], cv(2, 1)),
        ("main", vec![main, fib, fib, fib], cv(4, 2)),
        ("worker", vec![run], cv(1, 0)),
        ("worker", vec![run, parse_line], cv(50, 3)),
    ]);
    p.name = "MyApp".to_owned();
    p.pid = 4242;
    p
}

/// Path of a golden file.
pub fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(name)
}

/// Compares `actual` with the golden file `name`, or rewrites the file when
/// `CLRPROF_BLESS=1`.
pub fn check_golden(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("CLRPROF_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read golden file {}: {e}; run with CLRPROF_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "output differs from golden file {} (CLRPROF_BLESS=1 rewrites it)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        );
    }
}
