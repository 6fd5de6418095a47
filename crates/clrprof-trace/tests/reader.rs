//! Reading whole traces: what a reader accepts, and what it says about what it refuses.

mod common;

use clrprof_trace::{
    Event, EventKind, HEADER_LEN, Header, MAX_PAYLOAD_LEN, ReadError, Reader, Record, RecordKind,
    write_header,
};
use common::{encode, encode_with, record_ends, small_records};

fn read_all(bytes: &[u8]) -> (Vec<Record>, Option<ReadError>) {
    let reader = match Reader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut records = Vec::new();
    for item in reader {
        match item {
            Ok(r) => records.push(r),
            Err(e) => return (records, Some(e)),
        }
    }
    (records, None)
}

#[test]
fn reads_what_the_writer_wrote() {
    let records = small_records();
    let bytes = encode(&records);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header(), Header::CURRENT);
    assert_eq!(reader.offset(), HEADER_LEN as u64);
    let got: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, records);
    assert_eq!(reader.offset(), bytes.len() as u64);
    assert!(reader.next().is_none());
}

#[test]
fn skipped_kinds_come_out_without_their_payloads() {
    let records = small_records();
    let bytes = encode(&records);
    let skipped = records[1].kind();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    reader.skip_payloads(&[skipped]);
    let got: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), records.len());
    for (got, written) in got.iter().zip(&records) {
        if written.kind() == skipped {
            assert_eq!(
                got,
                &Record::Unknown {
                    kind: skipped,
                    payload: Vec::new()
                }
            );
        } else {
            assert_eq!(got, written);
        }
    }
    assert_eq!(reader.offset(), bytes.len() as u64);
    // A skipped record cut by the end of the file is still a truncation.
    let (_, err) = {
        let cut = &bytes[..record_ends(&records)[1] - 1];
        let mut reader = Reader::new(cut).unwrap();
        reader.skip_payloads(&[skipped]);
        let mut last = None;
        for item in reader {
            if let Err(e) = item {
                last = Some(e);
            }
        }
        ((), last)
    };
    assert!(matches!(err, Some(ReadError::Truncated { .. })), "{err:?}");
}

#[test]
fn write_header_matches_the_writer() {
    let mut out = Vec::new();
    write_header(&mut out).unwrap();
    assert_eq!(out, encode(&[]));
    let (records, err) = read_all(&out);
    assert!(records.is_empty());
    assert!(err.is_none());
}

#[test]
fn every_truncation_is_reported_as_truncated() {
    let records = small_records();
    let bytes = encode(&records);
    let ends = record_ends(&records);
    for cut in 0..bytes.len() {
        let (got, err) = read_all(&bytes[..cut]);
        // Every record that ends before the cut, and nothing else.
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(got, records[..complete], "cut at {cut}");
        let at_boundary = cut == HEADER_LEN || ends.contains(&cut);
        match err {
            None => assert!(at_boundary, "cut at {cut}: no error"),
            Some(ReadError::NotATrace { .. }) => assert_eq!(cut, 0),
            Some(ReadError::Truncated {
                offset,
                needed,
                available,
                kind,
            }) => {
                assert!(!at_boundary, "cut at {cut}");
                let start = if cut < HEADER_LEN {
                    0
                } else {
                    ends.iter()
                        .copied()
                        .filter(|&e| e <= cut)
                        .max()
                        .unwrap_or(HEADER_LEN)
                };
                assert_eq!(offset, start as u64, "cut at {cut}");
                assert_eq!(available, (cut - start) as u64, "cut at {cut}");
                assert!(needed > available);
                if cut >= start + 8 && cut >= HEADER_LEN {
                    assert_eq!(kind, Some(records[complete].kind()));
                    assert_eq!(needed, records[complete].encoded_len() as u64);
                } else {
                    assert_eq!(kind, None);
                }
            }
            Some(e) => panic!("cut at {cut}: unexpected error {e}"),
        }
    }
}

#[test]
fn text_json_and_gzip_are_not_traces() {
    let cases: [(&[u8], &str); 4] = [
        (b"Hello, this is a README.\n", "this looks like a text file"),
        (b"{\"traceEvents\": []}", "this looks like a JSON file"),
        (
            &[0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03],
            "this looks like a gzip file",
        ),
        (
            &[0x00, 0x01, 0x02, 0x03, 0xff, 0xfe, 0x80, 0x81, 0x00, 0x00],
            "instead of \"CLRPROF\\0\"",
        ),
    ];
    for (input, expect) in cases {
        let err = Reader::new(input).err().expect("refused");
        assert!(matches!(err, ReadError::NotATrace { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.starts_with("not a clrprof trace: it starts with "),
            "{msg}"
        );
        assert!(msg.contains(expect), "{msg}");
    }
    let err = Reader::new(&b""[..]).err().unwrap();
    assert_eq!(err.to_string(), "not a clrprof trace: the input is empty");
}

#[test]
fn a_future_major_version_is_unsupported() {
    let header = Header {
        major: 4,
        minor: 3,
        flags: 0,
    };
    let bytes = encode_with(header, &small_records());
    let err = Reader::new(&bytes[..]).err().unwrap();
    assert!(matches!(
        err,
        ReadError::UnsupportedVersion { major: 4, minor: 3 }
    ));
    assert!(
        err.to_string()
            .contains("written by a newer clrprof (format 4.3); this one reads 1.x, 2.x and 3.x"),
        "{err}"
    );
    let old = encode_with(
        Header {
            major: 0,
            minor: 9,
            flags: 0,
        },
        &[],
    );
    assert!(matches!(
        Reader::new(&old[..]),
        Err(ReadError::UnsupportedVersion { major: 0, .. })
    ));
}

#[test]
fn unknown_kinds_of_a_newer_minor_version_are_skipped_as_unknown() {
    let mut records = small_records();
    let unknown = Record::Unknown {
        kind: RecordKind(77),
        payload: vec![9; 21],
    };
    records.insert(2, unknown.clone());
    records.push(Record::Unknown {
        kind: RecordKind(1000),
        payload: Vec::new(),
    });
    let header = Header {
        major: 1,
        minor: 4,
        flags: 0,
    };
    let bytes = encode_with(header, &records);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header(), header);
    let got: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, records);
    let unknown_count = got.iter().filter(|r| !r.kind().is_known()).count();
    assert_eq!(unknown_count, 2);
}

#[test]
fn trailing_payload_bytes_from_a_newer_minor_version_are_ignored() {
    let records = small_records();
    let mut bytes = Header {
        major: 1,
        minor: 1,
        flags: 0,
    }
    .to_bytes()
    .to_vec();
    for r in &records {
        let mut rec = Vec::new();
        r.encode(&mut rec);
        let len = u32::from_le_bytes(rec[4..8].try_into().unwrap()) + 5;
        rec[4..8].copy_from_slice(&len.to_le_bytes());
        rec.extend_from_slice(b"newer");
        bytes.extend_from_slice(&rec);
    }
    let (got, err) = read_all(&bytes);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got, records);
}

#[test]
fn reserved_flags_are_ignored() {
    let records = small_records();
    let mut bytes = encode_with(
        Header {
            major: 1,
            minor: 0,
            flags: 0xffff_ffff,
        },
        &records,
    );
    bytes[HEADER_LEN + 2] = 0xab; // flags of the first record
    let (got, err) = read_all(&bytes);
    assert!(err.is_none());
    assert_eq!(got, records);
}

#[test]
fn a_corrupt_payload_is_reported_and_reading_goes_on() {
    let records = small_records();
    let mut bytes = encode(&records);
    let ends = record_ends(&records);
    // Record 1 is the FunctionDef: make its `type_name` invalid UTF-8.
    let function_at = ends[0];
    let type_name_at = function_at + 8 + 8 + 8 + 8 + 4 + 4;
    assert_eq!(&bytes[type_name_at..type_name_at + 7], b"Program");
    bytes[type_name_at] = 0xff;
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(reader.next().unwrap().unwrap(), records[0]);
    let err = reader.next().unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "corrupt trace at byte {type_name_at}: the Function record (kind 20) at byte \
             {function_at}: `type_name` (payload offset 32) is not valid UTF-8"
        )
    );
    let rest: Vec<Record> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(rest, records[2..]);
}

#[test]
fn a_payload_too_short_for_its_kind_is_corrupt() {
    let mut bytes = encode(&[]);
    // An Event record with a 10-byte payload: `tid` is cut.
    bytes.extend_from_slice(&32u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&10u32.to_le_bytes());
    bytes.extend_from_slice(&[0; 10]);
    let (got, err) = read_all(&bytes);
    assert!(got.is_empty());
    let err = err.unwrap();
    assert!(
        matches!(err, ReadError::Corrupt { offset: 32, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "corrupt trace at byte 32: the Event record (kind 32) at byte 16: the payload (10 bytes) \
         ends inside `tid`: it needs 4 bytes at payload offset 8, 2 are left"
    );
}

#[test]
fn a_length_over_the_limit_is_corrupt_and_ends_reading() {
    let mut bytes = encode(&small_records()[..1]);
    let at = bytes.len();
    bytes.extend_from_slice(&33u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&(MAX_PAYLOAD_LEN as u32 + 1).to_le_bytes());
    bytes.extend_from_slice(&encode(&small_records())[HEADER_LEN..]);
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert!(reader.next().unwrap().is_ok());
    let err = reader.next().unwrap().unwrap_err();
    assert!(matches!(err, ReadError::Corrupt { offset, .. } if offset == at as u64));
    assert!(
        err.to_string().contains("more than the 16 MiB limit"),
        "{err}"
    );
    assert!(reader.next().is_none());
}

#[test]
fn a_huge_declared_length_in_a_short_file_is_truncated_without_allocating_it() {
    let mut bytes = encode(&[]);
    bytes.extend_from_slice(&20u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    bytes.extend_from_slice(&(MAX_PAYLOAD_LEN as u32).to_le_bytes());
    bytes.extend_from_slice(&[1, 2, 3]);
    let (_, err) = read_all(&bytes);
    let err = err.unwrap();
    assert!(
        matches!(
            err,
            ReadError::Truncated { offset: 16, kind: Some(RecordKind::FUNCTION), needed, available: 11 }
                if needed == MAX_PAYLOAD_LEN as u64 + 8
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "truncated trace: the Function record (kind 20) at byte 16 needs {} bytes, but only \
             11 are left",
            MAX_PAYLOAD_LEN + 8
        )
    );
}

#[test]
fn event_args_survive_a_file() {
    let e = Event::new(1, 2, EventKind::GARBAGE_COLLECTION_STARTED, &[0b101, 1]);
    let bytes = encode(&[Record::Event(e)]);
    let (got, _) = read_all(&bytes);
    let [Record::Event(back)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(back.args(), [0b101, 1]);
    assert_eq!(
        back.event.arg_names(),
        ["generations_collected_mask", "reason"]
    );
}

/// An `io::Read` that fails after some bytes.
struct FailingReader<'a>(&'a [u8]);

impl std::io::Read for FailingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Err(std::io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.0.len()).min(5);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn io_errors_are_reported_once() {
    let bytes = encode(&small_records());
    let mut reader = Reader::new(FailingReader(&bytes[..40])).unwrap();
    let mut saw_io = false;
    for item in reader.by_ref() {
        if let Err(e) = item {
            assert!(matches!(e, ReadError::Io(_)));
            assert_eq!(e.to_string(), "cannot read the trace: disk on fire");
            saw_io = true;
        }
    }
    assert!(saw_io);
    assert!(reader.next().is_none());
}
