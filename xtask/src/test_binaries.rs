//! The test step's runner: builds every test binary of the workspace once (`cargo test
//! --no-run`, the same selection and features as `cargo test --workspace`), then runs the ones
//! chosen, one after the other, as `cargo test` runs them (from their package's directory, as
//! many of a binary's tests at once as there are CPUs), with the test name filter and options
//! given. Each binary's output is kept in a log and printed whole if it failed; the CI log
//! gets each binary's time and result line.
//!
//! Why not `cargo test` itself: the second runtime's step runs only the end-to-end binaries,
//! and any selection of targets (`-p`, `--test`) changed the features Cargo activates and
//! built some forty crates a second time.
//!
//! Why not several binaries at once (tried: the end-to-end binaries wait much of their time on
//! the programs they start, and a third of the step's CPU was idle on 2 CPUs): with two
//! binaries side by side, even at one test each, tests failed that pass one binary at a time
//! (a contention test saw 49 of the program's 50 contended entries and 1.11 s of a 1.00 s I/O
//! wait; an attach test's debug-built sampler dropped 475 of 1,275 samples with four tests at
//! once). Those are findings to chase, not noise to run around; until then the binaries run as
//! `cargo test` runs them. The first was CoreCLR 3.1's: the CLI's EventPipe session started
//! after the program's first wait, which the agent now prevents by holding the program's start
//! until the session runs (`cli_sessions.rs` in the agent); the I/O wait was the wall ticks'
//! resolution at the wait's ends (a look charged the whole interval since the previous tick to
//! what it found, and a new thread's first interval to where it was first seen), which the
//! thread's CPU clock now splits (`sampler/book.rs`: within 2.3 ms on a quiet machine).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::util::{Logged, cargo, describe_command, shown, workspace_root};

/// A test binary Cargo built.
#[derive(Debug, Clone, PartialEq)]
pub struct TestBinary {
    /// The target's name (`e2e_cpu`, or the crate's for unit tests).
    pub name: String,
    /// `lib`, `bin` or `test`: what `cargo test` says it runs ("unittests", a test file).
    pub kind: String,
    /// The directory of the package's manifest: `cargo test` runs the binary there.
    pub package_dir: PathBuf,
    pub executable: PathBuf,
}

impl TestBinary {
    /// Whether the binary belongs to the end-to-end package (`tests/`), whose tests run on a
    /// .NET runtime.
    pub fn runs_on_a_runtime(&self) -> bool {
        self.package_dir == workspace_root().join("tests")
    }
}

/// Builds the workspace's test binaries as `cargo test --workspace` does, and lists them.
pub fn build(base: impl Fn(&[&str]) -> Command) -> Result<Vec<TestBinary>> {
    let mut cmd = base(&[
        "test",
        "--workspace",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    cmd.stdout(Stdio::piped());
    let shown_cmd = describe_command(&cmd);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("could not start `{shown_cmd}`"))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut binaries = Vec::new();
    for line in BufReader::new(stdout).lines() {
        if let Some(binary) = test_binary_of(&line?) {
            binaries.push(binary);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("`{shown_cmd}` failed ({status})");
    }
    Ok(binaries)
}

/// The test binary a line of Cargo's JSON messages announces, if it announces one.
fn test_binary_of(line: &str) -> Option<TestBinary> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
        return None;
    }
    let executable = message["executable"].as_str()?;
    let target = &message["target"];
    Some(TestBinary {
        name: target["name"].as_str()?.to_owned(),
        kind: target["kind"][0].as_str()?.to_owned(),
        package_dir: Path::new(message["manifest_path"].as_str()?)
            .parent()?
            .to_path_buf(),
        executable: PathBuf::from(executable),
    })
}

/// Runs `binaries` one after the other, each with `args` (a test name filter, `--nocapture`,
/// ...) and `env`; their logs go to `logs`. Runs them all, then fails naming every binary that
/// failed.
pub fn run_all(
    binaries: &[TestBinary],
    args: &[String],
    env: &[(&str, &str)],
    logs: &Path,
) -> Result<()> {
    std::fs::create_dir_all(logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let mut failed = Vec::new();
    for binary in binaries {
        let log = logs.join(format!("{}-{}.log", binary.name, binary.kind));
        let start = Instant::now();
        let outcome = run_one(binary, args, env, &log);
        report(binary, &log, start.elapsed().as_secs_f64(), &outcome);
        if outcome.is_err() {
            failed.push(binary.name.clone());
        }
    }
    if !failed.is_empty() {
        bail!("failing test binaries: {}", failed.join(", "));
    }
    Ok(())
}

/// Runs one binary with its output in `log`.
fn run_one(binary: &TestBinary, args: &[String], env: &[(&str, &str)], log: &Path) -> Result<()> {
    let mut cmd = Command::new(&binary.executable);
    cmd.args(args)
        .current_dir(&binary.package_dir)
        .env("CARGO", cargo());
    // The variables Cargo set for xtask would tell the binary about another crate.
    clrprof_e2e::without_crate_variables(&mut cmd);
    cmd.env("CARGO_MANIFEST_DIR", &binary.package_dir);
    for (name, value) in env {
        cmd.env(name, value);
    }
    Logged::start(&mut cmd, log)?.wait()
}

/// Prints what `cargo test` prints of a binary: which one ran, and its result line; the whole
/// log if it failed.
fn report(binary: &TestBinary, log: &Path, seconds: f64, outcome: &Result<()>) {
    let what = match binary.kind.as_str() {
        "test" => binary.name.clone(),
        _ => format!("unittests {}", binary.name),
    };
    println!("     Running {what} ({seconds:.1}s, log: {})", shown(log));
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match outcome {
        Ok(()) => {
            for line in text.lines().filter(|l| l.starts_with("test result:")) {
                println!("{line}");
            }
        }
        Err(err) => {
            println!("{text}");
            println!("{what} FAILED: {err:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_artifact_is_a_binary_and_a_library_is_not() {
        let test = r#"{"reason":"compiler-artifact","manifest_path":"/w/tests/Cargo.toml",
            "target":{"name":"e2e_cpu","kind":["test"]},"profile":{"test":true},
            "executable":"/w/target/debug/deps/e2e_cpu-1"}"#
            .replace('\n', "");
        assert_eq!(
            test_binary_of(&test),
            Some(TestBinary {
                name: "e2e_cpu".into(),
                kind: "test".into(),
                package_dir: "/w/tests".into(),
                executable: "/w/target/debug/deps/e2e_cpu-1".into(),
            })
        );
        let lib = test.replace(r#""test":true"#, r#""test":false"#).replace(
            r#""executable":"/w/target/debug/deps/e2e_cpu-1""#,
            r#""executable":null"#,
        );
        assert_eq!(test_binary_of(&lib), None);
        assert_eq!(
            test_binary_of(r#"{"reason":"build-finished","success":true}"#),
            None
        );
        assert_eq!(test_binary_of("not json"), None);
    }
}
