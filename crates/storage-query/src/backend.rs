//! [`Backend`] for [`Storage`]: label queries from the stream index and scans
//! that merge parts and memtables per stream.

use crate::config::SCAN_BATCH_ENTRIES;
use crate::deletes::StreamDeletes;
use crate::merge_iter::{MergeIter, Source};
use crate::{Storage, StorageError};
use runakefli_model::{
    Backend, BackendError, ColumnBatch, ColumnRequest, EntryBatch, Labels, Matcher, ScanControl,
    ScanRequest, StreamId, StreamInfo, TenantId, Timestamp,
};
use std::collections::BTreeSet;
use std::sync::Arc;

/// `[start, end)` as inclusive bounds, `None` when empty.
fn bounds(start: Timestamp, end: Timestamp) -> Option<(i64, i64)> {
    (start < end).then(|| (start, end - 1))
}

impl Storage {
    fn matching(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        lo: i64,
        hi: i64,
    ) -> Vec<(StreamId, Arc<Labels>)> {
        match self.snapshot(tenant, lo, hi) {
            Some(s) => s.matching(matchers),
            None => Vec::new(),
        }
    }

    fn scan_inner(
        &self,
        req: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), StorageError> {
        let Some((lo, hi)) = bounds(req.start, req.end) else {
            return Ok(());
        };
        let Some(snap) = self.snapshot(&req.tenant, lo, hi) else {
            return Ok(());
        };
        let parts = snap.parts();
        let mut streams = snap.matching(&req.matchers);
        streams.retain(|(sid, _)| req.covers(*sid));
        for (sid, labels) in streams {
            // Rows of delete requests are dropped here, where they leave the store.
            let dels = StreamDeletes::for_stream(snap.deletes(), &labels, lo, hi);
            let (slo, shi) = match &req.cutoff {
                Some(c) => c.narrow(lo, hi),
                None => (lo, hi),
            };
            if slo > shi {
                continue;
            }
            let mut sources = Vec::with_capacity(parts.len() + 2);
            for p in parts {
                if let Some(s) =
                    Source::part(p, sid, slo, shi, req.direction, &req.required_substrings)?
                {
                    sources.push(s);
                }
            }
            for entries in snap.memory_entries(sid, lo, hi) {
                sources.push(Source::memory(entries, req.direction));
            }
            if sources.is_empty() {
                continue;
            }
            let info = StreamInfo { id: sid, labels };
            let mut it = MergeIter::new(sources, lo, hi, req.direction)?
                .with_needles(&req.required_substrings)
                .with_cutoff(req.cutoff.clone());
            let mut batch = Vec::with_capacity(SCAN_BATCH_ENTRIES);
            let mut control = ScanControl::Continue;
            while let Some(e) = it.next_entry()? {
                if !dels.is_empty() && dels.deletes(e.ts, &e.line) {
                    continue;
                }
                batch.push(e);
                if batch.len() == SCAN_BATCH_ENTRIES {
                    control = visit(
                        &info,
                        EntryBatch {
                            entries: std::mem::take(&mut batch),
                        },
                    );
                    if control != ScanControl::Continue {
                        break;
                    }
                }
            }
            if control == ScanControl::Continue && !batch.is_empty() {
                control = visit(&info, EntryBatch { entries: batch });
            }
            if control == ScanControl::Stop {
                break;
            }
        }
        Ok(())
    }
}

impl Backend for Storage {
    fn streams(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError> {
        let Some((lo, hi)) = bounds(start, end) else {
            return Ok(Vec::new());
        };
        Ok(self
            .matching(tenant, matchers, lo, hi)
            .into_iter()
            .map(|(id, labels)| StreamInfo { id, labels })
            .collect())
    }

    fn label_names(
        &self,
        tenant: &TenantId,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        let Some((lo, hi)) = bounds(start, end) else {
            return Ok(Vec::new());
        };
        Ok(self
            .snapshot(tenant, lo, hi)
            .map(|s| s.label_names())
            .unwrap_or_default())
    }

    fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        let Some((lo, hi)) = bounds(start, end) else {
            return Ok(Vec::new());
        };
        let values: BTreeSet<String> = self
            .matching(tenant, matchers, lo, hi)
            .into_iter()
            .filter_map(|(_, l)| l.get(name).map(str::to_owned))
            .collect();
        Ok(values.into_iter().collect())
    }

    fn scan(
        &self,
        request: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.scan_inner(request, visit).map_err(BackendError::from)
    }

    fn execute(
        &self,
        plan: &runakefli_model::plan::QueryPlan,
    ) -> Result<Option<runakefli_model::plan::PlanAnswer>, BackendError> {
        self.execute_plan(plan).map_err(BackendError::from)
    }

    fn scan_columns(
        &self,
        request: &ScanRequest,
        columns: &ColumnRequest,
        visit: &mut dyn FnMut(&StreamInfo, ColumnBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.scan_columns_inner(request, columns, visit)
            .map_err(BackendError::from)
    }
}
