//! A flush that fails half-way (one partition committed, the next one not) is
//! retried from its frozen memtable; the retry writes only the partitions that
//! did not commit, so no committed partition gets a second copy of its rows.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId,
};
use runakefli_storage::{names, StorageConfig};
use runakefli_storage_query::EmbeddedBackend;
use std::sync::Arc;

/// 2026-11-29 00:00 UTC.
const T0: i64 = 1_795_910_400_000_000_000;
const DAY: i64 = runakefli_model::NANOS_PER_DAY;

fn open(dir: &std::path::Path) -> Arc<EmbeddedBackend> {
    let mut c = StorageConfig::new(dir);
    c.background = false;
    EmbeddedBackend::open(c).unwrap()
}

fn push(s: &EmbeddedBackend, ts: i64, line: &str) {
    let req = PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), "a".into())]),
            entries: vec![Entry {
                ts,
                line: line.into(),
                metadata: vec![],
            }],
        }],
    };
    s.storage().append(&TenantId::new("t"), &req).unwrap();
}

fn lines(s: &EmbeddedBackend) -> Vec<String> {
    let req = ScanRequest {
        tenant: TenantId::new("t"),
        matchers: vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()],
        start: i64::MIN,
        end: i64::MAX,
        direction: Direction::Forward,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let mut out = Vec::new();
    s.scan(&req, &mut |_, b| {
        out.extend(b.entries.into_iter().map(|e| e.line));
        ScanControl::Continue
    })
    .unwrap();
    out
}

/// Parts and rows on disk, summed over partitions.
fn parts_and_rows(s: &EmbeddedBackend) -> (u64, u64) {
    let st = s.storage().stats();
    (st.parts, st.part_rows)
}

#[test]
fn a_retried_flush_does_not_rewrite_committed_partitions() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    push(&s, T0, "day one");
    push(&s, T0 + DAY, "day two");
    // The second day's partition directory cannot be created: a file is in
    // its place, so the flush commits day one and fails on day two.
    let tenant = names::tenant_dir(d.path(), "t");
    let day2 = names::partition_dir(&tenant, names::day_of(T0 + DAY));
    std::fs::write(&day2, b"in the way").unwrap();
    assert!(s.storage().flush().is_err());
    assert_eq!(parts_and_rows(&s), (1, 1), "day one committed");
    assert_eq!(lines(&s), vec!["day one", "day two"]);

    std::fs::remove_file(&day2).unwrap();
    s.storage().flush().unwrap();
    assert_eq!(
        parts_and_rows(&s),
        (2, 2),
        "one part per day: the retry left day one alone"
    );
    assert_eq!(lines(&s), vec!["day one", "day two"]);
    drop(s);
    let s = open(d.path());
    assert_eq!(parts_and_rows(&s), (2, 2));
    assert_eq!(lines(&s), vec!["day one", "day two"]);
    assert_eq!(s.storage().stats().quarantined_files, 0);
}
