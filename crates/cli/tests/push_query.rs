//! End to end: push with protobuf and JSON, query back byte-identical lines.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{proto_push_body, streams_of, TestServer};
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000; // 2026-11-29T00:00:00Z

/// Lines that a lossless store must return byte for byte.
fn awkward_lines() -> Vec<String> {
    vec![
        r#"{"level":"info","msg":"compact","n":1}"#.to_string(),
        r#"{ "level" : "info" ,  "msg":"spaces"  }"#.to_string(),
        r#"{"msg":"key order","b":2,"a":1,"level":"warn"}"#.to_string(),
        r#"{"msg":"caf\u00e9 \"quoted\" \\ \/ \n\t","level":"info"}"#.to_string(),
        r#"{"price":1.50,"big":1e3,"neg":-0,"exp":2.5E-3,"int":007}"#.to_string(),
        r#"{"request":{"method":"GET","headers":{"ua":"curl/8"}},"tags":["a","b",{"c":[1,2]}],"level":"error"}"#.to_string(),
        r#"{"dup":1,"dup":2}"#.to_string(),
        r#"{"truncated": "oops"#.to_string(),
        r#"[1,2,3]"#.to_string(),
        r#""just a string""#.to_string(),
        "level=info msg=\"logfmt line\" duration=1.5s".to_string(),
        "plain text with ünïcödé and emoji 🚀".to_string(),
        String::new(),
        "   leading and trailing spaces   ".to_string(),
        "{\"multi\":\"line\"}\nsecond line".to_string(),
        format!("{{\"long\":\"{}\"}}", "x".repeat(12_000)),
        r#"{"null":null,"t":true,"f":false,"empty":"","obj":{}}"#.to_string(),
    ]
}

fn expect_lines(server: &TestServer, selector: &str, want: &[(i64, String)]) {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", selector),
            ("start", &T0.to_string()),
            ("end", &(T0 + 3_600_000_000_000).to_string()),
            ("limit", "1000"),
            ("direction", "forward"),
        ],
    );
    let streams = streams_of(&v);
    assert_eq!(streams.len(), 1, "{v}");
    let got: Vec<(String, String)> = streams[0].1.clone();
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(t, l)| (t.to_string(), l.clone()))
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want.iter()) {
        assert_eq!(g, w);
    }
}

#[test]
fn json_push_round_trips_awkward_lines() {
    let server = TestServer::start_with(common::AS_PUSHED);
    let lines = awkward_lines();
    let values: Vec<serde_json::Value> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| json!([(T0 + i as i64 * 1000).to_string(), l]))
        .collect();
    server.push_json(
        &json!({"streams": [{"stream": {"app": "json-push", "env": "test"}, "values": values}]}),
    );
    let want: Vec<(i64, String)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (T0 + i as i64 * 1000, l.clone()))
        .collect();
    expect_lines(&server, r#"{app="json-push"}"#, &want);
    // The same after a flush to an immutable part, and after a restart.
    let (status, _) = server.post("/flush", "text/plain", None, b"");
    assert_eq!(status, 204);
    expect_lines(&server, r#"{app="json-push"}"#, &want);
}

#[test]
fn protobuf_push_round_trips_and_survives_restart() {
    let mut server = TestServer::start_with(common::AS_PUSHED);
    let lines = awkward_lines();
    let entries: Vec<common::TestEntry> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (T0 + 5_000 + i as i64, l.clone(), vec![]))
        .collect();
    let body = proto_push_body(&[(r#"{app="proto-push", env="test"}"#, entries)]);
    let (status, text) = server.post("/loki/api/v1/push", "application/x-protobuf", None, &body);
    assert_eq!(status, 204, "{text}");
    let want: Vec<(i64, String)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (T0 + 5_000 + i as i64, l.clone()))
        .collect();
    expect_lines(&server, r#"{app="proto-push"}"#, &want);
    server.restart();
    expect_lines(&server, r#"{app="proto-push"}"#, &want);
}

#[test]
fn gzip_encoded_push_is_accepted() {
    use std::io::Write;
    let server = TestServer::start();
    let body = json!({"streams": [{"stream": {"app": "gz"}, "values": [[T0.to_string(), "zipped line"]]}]});
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(body.to_string().as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let (status, text) = server.post("/loki/api/v1/push", "application/json", Some("gzip"), &gz);
    assert_eq!(status, 204, "{text}");
    expect_lines(&server, r#"{app="gz"}"#, &[(T0, "zipped line".to_string())]);
}

#[test]
fn structured_metadata_is_kept_and_shown_as_labels() {
    let server = TestServer::start();
    server.push_json(&json!({"streams": [{"stream": {"app": "md"}, "values": [
        [T0.to_string(), "with metadata", {"trace_id": "abc123"}],
        [(T0 + 1).to_string(), "without metadata"]
    ]}]}));
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="md"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 10).to_string()),
        ],
    );
    let streams = streams_of(&v);
    assert_eq!(streams.len(), 2, "{v}");
    assert!(streams
        .iter()
        .any(|(l, e)| l.contains("trace_id") && e[0].1 == "with metadata"));
    assert!(streams
        .iter()
        .any(|(l, e)| !l.contains("trace_id") && e[0].1 == "without metadata"));
}

#[test]
fn filters_parsers_limit_and_direction() {
    let server = TestServer::start();
    let lines = [
        r#"{"level":"error","msg":"connection timeout","status":500}"#,
        r#"{"level":"info","msg":"ok","status":200}"#,
        r#"{"level":"error","msg":"disk full","status":507}"#,
        "level=error msg=\"logfmt failure\" status=503",
    ];
    let values: Vec<serde_json::Value> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| json!([(T0 + i as i64).to_string(), l]))
        .collect();
    server.push_json(&json!({"streams": [{"stream": {"app": "f"}, "values": values}]}));
    let q = |query: &str, extra: &[(&str, &str)]| {
        let start = T0.to_string();
        let end = (T0 + 100).to_string();
        let mut params = vec![
            ("query", query),
            ("start", start.as_str()),
            ("end", end.as_str()),
        ];
        params.extend_from_slice(extra);
        let v = server.get_json("/loki/api/v1/query_range", &params);
        streams_of(&v)
            .into_iter()
            .flat_map(|(_, e)| e.into_iter().map(|(_, l)| l))
            .collect::<Vec<_>>()
    };
    assert_eq!(q(r#"{app="f"} |= "timeout""#, &[]), vec![lines[0]]);
    assert_eq!(
        q(r#"{app="f"} |~ "disk|timeout" != "disk""#, &[]),
        vec![lines[0]]
    );
    let mut errors = q(r#"{app="f"} | json | level="error""#, &[]);
    errors.sort();
    assert_eq!(errors, vec![lines[0], lines[2]]);
    assert_eq!(
        q(r#"{app="f"} | logfmt | status >= 503"#, &[]),
        vec![lines[3]]
    );
    assert_eq!(
        q(r#"{app="f"} | json | status > 400 and msg=~"disk.*""#, &[]),
        vec![lines[2]]
    );
    assert_eq!(
        q(r#"{app="f"}"#, &[("limit", "2"), ("direction", "forward")]),
        vec![lines[0], lines[1]]
    );
    assert_eq!(q(r#"{app="f"}"#, &[("limit", "1")]), vec![lines[3]]);
}

#[test]
fn metadata_endpoints() {
    let server = TestServer::start_with(common::AS_PUSHED);
    server.push_json(&json!({"streams": [
        {"stream": {"app": "a", "env": "prod"}, "values": [[T0.to_string(), "x"]]},
        {"stream": {"app": "b", "env": "dev"}, "values": [[T0.to_string(), "y"]]}
    ]}));
    let range = [
        ("start", T0.to_string()),
        ("end", (T0 + 1_000_000_000).to_string()),
    ];
    let params: Vec<(&str, &str)> = range.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let v = server.get_json("/loki/api/v1/labels", &params);
    assert_eq!(v["data"], json!(["app", "env"]));
    let v = server.get_json("/loki/api/v1/label/app/values", &params);
    assert_eq!(v["data"], json!(["a", "b"]));
    let mut p = params.clone();
    p.push(("match[]", r#"{env="prod"}"#));
    let v = server.get_json("/loki/api/v1/series", &p);
    assert_eq!(v["data"], json!([{"app": "a", "env": "prod"}]));
    let (status, _) = server.get("/ready", &[]);
    assert_eq!(status, 200);
}

#[test]
fn tenants_are_isolated() {
    let server = TestServer::start_with(&["--multi-tenant"]);
    let body =
        json!({"streams": [{"stream": {"app": "t"}, "values": [[T0.to_string(), "secret of a"]]}]})
            .to_string();
    let (status, _) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &[("X-Scope-OrgID", "a")],
        body.as_bytes(),
    );
    assert_eq!(status, 204);
    let (status, _) = server.post(
        "/loki/api/v1/push",
        "application/json",
        None,
        body.as_bytes(),
    );
    assert_eq!(
        status, 401,
        "a push without a tenant is refused when multi-tenancy is on"
    );
    let params = [
        ("query", r#"{app="t"}"#),
        ("start", "1795910400"),
        ("end", "1795914000"),
    ];
    let (status, text) = server.get_with(
        "/loki/api/v1/query_range",
        &params,
        &[("X-Scope-OrgID", "b")],
    );
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        streams_of(&v).is_empty(),
        "tenant b must not see tenant a's data: {v}"
    );
    let (status, text) = server.get_with(
        "/loki/api/v1/query_range",
        &params,
        &[("X-Scope-OrgID", "a")],
    );
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(streams_of(&v)[0].1[0].1, "secret of a");
}
