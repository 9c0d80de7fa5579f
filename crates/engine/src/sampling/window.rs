//! The value of a range aggregation over the samples of one window
//! `(t - range - offset, t - offset]`: counts, rates, sums, means,
//! quantiles and Prometheus' extrapolated counter rate.

use runakefli_logql::RangeOp;

/// The value of `op` over the points `w` of one window `(a, b]`.
pub(crate) fn aggregate(
    op: RangeOp,
    w: &[(i64, f64)],
    range_ns: i64,
    param: Option<f64>,
    unwrapped: bool,
    a: i64,
    b: i64,
) -> Option<f64> {
    let range_secs = range_ns as f64 / 1e9;
    let n = w.len() as f64;
    // Added in time order from zero, as Loki adds a window's samples.
    let sum = || w.iter().fold(0.0, |s, p| s + p.1);
    Some(match op {
        RangeOp::CountOverTime => n,
        RangeOp::Rate => {
            if unwrapped {
                sum() / range_secs
            } else {
                n / range_secs
            }
        }
        RangeOp::BytesOverTime | RangeOp::SumOverTime => sum(),
        RangeOp::BytesRate => sum() / range_secs,
        RangeOp::AvgOverTime => mean_over_time(w.iter().map(|p| p.1)),
        RangeOp::MinOverTime => {
            w.iter()
                .map(|p| p.1)
                .fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m })
        }
        RangeOp::MaxOverTime => {
            w.iter()
                .map(|p| p.1)
                .fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m })
        }
        RangeOp::StdvarOverTime | RangeOp::StddevOverTime => {
            let (mut mean, mut aux) = (0.0, 0.0);
            for (k, p) in w.iter().enumerate() {
                let delta = p.1 - mean;
                mean += delta / (k as f64 + 1.0);
                aux += delta * (p.1 - mean);
            }
            let var = aux / n;
            if op == RangeOp::StddevOverTime {
                var.sqrt()
            } else {
                var
            }
        }
        RangeOp::QuantileOverTime => {
            quantile(param.unwrap_or(f64::NAN), w.iter().map(|p| p.1).collect())
        }
        RangeOp::FirstOverTime => w[0].1,
        RangeOp::LastOverTime => w[w.len() - 1].1,
        RangeOp::RateCounter => return extrapolated_rate(w, a, b, range_secs),
        RangeOp::AbsentOverTime => return None,
    })
}

/// `avg_over_time` of a window's samples in time order, as Loki computes it
/// (its answers are matched to the last bit): a running mean that adds each
/// sample's share and takes away the mean's, `mean += v / n - mean / n`
/// (not `(v - mean) / n`, which rounds differently), and that an infinite
/// mean keeps against finite samples and infinities of its own sign.
fn mean_over_time(values: impl Iterator<Item = f64>) -> f64 {
    let (mut mean, mut n) = (0.0f64, 0.0f64);
    for v in values {
        n += 1.0;
        if mean.is_infinite() && (v.is_finite() || (v.is_infinite() && (mean > 0.0) == (v > 0.0))) {
            continue;
        }
        mean += v / n - mean / n;
    }
    mean
}

/// Prometheus' quantile with linear interpolation.
pub fn quantile(q: f64, mut v: Vec<f64>) -> f64 {
    if v.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    let n = v.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    // The values of ranks `lower` and `upper` in the total order (what a
    // full sort would put there; values equal in it are the same bits):
    // a selection, then the smallest of the values above it.
    let (lo, hi) = (lower as usize, upper as usize);
    let (_, &mut at_lower, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let at_upper = if hi == lo {
        at_lower
    } else {
        above
            .iter()
            .copied()
            .min_by(f64::total_cmp)
            .unwrap_or(at_lower)
    };
    at_lower * (1.0 - weight) + at_upper * weight
}

/// `rate_counter`: Prometheus' extrapolated counter rate over the window
/// `(a, b]` (nanosecond precision), in the order Prometheus 3 (and the Loki
/// the corpus was recorded from) applies its limits: a start gap past the
/// threshold first becomes half the sample spacing, and only then is it capped
/// by the distance to the counter's zero point. Fewer than two samples give
/// no value.
fn extrapolated_rate(w: &[(i64, f64)], a: i64, b: i64, range_secs: f64) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let first = w[0];
    let last = w[w.len() - 1];
    let mut result = last.1 - first.1;
    let mut prev = 0.0;
    for p in w {
        if p.1 < prev {
            result += prev;
        }
        prev = p.1;
    }
    let mut to_start = (first.0 - a) as f64 / 1e9;
    let mut to_end = (b - last.0) as f64 / 1e9;
    let sampled = (last.0 - first.0) as f64 / 1e9;
    if sampled <= 0.0 {
        return None;
    }
    let avg = sampled / (w.len() as f64 - 1.0);
    let threshold = avg * 1.1;
    if to_start >= threshold {
        to_start = avg / 2.0;
    }
    if result > 0.0 && first.1 >= 0.0 {
        let to_zero = sampled * (first.1 / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    if to_end >= threshold {
        to_end = avg / 2.0;
    }
    Some(result * ((sampled + to_start + to_end) / sampled) / range_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_counter_caps_by_zero_point_after_the_threshold() {
        let s = 1_000_000_000i64;
        // Samples 10 s apart from 0 to 20 (counter 30 -> 50): the start gap
        // of 100 s is past the threshold (11 s) and becomes 5 s; the zero
        // point (30 s away) does not cap it. The end gap of 0 s is kept.
        let w = [(100 * s, 30.0), (110 * s, 40.0), (120 * s, 50.0)];
        let got = extrapolated_rate(&w, 0, 120 * s, 120.0).unwrap();
        assert_eq!(got, 20.0 * ((20.0 + 5.0) / 20.0) / 120.0);
        // Counter 1 -> 21: the zero point (1 s before the first sample) caps
        // the 5 s.
        let w = [(100 * s, 1.0), (110 * s, 11.0), (120 * s, 21.0)];
        let got = extrapolated_rate(&w, 0, 120 * s, 120.0).unwrap();
        assert_eq!(got, 20.0 * ((20.0 + 1.0) / 20.0) / 120.0);
        // A reset adds the value before it; one sample gives nothing.
        let w = [(0, 5.0), (s, 8.0), (2 * s, 2.0)];
        let got = extrapolated_rate(&w, 0, 2 * s, 2.0).unwrap();
        assert_eq!(got, 5.0 * ((2.0 + 0.0 + 0.0) / 2.0) / 2.0);
        assert_eq!(extrapolated_rate(&[(s, 1.0)], 0, 2 * s, 2.0), None);
    }

    #[test]
    fn avg_over_time_takes_shares_as_loki() {
        let w = |v: &[f64]| -> Vec<(i64, f64)> {
            v.iter().enumerate().map(|(i, &x)| (i as i64, x)).collect()
        };
        let avg =
            |v: &[f64]| aggregate(RangeOp::AvgOverTime, &w(v), 60, None, true, -1, 10).unwrap();
        // `mean += v / n - mean / n` gives 0.3; `mean += (v - mean) / n`
        // would give 0.30000000000000004.
        let mut naive = 0.0;
        for (k, x) in [0.1, 0.2, 0.6].iter().enumerate() {
            naive += (x - naive) / (k as f64 + 1.0);
        }
        assert_eq!(naive, 0.30000000000000004);
        assert_eq!(avg(&[0.1, 0.2, 0.6]).to_bits(), 0.3f64.to_bits());
        // An infinite mean stays against finite samples and its own sign.
        assert_eq!(avg(&[f64::INFINITY, 1.0, f64::INFINITY]), f64::INFINITY);
        assert_eq!(avg(&[1.0, f64::NEG_INFINITY, 5.0]), f64::NEG_INFINITY);
        assert!(avg(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert!(avg(&[f64::INFINITY, f64::NAN]).is_nan());
    }

    #[test]
    fn sums_over_time_start_from_zero() {
        let w = [(0, -0.0), (1, -0.0)];
        let sum = aggregate(RangeOp::SumOverTime, &w, 60, None, true, -1, 10).unwrap();
        assert_eq!(sum.to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn quantiles_like_prometheus() {
        assert_eq!(quantile(0.5, vec![1.0, 3.0, 2.0]), 2.0);
        assert_eq!(quantile(0.0, vec![5.0, 1.0]), 1.0);
        assert_eq!(quantile(1.5, vec![1.0]), f64::INFINITY);
        assert_eq!(quantile(0.25, vec![0.0, 4.0]), 1.0);
    }

    #[test]
    fn quantiles_by_selection_equal_those_of_a_full_sort() {
        let sorted = |q: f64, mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            let rank = q * (n - 1.0);
            let lower = rank.floor().max(0.0);
            let upper = (lower + 1.0).min(n - 1.0);
            let w = rank - rank.floor();
            v[lower as usize] * (1.0 - w) + v[upper as usize] * w
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in [1usize, 2, 3, 7, 100, 1001] {
            let v: Vec<f64> = (0..len)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    match i % 11 {
                        0 => -0.0,
                        1 => 0.0,
                        2 => f64::NAN,
                        3 => f64::INFINITY,
                        _ => (x >> 40) as f64 / 7.0 - 1000.0,
                    }
                })
                .collect();
            for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0] {
                let (a, b) = (quantile(q, v.clone()), sorted(q, v.clone()));
                assert_eq!(a.to_bits(), b.to_bits(), "q {q} len {len}");
            }
        }
    }
}
