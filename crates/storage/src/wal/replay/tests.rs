//! Replay tests: torn tails, damage anywhere in a segment, bad headers, and
//! the group-committed writer they read back.

use super::super::{record, Wal};
use super::*;
use crate::config::WAL_RECORD_MAX_BYTES;
use runakefli_model::{Entry, Labels, PushStream};

fn req(ts: i64) -> PushRequest {
    PushRequest {
        streams: vec![PushStream {
            labels: Labels::new(vec![("app".into(), "a".into())]),
            entries: vec![Entry {
                ts,
                line: format!("line {ts}"),
                metadata: vec![],
            }],
        }],
    }
}

fn frame(ts: i64) -> Vec<u8> {
    record::encode(&TenantId::new("t"), &req(ts), 1, WAL_RECORD_MAX_BYTES).unwrap()
}

/// Replays `data`, returning the first timestamp of every record.
fn collect(data: &Path) -> (Vec<i64>, ReplayStats, Quarantine) {
    let q = Quarantine::new(data);
    let mut got = Vec::new();
    let st = replay(data, &q, |_, _, r| {
        got.push(r.streams[0].entries[0].ts);
        Ok(())
    })
    .unwrap();
    (got, st, q)
}

/// Writes records `range` to segment `seq`; returns the segment's path and
/// the offset of each record.
fn write_segment(
    data: &Path,
    seq: u64,
    range: std::ops::RangeInclusive<i64>,
) -> (PathBuf, Vec<usize>) {
    let wal = Wal::open(data, seq, true, 1 << 30).unwrap();
    let mut offsets = Vec::new();
    let mut off = HEADER_LEN;
    for ts in range {
        let f = frame(ts);
        offsets.push(off);
        off += f.len();
        wal.append(&f).unwrap();
    }
    (names::wal_segment(data, seq), offsets)
}

fn quarantined(data: &Path) -> Vec<String> {
    let dir = data.join(names::QUARANTINE_DIR).join(names::WAL_DIR);
    list_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn torn_tail_of_the_newest_segment_is_cut_without_quarantine() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = write_segment(d.path(), 1, 1..=3);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 3).unwrap();
    let (got, st, q) = collect(d.path());
    assert_eq!(got, vec![1, 2]);
    assert_eq!((st.truncated, st.quarantined, q.count()), (1, 0, 0));
    // The torn write was cut away: a second replay is clean.
    let (got, st, _) = collect(d.path());
    assert_eq!((got, st.truncated), (vec![1, 2], 0));
}

#[test]
fn mid_segment_corruption_keeps_later_records_and_the_original() {
    let d = tempfile::tempdir().unwrap();
    let (path, offsets) = write_segment(d.path(), 1, 1..=5);
    let original = std::fs::read(&path).unwrap();
    let mut bytes = original.clone();
    // Flip a payload byte of the second record.
    bytes[offsets[1] + record::FRAME_HEADER + 3] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let (got, st, q) = collect(d.path());
    assert_eq!(got, vec![1, 3, 4, 5], "records after the damage replay");
    assert_eq!((st.quarantined, st.resynced_records, q.count()), (1, 3, 1));
    // The damaged original is in the quarantine, byte for byte, with a reason.
    let names = quarantined(d.path());
    assert_eq!(
        names,
        vec![
            "00000000000000000001.wal".to_string(),
            "00000000000000000001.wal.reason".to_string()
        ]
    );
    let qdir = d.path().join("quarantine/wal");
    assert_eq!(
        std::fs::read(qdir.join("00000000000000000001.wal")).unwrap(),
        bytes
    );
    let reason = std::fs::read_to_string(qdir.join("00000000000000000001.wal.reason")).unwrap();
    assert!(
        reason.contains(&format!(
            "bytes {}..{}: checksum mismatch",
            offsets[1], offsets[2]
        )),
        "{reason}"
    );
    // The live segment now holds only the valid records: replay is clean.
    let (got, st, q) = collect(d.path());
    assert_eq!(got, vec![1, 3, 4, 5]);
    assert_eq!((st.quarantined, q.count()), (0, 0));
}

#[test]
fn zeroed_region_spanning_records_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    let (path, offsets) = write_segment(d.path(), 1, 1..=6);
    let mut bytes = std::fs::read(&path).unwrap();
    // Zero from inside record 2 to inside record 4 (a lost page).
    for b in &mut bytes[offsets[1] + 5..offsets[3] + 7] {
        *b = 0;
    }
    std::fs::write(&path, &bytes).unwrap();
    let (got, st, _) = collect(d.path());
    assert_eq!(got, vec![1, 5, 6]);
    assert_eq!(st.quarantined, 1);
}

#[test]
fn damaged_tail_of_an_older_segment_is_quarantined_not_cut() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = write_segment(d.path(), 1, 1..=3);
    write_segment(d.path(), 2, 7..=7);
    let len = std::fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let (got, st, _) = collect(d.path());
    assert_eq!(got, vec![1, 2, 7]);
    assert_eq!((st.truncated, st.quarantined), (0, 1));
    let kept = std::fs::read(d.path().join("quarantine/wal/00000000000000000001.wal")).unwrap();
    assert_eq!(kept.len() as u64, len - 3, "the damaged tail is kept");
}

#[test]
fn bad_magic_keeps_the_records_and_repairs_the_header() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = write_segment(d.path(), 1, 1..=3);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] = b'X';
    std::fs::write(&path, &bytes).unwrap();
    let (got, st, _) = collect(d.path());
    assert_eq!(got, vec![1, 2, 3]);
    assert_eq!(st.quarantined, 1);
    assert_eq!(&std::fs::read(&path).unwrap()[..8], MAGIC);
    let reason = std::fs::read_to_string(
        d.path()
            .join("quarantine/wal/00000000000000000001.wal.reason"),
    )
    .unwrap();
    assert!(reason.contains("bad segment magic"), "{reason}");
}

#[test]
fn unknown_version_and_odd_files_are_moved_whole() {
    let d = tempfile::tempdir().unwrap();
    let (path, _) = write_segment(d.path(), 1, 1..=2);
    write_segment(d.path(), 2, 5..=5);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 9;
    std::fs::write(&path, &bytes).unwrap();
    let wal = d.path().join(names::WAL_DIR);
    std::os::unix::fs::symlink("/dev/null", names::wal_segment(d.path(), 3)).unwrap();
    std::fs::write(names::wal_segment(d.path(), 4), b"garbage").unwrap();
    std::fs::write(wal.join("00000000000000000009.wal.tmp"), b"half a repair").unwrap();
    let (got, st, q) = collect(d.path());
    assert_eq!(got, vec![5]);
    assert_eq!(st.segments, vec![2, 4]);
    assert_eq!(q.count(), 3, "version 9, the symlink and the short garbage");
    assert!(!path.exists() && !names::wal_segment(d.path(), 3).exists());
    assert!(!wal.join("00000000000000000009.wal.tmp").exists());
    let reason = std::fs::read_to_string(
        d.path()
            .join("quarantine/wal/00000000000000000001.wal.reason"),
    )
    .unwrap();
    assert!(reason.contains("unsupported WAL version 9"), "{reason}");
}

#[test]
fn segment_cut_while_created_is_removed_and_segments_replay_in_order() {
    let d = tempfile::tempdir().unwrap();
    write_segment(d.path(), 1, 1..=3);
    write_segment(d.path(), 2, 9..=9);
    std::fs::write(names::wal_segment(d.path(), 3), b"RKF").unwrap();
    let (got, st, q) = collect(d.path());
    assert_eq!(got, vec![1, 2, 3, 9]);
    assert_eq!(st.segments, vec![1, 2]);
    assert_eq!(q.count(), 0);
    assert!(!names::wal_segment(d.path(), 3).exists());
}

#[test]
fn group_commit_from_many_threads() {
    let d = tempfile::tempdir().unwrap();
    let wal = std::sync::Arc::new(Wal::open(d.path(), 1, true, 1 << 20).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    wal.append(&frame(t * 1000 + i)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let (mut got, _, _) = collect(d.path());
    got.sort();
    let mut want: Vec<i64> = (0..4)
        .flat_map(|t| (0..50).map(move |i| t * 1000 + i))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn rotate_and_remove_before() {
    let d = tempfile::tempdir().unwrap();
    let wal = Wal::open(d.path(), 1, true, 1 << 20).unwrap();
    wal.append(&frame(1)).unwrap();
    assert_eq!(wal.rotate().unwrap(), 2);
    wal.append(&frame(2)).unwrap();
    wal.remove_before(2).unwrap();
    let (got, st, _) = collect(d.path());
    assert_eq!(got, vec![2]);
    assert_eq!(st.segments, vec![2]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Overwriting any byte range with anything loses at most the records
    /// that overlap it; every other record replays, in order.
    #[test]
    fn damage_loses_only_the_records_it_touches(
        start in 0usize..2000,
        len in 1usize..300,
        fill in proptest::collection::vec(proptest::prelude::any::<u8>(), 300),
    ) {
        let d = tempfile::tempdir().unwrap();
        // Two segments, so damage to the first is never a torn tail.
        let (path, offsets) = write_segment(d.path(), 1, 1..=40);
        write_segment(d.path(), 2, 100..=100);
        let mut bytes = std::fs::read(&path).unwrap();
        let a = HEADER_LEN + start % (bytes.len() - HEADER_LEN);
        let b = (a + len).min(bytes.len());
        bytes[a..b].copy_from_slice(&fill[..b - a]);
        std::fs::write(&path, &bytes).unwrap();
        let (got, _, _) = collect(d.path());
        let mut ends: Vec<usize> = offsets[1..].to_vec();
        ends.push(bytes.len());
        let untouched: Vec<i64> = offsets
            .iter()
            .zip(&ends)
            .enumerate()
            .filter(|(_, (&s, &e))| e <= a || s >= b)
            .map(|(i, _)| i as i64 + 1)
            .collect();
        for ts in &untouched {
            proptest::prop_assert!(got.contains(ts), "record {} lost; damage {}..{}", ts, a, b);
        }
        proptest::prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "order: {:?}", got);
        proptest::prop_assert_eq!(got.last(), Some(&100));
    }
}

/// A log poisoned by `ENOSPC` (its next segment is `/dev/full`) refuses
/// appends, then heals once the segment can be created, and everything
/// acknowledged before and after replays in order, with nothing quarantined.
#[test]
fn a_log_poisoned_by_a_full_disk_heals_and_replays_everything_acknowledged() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path();
    // Every batch closes its segment, so the second segment is started at once.
    let wal = Wal::open(data, 1, true, 1).unwrap();
    let next = names::wal_segment(data, 2);
    std::os::unix::fs::symlink("/dev/full", &next).unwrap();
    wal.append(&frame(1)).unwrap(); // durable; starting segment 2 then fails
    let e = wal.append(&frame(2)).unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    assert!(wal.health().is_err());
    // Still full: recovery fails and the log stays poisoned.
    std::thread::sleep(crate::config::WAL_RETRY_INTERVAL);
    assert!(!wal.try_recover());
    assert!(wal.append(&frame(3)).unwrap_err().is_disk_full());
    // Space frees.
    std::fs::remove_file(&next).unwrap();
    assert!(!wal.try_recover(), "retried at most once per interval");
    std::thread::sleep(crate::config::WAL_RETRY_INTERVAL);
    assert!(wal.try_recover());
    wal.health().unwrap();
    assert_eq!(wal.recoveries(), 1);
    wal.append(&frame(4)).unwrap();
    wal.append(&frame(5)).unwrap();
    drop(wal);
    let (got, _, q) = collect(data);
    assert_eq!(got, vec![1, 4, 5]);
    assert_eq!(q.count(), 0);
}

/// A write cut short by `ENOSPC` leaves bytes after the last durable record;
/// recovery cuts them off, so the segment (no longer the newest) is not
/// quarantined on the next open and no refused record comes back.
#[test]
fn recovery_cuts_what_a_failed_write_left_behind() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path();
    let wal = Wal::open(data, 1, true, 1 << 30).unwrap();
    wal.append(&frame(1)).unwrap();
    let path = names::wal_segment(data, 1);
    let durable = std::fs::metadata(&path).unwrap().len();
    // What a torn write leaves: half a frame after the durable end.
    let f = frame(2);
    {
        use std::io::Write;
        let mut raw = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        raw.write_all(&f[..f.len() / 2]).unwrap();
    }
    wal.poison_for_test(true);
    std::thread::sleep(crate::config::WAL_RETRY_INTERVAL);
    assert!(wal.try_recover());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), durable);
    wal.append(&frame(3)).unwrap();
    drop(wal);
    let (got, _, q) = collect(data);
    assert_eq!(got, vec![1, 3]);
    assert_eq!(q.count(), 0);
}
