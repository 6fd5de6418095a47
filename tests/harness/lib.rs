//! Harness for clrprof's end-to-end tests.
//!
//! Every test runs against a real CoreCLR: the runtime pinned by the project (installed by
//! `cargo xtask setup` into `.deps/dotnet-<version>/`, or the dotnet root named by
//! `CLRPROF_DOTNET_ROOT`). Test programs are C# files in `tests/programs/`, compiled with Mono's
//! `mcs` against the runtime's own framework assemblies and cached under
//! `<target dir>/e2e-programs/`.
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

mod clrprof;
mod compile;
mod dotnet;
mod paths;
pub mod probes;
mod process;

pub use clrprof::{
    Recording, agent_lib, clrprof, clrprof_bin, coverage, example_lib, record, record_command,
    record_with_env, report, report_json, report_json_with,
};
pub use compile::{Program, apply_env, compile, compile_file, compile_source, programs_dir};
pub use dotnet::{Dotnet, PINNED_VERSION, default_dotnet_root};
pub use paths::{target_dir, workspace_root};
pub use probes::{ProbeRun, run_probe};
pub use process::{
    ChildGuard, OutputExt, default_timeout, describe_command, run_command, run_command_timeout,
};

/// A fresh temporary directory for one test, deleted when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("clrprof-e2e-")
        .tempdir()
        .expect("cannot create a temporary directory")
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
