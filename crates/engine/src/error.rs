//! Errors of query evaluation, with the HTTP status and message Loki gives.

use runakefli_model::BackendError;
use thiserror::Error;

/// Why a query failed.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The query asks for more entries than allowed.
    #[error("max entries limit per query exceeded, limit > max_entries_limit_per_query ({requested} > {max})")]
    EntriesLimit {
        /// The requested limit.
        requested: u32,
        /// The configured maximum.
        max: u32,
    },
    /// The query would return more series than allowed.
    #[error("maximum number of series ({0}) reached for a single query; consider reducing query cardinality by adding more specific stream selectors, reducing the time range, or aggregating results with functions like sum(), count() or topk()")]
    SeriesLimit(usize),
    /// The query would hold more points (samples and step values) in
    /// memory than allowed ([`crate::QueryLimits::max_query_points`]).
    #[error("maximum number of points ({0}) held in memory reached for a single query; consider reducing the time range, increasing the step, or adding more specific stream selectors and line filters")]
    PointsLimit(usize),
    /// The query could not be planned (bad regexp, template, pattern…); the text
    /// follows Loki's `parse error : …` form.
    #[error("parse error : {0}")]
    Plan(String),
    /// A request parameter is invalid.
    #[error("{0}")]
    BadRequest(String),
    /// The query took longer than allowed.
    #[error("query timed out")]
    Timeout,
    /// Evaluation failed in a way Loki reports as a server error (e.g.
    /// many-to-many vector matching).
    #[error("{0}")]
    Execution(String),
    /// A feature not implemented yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The storage backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

impl EngineError {
    /// The HTTP status Loki answers with for this error.
    pub fn status(&self) -> u16 {
        match self {
            EngineError::EntriesLimit { .. }
            | EngineError::SeriesLimit(_)
            | EngineError::PointsLimit(_)
            | EngineError::Plan(_)
            | EngineError::BadRequest(_)
            | EngineError::Unsupported(_) => 400,
            EngineError::Timeout => 504,
            EngineError::Execution(_) => 500,
            EngineError::Backend(e) => match e {
                BackendError::Limit(_) | BackendError::Rejected(_) => 400,
                BackendError::Cancelled => 499,
                BackendError::Unavailable(_) => 503,
                BackendError::Timeout(_) => 504,
                BackendError::Io(_) | BackendError::Corrupt(_) | BackendError::Internal(_) => 500,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_statuses() {
        let e = EngineError::EntriesLimit {
            requested: 6000,
            max: 5000,
        };
        assert_eq!(
            e.to_string(),
            "max entries limit per query exceeded, limit > max_entries_limit_per_query (6000 > 5000)"
        );
        assert_eq!(e.status(), 400);
        assert_eq!(EngineError::Execution("x".into()).status(), 500);
        assert_eq!(
            EngineError::Plan("bad".into()).to_string(),
            "parse error : bad"
        );
    }

    #[test]
    fn backend_failures_keep_their_kind_s_status() {
        let status = |e: BackendError| EngineError::Backend(e).status();
        assert_eq!(status(BackendError::Limit("x".into())), 400);
        assert_eq!(status(BackendError::Rejected("x".into())), 400);
        assert_eq!(status(BackendError::Cancelled), 499);
        assert_eq!(status(BackendError::Unavailable("x".into())), 503);
        assert_eq!(status(BackendError::Timeout("x".into())), 504);
        assert_eq!(status(BackendError::Internal("x".into())), 500);
        assert_eq!(status(BackendError::Corrupt("x".into())), 500);
        assert_eq!(
            EngineError::Backend(BackendError::Rejected("clickhouse: bad".into())).to_string(),
            "clickhouse: bad"
        );
    }
}
