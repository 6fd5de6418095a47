//! Facts of the test programs that more than one test asserts, written once beside the
//! comment of the program that states them.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::str::FromStr;

use crate::compile::programs_dir;

/// The lines of program `file` (in `tests/programs/`) marked `// @name`, by name.
pub fn line_markers(file: &str) -> BTreeMap<String, u32> {
    let source = std::fs::read_to_string(programs_dir().join(file)).unwrap();
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

/// The value a test program printed after `prefix` on a line of `output` (its stdout or
/// stderr), such as the `0.71` of `hot: spin share 0.71` for the prefix `hot: spin share `:
/// the programs' own measures, which tests compare with what clrprof saw.
///
/// # Panics
/// If no line starts with `prefix`, or what follows it is not a `T`.
#[track_caller]
pub fn reported<T: FromStr>(output: &str, prefix: &str) -> T
where
    T::Err: Debug,
{
    let value = output
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in the program's output:\n{output}"));
    value
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("`{prefix}{value}`: {e:?}"))
}

/// The markers of `tests/programs/Lines.cs`'s three loops, in order.
pub const LINES_LOOPS: [&str; 3] = ["loop-a", "loop-b", "loop-c"];

/// `Lines.cs`'s own shares of its three loops' CPU, in percent, from its output
/// (`lines: A% B% C% checksum=N`).
///
/// # Panics
/// If the output has no such line.
pub fn lines_loop_shares(stdout: &str) -> [f64; 3] {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("lines: "))
        .unwrap_or_else(|| panic!("no `lines:` line in {stdout}"));
    let shares: Vec<f64> = line
        .split_whitespace()
        .take(3)
        .map(|s| s.trim_end_matches('%').parse().unwrap())
        .collect();
    [shares[0], shares[1], shares[2]]
}

/// Every call `tests/programs/Traced.cs` makes, all threads together, by the name reports
/// give each method (see the program's header).
pub const TRACED_CALLS: &[(&str, u64)] = &[
    ("Program.Main(string[])", 1),
    ("Work.Run(int)", 3),
    ("Work.Step(int)", 6000),
    ("Work.Leaf(int)", 3000),
    ("Work.Short()", 20),
    ("Tail.Caller(long)", 100),
    ("Tail.Callee(long, long)", 100),
    ("Thrower.Catch()", 10),
    ("Thrower.L1()", 10),
    ("Thrower.L2()", 10),
    ("Thrower.L3()", 10),
    ("Thrower.L4()", 10),
    ("Thrower.L5()", 10),
    ("Thrower.After()", 10),
    ("Deep.Start()", 1),
    ("Deep.Recurse(int)", 60_000),
];
