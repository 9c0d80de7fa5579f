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
}

impl Default for QueryLimits {
    /// Loki's defaults: 5000 entries, 500 series, 1 minute.
    fn default() -> Self {
        QueryLimits {
            max_entries_limit_per_query: 5000,
            max_query_series: 500,
            query_timeout: Duration::from_secs(60),
        }
    }
}
