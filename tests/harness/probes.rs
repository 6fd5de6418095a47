//! The test profilers (`tests/probes/`, and the SDK's example `examples/jit-counter`) and
//! running programs under them.
//!
//! A profiler is a cdylib, which cannot be imported: each CLSID here repeats the one its crate
//! exports with `export_profiler!`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::compile::Program;
use crate::process::{OutputExt, run_command};

/// `probe-elt` (tests/probes/elt).
pub const ELT: &str = "{8E2B6F41-7C3A-4D95-A1E8-2F6B9C0D4E73}";
/// `probe-il-heap` (tests/probes/il-heap).
pub const IL_HEAP: &str = "{8E2A41C7-5B36-4D0F-A1E9-3C7D92B6F054}";
/// `probe-eventpipe` (tests/probes/eventpipe).
pub const EVENTPIPE: &str = "{3F6B2D8E-1A47-4C90-B5E3-9D0C7A16E2F4}";
/// `probe-info` (tests/probes/info).
pub const INFO: &str = "{5D1C7E0A-3B8F-4A61-9C2E-7F04B1D9A6E3}";
/// `probe-names` (tests/probes/names).
pub const NAMES: &str = "{6E0A3C41-8B2D-4F57-9A1E-2C7D5B3F9A60}";
/// `jit-counter` (examples/jit-counter).
pub const JIT_COUNTER: &str = "{6C0F5B1E-2A4D-4E8B-9F37-5D1C8A2E7B40}";

/// Sets the runtime's profiler variables so that it loads the profiler `clsid` from `lib`.
pub fn set_profiler(cmd: &mut Command, clsid: &str, lib: &Path) {
    cmd.env("CORECLR_ENABLE_PROFILING", "1")
        .env("CORECLR_PROFILER", clsid)
        .env("CORECLR_PROFILER_PATH", lib);
}

impl Program {
    /// [`Program::command`] with the runtime's profiler variables set to load the profiler
    /// `clsid` from `lib`.
    pub fn command_with_profiler(&self, clsid: &str, lib: &Path) -> Command {
        let mut cmd = self.command();
        set_profiler(&mut cmd, clsid, lib);
        cmd
    }
}

/// A program's run under a probe.
#[derive(Debug)]
pub struct ProbeRun {
    /// The program's output.
    pub output: Output,
    /// What the probe wrote to `PROBE_OUTPUT`.
    pub text: String,
    /// `PROBE_OUTPUT` (a temporary file, deleted by now).
    pub path: PathBuf,
}

/// Runs `cmd` (a program under a probe) to completion with `PROBE_OUTPUT` naming a temporary
/// file, checks that it succeeded, and returns its output and what the probe wrote there.
///
/// # Panics
/// If the program failed or the probe wrote nothing (it was probably not loaded).
#[track_caller]
pub fn run_probe(cmd: &mut Command) -> ProbeRun {
    let dir = crate::temp_dir();
    let path = dir.path().join("probe-output.txt");
    cmd.env("PROBE_OUTPUT", &path);
    let out = run_command(cmd);
    out.assert_success();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "the probe wrote no output ({e}): was it loaded?\n{}",
            out.describe()
        )
    });
    ProbeRun {
        output: out,
        text,
        path,
    }
}
