//! The clrprof agent: the profiler library the .NET runtime loads into the profiled process.
//!
//! It only gathers data, as cheaply as it can, and streams it to the `clrprof` CLI, which
//! does all analysis out of process. It must never harm the program it runs in: no panic
//! crosses into the runtime (the SDK catches them), memory is bounded (fixed buffers, a node
//! budget; what does not fit is dropped and counted), and the program's own behaviour and
//! output are unchanged.
//!
//! Layout: [`agent`] is the profiler (callbacks → records), [`session`] the state one session
//! shares, [`transport`] the non-blocking record stream, [`defs`] the names, [`exceptions`] the
//! messages and throw-site stacks of exceptions, [`sampler`] the sampler thread, [`unwind`] the
//! native (DWARF CFI) stack unwinder and the native functions addresses lie in (named with the
//! `clrprof-symbols` crate), [`config`] the settings from the environment (or from
//! `clrprof attach`), [`detach`] the connection of an attached session and its detach,
//! [`alloc`] the allocation recording and sampling, [`alloc_ticks`] the runtime's allocation
//! ticks through an in-process EventPipe session, [`contention`] lock contention from the
//! runtime's contention events, [`gc`] the generation sizes around
//! collections, [`heap`] the heap snapshots, [`stacks`] the stack interner samples, allocations
//! and exceptions share, [`runtime_version`] the runtime's real version, [`export`] export mode (the agent alone ships
//! a profile of every period to a profiling backend). All
//! `unsafe` code lives in [`recorder`]: the enter/leave hooks, the call trees they update, the
//! signal handler that captures stacks, and the system calls behind them.
#![deny(unsafe_code)]

pub mod agent;
pub mod alloc;
pub mod alloc_ticks;
pub mod async_chains;
pub mod cli_link;
pub mod cli_sessions;
pub mod config;
pub mod contention;
pub mod count;
pub mod coverage;
pub mod defs;
pub mod detach;
pub mod event_mask;
pub mod exceptions;
pub mod export;
pub mod features;
pub mod gc;
pub mod heap;
pub mod il_positions;
pub mod instrument;
#[allow(unsafe_code)]
pub mod recorder;
pub mod runtime_events;
pub mod runtime_version;
pub mod sampler;
pub mod session;
pub mod stacks;
pub mod start_error;
pub mod statics;
pub mod transport;
pub mod unwind;

pub use agent::Agent;

clrprof_sdk::export_profiler!(Agent, clrprof_trace::protocol::AGENT_CLSID);
