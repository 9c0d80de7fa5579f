//! HTTP statuses of failures: a write-ahead log that fails on a full disk
//! answers pushes 507 (503 on OTLP, which exporters retry), `/ready` turns 503
//! naming the failure, and queries keep working. The disk-full condition is
//! real: the next WAL segment is a symlink to `/dev/full`, whose writes fail
//! with `ENOSPC`. A push too large for one WAL record is refused with 413
//! before anything is acknowledged.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000;

fn push(server: &TestServer, ts: i64, line: &str) -> (u16, String) {
    let body = json!({"streams": [{"stream": {"app": "a"}, "values": [[ts.to_string(), line]]}]});
    server.post(
        "/loki/api/v1/push",
        "application/json",
        None,
        body.to_string().as_bytes(),
    )
}

#[test]
fn a_wal_failing_on_a_full_disk_answers_507_and_unready() {
    // Every batch closes its segment, so the second push's record goes to
    // the next segment, which cannot be created.
    let server = TestServer::start_with(&["--wal-segment-bytes", "1"]);
    let wal = server.data_dir().join("wal");
    let current = std::fs::read_dir(&wal)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".wal")?.parse::<u64>().ok()
        })
        .max()
        .expect("a WAL segment after start");
    let next = wal.join(format!("{:020}.wal", current + 1));
    std::os::unix::fs::symlink("/dev/full", &next).unwrap();

    // Durable in the current segment: acknowledged. Starting the next
    // segment then fails, which poisons the log.
    let (status, body) = push(&server, T0, "kept");
    assert_eq!(status, 204, "{body}");

    let (status, body) = push(&server, T0 + 1, "refused");
    assert_eq!(status, 507, "{body}");
    assert!(body.contains("write-ahead log"), "{body}");
    assert!(body.contains("No space left on device"), "{body}");

    let (status, body) = server.post(
        "/otlp/v1/logs",
        "application/json",
        None,
        br#"{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1795910400000000000","body":{"stringValue":"otlp"}}]}]}]}"#,
    );
    assert_eq!(status, 503, "OTLP exporters retry 503, not 507: {body}");

    let (status, body) = server.get("/ready", &[]);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.starts_with("not ready: write-ahead log unusable"),
        "{body}"
    );

    // Reads are unaffected: the acknowledged line is there, the refused one is not.
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="a"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 1_000_000_000).to_string()),
        ],
    );
    let streams = streams_of(&v);
    assert_eq!(streams.len(), 1);
    let lines: Vec<&str> = streams[0].1.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(lines, vec!["kept"]);
}

#[test]
fn ready_is_200_on_a_healthy_store() {
    let server = TestServer::start();
    let (status, body) = server.get("/ready", &[]);
    assert_eq!((status, body.as_str()), (200, "ready\n"));
}

#[test]
fn a_push_too_large_for_one_wal_record_is_413_and_nothing_is_stored() {
    let mut server = TestServer::start_with(&["--wal-record-max-bytes", "2000"]);
    let (status, body) = push(&server, T0, &"x".repeat(3000));
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("request too large for one write-ahead log record"),
        "{body}"
    );
    let (status, body) = push(&server, T0 + 1, "small");
    assert_eq!(status, 204, "{body}");
    // Everything acknowledged replays after a crash.
    server.kill9();
    server.start_again();
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="a"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 1_000_000_000).to_string()),
        ],
    );
    let streams = streams_of(&v);
    let lines: Vec<&str> = streams[0].1.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(lines, vec!["small"]);
}

#[test]
fn an_otlp_push_that_expands_too_far_is_413() {
    let server = TestServer::start_with(&["--max-push-expanded-bytes", "100000"]);
    // 200 records, each given a copy of a 1 KiB resource attribute: ~200 KB
    // expanded from a body of ~10 KB.
    let records: Vec<serde_json::Value> = (0..200)
        .map(|_| json!({"timeUnixNano": T0.to_string(), "body": {"stringValue": "r"}}))
        .collect();
    let body = json!({"resourceLogs": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "svc"}},
            {"key": "big", "value": {"stringValue": "x".repeat(1024)}},
        ]},
        "scopeLogs": [{"logRecords": records}],
    }]});
    let (status, text) = server.post(
        "/otlp/v1/logs",
        "application/json",
        None,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 413, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["code"], 8, "RESOURCE_EXHAUSTED: {v}");
    assert!(v["message"]
        .as_str()
        .unwrap()
        .starts_with("request too large after expansion"));
}
