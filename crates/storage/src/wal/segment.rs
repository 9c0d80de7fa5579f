//! WAL segment files: header, creation, and replay with torn-tail truncation.
//!
//! A segment starts with a 16-byte header (`RKFWAL\0\0`, version u32 LE, 4 zero
//! bytes) followed by back-to-back frames (see [`super::record`]).

use super::record::{self, Frame};
use crate::fsutil::{create_dir_durable, fsync_dir, list_dir, remove_file};
use crate::{names, StorageError};
use runakefli_model::{PushRequest, TenantId};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"RKFWAL\0\0";
const VERSION: u32 = 1;
/// Length of the segment header.
pub const HEADER_LEN: usize = 16;

/// Creates segment `seq` with its header, durably.
pub fn create(data: &Path, seq: u64, fsync: bool) -> Result<File, StorageError> {
    let dir = data.join(names::WAL_DIR);
    create_dir_durable(&dir)?;
    let path = names::wal_segment(data, seq);
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    f.write_all(&h).map_err(|e| StorageError::io(&path, e))?;
    if fsync {
        f.sync_all().map_err(|e| StorageError::io(&path, e))?;
        fsync_dir(&dir)?;
    }
    Ok(f)
}

/// What replay found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayStats {
    /// Segment numbers present, ascending.
    pub segments: Vec<u64>,
    /// Records replayed.
    pub records: u64,
    /// Segments whose tail was cut off at the first invalid record.
    pub truncated: u64,
}

/// Replays every segment under `data` in order, calling `apply(segment, tenant,
/// request)` per valid record. A segment is read up to its first invalid frame
/// (torn write or checksum failure); the file is truncated there so the damage
/// is not met again. A header-less segment (crash right after creation) is
/// removed.
pub fn replay(
    data: &Path,
    mut apply: impl FnMut(u64, TenantId, PushRequest) -> Result<(), StorageError>,
) -> Result<ReplayStats, StorageError> {
    let dir = data.join(names::WAL_DIR);
    let mut stats = ReplayStats::default();
    let mut segs: Vec<(u64, std::path::PathBuf)> = list_dir(&dir)?
        .into_iter()
        .filter_map(|(n, p)| names::parse_wal_segment(&n).map(|s| (s, p)))
        .collect();
    segs.sort();
    for (seq, path) in segs {
        let buf = std::fs::read(&path).map_err(|e| StorageError::io(&path, e))?;
        if buf.len() < HEADER_LEN || &buf[..8] != MAGIC {
            tracing::warn!(path = %path.display(), "removing WAL segment without a valid header");
            remove_file(&path)?;
            fsync_dir(&dir)?;
            continue;
        }
        let version = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(StorageError::corrupt(
                path.display().to_string(),
                format!("unsupported WAL version {version}"),
            ));
        }
        stats.segments.push(seq);
        let mut off = HEADER_LEN;
        while off < buf.len() {
            let bad = match record::read_frame(&buf[off..]) {
                Frame::Valid(payload, used) => match record::decode_payload(payload) {
                    Ok((tenant, req)) => {
                        apply(seq, tenant, req)?;
                        stats.records += 1;
                        off += used;
                        continue;
                    }
                    Err(e) => e.to_string(),
                },
                Frame::Invalid(why) => why.to_string(),
            };
            tracing::warn!(path = %path.display(), offset = off, reason = %bad, "truncating WAL segment at invalid record");
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| StorageError::io(&path, e))?;
            f.set_len(off as u64)
                .and_then(|_| f.sync_all())
                .map_err(|e| StorageError::io(&path, e))?;
            stats.truncated += 1;
            break;
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::super::Wal;
    use super::*;
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

    fn collect(data: &Path) -> (Vec<i64>, ReplayStats) {
        let mut got = Vec::new();
        let st = replay(data, |_, _, r| {
            got.push(r.streams[0].entries[0].ts);
            Ok(())
        })
        .unwrap();
        (got, st)
    }

    fn write_three(data: &Path) -> std::path::PathBuf {
        let wal = Wal::open(data, 1, true, 1 << 20).unwrap();
        for ts in 1..=3 {
            wal.append(&record::encode(&TenantId::new("t"), &req(ts), 1).unwrap())
                .unwrap();
        }
        names::wal_segment(data, 1)
    }

    #[test]
    fn torn_tail_is_truncated() {
        let d = tempfile::tempdir().unwrap();
        let path = write_three(d.path());
        let len = std::fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        let (got, st) = collect(d.path());
        assert_eq!(got, vec![1, 2]);
        assert_eq!(st.truncated, 1);
        // The damage was cut away: a second replay is clean.
        let (got, st) = collect(d.path());
        assert_eq!((got, st.truncated), (vec![1, 2], 0));
    }

    #[test]
    fn checksum_corruption_stops_replay_at_the_record() {
        let d = tempfile::tempdir().unwrap();
        let path = write_three(d.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let first = match record::read_frame(&bytes[HEADER_LEN..]) {
            Frame::Valid(_, used) => used,
            Frame::Invalid(w) => panic!("{w}"),
        };
        // Flip a payload byte of the second record.
        bytes[HEADER_LEN + first + record::FRAME_HEADER + 3] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let (got, st) = collect(d.path());
        assert_eq!(got, vec![1]);
        assert_eq!(st.truncated, 1);
    }

    #[test]
    fn headerless_segment_is_removed_and_segments_replay_in_order() {
        let d = tempfile::tempdir().unwrap();
        write_three(d.path());
        let wal = Wal::open(d.path(), 2, false, 1 << 20).unwrap();
        wal.append(&record::encode(&TenantId::new("t"), &req(9), 1).unwrap())
            .unwrap();
        std::fs::write(names::wal_segment(d.path(), 3), b"RKF").unwrap();
        let (got, st) = collect(d.path());
        assert_eq!(got, vec![1, 2, 3, 9]);
        assert_eq!(st.segments, vec![1, 2]);
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
                        let f = record::encode(&TenantId::new("t"), &req(t * 1000 + i), 1).unwrap();
                        wal.append(&f).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let (mut got, _) = collect(d.path());
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
        wal.append(&record::encode(&TenantId::new("t"), &req(1), 1).unwrap())
            .unwrap();
        assert_eq!(wal.rotate().unwrap(), 2);
        wal.append(&record::encode(&TenantId::new("t"), &req(2), 1).unwrap())
            .unwrap();
        wal.remove_before(2).unwrap();
        let (got, st) = collect(d.path());
        assert_eq!(got, vec![2]);
        assert_eq!(st.segments, vec![2]);
    }
}
