//! WAL segment files: the header and the creation of a segment.
//!
//! A segment starts with a 16-byte header (`RKFWAL\0\0`, version u32 LE, 4 zero
//! bytes) followed by back-to-back frames (see [`super::record`]). Reading
//! segments back is [`super::replay`]'s.

use crate::fsutil::{create_dir_durable, fsync_dir};
use crate::{names, StorageError};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// Magic bytes a segment starts with.
pub const MAGIC: &[u8; 8] = b"RKFWAL\0\0";
/// The segment format version this code writes and reads.
pub const VERSION: u32 = 1;
/// Length of the segment header.
pub const HEADER_LEN: usize = 16;

/// The header every segment starts with.
pub fn header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h
}

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
    f.write_all(&header())
        .map_err(|e| StorageError::io(&path, e))?;
    if fsync {
        f.sync_all().map_err(|e| StorageError::io(&path, e))?;
        fsync_dir(&dir)?;
    }
    Ok(f)
}
