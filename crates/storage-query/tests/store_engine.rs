//! End-to-end tests of the storage engine through its public API: ordering,
//! equivalence across memtable/parts/merged parts, dedup, tenancy, time ranges,
//! label index, replay and garbage collection.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId, NANOS_PER_DAY,
};
use runakefli_storage::StorageConfig;
use runakefli_storage_query::EmbeddedBackend;
use std::path::Path;
use std::sync::Arc;

fn cfg(dir: &Path) -> StorageConfig {
    let mut c = StorageConfig::new(dir);
    c.background = false;
    c.merge_min_parts = 2;
    c
}

fn labels(app: &str) -> Labels {
    Labels::new(vec![
        ("app".into(), app.into()),
        ("env".into(), "prod".into()),
    ])
}

fn e(ts: i64, line: &str) -> Entry {
    Entry {
        ts,
        line: line.into(),
        metadata: vec![],
    }
}

fn push(app: &str, entries: Vec<Entry>) -> PushRequest {
    PushRequest {
        streams: vec![PushStream {
            labels: labels(app),
            entries,
        }],
    }
}

fn t(name: &str) -> TenantId {
    TenantId::new(name)
}

fn sel(app: &str) -> Vec<Matcher> {
    vec![Matcher::new("app", MatchOp::Eq, app).unwrap()]
}

/// All (ts, line) pairs per stream label string, in scan order.
fn scan(
    s: &EmbeddedBackend,
    tenant: &str,
    matchers: Vec<Matcher>,
    start: i64,
    end: i64,
    dir: Direction,
) -> Vec<(String, i64, String)> {
    let req = ScanRequest {
        tenant: t(tenant),
        matchers,
        start,
        end,
        direction: dir,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let mut out = Vec::new();
    s.scan(&req, &mut |info, batch| {
        assert!(!batch.entries.is_empty() && batch.entries.len() <= 1000);
        for en in batch.entries {
            out.push((info.labels.to_string(), en.ts, en.line));
        }
        ScanControl::Continue
    })
    .unwrap();
    out
}

fn all(s: &EmbeddedBackend, tenant: &str, dir: Direction) -> Vec<(String, i64, String)> {
    let m = vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()];
    let mut v = scan(s, tenant, m, i64::MIN, i64::MAX, dir);
    // Streams come in no particular order; keep each stream's order.
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn forward_backward_ties_and_out_of_order() {
    let d = tempfile::tempdir().unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    s.storage()
        .append(
            &t("a"),
            &push("x", vec![e(5, "five"), e(1, "one"), e(3, "three-a")]),
        )
        .unwrap();
    s.storage()
        .append(&t("a"), &push("x", vec![e(3, "three-b"), e(2, "two")]))
        .unwrap();
    let fwd: Vec<_> = scan(&s, "a", sel("x"), 0, 100, Direction::Forward)
        .into_iter()
        .map(|x| x.2)
        .collect();
    assert_eq!(fwd, vec!["one", "two", "three-a", "three-b", "five"]);
    let bwd: Vec<_> = scan(&s, "a", sel("x"), 0, 100, Direction::Backward)
        .into_iter()
        .map(|x| x.2)
        .collect();
    assert_eq!(bwd, vec!["five", "three-b", "three-a", "two", "one"]);
}

fn workload() -> Vec<(String, PushRequest)> {
    // Several streams, out-of-order timestamps, equal timestamps, exact
    // duplicates (also across pushes), metadata, and two days.
    let mut out = Vec::new();
    for round in 0..6i64 {
        for app in ["a", "b", "c"] {
            let mut entries = Vec::new();
            for i in 0..40i64 {
                let ts = NANOS_PER_DAY - 50 + ((i * 7 + round * 13) % 100);
                entries.push(Entry {
                    ts,
                    line: format!("{app} r{round} i{}", i % 5),
                    metadata: if i % 3 == 0 {
                        vec![("trace".into(), format!("{}", i % 2))]
                    } else {
                        vec![]
                    },
                });
            }
            entries.push(e(NANOS_PER_DAY, "same-ts duplicate"));
            out.push(("t1".to_string(), push(app, entries)));
        }
    }
    out
}

#[test]
fn same_answer_from_memtable_parts_and_merged_parts() {
    same_answer(false);
}

#[test]
fn same_answer_with_columnar_flushed_parts() {
    same_answer(true);
}

fn same_answer(flush_columnar: bool) {
    let work = workload();
    let d1 = tempfile::tempdir().unwrap();
    let mem = EmbeddedBackend::open(cfg(d1.path())).unwrap();
    for (tn, r) in &work {
        mem.storage().append(&t(tn), r).unwrap();
    }
    let d2 = tempfile::tempdir().unwrap();
    let cfg2 = |p: &Path| {
        let mut c = cfg(p);
        c.flush_columnar = flush_columnar;
        c
    };
    let parts = EmbeddedBackend::open(cfg2(d2.path())).unwrap();
    for (i, (tn, r)) in work.iter().enumerate() {
        parts.storage().append(&t(tn), r).unwrap();
        if i % 4 == 3 {
            parts.storage().flush().unwrap();
        }
    }
    assert!(
        parts.storage().stats().parts >= 4,
        "{:?}",
        parts.storage().stats()
    );
    assert!(parts.storage().stats().memtable_rows > 0);
    for dir in [Direction::Forward, Direction::Backward] {
        let want = all(&mem, "t1", dir);
        assert_eq!(all(&parts, "t1", dir), want, "{dir:?} memtable+parts");
        // Exactly one copy of each exact duplicate.
        let dups = want.iter().filter(|x| x.2 == "same-ts duplicate").count();
        assert_eq!(dups, 3);
    }
    parts.storage().flush().unwrap();
    let merges = parts.storage().merge_now(true).unwrap();
    assert!(merges >= 1);
    assert_eq!(
        parts.storage().stats().parts,
        2,
        "one part per day partition"
    );
    let mut fwd = all(&mem, "t1", Direction::Forward);
    assert_eq!(all(&parts, "t1", Direction::Forward), fwd);
    // Backward is exactly forward reversed, per stream.
    let mut bwd = all(&parts, "t1", Direction::Backward);
    fwd.sort_by(|a, b| a.0.cmp(&b.0));
    bwd.sort_by(|a, b| a.0.cmp(&b.0));
    for app in ["a", "b", "c"] {
        let key = labels(app).to_string();
        let f: Vec<_> = fwd.iter().filter(|x| x.0 == key).collect();
        let mut b: Vec<_> = bwd.iter().filter(|x| x.0 == key).collect();
        b.reverse();
        assert_eq!(f, b);
    }
    // And the merged store survives a reopen unchanged.
    drop(parts);
    let reopened = EmbeddedBackend::open(cfg2(d2.path())).unwrap();
    assert_eq!(
        all(&reopened, "t1", Direction::Forward),
        all(&mem, "t1", Direction::Forward)
    );
}

#[test]
fn tenants_are_isolated() {
    let d = tempfile::tempdir().unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    s.storage()
        .append(&t("one"), &push("x", vec![e(1, "secret-one")]))
        .unwrap();
    s.storage()
        .append(&t("two"), &push("x", vec![e(1, "secret-two")]))
        .unwrap();
    s.storage().flush().unwrap();
    s.storage()
        .append(&t("two"), &push("y", vec![e(2, "two-y")]))
        .unwrap();
    let one = all(&s, "one", Direction::Forward);
    assert_eq!(
        one.iter().map(|x| x.2.as_str()).collect::<Vec<_>>(),
        vec!["secret-one"]
    );
    assert_eq!(
        s.label_values(&t("one"), "app", &[], 0, 10).unwrap(),
        vec!["x"]
    );
    assert_eq!(
        s.label_values(&t("two"), "app", &[], 0, 10).unwrap(),
        vec!["x", "y"]
    );
    assert!(all(&s, "nobody", Direction::Forward).is_empty());
    assert!(s.streams(&t("nobody"), &[], 0, 10).unwrap().is_empty());
    assert!(s
        .storage()
        .append(&t("../evil"), &push("x", vec![e(1, "x")]))
        .is_err());
}

#[test]
fn time_ranges_are_half_open_and_cross_days() {
    let d = tempfile::tempdir().unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    let day = NANOS_PER_DAY;
    s.storage()
        .append(
            &t("a"),
            &push(
                "x",
                vec![e(day - 1, "d0-last"), e(day, "d1-first"), e(3 * day, "d3")],
            ),
        )
        .unwrap();
    s.storage().flush().unwrap();
    s.storage()
        .append(&t("a"), &push("x", vec![e(day + 5, "d1-mem")]))
        .unwrap();
    let lines = |a, b| {
        scan(&s, "a", sel("x"), a, b, Direction::Forward)
            .into_iter()
            .map(|x| x.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(lines(day - 1, day), vec!["d0-last"]);
    assert_eq!(lines(day, day + 6), vec!["d1-first", "d1-mem"]);
    assert_eq!(
        lines(0, 10 * day),
        vec!["d0-last", "d1-first", "d1-mem", "d3"]
    );
    assert!(lines(day + 6, 3 * day).is_empty());
    assert!(lines(5, 5).is_empty());
    // The index knows the stream has no data in that gap.
    assert!(s
        .streams(&t("a"), &sel("x"), day + 6, 3 * day)
        .unwrap()
        .is_empty());
    assert_eq!(
        s.streams(&t("a"), &sel("x"), 3 * day, 3 * day + 1)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(s.storage().stats().partitions, 3);
}

#[test]
fn label_index_queries() {
    let d = tempfile::tempdir().unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    let l1 = Labels::new(vec![
        ("app".into(), "api".into()),
        ("env".into(), "prod".into()),
    ]);
    let l2 = Labels::new(vec![
        ("app".into(), "web".into()),
        ("env".into(), "dev".into()),
        ("team".into(), "x".into()),
    ]);
    let req = PushRequest {
        streams: vec![
            PushStream {
                labels: l1.clone(),
                entries: vec![e(10, "a")],
            },
            PushStream {
                labels: l2.clone(),
                entries: vec![e(100, "b")],
            },
        ],
    };
    s.storage().append(&t("a"), &req).unwrap();
    let m = |n: &str, op, v: &str| Matcher::new(n, op, v).unwrap();
    let ids = |ms: &[Matcher], a, b| {
        let mut v: Vec<String> = s
            .streams(&t("a"), ms, a, b)
            .unwrap()
            .into_iter()
            .map(|x| x.labels.to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        ids(&[m("env", MatchOp::Eq, "prod")], 0, 1000),
        vec![l1.to_string()]
    );
    assert_eq!(ids(&[m("app", MatchOp::Re, "api|web")], 0, 1000).len(), 2);
    assert_eq!(
        ids(&[m("team", MatchOp::Eq, "")], 0, 1000),
        vec![l1.to_string()]
    );
    assert_eq!(
        ids(&[m("app", MatchOp::Neq, "api")], 0, 50),
        Vec::<String>::new()
    );
    assert_eq!(
        s.label_names(&t("a"), 0, 1000).unwrap(),
        vec!["app", "env", "team"]
    );
    assert_eq!(s.label_names(&t("a"), 0, 50).unwrap(), vec!["app", "env"]);
    assert_eq!(
        s.label_values(&t("a"), "env", &[], 0, 1000).unwrap(),
        vec!["dev", "prod"]
    );
    assert_eq!(
        s.label_values(&t("a"), "env", &[m("app", MatchOp::Eq, "web")], 0, 1000)
            .unwrap(),
        vec!["dev"]
    );
    let stream = s
        .streams(&t("a"), &[m("app", MatchOp::Eq, "api")], 0, 1000)
        .unwrap();
    assert_eq!(stream[0].id, l1.stream_id());
    // Survives flush + reopen (stream file + part index ranges).
    s.storage().flush().unwrap();
    drop(s);
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    assert_eq!(s.label_names(&t("a"), 0, 50).unwrap(), vec!["app", "env"]);
    assert_eq!(
        s.label_values(&t("a"), "team", &[], 0, 1000).unwrap(),
        vec!["x"]
    );
}

#[test]
fn replay_after_drop_without_flush_and_after_partial_flush() {
    let d = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
        s.storage()
            .append(&t("a"), &push("x", vec![e(1, "flushed")]))
            .unwrap();
        s.storage().flush().unwrap();
        s.storage()
            .append(&t("a"), &push("x", vec![e(2, "only-in-wal")]))
            .unwrap();
        s.storage()
            .append(&t("b"), &push("y", vec![e(3, "other-tenant")]))
            .unwrap();
    }
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    let lines: Vec<_> = all(&s, "a", Direction::Forward)
        .into_iter()
        .map(|x| x.2)
        .collect();
    assert_eq!(lines, vec!["flushed", "only-in-wal"]);
    assert_eq!(all(&s, "b", Direction::Forward).len(), 1);
    assert_eq!(
        s.storage().stats().memtable_rows,
        2,
        "the flushed record is not replayed again"
    );
    s.storage().flush().unwrap();
    let st = s.storage().stats();
    assert_eq!(st.memtable_rows, 0);
    // Only the fresh, empty-of-records segment is left.
    let wal_files = std::fs::read_dir(d.path().join("wal")).unwrap().count();
    assert_eq!(wal_files, 1);
    drop(s);
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    assert_eq!(all(&s, "a", Direction::Forward).len(), 2);
    assert_eq!(s.storage().stats().memtable_rows, 0);
}

#[test]
fn a_data_directory_is_opened_once() {
    let d = tempfile::tempdir().unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    assert!(matches!(
        EmbeddedBackend::open(cfg(d.path())),
        Err(runakefli_storage::StorageError::Locked(_))
    ));
    drop(s);
    EmbeddedBackend::open(cfg(d.path())).unwrap();
}

#[test]
fn wal_rolls_over_segments_and_replays_them_all() {
    let d = tempfile::tempdir().unwrap();
    let small = |p: &Path| {
        let mut c = cfg(p);
        c.wal_segment_max_bytes = 2048;
        c
    };
    {
        let s = EmbeddedBackend::open(small(d.path())).unwrap();
        for i in 0..200i64 {
            let line = format!(
                "line {i} {:016x}",
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            );
            s.storage()
                .append(&t("a"), &push(&format!("s{}", i % 3), vec![e(i, &line)]))
                .unwrap();
        }
    }
    let segments = || std::fs::read_dir(d.path().join("wal")).unwrap().count();
    assert!(segments() > 3, "segments {}", segments());
    let s = EmbeddedBackend::open(small(d.path())).unwrap();
    assert_eq!(all(&s, "a", Direction::Forward).len(), 200);
    s.storage().flush().unwrap();
    assert_eq!(segments(), 1);
    drop(s);
    let s = EmbeddedBackend::open(small(d.path())).unwrap();
    assert_eq!(all(&s, "a", Direction::Forward).len(), 200);
    assert_eq!(s.storage().stats().memtable_rows, 0);
}

#[test]
fn crash_leftovers_are_removed_on_open() {
    let d = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
        s.storage()
            .append(&t("a"), &push("x", vec![e(1, "kept")]))
            .unwrap();
        s.storage().flush().unwrap();
    }
    let pdir = d.path().join("tenants/a/19700101");
    std::fs::write(pdir.join("00000000000000ff.part"), b"garbage").unwrap();
    std::fs::write(pdir.join("0000000000000100.part.tmp"), b"half").unwrap();
    std::fs::write(pdir.join("MANIFEST.tmp"), b"half").unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    let names: Vec<String> = std::fs::read_dir(&pdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(all(&s, "a", Direction::Forward).len(), 1);
}

#[test]
fn scan_control_next_stream_and_stop() {
    let d = tempfile::tempdir().unwrap();
    let s = EmbeddedBackend::open(cfg(d.path())).unwrap();
    for app in ["a", "b", "c"] {
        let entries = (0..2500).map(|i| e(i, &format!("{app}{i}"))).collect();
        s.storage().append(&t("t"), &push(app, entries)).unwrap();
    }
    s.storage().flush().unwrap();
    let req = ScanRequest {
        tenant: t("t"),
        matchers: vec![Matcher::new("env", MatchOp::Eq, "prod").unwrap()],
        start: 0,
        end: i64::MAX,
        direction: Direction::Forward,
        required_substrings: Vec::new(),
        shard: None,
        cutoff: None,
    };
    // The substring hint leaves out rows whose lines lack it.
    let hinted = ScanRequest {
        required_substrings: vec!["a1".into()],
        ..req.clone()
    };
    let mut kept = Vec::new();
    s.scan(&hinted, &mut |_, b| {
        kept.extend(b.entries.into_iter().map(|e| e.line));
        ScanControl::Continue
    })
    .unwrap();
    assert!(!kept.is_empty() && kept.iter().all(|l| l.contains("a1")));
    assert_eq!(
        kept.len(),
        (0..2500).filter(|i| format!("a{i}").contains("a1")).count()
    );
    let mut batches = Vec::new();
    s.scan(&req, &mut |info, b| {
        batches.push((info.labels.to_string(), b.entries.len()));
        ScanControl::NextStream
    })
    .unwrap();
    assert_eq!(batches.len(), 3);
    assert!(batches.iter().all(|b| b.1 == 1000));
    let mut n = 0;
    s.scan(&req, &mut |_, _| {
        n += 1;
        ScanControl::Stop
    })
    .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn background_threads_flush_and_merge() {
    let d = tempfile::tempdir().unwrap();
    let mut c = StorageConfig::new(d.path());
    c.memtable_flush_bytes = 32 << 10;
    c.merge_min_parts = 4;
    c.merge_idle_after = std::time::Duration::from_millis(200);
    let s = EmbeddedBackend::open(c).unwrap();
    let threads: Vec<_> = (0..2)
        .map(|th| {
            let s: Arc<EmbeddedBackend> = s.clone();
            std::thread::spawn(move || {
                for i in 0..100i64 {
                    let entries = (0..20)
                        .map(|j| {
                            e(
                                i * 100 + j,
                                &format!("thread {th} batch {i} line {j} {}", "x".repeat(50)),
                            )
                        })
                        .collect();
                    s.storage()
                        .append(&t("t"), &push(&format!("s{}", i % 7), entries))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in threads {
        h.join().unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let st = s.storage().stats();
        if st.memtable_rows == 0
            && st.merges_running == 0
            && st.merge_backlog == 0
            && st.flushes > 0
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{st:?}");
        if st.memtable_rows > 0 {
            s.storage().flush().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let st = s.storage().stats();
    assert_eq!(st.appended_rows, 4000);
    assert_eq!(st.part_rows, 4000);
    assert!(st.merges_done >= 1, "{st:?}");
    assert_eq!(all(&s, "t", Direction::Forward).len(), 4000);
}
