//! Continuous profiling export: what one period of a process gathered, encoded for the
//! profiling backends operators already run, and sent to them.
//!
//! - [`period`]: [`PeriodProfiles`], the samples of one period per [`ProfileType`] (CPU time,
//!   wall time, allocated bytes and objects, lock wait time and count, exceptions), aggregated
//!   by stack in a table bounded to [`DEFAULT_MAX_STACKS`] stacks per type unless told
//!   otherwise; the samples of new stacks past the bound are added to one
//!   `[stacks over the limit]` stack per type and counted, never silently lost.
//! - [`resource`]: [`Resource`], the process as OpenTelemetry resource attributes
//!   (`service.name`, `host.name`, `process.pid`, `container.id` from the cgroup, ...).
//! - [`otlp`]: OTLP profiles, an `ExportProfilesServiceRequest` of the protos' version
//!   [`otlp::PROTO_VERSION`] (1.10.0, `profiles/v1development`, the version the OpenTelemetry
//!   Collector v0.165.0 bundles), through the `opentelemetry-proto` crate's generated messages.
//! - [`pyroscope`]: Pyroscope's push API, a `push.v1.PushRequest` of gzip'd pprof profiles.
//! - [`transport`]: [`Exporter`], which sends a request (OTLP/HTTP protobuf with gzip, OTLP
//!   over gRPC with gzip, or Pyroscope's push) and says what became of it as an [`Outcome`];
//!   the wire forms are in `http` (ureq) and `grpc` (tonic).
//! - [`queue`]: [`RetryQueue`], the requests waiting, bounded in count and bytes, retried with
//!   backoff and jitter; what it drops is counted.
//!
//! Everything blocks on the caller's thread: the agent runs it on its own exporter thread
//! (export mode, `clrprof-agent`'s `export` module).

#![forbid(unsafe_code)]

mod grpc;
mod http;
pub mod otlp;
mod outcome;
pub mod period;
pub mod pyroscope;
pub mod queue;
pub mod resource;
mod settings;
pub mod transport;

pub use period::{
    AddError, DEFAULT_MAX_STACKS, Frame, OVER_LIMIT_FUNCTION, PeriodProfiles, ProfileType,
    SamplingPeriod, ValueType,
};
pub use queue::{QueueCounts, QueueLimits, RetryQueue};
pub use resource::Resource;
/// A gRPC status code, as a [`Refusal::Grpc`] carries it.
pub use tonic::Code as GrpcCode;
pub use transport::{
    Auth, ExportConfig, Exporter, Outcome, Protocol, Refusal, Sender, Unreachable,
};
