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

/// A count with thousands separators: `1,234,567`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(242_785), "242,785");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
