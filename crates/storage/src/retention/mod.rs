//! Retention: the background pass that removes expired data ([`policy`]) and
//! keeps the store under its disk budget.
//!
//! Granularity is a stream's rows of one day partition: they go once the
//! whole day is older than the stream's retention (so data lives at most one
//! day past its period, as Loki's compactor deletes whole chunks). A
//! partition where every stream has expired is dropped whole — its parts are
//! unlisted in one manifest commit, their files deleted as soon as no query
//! reads them, then the empty directory goes. A partition where only some
//! streams expired is rewritten without them by the merge machinery
//! ([`crate::merge::rewrite_parts`]), one partition at a time, never while a
//! merge runs on it.
//!
//! The disk budget (`max_disk_bytes`, bytes of parts, WAL and indexes) drops
//! whole partitions, the oldest day first over all tenants, but never one of
//! the newest day the store holds: a budget too small for one day of data is
//! logged instead of emptying the store.
//!
//! The index follows: the day ranges of affected streams are recomputed
//! from the remaining parts and the memtables, streams left with no data are
//! forgotten and the tenant's `streams.idx` rewritten without them. WAL
//! replay skips expired rows, so a restart does not bring them back.

pub use runakefli_model::retention as policy;

use crate::merge::{self, RowFilter, StreamKeep};
use crate::part::Part;
use crate::partition::{Partition, Tenant};
use crate::stats::Counters;
use crate::upkeep::Upkeep;
use crate::{names, StorageError};
use runakefli_model::{Entry, StreamId, NANOS_PER_DAY};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What one retention pass removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Partitions dropped whole.
    pub dropped_partitions: u64,
    /// Partitions rewritten without some streams.
    pub rewritten_partitions: u64,
    /// Stored rows removed.
    pub removed_rows: u64,
    /// Bytes of part files given up (inputs minus outputs).
    pub freed_bytes: u64,
}

/// Leaves out the streams in the set.
struct WithoutStreams(HashSet<StreamId>);

impl RowFilter for WithoutStreams {
    fn stream(&self, sid: StreamId) -> StreamKeep {
        if self.0.contains(&sid) {
            StreamKeep::Nothing
        } else {
            StreamKeep::All
        }
    }
    fn keep(&self, _sid: StreamId, _row: &Entry) -> bool {
        true
    }
}

/// Now, in nanoseconds since the epoch.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

pub use runakefli_model::retention::expired;

/// The last nanosecond of `day`.
fn day_end(day: i64) -> i64 {
    day.saturating_add(1).saturating_mul(NANOS_PER_DAY) - 1
}

fn stream_ids(parts: &[Arc<Part>]) -> HashSet<StreamId> {
    parts
        .iter()
        .flat_map(|p| p.stream_ids().iter().copied())
        .collect()
}

/// Retention passes, for any [`Upkeep`] (the store).
pub(crate) trait Retention: Upkeep {
    /// Runs one retention pass at time `now` (ns since the epoch).
    fn retention_pass(&self, now: i64) -> Result<RetentionReport, StorageError> {
        let mut rep = RetentionReport::default();
        let tenants: Vec<Arc<Tenant>> = self.tenants();
        for t in &tenants {
            self.age_retention(t, now, &mut rep)?;
        }
        if let Some(budget) = self.config().retention.max_disk_bytes {
            self.size_retention(budget, &mut rep)?;
        }
        self.remove_empty_partitions()?;
        let c = self.counters();
        Counters::add(&c.retention_runs, 1);
        Counters::add(&c.retention_dropped_partitions, rep.dropped_partitions);
        Counters::add(&c.retention_rewritten_partitions, rep.rewritten_partitions);
        Counters::add(&c.retention_removed_rows, rep.removed_rows);
        Counters::add(&c.retention_freed_bytes, rep.freed_bytes);
        if rep != RetentionReport::default() {
            tracing::info!(
                dropped_partitions = rep.dropped_partitions,
                rewritten_partitions = rep.rewritten_partitions,
                removed_rows = rep.removed_rows,
                freed_bytes = rep.freed_bytes,
                "retention removed expired data"
            );
        }
        Ok(rep)
    }

    fn age_retention(
        &self,
        t: &Tenant,
        now: i64,
        rep: &mut RetentionReport,
    ) -> Result<(), StorageError> {
        let policy = self.config().retention.policy_for(t.id.as_str());
        if !policy.is_active() {
            return Ok(());
        }
        let partitions: Vec<Arc<Partition>> = t.partitions.read().values().cloned().collect();
        let mut cutoffs: HashMap<StreamId, Option<i64>> = HashMap::new();
        for p in partitions {
            if self.shutdown().load(Ordering::Relaxed) {
                break;
            }
            let parts = p.state.read().parts.clone();
            let sids = stream_ids(&parts);
            if sids.is_empty() {
                continue;
            }
            let end = day_end(p.day);
            let expired: HashSet<StreamId> = {
                let idx = t.index.read();
                sids.iter()
                    .copied()
                    .filter(|sid| {
                        let cutoff = *cutoffs.entry(*sid).or_insert_with(|| {
                            idx.get(*sid)
                                .and_then(|e| policy.cutoff_for(&e.labels, now))
                        });
                        cutoff.is_some_and(|c| c > end)
                    })
                    .collect()
            };
            if expired.is_empty() {
                continue;
            }
            if expired.len() == sids.len() {
                if self.drop_partition_parts(t, &p, parts, rep)? {
                    tracing::info!(tenant = %t.id.as_str(), day = %names::day_name(p.day), "retention dropped an expired partition");
                }
                continue;
            }
            if p.merging.swap(true, Ordering::SeqCst) {
                continue; // a merge runs on it: next pass
            }
            let before: u64 = parts.iter().map(|x| x.info().bytes).sum();
            let res = merge::rewrite_parts(
                &p,
                &parts,
                self.config().merge_zstd_level,
                self.shutdown(),
                &WithoutStreams(expired.clone()),
            );
            drop(parts);
            p.merging.store(false, Ordering::SeqCst);
            if let Some(out) = res? {
                let after: u64 = p.state.read().parts.iter().map(|x| x.info().bytes).sum();
                rep.rewritten_partitions += 1;
                rep.removed_rows += out.removed;
                rep.freed_bytes += before.saturating_sub(after);
                self.refresh_ranges(t, p.day, expired.into_iter())?;
            }
        }
        Ok(())
    }

    /// Unlists every part of `p` (their files go once no query reads them);
    /// false when a merge holds the partition (retried next pass).
    fn drop_partition_parts(
        &self,
        t: &Tenant,
        p: &Partition,
        parts: Vec<Arc<Part>>,
        rep: &mut RetentionReport,
    ) -> Result<bool, StorageError> {
        if p.merging.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        let ids: Vec<u64> = parts.iter().map(|x| x.info().id).collect();
        let sids = stream_ids(&parts);
        let res = p.commit(&ids, None, None);
        p.merging.store(false, Ordering::SeqCst);
        res?;
        rep.dropped_partitions += 1;
        rep.removed_rows += parts.iter().map(|x| x.info().rows).sum::<u64>();
        rep.freed_bytes += parts.iter().map(|x| x.info().bytes).sum::<u64>();
        drop(parts);
        self.refresh_ranges(t, p.day, sids.into_iter())?;
        Ok(true)
    }

    /// Drops the oldest partitions (over all tenants) while the store is over
    /// `budget` bytes, never one of the newest day.
    fn size_retention(&self, budget: u64, rep: &mut RetentionReport) -> Result<(), StorageError> {
        loop {
            let used = self.disk_bytes();
            if used <= budget {
                return Ok(());
            }
            let tenants: Vec<Arc<Tenant>> = self.tenants();
            let mut candidates: Vec<(i64, String, Arc<Tenant>, Arc<Partition>)> = Vec::new();
            for t in &tenants {
                for p in t.partitions.read().values() {
                    if !p.state.read().parts.is_empty() {
                        candidates.push((p.day, t.id.as_str().to_string(), t.clone(), p.clone()));
                    }
                }
            }
            let Some(newest) = candidates.iter().map(|c| c.0).max() else {
                return Ok(());
            };
            candidates.retain(|c| c.0 < newest);
            candidates.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            let Some((day, tenant, t, p)) = candidates.into_iter().next() else {
                tracing::warn!(
                    used,
                    budget,
                    "disk budget exceeded by the newest day alone; nothing older left to drop"
                );
                return Ok(());
            };
            let parts = p.state.read().parts.clone();
            if !self.drop_partition_parts(&t, &p, parts, rep)? {
                return Ok(()); // a merge holds it: next pass
            }
            tracing::info!(tenant, day = %names::day_name(day), used, budget, "disk budget: dropped the oldest partition");
        }
    }

    /// Recomputes the index's day range of `sids` in `day` from the
    /// partition's remaining parts and the memtables, then forgets streams
    /// left with no data (rewriting `streams.idx` when they were in it).
    fn refresh_ranges(
        &self,
        t: &Tenant,
        day: i64,
        sids: impl Iterator<Item = StreamId>,
    ) -> Result<(), StorageError> {
        let parts: Vec<Arc<Part>> = t
            .partitions
            .read()
            .get(&day)
            .map(|p| p.state.read().parts.clone())
            .unwrap_or_default();
        let memtables = self.memtables();
        let (lo, hi) = (day.saturating_mul(NANOS_PER_DAY), day_end(day));
        let forgotten = {
            let mut idx = t.index.write();
            for sid in sids {
                let mut range: Option<(i64, i64)> = None;
                let mut widen = |a: i64, b: i64| {
                    range = Some(range.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                };
                for p in &parts {
                    for b in p.stream_blocks(sid) {
                        widen(b.meta.min_ts, b.meta.max_ts);
                    }
                }
                for m in &memtables {
                    for e in m.entries_in(&t.id, sid, lo, hi) {
                        widen(e.ts, e.ts);
                    }
                }
                idx.set_range(sid, day, range);
            }
            idx.remove_unused()
        };
        if forgotten > 0 {
            let _l = t.streams_lock.lock();
            let keep = t.index.read().persisted();
            crate::stream_index::rewrite(&t.dir, &keep)?;
        }
        Ok(())
    }

    /// Removes partitions left without parts once their files are gone:
    /// out of the tenant's map, then `MANIFEST` and the directory. Holds the
    /// flush lock so no flush writes into a partition being removed.
    fn remove_empty_partitions(&self) -> Result<(), StorageError> {
        let _f = self.flush_lock().lock();
        let tenants: Vec<Arc<Tenant>> = self.tenants();
        for t in tenants {
            let mut ps = t.partitions.write();
            let empty: Vec<i64> = ps
                .iter()
                .filter(|(_, p)| {
                    p.state.read().parts.is_empty() && !p.merging.load(Ordering::SeqCst)
                })
                .map(|(d, _)| *d)
                .collect();
            let mut removed = false;
            for day in empty {
                let p = &ps[&day];
                // Part files still read by a query are deleted when it ends;
                // the directory goes on a later pass.
                let busy = crate::fsutil::list_dir(&p.dir)?
                    .iter()
                    .any(|(n, _)| n != names::MANIFEST_FILE);
                if busy {
                    continue;
                }
                let dir = p.dir.clone();
                ps.remove(&day);
                crate::fsutil::remove_file(&dir.join(names::MANIFEST_FILE))?;
                std::fs::remove_dir(&dir).map_err(|e| StorageError::io(&dir, e))?;
                removed = true;
            }
            if removed {
                crate::fsutil::fsync_dir(&t.dir)?;
            }
        }
        Ok(())
    }
}

impl<T: Upkeep + ?Sized> Retention for T {}
