//! Bad pushes get 400 with a message naming the problem, and store nothing.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000;

fn count_all(server: &TestServer) -> usize {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app=~".+"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 1_000_000_000_000).to_string()),
            ("limit", "5000"),
        ],
    );
    streams_of(&v).iter().map(|(_, e)| e.len()).sum()
}

#[test]
fn invalid_pushes_are_rejected_whole() {
    let server = TestServer::start_with(&["--max-line-bytes", "100"]);
    let good =
        json!({"streams": [{"stream": {"app": "ok"}, "values": [[T0.to_string(), "fine"]]}]});
    server.push_json(&good);
    assert_eq!(count_all(&server), 1);

    let cases: Vec<(Vec<u8>, &str, Option<&str>, &str)> = vec![
        (b"{not json".to_vec(), "application/json", None, "column"),
        (json!({"streams": [{"stream": {}, "values": [[T0.to_string(), "x"]]}]}).to_string().into_bytes(), "application/json", None, "label"),
        (json!({"streams": [{"stream": {"app": "ok"}, "values": [["not-a-time", "x"]]}]}).to_string().into_bytes(), "application/json", None, "time"),
        (
            json!({"streams": [{"stream": {"app": "ok"}, "values": [[T0.to_string(), "kept?"], [T0.to_string(), "y".repeat(500)]]}]}).to_string().into_bytes(),
            "application/json",
            None,
            "size",
        ),
        (json!({"streams": [{"stream": {"0bad": "x"}, "values": [[T0.to_string(), "x"]]}]}).to_string().into_bytes(), "application/json", None, "label"),
        (b"\x00\x01garbage".to_vec(), "application/x-protobuf", None, ""),
        (b"not gzip".to_vec(), "application/json", Some("gzip"), ""),
    ];
    for (body, ct, enc, needle) in cases {
        let (status, text) = server.post("/loki/api/v1/push", ct, enc, &body);
        assert!(
            (400..500).contains(&status),
            "status {status} for {:?}: {text}",
            String::from_utf8_lossy(&body)
        );
        assert!(!text.trim().is_empty(), "an error must say what was wrong");
        assert!(
            text.to_lowercase().contains(needle),
            "message {text:?} should mention {needle:?}"
        );
    }
    assert_eq!(
        count_all(&server),
        1,
        "nothing of a rejected request may be stored"
    );
}

#[test]
fn query_errors_use_lokis_format() {
    let server = TestServer::start();
    let (status, text) = server.get(
        "/loki/api/v1/query_range",
        &[
            ("query", "{app=\"x\"} |= "),
            ("start", "1795910400"),
            ("end", "1795914000"),
        ],
    );
    assert_eq!(status, 400);
    assert_eq!(
        text.trim(),
        "parse error at line 1, col 14: syntax error: unexpected $end, expecting STRING or ip"
    );
    let (status, text) = server.get(
        "/loki/api/v1/query_range",
        &[("query", "{app=\"x\"}"), ("start", "yesterday")],
    );
    assert_eq!(status, 400);
    assert_eq!(text.trim(), "could not parse 'start' parameter: strconv.ParseInt: parsing \"yesterday\": invalid syntax");
}

#[test]
fn a_push_without_a_json_content_type_gets_a_hint() {
    let server = TestServer::start();
    let body = json!({"streams": [{"stream": {"app": "ok"}, "values": [[T0.to_string(), "x"]]}]})
        .to_string();
    // What `curl -d` sends without -H: a form content type.
    let (status, text) = server.post(
        "/loki/api/v1/push",
        "application/x-www-form-urlencoded",
        None,
        body.as_bytes(),
    );
    assert_eq!(status, 400, "{text}");
    let lines: Vec<&str> = text.trim_end().lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("snappy"), "Loki's message first: {text}");
    assert_eq!(
        lines[1],
        "hint: the body looks like JSON; send it with Content-Type: application/json (curl: -H 'Content-Type: application/json')"
    );
    assert_eq!(count_all(&server), 0);
}
