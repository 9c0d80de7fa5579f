//! Deletes and retention at the store's API, driven by hand (no background
//! threads): merges drop the rows of due delete requests and keep those of
//! requests still in their cancellation period; a retention pass at a given
//! time drops and rewrites partitions as the policy says.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId, NANOS_PER_DAY,
};
use runakefli_storage::deletes::{DeleteRequest, DeleteStatus, LineFilter, LineTest};
use runakefli_storage::retention::policy::StreamRule;
use runakefli_storage::StorageConfig;
use runakefli_storage_query::EmbeddedBackend;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// 2026-11-29 00:00 UTC.
const T0: i64 = 1_795_910_400_000_000_000;

fn open(dir: &Path, f: impl FnOnce(&mut StorageConfig)) -> Arc<EmbeddedBackend> {
    let mut c = StorageConfig::new(dir);
    c.background = false;
    f(&mut c);
    EmbeddedBackend::open(c).unwrap()
}

fn push(s: &EmbeddedBackend, app: &str, ts: i64, lines: &[&str]) {
    let req = PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), app.into())]),
            entries: lines
                .iter()
                .enumerate()
                .map(|(i, l)| Entry {
                    ts: ts + i as i64,
                    line: l.to_string(),
                    metadata: vec![],
                })
                .collect(),
        }],
    };
    s.storage().append(&TenantId::new("t"), &req).unwrap();
}

fn lines(s: &EmbeddedBackend, app: &str, lo: i64, hi: i64) -> Vec<String> {
    let req = ScanRequest::new(
        TenantId::new("t"),
        vec![Matcher::new("app", MatchOp::Eq, app).unwrap()],
        lo,
        hi,
        Direction::Forward,
    );
    let mut out = Vec::new();
    s.scan(&req, &mut |_, b| {
        out.extend(b.entries.into_iter().map(|e| e.line));
        ScanControl::Continue
    })
    .unwrap();
    out
}

fn secret_delete() -> DeleteRequest {
    DeleteRequest {
        id: String::new(),
        query: r#"{app="a"} |= "secret""#.into(),
        matchers: vec![Matcher::new("app", MatchOp::Eq, "a").unwrap()],
        filters: vec![LineFilter {
            negate: false,
            alternatives: vec![LineTest::Contains("secret".into())],
        }],
        start: T0,
        end: T0 + 1000,
        created: 0,
        status: DeleteStatus::Received,
    }
}

#[test]
fn merges_purge_due_deletes_and_keep_cancellable_ones() {
    for (cancel_period, purged) in [(Duration::ZERO, true), (Duration::from_secs(3600), false)] {
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path(), |c| c.delete_cancel_period = cancel_period);
        push(&s, "a", T0, &["ok 1", "secret 1"]);
        s.storage().flush().unwrap();
        push(&s, "a", T0 + 10, &["secret 2", "ok 2"]);
        s.storage().flush().unwrap();
        let stored = s
            .storage()
            .add_delete(&TenantId::new("t"), secret_delete())
            .unwrap();
        assert_eq!(stored.id.len(), 8);
        assert_eq!(
            lines(&s, "a", T0, T0 + 100),
            ["ok 1", "ok 2"],
            "hidden at once"
        );
        assert_eq!(s.storage().stats().part_rows, 4);
        assert_eq!(s.storage().merge_now(true).unwrap(), 1);
        let st = s.storage().stats();
        assert_eq!(st.merges_done, 1);
        if purged {
            assert_eq!((st.part_rows, st.deleted_rows), (2, 2), "{st:?}");
        } else {
            assert_eq!((st.part_rows, st.deleted_rows), (4, 0), "{st:?}");
            // Still cancellable: the rows come back.
            let r = s
                .storage()
                .cancel_delete(&TenantId::new("t"), &stored.id, false);
            assert_eq!(r.unwrap(), Ok(()));
            assert_eq!(lines(&s, "a", T0, T0 + 100).len(), 4);
        }
    }
}

#[test]
fn a_retention_pass_drops_and_rewrites_partitions_at_a_given_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), |c| {
        c.retention.default.period = Some(Duration::from_secs(10 * 86_400));
        c.retention.default.streams = vec![StreamRule {
            matchers: vec![Matcher::new("app", MatchOp::Eq, "short").unwrap()],
            priority: 1,
            period: Duration::from_secs(86_400),
        }];
    });
    let day = |d: i64| T0 + d * NANOS_PER_DAY;
    for d in [0, 5] {
        push(&s, "long", day(d), &["l1", "l2"]);
        push(&s, "short", day(d), &["s1"]);
    }
    s.storage().flush().unwrap();
    assert_eq!(s.storage().stats().partitions, 2);
    // At day 12: day 0 is older than 10 days for everyone: dropped whole.
    // Day 5 is older than 1 day for `short` only: rewritten without it.
    let rep = s.storage().apply_retention(day(12)).unwrap();
    assert_eq!(rep.dropped_partitions, 1, "{rep:?}");
    assert_eq!(rep.rewritten_partitions, 1, "{rep:?}");
    assert_eq!(rep.removed_rows, 3 + 1, "{rep:?}");
    assert_eq!(lines(&s, "long", day(0), day(1)).len(), 0);
    assert_eq!(lines(&s, "long", day(5), day(6)), ["l1", "l2"]);
    assert_eq!(lines(&s, "short", day(0), day(10)).len(), 0);
    let st = s.storage().stats();
    assert_eq!((st.partitions, st.part_rows), (1, 2), "{st:?}");
    // `short` has no data left anywhere: forgotten by the index.
    assert_eq!(st.streams, 1, "{st:?}");
    // A second pass at the same time has nothing to do.
    let rep = s.storage().apply_retention(day(12)).unwrap();
    assert_eq!(rep, Default::default());
}
