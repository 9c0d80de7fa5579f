//! Delete requests and retention with `runakefli serve --backend clickhouse`
//! (ClickHouse 26.9 via chdb behind the test front), side by side with an
//! embedded-store server fed the same pushes and the same requests: every
//! query, series, label, index and delete-list answer must be equal at each
//! step — requests accepted, cancelled, processed, a restart, and retention
//! passes — and the rows must be gone from ClickHouse's tables themselves.
//!
//! Without chdb-core these tests fail, naming `.ci/setup-clients.sh chdb`.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;
#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use common::TestServer;
use runakefli_clickhouse::client::Request;
use runakefli_clickhouse::{Client, Config};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const SEC: i64 = 1_000_000_000;
const MIN: i64 = 60 * SEC;
const DAY: i64 = 86_400 * SEC;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// An embedded server and a ClickHouse one (on a fresh database, whose
/// client is returned), both with `extra` flags.
fn pair(test: &str, extra: &[&str]) -> (TestServer, TestServer, Client) {
    let db = format!("hk_{test}_{}", std::process::id());
    let mut args: Vec<String> = front::serve_args(&db);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ch = TestServer::start_with(&args);
    let embedded = TestServer::start_with(extra);
    (embedded, ch, Client::new(Config::new(front::url(&db), db)))
}

/// Pushes the same body to both servers as `tenant` (None: the default).
fn push_both(servers: [&TestServer; 2], tenant: Option<&str>, body: &Value) {
    for s in servers {
        let headers: Vec<(&str, &str)> = tenant.map(|t| ("X-Scope-OrgID", t)).into_iter().collect();
        let (status, text) = s.post_with(
            "/loki/api/v1/push",
            "application/json",
            None,
            &headers,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 204, "{text}");
    }
}

/// `n` lines per stream from `t0`, one second apart: every third holds a
/// secret, every fifth `keep`, every seventh a password.
fn lines_body(t0: i64, n: i64) -> Value {
    let values = |app: &str| -> Vec<Value> {
        (0..n)
            .map(|i| {
                let mut line = format!("{app} line {i}");
                if i % 3 == 0 {
                    line.push_str(" token=secret");
                }
                if i % 5 == 0 {
                    line.push_str(" keep");
                }
                if i % 7 == 0 {
                    line.push_str(" password=hunter2");
                }
                json!([(t0 + i * SEC).to_string(), line])
            })
            .collect()
    };
    json!({"streams": [
        {"stream": {"app": "api", "env": "prod"}, "values": values("api")},
        {"stream": {"app": "web", "env": "prod"}, "values": values("web")},
        {"stream": {"app": "api", "env": "dev"}, "values": values("dev")},
    ]})
}

/// Every read the comparison makes over `[from, to)`: log queries both
/// ways, metric queries, series, labels, values, index stats and volume.
fn reads(from: i64, to: i64) -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let range = |q: &str, dir: &str| {
        vec![
            ("query", q.to_string()),
            ("start", from.to_string()),
            ("end", to.to_string()),
            ("limit", "5000".to_string()),
            ("direction", dir.to_string()),
        ]
    };
    let metric = |q: &str| {
        vec![
            ("query", q.to_string()),
            ("start", from.to_string()),
            ("end", to.to_string()),
            ("step", "300".to_string()),
        ]
    };
    let window = |q: &str| {
        vec![
            ("query", q.to_string()),
            ("start", from.to_string()),
            ("end", to.to_string()),
        ]
    };
    let mut v = Vec::new();
    for q in [
        r#"{app=~".+"}"#,
        r#"{app="api"} |= "secret""#,
        r#"{env="prod"} != "keep""#,
    ] {
        v.push(("/loki/api/v1/query_range", range(q, "backward")));
        v.push(("/loki/api/v1/query_range", range(q, "forward")));
    }
    for q in [
        r#"sum by (app, env) (count_over_time({app=~".+"}[10m]))"#,
        r#"sum(bytes_over_time({env="prod"} |~ "pass(word)?=" [10m]))"#,
        r#"sum by (app) (rate({env="prod"} |= "token" [10m]))"#,
    ] {
        v.push(("/loki/api/v1/query_range", metric(q)));
    }
    v.push(("/loki/api/v1/series", window(r#"{app=~".+"}"#)));
    let bare = vec![("start", from.to_string()), ("end", to.to_string())];
    v.push(("/loki/api/v1/labels", bare.clone()));
    v.push(("/loki/api/v1/label/env/values", bare));
    v.push(("/loki/api/v1/index/stats", window(r#"{app=~".+"}"#)));
    v.push(("/loki/api/v1/index/volume", window(r#"{app=~".+"}"#)));
    v
}

/// Requires every read of `[from, to)` to answer alike on both servers
/// (as `tenant`); returns the lines `{app=~".+"}` answers.
fn same_reads(
    embedded: &TestServer,
    ch: &TestServer,
    tenant: Option<&str>,
    from: i64,
    to: i64,
    step: &str,
) -> usize {
    let headers: Vec<(&str, &str)> = tenant.map(|t| ("X-Scope-OrgID", t)).into_iter().collect();
    for (path, params) in reads(from, to) {
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let want = embedded.answer_with(path, &params, &headers);
        let got = ch.answer_with(path, &params, &headers);
        assert_eq!(got, want, "{step}: {path} {params:?}");
        assert!(
            want.get("error").is_none(),
            "{step}: {path} {params:?}: {want}"
        );
    }
    let all = [
        ("query", r#"{app=~".+"}"#.to_string()),
        ("start", from.to_string()),
        ("end", to.to_string()),
        ("limit", "5000".to_string()),
    ];
    let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
    common::streams_of(&ch.answer_with("/loki/api/v1/query_range", &all, &headers))
        .iter()
        .map(|(_, e)| e.len())
        .sum()
}

/// The delete list without what differs between servers (ids and creation
/// times), ordered by query.
fn listed(s: &TestServer) -> Vec<Value> {
    let mut v: Vec<Value> = s
        .delete_requests()
        .into_iter()
        .map(|r| json!([r["query"], r["start_time"], r["end_time"], r["status"]]))
        .collect();
    v.sort_by_key(|r| r.to_string());
    v
}

fn id_of(s: &TestServer, query: &str) -> String {
    s.delete_requests()
        .iter()
        .find(|r| r["query"] == query)
        .map(|r| r["request_id"].as_str().unwrap().to_string())
        .unwrap()
}

fn count(c: &Client, sql: &str) -> u64 {
    let r = c.rows(sql, &Request::default()).unwrap();
    let n = &r[0]["n"];
    n.as_u64()
        .or_else(|| n.as_str().and_then(|s| s.parse().ok()))
        .unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

const SECRETS: &str = r#"{app="api"} |= "secret" != "keep""#;
const PASSWORDS: &str = r#"{env="prod"} |~ "pass(word)?=h.nter""#;

#[test]
fn delete_requests_answer_like_the_embedded_store_until_cancelled() {
    let (embedded, mut ch, _) = pair("cancel", &["--delete-request-cancel-period", "1h"]);
    let t0 = now_ns() - 30 * MIN;
    let (from, to) = (t0 - MIN, now_ns() + MIN);
    push_both([&embedded, &ch], None, &lines_body(t0, 600));
    let all = same_reads(&embedded, &ch, None, from, to, "before");
    assert_eq!(all, 1800);

    for s in [&embedded, &ch] {
        let (status, text) = s.delete_request(SECRETS, t0, t0 + 5 * MIN);
        assert_eq!(status, 204, "{text}");
        let (status, text) = s.delete_request(PASSWORDS, t0, t0 + 20 * MIN);
        assert_eq!(status, 204, "{text}");
    }
    assert_eq!(listed(&ch), listed(&embedded));
    assert_eq!(listed(&ch).len(), 2);
    let hidden = same_reads(&embedded, &ch, None, from, to, "two requests");
    assert!(hidden < all, "{hidden}");

    // A restart keeps the requests and the hiding.
    ch.restart();
    assert_eq!(listed(&ch), listed(&embedded));
    same_reads(&embedded, &ch, None, from, to, "after a restart");

    // Cancelled within the period: its rows come back on both.
    for s in [&embedded, &ch] {
        let id = id_of(s, SECRETS);
        assert_eq!(s.cancel_delete(&id).0, 204);
        assert_eq!(s.cancel_delete("nosuchid").0, 404);
    }
    assert_eq!(listed(&ch), listed(&embedded));
    let one = same_reads(&embedded, &ch, None, from, to, "one cancelled");
    assert!(hidden < one && one < all, "{hidden} {one} {all}");

    // A line regexp outside the RE2 subset ClickHouse evaluates as Loki
    // does is refused there (the embedded store evaluates it in Rust).
    let digits = r#"{app="web"} |~ "line \\d+ token""#;
    let (status, text) = ch.delete_request(digits, t0, t0 + MIN);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("RE2 subset"), "{text}");
    assert_eq!(embedded.delete_request(digits, t0, t0 + MIN).0, 204);
}

#[test]
fn due_delete_requests_are_processed_and_their_rows_gone_from_clickhouse() {
    let (embedded, mut ch, c) = pair("due", &["--delete-request-cancel-period", "1s"]);
    let t0 = now_ns() - 30 * MIN;
    let (from, to) = (t0 - MIN, now_ns() + MIN);
    push_both([&embedded, &ch], None, &lines_body(t0, 600));
    let secret_rows = "SELECT count() AS n FROM logs WHERE stream_id IN \
        (SELECT stream_id FROM streams WHERE labels['app'] = 'api') \
        AND line LIKE '%secret%' AND line NOT LIKE '%keep%'";
    let before = count(&c, secret_rows);
    assert_eq!(before, 2 * (200 - 40));
    for s in [&embedded, &ch] {
        assert_eq!(s.delete_request(SECRETS, t0, t0 + 5 * MIN).0, 204);
        assert_eq!(s.delete_request(PASSWORDS, t0, t0 + 20 * MIN).0, 204);
    }
    for s in [&embedded, &ch] {
        wait_for("both requests processed", || {
            s.delete_requests()
                .iter()
                .all(|r| r["status"] == "processed")
        });
    }
    assert_eq!(listed(&ch), listed(&embedded));
    same_reads(&embedded, &ch, None, from, to, "processed");
    // Gone from the table: secrets of both api streams in the first 5
    // minutes (both ends included), and those of the prod one holding a
    // password (the second request) after them.
    let left = (0..600)
        .filter(|i| i % 3 == 0 && i % 5 != 0)
        .map(|i| u64::from(i > 300) + u64::from(i > 300 && i % 7 != 0))
        .sum::<u64>();
    assert_eq!(count(&c, secret_rows), left);
    // Every password line of the prod streams; dev's stay, but for those
    // the first request deleted (a secret, no `keep`, in its 5 minutes).
    let passwords = "SELECT count() AS n FROM logs WHERE line LIKE '%password=hunter2%'";
    let dev_left = (0..600)
        .filter(|i| i % 7 == 0 && !(i % 3 == 0 && i % 5 != 0 && *i <= 300))
        .count();
    assert_eq!(count(&c, passwords), dev_left as u64);
    // /metrics counts the two requests the housekeeping thread processed.
    let (status, metrics) = ch.get("/metrics", &[]);
    assert_eq!(status, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l == "runakefli_clickhouse_delete_requests_processed_total 2"),
        "{metrics}"
    );
    // Too late to cancel, on both; still processed after a restart.
    for s in [&embedded, &ch] {
        let (status, text) = s.cancel_delete(&id_of(s, SECRETS));
        assert_eq!(status, 400, "{text}");
    }
    ch.restart();
    assert_eq!(listed(&ch), listed(&embedded));
    same_reads(&embedded, &ch, None, from, to, "processed, restarted");
}

/// When the lines of the UTC day `days` before today start: 01:00 that
/// day, or for today a few minutes ago (never before midnight).
fn day_time(days: i64) -> i64 {
    let now = now_ns();
    let start = (now.div_euclid(DAY) - days) * DAY;
    if days == 0 {
        (now - 5 * MIN).max(start + SEC)
    } else {
        start + 3600 * SEC
    }
}

#[test]
fn retention_answers_like_the_embedded_store() {
    let (embedded, ch, c) = pair(
        "retention",
        &[
            "--multi-tenant",
            "--retention-period",
            "3d",
            "--retention-stream",
            r#"{env="dev"}:1d:1"#,
            "--tenant-retention-period",
            "audit=400d",
            "--retention-interval",
            "1s",
        ],
    );
    // Six days of data for tenants `t` and `audit`, 40 lines a day.
    for d in (0..6).rev() {
        let body = lines_body(day_time(d), 40);
        push_both([&embedded, &ch], Some("t"), &body);
        push_both([&embedded, &ch], Some("audit"), &body);
    }
    let (from, to) = (day_time(7), now_ns() + MIN);
    // `t`: prod streams keep 3 days (today and the three before it: the
    // whole day must be older than 3 days), dev keeps 1 day.
    let want_t = 40 * (2 * 4 + 2);
    // `audit` overrides only the period: the dev rule still applies.
    let want_audit = 40 * (2 * 6 + 2);
    let lines_of = |s: &TestServer, tenant: &str| -> usize {
        let q = [
            ("query", r#"{app=~".+"}"#.to_string()),
            ("start", from.to_string()),
            ("end", to.to_string()),
            ("limit", "5000".to_string()),
        ];
        let q: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let v = s.answer_with("/loki/api/v1/query_range", &q, &[("X-Scope-OrgID", tenant)]);
        common::streams_of(&v).iter().map(|(_, e)| e.len()).sum()
    };
    for s in [&embedded, &ch] {
        wait_for("retention to run for both tenants", || {
            lines_of(s, "t") == want_t && lines_of(s, "audit") == want_audit
        });
    }
    assert_eq!(
        same_reads(&embedded, &ch, Some("t"), from, to, "tenant t"),
        want_t
    );
    assert_eq!(
        same_reads(&embedded, &ch, Some("audit"), from, to, "tenant audit"),
        want_audit
    );
    // In ClickHouse itself, only the kept rows are left.
    assert_eq!(
        count(&c, "SELECT count() AS n FROM logs WHERE tenant = 't'"),
        want_t as u64
    );
    assert_eq!(
        count(&c, "SELECT count() AS n FROM logs WHERE tenant = 'audit'"),
        want_audit as u64
    );
}
