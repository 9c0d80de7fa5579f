//! The point budget of metric queries ([`crate::sampling::points`]), on both scan
//! paths (plain and columnar): a scan stops soon after the limit instead of
//! collecting every sample; step values count exactly; samples and the
//! inputs of an aggregation are given back once no longer held.

use super::counting_backend::Counting;
use super::*;
use crate::options::FastPaths;
use crate::testing::MemBackend;
use runakefli_logql::Expr;
use runakefli_model::TenantId;
use runakefli_model::{Entry, Labels, PushRequest, PushStream};
use std::sync::atomic::Ordering;

const S: i64 = 1_000_000_000;

/// `n` streams `{app="a", pod="<i>"}`, one entry each, between 60 s and 120 s.
fn streams(n: usize) -> (Counting, TenantId) {
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
                    ts: 60 * S + (i as i64 % 60) * S,
                    line: r#"{"k":"v"}"#.into(),
                    metadata: vec![],
                }],
            })
            .collect(),
    };
    b.push(&t, &req);
    (Counting::new(b), t)
}

fn run(
    path: &str,
    b: &Counting,
    t: &TenantId,
    q: &str,
    points: usize,
    step: i64,
) -> Result<usize, EngineError> {
    let Expr::Sample(e) = runakefli_logql::parse_expr(q).unwrap() else {
        panic!("metric query expected")
    };
    let limits = QueryLimits {
        max_query_series: 0,
        max_query_points: points,
        ..QueryLimits::default()
    };
    let mut stats = QueryStats::default();
    let fast_paths = if path == "plain" {
        FastPaths::Off
    } else {
        FastPaths::On
    };
    let steps = Steps {
        start: 60 * S,
        end: 120 * S,
        step,
    };
    match eval_range(
        &test_scope(b, t, fast_paths),
        &limits,
        &e,
        steps,
        &mut stats,
    )? {
        QueryResult::Matrix(s) => Ok(s.len()),
        other => panic!("matrix expected, got {other:?}"),
    }
}

/// Runs `f` on the columnar path and on the plain path (`run` takes the
/// path's name). The queries group `by` and parse `| json`, which the
/// columnar path needs; `f` checks which path ran with
/// [`Counting::column_scans`].
fn both_paths(f: impl Fn(&str)) {
    f("columnar");
    f("plain");
}

/// Whether the column scans of `b` match the path.
fn ran(b: &Counting, path: &str) {
    let scans = b.column_scans.load(Ordering::Relaxed);
    assert_eq!(
        scans > 0,
        path == "columnar",
        "{path}: {scans} column scans"
    );
}

#[test]
fn the_scan_stops_soon_after_the_limit_with_a_400() {
    both_paths(|path| {
        // Summed: the series limit would not stop this scan.
        let (b, t) = streams(4000);
        let err = run(
            path,
            &b,
            &t,
            r#"sum by (app) (count_over_time({app="a"} | json [1m]))"#,
            1000,
            60 * S,
        )
        .unwrap_err();
        assert!(
            matches!(err, EngineError::PointsLimit(1000)),
            "{path}: {err}"
        );
        assert_eq!(err.status(), 400);
        assert_eq!(
            err.to_string(),
            "maximum number of points (1000) held in memory reached for a single query; consider reducing the time range, increasing the step, or adding more specific stream selectors and line filters"
        );
        ran(&b, path);
        // Eight shards stop once the shared count passes the limit.
        let read = b.entries.load(Ordering::Relaxed);
        assert!(read < 1100, "{path}: read {read} of 4000 entries");
        // Without a limit the same query answers.
        assert_eq!(
            run(
                path,
                &b,
                &t,
                r#"sum by (app) (count_over_time({app="a"} | json [1m]))"#,
                0,
                60 * S
            )
            .unwrap(),
            1
        );
    });
}

#[test]
fn step_values_count_exactly() {
    both_paths(|path| {
        // 10 series × 61 steps of 1 s, while their 10 samples are held;
        // the plain path's scan holds 8 more points per series it makes.
        let (b, t) = streams(10);
        let q = r#"sum by (pod) (count_over_time({app="a"} | json [1m]))"#;
        let fits = if path == "plain" { 700 } else { 620 };
        assert_eq!(run(path, &b, &t, q, fits, S).unwrap(), 10, "{path}");
        let err = run(path, &b, &t, q, fits - 1, S).unwrap_err();
        assert!(
            matches!(err, EngineError::PointsLimit(n) if n == fits - 1),
            "{path}: {err}"
        );
        ran(&b, path);
    });
}

#[test]
fn samples_and_aggregated_inputs_are_given_back() {
    both_paths(|path| {
        let (b, t) = streams(10);
        // Each side peaks at 10 samples + 610 step values (and, on the plain
        // path, 8 points for each of the 10 series its scan makes); the left
        // side's samples are given back before the right side scans: 1,230
        // (1,240 if they were kept), 1,310 on the plain path.
        let q = r#"sum by (pod) (count_over_time({app="a"} | json [1m])) + sum by (pod) (count_over_time({app="a"} | json [1m]))"#;
        let fits = if path == "plain" { 1310 } else { 1230 };
        assert_eq!(run(path, &b, &t, q, fits, S).unwrap(), 10, "{path}");
        assert!(run(path, &b, &t, q, fits - 1, S).is_err(), "{path}");
        // A sum's grouping goes into its range aggregation (as Loki's does),
        // so both paths group while they scan: one series, its 10 samples
        // and 61 values next to the left side's 61 values: 61 + 71. On the
        // plain path each shard that holds some of the streams makes the
        // series once, 8 points each (5 shards here): 61 + 111.
        let q = r#"sum by (app) (count_over_time({app="a"} | json [1m])) + sum by (app) (count_over_time({app="a"} | json [1m]))"#;
        let fits = if path == "plain" { 172 } else { 132 };
        assert_eq!(run(path, &b, &t, q, fits, S).unwrap(), 1, "{path}");
        assert!(run(path, &b, &t, q, fits - 1, S).is_err(), "{path}");
        ran(&b, path);
    });
}
