//! A read request whose client disconnects is stopped: its scan (or the
//! store's plan) ends at the next batch or block, its query slot is freed
//! for the next request at once, and `runakefli_queries_cancelled_total`
//! counts it. Checked for a log query and for `detected_fields` (a
//! drilldown endpoint, which reads through the same cancellable engine as
//! `/index/*`); plans the store runs whole get the flag too
//! (`crates/storage-query/tests/store_plan_bounds.rs`).
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::json;
use std::time::{Duration, Instant};

const T0: i64 = 1_795_910_400_000_000_000;
const PUSHES: i64 = 40;
const LINES: i64 = 10_000;

/// A query that reads every line through `json` and a template, matching none.
const SLOW: &str = r#"{app="a"} | json | line_format "{{.msg}} {{.n}} {{.msg}}" |= "no such line""#;

/// Runs `query` on `path`; `None` when the client gave up first.
fn slow_request(server: &TestServer, path: &str, query: &str, timeout: Duration) -> Option<u16> {
    ureq::get(&format!("{}{path}", server.base))
        .query("query", query)
        .query("start", &T0.to_string())
        .query("end", &(T0 + PUSHES * LINES * 1_000 + 1).to_string())
        .query("limit", "10")
        .query("step", "60")
        .query("line_limit", &(PUSHES * LINES).to_string())
        .timeout(timeout)
        .call()
        .ok()
        .map(|r| r.status())
}

/// Abandons `query` on `path` after 300 ms and checks that the next request
/// gets the only query slot long before the query would have ended, and
/// that the abandoned request is counted once.
fn abandoned_request_stops(server: &TestServer, path: &str, query: &str) {
    let before = cancelled(server);
    // The client gives up after 300 ms and closes its connection.
    let r = slow_request(server, path, query, Duration::from_millis(300));
    assert!(r.is_none(), "{path}: the client timed out: {r:?}");
    // The slot is free long before the query would have finished.
    let t1 = Instant::now();
    let (status, body) = server.get("/loki/api/v1/labels", &[]);
    let waited = t1.elapsed();
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while cancelled(server) < before + 1.0 {
        assert!(
            Instant::now() < deadline,
            "{path}: the abandoned request was not counted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // How long the request takes when nobody gives up.
    let t0 = Instant::now();
    assert_eq!(
        slow_request(server, path, query, Duration::from_secs(600)),
        Some(200)
    );
    let full = t0.elapsed();
    eprintln!("{path} {query}: the next request waited {waited:?} for the slot; the whole request takes {full:?}");
    assert!(
        full > Duration::from_millis(900),
        "{path}: the request is too fast to test cancellation: {full:?}"
    );
    assert!(
        waited < full / 3,
        "{path}: the next request waited {waited:?}: the abandoned request kept its slot ({full:?} in all)"
    );
    assert_eq!(
        cancelled(server),
        before + 1.0,
        "{path}: the finished request is not counted"
    );
}

fn cancelled(server: &TestServer) -> f64 {
    let (_, text) = server.get("/metrics", &[]);
    text.lines()
        .find_map(|l| l.strip_prefix("runakefli_queries_cancelled_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the cancelled-queries counter")
}

#[test]
fn a_query_whose_client_disconnects_stops_and_frees_its_slot() {
    let server = TestServer::start_with(&[
        "--max-concurrent-queries",
        "1",
        "--max-entries-per-query",
        "100000",
        "--query-timeout",
        "10m",
    ]);
    for p in 0..PUSHES {
        let values: Vec<_> = (0..LINES)
            .map(|i| {
                let n = p * LINES + i;
                json!([
                    (T0 + n * 1_000).to_string(),
                    format!(
                        r#"{{"msg":"request {n} served","n":{n},"path":"/api/v1/items/{}"}}"#,
                        n % 977
                    )
                ])
            })
            .collect();
        // Eight streams: the engine scans them in parallel, and the
        // request is still counted once.
        let stream = json!({"app": "a", "s": (p % 8).to_string()});
        server.push_json(&json!({"streams": [{"stream": stream, "values": values}]}));
    }
    assert_eq!(cancelled(&server), 0.0);
    abandoned_request_stops(&server, "/loki/api/v1/query_range", SLOW);
    abandoned_request_stops(&server, "/loki/api/v1/detected_fields", SLOW);
}
