//! Human-readable numbers for the text output.

use crate::query::Metric;

/// A duration in nanoseconds as `812 ns`, `12.34 us`, `5.67 ms` or `1.234 s`.
pub(crate) fn duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.2} us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.3} s", f / 1e9)
    }
}

/// A metric value: a duration for time metrics, a plain count otherwise.
pub(crate) fn value(metric: Metric, v: u64) -> String {
    if metric.is_time() {
        duration(v)
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0 ns");
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_500), "1.50 us");
        assert_eq!(duration(12_345_678), "12.35 ms");
        assert_eq!(duration(2_500_000_000), "2.500 s");
        assert_eq!(value(Metric::Samples, 42), "42");
    }
}
