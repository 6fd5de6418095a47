//! Building and running the clrprof CLI and agent.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use tempfile::TempDir;

use crate::compile::{Program, apply_env};
use crate::paths::{layout, workspace_root};
use crate::process::{OutputExt, default_timeout, run_command, run_command_timeout};

/// Builds the workspace's libraries (the agent, the probes), the `clrprof` CLI and its test
/// targets with the profile and target the tests were built with, once per test process.
/// Cargo's build lock is free while tests run.
///
/// The test targets are part of it for their features: with them, Cargo activates the features
/// the packages' dev-dependencies ask for, exactly as in `cargo test --workspace`, so that after
/// that command this build has nothing to do. Without them (`cargo build -p clrprof-cli -p
/// clrprof-agent`, as before) some forty crates (tokio, hyper, tonic, serde, syn, ...) had
/// other features and were compiled a second time in every fresh checkout, and the agent
/// built by `cargo test` was replaced by another.
#[track_caller]
fn cargo_build() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(msg) = BUILT.get_or_init(run_cargo_build) {
        panic!("{msg}");
    }
}

fn run_cargo_build() -> Result<(), String> {
    let layout = layout();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--workspace",
        "--lib",
        "--tests",
        "--bin",
        "clrprof",
    ])
    .current_dir(workspace_root());
    without_crate_variables(&mut cmd);
    match layout.profile.as_str() {
        "dev" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(triple) = &layout.triple {
        cmd.args(["--target", triple]);
    }
    cmd.arg("--target-dir").arg(&layout.target_root);
    // A cold build of the CLI may take a while on a small machine.
    let timeout = default_timeout().max(std::time::Duration::from_secs(3600));
    let out = run_command_timeout(&mut cmd, timeout);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build --workspace --lib --tests --bin clrprof` failed\n{}",
            out.stderr_str()
        ))
    }
}

/// Removes from `cmd`'s environment what Cargo set for the crate that runs it (a test binary,
/// or xtask under `cargo run`), for a `cargo` it starts: a build script that watches one of
/// these (ring's watches CARGO_MANIFEST_DIR) ran again in every build that saw another value,
/// and the next build then compiled ten crates again (a minute in CI's second runtime step).
pub fn without_crate_variables(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_for_a_crate) {
            cmd.env_remove(name);
        }
    }
}

/// Whether `name` is a variable Cargo sets for the crate it runs (its manifest, package and
/// binaries), not one of the user's settings.
fn set_by_cargo_for_a_crate(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_MANIFEST_LINKS"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
            | "OUT_DIR"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

#[track_caller]
fn built_artifact(path: PathBuf, package: &str) -> PathBuf {
    assert!(
        path.is_file(),
        "`cargo build` of {package} succeeded but did not produce {} (is the binary named \
         `clrprof` / is the library a `cdylib`?)",
        path.display()
    );
    path
}

fn cdylib_path(package: &str) -> PathBuf {
    let consts = std::env::consts::DLL_PREFIX;
    layout().profile_dir.join(format!(
        "{consts}{}{}",
        package.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

/// The `clrprof` CLI, built (together with the agent) on first use.
#[track_caller]
pub fn clrprof_bin() -> PathBuf {
    cargo_build();
    let exe = format!("clrprof{}", std::env::consts::EXE_SUFFIX);
    built_artifact(layout().profile_dir.join(exe), "clrprof-cli")
}

/// The agent cdylib (`libclrprof_agent.so`), built (together with the CLI) on first use.
#[track_caller]
pub fn agent_lib() -> PathBuf {
    cargo_build();
    built_artifact(cdylib_path("clrprof-agent"), "clrprof-agent")
}

/// The cdylib of workspace package `package` (e.g. `jit-counter`), built on first use.
#[track_caller]
pub fn example_lib(package: &str) -> PathBuf {
    cargo_build();
    built_artifact(cdylib_path(package), package)
}

/// The result of `clrprof record`: its output and the trace it wrote.
#[derive(Debug)]
pub struct Recording {
    /// Output of the `clrprof record` process (the program's own stdout/stderr pass through it).
    pub output: Output,
    /// The trace file (`-o`); may be missing if recording failed.
    pub trace: PathBuf,
    /// Temporary directory holding the trace; deleted when the recording is dropped.
    pub dir: TempDir,
}

impl Recording {
    /// `clrprof report <trace> <args>`.
    #[track_caller]
    pub fn report(&self, args: &[&str]) -> Output {
        report(&self.trace, args)
    }

    /// `clrprof report <trace> --format json`, parsed.
    #[track_caller]
    pub fn report_json(&self) -> serde_json::Value {
        report_json(&self.trace)
    }

    /// `clrprof report <trace> --format json <args>`, which must succeed and print JSON.
    #[track_caller]
    pub fn report_json_with(&self, args: &[&str]) -> serde_json::Value {
        report_json_with(&self.trace, args)
    }
}

/// The functions of a JSON report (`functions[]`), by name.
pub fn functions_by_name(json: &serde_json::Value) -> HashMap<String, serde_json::Value> {
    json["functions"]
        .as_array()
        .expect("functions[]")
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), f.clone()))
        .collect()
}

/// Runs `clrprof record <clrprof_args> -o <temp>/<name>.clrprof -- <dotnet> <dll> <args>` to
/// completion. Does not check the exit status.
#[track_caller]
pub fn record(program: &Program, args: &[&str], clrprof_args: &[&str]) -> Recording {
    record_with_env(program, args, clrprof_args, &[])
}

/// [`record`]s `program`, checking that both it and a plain run of it (the same `args`, no
/// profiler) succeeded and that the profiled run printed what the plain one printed.
#[track_caller]
pub fn record_unchanged(program: &Program, args: &[&str], clrprof_args: &[&str]) -> Recording {
    let plain = program.run(args);
    plain.assert_success();
    let rec = record(program, args, clrprof_args);
    rec.output.assert_success();
    assert_eq!(
        rec.output.stdout, plain.stdout,
        "profiling changed the output"
    );
    rec
}

/// [`record`] with extra environment variables for the program (e.g. runtime settings such
/// as `COMPlus_TieredCompilation=0`).
#[track_caller]
pub fn record_with_env(
    program: &Program,
    args: &[&str],
    clrprof_args: &[&str],
    env: &[(&str, &str)],
) -> Recording {
    run_under_clrprof("record", "clrprof", program, args, clrprof_args, env)
}

/// Runs `clrprof coverage <clrprof_args> -o <temp>/<name>.<extension> -- <dotnet> <dll> <args>`
/// to completion; `trace` of the result is the coverage file. Does not check the exit status.
#[track_caller]
pub fn coverage(
    program: &Program,
    args: &[&str],
    clrprof_args: &[&str],
    extension: &str,
) -> Recording {
    run_under_clrprof("coverage", extension, program, args, clrprof_args, &[])
}

#[track_caller]
fn run_under_clrprof(
    subcommand: &str,
    extension: &str,
    program: &Program,
    args: &[&str],
    clrprof_args: &[&str],
    env: &[(&str, &str)],
) -> Recording {
    let dir = crate::temp_dir();
    let trace = dir.path().join(format!("{}.{extension}", program.name));
    let mut cmd = command_under_clrprof(subcommand, program, args, clrprof_args, &trace);
    cmd.envs(env.iter().copied());
    let output = run_command(&mut cmd);
    Recording { output, trace, dir }
}

/// The command [`record`] runs: `clrprof record <clrprof_args> -o <trace> -- <dotnet> <dll>
/// <args>`, with the tests' environment. For tests that interact with the program while it
/// is recorded.
pub fn record_command(
    program: &Program,
    args: &[&str],
    clrprof_args: &[&str],
    trace: &Path,
) -> Command {
    command_under_clrprof("record", program, args, clrprof_args, trace)
}

/// The command [`coverage`] runs: `clrprof coverage <clrprof_args> -o <output> -- <dotnet>
/// <dll> <args>`, with the tests' environment. For tests that interact with the program while
/// its coverage is measured.
pub fn coverage_command(
    program: &Program,
    args: &[&str],
    clrprof_args: &[&str],
    output: &Path,
) -> Command {
    command_under_clrprof("coverage", program, args, clrprof_args, output)
}

/// `clrprof <subcommand> <clrprof_args> -o <trace> -- <dotnet> <dll> <args>`.
fn command_under_clrprof(
    subcommand: &str,
    program: &Program,
    args: &[&str],
    clrprof_args: &[&str],
    trace: &Path,
) -> Command {
    let mut cmd = Command::new(clrprof_bin());
    cmd.arg(subcommand)
        .args(clrprof_args)
        .arg("-o")
        .arg(trace)
        .arg("--")
        .arg(&program.dotnet.muxer)
        .arg(&program.dll)
        .args(args);
    apply_env(&mut cmd);
    cmd
}

/// `clrprof <args>` with the tests' environment (see [`Program::command`]). Does not check the
/// exit status.
#[track_caller]
pub fn clrprof(args: &[&str]) -> Output {
    let mut cmd = Command::new(clrprof_bin());
    cmd.args(args);
    apply_env(&mut cmd);
    run_command(&mut cmd)
}

/// `clrprof report <trace> <args>`. Does not check the exit status.
#[track_caller]
pub fn report(trace: &Path, args: &[&str]) -> Output {
    report_with_env(trace, args, &[])
}

/// [`report`] with extra environment variables (set after the tests' environment, which
/// removes the developer's own `CLRPROF_SYMBOL_*`). Does not check the exit status.
#[track_caller]
pub fn report_with_env(trace: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(clrprof_bin());
    cmd.arg("report").arg(trace).args(args);
    apply_env(&mut cmd);
    cmd.envs(env.iter().copied());
    run_command(&mut cmd)
}

/// `clrprof report <trace> --format json`, which must succeed and print JSON.
#[track_caller]
pub fn report_json(trace: &Path) -> serde_json::Value {
    report_json_with(trace, &[])
}

/// `clrprof report <trace> --format json <args>`, which must succeed and print JSON.
#[track_caller]
pub fn report_json_with(trace: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let out = report(trace, &all);
    out.assert_success();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`clrprof report --format json` printed invalid JSON ({e})\n{}",
            out.describe()
        )
    })
}
