//! The WAL high-water mark: the highest segment number ever started, kept in
//! `<data>/WAL_HIGH_WATER` (outside `wal/`), written atomically before each
//! new segment is created.
//!
//! Segment numbers must never go back: replay skips a partition's records in
//! segments below its manifest's `flushed_wal`, so a segment numbered below
//! that mark would have its records skipped even though they were never
//! flushed. On open the next segment is numbered past the newest segment
//! found, past this mark, and at least at every partition's `flushed_wal`,
//! so an emptied (or lost) `wal/` cannot make numbering restart low.
//!
//! Text, like the manifest:
//! ```text
//! runakefli-wal-high-water 1
//! segment <seq>
//! crc32 <8 hex digits>
//! ```

use crate::fsutil::write_atomic;
use crate::quarantine::Quarantine;
use crate::{names, StorageError};
use std::path::Path;

const HEADER: &str = "runakefli-wal-high-water 1";

/// Reads the mark of the store in `data`: 0 when there is none yet; a file
/// that does not verify goes to `quarantine` and counts as none.
pub fn load(data: &Path, quarantine: &Quarantine) -> Result<u64, StorageError> {
    let path = data.join(names::WAL_HIGH_WATER_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StorageError::io(&path, e)),
    };
    match decode(&bytes) {
        Some(seq) => Ok(seq),
        None => {
            quarantine.move_in(&path, "WAL high-water mark does not verify")?;
            Ok(0)
        }
    }
}

/// Replaces the mark with `seq`, durably.
pub fn store(data: &Path, seq: u64) -> Result<(), StorageError> {
    write_atomic(
        &data.join(names::WAL_HIGH_WATER_FILE),
        &data.join(names::WAL_HIGH_WATER_TMP_FILE),
        encode(seq).as_bytes(),
    )
}

fn encode(seq: u64) -> String {
    let body = format!("{HEADER}\nsegment {seq}\n");
    let crc = crc32fast::hash(body.as_bytes());
    format!("{body}crc32 {crc:08x}\n")
}

fn decode(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let body_end = text.strip_suffix('\n')?.rfind('\n')? + 1;
    let (body, last) = text.split_at(body_end);
    let crc = u32::from_str_radix(last.strip_prefix("crc32 ")?.strip_suffix('\n')?, 16).ok()?;
    if crc32fast::hash(body.as_bytes()) != crc {
        return None;
    }
    let mut lines = body.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let seq = lines.next()?.strip_prefix("segment ")?.parse().ok()?;
    lines.next().is_none().then_some(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_missing_and_damaged() {
        let d = tempfile::tempdir().unwrap();
        let q = Quarantine::new(d.path());
        assert_eq!(load(d.path(), &q).unwrap(), 0);
        store(d.path(), 42).unwrap();
        assert_eq!(load(d.path(), &q).unwrap(), 42);
        let text = encode(42).into_bytes();
        for i in 0..text.len() {
            let mut t = text.clone();
            t[i] ^= 0x01;
            assert_eq!(decode(&t), None, "byte {i}");
        }
        std::fs::write(d.path().join(names::WAL_HIGH_WATER_FILE), b"garbage").unwrap();
        assert_eq!(load(d.path(), &q).unwrap(), 0);
        assert_eq!(q.count(), 1);
        assert!(d
            .path()
            .join("quarantine")
            .join(names::WAL_HIGH_WATER_FILE)
            .exists());
    }
}
