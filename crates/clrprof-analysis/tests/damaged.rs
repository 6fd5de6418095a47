//! Cut and damaged traces, at every byte: the loader and the reports never panic, use memory
//! in proportion to the input, and never count a record of a damaged block.
//!
//! One test function, so that the counting allocator measures one input at a time.

use clrprof_analysis::output::{Json, Text};
use clrprof_analysis::{Query, report, trace};
use clrprof_trace::{BLOCK_HEADER_LEN, BlockHeader, HEADER_LEN, Reader, Record, example};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, peak_of};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Loads `bytes` and writes the text and JSON reports; returns the samples the profile counts
/// (`None` if the input is refused) and the most memory it took.
fn report_on(bytes: &[u8]) -> (Option<usize>, usize) {
    peak_of(|| {
        trace::read(bytes).ok().map(|t| {
            let mut sink = Vec::new();
            report::write_text(&t, &Query::default(), &Text::default(), &mut sink).unwrap();
            sink.clear();
            report::write_json(&t, &Query::default(), &Json::default(), &mut sink).unwrap();
            clrprof_analysis::profile::of(&t)
                .threads
                .iter()
                .map(|t| t.samples.len())
                .sum()
        })
    })
}

/// The samples among `records`.
fn samples(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Sample(_)))
        .count()
}

#[test]
fn every_cut_and_every_flipped_byte() {
    // The bound: a few MiB whatever the input (the inputs here are a few KiB).
    const BOUND: usize = 4 << 20;
    let all = samples(&example::records());
    for (name, bytes) in [
        ("stream", example::stream()),
        ("blocks", example::blocked(7)),
    ] {
        let (whole, _) = report_on(&bytes);
        assert_eq!(whole, Some(all), "{name}");
        for cut in 0..bytes.len() {
            let (got, peak) = report_on(&bytes[..cut]);
            assert!(peak < BOUND, "{name} cut at {cut}: {peak} bytes");
            if cut >= HEADER_LEN {
                assert!(got.unwrap() <= all, "{name} cut at {cut}");
            }
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            let (got, peak) = report_on(&damaged);
            assert!(peak < BOUND, "{name} byte {at}: {peak} bytes");
            if name == "blocks" && at >= HEADER_LEN {
                // Exactly the samples of the block that holds the byte are missing.
                let lost = samples_of_block_at(&bytes, at);
                assert_eq!(got, Some(all - lost), "{name} byte {at}");
            }
        }
    }
}

/// The samples in the block of `file` that holds byte `at`.
fn samples_of_block_at(file: &[u8], at: usize) -> usize {
    let mut start = HEADER_LEN;
    loop {
        let h = BlockHeader::parse(&file[start..]).unwrap();
        let end = start + BLOCK_HEADER_LEN + h.len as usize;
        if at < end {
            let mut one = file[..HEADER_LEN].to_vec();
            one.extend_from_slice(&file[start..end]);
            let records: Vec<Record> = Reader::new(&one[..])
                .unwrap()
                .filter_map(Result::ok)
                .collect();
            return samples(&records);
        }
        start = end;
    }
}
