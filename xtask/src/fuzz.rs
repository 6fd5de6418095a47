//! `cargo xtask fuzz`: builds the fuzz targets of `fuzz/` with coverage instrumentation on the
//! stable toolchain and runs each for a while with libFuzzer, from seeds made here (a small
//! trace as a record stream and in checksummed blocks). A panic, an input that runs longer
//! than 10 s (a hang) or one that needs more than 1 GiB fails the run, and libFuzzer keeps the
//! input under `target/fuzz/artifacts/<target>/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clrprof_trace::{HEADER_LEN, example};

use crate::util::{cargo, describe_command, find_on_path, run, workspace_root};

/// The fuzz targets.
pub const TARGETS: &[&str] = &["trace_reader", "trace_blocks", "trace_report"];

/// Instrumentation libFuzzer needs (what `cargo fuzz` passes, without sanitizers, which need
/// a nightly toolchain), with debug assertions and overflow checks on.
const RUSTFLAGS: &str = "-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing -Cdebug-assertions -Coverflow-checks";

/// Runs `targets` (all if empty) for `seconds` each.
pub fn run_targets(seconds: u64, targets: &[String]) -> Result<()> {
    let chosen: Vec<&str> = if targets.is_empty() {
        TARGETS.to_vec()
    } else {
        for t in targets {
            if !TARGETS.contains(&t.as_str()) {
                bail!(
                    "unknown fuzz target `{t}`; the targets are {}",
                    TARGETS.join(", ")
                );
            }
        }
        targets.iter().map(String::as_str).collect()
    };
    if find_on_path("c++").is_none() {
        crate::setup::ensure_debian_tool("c++", "g++", "libFuzzer's C++ compiler")?;
    }
    let bins = build()?;
    let root = clrprof_e2e::target_dir().join("fuzz");
    // The targets run at once (libFuzzer runs one input at a time: each takes one core),
    // each writing to its own log, which is shown in part once all are done.
    let mut running = Vec::new();
    for target in chosen {
        let corpus = root.join("corpus").join(target);
        let artifacts = root.join("artifacts").join(target);
        std::fs::create_dir_all(&corpus)?;
        std::fs::create_dir_all(&artifacts)?;
        write_seeds(target, &corpus)?;
        let log_path = artifacts.join("fuzz.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut cmd = Command::new(bins.join(target));
        cmd.arg(&corpus)
            .arg(format!("-max_total_time={seconds}"))
            .arg("-timeout=10")
            .arg("-rss_limit_mb=1024")
            .arg("-max_len=65536")
            .arg("-print_final_stats=1")
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .stdout(log.try_clone()?)
            .stderr(log);
        println!(
            "fuzz: {target} for {seconds} s (log: {})",
            log_path.display()
        );
        let child = cmd
            .spawn()
            .with_context(|| format!("could not start `{}`", describe_command(&cmd)))?;
        running.push((target, artifacts, log_path, child));
    }
    let mut failed = Vec::new();
    for (target, artifacts, log_path, mut child) in running {
        let status = child.wait()?;
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        if status.success() {
            for line in lines.iter().filter(|l| l.starts_with("Done ")) {
                println!("fuzz: {target}: {line}");
            }
        } else {
            println!("fuzz: {target} failed ({status}); the end of its log:");
            for line in &lines[lines.len().saturating_sub(40)..] {
                println!("    {line}");
            }
            failed.push(format!(
                "{target} (the input is in {})",
                artifacts.display()
            ));
        }
    }
    if !failed.is_empty() {
        bail!("fuzz targets failed: {}", failed.join(", "));
    }
    Ok(())
}

/// Builds the fuzz targets; returns the directory of the binaries.
fn build() -> Result<PathBuf> {
    let host = host_triple()?;
    let target_dir = clrprof_e2e::target_dir().join("fuzz");
    let mut cmd = Command::new(cargo());
    // With an explicit --target the flags do not reach build scripts and proc macros.
    cmd.args(["build", "--release", "--manifest-path"])
        .arg(workspace_root().join("fuzz/Cargo.toml"))
        .args(["--target", &host, "--target-dir"])
        .arg(&target_dir)
        .env("RUSTFLAGS", RUSTFLAGS)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    println!("fuzz: running `{}`", describe_command(&cmd));
    run(cmd)?;
    Ok(target_dir.join(host).join("release"))
}

fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .context("cannot run `rustc -vV`")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .context("`rustc -vV` names no host")
}

/// The seeds of a target: the example trace in the form the target reads.
fn write_seeds(target: &str, corpus: &Path) -> Result<()> {
    let stream = example::stream();
    let seeds: Vec<(&str, Vec<u8>)> = match target {
        // The first byte is the size of the pieces the stream decoder gets.
        "trace_reader" => vec![
            ("stream", [&[7u8][..], &stream].concat()),
            ("blocks", [&[0u8][..], &example::blocked(5)].concat()),
        ],
        // Six bytes of what to do, then a record stream without its header.
        "trace_blocks" => vec![
            (
                "flip",
                [&[3u8, 100, 0, 0, 0x40, 0][..], &stream[HEADER_LEN..]].concat(),
            ),
            (
                "cut",
                [&[4u8, 200, 1, 0, 0, 1][..], &stream[HEADER_LEN..]].concat(),
            ),
        ],
        _ => vec![("stream", stream), ("blocks", example::blocked(5))],
    };
    for (name, bytes) in seeds {
        std::fs::write(corpus.join(format!("seed-{name}")), bytes)?;
    }
    Ok(())
}
