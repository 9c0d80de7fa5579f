//! How the ruler runs its queries: instant queries at the evaluation time,
//! through the same [`Engine`] the `/loki/api/v1/query` endpoint uses, so
//! every backend (the embedded store, ClickHouse) serves rules alike.

use crate::alert::Series;
use runakefli_engine::{Engine, QueryResult};
use runakefli_logql::Expr;
use runakefli_model::{Direction, TenantId};

/// Runs a rule's query.
pub trait Querier: Send + Sync {
    /// The instant vector of `expr` at `t_ns` for `tenant`: one series per
    /// element (a scalar is one series without labels), or the query's error.
    fn instant(&self, tenant: &TenantId, expr: &Expr, t_ns: i64) -> Result<Vec<Series>, String>;
}

impl Querier for Engine {
    fn instant(&self, tenant: &TenantId, expr: &Expr, t_ns: i64) -> Result<Vec<Series>, String> {
        let limit = self.limits().max_entries_limit_per_query;
        let resp = self
            .query_instant(tenant, expr, t_ns, limit, Direction::Backward)
            .map_err(|e| e.to_string())?;
        Ok(match resp.result {
            QueryResult::Vector(samples) => samples
                .into_iter()
                .map(|s| (s.labels.pairs().iter().cloned().collect(), s.value))
                .collect(),
            QueryResult::Scalar(_, v) => vec![(Default::default(), v)],
            QueryResult::Matrix(_) | QueryResult::Streams(_) => {
                return Err("rule expression must be an instant vector or a scalar".into())
            }
        })
    }
}
