//! A read request whose client disconnects is stopped: its scan ends at the
//! next batch, its query slot is freed for the next request at once, and
//! `runakefli_queries_cancelled_total` counts it.

mod common;

use common::TestServer;
use serde_json::json;
use std::time::{Duration, Instant};

const T0: i64 = 1_795_910_400_000_000_000;
const PUSHES: i64 = 40;
const LINES: i64 = 10_000;

/// A query that reads every line through `json` and a template, matching none.
const SLOW: &str = r#"{app="a"} | json | line_format "{{.msg}} {{.n}} {{.msg}}" |= "no such line""#;

/// Runs the slow query; `None` when the client gave up first.
fn slow_query(server: &TestServer, timeout: Duration) -> Option<u16> {
    ureq::get(&format!("{}/loki/api/v1/query_range", server.base))
        .query("query", SLOW)
        .query("start", &T0.to_string())
        .query("end", &(T0 + PUSHES * LINES * 1_000 + 1).to_string())
        .query("limit", "10")
        .timeout(timeout)
        .call()
        .ok()
        .map(|r| r.status())
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
        server.push_json(&json!({"streams": [{"stream": {"app": "a"}, "values": values}]}));
    }
    assert_eq!(cancelled(&server), 0.0);
    // The client gives up after 300 ms and closes its connection.
    let r = slow_query(&server, Duration::from_millis(300));
    assert!(r.is_none(), "the client timed out: {r:?}");
    // The slot is free long before the query would have finished.
    let t1 = Instant::now();
    let (status, body) = server.get("/loki/api/v1/labels", &[]);
    let waited = t1.elapsed();
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while cancelled(&server) < 1.0 {
        assert!(
            Instant::now() < deadline,
            "the abandoned query was not counted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // How long the query takes when nobody gives up.
    let t0 = Instant::now();
    assert_eq!(slow_query(&server, Duration::from_secs(600)), Some(200));
    let full = t0.elapsed();
    eprintln!("the next request waited {waited:?} for the slot; the whole query takes {full:?}");
    assert!(
        full > Duration::from_millis(900),
        "the query is too fast to test cancellation: {full:?}"
    );
    assert!(
        waited < full / 3,
        "the next request waited {waited:?}: the abandoned query kept its slot ({full:?} in all)"
    );
    assert_eq!(cancelled(&server), 1.0, "the finished query is not counted");
}
