//! Traces in checksummed blocks (format 2.x): what a reader returns from whole, cut and
//! damaged files.

mod common;

use clrprof_trace::{
    BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Event, EventKind, HEADER_LEN, Header, ReadError,
    Reader, Record, Sample, ThreadState,
};

/// `n` samples with timestamps 1000, 2000, ... and a few events between them.
fn records(n: u64) -> Vec<Record> {
    let mut out = common::small_records();
    for i in 1..=n {
        out.push(Record::Sample(Sample {
            ts: i * 1000,
            tid: 7,
            stack: 1,
            cpu_ns: i,
            wall_ns: 2 * i,
            state: ThreadState::Cpu,
            ..Default::default()
        }));
        if i % 7 == 0 {
            out.push(Record::Event(Event::new(
                i * 1000 + 1,
                7,
                EventKind::GARBAGE_COLLECTION_STARTED,
                &[1, 2],
            )));
        }
    }
    out
}

/// A block of a test trace: its byte range, and the range of record indexes it holds.
type BlockSpan = (usize, usize, usize, usize);

/// The trace, sealing a block after every `per_block` records; returns the bytes and its
/// blocks.
fn blocked(records: &[Record], per_block: usize) -> (Vec<u8>, Vec<BlockSpan>) {
    let mut w = BlockWriter::new(Vec::new()).unwrap();
    let mut blocks = Vec::new();
    let mut first = 0;
    let mut start = HEADER_LEN;
    for (i, r) in records.iter().enumerate() {
        w.write(r).unwrap();
        if (i + 1) % per_block == 0 || i + 1 == records.len() {
            w.seal().unwrap();
            let end = w.sealed_len() as usize;
            blocks.push((start, end, first, i + 1));
            start = end;
            first = i + 1;
        }
    }
    (w.finish().unwrap(), blocks)
}

/// Every record and every error, in order.
fn read_all(bytes: &[u8]) -> (Vec<Record>, Vec<ReadError>) {
    let Ok(reader) = Reader::new(bytes) else {
        return (Vec::new(), vec![Reader::new(bytes).err().unwrap()]);
    };
    let mut got = Vec::new();
    let mut errors = Vec::new();
    for item in reader {
        match item {
            Ok(r) => got.push(r),
            Err(e) => errors.push(e),
        }
    }
    (got, errors)
}

#[test]
fn reads_back_what_was_written_in_blocks() {
    let records = records(200);
    let (bytes, blocks) = blocked(&records, 16);
    assert_eq!(blocks.len(), records.len().div_ceil(16));
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header(), Header::FILE);
    assert_eq!(reader.header().minor, Header::CURRENT.minor);
    let got: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got, records);
    let stats = reader.block_stats().unwrap();
    assert_eq!(stats.good as usize, blocks.len());
    assert_eq!(stats.lost, 0);
    assert_eq!(reader.bytes_read(), bytes.len() as u64);
}

#[test]
fn the_writer_closes_blocks_at_the_target_size() {
    let records = records(20_000);
    let mut w = BlockWriter::new(Vec::new()).unwrap();
    for r in &records {
        w.write(r).unwrap();
    }
    let bytes = w.finish().unwrap();
    let mut at = HEADER_LEN;
    let mut seq = 0;
    let mut total = 0;
    while at < bytes.len() {
        let h = BlockHeader::parse(&bytes[at..]).unwrap();
        assert_eq!(h.seq, seq);
        assert!(h.len as usize <= clrprof_trace::BLOCK_TARGET_LEN);
        assert!(h.checks(&bytes[at + BLOCK_HEADER_LEN..at + BLOCK_HEADER_LEN + h.len as usize]));
        total += h.records;
        at += BLOCK_HEADER_LEN + h.len as usize;
        seq += 1;
    }
    assert_eq!(at, bytes.len());
    assert_eq!(total as usize, records.len());
    assert!(seq > 5, "{seq} blocks");
    // The first block starts with the definitions (no timestamp) and its first sample.
    let first = BlockHeader::parse(&bytes[HEADER_LEN..]).unwrap();
    assert_eq!(first.first_ts, 5);
}

#[test]
fn a_cut_at_every_offset_keeps_every_whole_block() {
    let records = records(60);
    let (bytes, blocks) = blocked(&records, 10);
    for cut in 0..bytes.len() {
        let (got, errors) = read_all(&bytes[..cut]);
        if cut < HEADER_LEN {
            assert_eq!(errors.len(), 1, "cut at {cut}");
            continue;
        }
        let whole = blocks.iter().filter(|b| b.1 <= cut).count();
        let kept = blocks.get(whole.wrapping_sub(1)).map_or(0, |b| b.3);
        assert_eq!(got, records[..kept], "cut at {cut}");
        let at_boundary = cut == HEADER_LEN || blocks.iter().any(|b| b.1 == cut);
        if at_boundary {
            assert!(errors.is_empty(), "cut at {cut}: {errors:?}");
        } else {
            assert_eq!(errors.len(), 1, "cut at {cut}: {errors:?}");
            let start = blocks[whole].0 as u64;
            match &errors[0] {
                ReadError::BlockTruncated {
                    offset, available, ..
                } => {
                    assert_eq!(*offset, start, "cut at {cut}");
                    assert_eq!(*available, cut as u64 - start, "cut at {cut}");
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_flipped_byte_loses_its_block_and_nothing_else() {
    let records = records(60);
    let (bytes, blocks) = blocked(&records, 10);
    for at in HEADER_LEN..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= flip;
            let (got, errors) = read_all(&damaged);
            let hit = blocks.iter().position(|b| b.0 <= at && at < b.1).unwrap();
            let (_, _, first, end) = blocks[hit];
            let expected: Vec<Record> = records[..first]
                .iter()
                .chain(&records[end..])
                .cloned()
                .collect();
            assert_eq!(got, expected, "byte {at} ^ {flip:#x}");
            assert_eq!(errors.len(), 1, "byte {at} ^ {flip:#x}: {errors:?}");
            let ReadError::Damaged {
                offset, blocks: n, ..
            } = &errors[0]
            else {
                panic!("byte {at} ^ {flip:#x}: {:?}", errors[0]);
            };
            assert_eq!(*offset, blocks[hit].0 as u64, "byte {at} ^ {flip:#x}");
            // Damage in the last block's header leaves no later block to count the loss by.
            let last_header = hit + 1 == blocks.len() && at < blocks[hit].0 + BLOCK_HEADER_LEN;
            let expected_n = if last_header { None } else { Some(1) };
            assert_eq!(*n, expected_n, "byte {at} ^ {flip:#x}");
        }
    }
}

#[test]
fn damage_across_blocks_is_skipped_to_the_next_good_block() {
    let records = records(60);
    let (bytes, blocks) = blocked(&records, 10);
    // Zero a stretch from the middle of block 1 to the middle of block 3.
    let (from, to) = (
        (blocks[1].0 + blocks[1].1) / 2,
        (blocks[3].0 + blocks[3].1) / 2,
    );
    let mut damaged = bytes.clone();
    damaged[from..to].fill(0);
    let (got, errors) = read_all(&damaged);
    let expected: Vec<Record> = records[..blocks[1].2]
        .iter()
        .chain(&records[blocks[4].2..])
        .cloned()
        .collect();
    assert_eq!(got, expected);
    let mut reader = Reader::new(&damaged[..]).unwrap();
    for _ in reader.by_ref() {}
    let stats = reader.block_stats().unwrap();
    assert_eq!(stats.lost, 3, "{errors:?}");
    assert_eq!(stats.good as usize, blocks.len() - 3);
    let lost: u32 = errors
        .iter()
        .map(|e| match e {
            ReadError::Damaged { blocks, .. } => blocks.unwrap(),
            other => panic!("{other:?}"),
        })
        .sum();
    assert_eq!(lost, 3);
}

#[test]
fn a_missing_block_is_counted() {
    let records = records(60);
    let (bytes, blocks) = blocked(&records, 10);
    let mut cut = bytes[..blocks[2].0].to_vec();
    cut.extend_from_slice(&bytes[blocks[3].0..]);
    let (got, errors) = read_all(&cut);
    let expected: Vec<Record> = records[..blocks[2].2]
        .iter()
        .chain(&records[blocks[3].2..])
        .cloned()
        .collect();
    assert_eq!(got, expected);
    assert!(
        matches!(
            errors[..],
            [ReadError::Damaged {
                len: 0,
                blocks: Some(1),
                ..
            }]
        ),
        "{errors:?}"
    );
    assert_eq!(
        errors[0].to_string(),
        format!(
            "damaged trace: blocks missing before byte {} (1 block)",
            blocks[2].0
        )
    );
}

#[test]
fn a_stream_decoder_refuses_a_file_in_blocks() {
    let (bytes, _) = blocked(&records(3), 2);
    let mut d = clrprof_trace::StreamDecoder::new();
    d.push(&bytes);
    let err = d.next_record().unwrap().unwrap_err();
    assert!(err.to_string().contains("checksummed blocks"), "{err}");
}

#[test]
fn skipped_kinds_come_out_of_blocks_without_their_payloads() {
    let written = records(40);
    let (bytes, _) = blocked(&written, 9);
    let events = written
        .iter()
        .filter(|r| matches!(r, Record::Event(_)))
        .count();
    assert!(events >= 5, "{events} events");
    let mut reader = Reader::new(&bytes[..]).unwrap();
    reader.skip_payloads(&[clrprof_trace::RecordKind::EVENT]);
    let got: Vec<Record> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), written.len());
    let mut passed_over = 0;
    for (got, written) in got.iter().zip(&written) {
        match written {
            Record::Event(_) => {
                assert_eq!(
                    got,
                    &Record::Unknown {
                        kind: clrprof_trace::RecordKind::EVENT,
                        payload: Vec::new()
                    }
                );
                passed_over += 1;
            }
            _ => assert_eq!(got, written),
        }
    }
    assert_eq!(passed_over, events);
    assert_eq!(reader.offset(), bytes.len() as u64);
}
