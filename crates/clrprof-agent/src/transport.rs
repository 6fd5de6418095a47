//! Getting records out of the process without ever making the program wait.
//!
//! Producers (callbacks on the program's threads, the sampler thread) append encoded records
//! to an in-memory buffer under a short lock (a copy of a few dozen bytes). A writer thread
//! swaps the buffer for an empty one every 10 to 100 ms (as often as a quarter of it fills at
//! the current pace, see [`drain_period`]) and writes it to the CLI's socket (or a file). If
//! the CLI is slow, the writer blocks, not the program: the buffer fills and further events
//! and samples are dropped and counted. Events and samples never make the buffer grow;
//! definitions (names) may grow it up to four times its size, because a trace without names
//! is much less useful than one missing a few events.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use clrprof_trace::{Allocation, Contention, Event, EventKind, Record, Sample};

use crate::recorder::termination;

/// How often the writer thread drains the buffer at the most: while records come fast enough
/// to fill a quarter of the buffer in that time (see [`drain_period`]).
const DRAIN_EVERY_MIN: Duration = Duration::from_millis(10);
/// How long the writer waits at the most between drains: while few records come. Sooner when
/// [`Transport::send_now`] (or a termination signal) wakes it.
///
/// Each wake-up of the writer costs it a sleep and a timer (on a virtual machine 30 us and
/// more of CPU): at a fixed 10 ms that was a third of the sampler's own CPU on a program
/// sampled at 100 Hz, for records that fill a megabyte buffer in minutes. A wake-up when the
/// buffer is half full was tried instead: the writer then kept up with bursts that a small
/// buffer must drop (the tests that check that every dropped event is counted need some).
const DRAIN_EVERY_MAX: Duration = Duration::from_millis(100);

/// The writer's next period after a drain that sent `sent` bytes of what came in `elapsed`:
/// the time the records take, at that pace, to fill a quarter of the `capacity` buffer,
/// between [`DRAIN_EVERY_MIN`] and [`DRAIN_EVERY_MAX`].
fn drain_period(sent: usize, elapsed: Duration, capacity: usize) -> Duration {
    if sent == 0 {
        return DRAIN_EVERY_MAX;
    }
    let quarter = (capacity / 4).max(1) as f64;
    let fill = elapsed.as_secs_f64() * quarter / sent as f64;
    Duration::from_secs_f64(
        fill.clamp(DRAIN_EVERY_MIN.as_secs_f64(), DRAIN_EVERY_MAX.as_secs_f64()),
    )
}

/// Counters of what went through, and what did not.
#[derive(Default)]
pub struct TransportStats {
    /// Events accepted into the buffer.
    pub events_written: AtomicU64,
    /// Events dropped because the buffer was full.
    pub events_dropped: AtomicU64,
    /// The same per event kind, so that a report can say which of its figures lost events.
    pub events_dropped_by_kind: DroppedByKind,
    /// Samples accepted.
    pub samples_written: AtomicU64,
    /// Samples dropped because the buffer was full.
    pub samples_dropped: AtomicU64,
    /// Allocation records accepted.
    pub allocations_written: AtomicU64,
    /// Allocation records dropped because the buffer was full.
    pub allocations_dropped: AtomicU64,
    /// Other records (names, call trees, ...) dropped at the hard limit.
    pub records_dropped: AtomicU64,
    /// The writer thread's id (0 until it runs), for its CPU time.
    pub writer_tid: AtomicU32,
    /// Bytes handed to the sink.
    pub bytes_sent: AtomicU64,
    /// Bytes lost because the sink failed (the CLI went away).
    pub bytes_lost: AtomicU64,
}

/// Events dropped, per [`EventKind`] slot (kinds beyond the table share the last counter).
pub struct DroppedByKind([AtomicU64; DroppedByKind::SLOTS]);

impl Default for DroppedByKind {
    fn default() -> Self {
        DroppedByKind(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl DroppedByKind {
    /// One counter per callback slot of `ICorProfilerCallback` through 11, and one for any
    /// later kind.
    const SLOTS: usize = 128;

    fn count(&self, kind: EventKind) {
        let i = usize::from(kind.0).min(Self::SLOTS - 1);
        self.0[i].fetch_add(1, Ordering::Relaxed);
    }

    /// `(kind, dropped)` for every kind that lost events.
    pub fn nonzero(&self) -> impl Iterator<Item = (EventKind, u64)> + '_ {
        self.0.iter().enumerate().filter_map(|(i, n)| {
            let n = n.load(Ordering::Relaxed);
            (n > 0).then_some((EventKind(i as u16), n))
        })
    }
}

struct Shared {
    buffer: Mutex<Vec<u8>>,
    capacity: usize,
    hard_capacity: usize,
    stats: TransportStats,
    stop: AtomicBool,
    /// The sink and a spare buffer; held by whoever is writing.
    sink: Mutex<(Box<dyn Write + Send>, Vec<u8>, bool)>,
}

/// The agent's outgoing record stream.
pub struct Transport {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Transport {
    /// Starts a transport writing to `sink`; `capacity` is the size of each of its two buffers.
    pub fn start(sink: Box<dyn Write + Send>, capacity: usize) -> Arc<Transport> {
        let shared = Arc::new(Shared {
            buffer: Mutex::new(Vec::with_capacity(capacity)),
            capacity,
            hard_capacity: capacity * 4,
            stats: TransportStats::default(),
            stop: AtomicBool::new(false),
            sink: Mutex::new((sink, Vec::with_capacity(capacity), true)),
        });
        let transport = Arc::new(Transport {
            shared,
            writer: Mutex::new(None),
        });
        let for_thread = Arc::clone(&transport);
        let handle = crate::recorder::threads::spawn_agent_thread("clrprof-writer", move || {
            for_thread
                .shared
                .stats
                .writer_tid
                .store(crate::recorder::sys::gettid(), Ordering::Release);
            termination::block_on_this_thread();
            termination::set_serving(true);
            let mut period = DRAIN_EVERY_MIN;
            let mut last = crate::recorder::sys::monotonic_ns();
            while !for_thread.shared.stop.load(Ordering::Acquire) {
                termination::writer_wait(period.as_nanos() as u64);
                // A termination signal's handler waits for what was recorded before it.
                let request = termination::writer_request();
                let sent = for_thread.drain();
                termination::writer_served(request);
                let now = crate::recorder::sys::monotonic_ns();
                let elapsed = Duration::from_nanos(now.saturating_sub(last));
                period = drain_period(sent, elapsed, capacity);
                last = now;
            }
            termination::set_serving(false);
        })
        .ok();
        *transport.writer.lock().unwrap_or_else(|e| e.into_inner()) = handle;
        transport
    }

    /// The CPU the writer thread has used so far (0 where it cannot be read).
    pub fn writer_cpu_ns(&self) -> u64 {
        match self.shared.stats.writer_tid.load(Ordering::Acquire) {
            0 => 0,
            tid => crate::recorder::sys::thread_cpu_ns(tid).unwrap_or(0),
        }
    }

    /// The counters.
    pub fn stats(&self) -> &TransportStats {
        &self.shared.stats
    }

    /// Appends an event; never allocates or grows the buffer.
    pub fn push_event(&self, event: &Event) {
        let mut bytes = [0u8; Event::MAX_ENCODED_LEN];
        let Some(n) = event.encode_into(&mut bytes) else {
            return;
        };
        let s = &self.shared;
        if self.append_bounded(&bytes[..n]) {
            s.stats.events_written.fetch_add(1, Ordering::Relaxed);
        } else {
            s.stats.events_dropped.fetch_add(1, Ordering::Relaxed);
            s.stats.events_dropped_by_kind.count(event.event);
        }
    }

    /// Appends a sample; never allocates or grows the buffer.
    pub fn push_sample(&self, sample: &Sample) {
        let mut bytes = [0u8; Sample::ENCODED_LEN];
        let Some(n) = sample.encode_into(&mut bytes) else {
            return;
        };
        let s = &self.shared;
        if self.append_bounded(&bytes[..n]) {
            s.stats.samples_written.fetch_add(1, Ordering::Relaxed);
        } else {
            s.stats.samples_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Appends an allocation; never allocates or grows the buffer. False if it was dropped;
    /// counted either way.
    pub fn push_allocation(&self, allocation: &Allocation) -> bool {
        let mut bytes = [0u8; Allocation::ENCODED_LEN];
        let sent = match allocation.encode_into(&mut bytes) {
            Some(n) => self.append_bounded(&bytes[..n]),
            None => false,
        };
        let counter = if sent {
            &self.shared.stats.allocations_written
        } else {
            &self.shared.stats.allocations_dropped
        };
        counter.fetch_add(1, Ordering::Relaxed);
        sent
    }

    /// Sends a contention record; false (and nothing sent) if the buffer is full.
    pub fn push_contention(&self, contention: &Contention) -> bool {
        let mut bytes = [0u8; Contention::ENCODED_LEN];
        match contention.encode_into(&mut bytes) {
            Some(n) => self.append_bounded(&bytes[..n]),
            None => false,
        }
    }

    fn append_bounded(&self, bytes: &[u8]) -> bool {
        let mut buf = self.shared.buffer.lock().unwrap_or_else(|e| e.into_inner());
        if buf.len() + bytes.len() > self.shared.capacity {
            return false;
        }
        buf.extend_from_slice(bytes);
        true
    }

    /// Has the writer send what is buffered now rather than at the end of its period: records
    /// the CLI waits for (the session's start, which tells it whether to start its own event
    /// sessions before the program runs).
    pub fn send_now(&self) {
        termination::wake_writer();
    }

    /// Appends any record (a name, a call tree node, a counter...). May grow the buffer up to
    /// its hard limit; beyond it the record is dropped and counted.
    pub fn push_record(&self, record: &Record) {
        let s = &self.shared;
        let mut buf = s.buffer.lock().unwrap_or_else(|e| e.into_inner());
        if buf.len() + record.encoded_len() > s.hard_capacity {
            s.stats.records_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        record.encode(&mut buf);
    }

    /// Appends a record, first writing out the buffer (on the calling thread) if the record
    /// would not fit. Never drops it: a record larger than the hard limit goes into the
    /// emptied buffer anyway. For bulk output at thread end and shutdown, never on the
    /// program's hot paths.
    pub fn push_record_or_drain(&self, record: &Record) {
        let s = &self.shared;
        let len = record.encoded_len();
        {
            let mut buf = s.buffer.lock().unwrap_or_else(|e| e.into_inner());
            if buf.len() + len <= s.hard_capacity {
                record.encode(&mut buf);
                return;
            }
        }
        self.drain();
        let mut buf = s.buffer.lock().unwrap_or_else(|e| e.into_inner());
        record.encode(&mut buf);
    }

    /// Writes out everything buffered so far (on the calling thread); returns how many bytes.
    pub fn drain(&self) -> usize {
        let s = &self.shared;
        let mut sink = s.sink.lock().unwrap_or_else(|e| e.into_inner());
        let (writer, spare, healthy) = &mut *sink;
        {
            let mut buf = s.buffer.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut *buf, spare);
        }
        let sent = spare.len();
        if sent == 0 {
            return 0;
        }
        if *healthy && writer.write_all(spare).and_then(|_| writer.flush()).is_ok() {
            s.stats
                .bytes_sent
                .fetch_add(spare.len() as u64, Ordering::Relaxed);
        } else {
            *healthy = false;
            s.stats
                .bytes_lost
                .fetch_add(spare.len() as u64, Ordering::Relaxed);
        }
        spare.clear();
        if spare.capacity() > s.capacity {
            spare.shrink_to(s.capacity);
        }
        sent
    }

    /// Stops the writer thread after a last drain. Records pushed afterwards are kept in
    /// memory until the next [`Transport::drain`] (the agent drains once more at the very end).
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let handle = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle {
            termination::wake_writer();
            let _ = handle.join();
        }
        self.drain();
    }
}

impl Transport {
    /// After [`Transport::stop`]: closes the sink (the CLI sees the end of the stream) and
    /// frees the buffers. Records pushed afterwards are dropped.
    pub fn close(&self) {
        self.stop();
        let s = &self.shared;
        {
            let mut sink = s.sink.lock().unwrap_or_else(|e| e.into_inner());
            *sink = (Box::new(std::io::sink()), Vec::new(), false);
        }
        *s.buffer.lock().unwrap_or_else(|e| e.into_inner()) = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrprof_trace::{Counter, EventKind, Reader};

    #[test]
    fn the_writer_drains_as_often_as_a_quarter_of_the_buffer_fills() {
        let ms = Duration::from_millis;
        // Nothing came: the longest wait.
        assert_eq!(drain_period(0, ms(10), 1 << 20), DRAIN_EVERY_MAX);
        // 64 KiB in 10 ms fills a quarter of 1 MiB in 40 ms.
        let p = drain_period(64 << 10, ms(10), 1 << 20);
        assert!(p > ms(39) && p < ms(41), "{p:?}");
        // A flood: as often as possible; a trickle: as seldom as allowed.
        assert_eq!(drain_period(1 << 20, ms(10), 1 << 20), DRAIN_EVERY_MIN);
        assert_eq!(drain_period(100, ms(100), 1 << 20), DRAIN_EVERY_MAX);
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn records_arrive_in_order_and_full_buffers_drop_and_count() {
        let out = Shared::default();
        let mut header = Vec::new();
        clrprof_trace::write_header(&mut header).unwrap();
        out.0.lock().unwrap().extend_from_slice(&header);
        let t = Transport::start(Box::new(out.clone()), 200);
        t.stop(); // no writer thread: everything below stays buffered until drained
        for i in 0..10u64 {
            t.push_event(&Event::new(i, 1, EventKind::EXCEPTION_THROWN, &[i, 2, 3]));
        }
        let written = t.stats().events_written.load(Ordering::Relaxed);
        let dropped = t.stats().events_dropped.load(Ordering::Relaxed);
        assert_eq!(written + dropped, 10);
        assert!(dropped > 0 && written > 0);
        t.push_record(&Record::Counter(Counter {
            ts: 1,
            name: "x".into(),
            value: 7,
        }));
        t.drain();
        let bytes = out.0.lock().unwrap().clone();
        let records: Vec<Record> = Reader::new(&bytes[..])
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(records.len() as u64, written + 1);
        for (i, r) in records.iter().take(written as usize).enumerate() {
            let Record::Event(e) = r else { panic!("{r:?}") };
            assert_eq!(e.ts, i as u64);
        }
        assert!(matches!(records.last(), Some(Record::Counter(c)) if c.value == 7));
    }
}
