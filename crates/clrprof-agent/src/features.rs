//! A running session and the features it composes.
//!
//! The [`Session`] is the core every callback uses (the runtime's interface, the
//! configuration, the transport, names, stacks); each feature is a component beside it that
//! owns its state, asks for the runtime callbacks it needs and reports its own counters (the
//! [`Feature`] interface). The session knows its features only through that interface, so the
//! features depend on the session and never the other way round. [`Running`] holds the two for
//! the rest of the process; an attach after a detach publishes a new one, with new features.

use clrprof_sdk::flags::{EventMask, HighEventMask};

use crate::alloc_ticks::AllocTicks;
use crate::async_chains::AsyncChains;
use crate::cli_link::FromCli;
use crate::cli_sessions::CliSessions;
use crate::contention::ContentionEvents;
use crate::count::Counting;
use crate::coverage::Coverage;
use crate::heap;
use crate::sampler::Sampling;
use crate::session::{Feature, Session};

/// What a session does beside its core, each feature with its own state.
pub struct Features {
    /// Count mode's call counters, when on.
    pub count: Option<Counting>,
    /// Coverage's block counters, when on.
    pub coverage: Option<Coverage>,
    /// Async chains, when on.
    pub chains: Option<AsyncChains>,
    /// `--alloc ticks` read in process.
    pub alloc_ticks: AllocTicks,
    /// `--contention` read in process.
    pub contention: ContentionEvents,
    /// Heap snapshots, with the static fields they name.
    pub heap: heap::Snapshots,
    /// The sampler thread (sample, count and trace mode).
    pub sampling: Sampling,
    /// The wait for the CLI's event sessions (a launched agent on CoreCLR 3.1).
    pub cli_sessions: CliSessions,
}

impl Features {
    /// The features of a session whose count mode, coverage and async chains (those that
    /// must be ready before the session starts) are these; `from_cli`: the reading half of a
    /// launched agent's connection to the CLI.
    pub fn new(
        count: Option<Counting>,
        coverage: Option<Coverage>,
        chains: Option<AsyncChains>,
        from_cli: Option<FromCli>,
    ) -> Features {
        Features {
            count,
            coverage,
            chains,
            alloc_ticks: AllocTicks::default(),
            contention: ContentionEvents::default(),
            heap: heap::Snapshots::default(),
            sampling: Sampling::default(),
            cli_sessions: CliSessions::new(from_cli),
        }
    }

    /// Every feature, in the order they stop and write their counters: the sampler first (it
    /// reads what the others keep), then the runtime's event sessions.
    pub fn all(&self) -> Vec<&dyn Feature> {
        let mut all: Vec<&dyn Feature> = vec![
            &self.sampling,
            &self.alloc_ticks,
            &self.contention,
            &self.heap,
            &self.cli_sessions,
        ];
        if let Some(c) = &self.count {
            all.push(c);
        }
        if let Some(c) = &self.coverage {
            all.push(c);
        }
        if let Some(c) = &self.chains {
            all.push(c);
        }
        all
    }

    /// The runtime callbacks the features need.
    pub fn event_mask(&self, s: &Session) -> (EventMask, HighEventMask) {
        self.all().iter().map(|f| f.event_mask(s)).fold(
            (EventMask::empty(), HighEventMask::empty()),
            |(l, h), (fl, fh)| (l | fl, h | fh),
        )
    }
}

/// A session and its features, for the rest of the process.
pub struct Running {
    /// The core every callback uses.
    pub session: Session,
    /// What the session does beside it.
    pub features: Features,
}

impl Running {
    /// Stops every feature's threads and runtime sessions (before a detach).
    pub fn stop_features(&self) {
        self.session.stop_features(&self.features.all());
    }

    /// Ends the session: stops the features, writes call trees and every counter, flushes.
    pub fn end(&self, reason: &str) {
        self.session.end(reason, &self.features.all());
    }
}
