//! Feeds arbitrary bytes to the trace `Reader` and `StreamDecoder`.
//!
//! Beyond "never panics, never hangs, bounded memory" (libFuzzer's `-timeout` and
//! `-rss_limit_mb`), it checks that the two agree on every record stream (major version 1)
//! whose header the reader accepts, and that every record they decode encodes back to
//! something that decodes to the same record.
#![no_main]

use clrprof_trace::{Header, Reader, Record, StreamDecoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the size of the pieces the stream decoder gets.
    let (chunk, bytes) = match data.split_first() {
        Some((&c, rest)) => (usize::from(c) + 1, rest),
        None => (1, data),
    };

    let reader = Reader::new(bytes).ok();
    let stream = reader.as_ref().is_some_and(|r| !r.header().blocked());
    let from_reader: Option<Vec<Result<Record, String>>> =
        reader.map(|reader| reader.map(|item| item.map_err(|e| e.to_string())).collect());

    let mut decoder = StreamDecoder::new();
    let mut from_stream = Vec::new();
    for piece in bytes.chunks(chunk) {
        decoder.push(piece);
        while let Some(item) = decoder.next_record() {
            match item {
                Ok(raw) => {
                    assert_eq!(raw.bytes.len(), 8 + raw.payload.len());
                    from_stream.push(Ok(raw.record));
                }
                Err(e) => from_stream.push(Err(e.to_string())),
            }
        }
    }
    if let Err(e) = decoder.finish() {
        from_stream.push(Err(e.to_string()));
    }

    if let Some(from_reader) = &from_reader
        && stream
    {
        assert_eq!(
            from_reader, &from_stream,
            "reader and stream decoder disagree"
        );
    }

    for record in from_reader.iter().flatten().flatten() {
        let mut encoded = Header::CURRENT.to_bytes().to_vec();
        record.encode(&mut encoded);
        assert_eq!(encoded.len(), 16 + record.encoded_len());
        let back: Vec<Record> = Reader::new(&encoded[..])
            .expect("header")
            .collect::<Result<_, _>>()
            .expect("a re-encoded record reads back");
        assert_eq!(back.as_slice(), std::slice::from_ref(record));
    }
});
