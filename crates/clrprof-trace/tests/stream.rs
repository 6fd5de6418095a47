//! The stream decoder: the same answers as the reader, whatever pieces the bytes come in.

mod common;

use clrprof_trace::{
    HEADER_LEN, Header, MAX_PAYLOAD_LEN, ReadError, Record, RecordKind, StreamDecoder,
};
use common::{decode_stream, encode, encode_with, record_ends, small_records};

#[test]
fn any_chunking_gives_the_records_and_their_exact_bytes() {
    let records = small_records();
    let bytes = encode(&records);
    for chunk in [1, 2, 3, 7, 8, 9, 16, 17, 100, bytes.len()] {
        let out = decode_stream(&bytes, chunk);
        let got: Vec<Record> = out.items.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, records, "chunk {chunk}");
        assert_eq!(out.raw, bytes[HEADER_LEN..], "chunk {chunk}");
        assert_eq!(out.finish, Ok(()));
    }
}

#[test]
fn offsets_header_and_pending() {
    let records = small_records();
    let bytes = encode(&records);
    let ends = record_ends(&records);
    let mut d = StreamDecoder::new();
    assert_eq!(d.header(), None);
    d.push(&bytes[..HEADER_LEN + 3]);
    assert!(d.next_record().is_none());
    assert_eq!(d.header(), Some(Header::CURRENT));
    assert_eq!(d.offset(), HEADER_LEN as u64);
    assert_eq!(d.pending(), 3);
    d.push(&bytes[HEADER_LEN + 3..]);
    let mut offsets = Vec::new();
    while let Some(r) = d.next_record() {
        offsets.push(r.unwrap().offset);
    }
    let mut expected = vec![HEADER_LEN as u64];
    expected.extend(ends[..ends.len() - 1].iter().map(|&e| e as u64));
    assert_eq!(offsets, expected);
    assert_eq!(d.pending(), 0);
    assert_eq!(d.offset(), bytes.len() as u64);
}

#[test]
fn every_truncation_leaves_the_complete_records_and_finish_says_truncated() {
    let records = small_records();
    let bytes = encode(&records);
    let ends = record_ends(&records);
    for cut in 0..bytes.len() {
        for chunk in [1, 5, 64] {
            let out = decode_stream(&bytes[..cut], chunk);
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            let got: Vec<Record> = out.items.into_iter().map(Result::unwrap).collect();
            assert_eq!(got, records[..complete], "cut at {cut}");
            let at_boundary = cut == 0 || cut == HEADER_LEN || ends.contains(&cut);
            match out.finish {
                Ok(()) => assert!(at_boundary, "cut at {cut}"),
                Err(msg) => {
                    assert!(!at_boundary, "cut at {cut}");
                    assert!(msg.starts_with("truncated trace: "), "{msg}");
                }
            }
        }
    }
}

#[test]
fn finish_describes_the_incomplete_record() {
    let records = small_records();
    let bytes = encode(&records);
    let ends = record_ends(&records);
    let mut d = StreamDecoder::new();
    d.push(&bytes[..ends[1] + 10]);
    while d.next_record().is_some() {}
    let err = d.finish().unwrap_err();
    assert!(
        matches!(
            err,
            ReadError::Truncated { offset, kind: Some(RecordKind::EVENT), available: 10, .. }
                if offset == ends[1] as u64
        ),
        "{err:?}"
    );
    let mut d = StreamDecoder::new();
    d.push(&bytes[..ends[0] + 3]);
    while d.next_record().is_some() {}
    assert!(matches!(
        d.finish(),
        Err(ReadError::Truncated {
            kind: None,
            needed: 8,
            available: 3,
            ..
        })
    ));
    let mut d = StreamDecoder::new();
    d.push(b"CLRP");
    assert!(d.next_record().is_none());
    assert!(matches!(
        d.finish(),
        Err(ReadError::Truncated {
            offset: 0,
            needed: 16,
            available: 4,
            ..
        })
    ));
}

#[test]
fn a_bad_start_fails_early() {
    let mut d = StreamDecoder::new();
    d.push(b"GET / HTTP/1.1\r\n");
    let err = d.next_record().unwrap().err().unwrap();
    assert!(matches!(err, ReadError::NotATrace { .. }));
    assert!(
        err.to_string().contains("this looks like a text file"),
        "{err}"
    );
    assert!(d.has_failed());
    assert!(d.next_record().is_none());
    d.push(&encode(&small_records()));
    assert!(d.next_record().is_none());
    assert!(d.finish().is_ok());

    // Three bytes are enough to tell.
    let mut d = StreamDecoder::new();
    d.push(&[0x1f, 0x8b, 0x08]);
    let err = d.next_record().unwrap().err().unwrap();
    assert!(err.to_string().contains("gzip"), "{err}");

    // A correct prefix waits for more.
    let mut d = StreamDecoder::new();
    d.push(b"CLRPROF");
    assert!(d.next_record().is_none());
    assert!(!d.has_failed());
}

#[test]
fn a_newer_major_version_fails_and_a_newer_minor_is_kept() {
    let bytes = encode_with(
        Header {
            major: 4,
            minor: 0,
            flags: 0,
        },
        &small_records(),
    );
    let out = decode_stream(&bytes, 4);
    assert_eq!(out.items.len(), 1);
    let msg = out.items[0].as_ref().unwrap_err();
    assert!(
        msg.contains("written by a newer clrprof (format 4.0); this one reads 1.x"),
        "{msg}"
    );

    let header = Header {
        major: 1,
        minor: 9,
        flags: 0,
    };
    let mut records = small_records();
    records.push(Record::Unknown {
        kind: RecordKind(300),
        payload: vec![1, 2, 3],
    });
    let bytes = encode_with(header, &records);
    let mut d = StreamDecoder::new();
    d.push(&bytes);
    let mut got = Vec::new();
    while let Some(r) = d.next_record() {
        got.push(r.unwrap().record);
    }
    assert_eq!(d.header(), Some(header));
    assert_eq!(got, records);
}

#[test]
fn a_corrupt_payload_is_skipped_and_a_bad_length_is_fatal() {
    let records = small_records();
    let mut bytes = encode(&records);
    let ends = record_ends(&records);
    // The Event record (index 2) claims 9 args.
    let count_at = ends[1] + 8 + 14;
    bytes[count_at..count_at + 4].copy_from_slice(&9u32.to_le_bytes());
    let out = decode_stream(&bytes, 10);
    assert_eq!(out.items.len(), records.len());
    assert!(
        out.items[2]
            .as_ref()
            .unwrap_err()
            .contains("has 9 elements, more than the 8 allowed")
    );
    assert_eq!(out.items[3].as_ref().unwrap(), &records[3]);
    assert_eq!(out.finish, Ok(()));

    let mut bytes = encode(&records[..1]);
    bytes.extend_from_slice(&[33, 0, 0, 0]);
    bytes.extend_from_slice(&(MAX_PAYLOAD_LEN as u32 + 1).to_le_bytes());
    bytes.extend_from_slice(&encode(&records)[HEADER_LEN..]);
    let out = decode_stream(&bytes, 7);
    assert_eq!(out.items.len(), 2);
    assert!(out.items[1].as_ref().unwrap_err().contains("16 MiB"));
    assert_eq!(out.finish, Ok(()));
}

#[test]
fn agrees_with_the_reader_on_a_golden_trace() {
    let bytes = encode(&small_records());
    let from_reader: Vec<Record> = clrprof_trace::Reader::new(&bytes[..])
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let out = decode_stream(&bytes, 1);
    let from_stream: Vec<Record> = out.items.into_iter().map(Result::unwrap).collect();
    assert_eq!(from_reader, from_stream);
}

#[test]
fn copying_a_stream_through_a_writer_reproduces_it() {
    // What the CLI does: keep the agent's header, copy each checked record, append its own.
    let header = Header {
        major: 1,
        minor: 2,
        flags: 0,
    };
    let records = small_records();
    let bytes = encode_with(header, &records);
    let mut d = StreamDecoder::new();
    let mut writer = None;
    for piece in bytes.chunks(13) {
        d.push(piece);
        while let Some(raw) = d.next_record() {
            let raw = raw.unwrap();
            let w = writer.get_or_insert_with(|| {
                clrprof_trace::Writer::with_header(Vec::new(), raw.header).unwrap()
            });
            w.write_raw(raw.bytes).unwrap();
        }
    }
    d.finish().unwrap();
    assert_eq!(d.header(), Some(header));
    let end = Record::RecordingEnd(clrprof_trace::RecordingEnd {
        duration_ns: 5,
        exit_code: 0,
        signal: 0,
        agent_connected: true,
        clean: true,
    });
    let mut w = writer.unwrap();
    w.write(&end).unwrap();
    let copied = w.into_inner();
    let mut expected_records = records.clone();
    expected_records.push(end);
    assert_eq!(copied, encode_with(header, &expected_records));
}
