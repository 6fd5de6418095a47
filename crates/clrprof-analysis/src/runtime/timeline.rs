//! Spans of runtime activity for the timeline (Chrome trace) view: what ran on which thread
//! from when to when, plus process-wide tracks for garbage collections and suspensions.
//! Names are resolved only when the timeline is written, so a span is a few words.

/// The most spans kept; later ones are counted in [`Timeline::dropped`].
pub const MAX_SPANS: usize = 2_000_000;

/// Where a span is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Track {
    /// An OS thread.
    Thread(u32),
    /// Process-wide: garbage collections.
    Gc,
    /// Process-wide: runtime suspensions.
    Suspensions,
}

/// What a span is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A method (JIT compilation, native call).
    Function(u64),
    /// An exception of a class, from throw to catcher.
    Exception(u64),
    /// A load: kind (`appdomain`, `assembly`, `module`, `class`) and id.
    Load(&'static str, u64),
    /// A garbage collection: generations mask and reason.
    Gc(u32, u64),
    /// A runtime suspension, by reason.
    Suspension(u64),
    /// A managed thread's life, by managed thread id.
    Thread(u64),
    /// A wait for a contended lock, by the lock object's class (0: unknown).
    Lock(u64),
}

/// One span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Where.
    pub track: Track,
    /// `thread`, `jit`, `load`, `exception`, `native`, `gc`, `suspension`, `lock`.
    pub category: &'static str,
    /// About what.
    pub subject: Subject,
    /// Start, nanoseconds since the session started.
    pub start_ns: u64,
    /// Length (0 for an instant).
    pub duration_ns: u64,
}

/// The spans of a trace, in the order they ended.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// The spans kept.
    pub spans: Vec<Span>,
    /// Spans not kept because there were more than [`MAX_SPANS`].
    pub dropped: u64,
}

impl Timeline {
    /// Keeps a span if there is room.
    pub fn push(&mut self, span: Span) {
        if self.spans.len() < MAX_SPANS {
            self.spans.push(span);
        } else {
            self.dropped += 1;
        }
    }
}
