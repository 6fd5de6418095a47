//! The requests waiting to be sent: a bounded queue, retried with exponential backoff and
//! jitter (or after the backend's `Retry-After`), where whatever is dropped is counted.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use crate::transport::{Outcome, Sender};

/// How many requests, and how many bytes, may wait; and how retries back off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    /// The most requests waiting (each is one period).
    pub max_requests: usize,
    /// The most bytes waiting, all requests together.
    pub max_bytes: usize,
    /// The wait after the first failure.
    pub first_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
}

impl Default for QueueLimits {
    /// Four periods, 8 MiB, backoff from 1 s doubling up to 60 s.
    fn default() -> Self {
        QueueLimits {
            max_requests: 4,
            max_bytes: 8 << 20,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// What became of the requests so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Requests accepted whole.
    pub accepted: u64,
    /// Requests accepted in part.
    pub partially_accepted: u64,
    /// Profiles the backend said it rejected in those.
    pub rejected_profiles: u64,
    /// Requests dropped because the queue was full (the oldest goes).
    pub dropped_full: u64,
    /// Requests dropped because the backend refused them for good (an HTTP status that is
    /// not retryable).
    pub dropped_refused: u64,
}

impl QueueCounts {
    /// Every request dropped, for whatever reason.
    pub fn dropped(&self) -> u64 {
        self.dropped_full + self.dropped_refused
    }
}

struct Waiting {
    request: Vec<u8>,
    failures: u32,
}

/// The requests waiting, oldest first.
pub struct RetryQueue {
    limits: QueueLimits,
    waiting: VecDeque<Waiting>,
    bytes: usize,
    not_before: Option<Instant>,
    counts: QueueCounts,
}

impl std::fmt::Debug for RetryQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryQueue")
            .field("limits", &self.limits)
            .field("waiting", &self.waiting.len())
            .field("bytes", &self.bytes)
            .field("counts", &self.counts)
            .finish()
    }
}

impl RetryQueue {
    /// An empty queue.
    pub fn new(limits: QueueLimits) -> RetryQueue {
        RetryQueue {
            limits: QueueLimits {
                max_requests: limits.max_requests.max(1),
                ..limits
            },
            waiting: VecDeque::new(),
            bytes: 0,
            not_before: None,
            counts: QueueCounts::default(),
        }
    }

    /// Queues one request. The oldest requests are dropped (and counted) until it fits; a
    /// request larger than the byte limit by itself is dropped.
    pub fn push(&mut self, request: Vec<u8>) {
        if request.len() > self.limits.max_bytes {
            self.counts.dropped_full += 1;
            return;
        }
        while self.waiting.len() >= self.limits.max_requests
            || self.bytes + request.len() > self.limits.max_bytes
        {
            let Some(oldest) = self.waiting.pop_front() else {
                break;
            };
            self.bytes -= oldest.request.len();
            self.counts.dropped_full += 1;
        }
        self.bytes += request.len();
        self.waiting.push_back(Waiting {
            request,
            failures: 0,
        });
    }

    /// How many requests wait.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// How many bytes wait.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// What became of the requests so far.
    pub fn counts(&self) -> QueueCounts {
        self.counts
    }

    /// When the next attempt is due (None: now, or nothing waits).
    pub fn next_attempt(&self) -> Option<Instant> {
        if self.waiting.is_empty() {
            None
        } else {
            self.not_before
        }
    }

    /// Sends the waiting requests in order, as long as the backend takes them and the backoff
    /// allows (at `now`). A retryable failure keeps the request at the head and sets the
    /// next attempt; any other outcome removes it. Returns the outcomes, in order.
    pub fn send_due(&mut self, sender: &dyn Sender, now: Instant) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        if self.not_before.is_some_and(|t| now < t) {
            return outcomes;
        }
        self.not_before = None;
        while let Some(head) = self.waiting.front_mut() {
            let outcome = sender.send(&head.request);
            if outcome.is_retryable() {
                head.failures += 1;
                let wait = match &outcome {
                    Outcome::Refused {
                        retry_after: Some(after),
                        ..
                    } => *after,
                    _ => backoff(&self.limits, head.failures),
                };
                self.not_before = Some(now + wait);
                outcomes.push(outcome);
                break;
            }
            let done = self.waiting.pop_front().expect("the head exists");
            self.bytes -= done.request.len();
            match &outcome {
                Outcome::Accepted => self.counts.accepted += 1,
                Outcome::PartiallyAccepted { rejected, .. } => {
                    self.counts.partially_accepted += 1;
                    self.counts.rejected_profiles += u64::try_from(*rejected).unwrap_or(0);
                }
                Outcome::Refused { .. } | Outcome::Unreachable { .. } => {
                    self.counts.dropped_refused += 1
                }
            }
            outcomes.push(outcome);
        }
        outcomes
    }
}

/// The wait after the `failures`-th failure in a row: `first_backoff` doubled each time, at most
/// `max_backoff`, then between 80% and 100% of that at random (so that many processes that
/// lost the same backend do not come back in step).
pub fn backoff(limits: &QueueLimits, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    let full = limits
        .first_backoff
        .saturating_mul(1u32 << doublings)
        .min(limits.max_backoff);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(failures);
    let fraction = 0.8 + 0.2 * (h.finish() % 1_000_001) as f64 / 1_000_000.0;
    full.mul_f64(fraction)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Answers with the outcomes given, in order, and remembers what it was sent.
    struct Script {
        outcomes: RefCell<VecDeque<Outcome>>,
        sent: RefCell<Vec<Vec<u8>>>,
    }

    impl Script {
        fn new(outcomes: Vec<Outcome>) -> Script {
            Script {
                outcomes: RefCell::new(outcomes.into()),
                sent: RefCell::new(Vec::new()),
            }
        }
    }

    impl Sender for Script {
        fn send(&self, request: &[u8]) -> Outcome {
            self.sent.borrow_mut().push(request.to_vec());
            self.outcomes
                .borrow_mut()
                .pop_front()
                .expect("a scripted outcome")
        }
    }

    fn refused(status: u16, retry_after: Option<u64>) -> Outcome {
        Outcome::Refused {
            status: crate::outcome::Refusal::Http(status),
            retry_after: retry_after.map(Duration::from_secs),
            message: String::new(),
        }
    }

    fn limits() -> QueueLimits {
        QueueLimits {
            max_requests: 3,
            max_bytes: 10,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(8),
        }
    }

    #[test]
    fn the_oldest_are_dropped_and_counted_when_full() {
        let mut q = RetryQueue::new(limits());
        for i in 0..5u8 {
            q.push(vec![i]);
        }
        assert_eq!((q.len(), q.bytes(), q.counts().dropped_full), (3, 3, 2));
        q.push(vec![9; 9]);
        assert_eq!((q.len(), q.bytes(), q.counts().dropped_full), (2, 10, 4));
        q.push(vec![0; 11]);
        assert_eq!((q.len(), q.counts().dropped_full), (2, 5), "too big alone");
        let script = Script::new(vec![Outcome::Accepted, Outcome::Accepted]);
        assert_eq!(q.send_due(&script, Instant::now()).len(), 2);
        assert_eq!(*script.sent.borrow(), [vec![4], vec![9; 9]]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_retryable_failure_waits_and_keeps_the_order() {
        let mut q = RetryQueue::new(limits());
        q.push(vec![1]);
        q.push(vec![2]);
        let t0 = Instant::now();
        let script = Script::new(vec![
            refused(503, None),
            refused(429, Some(5)),
            Outcome::Accepted,
            Outcome::PartiallyAccepted {
                rejected: 1,
                message: "x".into(),
            },
        ]);
        assert_eq!(q.send_due(&script, t0), [refused(503, None)]);
        let wait = q.next_attempt().unwrap() - t0;
        assert!(wait >= Duration::from_millis(800) && wait <= Duration::from_secs(1));
        assert!(q.send_due(&script, t0).is_empty(), "not due yet");
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(q.send_due(&script, t1), [refused(429, Some(5))]);
        assert_eq!(
            q.next_attempt(),
            Some(t1 + Duration::from_secs(5)),
            "Retry-After"
        );
        let t2 = t1 + Duration::from_secs(5);
        assert_eq!(q.send_due(&script, t2).len(), 2);
        assert_eq!(*script.sent.borrow(), [vec![1], vec![1], vec![1], vec![2]]);
        let c = q.counts();
        assert_eq!(
            (
                c.accepted,
                c.partially_accepted,
                c.rejected_profiles,
                c.dropped()
            ),
            (1, 1, 1, 0)
        );
        assert_eq!(q.next_attempt(), None);
    }

    #[test]
    fn a_final_refusal_drops_the_request_and_counts_it() {
        let mut q = RetryQueue::new(limits());
        q.push(vec![1]);
        q.push(vec![2]);
        let script = Script::new(vec![refused(400, None), Outcome::Accepted]);
        assert_eq!(q.send_due(&script, Instant::now()).len(), 2);
        assert_eq!(q.counts().dropped_refused, 1);
        assert_eq!(q.counts().accepted, 1);
    }

    #[test]
    fn backoff_doubles_up_to_its_limit_with_jitter() {
        let l = limits();
        for (failures, full) in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 8), (40, 8)] {
            let d = backoff(&l, failures);
            let full = Duration::from_secs(full);
            assert!(d <= full && d >= full.mul_f64(0.8), "{failures}: {d:?}");
        }
    }
}
