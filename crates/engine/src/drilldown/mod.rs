//! What Grafana's Logs Drilldown asks beyond LogQL: the labels and fields
//! a selection offers ([`labels`], [`fields`]) and its log patterns
//! ([`patterns`]). Each is computed from the stored data through the same
//! [`Backend`](runakefli_model::Backend) as queries.

pub mod fields;
pub mod labels;
pub mod patterns;
pub mod types;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::log_query;
use crate::result::{QueryStats, StreamResult};
use runakefli_logql::LogExpr;
use runakefli_model::{Direction, Matcher, TenantId, Timestamp};
use std::time::Instant;

impl Engine {
    /// The newest `line_limit` entries of the log query `expr` over
    /// `[start, end)`, with their label categories: the sample Loki reads
    /// detected fields and their values from.
    pub fn newest_entries(
        &self,
        tenant: &TenantId,
        expr: &LogExpr,
        start: Timestamp,
        end: Timestamp,
        line_limit: usize,
    ) -> Result<Vec<StreamResult>, EngineError> {
        let mut stats = QueryStats::default();
        log_query::run(
            self.backend(),
            tenant,
            expr,
            start,
            end,
            line_limit,
            Direction::Backward,
            Instant::now() + self.limits().query_timeout,
            &mut stats,
        )
    }

    /// `detected_fields`: the fields of the newest `line_limit` entries.
    pub fn detected_fields(
        &self,
        tenant: &TenantId,
        expr: &LogExpr,
        start: Timestamp,
        end: Timestamp,
        line_limit: usize,
    ) -> Result<Vec<fields::DetectedField>, EngineError> {
        let sample = self.newest_entries(tenant, expr, start, end, line_limit)?;
        Ok(fields::detect_fields(&sample))
    }

    /// `detected_labels`: stream label names with their cardinality over
    /// the streams matching `matchers` in `[start, end)`.
    pub fn detected_labels(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<(String, usize)>, EngineError> {
        let series = self.series(tenant, &[matchers.to_vec()], start, end)?;
        Ok(labels::detected_labels(&series))
    }
}
