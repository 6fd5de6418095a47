//! The thread that reads native modules for the sampler: a module's symbol table and unwind
//! sections take milliseconds to read (tens for the runtime's own library), and the sampler,
//! which must read every thread's captures before their rings fill, should not be the one to
//! wait for them.
//!
//! One thread, started when the first module is to be read, takes the modules in turn; when
//! the sampler's builder goes away it finishes the module at hand and ends, and the sampler
//! waits for it (the agent's code must not run on after a detach). (A thread per module cost
//! a thread's creation, stack and guard page each: about a tenth of the sampler's CPU on a
//! short program.)

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;

use crate::recorder::{sys, threads};
use crate::session::Session;
use crate::unwind::ModuleReader;

/// Hands modules to the reading thread.
#[derive(Default)]
pub(super) struct ModuleReading {
    thread: Option<(Sender<ModuleReader>, JoinHandle<()>)>,
}

impl ModuleReading {
    /// Has `reader`'s module read on the reading thread (started now if it is not yet), or here
    /// if no thread can be started. Its CPU is the profiler's, counted with the sampler's
    /// (`symbols_cpu_ns`).
    pub fn read(&mut self, session: &'static Session, reader: ModuleReader) {
        if self.thread.is_none() {
            self.thread = start(session);
        }
        let Some((queue, _)) = &self.thread else {
            reader.read();
            return;
        };
        if let Err(mpsc::SendError(reader)) = queue.send(reader) {
            self.stop();
            reader.read();
        }
    }

    /// Ends the reading thread (after the module at hand) and waits for it.
    fn stop(&mut self) {
        if let Some((queue, thread)) = self.thread.take() {
            drop(queue);
            let _ = thread.join();
        }
    }
}

impl Drop for ModuleReading {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the reading thread; `None` if it cannot be.
fn start(session: &'static Session) -> Option<(Sender<ModuleReader>, JoinHandle<()>)> {
    let (queue, modules) = mpsc::channel::<ModuleReader>();
    threads::spawn_agent_thread("clrprof-symbols", move || {
        let mut counted = 0;
        for reader in modules {
            reader.read();
            let used = sys::own_cpu_ns();
            session
                .sampler_stats
                .symbols_cpu_ns
                .fetch_add(used.saturating_sub(counted), Ordering::Relaxed);
            counted = used;
        }
    })
    .ok()
    .map(|thread| (queue, thread))
}
