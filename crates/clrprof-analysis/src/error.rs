//! The crate's error type.

use crate::query::Metric;

/// Why a profile could not be analysed or rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `--thread` matched no thread.
    #[error("no thread matches `{selector}`; threads in this profile: {available}")]
    NoSuchThread {
        /// What the user asked for.
        selector: String,
        /// The profile's threads, as `name (tid)`, comma-separated.
        available: String,
    },
    /// The metric needs data this profile does not have (calls need trace mode, bytes an
    /// allocation profile).
    #[error("metric `{metric}` {}", metric.availability())]
    MetricUnavailable {
        /// The metric asked for.
        metric: Metric,
    },
    /// A metric name that is not one of `cpu`, `wall`, `samples`, `calls`, `bytes`, `objects`.
    #[error("unknown metric `{0}` (expected cpu, wall, samples, calls, bytes or objects)")]
    UnknownMetric(String),
    /// A format name that is not one of [`crate::output::Format`]'s.
    #[error(
        "unknown output format `{0}` (expected text, json, folded, flamegraph, speedscope, chrome, pprof or html)"
    )]
    UnknownFormat(String),
    /// The profile breaks the model's rules (an index out of range, a parent after its child).
    #[error("invalid profile: {0}")]
    InvalidProfile(String),
    /// The flame graph would be empty: nothing selected has a non-zero weight.
    #[error("nothing to draw: no stack selected has any {0}")]
    NothingToDraw(&'static str),
    /// A heap snapshot that the trace does not have.
    #[error("{0}")]
    NoSuchSnapshot(String),
    /// `--source METHOD` matched no method with samples.
    #[error("{0}")]
    NoSuchMethod(String),
    /// Writing the output failed.
    #[error("cannot write the report: {0}")]
    Io(#[from] std::io::Error),
    /// Serializing JSON failed.
    #[error("cannot write JSON: {0}")]
    Json(serde_json::Error),
}

impl From<serde_json::Error> for Error {
    /// A failed write stays an I/O error (so that a closed pipe can be told apart); anything
    /// else is a JSON error.
    fn from(e: serde_json::Error) -> Error {
        if e.is_io() {
            Error::Io(e.into())
        } else {
            Error::Json(e)
        }
    }
}
