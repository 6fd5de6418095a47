//! The messages of pprof's `profile.proto`, from the crate that clrprof's pprof output and its
//! continuous profiling export share.

pub use clrprof_pprof::*;
