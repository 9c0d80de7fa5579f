//! The store's side of delete requests: adding, listing and cancelling them,
//! and purging due ones from disk (see the module documentation of
//! [`crate::deletes`]).

use super::{file, DeleteRequest, DeleteStatus, PurgeFilter};
use crate::partition::{Partition, Tenant};
use crate::retention::Retention;
use crate::upkeep::Upkeep;
use crate::{merge, StorageError};
use runakefli_model::{Labels, StreamId, TenantId, NANOS_PER_DAY};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use runakefli_model::deletes::CancelRefusal;

/// The delete API and purging, for any [`Upkeep`] (the store).
pub(crate) trait DeleteApi: Upkeep + Retention {
    /// Accepts a delete request for `tenant`: persists it, then hides its
    /// rows from every scan. The id (when empty) and creation time are set
    /// here; the request as stored is returned.
    fn add_delete(
        &self,
        tenant: &TenantId,
        mut req: DeleteRequest,
    ) -> Result<DeleteRequest, StorageError> {
        TenantId::validate(tenant.as_str()).map_err(StorageError::InvalidTenant)?;
        let t = self.tenant_or_create(tenant)?;
        req.created = crate::retention::now_ns();
        req.status = DeleteStatus::Received;
        let mut list = t.deletes.write();
        if req.id.is_empty() {
            req.id = req.fresh_id(tenant, |id| list.iter().any(|r| r.id == id));
        }
        let mut next: Vec<DeleteRequest> = list.iter().map(|r| (**r).clone()).collect();
        next.push(req.clone());
        file::store(&t.dir, &next)?;
        list.push(Arc::new(req.clone()));
        Ok(req)
    }

    /// The delete requests of `tenant`, oldest first.
    fn delete_requests(&self, tenant: &TenantId) -> Vec<DeleteRequest> {
        self.tenant(tenant)
            .map(|t| t.deletes.read().iter().map(|r| (**r).clone()).collect())
            .unwrap_or_default()
    }

    /// Cancels request `id` of `tenant` while its cancellation period runs
    /// (or, with `force`, any request not yet processed); its rows become
    /// visible again, except those a merge already dropped.
    fn cancel_delete(
        &self,
        tenant: &TenantId,
        id: &str,
        force: bool,
    ) -> Result<Result<(), CancelRefusal>, StorageError> {
        let Some(t) = self.tenant(tenant) else {
            return Ok(Err(CancelRefusal::NotFound));
        };
        let now = crate::retention::now_ns();
        let mut list = t.deletes.write();
        let Some(pos) = list.iter().position(|r| r.id == id) else {
            return Ok(Err(CancelRefusal::NotFound));
        };
        let r = &list[pos];
        if r.status == DeleteStatus::Processed
            || (!force && r.is_due(now, self.config().delete_cancel_period))
        {
            return Ok(Err(CancelRefusal::TooLate));
        }
        let next: Vec<DeleteRequest> = list
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != pos)
            .map(|(_, r)| (**r).clone())
            .collect();
        file::store(&t.dir, &next)?;
        list.remove(pos);
        Ok(Ok(()))
    }

    /// The requests of `t` whose rows merges may drop: due or processed.
    fn purgeable_deletes(&self, t: &Tenant, now: i64) -> Vec<Arc<DeleteRequest>> {
        t.deletes
            .read()
            .iter()
            .filter(|r| {
                r.status == DeleteStatus::Processed
                    || r.is_due(now, self.config().delete_cancel_period)
            })
            .cloned()
            .collect()
    }

    /// Purges due requests not yet processed: flushes the memtable, rewrites
    /// every partition with rows they delete, then marks them processed.
    /// Returns the rows removed.
    fn purge_due_deletes(&self, now: i64) -> Result<u64, StorageError> {
        let tenants: Vec<Arc<Tenant>> = self.tenants();
        let mut removed = 0;
        let mut flushed = false;
        let mut rewrote = false;
        for t in tenants {
            let due: Vec<Arc<DeleteRequest>> = t
                .deletes
                .read()
                .iter()
                .filter(|r| {
                    r.status == DeleteStatus::Received
                        && r.is_due(now, self.config().delete_cancel_period)
                })
                .cloned()
                .collect();
            if due.is_empty() {
                continue;
            }
            if !flushed {
                // Rows still in memory reach parts first, so the rewrite sees them.
                self.flush()?;
                flushed = true;
            }
            let purgeable = self.purgeable_deletes(&t, now);
            let partitions: Vec<Arc<Partition>> = t.partitions.read().values().cloned().collect();
            let mut complete = true;
            for p in partitions {
                let (lo, hi) = (
                    p.day.saturating_mul(NANOS_PER_DAY),
                    p.day.saturating_add(1).saturating_mul(NANOS_PER_DAY) - 1,
                );
                let parts = p.state.read().parts.clone();
                let touched: Vec<StreamId> = {
                    let idx = t.index.read();
                    let mut sids: Vec<StreamId> = parts
                        .iter()
                        .flat_map(|x| x.stream_ids().iter().copied())
                        .collect();
                    sids.sort_unstable();
                    sids.dedup();
                    sids.into_iter()
                        .filter(|sid| {
                            idx.get(*sid)
                                .is_some_and(|e| due.iter().any(|r| r.touches(&e.labels, lo, hi)))
                        })
                        .collect()
                };
                if touched.is_empty() {
                    continue;
                }
                if p.merging.swap(true, Ordering::SeqCst) {
                    complete = false; // a merge runs: it drops the rows too; retry
                    continue;
                }
                let labels = |sid: StreamId| -> Option<Arc<Labels>> {
                    t.index.read().get(sid).map(|e| e.labels.clone())
                };
                let filter = PurgeFilter {
                    requests: &purgeable,
                    labels: &labels,
                    range: (lo, hi),
                    cache: Default::default(),
                };
                let res = merge::rewrite_parts(
                    &p,
                    &parts,
                    self.config().merge_zstd_level,
                    self.shutdown(),
                    &filter,
                );
                drop(parts);
                p.merging.store(false, Ordering::SeqCst);
                match res? {
                    Some(out) => {
                        rewrote = true;
                        removed += out.removed;
                        self.refresh_ranges(&t, p.day, touched.into_iter())?;
                    }
                    None => complete = false,
                }
            }
            if complete {
                self.mark_processed(&t, &due)?;
            }
        }
        if removed > 0 {
            crate::stats::Counters::add(&self.counters().deleted_rows, removed);
            tracing::info!(removed_rows = removed, "delete requests purged from disk");
        }
        if rewrote {
            self.remove_empty_partitions()?;
        }
        Ok(removed)
    }

    fn mark_processed(&self, t: &Tenant, done: &[Arc<DeleteRequest>]) -> Result<(), StorageError> {
        let mut list = t.deletes.write();
        let next: Vec<DeleteRequest> = list
            .iter()
            .map(|r| {
                let mut r = (**r).clone();
                if done.iter().any(|d| d.id == r.id) {
                    r.status = DeleteStatus::Processed;
                }
                r
            })
            .collect();
        file::store(&t.dir, &next)?;
        *list = next.into_iter().map(Arc::new).collect();
        Ok(())
    }
}

impl<T: Upkeep + ?Sized> DeleteApi for T {}
