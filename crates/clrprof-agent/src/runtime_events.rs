//! The agent's own EventPipe sessions on the runtime's event provider (ICorProfilerInfo12,
//! .NET 5+): the runtime delivers their events to the agent's `EventPipeEventDelivered`
//! callback, in process. On a runtime without them (CoreCLR 3.1) the CLI reads the same events
//! over the diagnostics socket instead.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use clrprof_events::RUNTIME_PROVIDER;
use clrprof_sdk::EventPipeProviderId;
use clrprof_sdk::flags::{EventMask, HighEventMask};
use clrprof_sdk::info::{EventPipeLevel, EventPipeProviderConfig, EventPipeSessionId};

use crate::session::Session;

/// The runtime provider's id once an event showed it (0: not known yet).
static RUNTIME: AtomicUsize = AtomicUsize::new(0);

/// Whether `provider` is the runtime's provider (asked once, then remembered).
pub fn is_runtime_provider(s: &Session, provider: EventPipeProviderId) -> bool {
    match RUNTIME.load(Ordering::Relaxed) {
        0 => {
            let is = s
                .info
                .event_pipe_get_provider_info(provider)
                .is_ok_and(|name| name == RUNTIME_PROVIDER);
            if is {
                RUNTIME.store(provider.0, Ordering::Relaxed);
            }
            is
        }
        known => known == provider.0,
    }
}

/// One in-process session on the runtime provider, for one kind of events.
pub struct RuntimeSession {
    /// The session while it runs (0: none).
    id: AtomicU64,
    /// Whether it started (the agent reads these events).
    started: AtomicBool,
    /// What it reads, for messages: "allocation ticks".
    what: &'static str,
}

impl RuntimeSession {
    /// A session not started yet, reading `what`.
    pub const fn new(what: &'static str) -> RuntimeSession {
        RuntimeSession {
            id: AtomicU64::new(0),
            started: AtomicBool::new(false),
            what,
        }
    }

    /// Starts the session on the runtime provider's `keywords` at `level`. A runtime without
    /// in-process sessions leaves the events to the CLI; one that refuses the session too,
    /// with a warning. (After a detach, a new attach starts it again: what the last session
    /// did is forgotten.)
    pub fn start(&self, s: &Session, keywords: u64, level: EventPipeLevel) {
        self.started.store(false, Ordering::Release);
        let runtime = EventPipeProviderConfig {
            name: RUNTIME_PROVIDER,
            keywords,
            level,
            filter_data: None,
        };
        match s.info.event_pipe_start_session(&[runtime], false) {
            Ok(session) => {
                self.id.store(session.0, Ordering::Release);
                self.started.store(true, Ordering::Release);
            }
            // No ICorProfilerInfo12 (CoreCLR 3.1): the CLI reads them over the socket.
            Err(clrprof_sdk::Error::NotSupported { .. }) => {}
            Err(e) => s.warn(format!(
                "the runtime refused an in-process EventPipe session ({e}); reading the {} \
                 over the diagnostics socket instead",
                self.what
            )),
        }
    }

    /// Whether the session started: the agent reads these events.
    pub fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// What the agent needs of the runtime's callbacks while the session runs: stack
    /// snapshots, for the stacks it walks inside the events, on their threads.
    pub fn event_mask(&self) -> (EventMask, HighEventMask) {
        let low = if self.started() {
            EventMask::ENABLE_STACK_SNAPSHOT
        } else {
            EventMask::empty()
        };
        (low, HighEventMask::empty())
    }

    /// Stops the session, if one runs (at shutdown and detach).
    pub fn stop(&self, s: &Session) {
        let session = self.id.swap(0, Ordering::AcqRel);
        if session != 0
            && let Err(e) = s.info.event_pipe_stop_session(EventPipeSessionId(session))
        {
            s.warn(format!(
                "stopping the EventPipe session of the {} failed: {e}",
                self.what
            ));
        }
    }
}
