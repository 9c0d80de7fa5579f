//! Per-query limits, as Loki's limits config names them.

use std::time::Duration;

/// Limits applied to every query.
#[derive(Clone, Debug)]
pub struct QueryLimits {
    /// Largest `limit` a log query may ask for (`max_entries_limit_per_query`).
    pub max_entries_limit_per_query: u32,
    /// Most series a metric query may produce (`max_query_series`).
    pub max_query_series: usize,
    /// Wall-clock budget of one query.
    pub query_timeout: Duration,
    /// Most points (collected samples and step values, 16 bytes each) one
    /// metric query may hold in memory at once, counted while it runs; 0:
    /// no limit. See `sampling::points`.
    pub max_query_points: usize,
}

/// Default of [`QueryLimits::max_query_points`]: 20 million points, 320 MB
/// of samples and step values.
pub const DEFAULT_MAX_QUERY_POINTS: usize = 20_000_000;

impl Default for QueryLimits {
    /// Loki's defaults: 5000 entries, 500 series, 1 minute.
    fn default() -> Self {
        QueryLimits {
            max_entries_limit_per_query: 5000,
            max_query_series: 500,
            query_timeout: Duration::from_secs(60),
            max_query_points: DEFAULT_MAX_QUERY_POINTS,
        }
    }
}
