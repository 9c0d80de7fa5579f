//! The store: opening (load partitions, replay the WAL), durable appends,
//! flushes from memtable to parts, the background flush and merge threads, and
//! statistics.
//!
//! Consistency rules:
//! - An append holds the *gate* (shared) from its WAL write until its memtable
//!   insert; a flush takes the gate exclusively to rotate the WAL and swap the
//!   memtable, so the frozen memtable holds exactly the records of the older
//!   segments.
//! - Each partition manifest records `flushed_wal`: its records in segments
//!   below it are in its parts. Replay skips those; segments are deleted once a
//!   flush has committed every partition.
//! - Reads go through [`Storage::snapshot`], which takes the memtables
//!   first, then the part lists, so data moving from a memtable into a part
//!   is seen at least once (the rule is written out once, in
//!   `snapshot.rs`).

use crate::config::{
    StorageConfig, BACKGROUND_TICK, BACKPRESSURE_MAX_WAIT, MEMTABLE_BACKPRESSURE_FACTOR,
};
use crate::deletes::api::{CancelRefusal, DeleteApi};
use crate::deletes::DeleteRequest;
use crate::fsutil::{create_dir_durable, list_dir};
use crate::memtable::Memtable;
use crate::merge::{self, Policy};
use crate::part::{BlockFormat, PartWriter};
use crate::partition::{Partition, Tenant};
use crate::quarantine::Quarantine;
use crate::retention::Retention;
use crate::snapshot::Snapshot;
use crate::stats::{Counters, StorageStats, TenantStats};
use crate::upkeep::Upkeep;
use crate::wal::{self, record, Wal};
use crate::{names, StorageError};
use parking_lot::{Condvar, Mutex, RwLock};
use runakefli_model::{Entry, Labels, PushRequest, StreamId, TenantId};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Memtables visible to queries.
pub(crate) struct MemState {
    /// Receives appends.
    pub active: Arc<Memtable>,
    /// Being written to parts, with the WAL segment that follows its records.
    pub frozen: Option<(Arc<Memtable>, u64)>,
}

#[derive(Default)]
pub(crate) struct Signals {
    flush: bool,
    merge: bool,
}

pub(crate) struct Inner {
    pub cfg: StorageConfig,
    pub(crate) wal: Wal,
    pub(crate) gate: RwLock<()>,
    pub mem: RwLock<MemState>,
    pub tenants: RwLock<HashMap<TenantId, Arc<Tenant>>>,
    pub(crate) flush_lock: Mutex<()>,
    pub(crate) signals: Mutex<Signals>,
    pub(crate) wake: Condvar,
    flushed: Condvar,
    pub(crate) shutdown: AtomicBool,
    pub(crate) counters: Counters,
    quarantine: Arc<Quarantine>,
    /// WAL segments whose torn tail the replay cut at open.
    wal_torn_tails: u64,
    _lock: std::fs::File,
}

/// The embedded log store. Cheap to share as `Arc<Storage>`; dropping the last
/// handle stops the background threads (without flushing: the WAL has the data).
pub struct Storage {
    pub(crate) inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Storage {
    /// Opens (or creates) the store in `cfg.data_dir`: removes crash leftovers,
    /// loads every partition and replays the WAL into the memtable.
    pub fn open(cfg: StorageConfig) -> Result<Arc<Storage>, StorageError> {
        let data = cfg.data_dir.clone();
        crate::fsutil::raise_open_files_limit();
        create_dir_durable(&data.join(names::TENANTS_DIR))?;
        let lock = lock_dir(&data)?;
        let quarantine = Arc::new(Quarantine::new(&data));
        let mut tenants = HashMap::new();
        for (name, path) in list_dir(&data.join(names::TENANTS_DIR))? {
            if TenantId::validate(&name).is_err() || !path.is_dir() {
                tracing::warn!(path = %path.display(), "ignoring unexpected entry in tenants directory");
                continue;
            }
            let id = TenantId::new(name);
            tenants.insert(id.clone(), Arc::new(Tenant::open(id, path, &quarantine)?));
        }
        let active = Memtable::default();
        let replayed = wal::replay(&data, &quarantine, |seq, tenant, req| {
            if TenantId::validate(tenant.as_str()).is_err() {
                return Ok(());
            }
            let t = match tenants.get(&tenant) {
                Some(t) => t.clone(),
                None => {
                    let t = Arc::new(Tenant::create(
                        tenant.clone(),
                        names::tenant_dir(&data, tenant.as_str()),
                        &quarantine,
                    )?);
                    tenants.insert(tenant.clone(), t.clone());
                    t
                }
            };
            let mut kept: Vec<(StreamId, Arc<Labels>, Vec<Entry>)> = Vec::new();
            let policy = cfg.retention.policy_for(tenant.as_str());
            let now = crate::retention::now_ns();
            for s in req.streams {
                // Rows retention already removed do not come back.
                let cutoff = policy.cutoff_for(&s.labels, now);
                let entries: Vec<Entry> = s
                    .entries
                    .into_iter()
                    .filter(|e| seq >= t.flushed_wal(names::day_of(e.ts)))
                    .filter(|e| !crate::retention::expired(cutoff, e.ts))
                    .collect();
                if entries.is_empty() {
                    continue;
                }
                let mut idx = t.index.write();
                match idx.resolve(tenant.as_str(), &s.labels) {
                    Ok((sid, labels)) => {
                        note_ranges(&mut idx, sid, &entries);
                        kept.push((sid, labels, entries));
                    }
                    Err(e) => tracing::warn!(error = %e, "dropping replayed stream"),
                }
            }
            active.insert(&tenant, kept.iter().map(|(s, l, e)| (*s, l, &e[..])));
            Ok(())
        })?;
        // Never number a segment below one already used, nor below any
        // partition's flushed mark, even when `wal/` was emptied.
        let high_water = wal::high_water::load(&data, &quarantine)?;
        let flushed = tenants
            .values()
            .flat_map(|t| {
                t.partitions
                    .read()
                    .values()
                    .map(|p| p.state.read().manifest.flushed_wal)
                    .collect::<Vec<_>>()
            })
            .max()
            .unwrap_or(0);
        let next_seq = replayed
            .segments
            .last()
            .map_or(1, |s| s + 1)
            .max(high_water + 1)
            .max(flushed);
        let wal = Wal::open(&data, next_seq, cfg.wal_fsync, cfg.wal_segment_max_bytes)?;
        if active.rows() == 0 {
            wal.remove_before(next_seq)?;
        }
        let (mut parts, mut part_rows) = (0u64, 0u64);
        for t in tenants.values() {
            for p in t.partitions.read().values() {
                for part in &p.state.read().parts {
                    parts += 1;
                    part_rows += part.info().rows;
                }
            }
        }
        let wal_note = if replayed.records == 0 {
            " (nothing was left only in the WAL: a clean shutdown)"
        } else {
            ""
        };
        tracing::info!(
            wal_records = replayed.records,
            wal_lines = active.rows(),
            parts,
            part_lines = part_rows,
            tenants = tenants.len(),
            quarantined = quarantine.count(),
            wal_torn_tails = replayed.truncated,
            "storage opened: WAL replayed: {} records, {} lines{wal_note}; {part_rows} lines in {parts} parts of {} tenants; {} files quarantined; {} torn WAL tails cut",
            replayed.records,
            active.rows(),
            tenants.len(),
            quarantine.count(),
            replayed.truncated,
        );
        let inner = Arc::new(Inner {
            cfg,
            wal,
            gate: RwLock::new(()),
            mem: RwLock::new(MemState {
                active: Arc::new(active),
                frozen: None,
            }),
            tenants: RwLock::new(tenants),
            flush_lock: Mutex::new(()),
            signals: Mutex::new(Signals::default()),
            wake: Condvar::new(),
            flushed: Condvar::new(),
            shutdown: AtomicBool::new(false),
            counters: Counters::default(),
            quarantine,
            wal_torn_tails: replayed.truncated,
            _lock: lock,
        });
        let mut threads = Vec::new();
        if inner.cfg.background {
            let i = inner.clone();
            threads.push(spawn("runakefli-flush", move || i.flush_loop())?);
            let i = inner.clone();
            threads.push(spawn("runakefli-merge", move || i.merge_loop())?);
            let i = inner.clone();
            threads.push(spawn("runakefli-maintenance", move || {
                i.maintenance_loop()
            })?);
        }
        Ok(Arc::new(Storage {
            inner,
            threads: Mutex::new(threads),
        }))
    }

    /// Appends a push request for `tenant`. Returns once the data is in the WAL
    /// (fsynced unless disabled) and visible to queries.
    pub fn append(&self, tenant: &TenantId, req: &PushRequest) -> Result<(), StorageError> {
        self.inner.append(tenant, req)
    }

    /// Writes every memtable entry to parts now and trims the WAL. An explicit
    /// flush also tells the merge thread that ingestion paused: every partition
    /// becomes eligible for its idle merge right away instead of after
    /// `merge_idle_after`.
    pub fn flush(&self) -> Result<(), StorageError> {
        self.inner.flush()?;
        let idle_since = std::time::Instant::now().checked_sub(self.inner.cfg.merge_idle_after);
        if let Some(t) = idle_since {
            for p in self.inner.partitions() {
                p.state.write().last_flush = t;
            }
        }
        self.inner.signal(false, true);
        Ok(())
    }

    /// Runs merges the policy asks for until none is left (`idle` treats every
    /// partition as idle). Used by tests and tools; the merge thread does the
    /// same in the background.
    pub fn merge_now(&self, idle: bool) -> Result<u64, StorageError> {
        let mut n = 0;
        while self.inner.merge_once(idle)? {
            n += 1;
        }
        Ok(n)
    }

    /// Runs one retention pass now (`now`: ns since the epoch), as the
    /// retention thread does every `retention.interval`.
    pub fn apply_retention(
        &self,
        now: i64,
    ) -> Result<crate::retention::RetentionReport, StorageError> {
        self.inner.retention_pass(now)
    }

    /// Whether the store can acknowledge writes now: the write-ahead log's
    /// poisoning failure once it has failed, [`StorageError::Closed`] while
    /// shutting down. Servers report it as readiness.
    pub fn health(&self) -> Result<(), StorageError> {
        if self.inner.shutdown.load(Ordering::Relaxed) {
            return Err(StorageError::Closed);
        }
        self.inner.wal.health()
    }

    /// Bytes still free for the store on the file system of its data
    /// directory (what an unprivileged writer may use).
    pub fn free_disk_bytes(&self) -> std::io::Result<u64> {
        crate::fsutil::free_bytes(&self.inner.cfg.data_dir)
    }

    /// Current statistics.
    pub fn stats(&self) -> StorageStats {
        self.inner.stats()
    }

    /// Per-tenant figures (parts, bytes on disk), sorted by tenant.
    pub fn tenant_stats(&self) -> Vec<TenantStats> {
        let tenants: Vec<Arc<Tenant>> = self.inner.tenants.read().values().cloned().collect();
        let mut out: Vec<TenantStats> = tenants.iter().map(|t| t.stats()).collect();
        out.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        out
    }

    /// Durations of the write-ahead log's fsyncs since open.
    pub fn wal_fsync_seconds(&self) -> crate::stats::HistogramSnapshot {
        self.inner.wal.fsync_seconds()
    }

    /// The configuration the store runs with.
    pub fn config(&self) -> &StorageConfig {
        &self.inner.cfg
    }

    /// What a read of `tenant` over `lo..=hi` (ns) sees: its memtables,
    /// then the parts of the day partitions in range, its stream index and
    /// its delete requests (see [`Snapshot`] for the read rule). `None` when
    /// the tenant has no data.
    pub fn snapshot(&self, tenant: &TenantId, lo: i64, hi: i64) -> Option<Snapshot> {
        let t = self.inner.tenant(tenant)?;
        // Memtables first, then parts (the read rule, see `Snapshot`).
        let memtables = self.inner.memtables();
        Some(Snapshot::take(t, memtables, lo, hi))
    }

    /// Accepts a delete request for `tenant`: persists it, then hides its
    /// rows from every scan. The id (when empty) and creation time are set
    /// here; the request as stored is returned.
    pub fn add_delete(
        &self,
        tenant: &TenantId,
        req: DeleteRequest,
    ) -> Result<DeleteRequest, StorageError> {
        DeleteApi::add_delete(&*self.inner, tenant, req)
    }

    /// The delete requests of `tenant`, oldest first.
    pub fn delete_requests(&self, tenant: &TenantId) -> Vec<DeleteRequest> {
        DeleteApi::delete_requests(&*self.inner, tenant)
    }

    /// Cancels request `id` of `tenant` while its cancellation period runs
    /// (or, with `force`, any request not yet processed); its rows become
    /// visible again, except those a merge already dropped.
    pub fn cancel_delete(
        &self,
        tenant: &TenantId,
        id: &str,
        force: bool,
    ) -> Result<Result<(), CancelRefusal>, StorageError> {
        DeleteApi::cancel_delete(&*self.inner, tenant, id, force)
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        {
            let _s = self.inner.signals.lock();
            self.inner.wake.notify_all();
            self.inner.flushed.notify_all();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

/// Takes an exclusive advisory lock on `<data>/LOCK`; released by the kernel
/// when the process exits, however it exits.
fn lock_dir(data: &std::path::Path) -> Result<std::fs::File, StorageError> {
    use std::os::unix::io::AsRawFd;
    let path = data.join(names::LOCK_FILE);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    // SAFETY: flock on a file descriptor we own.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(StorageError::Locked(data.display().to_string()));
    }
    Ok(f)
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StorageError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| StorageError::io(name, e))
}

/// Widens the index's time ranges of `sid` to cover `entries`.
fn note_ranges(idx: &mut crate::stream_index::StreamIndex, sid: StreamId, entries: &[Entry]) {
    let mut cur: Option<(i64, i64, i64)> = None;
    for e in entries {
        let day = names::day_of(e.ts);
        match &mut cur {
            Some((d, lo, hi)) if *d == day => {
                *lo = (*lo).min(e.ts);
                *hi = (*hi).max(e.ts);
            }
            _ => {
                if let Some((d, lo, hi)) = cur {
                    idx.note_range(sid, d, lo, hi);
                }
                cur = Some((day, e.ts, e.ts));
            }
        }
    }
    if let Some((d, lo, hi)) = cur {
        idx.note_range(sid, d, lo, hi);
    }
}

impl Upkeep for Inner {
    fn config(&self) -> &StorageConfig {
        &self.cfg
    }

    fn tenants(&self) -> Vec<Arc<Tenant>> {
        self.tenants.read().values().cloned().collect()
    }

    fn tenant(&self, id: &TenantId) -> Option<Arc<Tenant>> {
        Inner::tenant(self, id)
    }

    fn tenant_or_create(&self, id: &TenantId) -> Result<Arc<Tenant>, StorageError> {
        Inner::tenant_or_create(self, id)
    }

    fn shutdown(&self) -> &AtomicBool {
        &self.shutdown
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn memtables(&self) -> Vec<Arc<Memtable>> {
        Inner::memtables(self)
    }

    fn flush_lock(&self) -> &Mutex<()> {
        &self.flush_lock
    }

    fn flush(&self) -> Result<(), StorageError> {
        Inner::flush(self)
    }

    fn disk_bytes(&self) -> u64 {
        self.stats().disk_bytes
    }
}

impl Inner {
    pub(crate) fn tenant(&self, id: &TenantId) -> Option<Arc<Tenant>> {
        self.tenants.read().get(id).cloned()
    }

    /// The memtables queries see, oldest first: the frozen one (while a
    /// flush runs), then the active one.
    pub(crate) fn memtables(&self) -> Vec<Arc<Memtable>> {
        let m = self.mem.read();
        m.frozen
            .iter()
            .map(|(f, _)| f.clone())
            .chain(std::iter::once(m.active.clone()))
            .collect()
    }

    pub(crate) fn tenant_or_create(&self, id: &TenantId) -> Result<Arc<Tenant>, StorageError> {
        if let Some(t) = self.tenant(id) {
            return Ok(t);
        }
        let mut ts = self.tenants.write();
        if let Some(t) = ts.get(id) {
            return Ok(t.clone());
        }
        let t = Arc::new(Tenant::create(
            id.clone(),
            names::tenant_dir(&self.cfg.data_dir, id.as_str()),
            &self.quarantine,
        )?);
        ts.insert(id.clone(), t.clone());
        Ok(t)
    }

    fn signal(&self, flush: bool, merge: bool) {
        let mut s = self.signals.lock();
        s.flush |= flush;
        s.merge |= merge;
        self.wake.notify_all();
    }

    fn append(&self, tenant: &TenantId, req: &PushRequest) -> Result<(), StorageError> {
        TenantId::validate(tenant.as_str()).map_err(StorageError::InvalidTenant)?;
        let rows = req.entry_count();
        if rows == 0 {
            return Ok(());
        }
        // Encoded first: a request too large for one record is refused before
        // it touches the index or the log.
        let frame = record::encode(
            tenant,
            req,
            self.cfg.wal_zstd_level,
            self.cfg.wal_record_max_bytes,
        )?;
        self.backpressure()?;
        let t = self.tenant_or_create(tenant)?;
        let resolved: Vec<(StreamId, Arc<Labels>)> = {
            let mut idx = t.index.write();
            let mut out = Vec::with_capacity(req.streams.len());
            for s in &req.streams {
                let (sid, labels) = idx.resolve(tenant.as_str(), &s.labels)?;
                note_ranges(&mut idx, sid, &s.entries);
                out.push((sid, labels));
            }
            out
        };
        let active = {
            let _g = self.gate.read();
            if self.shutdown.load(Ordering::Relaxed) {
                return Err(StorageError::Closed);
            }
            self.wal.append(&frame)?;
            let active = self.mem.read().active.clone();
            active.insert(
                tenant,
                resolved
                    .iter()
                    .zip(&req.streams)
                    .map(|((sid, l), s)| (*sid, l, &s.entries[..])),
            );
            active
        };
        Counters::add(&self.counters.appended_rows, rows as u64);
        if active.bytes() >= self.cfg.memtable_flush_bytes {
            self.signal(true, false);
        }
        Ok(())
    }

    /// Blocks while the active memtable is far over its threshold (a flush is
    /// behind), so memory stays bounded; fails after [`BACKPRESSURE_MAX_WAIT`].
    fn backpressure(&self) -> Result<(), StorageError> {
        if !self.cfg.background {
            return Ok(());
        }
        let limit = self
            .cfg
            .memtable_flush_bytes
            .saturating_mul(MEMTABLE_BACKPRESSURE_FACTOR);
        let start = std::time::Instant::now();
        loop {
            if self.mem.read().active.bytes() < limit || self.shutdown.load(Ordering::Relaxed) {
                return Ok(());
            }
            if start.elapsed() >= BACKPRESSURE_MAX_WAIT {
                return Err(StorageError::Overloaded(
                    "memtable full and flushes are not keeping up".into(),
                ));
            }
            let mut s = self.signals.lock();
            s.flush = true;
            self.wake.notify_all();
            self.flushed.wait_for(&mut s, Duration::from_millis(100));
        }
    }

    pub(crate) fn flush(&self) -> Result<(), StorageError> {
        let _f = self.flush_lock.lock();
        let pending = self.mem.read().frozen.clone();
        let (frozen, next_seg) = match pending {
            // A previous flush failed half-way: finish it first.
            Some(p) => p,
            None => {
                let _g = self.gate.write();
                let active = self.mem.read().active.clone();
                if active.rows() == 0 {
                    // Nothing unflushed anywhere: older segments are garbage.
                    let cur = self.wal.current_segment();
                    drop(_g);
                    return self.wal.remove_before(cur);
                }
                let seg = self.wal.rotate()?;
                let mut m = self.mem.write();
                m.frozen = Some((active.clone(), seg));
                m.active = Arc::new(Memtable::default());
                (active, seg)
            }
        };
        let cpu0 = crate::stats::thread_cpu();
        let res = self.write_frozen(&frozen, next_seg);
        let cpu = crate::stats::thread_cpu().saturating_sub(cpu0);
        Counters::add(&self.counters.flush_cpu_us, cpu.as_micros() as u64);
        res?;
        self.mem.write().frozen = None;
        {
            let _s = self.signals.lock();
            self.flushed.notify_all();
        }
        self.wal.remove_before(next_seg)?;
        Counters::add(&self.counters.flushes, 1);
        self.signal(false, true);
        Ok(())
    }

    /// Writes a frozen memtable as one part per (tenant, day) and commits them.
    fn write_frozen(&self, frozen: &Memtable, next_seg: u64) -> Result<(), StorageError> {
        let tables = frozen.read();
        let mut tenants: Vec<&TenantId> = tables.keys().collect();
        tenants.sort();
        for tid in tenants {
            let streams = &tables[tid];
            let t = self.tenant_or_create(tid)?;
            t.persist_streams()?;
            let mut sids: Vec<StreamId> = streams.keys().copied().collect();
            sids.sort_unstable();
            // day → streams (ascending) with their rows sorted by (ts, push order).
            let mut by_day: BTreeMap<i64, Vec<(StreamId, Vec<&Entry>)>> = BTreeMap::new();
            for sid in sids {
                let mut rows: Vec<&Entry> = streams[&sid].entries.iter().collect();
                rows.sort_by_key(|e| e.ts);
                let rows = dedup_sorted(rows);
                let mut start = 0;
                while start < rows.len() {
                    let day = names::day_of(rows[start].ts);
                    let mut end = start + 1;
                    while end < rows.len() && names::day_of(rows[end].ts) == day {
                        end += 1;
                    }
                    by_day
                        .entry(day)
                        .or_default()
                        .push((sid, rows[start..end].to_vec()));
                    start = end;
                }
            }
            for (day, list) in by_day {
                if t.flushed_wal(day) >= next_seg {
                    // Committed by an earlier attempt of this flush that failed
                    // later (another partition, a full disk): not written twice.
                    continue;
                }
                let partition = t.partition(day)?;
                let id = partition.alloc_part_id();
                let format = if self.cfg.flush_columnar {
                    BlockFormat::Columnar
                } else {
                    BlockFormat::Raw
                };
                let mut w =
                    PartWriter::create(&partition.dir, id, format, self.cfg.flush_zstd_level)?;
                for (sid, rows) in list {
                    w.write_stream(sid, rows.into_iter().map(Ok))?;
                }
                let info = w.finish(id, 0)?;
                let rows = info.rows;
                partition.commit(&[], Some(info), Some(next_seg))?;
                Counters::add(&self.counters.flushed_rows, rows);
            }
        }
        Ok(())
    }

    fn flush_loop(&self) {
        while !self.shutdown.load(Ordering::SeqCst) {
            {
                let mut s = self.signals.lock();
                if !s.flush {
                    self.wake.wait_for(&mut s, BACKGROUND_TICK);
                }
                s.flush = false;
            }
            if self.shutdown.load(Ordering::SeqCst) {
                break;
            }
            // A log poisoned by a full disk heals here even when no push comes.
            self.wal.try_recover();
            let active = self.mem.read().active.clone();
            let due = active.bytes() >= self.cfg.memtable_flush_bytes
                || active
                    .created()
                    .is_some_and(|c| c.elapsed() >= self.cfg.flush_interval)
                || self.mem.read().frozen.is_some();
            if due {
                if let Err(e) = self.flush() {
                    Counters::add(&self.counters.background_errors, 1);
                    tracing::error!(error = %e, "background flush failed");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }

    fn merge_loop(&self) {
        while !self.shutdown.load(Ordering::SeqCst) {
            match self.merge_once(false) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    Counters::add(&self.counters.background_errors, 1);
                    tracing::error!(error = %e, "background merge failed");
                }
            }
            let mut s = self.signals.lock();
            if !s.merge && !self.shutdown.load(Ordering::SeqCst) {
                self.wake.wait_for(&mut s, BACKGROUND_TICK);
            }
            s.merge = false;
        }
    }

    /// Retention once per `retention.interval` (the first pass a tick after
    /// opening); due delete requests purged every tick.
    fn maintenance_loop(&self) {
        let mut last: Option<std::time::Instant> = None;
        while !self.shutdown.load(Ordering::SeqCst) {
            {
                let mut s = self.signals.lock();
                if !self.shutdown.load(Ordering::SeqCst) {
                    self.wake.wait_for(&mut s, BACKGROUND_TICK);
                }
            }
            if self.shutdown.load(Ordering::SeqCst) {
                break;
            }
            let now = crate::retention::now_ns();
            let due = self.cfg.retention.is_active()
                && last.is_none_or(|l| l.elapsed() >= self.cfg.retention.interval);
            if due {
                last = Some(std::time::Instant::now());
                if let Err(e) = self.retention_pass(now) {
                    Counters::add(&self.counters.background_errors, 1);
                    tracing::error!(error = %e, "retention pass failed");
                }
            }
            if let Err(e) = self.purge_due_deletes(now) {
                Counters::add(&self.counters.background_errors, 1);
                tracing::error!(error = %e, "purging delete requests failed");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    fn policy(&self) -> Policy {
        Policy {
            min_parts: self.cfg.merge_min_parts,
            max_parts: self.cfg.merge_max_parts,
            size_ratio: self.cfg.merge_size_ratio,
        }
    }

    fn partitions(&self) -> Vec<Arc<Partition>> {
        let tenants: Vec<Arc<Tenant>> = self.tenants.read().values().cloned().collect();
        tenants
            .iter()
            .flat_map(|t| t.partitions.read().values().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// Runs one merge if the policy wants one; true when it merged.
    fn merge_once(&self, force_idle: bool) -> Result<bool, StorageError> {
        let tenants: Vec<Arc<Tenant>> = self.tenants.read().values().cloned().collect();
        let now = crate::retention::now_ns();
        for (t, p) in tenants.iter().flat_map(|t| {
            t.partitions
                .read()
                .values()
                .map(|p| (t.clone(), p.clone()))
                .collect::<Vec<_>>()
        }) {
            let inputs = {
                let st = p.state.read();
                let idle = force_idle || st.last_flush.elapsed() >= self.cfg.merge_idle_after;
                let infos: Vec<_> = st.parts.iter().map(|x| x.info().clone()).collect();
                match merge::pick(&infos, self.policy(), idle) {
                    Some(r) => st.parts[r].to_vec(),
                    None => continue,
                }
            };
            if p.merging.swap(true, Ordering::SeqCst) {
                continue;
            }
            Counters::add(&self.counters.merges_running, 1);
            let cpu0 = crate::stats::thread_cpu();
            // Rows of due delete requests are left out of the merged part.
            let purgeable = self.purgeable_deletes(&t, now);
            let labels = |sid: StreamId| -> Option<Arc<Labels>> {
                t.index.read().get(sid).map(|e| e.labels.clone())
            };
            let day_lo = p.day.saturating_mul(runakefli_model::NANOS_PER_DAY);
            let filter = crate::deletes::PurgeFilter {
                requests: &purgeable,
                labels: &labels,
                range: (
                    day_lo,
                    day_lo.saturating_add(runakefli_model::NANOS_PER_DAY - 1),
                ),
                cache: Default::default(),
            };
            let res = merge::rewrite_parts(
                &p,
                &inputs,
                self.cfg.merge_zstd_level,
                &self.shutdown,
                &filter,
            );
            let cpu = crate::stats::thread_cpu().saturating_sub(cpu0);
            Counters::add(&self.counters.merge_cpu_us, cpu.as_micros() as u64);
            // Release the inputs (deleting merged-away files) before reporting done.
            drop(inputs);
            self.counters.merges_running.fetch_sub(1, Ordering::Relaxed);
            p.merging.store(false, Ordering::SeqCst);
            return match res? {
                Some(out) => {
                    Counters::add(&self.counters.merges_done, 1);
                    Counters::add(&self.counters.merged_rows, out.rows);
                    Counters::add(&self.counters.deleted_rows, out.removed);
                    Ok(true)
                }
                None => Ok(false),
            };
        }
        Ok(false)
    }

    pub(crate) fn stats(&self) -> StorageStats {
        let c = &self.counters;
        let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let mut s = StorageStats {
            merges_running: ld(&c.merges_running),
            merges_done: ld(&c.merges_done),
            merged_rows: ld(&c.merged_rows),
            appended_rows: ld(&c.appended_rows),
            flushed_rows: ld(&c.flushed_rows),
            flushes: ld(&c.flushes),
            background_errors: ld(&c.background_errors),
            quarantined_files: self.quarantine.count(),
            damaged_blocks: self.quarantine.damaged_blocks(),
            wal_torn_tails: self.wal_torn_tails,
            flush_cpu_ms: ld(&c.flush_cpu_us) / 1000,
            merge_cpu_ms: ld(&c.merge_cpu_us) / 1000,
            retention_runs: ld(&c.retention_runs),
            retention_dropped_partitions: ld(&c.retention_dropped_partitions),
            retention_rewritten_partitions: ld(&c.retention_rewritten_partitions),
            retention_removed_rows: ld(&c.retention_removed_rows),
            retention_freed_bytes: ld(&c.retention_freed_bytes),
            deleted_rows: ld(&c.deleted_rows),
            wal_bytes_written: self.wal.bytes_written(),
            wal_recoveries: self.wal.recoveries(),
            wal_disk_bytes: wal::disk_bytes(&self.cfg.data_dir),
            ..Default::default()
        };
        {
            let m = self.mem.read();
            s.memtable_rows = m.active.rows() as u64;
            s.memtable_bytes = m.active.bytes() as u64;
            if let Some((f, _)) = &m.frozen {
                s.memtable_rows += f.rows() as u64;
                s.memtable_bytes += f.bytes() as u64;
            }
        }
        let tenants: Vec<Arc<Tenant>> = self.tenants.read().values().cloned().collect();
        let mut index_bytes = 0;
        for t in &tenants {
            s.tenants += 1;
            s.pending_deletes += t
                .deletes
                .read()
                .iter()
                .filter(|r| r.status == crate::deletes::DeleteStatus::Received)
                .count() as u64;
            s.streams += t.index.read().len() as u64;
            index_bytes +=
                std::fs::metadata(t.dir.join(names::STREAMS_FILE)).map_or(0, |m| m.len());
            for p in t.partitions.read().values() {
                s.partitions += 1;
                let st = p.state.read();
                s.parts += st.parts.len() as u64;
                for part in &st.parts {
                    s.part_rows += part.info().rows;
                    s.part_bytes += part.info().bytes;
                }
                let infos: Vec<_> = st.parts.iter().map(|x| x.info().clone()).collect();
                if merge::pick(&infos, self.policy(), true).is_some() {
                    s.merge_backlog += 1;
                }
            }
        }
        s.disk_bytes = s.part_bytes + s.wal_disk_bytes + index_bytes;
        s
    }
}

/// Removes exact duplicates from rows sorted by timestamp (stable), keeping the
/// first in push order.
fn dedup_sorted(rows: Vec<&Entry>) -> Vec<&Entry> {
    type Key<'a> = (&'a str, &'a [(String, String)]);
    let mut out: Vec<&Entry> = Vec::with_capacity(rows.len());
    let mut run_start = 0;
    let mut seen: HashSet<Key<'_>> = HashSet::new();
    let mut use_set = false;
    for e in rows {
        if out.get(run_start).is_some_and(|r| r.ts != e.ts) {
            run_start = out.len();
            seen.clear();
            use_set = false;
        }
        let k: Key<'_> = (e.line.as_str(), e.metadata.as_slice());
        let dup = if use_set {
            seen.contains(&k)
        } else {
            out[run_start..]
                .iter()
                .any(|r| r.line == e.line && r.metadata == e.metadata)
        };
        if dup {
            continue;
        }
        out.push(e);
        if use_set {
            seen.insert(k);
        } else if out.len() - run_start >= 16 {
            use_set = true;
            seen.extend(
                out[run_start..]
                    .iter()
                    .map(|r| (r.line.as_str(), r.metadata.as_slice())),
            );
        }
    }
    out
}
