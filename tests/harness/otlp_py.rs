//! The official generated messages of the OpenTelemetry protos for Python (PyPI's
//! `opentelemetry-proto`, installed by `cargo xtask setup`), run by `tests/tools/otlp_decode.py`:
//! the export tests read the agent's OTLP requests with them, independently of the Rust code
//! that wrote them.

use std::path::PathBuf;
use std::process::Command;

use crate::paths::workspace_root;

/// The version of PyPI's `opentelemetry-proto` (1.45.2 holds the profiles messages of the
/// protos' v1.10.0 layout, with the dictionary's stack table).
pub const OTLP_PROTOS_PY_VERSION: &str = "1.45.2";
/// The version of the protobuf runtime they run on.
pub const PROTOBUF_PY_VERSION: &str = "7.36.2";

/// The pip requirements, pinned.
pub fn otlp_protos_py_requirements() -> [String; 2] {
    [
        format!("opentelemetry-proto=={OTLP_PROTOS_PY_VERSION}"),
        format!("protobuf=={PROTOBUF_PY_VERSION}"),
    ]
}

/// Where `cargo xtask setup` installs them.
pub fn otlp_protos_py_dir() -> PathBuf {
    workspace_root()
        .join(".deps")
        .join(format!("otlp-protos-py-{OTLP_PROTOS_PY_VERSION}"))
}

/// What the requests (`ExportProfilesServiceRequest`s, protobuf, not compressed) hold, read by
/// the Python messages: `{"unknown_fields", "resources", "samples"}` (see the script).
///
/// # Panics
/// If the packages are missing (run `cargo xtask setup`) or the script fails.
pub fn decode_otlp_with_python(requests: &[Vec<u8>]) -> serde_json::Value {
    let dir = otlp_protos_py_dir();
    assert!(
        dir.is_dir(),
        "{} is missing; run `cargo xtask setup`",
        dir.display()
    );
    let temp = crate::temp_dir();
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", &dir)
        .arg(workspace_root().join("tests/tools/otlp_decode.py"));
    for (i, request) in requests.iter().enumerate() {
        let path = temp.path().join(format!("request-{i}.bin"));
        std::fs::write(&path, request).expect("cannot write a request");
        cmd.arg(path);
    }
    let output = cmd.output().expect("cannot run python3");
    assert!(
        output.status.success(),
        "otlp_decode.py failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("otlp_decode.py prints JSON")
}
