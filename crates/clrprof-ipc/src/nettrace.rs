//! A reader of the nettrace format: the stream an EventPipe session sends back over the
//! diagnostics socket (format version 4, written by .NET Core 3.0 and later). Pure decoding,
//! no I/O, never panics: a stream cut short (the program crashed, the socket closed) yields
//! everything before the cut and says where it stopped.
//!
//! Layout, all little-endian:
//!
//! - the magic `Nettrace`, then the serializer's signature as a u32 length and the ASCII
//!   `!FastSerialization.1`;
//! - objects, each `BeginObject` (tag 5), its type (tag 5, tag 1 (null reference), u32
//!   version, u32 minimum reader version, u32 name length, the ASCII name, tag 6), its
//!   content, then `EndObject` (tag 6); the stream ends with a null reference tag (1);
//! - the `Trace` object's content: a 16-byte SYSTEMTIME, u64 timestamp of that time, u64
//!   timestamp frequency (ticks per second), u32 pointer size, u32 process id, u32 processor
//!   count, u32 CPU sampling rate;
//! - every other object (`EventBlock`, `MetadataBlock`, `StackBlock`, `SPBlock`) is a block:
//!   u32 size, padding to a multiple of 4 bytes from the start of the stream, then `size`
//!   bytes;
//! - `EventBlock` and `MetadataBlock`: u16 header size (counting itself), u16 flags (bit 0:
//!   compressed event headers), the rest of the header, then events. A compressed header is a
//!   flags byte and the fields that changed since the previous event of the block (bit 0:
//!   metadata id, varint; 1: sequence number delta - 1, capture thread id and processor
//!   number, varints; 2: thread id; 3: stack id; then always the timestamp delta; 4: activity
//!   id, 16 bytes; 5: related activity id; 6: sorted; 7: payload size, varint), then the
//!   payload. An uncompressed event is u32 size, u32 metadata id (high bit: sorted), u32
//!   sequence number, u64 thread id, u64 capture thread id, u32 processor, u32 stack id, u64
//!   timestamp, two 16-byte activity ids, u32 payload size, the payload, padded to 4 bytes;
//! - a `MetadataBlock` event's payload describes an event: u32 metadata id, the provider name
//!   (NUL-terminated UTF-16), u32 event id, the event name, u64 keywords, u32 version, u32
//!   level, then field descriptions (not read here);
//! - `StackBlock`: u32 id of its first stack, u32 count, then per stack a u32 byte length and
//!   the instruction pointers (pointer-sized);
//! - `SPBlock` (a sequence point): u64 timestamp, u32 thread count, then per thread a u64
//!   thread id and the u32 sequence number of the last event it tried to write.
//!
//! Two rules of the writer matter to a reader:
//!
//! - Stack ids are numbered again from 1 after every sequence point (the writer's stack
//!   cache restarts there): an event's stack id means the stack of that id defined since the
//!   last sequence point. Events are resolved to their stacks as they are read.
//! - Every thread numbers the events it writes 1, 2, 3, ... whether they reach the stream or
//!   are dropped (EventPipe drops events when its buffers are full). A gap in one capture
//!   thread's numbers, or a sequence point that names a higher number than the thread's last
//!   event, counts events lost; [`Nettrace::events_lost`] sums them.

use std::collections::HashMap;

use clrprof_events::bytes::{PointerSize, Reader, utf16_lossy};

/// What the `Trace` object says about the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceInfo {
    /// Wall-clock time of the session's start (the `Trace` object's SYSTEMTIME, UTC, to the
    /// millisecond), nanoseconds since the Unix epoch.
    pub sync_unix_ns: u64,
    /// The timestamp of the session's start (in ticks of `frequency`).
    pub sync_timestamp: u64,
    /// Timestamp ticks per second.
    pub frequency: u64,
    /// Size of a pointer in the traced process.
    pub pointer_size: u32,
    /// The traced process.
    pub process_id: u32,
}

/// An event's description, from a `MetadataBlock`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventMetadata {
    /// The provider, e.g. `Microsoft-Windows-DotNETRuntime`.
    pub provider: String,
    /// The event id within the provider.
    pub event_id: u32,
    /// The event's version (its payload layout).
    pub version: u32,
}

/// One event, with its payload and stack.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// Which [`EventMetadata`] describes it.
    pub metadata_id: u32,
    /// The OS thread that wrote it.
    pub thread_id: u64,
    /// When, in ticks of [`TraceInfo::frequency`].
    pub timestamp: u64,
    /// Its stack: an index into [`Nettrace::stacks`] (`None`: it has none, or its stack
    /// was not in the stream).
    pub stack: Option<u32>,
    /// The payload.
    pub payload: Vec<u8>,
}

/// What a stream held.
#[derive(Debug, Clone, Default)]
pub struct Nettrace {
    /// The `Trace` object, if the stream got that far.
    pub trace: Option<TraceInfo>,
    /// Event descriptions by metadata id.
    pub metadata: HashMap<u32, EventMetadata>,
    /// Every stack the stream defined, in stream order: instruction pointers, innermost
    /// first. (The stream's own stack ids restart at every sequence point; events refer to
    /// this table instead.)
    pub stacks: Vec<Vec<u64>>,
    /// The events [`parse`]'s filter kept, in stream order.
    pub events: Vec<Event>,
    /// Events the runtime numbered but did not write (its buffers were full), as the
    /// sequence numbers and sequence points show; of every provider of the session.
    pub events_lost: u64,
    /// Why reading stopped before the end-of-stream tag, if it did (the stream was cut
    /// short or is not nettrace); everything before that point is above.
    pub incomplete: Option<String>,
}

impl Nettrace {
    /// The description of `event`, if its metadata was seen.
    pub fn metadata_of(&self, event: &Event) -> Option<&EventMetadata> {
        self.metadata.get(&event.metadata_id)
    }

    /// The instruction pointers of `event`'s stack (empty if it has none).
    pub fn stack_of(&self, event: &Event) -> &[u64] {
        event
            .stack
            .and_then(|i| self.stacks.get(i as usize))
            .map_or(&[], Vec::as_slice)
    }
}

const MAGIC: &[u8] = b"Nettrace";
const SERIALIZER: &[u8] = b"!FastSerialization.1";
const TAG_NULL: u8 = 1;
const TAG_BEGIN: u8 = 5;
const TAG_END: u8 = 6;

/// Reads a nettrace stream. `keep` decides, from its description, whether an event is kept
/// (its payload copied); metadata and stacks are always kept. Never fails: a stream that
/// stops early or breaks the format yields what came before, with
/// [`incomplete`](Nettrace::incomplete) saying why.
pub fn parse(bytes: &[u8], keep: impl Fn(&EventMetadata) -> bool) -> Nettrace {
    let mut out = Nettrace::default();
    let mut cur = Cursor::new(bytes);
    let mut state = State::default();
    if let Err(e) = read_stream(&mut cur, &mut out, &mut state, &keep) {
        out.incomplete = Some(format!("{e} (at byte {} of {})", cur.pos(), bytes.len()));
    }
    out
}

/// What the reader keeps between blocks.
#[derive(Default)]
struct State {
    /// The stacks defined since the last sequence point: the stream's id to the index in
    /// [`Nettrace::stacks`].
    region_stacks: HashMap<u32, u32>,
    /// The sequence number of each capture thread's last event.
    sequences: HashMap<u64, u32>,
}

impl State {
    /// Notes an event's sequence number; returns how many events of its thread were lost
    /// before it.
    fn sequence(&mut self, capture_thread: u64, sequence: u32) -> u64 {
        let last = self.sequences.insert(capture_thread, sequence);
        match last {
            // A thread numbering from 1 again is a new thread with a reused id.
            Some(last) if sequence != 1 => u64::from(sequence.wrapping_sub(last).wrapping_sub(1)),
            Some(_) => 0,
            // Every thread numbers its events of a session from 1.
            None => u64::from(sequence.saturating_sub(1)),
        }
    }

    /// A sequence point: each thread's last number at that time. Returns the events lost.
    fn sequence_point(&mut self, threads: impl Iterator<Item = (u64, u32)>) -> u64 {
        self.region_stacks.clear();
        let mut lost = 0;
        for (thread, sequence) in threads {
            let last = self.sequences.entry(thread).or_insert(0);
            // Numbers wrap after 2^32 - 1; a point behind the last event seen says nothing.
            let ahead = sequence.wrapping_sub(*last);
            if ahead < u32::MAX / 2 {
                lost += u64::from(ahead);
                *last = sequence;
            }
        }
        lost
    }
}

fn read_stream(
    cur: &mut Cursor<'_>,
    out: &mut Nettrace,
    state: &mut State,
    keep: &impl Fn(&EventMetadata) -> bool,
) -> Result<(), &'static str> {
    if cur.take(MAGIC.len())? != MAGIC {
        return Err("not a nettrace stream (no `Nettrace` magic)");
    }
    let len = cur.u32()? as usize;
    if cur.take(len)? != SERIALIZER {
        return Err("unknown serializer (expected `!FastSerialization.1`)");
    }
    loop {
        match cur.u8()? {
            TAG_NULL => return Ok(()),
            TAG_BEGIN => {}
            _ => return Err("expected the start of an object"),
        }
        let name = read_type(cur)?;
        if name == b"Trace" {
            out.trace = Some(read_trace(cur)?);
        } else {
            let size = cur.u32()? as usize;
            cur.align4()?;
            let content = cur.take(size)?;
            match name {
                b"EventBlock" => read_event_block(content, out, state, Some(keep))?,
                b"MetadataBlock" => read_event_block(content, out, state, None::<&fn(&_) -> bool>)?,
                b"StackBlock" => read_stack_block(content, out, state)?,
                b"SPBlock" => read_sequence_point(content, out, state)?,
                _ => {}
            }
        }
        if cur.u8()? != TAG_END {
            return Err("expected the end of an object");
        }
    }
}

/// A type descriptor; returns the type's name.
fn read_type<'a>(cur: &mut Cursor<'a>) -> Result<&'a [u8], &'static str> {
    if cur.u8()? != TAG_BEGIN || cur.u8()? != TAG_NULL {
        return Err("malformed object type");
    }
    let _version = cur.u32()?;
    let _min_reader_version = cur.u32()?;
    let len = cur.u32()? as usize;
    let name = cur.take(len)?;
    if cur.u8()? != TAG_END {
        return Err("malformed object type");
    }
    Ok(name)
}

fn read_trace(cur: &mut Cursor<'_>) -> Result<TraceInfo, &'static str> {
    let mut time = [0u64; 8];
    for t in &mut time {
        *t = u64::from(cur.u16()?);
    }
    let sync_timestamp = cur.u64()?;
    let frequency = cur.u64()?;
    let pointer_size = cur.u32()?;
    let process_id = cur.u32()?;
    let _processors = cur.u32()?;
    let _sampling_rate = cur.u32()?;
    Ok(TraceInfo {
        sync_unix_ns: system_time_unix_ns(time),
        sync_timestamp,
        frequency,
        pointer_size,
        process_id,
    })
}

/// A SYSTEMTIME (year, month, day of week, day, hour, minute, second, millisecond), UTC, as
/// nanoseconds since the Unix epoch; 0 if it is before the epoch or not a date. A leap second
/// (60) counts as the second before it.
fn system_time_unix_ns([year, month, _, day, hour, minute, second, ms]: [u64; 8]) -> u64 {
    let field = |v: u64| i8::try_from(v).ok();
    let date_time = (|| {
        let time = jiff::civil::Time::new(
            field(hour)?,
            field(minute)?,
            field(second.min(59))?,
            i32::try_from(ms).ok()?.checked_mul(1_000_000)?,
        )
        .ok()?;
        let date =
            jiff::civil::Date::new(i16::try_from(year).ok()?, field(month)?, field(day)?).ok()?;
        jiff::tz::Offset::UTC
            .to_timestamp(date.to_datetime(time))
            .ok()
    })();
    date_time
        .and_then(|t| u64::try_from(t.as_nanosecond()).ok())
        .unwrap_or(0)
}

/// The event header state a compressed header changes.
#[derive(Default)]
struct Header {
    metadata_id: u32,
    sequence: u32,
    capture_thread: u64,
    thread_id: u64,
    stack_id: u32,
    timestamp: u64,
    payload_size: usize,
}

/// An `EventBlock` (with `keep`) or a `MetadataBlock` (without).
fn read_event_block<K: Fn(&EventMetadata) -> bool>(
    content: &[u8],
    out: &mut Nettrace,
    state: &mut State,
    keep: Option<&K>,
) -> Result<(), &'static str> {
    let mut cur = Cursor::new(content);
    let header_size = usize::from(cur.u16()?);
    let flags = cur.u16()?;
    if header_size < 4 {
        return Err("block header too small");
    }
    cur.take(header_size - 4)?;
    let compressed = flags & 1 != 0;
    let mut h = Header::default();
    while cur.pos() < content.len() {
        let payload = if compressed {
            read_compressed_header(&mut cur, &mut h)?;
            cur.take(h.payload_size)?
        } else {
            read_uncompressed_event(&mut cur, &mut h)?
        };
        match keep {
            None => {
                let (id, meta) = read_metadata(payload)?;
                out.metadata.insert(id, meta);
            }
            Some(keep) => {
                out.events_lost += state.sequence(h.capture_thread, h.sequence);
                if out.metadata.get(&h.metadata_id).is_some_and(keep) {
                    out.events.push(Event {
                        metadata_id: h.metadata_id,
                        thread_id: h.thread_id,
                        timestamp: h.timestamp,
                        stack: state.region_stacks.get(&h.stack_id).copied(),
                        payload: payload.to_vec(),
                    });
                }
            }
        }
    }
    Ok(())
}

fn read_compressed_header(cur: &mut Cursor<'_>, h: &mut Header) -> Result<(), &'static str> {
    let flags = cur.u8()?;
    if flags & 1 != 0 {
        h.metadata_id = cur.varint32()?;
    }
    if flags & 2 != 0 {
        h.sequence = h.sequence.wrapping_add(cur.varint32()?);
        h.capture_thread = cur.varint64()?;
        let _processor = cur.varint32()?;
    }
    if h.metadata_id != 0 {
        h.sequence = h.sequence.wrapping_add(1);
    }
    if flags & 4 != 0 {
        h.thread_id = cur.varint64()?;
    }
    if flags & 8 != 0 {
        h.stack_id = cur.varint32()?;
    }
    h.timestamp = h.timestamp.wrapping_add(cur.varint64()?);
    if flags & 16 != 0 {
        cur.take(16)?;
    }
    if flags & 32 != 0 {
        cur.take(16)?;
    }
    if flags & 128 != 0 {
        h.payload_size = cur.varint32()? as usize;
    }
    Ok(())
}

fn read_uncompressed_event<'a>(
    cur: &mut Cursor<'a>,
    h: &mut Header,
) -> Result<&'a [u8], &'static str> {
    let start = cur.pos();
    let size = cur.u32()? as usize;
    h.metadata_id = cur.u32()? & 0x7fff_ffff;
    h.sequence = cur.u32()?;
    h.thread_id = cur.u64()?;
    h.capture_thread = cur.u64()?;
    let _processor = cur.u32()?;
    h.stack_id = cur.u32()?;
    h.timestamp = cur.u64()?;
    cur.take(32)?;
    let payload_size = cur.u32()? as usize;
    let payload = cur.take(payload_size)?;
    let end = start
        .checked_add(4)
        .and_then(|e| e.checked_add(size))
        .ok_or("event size out of range")?;
    if end < cur.pos() {
        return Err("event size smaller than its contents");
    }
    cur.seek(end);
    cur.align4()?;
    Ok(payload)
}

fn read_metadata(payload: &[u8]) -> Result<(u32, EventMetadata), &'static str> {
    let mut cur = Cursor::new(payload);
    let id = cur.u32()?;
    let provider = cur.utf16z()?;
    let event_id = cur.u32()?;
    let _name = cur.utf16z()?;
    let _keywords = cur.u64()?;
    let version = cur.u32()?;
    Ok((
        id,
        EventMetadata {
            provider,
            event_id,
            version,
        },
    ))
}

fn read_stack_block(
    content: &[u8],
    out: &mut Nettrace,
    state: &mut State,
) -> Result<(), &'static str> {
    let pointer = PointerSize::from_bytes(out.trace.map_or(8, |t| t.pointer_size));
    let mut cur = Cursor::new(content);
    let first = cur.u32()?;
    let count = cur.u32()?;
    for i in 0..count {
        let len = cur.u32()? as usize;
        let mut ips = Reader::new(cur.take(len)?);
        // Whole pointers only: a last partial one is left out.
        let stack = std::iter::from_fn(|| ips.pointer(pointer)).collect();
        let index = u32::try_from(out.stacks.len()).map_err(|_| "too many stacks")?;
        out.stacks.push(stack);
        state.region_stacks.insert(first.wrapping_add(i), index);
    }
    Ok(())
}

fn read_sequence_point(
    content: &[u8],
    out: &mut Nettrace,
    state: &mut State,
) -> Result<(), &'static str> {
    let mut cur = Cursor::new(content);
    let _timestamp = cur.u64()?;
    let count = cur.u32()?;
    let mut threads = Vec::new();
    for _ in 0..count {
        threads.push((cur.u64()?, cur.u32()?));
    }
    out.events_lost += state.sequence_point(threads.into_iter());
    Ok(())
}

/// The stream's little-endian reader, a value cut short being an error.
struct Cursor<'a> {
    r: Reader<'a>,
}

const TRUNCATED: &str = "the stream ends in the middle of an object";

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor {
            r: Reader::new(bytes),
        }
    }

    fn pos(&self) -> usize {
        self.r.position()
    }

    fn seek(&mut self, pos: usize) {
        self.r.seek(pos);
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        self.r.bytes(n).ok_or(TRUNCATED)
    }

    fn u8(&mut self) -> Result<u8, &'static str> {
        self.r.u8().ok_or(TRUNCATED)
    }

    fn u16(&mut self) -> Result<u16, &'static str> {
        self.r.u16().ok_or(TRUNCATED)
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        self.r.u32().ok_or(TRUNCATED)
    }

    fn u64(&mut self) -> Result<u64, &'static str> {
        self.r.u64().ok_or(TRUNCATED)
    }

    fn align4(&mut self) -> Result<(), &'static str> {
        self.r.align(4).ok_or(TRUNCATED)
    }

    fn varint64(&mut self) -> Result<u64, &'static str> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("variable-length integer too long")
    }

    fn varint32(&mut self) -> Result<u32, &'static str> {
        u32::try_from(self.varint64()?).map_err(|_| "variable-length integer too large")
    }

    fn utf16z(&mut self) -> Result<String, &'static str> {
        self.r.utf16z().map(utf16_lossy).ok_or(TRUNCATED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds streams the way the runtime writes them.
    struct Builder {
        out: Vec<u8>,
    }

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend_from_slice(&[0, 0]);
        v
    }

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    impl Builder {
        fn new() -> Builder {
            let mut out = MAGIC.to_vec();
            out.extend_from_slice(&(SERIALIZER.len() as u32).to_le_bytes());
            out.extend_from_slice(SERIALIZER);
            Builder { out }
        }

        fn begin(&mut self, name: &str) {
            self.out
                .extend_from_slice(&[TAG_BEGIN, TAG_BEGIN, TAG_NULL]);
            self.out.extend_from_slice(&4u32.to_le_bytes());
            self.out.extend_from_slice(&4u32.to_le_bytes());
            self.out
                .extend_from_slice(&(name.len() as u32).to_le_bytes());
            self.out.extend_from_slice(name.as_bytes());
            self.out.push(TAG_END);
        }

        fn trace(&mut self) {
            self.begin("Trace");
            // 2021-03-04 (a Thursday) 05:06:07.089 UTC.
            for v in [2021u16, 3, 4, 4, 5, 6, 7, 89] {
                self.out.extend_from_slice(&v.to_le_bytes());
            }
            self.out.extend_from_slice(&1000u64.to_le_bytes());
            self.out.extend_from_slice(&1_000_000_000u64.to_le_bytes());
            self.out.extend_from_slice(&8u32.to_le_bytes());
            self.out.extend_from_slice(&4242u32.to_le_bytes());
            self.out.extend_from_slice(&2u32.to_le_bytes());
            self.out.extend_from_slice(&1000u32.to_le_bytes());
            self.out.push(TAG_END);
        }

        fn block(&mut self, name: &str, content: &[u8]) {
            self.begin(name);
            self.out
                .extend_from_slice(&(content.len() as u32).to_le_bytes());
            while !self.out.len().is_multiple_of(4) {
                self.out.push(0);
            }
            self.out.extend_from_slice(content);
            self.out.push(TAG_END);
        }

        fn finish(mut self) -> Vec<u8> {
            self.out.push(TAG_NULL);
            self.out
        }
    }

    fn block_header(compressed: bool) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&20u16.to_le_bytes());
        v.extend_from_slice(&u16::from(compressed).to_le_bytes());
        v.extend_from_slice(&[0; 16]);
        v
    }

    /// A compressed event: every field given; captured by thread 1 right after the block's
    /// previous event.
    fn compressed_event(
        meta: u32,
        thread: u64,
        stack: u32,
        ts_delta: u64,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut v = vec![1 | 2 | 4 | 8 | 64 | 128];
        varint(u64::from(meta), &mut v);
        varint(0, &mut v);
        varint(1, &mut v);
        varint(1, &mut v);
        varint(thread, &mut v);
        varint(u64::from(stack), &mut v);
        varint(ts_delta, &mut v);
        varint(payload.len() as u64, &mut v);
        v.extend_from_slice(payload);
        v
    }

    fn metadata_payload(id: u32, provider: &str, event_id: u32, version: u32) -> Vec<u8> {
        let mut v = id.to_le_bytes().to_vec();
        v.extend(utf16z(provider));
        v.extend_from_slice(&event_id.to_le_bytes());
        v.extend(utf16z(""));
        v.extend_from_slice(&1u64.to_le_bytes());
        v.extend_from_slice(&version.to_le_bytes());
        v.extend_from_slice(&5u32.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes()); // no fields
        v
    }

    fn sample_stream() -> Vec<u8> {
        let mut b = Builder::new();
        b.trace();
        let mut meta = block_header(true);
        meta.extend(compressed_event(
            0,
            0,
            0,
            5,
            &metadata_payload(1, "Provider-A", 10, 3),
        ));
        meta.extend(compressed_event(
            0,
            0,
            0,
            0,
            &metadata_payload(2, "Provider-B", 7, 0),
        ));
        b.block("MetadataBlock", &meta);
        let mut stacks = Vec::new();
        stacks.extend_from_slice(&1u32.to_le_bytes());
        stacks.extend_from_slice(&2u32.to_le_bytes());
        stacks.extend_from_slice(&16u32.to_le_bytes());
        stacks.extend_from_slice(&0x1000u64.to_le_bytes());
        stacks.extend_from_slice(&0x2000u64.to_le_bytes());
        stacks.extend_from_slice(&0u32.to_le_bytes());
        b.block("StackBlock", &stacks);
        let mut events = block_header(true);
        events.extend(compressed_event(1, 77, 1, 1500, b"abc"));
        // Only the timestamp changes: the header keeps the rest.
        events.extend_from_slice(&[0]);
        varint(10, &mut events);
        events.extend_from_slice(b"xyz");
        events.extend(compressed_event(2, 78, 2, 1, b"skip"));
        b.block("EventBlock", &events);
        // An uncompressed block with one event.
        let mut plain = block_header(false);
        let payload = b"hello";
        let size = 4 + 4 + 8 + 8 + 4 + 4 + 8 + 32 + 4 + payload.len();
        plain.extend_from_slice(&(size as u32).to_le_bytes());
        plain.extend_from_slice(&(1u32 | 0x8000_0000).to_le_bytes());
        plain.extend_from_slice(&1u32.to_le_bytes());
        plain.extend_from_slice(&99u64.to_le_bytes());
        plain.extend_from_slice(&99u64.to_le_bytes());
        plain.extend_from_slice(&0u32.to_le_bytes());
        plain.extend_from_slice(&0u32.to_le_bytes());
        plain.extend_from_slice(&5000u64.to_le_bytes());
        plain.extend_from_slice(&[0; 32]);
        plain.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        plain.extend_from_slice(payload);
        while !plain.len().is_multiple_of(4) {
            plain.push(0);
        }
        b.block("EventBlock", &plain);
        b.block("SPBlock", &[0; 12]);
        b.finish()
    }

    #[test]
    fn reads_trace_metadata_stacks_and_events() {
        let t = parse(&sample_stream(), |m| m.provider == "Provider-A");
        assert_eq!(t.incomplete, None);
        assert_eq!(
            t.trace,
            Some(TraceInfo {
                // date -u -d '2021-03-04 05:06:07.089' +%s%N
                sync_unix_ns: 1_614_834_367_089_000_000,
                sync_timestamp: 1000,
                frequency: 1_000_000_000,
                pointer_size: 8,
                process_id: 4242
            })
        );
        assert_eq!(
            t.metadata[&1],
            EventMetadata {
                provider: "Provider-A".into(),
                event_id: 10,
                version: 3
            }
        );
        assert_eq!(t.stacks, [vec![0x1000, 0x2000], vec![]]);
        assert_eq!(t.events.len(), 3, "{:?}", t.events);
        let e = &t.events[0];
        assert_eq!((e.thread_id, e.timestamp, e.stack), (77, 1500, Some(0)));
        assert_eq!(e.payload, b"abc");
        assert_eq!(t.stack_of(e), [0x1000, 0x2000]);
        let e = &t.events[1];
        assert_eq!((e.thread_id, e.timestamp, e.stack), (77, 1510, Some(0)));
        assert_eq!(e.payload, b"xyz");
        let e = &t.events[2];
        assert_eq!((e.thread_id, e.timestamp, e.stack), (99, 5000, None));
        assert_eq!(e.payload, b"hello");
        assert_eq!(t.events_lost, 0);
    }

    fn stack_block(first: u32, stacks: &[&[u64]]) -> Vec<u8> {
        let mut v = first.to_le_bytes().to_vec();
        v.extend_from_slice(&(stacks.len() as u32).to_le_bytes());
        for s in stacks {
            v.extend_from_slice(&(s.len() as u32 * 8).to_le_bytes());
            for ip in *s {
                v.extend_from_slice(&ip.to_le_bytes());
            }
        }
        v
    }

    fn sequence_point(threads: &[(u64, u32)]) -> Vec<u8> {
        let mut v = 0u64.to_le_bytes().to_vec();
        v.extend_from_slice(&(threads.len() as u32).to_le_bytes());
        for (thread, sequence) in threads {
            v.extend_from_slice(&thread.to_le_bytes());
            v.extend_from_slice(&sequence.to_le_bytes());
        }
        v
    }

    /// An event of metadata 1 on `thread` with sequence number `sequence` (the previous
    /// event of the block had `previous`).
    fn numbered_event(thread: u64, stack: u32, previous: u32, sequence: u32) -> Vec<u8> {
        let mut v = vec![1 | 2 | 4 | 8 | 128];
        varint(1, &mut v);
        // The writer's delta is modulo 2^32.
        varint(
            u64::from(sequence.wrapping_sub(previous).wrapping_sub(1)),
            &mut v,
        );
        varint(thread, &mut v);
        varint(0, &mut v);
        varint(thread, &mut v);
        varint(u64::from(stack), &mut v);
        varint(1, &mut v);
        varint(1, &mut v);
        v.push(b'p');
        v
    }

    fn metadata_block() -> Vec<u8> {
        let mut meta = block_header(true);
        meta.extend(compressed_event(
            0,
            0,
            0,
            0,
            &metadata_payload(1, "P", 1, 0),
        ));
        meta
    }

    #[test]
    fn stack_ids_start_again_after_a_sequence_point() {
        let mut b = Builder::new();
        b.trace();
        b.block("MetadataBlock", &metadata_block());
        b.block("StackBlock", &stack_block(1, &[&[0xa1], &[0xa2]]));
        let mut events = block_header(true);
        events.extend(numbered_event(7, 2, 0, 1));
        b.block("EventBlock", &events);
        b.block("SPBlock", &sequence_point(&[(7, 1)]));
        // The writer's stack cache restarted: id 1 is another stack now.
        b.block("StackBlock", &stack_block(1, &[&[0xb1]]));
        let mut events = block_header(true);
        events.extend(numbered_event(7, 1, 0, 2));
        events.extend(numbered_event(7, 2, 2, 3));
        b.block("EventBlock", &events);
        let t = parse(&b.finish(), |_| true);
        assert_eq!(t.incomplete, None);
        let stacks: Vec<&[u64]> = t.events.iter().map(|e| t.stack_of(e)).collect();
        // Stack 2 of the second region was never defined: no stack, not the old one.
        assert_eq!(stacks, [&[0xa2][..], &[0xb1], &[]]);
        assert_eq!(t.events_lost, 0);
    }

    #[test]
    fn gaps_in_sequence_numbers_count_lost_events() {
        let mut b = Builder::new();
        b.trace();
        b.block("MetadataBlock", &metadata_block());
        let mut events = block_header(true);
        // Thread 7: 1, 2, then 5 (3 and 4 lost).
        events.extend(numbered_event(7, 0, 0, 1));
        events.extend(numbered_event(7, 0, 1, 2));
        events.extend(numbered_event(7, 0, 2, 5));
        b.block("EventBlock", &events);
        // Thread 8: 1, 2, then a new thread with the same id starts at 1 again (none lost);
        // thread 10's first event is its third (1 and 2 lost).
        let mut events = block_header(true);
        events.extend(numbered_event(8, 0, 0, 1));
        events.extend(numbered_event(8, 0, 1, 2));
        events.extend(numbered_event(8, 0, 2, 1));
        events.extend(numbered_event(10, 0, 1, 3));
        b.block("EventBlock", &events);
        // The sequence point says thread 7 tried 9 events (6 to 9 lost) and thread 9, never
        // seen, 2 (both lost); thread 8's 1 is what was seen.
        b.block("SPBlock", &sequence_point(&[(7, 9), (8, 1), (9, 2)]));
        let t = parse(&b.finish(), |_| true);
        assert_eq!(t.incomplete, None);
        assert_eq!(t.events.len(), 7);
        assert_eq!(t.events_lost, 2 + 2 + 4 + 2);
    }

    #[test]
    fn every_truncation_keeps_what_came_before_and_never_panics() {
        let full = sample_stream();
        let mut last_events = 0;
        for len in 0..full.len() {
            let t = parse(&full[..len], |_| true);
            assert!(
                t.incomplete.is_some(),
                "prefix of {len} bytes looked complete"
            );
            assert!(t.events.len() >= last_events, "events lost at {len}");
            last_events = t.events.len();
        }
        assert_eq!(parse(&full, |_| true).events.len(), 4);
    }

    #[test]
    fn corrupted_bytes_never_panic() {
        let full = sample_stream();
        // A deterministic xorshift walk over single-byte corruptions.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut bytes = full.clone();
            let at = (x % bytes.len() as u64) as usize;
            bytes[at] = (x >> 32) as u8;
            let _ = parse(&bytes, |_| true);
        }
    }

    #[test]
    fn rejects_other_data() {
        let t = parse(b"GIF89a", |_| true);
        assert!(t.incomplete.is_some());
        assert!(t.trace.is_none());
    }

    #[test]
    fn system_times_outside_the_calendar_or_before_the_epoch_are_zero() {
        // date -u -d '2024-02-29 23:59:59.999' +%s%N
        let leap_day = [2024, 2, 4, 29, 23, 59, 59, 999];
        assert_eq!(system_time_unix_ns(leap_day), 1_709_251_199_999_000_000);
        // A leap second is the second before it.
        let leap_second = [2016, 12, 6, 31, 23, 59, 60, 0];
        assert_eq!(
            system_time_unix_ns(leap_second),
            system_time_unix_ns([2016, 12, 6, 31, 23, 59, 59, 0])
        );
        for bad in [
            [2023, 2, 0, 29, 0, 0, 0, 0],
            [2024, 13, 0, 1, 0, 0, 0, 0],
            [2024, 1, 0, 1, 24, 0, 0, 0],
            [2024, 1, 0, 1, 0, 0, 0, 1000],
            [1969, 12, 0, 31, 23, 59, 59, 0],
            [u64::MAX, 1, 0, 1, 0, 0, 0, 0],
        ] {
            assert_eq!(system_time_unix_ns(bad), 0, "{bad:?}");
        }
    }
}
