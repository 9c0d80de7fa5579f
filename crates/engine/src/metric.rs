//! Metric queries (range aggregations, vector aggregations, binary operations).

use crate::error::EngineError;
use crate::limits::QueryLimits;
use crate::result::{QueryResult, QueryStats};
use runakefli_logql::SampleExpr;
use runakefli_model::{Backend, TenantId, Timestamp};

/// Evaluates a metric query at every step of `[start, end]`.
#[allow(clippy::too_many_arguments)]
pub fn eval_range(
    _backend: &dyn Backend,
    _limits: &QueryLimits,
    _tenant: &TenantId,
    _expr: &SampleExpr,
    _start: Timestamp,
    _end: Timestamp,
    _step: i64,
    _stats: &mut QueryStats,
) -> Result<QueryResult, EngineError> {
    Err(EngineError::Unsupported("metric queries".into()))
}

/// Evaluates a metric query at one instant.
pub fn eval_instant(
    _backend: &dyn Backend,
    _limits: &QueryLimits,
    _tenant: &TenantId,
    _expr: &SampleExpr,
    _time: Timestamp,
    _stats: &mut QueryStats,
) -> Result<QueryResult, EngineError> {
    Err(EngineError::Unsupported("metric queries".into()))
}
