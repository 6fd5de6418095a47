//! Attached sessions: the connection to `clrprof attach`, and detaching when it asks.
//!
//! The CLI asks for the detach by shutting down the writing half of its connection (or by going
//! away, which looks the same): a thread of the agent, `clrprof-control`, waits for that by
//! reading the connection. It then stops the sampler thread, restores the signal handler the
//! sampler installed, and calls `RequestProfilerDetach`, from its own thread as the API
//! requires (never inside a callback). The runtime stops sending callbacks, waits until no
//! thread is inside one (it checks after [`DETACH_CHECK_MS`] at the earliest), and calls
//! `ProfilerDetachSucceeded`. There the agent waits for the control thread to end, writes its
//! counters and `SessionEnd`, stops its writer thread and closes the connection: the CLI sees
//! the end of the stream and knows the detach is complete. That callback is the last agent code
//! that runs; then the runtime releases the profiler and unloads the library. No thread of the
//! agent is left, and no handler or hook points into it.

use std::io::Write;

use clrprof_trace::MessageLevel;
use clrprof_trace::callbacks;

use crate::cli_link::{self, FromCli};
use crate::features::Running;
use crate::recorder::capture;
use crate::start_error::StartError;

/// How long the runtime should wait before checking that no thread is inside the agent. The
/// runtime never checks sooner than 300 ms; passing 0 would make it wait 10 minutes.
pub const DETACH_CHECK_MS: u32 = 300;

/// Connects to the CLI's socket at `path` and writes the trace header: returns the sink for
/// the transport and the reading half for [`watch`].
#[cfg(unix)]
pub fn connect(path: &str) -> Result<(Box<dyn Write + Send>, FromCli), StartError> {
    let mut stream =
        std::os::unix::net::UnixStream::connect(path).map_err(|source| StartError::Connect {
            path: path.to_string(),
            source,
        })?;
    let from_cli = stream.try_clone().map_err(StartError::ShareConnection)?;
    clrprof_trace::write_header(&mut stream).map_err(StartError::WriteHeader)?;
    Ok((Box::new(stream), from_cli))
}

/// Attaching needs Unix sockets.
#[cfg(not(unix))]
pub fn connect(path: &str) -> Result<(Box<dyn Write + Send>, FromCli), StartError> {
    Err(StartError::NoUnixSockets {
        path: path.to_string(),
    })
}

/// Starts the thread that waits for the CLI to ask for the detach.
pub fn watch(running: &'static Running, from_cli: FromCli) {
    let session = &running.session;
    let handle = crate::recorder::threads::spawn_agent_thread("clrprof-control", move || {
        wait_for_detach_request(from_cli);
        let _ = running.request_detach();
    });
    match handle {
        Ok(handle) => *session.control.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle),
        Err(e) => session.message(
            MessageLevel::Error,
            format!("cannot start the control thread ({e}); the agent cannot detach"),
        ),
    }
}

/// Returns when the CLI shut down its side of the connection, sent anything, or went away.
fn wait_for_detach_request(from_cli: FromCli) {
    let _ = cli_link::read_byte(&from_cli, None);
}

impl Running {
    /// On the control thread: stops collecting and asks the runtime to unload the agent; true
    /// if the runtime agreed
    /// (it confirms with `ProfilerDetachSucceeded` later). In export mode the last period is
    /// sent first, as at exit.
    pub(crate) fn request_detach(&self) -> bool {
        // The sampler thread, and the EventPipe sessions of the agent's, which would call into
        // it after it is unloaded.
        self.stop_features();
        let session = &self.session;
        capture::uninstall();
        // The library stays loaded after the detach: the next attach must find every thread
        // slot free, not as this session left it.
        crate::recorder::threads::release_all();
        if session.config.export.is_some() {
            session.out.drain();
            crate::export::finish();
        }
        if let Err(e) = session.info.request_profiler_detach(DETACH_CHECK_MS) {
            session.message(
                MessageLevel::Error,
                format!("the runtime refused to detach the agent ({e}); it stays loaded, recording nothing"),
            );
            self.end("detach refused");
            session.out.close();
            return false;
        }
        true
    }

    /// In `ProfilerDetachSucceeded`, the last callback: finishes the trace and closes the
    /// connection, after the control thread has ended.
    pub fn detached(&self) {
        let session = &self.session;
        session.callback(callbacks::ProfilerDetachSucceeded {});
        let control = session
            .control
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(control) = control {
            let _ = control.join();
        }
        self.end("detach");
        session.out.close();
    }
}
