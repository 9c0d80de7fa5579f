//! Discrete distributions that charge every draw to an information account:
//! each sample adds `-log2(probability of the outcome)` bits to a running total.

use crate::rng::Rng;

/// A running sum of information, in bits, over the draws charged to it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bits(pub f64);

impl Bits {
    /// Charges an outcome of probability `p` (0 < p <= 1).
    pub fn charge_prob(&mut self, p: f64) {
        self.0 -= p.log2();
    }
}

/// Draws a uniform integer in `[0, n)`, charging `log2 n` bits.
pub fn uniform(rng: &mut Rng, n: u64, bits: &mut Bits) -> u64 {
    if n > 1 {
        bits.0 += (n as f64).log2();
    }
    rng.below(n)
}

/// Draws `true` with probability `p`, charging the outcome.
pub fn bernoulli(rng: &mut Rng, p: f64, bits: &mut Bits) -> bool {
    let hit = rng.next_f64() < p;
    bits.charge_prob(if hit { p } else { 1.0 - p });
    hit
}

/// A categorical distribution over `0..n` given by weights, with the cost of each outcome.
#[derive(Clone, Debug)]
pub struct Table {
    cdf: Vec<f64>,
    cost: Vec<f64>,
}

impl Table {
    /// A table from non-negative weights; at least one weight must be positive.
    pub fn from_weights(weights: &[f64]) -> Self {
        let total: f64 = weights.iter().sum();
        assert!(total > 0.0, "a distribution needs a positive weight");
        let mut acc = 0.0;
        let mut cdf = Vec::with_capacity(weights.len());
        let mut cost = Vec::with_capacity(weights.len());
        for &w in weights {
            acc += w / total;
            cdf.push(acc);
            cost.push(if w > 0.0 {
                -(w / total).log2()
            } else {
                f64::INFINITY
            });
        }
        // Guard against rounding: from the last positive weight on, the cumulative
        // value is infinite so that every u < 1 lands on a positive-weight outcome.
        if let Some(last) = weights.iter().rposition(|&w| w > 0.0) {
            for c in &mut cdf[last..] {
                *c = f64::INFINITY;
            }
        }
        Table { cdf, cost }
    }

    /// Zipf over `n` ranks with exponent `s`: P(k) proportional to 1/(k+1)^s.
    pub fn zipf(n: usize, s: f64) -> Self {
        let w: Vec<f64> = (0..n).map(|k| 1.0 / ((k + 1) as f64).powf(s)).collect();
        Table::from_weights(&w)
    }

    /// Number of outcomes.
    pub fn len(&self) -> usize {
        self.cdf.len()
    }

    /// True when the table has no outcomes (never, for a constructed table).
    pub fn is_empty(&self) -> bool {
        self.cdf.is_empty()
    }

    /// Information content of outcome `i`, in bits.
    pub fn cost(&self, i: usize) -> f64 {
        self.cost[i]
    }

    /// Draws an outcome and charges its cost.
    pub fn sample(&self, rng: &mut Rng, bits: &mut Bits) -> usize {
        let u = rng.next_f64();
        // The first outcome whose cumulative probability exceeds u; zero-weight
        // outcomes repeat their predecessor's value and are never the first.
        let i = self.cdf.partition_point(|&c| c <= u);
        bits.0 += self.cost[i];
        i
    }
}

/// A long-tailed positive integer: an octave `k` drawn from a table, then a uniform
/// value in `[2^k, 2^(k+1))`. Octaves are disjoint, so each value has one exact probability.
#[derive(Clone, Debug)]
pub struct LogBuckets {
    lowest: u32,
    octave: Table,
}

impl LogBuckets {
    /// Octaves `lowest..lowest + weights.len()` with the given weights.
    pub fn new(lowest: u32, weights: &[f64]) -> Self {
        LogBuckets {
            lowest,
            octave: Table::from_weights(weights),
        }
    }

    /// A bell over octaves `lo..=hi` peaking at `peak` with width `sigma`, plus a thin
    /// flat tail of weight `tail` on every octave above the peak (the long tail).
    pub fn bell(lo: u32, hi: u32, peak: f64, sigma: f64, tail: f64) -> Self {
        let w: Vec<f64> = (lo..=hi)
            .map(|k| {
                let d = (k as f64 - peak) / sigma;
                (-0.5 * d * d).exp() + if k as f64 > peak { tail } else { 0.0 }
            })
            .collect();
        LogBuckets::new(lo, &w)
    }

    /// Draws a value, charging the octave and the `k` bits of the mantissa.
    pub fn sample(&self, rng: &mut Rng, bits: &mut Bits) -> u64 {
        let k = self.lowest + self.octave.sample(rng, bits) as u32;
        let base = 1u64 << k;
        base + uniform(rng, base, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_frequencies_follow_weights_and_costs_match() {
        let t = Table::from_weights(&[1.0, 0.0, 3.0]);
        let mut r = Rng::new(5);
        let mut b = Bits::default();
        let mut counts = [0u32; 3];
        for _ in 0..40_000 {
            counts[t.sample(&mut r, &mut b)] += 1;
        }
        assert_eq!(counts[1], 0);
        let f0 = counts[0] as f64 / 40_000.0;
        assert!((f0 - 0.25).abs() < 0.01, "{f0}");
        assert!((t.cost(0) - 2.0).abs() < 1e-12);
        // Average cost approaches the entropy of (1/4, 3/4) = 0.811 bits.
        let avg = b.0 / 40_000.0;
        assert!((avg - 0.8113).abs() < 0.01, "{avg}");
    }

    #[test]
    fn uniform_and_bernoulli_charge_exact_costs() {
        let mut r = Rng::new(9);
        let mut b = Bits::default();
        uniform(&mut r, 1024, &mut b);
        assert!((b.0 - 10.0).abs() < 1e-12);
        let mut b = Bits::default();
        uniform(&mut r, 1, &mut b);
        assert_eq!(b.0, 0.0);
        let mut b = Bits::default();
        let hit = bernoulli(&mut r, 0.5, &mut b);
        let _ = hit;
        assert!((b.0 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn log_buckets_stay_in_their_octaves() {
        let lb = LogBuckets::bell(3, 10, 6.0, 1.5, 0.01);
        let mut r = Rng::new(2);
        let mut b = Bits::default();
        for _ in 0..1000 {
            let v = lb.sample(&mut r, &mut b);
            assert!((8..2048).contains(&v), "{v}");
        }
        // At least the mantissa bits (>= 3 per draw) were charged.
        assert!(b.0 > 3000.0);
    }

    #[test]
    fn zipf_is_decreasing() {
        let z = Table::zipf(100, 1.1);
        assert!(z.cost(0) < z.cost(1) && z.cost(1) < z.cost(99));
        assert_eq!(z.len(), 100);
    }
}
