//! One request must not kill the server: queries nested thousands of levels
//! deep, in every recursive construct of LogQL and on every endpoint that
//! parses LogQL or a selector, are answered 400 in Loki's error format, and
//! the same process keeps answering afterwards. Queries just inside the depth
//! limit are evaluated (or refused cleanly) without harm either.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000;

/// Every recursive construct of the grammar, nested `n` levels deep.
fn nested(n: usize) -> Vec<(&'static str, String)> {
    let sel = r#"{app="a"}"#;
    let lsel = r#"{app="a"} | logfmt"#;
    let rep = |s: &str| s.repeat(n);
    vec![
        ("parens", format!("{}1{}", rep("("), rep(")"))),
        (
            "parenthesised selector",
            format!("{}{sel}{}", rep("("), rep(")")),
        ),
        ("left-assoc +", format!("1{}", rep(" + 1"))),
        ("right-assoc ^", format!("1{}", rep("^1"))),
        (
            "or chain",
            format!(
                "count_over_time({sel}[1m]){}",
                rep(" or rate({app=\"a\"}[1m])")
            ),
        ),
        (
            "sum",
            format!("{}count_over_time({sel}[1m]){}", rep("sum("), rep(")")),
        ),
        (
            "label_replace",
            format!(
                "{}count_over_time({sel}[1m]){}",
                rep("label_replace("),
                rep(r#","d","$1","app","(.*)")"#)
            ),
        ),
        (
            "parenthesised log range",
            format!("count_over_time({}{sel}[1m]{})", rep("("), rep(")")),
        ),
        (
            "label filter parens",
            format!("{lsel} | {}x=\"1\"{}", rep("("), rep(")")),
        ),
        (
            "label filter or",
            format!("{lsel} | x=\"1\"{}", rep(" or x=\"1\"")),
        ),
        (
            "label filter comma",
            format!("{lsel} | x=\"1\"{}", rep(",x=\"1\"")),
        ),
        (
            "unwrap post filters",
            format!(
                "sum_over_time({lsel} | unwrap v | x=\"1\"{} [1m])",
                rep(" or x=\"1\"")
            ),
        ),
    ]
}

fn range_params(q: &str) -> Vec<(&str, String)> {
    vec![
        ("query", q.to_string()),
        ("start", T0.to_string()),
        ("end", (T0 + 3_600_000_000_000).to_string()),
        ("step", "60".to_string()),
    ]
}

fn get(server: &TestServer, path: &str, params: &[(&str, String)]) -> (u16, String) {
    let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    server.get(path, &p)
}

#[test]
fn deeply_nested_queries_are_refused_and_the_server_keeps_answering() {
    let server = TestServer::start();
    server.push_json(&json!({"streams": [{"stream": {"app": "a"}, "values": [
        [T0.to_string(), "x=1 v=2 first"],
        [(T0 + 1_000_000_000).to_string(), "x=1 v=3 second"],
    ]}]}));

    // 2,000 levels of every construct on query_range: 400, depth or length.
    // (By form POST: some are longer than a URL may be.)
    for (what, q) in nested(2000) {
        let (status, body) = post_form(&server, "/loki/api/v1/query_range", &range_params(&q));
        assert_eq!(status, 400, "{what}: {body}");
        assert!(
            body.contains("query is nested too deeply") || body.contains("input size too long"),
            "{what}: {body}"
        );
        assert!(
            body.starts_with("parse error"),
            "{what}: Loki's format: {body}"
        );
    }

    // The issue's query (4 KB, under the input limit) on every endpoint that
    // parses LogQL or a selector, by GET and by form POST.
    let deep = format!("{}{{app=\"a\"}}{}", "(".repeat(2000), ")".repeat(2000));
    assert!(deep.len() < 5120);
    let endpoints: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("/loki/api/v1/query_range", range_params(&deep)),
        (
            "/loki/api/v1/query",
            vec![("query", deep.clone()), ("time", T0.to_string())],
        ),
        ("/loki/api/v1/labels", vec![("query", deep.clone())]),
        (
            "/loki/api/v1/label/app/values",
            vec![("query", deep.clone())],
        ),
        ("/loki/api/v1/series", vec![("match[]", deep.clone())]),
        ("/loki/api/v1/index/stats", vec![("query", deep.clone())]),
        ("/loki/api/v1/index/volume", vec![("query", deep.clone())]),
    ];
    for (path, params) in &endpoints {
        let (status, body) = get(&server, path, params);
        assert_eq!(status, 400, "GET {path}: {body}");
        assert!(
            body.contains("query is nested too deeply"),
            "GET {path}: {body}"
        );
        let (status, body) = post_form(&server, path, params);
        assert_eq!(status, 400, "POST {path}: {body}");
        assert!(
            body.contains("query is nested too deeply"),
            "POST {path}: {body}"
        );
    }

    // Just inside the limit: evaluated.
    for (what, q) in nested(runakefli_logql::DEFAULT_MAX_DEPTH / 2 - 4) {
        let (status, body) = get(&server, "/loki/api/v1/query_range", &range_params(&q));
        assert_eq!(status, 200, "{what}: {body}");
    }

    // Still the same process, still answering.
    let (status, _) = server.get("/ready", &[]);
    assert_eq!(status, 200);
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="a"} |= "first""#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 3_600_000_000_000).to_string()),
        ],
    );
    let streams = streams_of(&v);
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].1[0].1, "x=1 v=2 first");
}

#[test]
fn query_limits_are_flags() {
    let server = TestServer::start_with(&[
        "--max-query-depth",
        "3",
        "--max-query-bytes",
        "40",
        "--max-query-points",
        "100",
    ]);
    let (status, body) = get(
        &server,
        "/loki/api/v1/query_range",
        &range_params("((((1))))"),
    );
    assert_eq!(status, 400);
    assert_eq!(
        body.trim(),
        "parse error at line 1, col 4: query is nested too deeply (more than 3 levels)"
    );
    let long = format!(r#"{{app="{}"}}"#, "x".repeat(40));
    let (status, body) = get(&server, "/loki/api/v1/query_range", &range_params(&long));
    assert_eq!(status, 400);
    assert_eq!(
        body.trim(),
        format!("parse error : input size too long ({} > 40)", long.len())
    );
    let (status, _) = get(&server, "/loki/api/v1/query_range", &range_params("((1))"));
    assert_eq!(status, 200);
    // Points: 3 series × 61 steps (and their 3 samples) pass 100; one fits.
    let values = serde_json::json!([[(T0 + 1_000_000_000).to_string(), "x"]]);
    let streams: Vec<_> = (0..3)
        .map(|i| serde_json::json!({"stream": {"app": format!("p{i}")}, "values": values}))
        .collect();
    server.push_json(&serde_json::json!({ "streams": streams }));
    let (status, body) = get(
        &server,
        "/loki/api/v1/query_range",
        &range_params(r#"count_over_time({app=~"p.*"}[1m])"#),
    );
    assert_eq!(status, 400);
    assert_eq!(
        body.trim(),
        "maximum number of points (100) held in memory reached for a single query; consider reducing the time range, increasing the step, or adding more specific stream selectors and line filters"
    );
    let (status, body) = get(
        &server,
        "/loki/api/v1/query_range",
        &range_params(r#"count_over_time({app="p0"}[1m])"#),
    );
    assert_eq!(status, 200, "{body}");
}

fn post_form(server: &TestServer, path: &str, params: &[(&str, String)]) -> (u16, String) {
    let form: String = params
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&");
    server.post(
        path,
        "application/x-www-form-urlencoded",
        None,
        form.as_bytes(),
    )
}

fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[test]
fn the_query_timeout_covers_metadata_endpoints() {
    // A zero budget: every read request is past its deadline at the first check.
    let server = TestServer::start_with(&["--query-timeout-secs", "0"]);
    server.push_json(&json!({"streams": [{"stream": {"app": "a"}, "values": [
        [T0.to_string(), "x"],
    ]}]}));
    let start = T0.to_string();
    let end = (T0 + 3_600_000_000_000).to_string();
    let sel = r#"{app="a"}"#;
    let requests: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("/loki/api/v1/series", vec![("match[]", sel)]),
        ("/loki/api/v1/index/stats", vec![("query", sel)]),
        ("/loki/api/v1/index/volume", vec![("query", sel)]),
        ("/loki/api/v1/labels", vec![]),
        ("/loki/api/v1/label/app/values", vec![]),
        ("/loki/api/v1/query_range", vec![("query", sel)]),
    ];
    for (path, mut params) in requests {
        params.push(("start", &start));
        params.push(("end", &end));
        let (status, body) = server.get(path, &params);
        assert_eq!((status, body.trim()), (504, "query timed out"), "{path}");
    }
}
