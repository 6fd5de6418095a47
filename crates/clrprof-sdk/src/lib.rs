//! A safe Rust SDK for the CoreCLR profiling API.
//!
//! A profiler is a type implementing [`Profiler`] (one `&self` method per runtime callback,
//! all optional), exported from a `cdylib` with [`export_profiler!`]. The SDK does the COM
//! work: it answers the runtime's `DllGetClassObject`, `CreateInstance` and `QueryInterface`
//! calls, hands [`Profiler::initialize`] a [`ProfilerInfo`] at the highest version the runtime
//! has, converts every callback's arguments to typed, safe values, and catches panics at the
//! boundary so that a bug in the profiler never aborts the application ([`panics_caught`]
//! counts them).
//!
//! # Example: counting JIT compilations per module
//!
//! `Cargo.toml`: `crate-type = ["cdylib"]` and a dependency on `clrprof-sdk`. Then:
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::{Mutex, OnceLock};
//!
//! use clrprof_sdk::{EventMask, FunctionId, ModuleId, Profiler, ProfilerInfo, Result};
//!
//! #[derive(Default)]
//! struct JitCounter {
//!     info: OnceLock<ProfilerInfo>,
//!     counts: Mutex<HashMap<ModuleId, u64>>,
//! }
//!
//! impl Profiler for JitCounter {
//!     fn initialize(&self, info: ProfilerInfo) -> Result<()> {
//!         info.set_event_mask(EventMask::MONITOR_JIT_COMPILATION)?;
//!         let _ = self.info.set(info);
//!         Ok(())
//!     }
//!
//!     // Called from many threads at once: the state is behind a Mutex.
//!     fn jit_compilation_started(&self, function: FunctionId, _safe: bool) -> Result<()> {
//!         let Some(info) = self.info.get() else { return Ok(()) };
//!         let module = info.get_function_info(function)?.module;
//!         let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
//!         *counts.entry(module).or_default() += 1;
//!         Ok(())
//!     }
//!
//!     fn shutdown(&self) -> Result<()> {
//!         let Some(info) = self.info.get() else { return Ok(()) };
//!         let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
//!         for (module, count) in counts.iter() {
//!             let name = info.get_module_info(*module)?.name;
//!             eprintln!("{count:6} {name}");
//!         }
//!         Ok(())
//!     }
//! }
//!
//! // The CLSID the user puts in CORECLR_PROFILER; checked at compile time.
//! clrprof_sdk::export_profiler!(JitCounter, "{3C5E7B2A-41D6-4F0E-9B8C-6A1D2E3F4B5C}");
//!
//! // Free functions (e.g. enter/leave hooks) reach the instance through `instance`.
//! fn jit_counter() -> Option<&'static JitCounter> {
//!     clrprof_sdk::instance::<JitCounter>()
//! }
//! # fn main() { assert!(jit_counter().is_none()); }
//! ```
//!
//! Run an application with it:
//!
//! ```text
//! CORECLR_ENABLE_PROFILING=1
//! CORECLR_PROFILER={3C5E7B2A-41D6-4F0E-9B8C-6A1D2E3F4B5C}
//! CORECLR_PROFILER_PATH=/path/to/libjit_counter.so
//! dotnet app.dll
//! ```
//!
//! # Rules the types enforce, and the ones they cannot
//! - Callbacks are concurrent and keep arriving after `shutdown`: state must be `Sync`, and
//!   the profiler instance lives for the rest of the process (it is never dropped).
//! - Arguments borrowed from the runtime (slices, names, [`FunctionControl`]) are valid only
//!   during the callback; the borrow checker keeps them there.
//! - Unknown enumeration values and flag bits from newer runtimes are kept, never rejected.
//! - A loader that finds a wrong CLSID or path fails silently: the application simply runs
//!   unprofiled. Make the profiler announce itself if that matters.
#![warn(missing_docs)]

pub mod callback;
pub mod callback_interfaces;
pub mod com;
pub mod elt;
pub mod error;
pub mod export;
pub mod flags;
pub mod ids;
pub mod il;
pub mod info;
pub mod metadata;
pub mod stack;
pub mod types;
pub mod wide;

pub use callback::Profiler;
pub use clrprof_sys as sys;
pub use error::{Error, HResult, Result};
pub use export::{
    AssemblyReferenceProvider, Exported, FunctionControl, callback_versions_asked, instance,
    panics_caught,
};
pub use flags::{CodegenFlags, EventMask, HighEventMask};
pub use ids::*;
pub use info::ProfilerInfo;
pub use info::{FunctionInfo, ModuleInfo};
pub use metadata::{FunctionName, MetaDataImport, Namer};
pub use stack::{FixedStack, StackFrame, StackPool, SuspendedRuntime};
pub use types::*;
