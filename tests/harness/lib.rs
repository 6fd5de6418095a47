//! Harness for clrprof's end-to-end tests.
//!
//! Every test runs against a real CoreCLR: one of the runtimes the project pins ([`RUNTIMES`],
//! installed by `cargo xtask setup` into `.deps/dotnet-<version>/`), chosen by
//! `CLRPROF_TEST_RUNTIME` (default 3.1.23), or the dotnet root named by `CLRPROF_DOTNET_ROOT`.
//! Test programs are C# files in `tests/programs/`, compiled once with Mono's `mcs` against the
//! reference runtime's framework assemblies and cached under `<target dir>/e2e-programs/`, with
//! a `runtimeconfig.json` per runtime.
//!
//! ```no_run
//! use clrprof_e2e::{OutputExt, compile, record};
//!
//! let program = compile("Events");
//! let out = program.run(&[]);
//! assert!(out.stdout_str().contains("exceptions: 7"));
//!
//! let rec = record(&program, &[], &["--mode", "trace"]);
//! rec.output.assert_success();
//! let json = rec.report_json();
//! # let _ = json;
//! ```
//!
//! Nothing here skips a test: a missing runtime, compiler or binary is a panic that says how to
//! fix it.

mod browser;
mod clrprof;
mod collector;
mod compile;
mod dotnet;
mod facts;
mod native_lib;
mod otlp;
mod otlp_py;
mod paths;
mod pdb;
pub mod peer_perf;
pub mod probes;
mod process;
mod profile;
mod programs;
mod stripped;
mod symbol_server;

pub use browser::{
    CHROMIUM, PLAYWRIGHT_VERSION, artifacts_dir, browser_deps_dir, check_in_browser,
};
pub use clrprof::{
    Recording, agent_lib, clrprof, clrprof_bin, coverage, coverage_command, example_lib,
    functions_by_name, record, record_command, record_unchanged, record_with_env, report,
    report_json, report_json_with, report_with_env, without_crate_variables,
};
pub use collector::{
    COLLECTOR_BINARY, COLLECTOR_MODULES, COLLECTOR_VERSION, CaptureServer, Collector, Ports,
    collector_bin, collector_dir, free_port,
};
pub use compile::{
    Program, apply_env, compile, compile_file, compile_source, program_source, programs_dir,
};
pub use dotnet::{
    DEFAULT_RUNTIME, Dotnet, PinnedRuntime, REFERENCE_RUNTIME, ROOT_ENV, RUNTIME_ENV, RUNTIMES,
    pinned,
};
pub use facts::ProfilingApi;
pub use native_lib::{NativeLib, native_lib};
pub use otlp::otlp_attributes;
pub use otlp_py::{
    OTLP_PROTOS_PY_VERSION, PROTOBUF_PY_VERSION, decode_otlp_with_python, otlp_protos_py_dir,
    otlp_protos_py_requirements,
};
pub use paths::{target_dir, workspace_root};
pub use pdb::{PdbKind, with_portable_pdb};
pub use probes::{ProbeRun, run_probe};
pub use process::{
    ChildGuard, OutputExt, default_timeout, describe_command, first_child, run_command,
    run_command_timeout, send_signal, signal_snapshot_when_ready,
};
pub use profile::{assert_tick_reader, frame_names, profile_of, thread, thread_names};
pub use programs::{LINES_LOOPS, TRACED_CALLS, line_markers, lines_loop_shares, reported};
pub use symbol_server::{SymbolServer, refusing_url};

/// A fresh temporary directory for one test, deleted when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("clrprof-e2e-")
        .tempdir()
        .expect("cannot create a temporary directory")
}

/// The names of the files in `dir` (what a test left there), sorted.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `n` as the text reports write counts, its digits grouped by three: `600,233`.
pub fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The speedscope release whose file format schema the tests validate against.
pub const SPEEDSCOPE_VERSION: &str = "1.25.0";

/// Where `cargo xtask setup` puts speedscope's `file-format-schema.json`.
pub fn speedscope_schema_path() -> std::path::PathBuf {
    workspace_root()
        .join(".deps")
        .join(format!("speedscope-{SPEEDSCOPE_VERSION}"))
        .join("file-format-schema.json")
}

/// speedscope's file format JSON schema, fetched by `cargo xtask setup`.
///
/// # Panics
/// If it is missing (with how to fetch it).
pub fn speedscope_schema() -> serde_json::Value {
    let path = speedscope_schema_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run `cargo xtask setup`", path.display()));
    serde_json::from_str(&text).expect("speedscope's schema is JSON")
}

/// Checks `doc` against speedscope's file format schema ([`speedscope_schema`]).
///
/// # Panics
/// With every violation, if there is any.
#[track_caller]
pub fn assert_valid_speedscope(doc: &serde_json::Value) {
    let schema = speedscope_schema();
    let validator = jsonschema::validator_for(&schema).expect("speedscope's schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "speedscope schema violations: {errors:#?}"
    );
}
