//! The test step's runner: builds every test binary of the workspace once (`cargo test
//! --no-run`, the same selection and features as `cargo test --workspace`), then runs them
//! several at a time, as `cargo test` would run them one after the other (from their package's
//! directory, with the test name filter and options given).
//!
//! Why not `cargo test`: it runs one binary at a time, as many of its tests at once as there
//! are CPUs, and waits for a binary's last test before it starts the next binary; the
//! end-to-end binaries spend much of their time waiting on the programs they start (a runtime
//! starting, a period of export ending, a browser): measured on 2 CPUs, a third of the step's
//! CPU was idle. Here as many binaries run at once as there are CPUs, each one test at a time:
//! as many tests at once as under `cargo test`, and so the same load on the machine, which
//! several tests need (they assert that the sampler keeps up with the program; with twice as
//! many tests at once, an attach test saw its debug-built sampler drop 475 of 1,275 samples).
//! Each binary's output is kept in a log and printed when it ends, whole if it failed, so that
//! the logs of binaries running side by side do not mix.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::util::{cargo, describe_command, run, shown, workspace_root};

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

/// Runs `binaries`, `jobs` at a time, each one test at a time (unless `args` says otherwise)
/// with `args` (a test name filter, `--nocapture`, ...) and `env`; their logs go to `logs`.
/// Fails naming every binary that failed.
pub fn run_all(
    binaries: &[TestBinary],
    args: &[String],
    env: &[(&str, &str)],
    jobs: usize,
    logs: &Path,
) -> Result<()> {
    std::fs::create_dir_all(logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let queue = Mutex::new(binaries.iter().collect::<VecDeque<_>>());
    let failed = Mutex::new(Vec::new());
    let printing = Mutex::new(());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let Some(binary) = queue.lock().unwrap().pop_front() else {
                        break;
                    };
                    let log = logs.join(format!("{}-{}.log", binary.name, binary.kind));
                    let start = Instant::now();
                    let outcome = run_one(binary, args, env, &log);
                    let _guard = printing.lock().unwrap();
                    report(binary, &log, start.elapsed().as_secs_f64(), &outcome);
                    if outcome.is_err() {
                        failed.lock().unwrap().push(binary.name.clone());
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap();
    if !failed.is_empty() {
        bail!("failing test binaries: {}", failed.join(", "));
    }
    Ok(())
}

/// Runs one binary with its output in `log`.
fn run_one(binary: &TestBinary, args: &[String], env: &[(&str, &str)], log: &Path) -> Result<()> {
    let file = std::fs::File::create(log)?;
    let mut cmd = Command::new(&binary.executable);
    if !args.iter().any(|a| a.starts_with("--test-threads")) {
        cmd.arg("--test-threads=1");
    }
    cmd.args(args)
        .current_dir(&binary.package_dir)
        .env("CARGO", cargo())
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    // The variables Cargo set for xtask would tell the binary about another crate.
    clrprof_e2e::without_crate_variables(&mut cmd);
    cmd.env("CARGO_MANIFEST_DIR", &binary.package_dir);
    for (name, value) in env {
        cmd.env(name, value);
    }
    run(cmd)
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
