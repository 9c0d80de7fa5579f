//! The points one metric query holds in memory, against
//! [`QueryLimits::max_query_points`](crate::QueryLimits::max_query_points),
//! counted while the query runs.
//!
//! Two kinds of points count, each 16 bytes: the samples a range
//! aggregation collects while it scans (one per kept line, held until its
//! step values are made), and the step values of every series it makes
//! (one per series and step, whether the step has a value or not). Scans add
//! their samples once per batch they read, so a query stops within one
//! batch of the limit instead of after collecting everything; the samples
//! are given back once turned into step values. Later operators (vector
//! aggregations, binary operations) make no more series than their inputs
//! and are not counted again.

use crate::error::EngineError;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a new series of a scan costs besides its samples, in points (its
/// key, index entry and vector: about 128 bytes), so that a query making a
/// series of nearly every line (`sum by (id)`) is stopped by the limit too.
pub(crate) const SERIES_POINTS: usize = 8;

/// The points held by one query; shared by its parallel scans.
#[derive(Debug, Default)]
pub(crate) struct PointBudget {
    /// 0: no limit.
    max: usize,
    held: AtomicUsize,
}

impl PointBudget {
    /// A budget of `max` points (0: none).
    pub fn new(max: usize) -> Self {
        PointBudget {
            max,
            held: AtomicUsize::new(0),
        }
    }

    /// Takes `n` more points; false once the query holds more than allowed.
    pub fn take(&self, n: usize) -> bool {
        if self.max == 0 || n == 0 {
            return true;
        }
        let held = self.held.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        held <= self.max
    }

    /// [`PointBudget::take`], as the query's error.
    pub fn charge(&self, n: usize) -> Result<(), EngineError> {
        if self.take(n) {
            Ok(())
        } else {
            Err(self.exceeded())
        }
    }

    /// Gives back `n` points no longer held.
    pub fn give_back(&self, n: usize) {
        if self.max == 0 {
            return;
        }
        let _ = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {
                Some(h.saturating_sub(n))
            });
    }

    /// Points held now.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The error for a budget that ran out.
    pub fn exceeded(&self) -> EngineError {
        EngineError::PointsLimit(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_taken_and_given_back() {
        let b = PointBudget::new(10);
        assert!(b.take(6));
        assert!(b.take(4));
        assert!(!b.take(1));
        b.give_back(5);
        assert_eq!(b.held(), 6);
        assert!(b.charge(4).is_ok());
        assert!(matches!(b.charge(1), Err(EngineError::PointsLimit(10))));
        b.give_back(100);
        assert_eq!(b.held(), 0);
        let none = PointBudget::new(0);
        assert!(none.take(usize::MAX) && none.take(usize::MAX));
    }
}
