//! `runakefli serve --backend clickhouse` end to end: the real binary over the
//! ClickHouse 26.9 engine (chdb-core behind the test front of
//! `crates/clickhouse/tests/`), fed the same Loki JSON, Loki protobuf and
//! OTLP pushes as an embedded-backend server, must answer log and metric
//! `query_range`, instant queries, labels, label values, series, index and
//! Drilldown endpoints exactly as the embedded one does; tenants stay apart,
//! live tail works, a ClickHouse that goes away answers 503 until it
//! returns, and endpoints only the embedded store offers answer 501 (delete
//! requests and retention: `clickhouse_housekeeping.rs`).
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

use common::{proto_push_body, TestServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};

/// 2023-11-14T22:13:20Z; every entry lies within minutes of it (one day).
const T0: i64 = 1_700_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// A server on a fresh ClickHouse database of its own, and that database.
fn clickhouse_server(test: &str, extra: &[&str]) -> (TestServer, String) {
    let db = format!(
        "serve_{test}_{}_{}",
        std::process::id(),
        NEXT_DB.fetch_add(1, Ordering::Relaxed)
    );
    let owned = front::serve_args(&db);
    let mut args: Vec<&str> = owned.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    (TestServer::start_with(&args), db)
}

fn ts(offset: i64) -> String {
    (T0 + offset).to_string()
}

/// The JSON push: two streams, JSON and logfmt lines, structured metadata,
/// equal timestamps (tie order) and a line with a newline and non-ASCII text.
fn json_push() -> Value {
    json!({"streams": [
        {"stream": {"app": "api", "env": "prod"}, "values": [
            [ts(0), r#"{"level":"info","msg":"started","status":200}"#],
            [ts(SEC), r#"{"level":"error","msg":"connection timeout","status":504}"#, {"trace_id": "abc"}],
            [ts(SEC), r#"{"level":"error","msg":"same instant, pushed second","status":500}"#],
            [ts(45 * SEC), r#"{"level":"warn","msg":"slow","status":200,"took":"1.5s"}"#],
            [ts(70 * SEC), "plain text línea\nwith a newline"],
            [ts(125 * SEC), r#"{"level":"error","msg":"timed out again","status":503}"#]
        ]},
        {"stream": {"app": "web", "env": "dev"}, "values": [
            [ts(2 * SEC), "level=info status=200 path=/ duration=12ms"],
            [ts(30 * SEC), "level=error status=500 path=/login duration=1.2s"],
            [ts(90 * SEC), "level=info status=404 path=/missing duration=3ms", {"user": "u1"}]
        ]}
    ]})
}

/// The protobuf push (snappy): a third stream and more rows for `api`.
fn proto_push() -> Vec<u8> {
    let e = |off: i64, line: &str, md: &[(&str, &str)]| {
        (
            T0 + off,
            line.to_string(),
            md.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    };
    proto_push_body(&[
        (
            r#"{app="worker", env="prod", queue="emails"}"#,
            vec![
                e(5 * SEC, "job 1 done in 0.3s", &[]),
                e(65 * SEC, "job 2 failed: timeout", &[("attempt", "2")]),
                e(66 * SEC, "job 3 done in 1.1s", &[]),
            ],
        ),
        (
            r#"{app="api", env="prod"}"#,
            vec![e(
                100 * SEC,
                r#"{"level":"error","msg":"upstream timeout","status":502}"#,
                &[("trace_id", "def")],
            )],
        ),
    ])
}

/// An OTLP/HTTP JSON export: resource attributes become stream labels and
/// structured metadata by Loki's rules.
fn otlp_push() -> Value {
    let attr = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    json!({"resourceLogs": [{
        "resource": {"attributes": [attr("service.name", "otel-svc"), attr("host.name", "h1")]},
        "scopeLogs": [{"scope": {"name": "lib"}, "logRecords": [
            {"timeUnixNano": ts(3 * SEC), "severityText": "ERROR",
             "body": {"stringValue": "otlp request timeout"}, "attributes": [attr("route", "/a")]},
            {"timeUnixNano": ts(80 * SEC), "severityText": "INFO",
             "body": {"stringValue": "otlp request ok"}}
        ]}]
    }]})
}

fn push_all(s: &TestServer) {
    s.push_json(&json_push());
    let (status, text) = s.post(
        "/otlp/v1/logs",
        "application/json",
        None,
        otlp_push().to_string().as_bytes(),
    );
    assert_eq!(status, 204, "otlp push: {text}");
    let (status, text) = s.post(
        "/loki/api/v1/push",
        "application/x-protobuf",
        None,
        &proto_push(),
    );
    assert_eq!(status, 204, "protobuf push: {text}");
}

fn answer(s: &TestServer, path: &str, params: &[(&str, &str)]) -> Value {
    s.answer(path, params)
}

/// Log and metric queries over the pushed data.
const LOG_QUERIES: &[&str] = &[
    r#"{app="api"}"#,
    r#"{env="prod"}"#,
    r#"{app=~"api|web"} |= "timeout""#,
    r#"{app=~".+"} != "level=info""#,
    r#"{env="prod"} |~ "time.*out""#,
    r#"{app="api"} | json | level="error""#,
    r#"{app="web"} | logfmt | status >= 400"#,
    r#"{app="api"} | trace_id="abc""#,
    r#"{service_name="otel-svc"}"#,
    r#"{service_name="otel-svc"} | route="/a""#,
];

const METRIC_QUERIES: &[&str] = &[
    r#"count_over_time({app="api"}[1m])"#,
    r#"sum by (env) (rate({app=~".+"}[1m]))"#,
    r#"bytes_over_time({app="web"}[5m])"#,
    r#"sum(count_over_time({env="prod"} |= "timeout" [2m]))"#,
    r#"topk(1, sum by (app) (count_over_time({app=~".+"}[1m])))"#,
    r#"sum by (level) (count_over_time({app="api"} | json | __error__="" [1m]))"#,
    // `| json` without parameters and a label with `_` (rows where other
    // members may give it are residual).
    r#"sum by (app) (count_over_time({app="api"} | json | __error__="" | trace_id="abc" [1m]))"#,
    // A duration filter, decided in SQL.
    r#"sum by (app) (count_over_time({app="api"} | json | __error__="" | took > 1s [1m]))"#,
    // A `duration()` unwrap, in SQL too.
    r#"max_over_time({app="api"} | json | unwrap duration(took) | __error__="" [1m]) by (app)"#,
    // An IPv6 `ip()` filter, decided in SQL for plain addresses.
    r#"sum by (app) (count_over_time({app="api"} | json | __error__="" | addr = ip("::1") [1m]))"#,
    // Declined: a zoned `ip()` address (it matches nothing); the engine scans.
    r#"sum by (app) (count_over_time({app="api"} | json | __error__="" | addr != ip("fe80::1%eth0") [1m]))"#,
    // An error answer (the plain-text line fails `| json`), compared too.
    r#"sum by (level) (count_over_time({app="api"} | json [1m]))"#,
];

/// Every request the comparison makes, as (path, params).
fn requests() -> Vec<(String, Vec<(String, String)>)> {
    let start = (T0 - 60 * SEC).to_string();
    let end = (T0 + 300 * SEC).to_string();
    let p = |kv: &[(&str, &str)]| -> Vec<(String, String)> {
        let mut v = vec![
            ("start".to_string(), start.clone()),
            ("end".to_string(), end.clone()),
        ];
        v.extend(kv.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        v
    };
    let mut out = Vec::new();
    for q in LOG_QUERIES {
        for dir in ["backward", "forward"] {
            out.push((
                "/loki/api/v1/query_range".into(),
                p(&[("query", q), ("direction", dir), ("limit", "100")]),
            ));
        }
        out.push((
            "/loki/api/v1/query_range".into(),
            p(&[("query", q), ("limit", "2")]),
        ));
    }
    for q in METRIC_QUERIES {
        out.push((
            "/loki/api/v1/query_range".into(),
            p(&[("query", q), ("step", "30s")]),
        ));
        out.push((
            "/loki/api/v1/query".into(),
            vec![
                ("query".into(), q.to_string()),
                ("time".into(), (T0 + 120 * SEC).to_string()),
            ],
        ));
    }
    out.push(("/loki/api/v1/labels".into(), p(&[])));
    out.push((
        "/loki/api/v1/labels".into(),
        p(&[("query", r#"{app="web"}"#)]),
    ));
    for name in [
        "app",
        "env",
        "queue",
        "service_name",
        "host_name",
        "missing",
    ] {
        out.push((format!("/loki/api/v1/label/{name}/values"), p(&[])));
    }
    out.push((
        "/loki/api/v1/label/app/values".into(),
        p(&[("query", r#"{env="prod"}"#)]),
    ));
    for m in [r#"{env="prod"}"#, r#"{app=~".+"}"#, r#"{queue="emails"}"#] {
        out.push(("/loki/api/v1/series".into(), p(&[("match[]", m)])));
    }
    // Index and Drilldown endpoints: the engine answers them over the same
    // backend reads.
    let all = r#"{app=~".+"}"#;
    for (path, q) in [
        ("/loki/api/v1/index/stats", r#"{app="api"}"#),
        ("/loki/api/v1/index/volume", r#"{env="prod"}"#),
        ("/loki/api/v1/detected_labels", all),
        ("/loki/api/v1/detected_fields", r#"{app="api"}"#),
        ("/loki/api/v1/detected_field/level/values", r#"{app="api"}"#),
        ("/loki/api/v1/patterns", r#"{app="web"}"#),
    ] {
        out.push((path.into(), p(&[("query", q)])));
    }
    out.push((
        "/loki/api/v1/index/volume_range".into(),
        p(&[("query", all), ("step", "60s")]),
    ));
    out
}

#[test]
fn clickhouse_answers_like_the_embedded_store() {
    let (ch, db) = clickhouse_server("answers", &[]);
    let embedded = TestServer::start();
    push_all(&ch);
    push_all(&embedded);
    // The rows are in ClickHouse, every pushed entry once.
    let client =
        runakefli_clickhouse::Client::new(runakefli_clickhouse::Config::new(front::url(&db), db));
    let rows = client
        .rows("SELECT count() AS n FROM logs", &Default::default())
        .unwrap();
    assert_eq!(rows[0]["n"].to_string().trim_matches('"'), "15", "{rows:?}");
    let mut checked = 0;
    let mut errors = 0;
    for (path, params) in requests() {
        let params: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let want = answer(&embedded, &path, &params);
        let got = answer(&ch, &path, &params);
        assert_eq!(
            got, want,
            "{path} {params:?}\nclickhouse: {got}\nembedded:   {want}"
        );
        checked += 1;
        errors += usize::from(got.get("error").is_some());
    }
    // Only the deliberate `| json` error is an error answer.
    assert_eq!(errors, 2, "error answers (range and instant)");
    // The comparison is only worth something if the answers hold data.
    let api = ch.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="api"}"#),
            ("start", &ts(-60 * SEC)),
            ("end", &ts(300 * SEC)),
        ],
    );
    // Structured metadata splits the stream in the answer, as in Loki.
    let values: Vec<&Value> = api["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["values"].as_array().unwrap())
        .collect();
    assert_eq!(values.len(), 7, "{api}");
    assert!(
        values
            .iter()
            .any(|v| v[1] == "plain text línea\nwith a newline"),
        "{api}"
    );
    assert!(checked > 50, "{checked} requests compared");
    // The answer's statistics count what ClickHouse read for the plan it
    // answered (at least the 7 rows returned; the comparison above leaves
    // statistics out, they differ by store) and the 7 lines it kept.
    let summary = &api["data"]["stats"]["summary"];
    let lines = summary["totalLinesProcessed"].as_u64().unwrap_or(0);
    let bytes = summary["totalBytesProcessed"].as_u64().unwrap_or(0);
    let kept = summary["totalPostFilterLines"].as_u64().unwrap_or(0);
    assert!(lines >= 7 && bytes > 0 && kept == 7, "{summary}");
    // /metrics tells how much of it ran in SQL: plain selectors, line
    // filters and grouped counts are answered there, a plan with a zoned
    // `ip()` address is declined (the engine scans), and both ship rows; the
    // embedded server has no such family.
    let (status, page) = ch.get("/metrics", &[]);
    assert_eq!(status, 200, "{page}");
    let counter = |name: &str| -> f64 {
        page.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert!(
        counter("runakefli_clickhouse_plans_answered_total ") > 0.0,
        "{page}"
    );
    assert!(
        counter("runakefli_clickhouse_plans_declined_total ") > 0.0,
        "{page}"
    );
    assert!(
        counter("runakefli_clickhouse_rows_shipped_total{path=\"plan\"}") > 0.0,
        "{page}"
    );
    assert!(
        counter("runakefli_clickhouse_rows_shipped_total{path=\"scan\"}") > 0.0,
        "{page}"
    );
    // /series ships no log row: each stream's first and last time are
    // aggregated in SQL (one stream-bounds query per selector), and the
    // answers are the embedded store's (compared above too).
    let read = |name: &str| -> f64 {
        let (_, page) = ch.get("/metrics", &[]);
        page.lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let names = [
        "runakefli_clickhouse_scans_total ",
        "runakefli_clickhouse_rows_shipped_total{path=\"scan\"}",
        "runakefli_clickhouse_stream_bounds_total ",
    ];
    let before: Vec<f64> = names.iter().map(|n| read(n)).collect();
    let mut listed = 0;
    for (path, params) in requests()
        .into_iter()
        .filter(|(p, _)| p == "/loki/api/v1/series")
    {
        let params: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let got = answer(&ch, &path, &params);
        assert_eq!(got, answer(&embedded, &path, &params), "{params:?}");
        listed += got["data"].as_array().map_or(0, Vec::len);
    }
    let after: Vec<f64> = names.iter().map(|n| read(n)).collect();
    assert!(listed > 0, "the series answers hold streams");
    assert_eq!(after[0] - before[0], 0.0, "scans for /series");
    assert_eq!(after[1] - before[1], 0.0, "log rows shipped for /series");
    assert_eq!(after[2] - before[2], 3.0, "stream-bounds queries");
    // index/stats and index/volume(_range) ship no log row either: each
    // stream's entries are summed in SQL (one stream-totals query each).
    let names = [
        "runakefli_clickhouse_scans_total ",
        "runakefli_clickhouse_rows_shipped_total{path=\"scan\"}",
        "runakefli_clickhouse_stream_totals_total ",
    ];
    let before: Vec<f64> = names.iter().map(|n| read(n)).collect();
    let mut sized = 0;
    let index = requests()
        .into_iter()
        .filter(|(p, _)| p.starts_with("/loki/api/v1/index/"))
        .collect::<Vec<_>>();
    for (path, params) in &index {
        let params: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let got = answer(&ch, path, &params);
        assert_eq!(got, answer(&embedded, path, &params), "{path} {params:?}");
        let holds = got["bytes"].as_u64().is_some_and(|b| b > 0)
            || got["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty());
        sized += usize::from(holds);
    }
    let after: Vec<f64> = names.iter().map(|n| read(n)).collect();
    assert_eq!(sized, index.len(), "every index answer holds sizes");
    assert_eq!(after[0] - before[0], 0.0, "scans for index endpoints");
    assert_eq!(
        after[1] - before[1],
        0.0,
        "log rows shipped for index endpoints"
    );
    assert!(
        after[2] - before[2] >= index.len() as f64,
        "stream-totals queries"
    );
    let (_, page) = embedded.get("/metrics", &[]);
    assert!(!page.contains("runakefli_clickhouse_"), "{page}");
}

#[test]
fn clickhouse_serves_health_and_answers_501_for_embedded_only_endpoints() {
    let (ch, _) = clickhouse_server("endpoints", &[]);
    assert_eq!(ch.get("/ready", &[]), (200, "ready\n".to_string()));
    let (status, _) = ch.post("/flush", "text/plain", None, b"");
    assert_eq!(status, 204);
    // Delete requests are served (see clickhouse_housekeeping.rs), a form body too.
    assert_eq!(ch.get("/loki/api/v1/delete", &[]), (200, "[]".to_string()));
    let (status, body) = ch.post(
        "/loki/api/v1/delete",
        "application/x-www-form-urlencoded",
        None,
        format!("query={{app=\"api\"}}&start={}", T0 / SEC).as_bytes(),
    );
    assert_eq!(status, 204, "{body}");
    assert_eq!(ch.delete_requests().len(), 1);
    let (status, body) = ch.get("/admin/storage/stats", &[]);
    assert_eq!(status, 501, "{body}");
    assert!(
        body.contains("not implemented for the clickhouse backend"),
        "{body}"
    );
    let (status, body) = ch.get("/metrics", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains("runakefli_wal_written_bytes_total"),
        "{body}"
    );
}

#[test]
fn clickhouse_refuses_the_disk_budget_at_start() {
    let url = front::url("disk_budget");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runakefli"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "clickhouse",
            "--clickhouse-url",
            &url,
            "--max-disk-bytes",
            "1GiB",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max_disk_bytes") && err.contains("clickhouse"),
        "{err}"
    );
}

#[test]
fn clickhouse_keeps_tenants_apart_like_the_embedded_store() {
    let (ch, _) = clickhouse_server("tenants", &["--multi-tenant"]);
    let embedded = TestServer::start_with(&["--multi-tenant"]);
    let body = |app: &str| {
        json!({"streams": [{"stream": {"app": app}, "values": [[ts(0), format!("line of {app}")]]}]})
            .to_string()
    };
    for s in [&ch, &embedded] {
        for (tenant, app) in [("team-a", "alpha"), ("team-b", "beta")] {
            let (status, text) = s.post_with(
                "/loki/api/v1/push",
                "application/json",
                None,
                &[("X-Scope-OrgID", tenant)],
                body(app).as_bytes(),
            );
            assert_eq!(status, 204, "{text}");
        }
    }
    let (start, end) = (ts(-SEC), ts(SEC));
    for tenant in ["team-a", "team-b", "team-c"] {
        for (path, q) in [
            ("/loki/api/v1/labels", None),
            ("/loki/api/v1/label/app/values", None),
            ("/loki/api/v1/query_range", Some(r#"{app=~".+"}"#)),
        ] {
            let mut params = vec![("start", start.as_str()), ("end", end.as_str())];
            if let Some(q) = q {
                params.push(("query", q));
            }
            let headers = [("X-Scope-OrgID", tenant)];
            let get = |s: &TestServer| {
                let (status, body) = s.get_with(path, &params, &headers);
                assert_eq!(status, 200, "{path} {tenant}: {body}");
                let mut v: Value = serde_json::from_str(&body).unwrap();
                v["data"].as_object_mut().map(|o| o.remove("stats"));
                v
            };
            let (got, want) = (get(&ch), get(&embedded));
            assert_eq!(got, want, "{path} for {tenant}");
            let text = got.to_string();
            match tenant {
                "team-a" => assert!(!text.contains("beta"), "{text}"),
                "team-b" => assert!(!text.contains("alpha"), "{text}"),
                _ => assert!(!text.contains("alpha") && !text.contains("beta"), "{text}"),
            }
        }
    }
}

/// A TCP relay in front of the chdb front that can be switched off, to play
/// a ClickHouse that goes away and comes back, or stalled (it holds every
/// byte until resumed), to play one that stops answering.
struct Relay {
    port: u16,
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stalled: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

/// Copies `from` to `to`, holding each chunk while `stalled` is set.
fn relay_copy(
    mut from: std::net::TcpStream,
    mut to: std::net::TcpStream,
    stalled: &std::sync::atomic::AtomicBool,
) {
    use std::io::{Read, Write};
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        while stalled.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

impl Relay {
    fn start(target: String) -> Relay {
        use std::net::{TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let relay = Relay {
            port,
            down: Default::default(),
            stalled: Default::default(),
            open: Default::default(),
        };
        let (down, stalled, open) = (
            relay.down.clone(),
            relay.stalled.clone(),
            relay.open.clone(),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if down.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(upstream) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut o = open.lock().unwrap();
                o.push(client.try_clone().unwrap());
                o.push(upstream.try_clone().unwrap());
                for (from, to) in [
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap()),
                    (upstream, client),
                ] {
                    let stalled = stalled.clone();
                    std::thread::spawn(move || relay_copy(from, to, &stalled));
                }
            }
        });
        relay
    }

    /// Refuses new connections and cuts the open ones.
    fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
        for c in self.open.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }

    fn come_back(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    /// Holds every byte in both directions: requests hang unanswered.
    fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    fn resume(&self) {
        self.stalled.store(false, Ordering::SeqCst);
    }
}

/// The value of the sample `name` (with its labels, as printed) on `/metrics`.
fn metric(s: &TestServer, name: &str) -> f64 {
    let (status, page) = s.get("/metrics", &[]);
    assert_eq!(status, 200);
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// A stalled ClickHouse: pushes wait for it up to
/// `--clickhouse-max-waiting-pushes`, the next is answered 503 at once with
/// `Retry-After` (nothing of it stored); when ClickHouse answers again the
/// waiting pushes are acknowledged (sharing one insert) and pushes pass.
#[test]
fn a_stalled_clickhouse_refuses_pushes_past_the_backlog_and_recovers() {
    use std::time::{Duration, Instant};
    let db = format!("serve_stall_{}", std::process::id());
    let target = front::url(&db).trim_start_matches("http://").to_string();
    let relay = Relay::start(target.clone());
    let url = format!("http://127.0.0.1:{}", relay.port);
    let ch = std::sync::Arc::new(TestServer::start_with(&[
        "--backend",
        "clickhouse",
        "--clickhouse-url",
        &url,
        "--clickhouse-database",
        &db,
        "--clickhouse-max-waiting-pushes",
        "3",
    ]));
    /// Pushes `line`: the status, the `Retry-After` header and the text.
    fn push(s: &TestServer, line: &str) -> (u16, Option<String>, String) {
        let body = json!({"streams": [{"stream": {"app": "stall"}, "values": [[ts(0), line]]}]});
        let r = match ureq::post(&format!("{}/loki/api/v1/push", s.base))
            .set("Content-Type", "application/json")
            .send_string(&body.to_string())
        {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{e}"),
        };
        let retry_after = r.header("Retry-After").map(str::to_string);
        (r.status(), retry_after, r.into_string().unwrap())
    }
    assert_eq!(push(&ch, "before").0, 204);
    relay.stall();
    let waiting: Vec<_> = (0..3)
        .map(|i| {
            let ch = ch.clone();
            std::thread::spawn(move || push(&ch, &format!("waited {i}")).0)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(&ch, "runakefli_clickhouse_push_backlog_pushes") < 3.0 {
        assert!(Instant::now() < deadline, "pushes never queued");
        std::thread::sleep(Duration::from_millis(20));
    }
    let began = Instant::now();
    let (status, retry_after, text) = push(&ch, "refused");
    assert_eq!(status, 503, "{text}");
    assert!(began.elapsed() < Duration::from_secs(2), "refused at once");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert!(
        text.starts_with("too many pushes waiting for clickhouse (3 pushes"),
        "{text}"
    );
    assert_eq!(
        metric(&ch, "runakefli_clickhouse_pushes_refused_total"),
        1.0
    );
    assert_eq!(
        metric(
            &ch,
            r#"runakefli_rejected_requests_total{protocol="loki",reason="backend_overloaded"}"#
        ),
        1.0
    );
    relay.resume();
    for w in waiting {
        assert_eq!(w.join().unwrap(), 204);
    }
    assert_eq!(push(&ch, "after").0, 204);
    assert_eq!(metric(&ch, "runakefli_clickhouse_push_backlog_pushes"), 0.0);
    // before, the first waiting push alone, the two queued behind it
    // together, after: four inserts for five pushes.
    assert_eq!(
        metric(&ch, "runakefli_clickhouse_batched_pushes_total"),
        5.0
    );
    assert_eq!(
        metric(
            &ch,
            r#"runakefli_clickhouse_insert_batches_total{outcome="ok"}"#
        ),
        4.0
    );
    // Every acknowledged line once in the table, the refused one nowhere.
    let direct = runakefli_clickhouse::Client::new(runakefli_clickhouse::Config::new(
        format!("http://{target}"),
        db,
    ));
    let mut lines = front::strings(&direct, "SELECT line FROM logs ORDER BY line", "line");
    lines.sort();
    assert_eq!(
        lines,
        ["after", "before", "waited 0", "waited 1", "waited 2"]
    );
}

#[test]
fn clickhouse_going_away_answers_503_and_pushes_succeed_again_when_it_returns() {
    let db = format!("serve_relay_{}", std::process::id());
    let target = front::url(&db).trim_start_matches("http://").to_string();
    let relay = Relay::start(target);
    let url = format!("http://127.0.0.1:{}", relay.port);
    let ch = TestServer::start_with(&[
        "--backend",
        "clickhouse",
        "--clickhouse-url",
        &url,
        "--clickhouse-database",
        &db,
    ]);
    let push = |line: &str| {
        let body = json!({"streams": [{"stream": {"app": "relay"}, "values": [[ts(0), line]]}]});
        ch.post(
            "/loki/api/v1/push",
            "application/json",
            None,
            body.to_string().as_bytes(),
        )
    };
    assert_eq!(push("before").0, 204);
    relay.go_down();
    let (status, text) = push("while down");
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("clickhouse unreachable"), "{text}");
    let (status, text) = ch.get("/ready", &[]);
    assert_eq!(status, 503, "{text}");
    assert!(text.starts_with("not ready: "), "{text}");
    relay.come_back();
    assert_eq!(ch.get("/ready", &[]).0, 200);
    assert_eq!(push("after").0, 204);
    let v = ch.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="relay"}"#),
            ("start", &ts(-SEC)),
            ("end", &ts(SEC)),
            ("direction", "forward"),
        ],
    );
    let lines: Vec<&str> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["values"].as_array().unwrap())
        .map(|e| e[1].as_str().unwrap())
        .collect();
    // Equal timestamps: push order.
    assert_eq!(lines, ["before", "after"], "{v}");
}

#[test]
fn clickhouse_live_tail_delivers_new_lines() {
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
    use tungstenite::stream::MaybeTlsStream;
    use tungstenite::Message;
    let (ch, _) = clickhouse_server("tail", &[]);
    let url = format!(
        "{}/loki/api/v1/tail?query=%7Bapp%3D%22tail%22%7D",
        ch.base.replacen("http://", "ws://", 1)
    );
    let (mut ws, resp) = tungstenite::connect(url).expect("websocket handshake");
    assert_eq!(resp.status(), 101);
    if let MaybeTlsStream::Plain(s) = ws.get_mut() {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    ch.push_json(&json!({"streams": [{"stream": {"app": "tail"}, "values": [
        [now.to_string(), "first"], [(now + 1).to_string(), "second"]
    ]}]}));
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while lines.len() < 2 && Instant::now() < deadline {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                for s in v["streams"].as_array().unwrap() {
                    for e in s["values"].as_array().unwrap() {
                        lines.push(e[1].as_str().unwrap().to_string());
                    }
                }
            }
            Ok(Message::Close(frame)) => panic!("tail closed: {frame:?}; lines so far {lines:?}"),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("tail: {e}"),
        }
    }
    assert_eq!(lines, ["first", "second"]);
}
