//! `cargo xtask big-trace --from TRACE --size MB -o FILE`: makes a large trace out of a real
//! one, to measure `clrprof report` on it (BENCHMARKS.md, "Reading large traces"): the
//! recording's definitions, events and other records once, then its samples again and again,
//! each round shifted in time after the previous one, until the file has the size asked; then
//! the end of the session and of the recording.

use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result};
use clrprof_trace::{BlockWriter, Reader, Record};

/// Writes a trace of at least `size_mb` MB (10^6 bytes) to `out`, made from `from`.
pub fn run(from: &Path, size_mb: u64, out: &Path) -> Result<()> {
    let file =
        std::fs::File::open(from).with_context(|| format!("cannot open {}", from.display()))?;
    let reader = Reader::new(std::io::BufReader::new(file))?;
    let minor = reader.header().minor;
    let mut once = Vec::new();
    let mut samples = Vec::new();
    let mut ends = Vec::new();
    for record in reader {
        match record? {
            Record::Sample(s) => samples.push(s),
            r @ (Record::SessionEnd(_) | Record::RecordingEnd(_)) => ends.push(r),
            r => once.push(r),
        }
    }
    anyhow::ensure!(!samples.is_empty(), "{} has no samples", from.display());
    let first = samples.iter().map(|s| s.ts).min().unwrap_or(0);
    let span = samples.iter().map(|s| s.ts).max().unwrap_or(0) - first + 1_000_000;
    let target = size_mb * 1_000_000;

    let file =
        std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut w = BlockWriter::with_minor(BufWriter::with_capacity(1 << 20, file), minor)?;
    for r in &once {
        w.write(r)?;
    }
    let mut rounds = 0u64;
    let mut written = 0u64;
    while w.sealed_len() < target {
        let shift = rounds * span;
        for s in &samples {
            let mut s = *s;
            s.ts += shift;
            w.write(&Record::Sample(s))?;
        }
        written += samples.len() as u64;
        rounds += 1;
    }
    let total = rounds * span;
    for r in ends {
        w.write(&match r {
            Record::SessionEnd(mut e) => {
                e.ts = total;
                Record::SessionEnd(e)
            }
            Record::RecordingEnd(mut e) => {
                e.duration_ns = total;
                Record::RecordingEnd(e)
            }
            other => other,
        })?;
    }
    w.finish()?;
    let size = std::fs::metadata(out)?.len();
    println!(
        "big-trace: wrote {} ({size} bytes): {written} samples ({rounds} rounds of the {} in {}), {:.1} s of recording",
        out.display(),
        samples.len(),
        from.display(),
        total as f64 / 1e9
    );
    Ok(())
}
