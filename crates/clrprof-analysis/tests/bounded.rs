//! Large traces load in bounded memory when samples are summed, and summing changes no
//! figure of the aggregate outputs.

use std::io::BufReader;

use clrprof_analysis::memory::HeapKeep;
use clrprof_analysis::output::{Json, Text};
use clrprof_analysis::trace::{LoadedTrace, SampleDetail, read_detail};
use clrprof_analysis::{Format, Query, report};
use clrprof_trace::{BlockWriter, FrameKind, Record, Sample, StackDef, ThreadState, example};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{Counting, peak_of};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Every aggregate output of `t`, as bytes.
fn outputs(t: &LoadedTrace) -> Vec<(String, Vec<u8>)> {
    let q = Query::default();
    let mut out = Vec::new();
    let mut text = Vec::new();
    report::write_text(
        t,
        &q,
        &Text {
            tree: true,
            ..Text::default()
        },
        &mut text,
    )
    .unwrap();
    out.push(("text".into(), text));
    let mut json = Vec::new();
    report::write_json(t, &q, &Json::default(), &mut json).unwrap();
    out.push(("json".into(), json));
    for format in [Format::Folded, Format::Pprof] {
        let mut bytes = Vec::new();
        format
            .renderer()
            .render(&clrprof_analysis::profile::of(t), &q, &mut bytes)
            .unwrap();
        out.push((format!("{format:?}"), bytes));
    }
    out
}

/// One test function, so that the counting allocator measures one load at a time.
#[test]
fn summed_samples_change_no_figure_and_keep_memory_bounded() {
    let bytes = example::blocked(9);
    let each = read_detail(&bytes[..], HeapKeep::Last, SampleDetail::Each).unwrap();
    let summed = read_detail(&bytes[..], HeapKeep::Last, SampleDetail::Summed).unwrap();
    for ((name, a), (_, b)) in outputs(&each).into_iter().zip(outputs(&summed)) {
        assert!(
            a == b,
            "{name} differs:\n{}\n---\n{}",
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b)
        );
    }

    // A million samples of 4 threads over 64 stacks, in a file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.clrprof");
    let mut w = BlockWriter::new(std::io::BufWriter::new(
        std::fs::File::create(&path).unwrap(),
    ))
    .unwrap();
    for r in example::records() {
        if !matches!(
            r,
            Record::Sample(_) | Record::SessionEnd(_) | Record::RecordingEnd(_)
        ) {
            w.write(&r).unwrap();
        }
    }
    for id in 4..68u32 {
        w.write(&Record::StackDef(StackDef {
            id,
            parent: id % 3 + 1,
            frame_kind: FrameKind::Managed,
            frame: 0x100 + u64::from(id % 3),
            il: Default::default(),
        }))
        .unwrap();
    }
    const SAMPLES: u64 = 1_000_000;
    for n in 0..SAMPLES {
        w.write(&Record::Sample(Sample {
            ts: n * 1000,
            tid: 7 + (n % 4) as u32,
            stack: (n % 64) as u32 + 4,
            cpu_ns: 1000,
            wall_ns: 1000,
            state: ThreadState::Cpu,
            ..Default::default()
        }))
        .unwrap();
    }
    w.finish().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();

    let load = |detail| {
        peak_of(|| {
            let file = BufReader::new(std::fs::File::open(&path).unwrap());
            let t = read_detail(file, HeapKeep::Last, detail).unwrap();
            let mut text = Vec::new();
            report::write_text(&t, &Query::default(), &Text::default(), &mut text).unwrap();
            clrprof_analysis::profile::of(&t)
                .threads
                .iter()
                .flat_map(|t| &t.samples)
                .map(|s| s.count)
                .sum::<u64>()
        })
    };
    let (n_summed, peak_summed) = load(SampleDetail::Summed);
    let (n_each, peak_each) = load(SampleDetail::Each);
    assert_eq!(n_summed, SAMPLES);
    assert_eq!(n_each, SAMPLES);
    // Summed: a few MiB whatever the number of samples (the file is tens of MB).
    assert!(
        peak_summed < 8 << 20,
        "summed: {peak_summed} bytes for a {size}-byte trace"
    );
    // Each: every sample is kept, twice over (the trace's and the profile's).
    assert!(
        peak_each as u64 > 2 * 32 * SAMPLES,
        "each: {peak_each} bytes for a {size}-byte trace"
    );
}
