//! The little statistics the bench needs: medians, ranges and per-round ratios.

pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

pub fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let min = values.iter().copied().min_by(f64::total_cmp)?;
    let max = values.iter().copied().max_by(f64::total_cmp)?;
    Some((min, max))
}

pub fn per_round_ratios(values: &[f64], baseline: &[f64]) -> Vec<f64> {
    values
        .iter()
        .zip(baseline)
        .filter(|(_, b)| **b > 0.0)
        .map(|(v, b)| v / b)
        .collect()
}

/// Median, min and max of the per-round ratios of `values` to `baseline` (NaN when empty).
pub fn ratio_summary(values: &[f64], baseline: &[f64]) -> (f64, f64, f64) {
    let ratios = per_round_ratios(values, baseline);
    let (lo, hi) = min_max(&ratios).unwrap_or((f64::NAN, f64::NAN));
    (median(&ratios).unwrap_or(f64::NAN), lo, hi)
}

pub fn per_round_deltas(values: &[f64], baseline: &[f64]) -> Vec<f64> {
    values.iter().zip(baseline).map(|(v, b)| v - b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
