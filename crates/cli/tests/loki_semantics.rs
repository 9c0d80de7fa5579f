//! Answers the shared corpus does not reach, checked over HTTP against the
//! real server with Loki's exact texts (read from Loki's `pkg/loghttp`,
//! `pkg/logql/log/ip.go`, `pkg/logql/syntax` and `pkg/ingester`): the
//! `series` endpoint's `match[]` handling, `ip()` errors and matches, and
//! parameter errors.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000; // 2026-11-29T00:00:00Z
const START: &str = "2026-11-29T00:00:00Z";
const END: &str = "2026-11-29T01:00:00Z";

fn server_with_data() -> TestServer {
    let server = TestServer::start();
    let ts = |s: i64| (T0 + s * 1_000_000_000).to_string();
    server.push_json(&json!({"streams": [
        {"stream": {"app": "a", "env": "prod"}, "values": [[ts(10), "client=::1 ok"]]},
        {"stream": {"app": "b"}, "values": [[ts(20), "client=10.1.2.3 ok"]]},
    ]}));
    server
}

fn series_count(server: &TestServer, params: &[(&str, &str)]) -> usize {
    let mut p = vec![("start", START), ("end", END)];
    p.extend_from_slice(params);
    let v = server.get_json("/loki/api/v1/series", &p);
    v["data"].as_array().map(|a| a.len()).unwrap_or(0)
}

#[test]
fn series_match_groups_as_loki_reads_them() {
    let server = server_with_data();
    // no group, or a lone `{}`, lists every stream
    assert_eq!(series_count(&server, &[]), 2);
    assert_eq!(series_count(&server, &[("match[]", "{ }")]), 2);
    // groups are not held to the empty-compatible rule of queries
    assert_eq!(series_count(&server, &[("match[]", r#"{app=~".*"}"#)]), 2);
    assert_eq!(series_count(&server, &[("match[]", r#"{env=""}"#)]), 1);
    // `match` and `match[]` together, duplicates once
    assert_eq!(
        series_count(
            &server,
            &[("match", r#"{app="a"}"#), ("match[]", r#"{app="a"}"#)]
        ),
        1
    );
    let (status, body) = server.get(
        "/loki/api/v1/series",
        &[("match[]", r#"{app="a"}"#), ("match[]", "{}")],
    );
    assert_eq!((status, body.trim()), (400, "0 matchers in group: {}"));
}

#[test]
fn ip_filters_match_and_fail_as_in_loki() {
    let server = server_with_data();
    let query = |q: &str| {
        server.get(
            "/loki/api/v1/query_range",
            &[("query", q), ("start", START), ("end", END)],
        )
    };
    // a short IPv6 address at the end of a label value is found
    let (status, body) = query(r#"{app=~"a|b"} | logfmt | client = ip("::1")"#);
    assert_eq!(status, 200);
    assert!(
        body.contains("client=::1 ok") && !body.contains("10.1.2.3"),
        "{body}"
    );
    let (status, body) = query(r#"{app="a"} |~ ip("10.0.0.1")"#);
    assert_eq!(
        (status, body.trim()),
        (
            400,
            r#"parse error : stage '|~ ip("10.0.0.1")' : ip: invalid operation"#
        )
    );
    let (status, body) = query(r#"{app="a"} | logfmt | client != ip("10.0.0.0/33")"#);
    assert_eq!(
        (status, body.trim()),
        (
            400,
            r#"parse error : stage '| client!=ip("10.0.0.0/33")' : ip: invalid pattern: "10.0.0.0/33""#
        )
    );
}

#[test]
fn parameter_errors_carry_loki_texts() {
    let server = server_with_data();
    let range = |extra: &[(&str, &str)]| {
        let mut p = vec![("query", r#"{app="a"}"#), ("start", START), ("end", END)];
        p.extend_from_slice(extra);
        let (status, body) = server.get("/loki/api/v1/query_range", &p);
        (status, body.trim().to_string())
    };
    assert_eq!(
        range(&[("step", "0.1")]),
        (
            400,
            "exceeded maximum resolution of 11,000 points per time series. Try increasing the value of the step parameter".to_string()
        )
    );
    assert_eq!(
        range(&[("limit", "x")]),
        (
            400,
            r#"strconv.Atoi: parsing "x": invalid syntax"#.to_string()
        )
    );
    assert_eq!(
        range(&[("direction", "UP")]),
        (400, "invalid direction 'UP'".to_string())
    );
    let (status, body) = server.get(
        "/loki/api/v1/query",
        &[
            ("query", r#"count_over_time({app="a"}[5x])"#),
            ("time", END),
        ],
    );
    assert_eq!(
        (status, body.trim()),
        (
            400,
            r#"parse error at line 1, col 26: unknown unit "x" in duration "5x""#
        )
    );
}
