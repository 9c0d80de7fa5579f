//! Replay of the WAL on open: every record of every segment that verifies is
//! handed to the store, in segment order; nothing that fails verification is
//! deleted.
//!
//! Per segment:
//! - **Torn tail.** A write cut short by a crash leaves the newest segment
//!   ending inside a frame. Such a tail was never acknowledged (a record is
//!   acknowledged after its fsync); it is cut off.
//! - **Damage.** Any other frame that fails its length, checksum or decoding
//!   is damage. Reading resynchronises on the next offset where a complete,
//!   checksummed frame that decodes starts (a cheap test of the bytes where
//!   the record kind and the zstd magic sit comes first, so the search is
//!   linear), and every later record replays. The original segment is
//!   hard-linked into the quarantine with the damaged byte ranges as reason,
//!   then replaced by a copy holding only its valid frames.
//! - **Header.** A segment shorter than its header whose bytes are a prefix
//!   of a valid header (a crash while creating it) holds no record and is
//!   removed. A bad magic is damage: the frames after the header are read as
//!   above and the repaired segment gets a good header. An unknown version,
//!   or a file that is not a regular file, is moved to the quarantine whole.

use super::record::{self, Frame};
use super::segment::{self, HEADER_LEN, MAGIC, VERSION};
use crate::fsutil::{fsync_dir, list_dir, remove_file, write_atomic};
use crate::quarantine::Quarantine;
use crate::{names, StorageError};
use runakefli_model::{PushRequest, TenantId};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

/// What replay found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayStats {
    /// Segment numbers present (replayed), ascending.
    pub segments: Vec<u64>,
    /// Records replayed.
    pub records: u64,
    /// Segments whose torn tail (an unacknowledged, cut-short write) was cut off.
    pub truncated: u64,
    /// Segments with damage, kept in the quarantine.
    pub quarantined: u64,
    /// Records replayed from after a damaged region.
    pub resynced_records: u64,
}

/// A damaged byte range of a segment.
#[derive(Debug)]
struct Damage {
    start: usize,
    end: usize,
    why: String,
}

/// Replays every segment under `data` in order, calling `apply(segment,
/// tenant, request)` per valid record (see the module documentation for
/// damaged segments, which go to `quarantine`).
pub fn replay(
    data: &Path,
    quarantine: &Quarantine,
    mut apply: impl FnMut(u64, TenantId, PushRequest) -> Result<(), StorageError>,
) -> Result<ReplayStats, StorageError> {
    let dir = data.join(names::WAL_DIR);
    let mut stats = ReplayStats::default();
    let mut segs: Vec<(u64, PathBuf)> = Vec::new();
    for (name, path) in list_dir(&dir)? {
        if let Some(seq) = names::parse_wal_segment(&name) {
            segs.push((seq, path));
        } else if name.ends_with(names::TMP_SUFFIX) {
            // A repair interrupted before its rename: the original is intact.
            remove_file(&path)?;
        }
    }
    segs.sort();
    let newest = segs.last().map(|(s, _)| *s);
    for (seq, path) in segs {
        let meta = path
            .symlink_metadata()
            .map_err(|e| StorageError::io(&path, e))?;
        if !meta.is_file() {
            quarantine.move_in(&path, "WAL segment is not a regular file")?;
            stats.quarantined += 1;
            continue;
        }
        let buf = std::fs::read(&path).map_err(|e| StorageError::io(&path, e))?;
        if buf.len() < HEADER_LEN && segment::header().starts_with(&buf) {
            tracing::info!(path = %path.display(), "removing WAL segment cut short while being created (it holds no record)");
            remove_file(&path)?;
            fsync_dir(&dir)?;
            continue;
        }
        if buf.len() >= HEADER_LEN && &buf[..8] == MAGIC {
            let version = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes"));
            if version != VERSION {
                quarantine.move_in(&path, &format!("unsupported WAL version {version}"))?;
                stats.quarantined += 1;
                continue;
            }
        }
        stats.segments.push(seq);
        let segment = Segment {
            seq,
            path: &path,
            buf: &buf,
            newest: Some(seq) == newest,
        };
        replay_segment(data, &segment, quarantine, &mut stats, &mut apply)?;
    }
    Ok(stats)
}

/// One WAL segment read for replay.
struct Segment<'s> {
    /// Its number.
    seq: u64,
    /// Its file.
    path: &'s Path,
    /// Its bytes.
    buf: &'s [u8],
    /// It is the newest segment, the only one a torn tail may end.
    newest: bool,
}

/// Replays one segment whose header has a good version or a bad magic.
fn replay_segment(
    data: &Path,
    segment: &Segment<'_>,
    quarantine: &Quarantine,
    stats: &mut ReplayStats,
    apply: &mut impl FnMut(u64, TenantId, PushRequest) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let &Segment {
        seq,
        path,
        buf,
        newest,
    } = segment;
    let mut damage: Vec<Damage> = Vec::new();
    let mut valid: Vec<(usize, usize)> = Vec::new();
    if buf.len() < HEADER_LEN || &buf[..8] != MAGIC {
        damage.push(Damage {
            start: 0,
            end: HEADER_LEN.min(buf.len()),
            why: "bad segment magic".into(),
        });
    }
    let mut torn_tail = false;
    let mut off = HEADER_LEN;
    while off < buf.len() {
        let why = match record::read_frame(&buf[off..]) {
            Frame::Valid(payload, used) => match record::decode_payload(payload) {
                Ok((tenant, req)) => {
                    apply(seq, tenant, req)?;
                    stats.records += 1;
                    if !damage.is_empty() {
                        stats.resynced_records += 1;
                    }
                    valid.push((off, used));
                    off += used;
                    continue;
                }
                Err(e) => {
                    // The checksum holds, so the frame's length can be trusted.
                    damage.push(Damage {
                        start: off,
                        end: off + used,
                        why: e.to_string(),
                    });
                    off += used;
                    continue;
                }
            },
            Frame::Short(why) => {
                torn_tail = true;
                why
            }
            Frame::Invalid(why) => why,
        };
        let next = resync(buf, off + 1);
        if next.is_some() {
            torn_tail = false;
        }
        let end = next.unwrap_or(buf.len());
        damage.push(Damage {
            start: off,
            end,
            why: why.to_string(),
        });
        off = end;
    }
    if damage.is_empty() {
        return Ok(());
    }
    let last_is_torn = torn_tail && damage.last().is_some_and(|d| d.end == buf.len());
    if newest && last_is_torn && damage.len() == 1 {
        let cut = damage[0].start;
        tracing::warn!(
            path = %path.display(),
            offset = cut,
            bytes = buf.len() - cut,
            "cutting the torn tail of the WAL (a write cut short by a crash, never acknowledged)"
        );
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| StorageError::io(path, e))?;
        f.set_len(cut as u64)
            .and_then(|_| f.sync_all())
            .map_err(|e| StorageError::io(path, e))?;
        stats.truncated += 1;
        return Ok(());
    }
    let ranges: Vec<String> = damage
        .iter()
        .map(|d| format!("bytes {}..{}: {}", d.start, d.end, d.why))
        .collect();
    let reason = format!(
        "damaged WAL segment ({}); {} valid records kept and replayed",
        ranges.join("; "),
        valid.len()
    );
    quarantine.link_in(path, &reason)?;
    let mut repaired = Vec::with_capacity(buf.len());
    repaired.extend_from_slice(&segment::header());
    for &(start, len) in &valid {
        repaired.extend_from_slice(&buf[start..start + len]);
    }
    write_atomic(path, &names::wal_segment_tmp(data, seq), &repaired)?;
    stats.quarantined += 1;
    Ok(())
}

/// The first offset at or after `from` where a complete, checksummed frame
/// that decodes starts.
fn resync(buf: &[u8], from: usize) -> Option<usize> {
    (from..buf.len()).find(|&p| {
        let rest = &buf[p..];
        if !record::may_start_frame(rest) {
            return false;
        }
        match record::read_frame(rest) {
            Frame::Valid(payload, _) => record::decode_payload(payload).is_ok(),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests;
