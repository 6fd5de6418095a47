//! Damage to a trace in checksummed blocks never shows as data.
//!
//! The input is read as a record stream (the records that decode are the trace's records);
//! they are written in blocks (a new block every `per_block` records), then the file is cut
//! or has one byte changed, as the input's first bytes say. Reading it back must give the
//! records of every block the damage did not touch, in order, and nothing else: a damaged
//! block is left out whole, a cut block too.
#![no_main]

use clrprof_trace::{BlockWriter, HEADER_LEN, Header, Reader, Record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let per_block = usize::from(data[0] % 8) + 1;
    let at = u32::from_le_bytes([data[1], data[2], data[3], 0]) as usize;
    let change = data[4];
    let cut = data[5] & 1 == 1;

    let mut stream = Header::CURRENT.to_bytes().to_vec();
    stream.extend_from_slice(&data[6..]);
    let Ok(reader) = Reader::new(&stream[..]) else {
        return;
    };
    let records: Vec<Record> = reader.filter_map(Result::ok).take(64).collect();

    let mut w = BlockWriter::new(Vec::new()).unwrap();
    let mut spans = Vec::new(); // (byte start, byte end, first record, end record)
    let (mut start, mut first) = (HEADER_LEN, 0);
    for (i, r) in records.iter().enumerate() {
        w.write(r).unwrap();
        if (i + 1) % per_block == 0 || i + 1 == records.len() {
            w.seal().unwrap();
            let end = w.sealed_len() as usize;
            spans.push((start, end, first, i + 1));
            (start, first) = (end, i + 1);
        }
    }
    let mut file = w.finish().unwrap();
    if file.len() <= HEADER_LEN {
        return;
    }
    let at = HEADER_LEN + at % (file.len() - HEADER_LEN);
    let hit = spans.iter().position(|s| s.0 <= at && at < s.1).unwrap();
    if cut {
        file.truncate(at);
    } else {
        if change == 0 {
            return;
        }
        file[at] ^= change;
    }

    let got: Vec<Record> = Reader::new(&file[..])
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    let (_, _, lost_from, lost_to) = spans[hit];
    let expected: Vec<&Record> = if cut {
        records[..lost_from].iter().collect()
    } else {
        records[..lost_from]
            .iter()
            .chain(&records[lost_to..])
            .collect()
    };
    let got: Vec<&Record> = got.iter().collect();
    assert_eq!(
        got,
        expected,
        "block {hit} of {} hit at byte {at}",
        spans.len()
    );
});
