//! Comparing two backends' answers: identical, except that floats may
//! differ by rounding (sums taken in another order).

use runakefli_engine::QueryResult;

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
