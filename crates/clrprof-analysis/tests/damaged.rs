//! Cut and damaged traces, at every byte: the loader and the reports never panic, use memory
//! in proportion to the input, and never count a record of a damaged block.
//!
//! One test function, so that the counting allocator measures one input at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use clrprof_analysis::output::{Json, Text};
use clrprof_analysis::{Query, report, trace};
use clrprof_trace::{BLOCK_HEADER_LEN, BlockHeader, HEADER_LEN, Reader, Record, example};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Loads `bytes` and writes the text and JSON reports; returns the samples the profile counts
/// (`None` if the input is refused) and the most memory it took.
fn report_on(bytes: &[u8]) -> (Option<usize>, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let samples = trace::read(bytes).ok().map(|t| {
        let mut sink = Vec::new();
        report::write_text(&t, &Query::default(), &Text::default(), &mut sink).unwrap();
        sink.clear();
        report::write_json(&t, &Query::default(), &Json::default(), &mut sink).unwrap();
        t.profile().threads.iter().map(|t| t.samples.len()).sum()
    });
    (samples, PEAK.load(Ordering::Relaxed) - base)
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
