//! Loki's delete API against the real server: rows hidden from every query
//! path at once (parts and memtable, log and metric queries), across a
//! restart; cancellation brings them back; once due they are purged from
//! disk — gone even when the request itself is removed.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;
use std::time::{Duration, Instant};

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

const MIN: i64 = 60_000_000_000;

/// Pushes `n` JSON lines to `app`, every third one holding a secret.
fn push(server: &TestServer, app: &str, t0: i64, n: usize) {
    let values: Vec<_> = (0..n)
        .map(|i| {
            let msg = if i % 3 == 0 { "token secret-42" } else { "ok" };
            json!([
                (t0 + i as i64 * 1_000_000).to_string(),
                json!({"msg": msg, "n": i}).to_string()
            ])
        })
        .collect();
    server.push_json(&json!({"streams":[{"stream":{"app": app},"values": values}]}));
}

/// Lines `selector` returns over `[from, to)`.
fn lines(server: &TestServer, selector: &str, from: i64, to: i64) -> Vec<String> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", selector),
            ("start", &from.to_string()),
            ("end", &to.to_string()),
            ("limit", "5000"),
        ],
    );
    streams_of(&v)
        .into_iter()
        .flat_map(|(_, e)| e.into_iter().map(|(_, l)| l))
        .collect()
}

/// The single value of a metric query summed over its steps... at `at`.
fn instant_sum(server: &TestServer, query: &str, at: i64) -> f64 {
    let v = server.get_json(
        "/loki/api/v1/query",
        &[("query", query), ("time", &at.to_string())],
    );
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"][1].as_str().unwrap().parse::<f64>().unwrap())
        .sum()
}

fn delete(server: &TestServer, query: &str, start: i64, end: i64) -> (u16, String) {
    server.delete_request(query, start, end)
}

fn cancel(server: &TestServer, id: &str) -> (u16, String) {
    server.cancel_delete(id)
}

fn requests(server: &TestServer) -> Vec<serde_json::Value> {
    server.delete_requests()
}

fn flush(server: &TestServer) {
    assert_eq!(server.post("/flush", "text/plain", None, b"").0, 204);
}

/// 300 rows in parts and 30 in the memtable for `api` and `web`.
fn load(server: &TestServer, t0: i64) {
    push(server, "api", t0, 300);
    push(server, "web", t0, 300);
    flush(server);
    push(server, "api", t0 + 10 * MIN, 30);
    push(server, "web", t0 + 10 * MIN, 30);
}

#[test]
fn deleted_rows_are_hidden_at_once_across_restarts_until_cancelled() {
    let mut server = TestServer::start_with(&["--delete-request-cancel-period", "1h"]);
    let t0 = now_ns() - 30 * MIN;
    let (from, to) = (t0 - MIN, now_ns());
    load(&server, t0);
    assert_eq!(lines(&server, r#"{app="api"}"#, from, to).len(), 330);
    let (status, text) = delete(&server, r#"{app="api"} |= "secret""#, t0 - 1, t0 + 20 * MIN);
    assert_eq!(status, 204, "{text}");
    let check_hidden = |server: &TestServer| {
        let api = lines(server, r#"{app="api"}"#, from, to);
        assert_eq!(api.len(), 200 + 20, "parts and memtable filtered");
        assert!(api.iter().all(|l| !l.contains("secret")));
        assert_eq!(lines(server, r#"{app="web"}"#, from, to).len(), 330);
        // Metric queries (plans and the columnar path) see the same.
        let at = now_ns();
        let q = |e: &str| instant_sum(server, e, at);
        assert_eq!(q(r#"sum(count_over_time({app="api"}[1h]))"#), 220.0);
        assert_eq!(
            q(r#"sum(count_over_time({app="api"} |= "token" [1h]))"#),
            0.0
        );
        assert_eq!(
            q(r#"sum by (app) (count_over_time({app=~"api|web"} | json | n >= 0 [1h]))"#),
            550.0
        );
        assert_eq!(
            q(r#"sum(sum_over_time({app="api"} | json | unwrap n [1h]))"#),
            {
                let parts: i64 = (0..300).filter(|i| i % 3 != 0).sum();
                let mem: i64 = (0..30).filter(|i| i % 3 != 0).sum();
                (parts + mem) as f64
            }
        );
    };
    check_hidden(&server);
    let list = requests(&server);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["status"], "received");
    assert_eq!(list[0]["query"], r#"{app="api"} |= "secret""#);
    // Times in seconds with millisecond precision, as Loki's model.Time.
    let start_ms = (t0 - 1).div_euclid(1_000_000);
    assert_eq!(
        list[0]["start_time"].as_f64().unwrap(),
        start_ms as f64 / 1000.0
    );
    let id = list[0]["request_id"].as_str().unwrap().to_string();
    // The request survives a restart, and so does the hiding.
    server.restart();
    check_hidden(&server);
    assert_eq!(requests(&server).len(), 1);
    // Cancelled within the period: the rows come back.
    assert_eq!(cancel(&server, "nosuchid").0, 404);
    let (status, text) = cancel(&server, &id);
    assert_eq!(status, 204, "{text}");
    assert!(requests(&server).is_empty());
    assert_eq!(lines(&server, r#"{app="api"}"#, from, to).len(), 330);
    server.restart();
    assert_eq!(lines(&server, r#"{app="api"}"#, from, to).len(), 330);
    // Queries that are not a selector with line filters are refused.
    let (status, text) = delete(&server, r#"{app="api"} | json"#, t0, to);
    assert_eq!(status, 400, "{text}");
    let (status, text) = server.post(
        "/loki/api/v1/delete?query=%7Bapp%3D%22api%22%7D",
        "text/plain",
        None,
        b"",
    );
    assert_eq!((status, text.trim()), (400, "start time not set"));
}

#[test]
fn due_requests_are_purged_from_disk() {
    let mut server = TestServer::start_with(&["--delete-request-cancel-period", "1s"]);
    let t0 = now_ns() - 30 * MIN;
    let (from, to) = (t0 - MIN, now_ns());
    load(&server, t0);
    let (status, text) = delete(&server, r#"{app="api"} |= "secret""#, t0 - 1, t0 + 20 * MIN);
    assert_eq!(status, 204, "{text}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while requests(&server)[0]["status"] != "processed" {
        assert!(Instant::now() < deadline, "request never processed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let stats = server.get_json("/admin/storage/stats", &[]);
    assert_eq!(stats["deleted_rows"], 110, "{stats}");
    assert_eq!(stats["part_rows"], 660 - 110, "{stats}");
    let id = requests(&server)[0]["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, text) = cancel(&server, &id);
    assert_eq!(status, 400, "{text}");
    // Gone from disk: without the request the rows still do not come back.
    server.stop();
    std::fs::remove_file(server.data_dir.join("tenants/fake/deletes")).unwrap();
    server.start_again();
    assert!(requests(&server).is_empty());
    let api = lines(&server, r#"{app="api"}"#, from, to);
    assert_eq!(api.len(), 220);
    assert!(api.iter().all(|l| !l.contains("secret")));
    assert_eq!(lines(&server, r#"{app="web"}"#, from, to).len(), 330);
}
