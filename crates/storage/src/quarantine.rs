//! The quarantine: where files that fail verification when the store opens
//! (or, for parts' blocks, when they are read) go instead of being deleted.
//!
//! A damaged file is moved (or, when the store keeps using a repaired copy,
//! hard-linked) to `<data>/quarantine/<path relative to the data dir>`, with
//! `<same>.reason` beside it saying what was wrong and when. A name already
//! taken gets `.1`, `.2`, … appended. Every quarantined file is logged at
//! `warn` with its path and reason and counted in
//! [`crate::StorageStats::quarantined_files`]. Nothing here ever deletes: an
//! operator inspects the directory, restores or removes what is in it.

use crate::fsutil::{create_dir_durable, fsync_dir};
use crate::{names, StorageError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The quarantine of one data directory.
#[derive(Debug)]
pub struct Quarantine {
    data: PathBuf,
    count: AtomicU64,
    damaged_blocks: AtomicU64,
}

/// How a file enters the quarantine.
enum Action<'a> {
    /// Rename the file itself.
    Move,
    /// Hard-link it (the store goes on with a repaired version under the
    /// original name, written afterwards).
    Link,
    /// Write these bytes (a part of the file that is about to be cut off).
    Bytes(&'a [u8]),
    /// Nothing to keep (a listed file that is missing): only the reason.
    ReasonOnly,
}

impl Quarantine {
    /// The quarantine of the store in `data`.
    pub fn new(data: &Path) -> Self {
        Quarantine {
            data: data.to_path_buf(),
            count: AtomicU64::new(0),
            damaged_blocks: AtomicU64::new(0),
        }
    }

    /// Blocks found damaged when read since the store opened (see
    /// `part::damage`); their parts are in the quarantine.
    pub fn damaged_blocks(&self) -> u64 {
        self.damaged_blocks.load(Ordering::Relaxed)
    }

    /// Counts one more block found damaged when read.
    pub fn note_damaged_block(&self) {
        self.damaged_blocks.fetch_add(1, Ordering::Relaxed);
    }

    /// Files quarantined since the store opened.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Moves `path` into the quarantine; returns where it went.
    pub fn move_in(&self, path: &Path, reason: &str) -> Result<PathBuf, StorageError> {
        self.admit(path, "", Action::Move, reason)
    }

    /// Hard-links `path` into the quarantine, leaving it in place (the caller
    /// then replaces it with a repaired version).
    pub fn link_in(&self, path: &Path, reason: &str) -> Result<PathBuf, StorageError> {
        self.admit(path, "", Action::Link, reason)
    }

    /// Keeps `bytes` of `path` (named `<path><suffix>`) before the caller cuts
    /// them off the file.
    pub fn keep_bytes(
        &self,
        path: &Path,
        suffix: &str,
        bytes: &[u8],
        reason: &str,
    ) -> Result<PathBuf, StorageError> {
        self.admit(path, suffix, Action::Bytes(bytes), reason)
    }

    /// Records that `path` should exist but does not.
    pub fn note_missing(&self, path: &Path, reason: &str) -> Result<PathBuf, StorageError> {
        self.admit(path, "", Action::ReasonOnly, reason)
    }

    fn admit(
        &self,
        path: &Path,
        suffix: &str,
        action: Action<'_>,
        reason: &str,
    ) -> Result<PathBuf, StorageError> {
        let rel = path.strip_prefix(&self.data).unwrap_or(path);
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        let mut name = rel.as_os_str().to_owned();
        name.push(suffix);
        let base = self.data.join(names::QUARANTINE_DIR).join(&name);
        let dir = base
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.data.join(names::QUARANTINE_DIR));
        create_dir_durable(&dir)?;
        let dest = free_name(&base);
        match action {
            Action::Move => {
                std::fs::rename(path, &dest).map_err(|e| StorageError::io(path, e))?;
                if let Some(src_dir) = path.parent() {
                    fsync_dir(src_dir)?;
                }
            }
            Action::Link => {
                std::fs::hard_link(path, &dest).map_err(|e| StorageError::io(path, e))?;
            }
            Action::Bytes(b) => write_synced(&dest, b)?,
            Action::ReasonOnly => {}
        }
        let when = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut reason_path = dest.clone().into_os_string();
        reason_path.push(names::REASON_SUFFIX);
        let reason_path = PathBuf::from(reason_path);
        write_synced(
            &reason_path,
            format!(
                "file: {}\nreason: {reason}\nquarantined_at_unix: {when}\n",
                path.display()
            )
            .as_bytes(),
        )?;
        fsync_dir(&dir)?;
        self.count.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            file = %path.display(),
            reason,
            quarantined_as = %dest.display(),
            "quarantined a file that failed verification"
        );
        Ok(dest)
    }
}

/// `base`, or `base.1`, `base.2`, … whichever (with its reason file) is free.
fn free_name(base: &Path) -> PathBuf {
    let taken = |p: &Path| {
        let mut r = p.as_os_str().to_owned();
        r.push(names::REASON_SUFFIX);
        p.symlink_metadata().is_ok() || Path::new(&r).symlink_metadata().is_ok()
    };
    if !taken(base) {
        return base.to_path_buf();
    }
    (1u64..)
        .map(|n| {
            let mut s = base.as_os_str().to_owned();
            s.push(format!(".{n}"));
            PathBuf::from(s)
        })
        .find(|p| !taken(p))
        .expect("an unused name exists")
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(path)
        .map_err(|e| StorageError::io(path, e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| StorageError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_links_and_keeps_with_reasons() {
        let d = tempfile::tempdir().unwrap();
        let q = Quarantine::new(d.path());
        let part = d.path().join("tenants/t/20240101/0000000000000001.part");
        std::fs::create_dir_all(part.parent().unwrap()).unwrap();
        std::fs::write(&part, b"broken").unwrap();
        let dest = q.move_in(&part, "bad footer").unwrap();
        assert_eq!(
            dest,
            d.path()
                .join("quarantine/tenants/t/20240101/0000000000000001.part")
        );
        assert!(!part.exists());
        assert_eq!(std::fs::read(&dest).unwrap(), b"broken");
        let reason = std::fs::read_to_string(format!("{}.reason", dest.display())).unwrap();
        assert!(reason.contains("reason: bad footer"), "{reason}");

        // Same name again: a numbered sibling, nothing overwritten.
        std::fs::write(&part, b"again").unwrap();
        let dest2 = q.move_in(&part, "again").unwrap();
        assert_eq!(dest2.file_name().unwrap(), "0000000000000001.part.1");
        assert_eq!(std::fs::read(&dest).unwrap(), b"broken");

        let seg = d.path().join("wal/00000000000000000001.wal");
        std::fs::create_dir_all(seg.parent().unwrap()).unwrap();
        std::fs::write(&seg, b"segment").unwrap();
        let linked = q.link_in(&seg, "mid-segment damage").unwrap();
        assert!(seg.exists() && linked.exists());
        let tail = q.keep_bytes(&seg, ".tail", b"ment", "cut").unwrap();
        assert_eq!(std::fs::read(&tail).unwrap(), b"ment");
        let missing = q
            .note_missing(&d.path().join("tenants/t/20240101/02.part"), "listed")
            .unwrap();
        assert!(!missing.exists());
        assert!(Path::new(&format!("{}.reason", missing.display())).exists());
        assert_eq!(q.count(), 5);
    }
}
