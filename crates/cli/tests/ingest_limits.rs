//! Per-tenant ingestion limits over HTTP, with Loki's 429 messages: a push
//! over the rate is refused whole; streams past the active-stream limit are
//! refused while the push's other streams are stored.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000;

fn push(server: &TestServer, streams: &[(&str, &str)]) -> (u16, String) {
    let body = json!({"streams": streams.iter().enumerate().map(|(i, (app, line))| json!({
        "stream": {"app": app},
        "values": [[(T0 + i as i64).to_string(), line]],
    })).collect::<Vec<_>>()});
    server.post(
        "/loki/api/v1/push",
        "application/json",
        None,
        body.to_string().as_bytes(),
    )
}

/// Stored lines as (app label JSON, line).
fn stored(server: &TestServer) -> Vec<(String, String)> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app=~".+"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 1_000_000_000).to_string()),
            ("direction", "forward"),
        ],
    );
    streams_of(&v)
        .into_iter()
        .flat_map(|(s, e)| e.into_iter().map(move |(_, l)| (s.clone(), l)))
        .collect()
}

#[test]
fn a_push_over_the_ingestion_rate_is_refused_whole_with_lokis_429() {
    // 10 KiB/s with a 20 KiB bucket.
    // Streams as pushed (no discovered service_name or detected_level), so
    // the byte count and the stream in the messages are the pushed ones.
    let server = TestServer::start_with(&[
        common::AS_PUSHED[0],
        common::AS_PUSHED[1],
        "--ingestion-rate-mb",
        "0.009765625",
        "--ingestion-burst-size-mb",
        "0.01953125",
    ]);
    let big = "x".repeat(15 << 10);
    let (status, body) = push(&server, &[("a", &big)]);
    assert_eq!(status, 204, "{body}");
    let (status, body) = push(&server, &[("a", &big), ("b", "small")]);
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body.trim_end(),
        "Ingestion rate limit exceeded for user fake (limit: 10240 bytes/sec) while attempting to ingest '2' lines totaling '15365' bytes, reduce log volume or contact your Loki administrator to see if the limit can be increased"
    );
    let got = stored(&server);
    assert_eq!(got.len(), 1, "nothing of the refused push is stored");
}

#[test]
fn streams_past_the_active_limit_are_refused_and_the_others_stored() {
    let server = TestServer::start_with(&[
        common::AS_PUSHED[0],
        common::AS_PUSHED[1],
        "--max-global-streams-per-user",
        "3",
    ]);
    let (status, body) = push(&server, &[("a", "a1"), ("b", "b1")]);
    assert_eq!(status, 204, "{body}");
    let (status, body) = push(
        &server,
        &[("a", "a2"), ("c", "c1"), ("d", "d1"), ("e", "e1")],
    );
    assert_eq!(status, 429, "{body}");
    assert_eq!(
        body.trim_end(),
        r#"Maximum active stream limit exceeded when trying to create stream {app="d"}, reduce the number of active streams (reduce labels or reduce label values), or contact your Loki administrator to see if the limit can be increased, user: 'fake'"#
    );
    let lines: Vec<String> = stored(&server).into_iter().map(|(_, l)| l).collect();
    let mut lines = lines;
    lines.sort();
    assert_eq!(lines, vec!["a1", "a2", "b1", "c1"]);
    // Active streams keep pushing.
    let (status, body) = push(&server, &[("c", "c2")]);
    assert_eq!(status, 204, "{body}");
}

/// Per-tenant overrides in the config file replace the flags' limits.
#[test]
fn tenant_overrides_in_the_config_file_replace_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runakefli.yaml");
    std::fs::write(
        &file,
        "max_global_streams_per_user: 1\noverrides:\n  big:\n    max_global_streams_per_user: 0\n  slow:\n    ingestion_rate_mb: 0.0001\n    ingestion_burst_size_mb: 0.0001\n",
    )
    .unwrap();
    let server =
        TestServer::start_with(&["--multi-tenant", "--config-file", file.to_str().unwrap()]);
    let push_as = |tenant: &str, streams: &[&str], line: &str| {
        let body = json!({"streams": streams.iter().map(|app| json!({
            "stream": {"app": app},
            "values": [[T0.to_string(), line]],
        })).collect::<Vec<_>>()});
        server
            .post_with(
                "/loki/api/v1/push",
                "application/json",
                None,
                &[("X-Scope-OrgID", tenant)],
                body.to_string().as_bytes(),
            )
            .0
    };
    assert_eq!(
        push_as("small", &["a", "b"], "x"),
        429,
        "the default: one stream"
    );
    assert_eq!(
        push_as("big", &["a", "b", "c"], "x"),
        204,
        "no stream limit"
    );
    assert_eq!(
        push_as("slow", &["a"], &"x".repeat(200)),
        429,
        "about 100 bytes/s"
    );
    assert_eq!(push_as("slow", &["a"], "x"), 204);
    let (_, printed) = {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_runakefli"))
            .args([
                "serve",
                "--print-config",
                "--config-file",
                file.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        (out.status, String::from_utf8(out.stdout).unwrap())
    };
    assert!(
        printed.contains("ingestion_rate_mb: '0.0001'")
            || printed.contains("ingestion_rate_mb: 0.0001"),
        "{printed}"
    );
}
