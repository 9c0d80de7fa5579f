//! The columnar fast path against the plain path: the same queries, answered
//! both ways over the same store, must give identical results and statistics
//! (lines read and kept).
//!
//! Data: the conformance data set (JSON, logfmt and plain lines, nested
//! objects, arrays, escapes, invalid JSON) and generated workload data. Store
//! states: memtable only, row-wise flushed parts, columnar flushed parts
//! (unmerged) and merged parts; log queries are asked twice (the second
//! answer's rows come from the answer cache). Queries: templates over selectors, label
//! filters, groupings and range functions, crossed with each other.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod store_states;

use runakefli_engine::{Engine, EngineOptions, FastPaths, QueryLimits};
use runakefli_model::{Direction, TenantId};
use runakefli_storage_query::EmbeddedBackend;
use std::sync::Arc;
use store_states::{conformance_pushes, open_store, time_range, workload_pushes, State};

/// Every query both ways; returns the number of rows the fast path read from columns.
fn compare(
    store: Arc<EmbeddedBackend>,
    queries: &[String],
    start: i64,
    end: i64,
    state: State,
) -> u64 {
    let fast_engine = Engine::new(store.clone(), QueryLimits::default());
    let plain_options = EngineOptions {
        fast_paths: FastPaths::Off,
    };
    let plain_engine = Engine::with_options(store, QueryLimits::default(), plain_options);
    let tenant = TenantId::default_tenant();
    let mut column_rows = 0u64;
    let step = 300 * 1_000_000_000;
    for q in queries {
        let expr = runakefli_logql::parse_expr(q).unwrap_or_else(|e| panic!("{q}: {e:?}"));
        // The answer as text, and the rows read from columns.
        let run = |engine: &Engine, instant: bool| {
            let r = if instant {
                engine.query_instant(&tenant, &expr, end, 100, Direction::Backward)
            } else {
                engine.query_range(
                    &tenant,
                    &expr,
                    runakefli_engine::RangeRequest {
                        start,
                        end,
                        step,
                        limit: 100,
                        direction: Direction::Backward,
                    },
                )
            };
            match r {
                // Bytes processed are not compared: plans estimate them for
                // blocks that lie partly in the range (in proportion to rows).
                Ok(resp) => (
                    format!(
                        "{:?} lines={} kept={}",
                        resp.result, resp.stats.lines_processed, resp.stats.post_filter_lines
                    ),
                    resp.stats.rows_from_columns,
                ),
                Err(e) => (format!("error: {e}"), 0),
            }
        };
        for instant in [false, true] {
            let (fast, rows) = run(&fast_engine, instant);
            column_rows += rows;
            // Asked again, log queries get their rows from the answer cache,
            // every query its needles' block verdicts from the parts and
            // its blocks' decoded columns and timestamps into the decoded
            // cache (kept on their second offer); asked a third time, from it.
            for again in 2..=3 {
                assert_eq!(
                    run(&fast_engine, instant).0,
                    fast,
                    "{state:?} instant={instant}: run {again} of the same query differs for {q}"
                );
            }
            let (plain, plain_rows) = run(&plain_engine, instant);
            assert_eq!(plain_rows, 0, "the plain path read columns for {q}");
            assert_eq!(
                fast, plain,
                "{state:?} instant={instant}: fast and plain paths differ for {q}"
            );
        }
    }
    column_rows
}

fn conformance_queries() -> Vec<String> {
    let selectors = [r#"{app=~"checkout|payments|auth"}"#, r#"{app=~".+"}"#];
    let filters = [
        "",
        r#" | level="error""#,
        r#" | status >= 400"#,
        r#" | request_method="GET" or level!="info""#,
        r#" | __error__="""#,
        r#" | latency_ms > 100 | user=~"a.*""#,
        r#" | size > 1KiB"#,
    ];
    let metrics = [
        "sum by (app) (count_over_time({S}{F} [10m]))",
        "sum(count_over_time({S}{F} [10m]))",
        "topk(3, sum by (path) (count_over_time({S}{F} [10m])))",
        "sum by (level, cache_hit) (count_over_time({S}{F} [10m] offset 5m))",
        "sum by (tags, geo_country, response_status) (count_over_time({S}{F} [10m]))",
        "quantile_over_time(0.9, {S}{F} | unwrap latency_ms | __error__=\"\" [10m]) by (app)",
        "avg_over_time({S}{F} | unwrap response_latency_ms [10m]) by (app, level)",
        "min_over_time({S}{F} | unwrap bytes [10m]) by (method)",
        "max_over_time({S}{F} | unwrap duration(duration) | __error__=\"\" [10m]) by (app)",
        "last_over_time({S}{F} | unwrap latency_ms [10m]) by (user)",
        "count_over_time({S}{F} [10m])",
    ];
    let mut out = Vec::new();
    for m in metrics {
        for s in selectors {
            for f in filters {
                let f = format!(" | json{f}");
                out.push(m.replace("{S}", s).replace("{F}", &f));
            }
        }
    }
    out
}

#[test]
fn conformance_data_both_paths_agree() {
    let pushes = conformance_pushes();
    let (lo, hi) = time_range(&pushes);
    let queries = conformance_queries();
    for state in [
        State::Memtable,
        State::FlushedRaw,
        State::FlushedColumnar,
        State::Merged,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path(), state, &pushes, 7);
        // A sample of the query cross product keeps the debug-build test short;
        // the merged state, where the fast path reads columns, gets the most.
        let every = if matches!(state, State::Merged) {
            3
        } else {
            11
        };
        let sample: Vec<String> = queries.iter().step_by(every).cloned().collect();
        let rows = compare(store, &sample, lo + 600_000_000_000, hi + 1, state);
        if matches!(state, State::Merged) {
            assert!(rows > 0, "the fast path never read columns");
        }
    }
}

#[test]
fn workload_data_both_paths_agree() {
    let end = 1_800_000_000_000_000_000;
    let pushes = workload_pushes(7, 60, end, 12);
    let (lo, hi) = time_range(&pushes);
    let queries: Vec<String> = [
        r#"sum(count_over_time({app="A"} | json | level="error" [1h]))"#,
        r#"sum by (app) (count_over_time({app=~".+"} | json | level="error" [1h]))"#,
        r#"quantile_over_time(0.99, {app=~".+"} | json | unwrap duration_ms [1h]) by (app)"#,
        r#"topk(10, sum by (path) (count_over_time({app=~".+"} | json [1h])))"#,
        r#"sum by (request_method, level) (count_over_time({app=~".+"} | json | duration_ms > 50 [10m]))"#,
        r#"avg_over_time({app=~".+"} | json | level!="debug" | unwrap duration_ms [10m]) by (namespace)"#,
        // Byte sums grouped by the range aggregation itself.
        r#"sum by (app) (bytes_over_time({app=~".+"} [10m]))"#,
        r#"sum by (level) (bytes_over_time({app=~".+"} | json [10m]))"#,
        r#"sum(bytes_over_time({app="A"} | json | level="error" [10m]))"#,
        // The group's byte total over the range, as Loki hands the sum's grouping down.
        r#"sum by (namespace) (bytes_rate({app=~".+"} [10m]))"#,
    ]
    .iter()
    .map(|q| q.replace("\"A\"", "\"checkout-api\""))
    .collect();
    for state in [State::FlushedRaw, State::Merged] {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path(), state, &pushes, 7);
        let rows = compare(store, &queries, lo + 600_000_000_000, hi + 1, state);
        if matches!(state, State::Merged) {
            assert!(rows > 0, "the fast path never read columns");
        }
    }
}

/// `pushes` with structured metadata on every entry, as ingest gives it
/// (`detected_level` from the line), and on some entries names that collide
/// with JSON fields (`level`, `path`; when `collide`), which change what
/// `| json` extracts.
fn with_metadata(
    mut pushes: Vec<runakefli_model::PushRequest>,
    collide: bool,
) -> Vec<runakefli_model::PushRequest> {
    let mut n = 0usize;
    for p in &mut pushes {
        for s in &mut p.streams {
            for e in &mut s.entries {
                n += 1;
                let level = e
                    .line
                    .split("\"level\":\"")
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .unwrap_or("unknown")
                    .to_string();
                e.metadata.push(("detected_level".to_string(), level));
                if collide && n.is_multiple_of(7) {
                    e.metadata.push(("level".to_string(), "meta".to_string()));
                }
                if collide && n.is_multiple_of(11) {
                    e.metadata.push(("path".to_string(), "/meta".to_string()));
                }
            }
        }
    }
    pushes
}

#[test]
fn workload_data_with_metadata_both_paths_agree() {
    let end = 1_800_000_000_000_000_000;
    let queries: Vec<String> = [
        r#"sum(count_over_time({app="A"} | json | level="error" [1h]))"#,
        r#"sum by (app) (count_over_time({app=~".+"} | json | level="error" [10m]))"#,
        r#"sum by (detected_level) (count_over_time({app=~".+"} | json | status >= 500 [10m]))"#,
        r#"sum by (level) (count_over_time({app=~".+"} | json level="level" [10m]))"#,
        r#"topk(10, sum by (path) (count_over_time({app=~".+"} | json [1h])))"#,
        r#"count_over_time({app="A"} | json | level="error" [10m])"#,
        r#"sum by (detected_level, level) (count_over_time({app=~".+"} | json [10m]))"#,
        r#"sum by (app) (count_over_time({app=~".+"} | json | detected_level="error" [10m]))"#,
        // Without fields: metadata counts only through the group key.
        r#"sum by (detected_level) (count_over_time({app=~".+"} [10m]))"#,
        r#"sum by (app, level) (bytes_over_time({app=~".+"} [10m]))"#,
        r#"count_over_time({app="A"} [10m])"#,
        r#"quantile_over_time(0.99, {app=~".+"} | json | unwrap duration_ms [1h]) by (app)"#,
        // A metadata name the query never reads, but which renames the
        // field `| json` extracts: the block's metadata still matters.
        r#"sum(count_over_time({app=~".+"} | json | level_extracted="error" [10m]))"#,
        r#"sum by (level_extracted) (count_over_time({app=~".+"} | json [10m]))"#,
    ]
    .iter()
    .map(|q| q.replace("\"A\"", "\"checkout-api\""))
    .collect();
    // Only `detected_level` (what most queries can ignore), then names that
    // collide with the lines' fields.
    for collide in [false, true] {
        let pushes = with_metadata(workload_pushes(11, 40, end, 6), collide);
        let (lo, hi) = time_range(&pushes);
        for state in [State::FlushedRaw, State::Merged] {
            let dir = tempfile::tempdir().unwrap();
            let store = open_store(dir.path(), state, &pushes, 7);
            let rows = compare(store, &queries, lo + 600_000_000_000, hi + 1, state);
            if matches!(state, State::Merged) {
                assert!(rows > 0, "the fast path never read columns");
            }
        }
    }
}

/// The text of row `i`'s number.
type ValueOf = fn(i64) -> String;

/// Lines whose numbers a float unwrap reads from Decimal columns without
/// their text (`BlockEval::decimal_numbers`), and lines whose numbers must
/// be parsed: per stream, one kind of value in `v` (unquoted) and `q`
/// (quoted), so that each stream's column is stored as the kind says.
fn decimal_pushes(end: i64) -> Vec<runakefli_model::PushRequest> {
    use runakefli_model::{Entry, Labels, PushRequest, PushStream};
    let rows = 1500i64;
    let kinds: [(&str, ValueOf); 4] = [
        // Scales 0 to 4 in one column, negatives, zero.
        ("scaled", |i| {
            let m = (i * 7919 % 200_003) - 100_000;
            let s = (i % 5) as u32;
            if s == 0 {
                m.to_string()
            } else {
                let unit = 10i64.pow(s);
                let sign = if m < 0 { "-" } else { "" };
                let a = m.abs();
                format!("{sign}{}.{:0w$}", a / unit, a % unit, w = s as usize)
            }
        }),
        // Fifteen significant digits and more, with a fraction: beyond
        // 2^53 a division is not exact, so these are parsed.
        ("wide", |i| {
            format!("{}.{:02}", 9_007_199_254_740_000 + i * 13, i % 100)
        }),
        // Integers past 2^53 (rounded by the conversion itself).
        ("huge", |i| (i64::MAX - i * 1_000_003).to_string()),
        // Not decimals: exponents.
        ("exponent", |i| format!("{}e-{}", i + 1, i % 4)),
    ];
    // Two pushes (the first and second half of each stream's rows), so
    // that the merged state merges two parts.
    let mut halves = vec![Vec::new(), Vec::new()];
    for (k, (name, value)) in kinds.iter().enumerate() {
        let labels = Labels::new(vec![
            ("app".to_string(), format!("decimal-{name}")),
            ("tier".to_string(), format!("t{}", k % 2)),
        ]);
        for (h, half) in halves.iter_mut().enumerate() {
            let rows_here = (h as i64 * rows / 2)..((h as i64 + 1) * rows / 2);
            let entries = rows_here
                .map(|i| {
                    let v = value(i);
                    Entry {
                        // No two streams share a timestamp: sums over a group of
                        // streams then have one order.
                        ts: end - (rows - i) * 1_000_000_000 + k as i64,
                        line: format!(r#"{{"level":"info","v":{v},"q":"{v}","n":{i}}}"#),
                        metadata: Vec::new(),
                    }
                })
                .collect();
            half.push(PushStream {
                labels: labels.clone(),
                entries,
            });
        }
    }
    halves
        .into_iter()
        .map(|streams| PushRequest { streams })
        .collect()
}

#[test]
fn decimal_columns_unwrap_like_their_text() {
    let end = 1_800_000_000_000_000_000;
    let queries: Vec<String> = [
        r#"quantile_over_time(0.9, {app=~"decimal-.+"} | json | unwrap v [5m]) by (app)"#,
        r#"sum by (app, tier) (sum_over_time({app=~"decimal-.+"} | json | unwrap v [5m]))"#,
        r#"avg_over_time({app=~"decimal-.+"} | json | unwrap q [5m]) by (tier)"#,
        r#"min_over_time({app=~"decimal-.+"} | json | unwrap v [5m]) by (app)"#,
        r#"max_over_time({app=~"decimal-.+"} | json x="q" | unwrap x [5m]) by (app)"#,
        r#"last_over_time({app=~"decimal-.+"} | json | unwrap v [5m]) by (nothing)"#,
        r#"stddev_over_time({app=~"decimal-.+"} | json | unwrap n [5m]) by (app)"#,
        // Shapes the number read does not take: the general path.
        r#"sum by (app) (sum_over_time({app=~"decimal-.+"} | json | unwrap v | v > 0 [5m]))"#,
        r#"max_over_time({app=~"decimal-.+"} | json | unwrap v [5m]) by (level)"#,
        r#"max_over_time({app=~"decimal-.+"} | json | unwrap bytes(v) | __error__="" [5m]) by (app)"#,
    ]
    .iter()
    .map(|q| q.to_string())
    .collect();
    let pushes = decimal_pushes(end);
    let (lo, hi) = time_range(&pushes);
    for state in [State::FlushedColumnar, State::Merged] {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path(), state, &pushes, 1);
        let rows = compare(store, &queries, lo, hi + 1, state);
        assert!(rows > 0, "{state:?}: the fast path never read columns");
    }
}
