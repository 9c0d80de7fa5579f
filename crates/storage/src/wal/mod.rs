//! The write-ahead log: segmented files of checksummed, compressed records,
//! written with group commit so concurrent appends share one write and fsync.
//!
//! Appenders encode (and compress) their record in their own thread, then queue
//! it. The first appender that finds no write in progress becomes the leader:
//! it takes every queued record, writes them with one `write` and one
//! `fdatasync`, marks that batch durable and wakes the followers waiting on the
//! condvar. Records queued meanwhile form the next batch.
//!
//! A failed write or segment start *poisons* the log: every append waiting on
//! it, and every later one, fails. A log poisoned by a full disk (`ENOSPC`,
//! `EDQUOT`) heals itself: once no append of the failed batches is still
//! waiting, [`Wal::try_recover`] (called by appends and by the store's flush
//! thread, at most once per [`WAL_RETRY_INTERVAL`]) cuts the segment back to
//! its last durable byte and starts a new segment; when that succeeds the log
//! takes appends again. Other failures stay until the store is reopened.

pub mod high_water;
pub mod record;
mod replay;
mod segment;

pub use replay::{replay, ReplayStats};

use crate::config::WAL_RETRY_INTERVAL;
use crate::fsutil::{fsync_dir, list_dir, remove_file};
use crate::{names, StorageError};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The open log, appending to its newest segment.
pub struct Wal {
    data: PathBuf,
    fsync: bool,
    segment_max: u64,
    state: Mutex<State>,
    cond: Condvar,
    bytes_written: AtomicU64,
    fsync_seconds: crate::stats::Histogram,
    recoveries: AtomicU64,
}

struct State {
    file: Option<File>,
    seq: u64,
    seg_bytes: u64,
    pending: Vec<u8>,
    next_batch: u64,
    durable_batch: u64,
    leader_active: bool,
    failed: Option<Failure>,
    /// Appends that queued a record and have not returned yet. Recovery waits
    /// for zero, so no append of a failed batch can see the healed log and
    /// take its discarded record for durable.
    in_flight: usize,
    /// When recovery was last tried.
    last_retry: Option<Instant>,
}

/// The failure that poisoned the log.
#[derive(Clone, Debug)]
struct Failure {
    reason: String,
    disk_full: bool,
}

impl Failure {
    fn of(e: &StorageError) -> Self {
        Failure {
            reason: e.to_string(),
            disk_full: e.is_disk_full(),
        }
    }

    fn error(&self) -> StorageError {
        StorageError::WalFailed {
            reason: self.reason.clone(),
            disk_full: self.disk_full,
        }
    }
}

impl Wal {
    /// Starts a fresh segment `seq` under `data` (older segments stay until
    /// [`Wal::remove_before`]); a segment is closed once it exceeds `segment_max` bytes.
    /// Every segment start first raises the [`high_water`] mark to its number.
    pub fn open(
        data: &Path,
        seq: u64,
        fsync: bool,
        segment_max: u64,
    ) -> Result<Self, StorageError> {
        high_water::store(data, seq)?;
        let file = segment::create(data, seq, fsync)?;
        Ok(Wal {
            data: data.to_path_buf(),
            fsync,
            segment_max,
            state: Mutex::new(State {
                file: Some(file),
                seq,
                seg_bytes: segment::HEADER_LEN as u64,
                pending: Vec::new(),
                next_batch: 1,
                durable_batch: 0,
                leader_active: false,
                failed: None,
                in_flight: 0,
                last_retry: None,
            }),
            cond: Condvar::new(),
            bytes_written: AtomicU64::new(0),
            fsync_seconds: crate::stats::Histogram::default(),
            recoveries: AtomicU64::new(0),
        })
    }

    /// Total record bytes written since open.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written.load(Ordering::Relaxed)
    }

    /// Durations of the group commits' `fdatasync` calls since open.
    pub fn fsync_seconds(&self) -> crate::stats::HistogramSnapshot {
        self.fsync_seconds.snapshot()
    }

    /// `Ok` while appends can succeed; the poisoning failure otherwise.
    pub fn health(&self) -> Result<(), StorageError> {
        match &self.state.lock().failed {
            Some(f) => Err(f.error()),
            None => Ok(()),
        }
    }

    /// Sequence number of the segment being written.
    pub fn current_segment(&self) -> u64 {
        self.state.lock().seq
    }

    /// Times the log healed after a full disk since open.
    pub fn recoveries(&self) -> u64 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Appends an encoded frame and returns once it is durable (written and,
    /// when enabled, fsynced) together with whatever else was queued.
    pub fn append(&self, frame: &[u8]) -> Result<(), StorageError> {
        let mut st = self.state.lock();
        if st.failed.is_some() {
            self.recover_locked(&mut st);
        }
        if let Some(f) = &st.failed {
            return Err(f.error());
        }
        st.pending.extend_from_slice(frame);
        st.in_flight += 1;
        let mine = st.next_batch;
        let res = self.wait_durable(&mut st, mine);
        st.in_flight -= 1;
        res
    }

    /// Waits until batch `mine` is durable, leading the write when no one else is.
    fn wait_durable(&self, st: &mut MutexGuard<'_, State>, mine: u64) -> Result<(), StorageError> {
        loop {
            if st.durable_batch >= mine {
                return Ok(());
            }
            if let Some(f) = &st.failed {
                return Err(f.error());
            }
            if st.leader_active {
                self.cond.wait(st);
                continue;
            }
            // Lead: write everything queued as one batch.
            st.leader_active = true;
            let buf = std::mem::take(&mut st.pending);
            let batch = st.next_batch;
            st.next_batch += 1;
            let mut file = st
                .file
                .take()
                .expect("segment file present while no leader");
            let seq = st.seq;
            let res = MutexGuard::unlocked(st, || self.write_batch(&mut file, &buf, seq));
            st.file = Some(file);
            match res {
                Ok(()) => {
                    st.seg_bytes += buf.len() as u64;
                    st.durable_batch = batch;
                    self.bytes_written
                        .fetch_add(buf.len() as u64, Ordering::Relaxed);
                    if st.seg_bytes > self.segment_max {
                        if let Err(e) = self.rotate_locked(st) {
                            tracing::error!(error = %e, "write-ahead log failed: cannot start a new segment");
                            st.failed = Some(Failure::of(&e));
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "write-ahead log failed");
                    st.failed = Some(Failure::of(&e));
                }
            }
            st.leader_active = false;
            // Reuse the buffer's allocation for the next batch when it is empty.
            if st.pending.is_empty() {
                let mut b = buf;
                b.clear();
                if b.capacity() <= 8 << 20 {
                    st.pending = b;
                }
            }
            self.cond.notify_all();
        }
    }

    /// Tries to heal a log poisoned by a full disk (see the module doc); true
    /// when the log takes appends (again). Cheap when healthy.
    pub fn try_recover(&self) -> bool {
        let mut st = self.state.lock();
        self.recover_locked(&mut st)
    }

    fn recover_locked(&self, st: &mut State) -> bool {
        let Some(failure) = &st.failed else {
            return true;
        };
        if !failure.disk_full || st.in_flight > 0 || st.leader_active {
            return false;
        }
        if st
            .last_retry
            .is_some_and(|t| t.elapsed() < WAL_RETRY_INTERVAL)
        {
            return false;
        }
        st.last_retry = Some(Instant::now());
        match self.restart_locked(st) {
            Ok(seq) => {
                // Records queued behind the failure were refused to their callers.
                st.pending.clear();
                st.failed = None;
                self.recoveries.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    segment = seq,
                    "write-ahead log recovered after a full disk: appends accepted again"
                );
                self.cond.notify_all();
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "write-ahead log still cannot write");
                st.failed = Some(Failure {
                    reason: e.to_string(),
                    disk_full: e.is_disk_full(),
                });
                false
            }
        }
    }

    /// Poisons the log as a failed write would (tests of recovery).
    #[cfg(test)]
    pub(crate) fn poison_for_test(&self, disk_full: bool) {
        self.state.lock().failed = Some(Failure {
            reason: "test".into(),
            disk_full,
        });
    }

    /// Cuts the current segment back to its durable length (dropping whatever a
    /// failed write left after it, which no one was told is durable) and starts
    /// the next segment.
    fn restart_locked(&self, st: &mut State) -> Result<u64, StorageError> {
        let path = names::wal_segment(&self.data, st.seq);
        if let Some(file) = &st.file {
            let len = file
                .metadata()
                .map_err(|e| StorageError::io(&path, e))?
                .len();
            if len > st.seg_bytes {
                file.set_len(st.seg_bytes)
                    .map_err(|e| StorageError::io(&path, e))?;
                if self.fsync {
                    file.sync_data().map_err(|e| StorageError::io(&path, e))?;
                }
            }
        }
        self.rotate_locked(st)
    }

    fn write_batch(&self, file: &mut File, buf: &[u8], seq: u64) -> Result<(), StorageError> {
        let path = names::wal_segment(&self.data, seq);
        file.write_all(buf)
            .map_err(|e| StorageError::io(&path, e))?;
        if self.fsync {
            let t0 = std::time::Instant::now();
            file.sync_data().map_err(|e| StorageError::io(&path, e))?;
            self.fsync_seconds.observe(t0.elapsed());
        }
        Ok(())
    }

    fn rotate_locked(&self, st: &mut State) -> Result<u64, StorageError> {
        let next = st.seq + 1;
        high_water::store(&self.data, next)?;
        let file = segment::create(&self.data, next, self.fsync)?;
        st.file = Some(file);
        st.seq = next;
        st.seg_bytes = segment::HEADER_LEN as u64;
        Ok(next)
    }

    /// Closes the current segment and starts the next one; returns the new
    /// segment's number. Every record appended before this call lies in an older
    /// segment. Waits for an in-flight batch to finish first.
    pub fn rotate(&self) -> Result<u64, StorageError> {
        let mut st = self.state.lock();
        // A queued record always has a leader writing it; wait for that batch.
        while (st.leader_active || !st.pending.is_empty()) && st.failed.is_none() {
            self.cond.wait(&mut st);
        }
        if let Some(f) = &st.failed {
            return Err(f.error());
        }
        self.rotate_locked(&mut st)
    }

    /// Deletes every segment numbered below `seq` (their records are all in parts).
    pub fn remove_before(&self, seq: u64) -> Result<(), StorageError> {
        remove_segments_before(&self.data, seq)
    }
}

/// Deletes WAL segments numbered below `seq` under `data`.
pub fn remove_segments_before(data: &Path, seq: u64) -> Result<(), StorageError> {
    let dir = data.join(names::WAL_DIR);
    let mut removed = false;
    for (name, path) in list_dir(&dir)? {
        if names::parse_wal_segment(&name).is_some_and(|s| s < seq) {
            remove_file(&path)?;
            removed = true;
        }
    }
    if removed {
        fsync_dir(&dir)?;
    }
    Ok(())
}

/// Sizes of the WAL segment files on disk.
pub fn disk_bytes(data: &Path) -> u64 {
    let dir = data.join(names::WAL_DIR);
    list_dir(&dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|(_, p)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}
