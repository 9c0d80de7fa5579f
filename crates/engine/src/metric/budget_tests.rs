//! The series limit checked while a metric query scans: the scan stops soon
//! after the limit is passed instead of reading everything, and samples no
//! step uses never count.

use super::counting_backend::Counting;
use super::*;
use crate::options::FastPaths;
use crate::testing::MemBackend;
use runakefli_model::TenantId;
use runakefli_model::{Entry, Labels, PushRequest, PushStream};
use std::sync::atomic::Ordering;

const S: i64 = 1_000_000_000;

/// `n` streams `{app="a", pod="<i>"}`, each with one entry at `ts(i)`.
fn streams(n: usize, ts: impl Fn(usize) -> i64) -> (Counting, TenantId) {
    let b = MemBackend::new();
    let t = TenantId::default_tenant();
    let req = PushRequest {
        streams: (0..n)
            .map(|i| PushStream {
                labels: Labels::new(vec![
                    ("app".into(), "a".into()),
                    ("pod".into(), i.to_string()),
                ]),
                entries: vec![Entry {
                    ts: ts(i),
                    line: "x".into(),
                    metadata: vec![],
                }],
            })
            .collect(),
    };
    b.push(&t, &req);
    (Counting::new(b), t)
}

fn limits(max: usize) -> QueryLimits {
    QueryLimits {
        max_query_series: max,
        ..QueryLimits::default()
    }
}

fn run(
    b: &Counting,
    t: &TenantId,
    q: &str,
    max: usize,
    step: i64,
) -> Result<QueryResult, EngineError> {
    let Expr::Sample(e) = runakefli_logql::parse_expr(q).unwrap() else {
        panic!("metric query expected")
    };
    let mut stats = QueryStats::default();
    let steps = Steps {
        start: 60 * S,
        end: 120 * S,
        step,
    };
    let scope = test_scope(b, t, FastPaths::On);
    eval_range(&scope, &limits(max), &e, steps, &mut stats)
}

use runakefli_logql::Expr;

#[test]
fn the_scan_stops_soon_after_the_limit() {
    let (b, t) = streams(2000, |i| 60 * S + (i as i64 % 60) * S);
    for q in [
        r#"count_over_time({app="a"}[1m])"#,
        r#"(rate({app="a"}[1m]) * 60)"#,
    ] {
        b.entries.store(0, Ordering::Relaxed);
        let err = run(&b, &t, q, 10, 10 * S).unwrap_err();
        assert!(matches!(err, EngineError::SeriesLimit(10)), "{q}: {err}");
        // Eight shards stop after 11 series each (plus what is in flight).
        let read = b.entries.load(Ordering::Relaxed);
        assert!(read < 200, "{q}: read {read} of 2000 entries");
    }
}

#[test]
fn answers_within_the_limit_are_unchanged() {
    let (b, t) = streams(10, |i| 60 * S + i as i64 * S);
    let r = run(&b, &t, r#"count_over_time({app="a"}[1m])"#, 10, 10 * S).unwrap();
    let QueryResult::Matrix(series) = r else {
        panic!("matrix expected")
    };
    assert_eq!(series.len(), 10);
    // Past it by one: the same error as the check at the end gives.
    let (b, t) = streams(11, |i| 60 * S + i as i64 * S);
    let err = run(&b, &t, r#"count_over_time({app="a"}[1m])"#, 10, 10 * S).unwrap_err();
    assert_eq!(
        err.to_string(),
        "maximum number of series (10) reached for a single query; consider reducing query cardinality by adding more specific stream selectors, reducing the time range, or aggregating results with functions like sum(), count() or topk()"
    );
}

#[test]
fn samples_between_step_windows_do_not_count() {
    // Steps every 30 s with a 10 s range: samples at :15 of each half minute
    // fall in no window, so no step answers them and no series is answered.
    let (b, t) = streams(50, |i| 60 * S + 15 * S + (i as i64 % 2) * 30 * S);
    let r = run(&b, &t, r#"count_over_time({app="a"}[10s])"#, 10, 30 * S).unwrap();
    let QueryResult::Matrix(series) = r else {
        panic!("matrix expected")
    };
    assert!(series.is_empty());
}

#[test]
fn aggregated_answers_are_limited_by_their_own_series() {
    // 2000 inner series summed into one: within a limit of 10, as in Loki.
    let (b, t) = streams(2000, |i| 60 * S + (i as i64 % 60) * S);
    let r = run(&b, &t, r#"sum(count_over_time({app="a"}[1m]))"#, 10, 10 * S).unwrap();
    let QueryResult::Matrix(series) = r else {
        panic!("matrix expected")
    };
    assert_eq!(series.len(), 1);
}
