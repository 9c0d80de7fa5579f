//! Fail closed, never delete: whatever does not verify when the store opens
//! (a part, a manifest, a stray file, WAL damage) is moved to `quarantine/`
//! with a reason and counted, the store opens and serves the rest; WAL
//! numbering never goes back below what was used or flushed; a push too large
//! for one WAL record is refused before anything is written.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId,
};
use runakefli_storage::{names, StorageConfig, StorageError};
use runakefli_storage_query::EmbeddedBackend;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 2026-11-29 00:00 UTC; every entry lands in that day partition.
const T0: i64 = 1_795_910_400_000_000_000;

fn cfg(dir: &Path) -> StorageConfig {
    let mut c = StorageConfig::new(dir);
    c.background = false;
    c
}

fn open(dir: &Path) -> Arc<EmbeddedBackend> {
    EmbeddedBackend::open(cfg(dir)).unwrap()
}

fn push(s: &EmbeddedBackend, lines: &[(i64, &str)]) {
    let req = PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), "a".into())]),
            entries: lines
                .iter()
                .map(|(ts, l)| Entry {
                    ts: T0 + ts,
                    line: l.to_string(),
                    metadata: vec![],
                })
                .collect(),
        }],
    };
    s.storage().append(&TenantId::new("t"), &req).unwrap();
}

/// Every line of tenant `t`, in time order.
fn lines(s: &EmbeddedBackend) -> Vec<String> {
    let req = ScanRequest {
        tenant: TenantId::new("t"),
        matchers: vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()],
        start: T0 - 1_000_000_000_000,
        end: T0 + 1_000_000_000_000,
        direction: Direction::Forward,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let mut out = Vec::new();
    s.scan(&req, &mut |_, batch| {
        out.extend(batch.entries.into_iter().map(|e| e.line));
        ScanControl::Continue
    })
    .unwrap();
    out
}

fn partition(dir: &Path) -> PathBuf {
    names::partition_dir(&names::tenant_dir(dir, "t"), names::day_of(T0))
}

fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(partition(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "part"))
        .collect();
    v.sort();
    v
}

/// Where `path` (under `dir`) lands in the quarantine.
fn in_quarantine(dir: &Path, path: &Path) -> PathBuf {
    dir.join("quarantine").join(path.strip_prefix(dir).unwrap())
}

fn reason(dir: &Path, path: &Path) -> String {
    let q = in_quarantine(dir, path);
    std::fs::read_to_string(format!("{}.reason", q.display())).unwrap()
}

/// Two flushed parts: "a1" then "b1".
fn two_parts(dir: &Path) -> Vec<PathBuf> {
    let s = open(dir);
    push(&s, &[(1, "a1")]);
    s.storage().flush().unwrap();
    push(&s, &[(2, "b1")]);
    s.storage().flush().unwrap();
    assert_eq!(lines(&s), vec!["a1", "b1"]);
    let p = parts(dir);
    assert_eq!(p.len(), 2);
    p
}

#[test]
fn a_part_that_fails_to_open_is_quarantined_and_the_rest_served() {
    let d = tempfile::tempdir().unwrap();
    let p = two_parts(d.path());
    let mut bytes = std::fs::read(&p[1]).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff; // the footer magic
    std::fs::write(&p[1], &bytes).unwrap();

    let s = open(d.path());
    assert_eq!(lines(&s), vec!["a1"]);
    assert_eq!(s.storage().stats().quarantined_files, 1);
    assert_eq!(
        std::fs::read(in_quarantine(d.path(), &p[1])).unwrap(),
        bytes
    );
    assert!(reason(d.path(), &p[1]).contains("bad part footer"));
    drop(s);
    // The manifest no longer lists it: the next open is clean.
    let s = open(d.path());
    assert_eq!(lines(&s), vec!["a1"]);
    assert_eq!(s.storage().stats().quarantined_files, 0);
}

#[test]
fn a_missing_manifest_quarantines_the_parts_instead_of_deleting_them() {
    let d = tempfile::tempdir().unwrap();
    let p = two_parts(d.path());
    let originals: Vec<Vec<u8>> = p.iter().map(|f| std::fs::read(f).unwrap()).collect();
    std::fs::remove_file(partition(d.path()).join(names::MANIFEST_FILE)).unwrap();

    let s = open(d.path());
    assert_eq!(s.storage().stats().quarantined_files, 2);
    for (f, bytes) in p.iter().zip(&originals) {
        assert_eq!(&std::fs::read(in_quarantine(d.path(), f)).unwrap(), bytes);
        assert!(reason(d.path(), f).contains("without a MANIFEST"));
    }
    // The store opens and takes new data in the same partition.
    push(&s, &[(3, "c1")]);
    s.storage().flush().unwrap();
    drop(s);
    let s = open(d.path());
    assert_eq!(lines(&s), vec!["c1"]);
}

#[test]
fn a_corrupt_manifest_quarantines_the_partition() {
    let d = tempfile::tempdir().unwrap();
    let p = two_parts(d.path());
    let manifest = partition(d.path()).join(names::MANIFEST_FILE);
    let mut text = std::fs::read(&manifest).unwrap();
    text[30] ^= 0x01;
    std::fs::write(&manifest, &text).unwrap();

    let s = open(d.path());
    assert_eq!(
        s.storage().stats().quarantined_files,
        3,
        "the manifest and both parts"
    );
    assert_eq!(
        std::fs::read(in_quarantine(d.path(), &manifest)).unwrap(),
        text
    );
    assert!(reason(d.path(), &manifest).contains("checksum mismatch"));
    assert!(reason(d.path(), &p[0]).contains("MANIFEST is corrupt"));
    assert!(lines(&s).is_empty());
}

#[test]
fn a_listed_part_that_is_missing_is_noted_and_stray_files_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let p = two_parts(d.path());
    std::fs::remove_file(&p[0]).unwrap();
    let stray = partition(d.path()).join("notes.txt");
    std::fs::write(&stray, b"an operator's notes").unwrap();

    let s = open(d.path());
    assert_eq!(lines(&s), vec!["b1"]);
    assert_eq!(s.storage().stats().quarantined_files, 2);
    assert!(reason(d.path(), &p[0]).contains("listed in the partition MANIFEST but missing"));
    assert_eq!(
        std::fs::read(in_quarantine(d.path(), &stray)).unwrap(),
        b"an operator's notes"
    );
}

#[test]
fn wal_damage_in_the_middle_loses_only_the_damaged_record() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    for i in 0..5 {
        push(&s, &[(i, &format!("line {i}"))]);
    }
    drop(s);
    let seg = std::fs::read_dir(d.path().join(names::WAL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::metadata(p).unwrap().len() > 16)
        .expect("the segment with the records");
    let mut bytes = std::fs::read(&seg).unwrap();
    // Inside the second record: records are about the same size.
    let rec = (bytes.len() - 16) / 5;
    bytes[16 + rec + rec / 2] ^= 0xff;
    std::fs::write(&seg, &bytes).unwrap();

    let s = open(d.path());
    assert_eq!(lines(&s), vec!["line 0", "line 2", "line 3", "line 4"]);
    assert_eq!(s.storage().stats().quarantined_files, 1);
    assert_eq!(std::fs::read(in_quarantine(d.path(), &seg)).unwrap(), bytes);
}

#[test]
fn an_emptied_wal_directory_does_not_make_numbering_restart() {
    for also_lose_the_mark in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let s = open(d.path());
        push(&s, &[(1, "flushed")]);
        s.storage().flush().unwrap();
        drop(s);
        // An operator (or a failed disk) empties wal/.
        std::fs::remove_dir_all(d.path().join(names::WAL_DIR)).unwrap();
        if also_lose_the_mark {
            std::fs::remove_file(d.path().join(names::WAL_HIGH_WATER_FILE)).unwrap();
        }
        let s = open(d.path());
        push(&s, &[(2, "acknowledged after")]);
        drop(s); // no flush: the second line lives only in the WAL
        let s = open(d.path());
        assert_eq!(
            lines(&s),
            vec!["flushed", "acknowledged after"],
            "lost the mark too: {also_lose_the_mark}"
        );
    }
}

#[test]
fn a_push_too_large_for_one_wal_record_is_refused_before_writing() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.wal_record_max_bytes = 4096;
    let s = EmbeddedBackend::open(c.clone()).unwrap();
    let big = "x".repeat(5000);
    let req = PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), "big".into())]),
            entries: vec![Entry {
                ts: T0,
                line: big,
                metadata: vec![],
            }],
        }],
    };
    let err = s.storage().append(&TenantId::new("t"), &req).unwrap_err();
    assert!(
        matches!(err, StorageError::RecordTooLarge { limit: 4096, .. }),
        "{err}"
    );
    push(&s, &[(1, "small")]);
    assert_eq!(s.storage().stats().appended_rows, 1);
    assert_eq!(
        s.label_values(&TenantId::new("t"), "app", &[], T0 - 1, T0 + 10)
            .unwrap(),
        vec!["a"],
        "the refused stream was not indexed"
    );
    drop(s);
    // Everything acknowledged replays.
    let s = EmbeddedBackend::open(c).unwrap();
    assert_eq!(lines(&s), vec!["small"]);
}
