//! The SDK's example profiler (`examples/jit-counter`) loaded into a real runtime.

use std::collections::HashMap;

use clrprof_e2e::{OutputExt, compile, example_lib, probes, run_command, temp_dir};

/// Main + Step01..Step12: see the comment at the top of `programs/JitCount.cs`.
const JIT_COUNT_METHODS: u64 = 13;

#[test]
fn jit_counter_counts_each_method_of_the_program_once() {
    let program = compile("JitCount");
    let lib = example_lib("jit-counter");

    let plain = program.run(&[]);
    plain.assert_success();
    assert_eq!(plain.stdout_str(), "result: 8364\n");

    let dir = temp_dir();
    let report = dir.path().join("jit-counts.txt");
    let mut cmd = program.command_with_profiler(probes::JIT_COUNTER, &lib);
    cmd.env("JIT_COUNTER_OUTPUT", &report);
    let profiled = run_command(&mut cmd);
    profiled.assert_success();
    assert_eq!(
        profiled.stdout_str(),
        plain.stdout_str(),
        "the profiler changed the program's output"
    );

    let text = std::fs::read_to_string(&report).unwrap_or_else(|e| {
        panic!(
            "the profiler wrote no report to {} ({e}): was it loaded?\n{}",
            report.display(),
            profiled.describe()
        )
    });
    let counts: HashMap<&str, u64> = text
        .lines()
        .map(|line| {
            let (name, count) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("malformed report line {line:?}"));
            let count = count
                .parse()
                .unwrap_or_else(|e| panic!("bad count in {line:?}: {e}"));
            (name, count)
        })
        .collect();
    assert_eq!(
        counts.get("JitCount.dll"),
        Some(&JIT_COUNT_METHODS),
        "report:\n{text}"
    );
    assert!(
        counts
            .get("System.Private.CoreLib.dll")
            .is_some_and(|&n| n > 0),
        "report:\n{text}"
    );
}
