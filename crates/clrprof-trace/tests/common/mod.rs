//! Inputs shared by the integration tests.
#![allow(dead_code)]

use clrprof_trace::{
    Event, EventKind, FrameKind, FunctionDef, Header, Record, Sample, SessionStart, StackDef,
    StreamDecoder, ThreadState, Writer,
};

/// A few records of different kinds and sizes.
pub fn small_records() -> Vec<Record> {
    vec![
        Record::SessionStart(SessionStart {
            pid: 7,
            agent_version: "0.1.0".into(),
            runtime: "CoreCLR".into(),
            info_version: 15,
            callback_version: 11,
            start_unix_ns: 1,
            event_mask: 0x20,
            event_mask_high: 0,
            config: String::new(),
            command_line: "dotnet x.dll".into(),
        }),
        Record::FunctionDef(FunctionDef {
            id: 0x10,
            class: 0x20,
            module: 0x30,
            token: 0x0600_0001,
            type_name: "Program".into(),
            method_name: "Main".into(),
            signature: "(string[])".into(),
        }),
        Record::Event(Event::new(
            5,
            7,
            EventKind::JIT_COMPILATION_STARTED,
            &[0x10, 1],
        )),
        Record::StackDef(StackDef {
            id: 1,
            parent: 0,
            frame_kind: FrameKind::Managed,
            frame: 0x10,
            il: clrprof_trace::IlPosition::At(3),
        }),
        Record::Sample(Sample {
            ts: 6,
            tid: 7,
            stack: 1,
            cpu_ns: 10,
            wall_ns: 11,
            state: ThreadState::Blocked,
            ..Default::default()
        }),
    ]
}

/// Encodes a trace with the given header.
pub fn encode_with(header: Header, records: &[Record]) -> Vec<u8> {
    let mut w = Writer::with_header(Vec::new(), header).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.into_inner()
}

/// Encodes a current-version trace.
pub fn encode(records: &[Record]) -> Vec<u8> {
    encode_with(Header::CURRENT, records)
}

/// Byte offsets at which each record of `trace` ends.
pub fn record_ends(records: &[Record]) -> Vec<usize> {
    let mut end = clrprof_trace::HEADER_LEN;
    records
        .iter()
        .map(|r| {
            end += r.encoded_len();
            end
        })
        .collect()
}

/// What a stream decoder makes of `bytes` pushed in pieces of `chunk` bytes: the records
/// (or errors, as strings) in order, the raw bytes it handed back, and `finish`'s verdict.
pub struct StreamOutcome {
    pub items: Vec<Result<Record, String>>,
    pub raw: Vec<u8>,
    pub finish: Result<(), String>,
}

pub fn decode_stream(bytes: &[u8], chunk: usize) -> StreamOutcome {
    let mut d = StreamDecoder::new();
    let mut items = Vec::new();
    let mut raw = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        d.push(piece);
        while let Some(item) = d.next_record() {
            match item {
                Ok(r) => {
                    assert_eq!(r.bytes.len(), 8 + r.payload.len());
                    assert_eq!(r.kind, r.record.kind());
                    raw.extend_from_slice(r.bytes);
                    items.push(Ok(r.record));
                }
                Err(e) => items.push(Err(e.to_string())),
            }
        }
    }
    StreamOutcome {
        items,
        raw,
        finish: d.finish().map_err(|e| e.to_string()),
    }
}
