//! `cargo xtask test`: the full check the CI runs: setup, fmt, clippy, the tests on every
//! runtime the project pins (each a step of its own, named after the runtime), a short fuzz
//! run of the trace readers, and a Windows type check. Stops at the first failing step.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clrprof_e2e::{RUNTIME_ENV, RUNTIMES};

use crate::test_binaries;
use crate::util::{Logged, cargo, describe_command, run as run_cmd, workspace_root};

const WINDOWS_TARGET: &str = "x86_64-pc-windows-gnu";

/// How long CI fuzzes each target: enough for libFuzzer to try a few hundred thousand cut and
/// mutated traces from the seeds, short enough for the whole check to stay well under 20
/// minutes. `cargo xtask fuzz --seconds N` runs longer.
const FUZZ_SECONDS: u64 = 30;

pub fn run(extra: &[String]) -> Result<()> {
    let mut passed: Vec<String> = Vec::new();
    let mut step = |name: &str, f: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        println!("\n==> xtask test: {name}");
        let start = Instant::now();
        match f() {
            Ok(()) => {
                passed.push(format!("{name} ({:.1}s)", start.elapsed().as_secs_f64()));
                Ok(())
            }
            Err(err) => {
                eprintln!("\n==> xtask test: FAILED at step `{name}`: {err:#}");
                if !passed.is_empty() {
                    eprintln!("    passed before it: {}", passed.join(", "));
                }
                bail!("step `{name}` failed")
            }
        }
    };

    step("setup", &mut crate::setup::run)?;
    step("fmt", &mut || {
        run_cmd(cargo_cmd(&["fmt", "--all", "--check"]))
    })?;
    step("clippy", &mut || {
        run_cmd(cargo_cmd(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step("import circles", &mut crate::cycles::run)?;
    // The first runtime's step runs every test binary and the doctests; the others only the
    // binaries of the end-to-end package, the only ones a runtime changes. All are built by one
    // `cargo test --workspace --no-run`: selecting fewer targets (`-p`, `--test`) changed the
    // features Cargo activates for the packages' dev-dependencies, and built some forty crates
    // a second time.
    let binary_args: Vec<String> = extra
        .iter()
        .skip_while(|a| a.as_str() == "--")
        .cloned()
        .collect();
    for (index, runtime) in RUNTIMES.iter().enumerate() {
        let version = runtime.version;
        step(&format!("test on .NET {version}"), &mut || {
            let binaries = test_binaries::build(cargo_cmd)?;
            let chosen: Vec<_> = binaries
                .into_iter()
                .filter(|b| index == 0 || b.runs_on_a_runtime())
                .collect();
            let logs = clrprof_e2e::target_dir().join("test-logs").join(version);
            test_binaries::run_all(&chosen, &binary_args, &[(RUNTIME_ENV, version)], &logs)
                .with_context(|| {
                    format!(
                        "tests failed on .NET {version}; rerun them with `{RUNTIME_ENV}={version} \
                     cargo test --workspace`"
                    )
                })?;
            if index == 0 {
                let mut doc = cargo_cmd(&["test", "--workspace", "--doc", "--"]);
                doc.args(&binary_args);
                run_cmd(doc)?;
            }
            Ok(())
        })?;
    }
    // The Windows check runs beside the fuzz step: each build ends in a few crates compiled one
    // after the other, where the other build takes the idle CPU.
    let windows = if windows_target_available() {
        let mut check = cargo_cmd(&["check", "--workspace", "--target", WINDOWS_TARGET]);
        let log = clrprof_e2e::target_dir()
            .join("test-logs")
            .join("check-windows.log");
        println!(
            "\n==> xtask test: started `{}` (log: {})",
            describe_command(&check),
            log.display()
        );
        Some(Logged::start(&mut check, &log)?)
    } else {
        println!(
            "\n==> xtask test: NOTICE: skipping `cargo check --target {WINDOWS_TARGET}`: \
             the target is not installed and `rustup target add {WINDOWS_TARGET}` failed"
        );
        None
    };
    step(&format!("fuzz ({FUZZ_SECONDS} s per target)"), &mut || {
        crate::fuzz::run_targets(FUZZ_SECONDS, &[])
    })?;
    if let Some(mut windows) = windows {
        step("check windows (beside the fuzz step)", &mut || {
            windows
                .wait()
                .inspect_err(|_| println!("{}", windows.output()))
        })?;
    }

    println!("\n==> xtask test: all steps passed: {}", passed.join(", "));
    Ok(())
}

fn cargo_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(cargo());
    cmd.args(args).current_dir(workspace_root());
    // As the tests' own builds do: else the two saw other values of CARGO_MANIFEST_DIR and
    // rebuilt each other's crates.
    clrprof_e2e::without_crate_variables(&mut cmd);
    cmd
}

/// Whether the Windows target's standard library is installed; tries to install it once.
fn windows_target_available() -> bool {
    if windows_target_installed() {
        return true;
    }
    let mut add = Command::new("rustup");
    add.args(["target", "add", WINDOWS_TARGET]);
    println!("\n==> xtask test: running `{}`", describe_command(&add));
    matches!(add.status(), Ok(s) if s.success()) && windows_target_installed()
}

fn windows_target_installed() -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = String::from_utf8_lossy(&out.stdout);
    std::path::Path::new(sysroot.trim())
        .join("lib")
        .join("rustlib")
        .join(WINDOWS_TARGET)
        .join("lib")
        .is_dir()
}
