//! Everything in the agent that needs `unsafe`: raw system calls ([`sys`]), the initial-exec
//! TLS slots ([`tls`]), the registry of profiled threads ([`threads`]), trace mode's call
//! trees ([`cct`]) and hand-written hooks ([`hooks`]), sample mode's per-thread CPU clocks
//! ([`cpu_clock`]), its signal-based stack capture ([`capture`]) and capture queues
//! ([`ring`]), reads of exception objects ([`objects`]), the lock-free slot the session is
//! published in ([`published`]), the heap snapshot signal ([`snapshot_signal`]), and count
//! mode's counter memory ([`counters`]), the exit status handler ([`exit`]), and the handler that sends what is recorded before a
//! termination signal ends the process ([`termination`]). Every
//! `unsafe` block says why it is sound.

pub mod capture;
pub mod cct;
pub mod chains;
pub mod counters;
pub mod cpu_clock;
pub mod exit;
pub mod hooks;
pub mod objects;
pub mod published;
pub mod ring;
pub mod snapshot_signal;
pub mod sys;
pub mod termination;
pub mod threads;
pub mod tls;
