//! `/metrics` against the real server, read with a Prometheus exposition
//! parser (`prometheus-parse`): counters match what was pushed, refused and
//! queried; store gauges follow flushes.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{proto_push_body, TestServer};
use prometheus_parse::{Scrape, Value};
use serde_json::json;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Scrapes `/metrics`, checks the page's framing and parses it.
fn scrape(server: &TestServer) -> (String, Scrape) {
    let resp = ureq::get(&format!("{}/metrics", server.base))
        .call()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = resp.into_string().unwrap();
    check_families(&text);
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    (text, scrape)
}

/// Every sample belongs to a family declared by `# TYPE` (histograms by
/// their `_bucket`, `_sum`, `_count` series), each family declared once, and
/// names follow the conventions.
fn check_families(text: &str) {
    let mut types = std::collections::HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(
                types.insert(name.to_string(), kind.to_string()).is_none(),
                "{name} declared twice"
            );
            assert!(name.starts_with("runakefli_"), "{name}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "counter {name}");
            }
            if kind == "histogram" {
                assert!(name.ends_with("_seconds"), "histogram {name}");
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name = line.split(['{', ' ']).next().unwrap();
        let family = types.contains_key(name).then_some(name).or_else(|| {
            ["_bucket", "_sum", "_count"].iter().find_map(|s| {
                let base = name.strip_suffix(s)?;
                (types.get(base).map(String::as_str) == Some("histogram")).then_some(base)
            })
        });
        assert!(family.is_some(), "sample without a family: {line}");
    }
}

fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(b) => b.iter().map(|c| c.count).fold(0.0, f64::max),
            Value::Summary(_) => panic!("no summaries here"),
        })
}

fn push_json(server: &TestServer, tenant: &str, body: &serde_json::Value) -> (u16, String) {
    server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &[("X-Scope-OrgID", tenant)],
        body.to_string().as_bytes(),
    )
}

#[test]
fn counters_match_what_was_pushed_refused_and_queried() {
    let server =
        TestServer::start_with(&["--multi-tenant", common::AS_PUSHED[0], common::AS_PUSHED[1]]);
    let t0 = now_ns() - 60_000_000_000;
    // Tenant a: 3 lines by JSON, 2 by protobuf, one with structured metadata.
    let lines = ["first line", "second, longer line", "{\"level\":\"info\"}"];
    let values: Vec<_> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| json!([(t0 + i as i64).to_string(), l]))
        .collect();
    let (status, text) = push_json(
        &server,
        "a",
        &json!({"streams":[{"stream":{"app":"api"},"values":values}]}),
    );
    assert_eq!(status, 204, "{text}");
    let proto = proto_push_body(&[(
        "{app=\"api\", env=\"prod\"}",
        vec![
            (
                t0 + 10,
                "proto one".into(),
                vec![("trace".into(), "abc".into())],
            ),
            (t0 + 11, "proto two".into(), vec![]),
        ],
    )]);
    let (status, text) = server.post_with(
        "/loki/api/v1/push",
        "application/x-protobuf",
        None,
        &[("X-Scope-OrgID", "a")],
        &proto,
    );
    assert_eq!(status, 204, "{text}");
    let a_bytes: usize = lines.iter().map(|l| l.len()).sum::<usize>()
        + "proto one".len()
        + "trace".len()
        + "abc".len()
        + "proto two".len();
    // Tenant b: one line by JSON lines.
    let (status, text) = server.post_with(
        "/insert/jsonline?_stream_fields=app",
        "application/stream+json",
        None,
        &[("X-Scope-OrgID", "b")],
        format!(
            "{{\"_msg\":\"hello\",\"app\":\"x\",\"_time\":\"{}\"}}\n",
            t0
        )
        .as_bytes(),
    );
    assert_eq!(status, 200, "{text}");
    // Refused: invalid JSON twice, a missing tenant once.
    for _ in 0..2 {
        let (status, _) = server.post_with(
            "/loki/api/v1/push",
            "application/json",
            None,
            &[("X-Scope-OrgID", "a")],
            b"{not json",
        );
        assert_eq!(status, 400);
    }
    let (status, _) = server.post("/loki/api/v1/push", "application/json", None, b"{}");
    assert_eq!(status, 401);
    // Queries: three range queries (one of them a parse error), one labels call.
    let range = |q: &str| {
        server.get_with(
            "/loki/api/v1/query_range",
            &[
                ("query", q),
                ("start", &(t0 - 1).to_string()),
                ("end", &now_ns().to_string()),
            ],
            &[("X-Scope-OrgID", "a")],
        )
    };
    assert_eq!(range(r#"{app="api"}"#).0, 200);
    assert_eq!(range(r#"sum(count_over_time({app="api"}[1m]))"#).0, 200);
    assert_eq!(range(r#"{app="api""#).0, 400);
    let (status, _) = server.get_with("/loki/api/v1/labels", &[], &[("X-Scope-OrgID", "a")]);
    assert_eq!(status, 200);

    let (_, m) = scrape(&server);
    let lines_of = |p: &str, t: &str| {
        value(
            &m,
            "runakefli_ingested_lines_total",
            &[("protocol", p), ("tenant", t)],
        )
    };
    assert_eq!(lines_of("loki", "a"), Some(5.0));
    assert_eq!(lines_of("jsonline", "b"), Some(1.0));
    assert_eq!(lines_of("loki", "b"), None);
    assert_eq!(
        value(
            &m,
            "runakefli_ingested_bytes_total",
            &[("protocol", "loki"), ("tenant", "a")]
        ),
        Some(a_bytes as f64)
    );
    let rejected = |r: &str| {
        value(
            &m,
            "runakefli_rejected_requests_total",
            &[("protocol", "loki"), ("reason", r)],
        )
    };
    assert_eq!(rejected("invalid"), Some(2.0));
    assert_eq!(rejected("unauthorized"), Some(1.0));
    let count = |e: &str| {
        value(
            &m,
            "runakefli_query_duration_seconds_count",
            &[("endpoint", e)],
        )
    };
    assert_eq!(count("query_range"), Some(3.0));
    assert_eq!(count("labels"), Some(1.0));
    assert_eq!(count("series"), Some(0.0));
    // The +Inf bucket holds every request (the parser keeps buckets).
    assert_eq!(
        value(
            &m,
            "runakefli_query_duration_seconds",
            &[("endpoint", "query_range")]
        ),
        Some(3.0)
    );
    assert_eq!(
        value(
            &m,
            "runakefli_query_failures_total",
            &[("endpoint", "query_range"), ("reason", "invalid")]
        ),
        Some(1.0)
    );
    assert_eq!(value(&m, "runakefli_queries_in_flight", &[]), Some(0.0));
    // Three acknowledged pushes, each fsynced once or sharing a group commit.
    let fsyncs = value(&m, "runakefli_wal_fsync_duration_seconds_count", &[]).unwrap();
    assert!((1.0..=3.0).contains(&fsyncs), "{fsyncs}");
    assert!(value(&m, "runakefli_wal_written_bytes_total", &[]).unwrap() > 0.0);
    assert!(value(&m, "runakefli_memtable_bytes", &[]).unwrap() > 0.0);
    assert_eq!(value(&m, "runakefli_memtable_rows", &[]), Some(6.0));

    // After a flush the rows are in parts, counted per tenant.
    let (status, _) = server.post("/flush", "text/plain", None, b"");
    assert_eq!(status, 204);
    let (_, m) = scrape(&server);
    assert_eq!(value(&m, "runakefli_memtable_rows", &[]), Some(0.0));
    assert_eq!(value(&m, "runakefli_flushed_rows_total", &[]), Some(6.0));
    assert_eq!(
        value(&m, "runakefli_tenant_part_rows", &[("tenant", "a")]),
        Some(5.0)
    );
    assert_eq!(
        value(&m, "runakefli_tenant_part_rows", &[("tenant", "b")]),
        Some(1.0)
    );
    let disk_a = value(&m, "runakefli_tenant_disk_bytes", &[("tenant", "a")]).unwrap();
    let du_a = du(&server.data_dir.join("tenants/a"));
    assert_eq!(
        disk_a, du_a as f64,
        "tenant bytes are the sizes of its files"
    );
    assert!(value(&m, "runakefli_tenant_parts", &[("tenant", "a")]).unwrap() >= 1.0);
}

/// Sum of the sizes of the regular files under `dir`.
fn du(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let md = e.metadata().unwrap();
        if md.is_dir() {
            n += du(&e.path());
        } else {
            n += md.len();
        }
    }
    n
}

/// Before `/ready` says yes the server answers a labels request and a query
/// of its own over loopback (`serve/warm_up`); they are not counted as the
/// users' read requests. `--warm-up false` sends none.
#[test]
fn the_warm_up_queries_are_answered_and_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    for (warm_up, answered) in [("true", true), ("false", false)] {
        let log = dir.path().join(format!("warm-up-{warm_up}.log"));
        let server = TestServer::start_logging(
            &["--warm-up", warm_up, "--log", "warn,runakefli_server=debug"],
            Some(&log),
        );
        let (_, m) = scrape(&server);
        for e in ["labels", "query_range"] {
            assert_eq!(
                value(
                    &m,
                    "runakefli_query_duration_seconds_count",
                    &[("endpoint", e)]
                ),
                Some(0.0),
                "{e} with --warm-up {warm_up}"
            );
        }
        drop(server);
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text.contains("warm-up queries answered statuses=[200, 200]"),
            answered,
            "--warm-up {warm_up}, log:\n{text}"
        );
    }
}
