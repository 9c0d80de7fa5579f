//! Comparing two backends' answers through the same engine: the
//! equivalence tests of every backend pair (embedded store states,
//! ClickHouse, the in-memory reference) run their queries and metadata
//! calls with [`compare_queries`] and [`compare_metadata`]. Answers must be
//! identical, except that floats may differ by rounding (sums taken in
//! another order).

#![allow(dead_code)] // each test binary uses its own subset

use runakefli_engine::{Engine, QueryLimits, QueryResult};
use runakefli_model::{Backend, Direction, MatchOp, Matcher, TenantId};
use std::sync::Arc;

fn close(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Same answer, floats equal up to rounding (sums in another order).
pub fn same(a: &QueryResult, b: &QueryResult) -> bool {
    match (a, b) {
        (QueryResult::Matrix(x), QueryResult::Matrix(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(s, t)| {
                    s.labels == t.labels
                        && s.points.len() == t.points.len()
                        && s.points
                            .iter()
                            .zip(&t.points)
                            .all(|(p, q)| p.0 == q.0 && close(p.1, q.1))
                })
        }
        (QueryResult::Vector(x), QueryResult::Vector(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(s, t)| {
                    s.labels == t.labels && s.t_ms == t.t_ms && close(s.value, t.value)
                })
        }
        _ => a == b,
    }
}

/// Whether an answer holds data.
pub fn nonempty(r: &QueryResult) -> bool {
    match r {
        QueryResult::Streams(s) => !s.is_empty(),
        QueryResult::Matrix(m) => !m.is_empty(),
        QueryResult::Vector(v) => !v.is_empty(),
        _ => false,
    }
}

/// One side of a comparison: a backend and the name failures give it.
pub struct Side {
    pub name: String,
    pub backend: Arc<dyn Backend>,
}

impl Side {
    pub fn new(name: impl Into<String>, backend: Arc<dyn Backend>) -> Self {
        Side {
            name: name.into(),
            backend,
        }
    }

    fn engine(&self) -> Engine {
        Engine::new(self.backend.clone(), QueryLimits::default())
    }
}

/// Every engine's answer to `expr` as a range query for `tenant` (errors
/// as text).
pub fn answers_of(
    engines: &[Engine],
    tenant: &TenantId,
    expr: &runakefli_logql::Expr,
    (start, end, step): (i64, i64, i64),
    limit: u32,
    dir: Direction,
) -> Vec<Result<QueryResult, String>> {
    engines
        .iter()
        .map(|e| {
            e.query_range(
                tenant,
                expr,
                runakefli_engine::RangeRequest {
                    start,
                    end,
                    step,
                    limit,
                    direction: dir,
                },
            )
            .map(|r| r.result)
            .map_err(|e| e.to_string())
        })
        .collect()
}

/// The limits and directions a log query is compared at: a page larger
/// and one smaller than most answers, both ways.
pub const LOG_RUNS: [(u32, Direction); 4] = [
    (100, Direction::Backward),
    (7, Direction::Backward),
    (100, Direction::Forward),
    (3, Direction::Forward),
];

/// Runs every query as a range query over `(start, end)` at `step` on both
/// sides (log queries at every [`LOG_RUNS`] limit and direction, metric
/// queries once) and panics on the first difference, naming `context`, the
/// query and both answers. Returns how many answers of side `a` held data.
pub fn compare_queries<Q: AsRef<str>>(
    a: &Side,
    b: &Side,
    queries: &[Q],
    (start, end): (i64, i64),
    step: i64,
    context: &str,
) -> usize {
    let tenant = TenantId::default_tenant();
    let engines = [a.engine(), b.engine()];
    let mut with_data = 0;
    for q in queries {
        let q = q.as_ref();
        let expr = runakefli_logql::parse_expr(q).unwrap_or_else(|e| panic!("{q}: {e:?}"));
        let runs: &[(u32, Direction)] = if matches!(expr, runakefli_logql::Expr::Log(_)) {
            &LOG_RUNS
        } else {
            &LOG_RUNS[..1]
        };
        for &(limit, dir) in runs {
            let answers = answers_of(&engines, &tenant, &expr, (start, end, step), limit, dir);
            let ok = match (&answers[0], &answers[1]) {
                (Ok(x), Ok(y)) => same(x, y),
                (x, y) => x == y,
            };
            assert!(
                ok,
                "{context} limit={limit} {dir:?}: {} and {} differ for {q}\n{}: {:?}\n{}: {:?}",
                a.name, b.name, a.name, answers[0], b.name, answers[1]
            );
            with_data += usize::from(answers[0].as_ref().is_ok_and(nonempty));
        }
    }
    with_data
}

/// Compares the metadata calls over the whole range and over its first
/// third: label names (all streams, and those with an `app`), the values of
/// each of `names`, and the series with an `app`.
pub fn compare_metadata(a: &Side, b: &Side, names: &[&str], (start, end): (i64, i64)) {
    let tenant = TenantId::default_tenant();
    let [x, y] = [a.engine(), b.engine()];
    let all = [Matcher::new("app", MatchOp::Re, ".+").unwrap()];
    let (an, bn) = (&a.name, &b.name);
    for (s, e) in [(start, end), (start, start + (end - start) / 3)] {
        assert_eq!(
            x.labels(&tenant, None, s, e).unwrap(),
            y.labels(&tenant, None, s, e).unwrap(),
            "labels on {an} and {bn}"
        );
        assert_eq!(
            x.labels(&tenant, Some(&all), s, e).unwrap(),
            y.labels(&tenant, Some(&all), s, e).unwrap(),
            "labels of app streams on {an} and {bn}"
        );
        for name in names {
            assert_eq!(
                x.label_values(&tenant, name, None, s, e).unwrap(),
                y.label_values(&tenant, name, None, s, e).unwrap(),
                "values of {name} on {an} and {bn}"
            );
        }
        let sel = [all.to_vec()];
        assert_eq!(
            x.series(&tenant, &sel, s, e).unwrap(),
            y.series(&tenant, &sel, s, e).unwrap(),
            "series on {an} and {bn}"
        );
    }
}
