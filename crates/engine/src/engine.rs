//! The query engine's entry points.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::limits::QueryLimits;
use crate::result::{QueryResponse, QueryResult, QueryStats};
use crate::{log_query, metadata, metric};
use runakefli_logql::Expr;
use runakefli_model::{Backend, Direction, Matcher, TenantId, Timestamp};
use std::sync::Arc;
use std::time::Instant;

/// Evaluates LogQL over a storage backend.
pub struct Engine {
    backend: Arc<dyn Backend>,
    limits: QueryLimits,
}

impl Engine {
    /// An engine over `backend` with `limits`.
    pub fn new(backend: Arc<dyn Backend>, limits: QueryLimits) -> Self {
        Engine { backend, limits }
    }

    /// The configured limits.
    pub fn limits(&self) -> &QueryLimits {
        &self.limits
    }

    fn check_limit(&self, limit: u32) -> Result<(), EngineError> {
        if limit > self.limits.max_entries_limit_per_query
            && self.limits.max_entries_limit_per_query > 0
        {
            return Err(EngineError::EntriesLimit {
                requested: limit,
                max: self.limits.max_entries_limit_per_query,
            });
        }
        Ok(())
    }

    /// `query_range`: a log query over `[start, end)`, or a metric query
    /// evaluated at `start, start+step, …, end`.
    #[allow(clippy::too_many_arguments)]
    pub fn query_range(
        &self,
        tenant: &TenantId,
        expr: &Expr,
        start_ns: Timestamp,
        end_ns: Timestamp,
        step_ns: i64,
        limit: u32,
        direction: Direction,
    ) -> Result<QueryResponse, EngineError> {
        let t0 = Instant::now();
        let mut stats = QueryStats::default();
        let result = match expr {
            Expr::Log(log) => {
                self.check_limit(limit)?;
                QueryResult::Streams(log_query::run(
                    self.backend.as_ref(),
                    tenant,
                    log,
                    start_ns,
                    end_ns,
                    limit as usize,
                    direction,
                    &mut stats,
                )?)
            }
            Expr::Sample(s) => {
                if step_ns <= 0 {
                    return Err(EngineError::BadRequest(
                        "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
                    ));
                }
                metric::eval_range(
                    self.backend.as_ref(),
                    &self.limits,
                    tenant,
                    s,
                    start_ns,
                    end_ns,
                    step_ns,
                    &mut stats,
                )?
            }
        };
        stats.exec_time_secs = t0.elapsed().as_secs_f64();
        Ok(QueryResponse { result, stats })
    }

    /// `query`: a metric query at one instant. Log queries are refused, as Loki does.
    pub fn query_instant(
        &self,
        tenant: &TenantId,
        expr: &Expr,
        time_ns: Timestamp,
        limit: u32,
        direction: Direction,
    ) -> Result<QueryResponse, EngineError> {
        let _ = direction;
        let t0 = Instant::now();
        let mut stats = QueryStats::default();
        let result = match expr {
            Expr::Log(_) => {
                self.check_limit(limit)?;
                return Err(EngineError::BadRequest(
                    "log queries are not supported as an instant query type, please change your query to a range query type".into(),
                ));
            }
            Expr::Sample(s) => metric::eval_instant(
                self.backend.as_ref(),
                &self.limits,
                tenant,
                s,
                time_ns,
                &mut stats,
            )?,
        };
        stats.exec_time_secs = t0.elapsed().as_secs_f64();
        Ok(QueryResponse { result, stats })
    }

    /// `/series`: label sets of streams matching any selector with entries in `[start, end)`.
    pub fn series(
        &self,
        tenant: &TenantId,
        selectors: &[Vec<Matcher>],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<LabelSet>, EngineError> {
        metadata::series(self.backend.as_ref(), tenant, selectors, start, end)
    }

    /// `/labels`: label names, optionally of the streams matching `matchers`.
    pub fn labels(
        &self,
        tenant: &TenantId,
        matchers: Option<&[Matcher]>,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, EngineError> {
        metadata::label_names(self.backend.as_ref(), tenant, matchers, start, end)
    }

    /// `/index/stats` for one selector.
    pub fn index_stats(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<metadata::IndexStats, EngineError> {
        metadata::index_stats(self.backend.as_ref(), tenant, matchers, start, end)
    }

    /// `/index/volume`: bytes per group, largest first (see [`metadata::volume`]).
    #[allow(clippy::too_many_arguments)]
    pub fn volume(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
        target_labels: &[String],
        by_labels: bool,
        limit: usize,
    ) -> Result<Vec<(LabelSet, u64)>, EngineError> {
        metadata::volume(
            self.backend.as_ref(),
            tenant,
            matchers,
            start,
            end,
            target_labels,
            by_labels,
            limit,
        )
    }

    /// `/label/<name>/values`.
    pub fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: Option<&[Matcher]>,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, EngineError> {
        metadata::label_values(self.backend.as_ref(), tenant, name, matchers, start, end)
    }
}
