//! The real server starts on a data directory with damaged files, reports
//! what it quarantined in `/admin/storage/stats`, and serves the rest.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;

const T0: i64 = 1_795_910_400_000_000_000;

fn push(server: &TestServer, ts: i64, line: &str) {
    server.push_json(
        &json!({"streams": [{"stream": {"app": "a"}, "values": [[ts.to_string(), line]]}]}),
    );
}

fn lines(server: &TestServer) -> Vec<String> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="a"}"#),
            ("start", &(T0 - DAY).to_string()),
            ("end", &(T0 + 60_000_000_000).to_string()),
            ("direction", "forward"),
        ],
    );
    streams_of(&v)
        .into_iter()
        .flat_map(|(_, e)| e.into_iter().map(|(_, l)| l))
        .collect()
}

const DAY: i64 = 86_400_000_000_000;

/// The server's WAL segment holding its records (the longest one).
fn longest_wal_segment(server: &TestServer) -> std::path::PathBuf {
    std::fs::read_dir(server.data_dir().join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wal"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

#[test]
fn damaged_part_and_wal_are_quarantined_and_the_rest_is_served() {
    let mut server = TestServer::start();
    // Two day partitions, one part each.
    push(&server, T0 - DAY, "the day before");
    push(&server, T0, "in the damaged part");
    assert_eq!(server.post("/flush", "text/plain", None, b"").0, 204);
    for i in 0..4 {
        push(&server, T0 + 10 + i, &format!("wal only {i}"));
    }
    server.kill9();

    // Flip the footer of the second day's part, and a byte inside the WAL's
    // second record.
    let part_dir = server
        .data_dir()
        .join("tenants/fake")
        .join(runakefli_storage::names::day_name(T0 / DAY));
    let part = std::fs::read_dir(&part_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "part"))
        .expect("the flushed part of T0's day");
    let mut bytes = std::fs::read(&part).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0xff;
    std::fs::write(&part, &bytes).unwrap();
    let seg = longest_wal_segment(&server);
    let mut wal = std::fs::read(&seg).unwrap();
    let rec = (wal.len() - 16) / 4;
    wal[16 + rec + rec / 2] ^= 0xff;
    std::fs::write(&seg, &wal).unwrap();

    server.start_again();
    let stats = server.get_json("/admin/storage/stats", &[]);
    assert_eq!(stats["quarantined_files"], 2, "{stats}");
    assert_eq!(
        lines(&server),
        vec!["the day before", "wal only 0", "wal only 2", "wal only 3"]
    );
    let quarantined = server.data_dir().join("quarantine");
    assert_eq!(
        std::fs::read(quarantined.join(part.strip_prefix(server.data_dir()).unwrap())).unwrap(),
        bytes
    );
    assert!(quarantined
        .join(seg.strip_prefix(server.data_dir()).unwrap())
        .exists());
}

#[test]
fn a_wal_cut_inside_its_last_record_is_cut_and_reported() {
    let mut server = TestServer::start();
    for i in 0..3 {
        push(&server, T0 + i, &format!("wal only {i}"));
    }
    server.kill9();
    let seg = longest_wal_segment(&server);
    let wal = std::fs::read(&seg).unwrap();
    // Three records of one size after the 16-byte header: cut the last in two.
    let rec = (wal.len() - 16) / 3;
    std::fs::write(&seg, &wal[..wal.len() - rec / 2]).unwrap();

    server.start_again();
    let stats = server.get_json("/admin/storage/stats", &[]);
    assert_eq!(stats["wal_torn_tails"], 1, "{stats}");
    assert_eq!(stats["quarantined_files"], 0, "{stats}");
    assert_eq!(lines(&server), vec!["wal only 0", "wal only 1"]);
    let (status, metrics) = server.get("/metrics", &[]);
    assert_eq!(status, 200);
    assert!(metrics.contains("runakefli_wal_torn_tails 1"), "{metrics}");
}
