//! [`EmbeddedBackend`]: [`Backend`] over a [`Storage`]. Label queries read
//! the stream index; scans merge parts and memtables per stream; column
//! scans and plans are in `column_scan.rs` and `exec/`. Every read goes
//! through one [`Snapshot`](runakefli_storage::Snapshot) of the store.

use crate::exec::answer_cache::AnswerCache;
use crate::exec::decoded_cache::DecodedCache;
use crate::limits::SCAN_BATCH_ENTRIES;
use crate::QueryConfig;
use runakefli_model::{
    Backend, BackendError, ColumnBatch, ColumnRequest, EntryBatch, Labels, Matcher, ScanControl,
    ScanRequest, StreamId, StreamInfo, TenantId, Timestamp,
};
use runakefli_storage::deletes::StreamDeletes;
use runakefli_storage::merge_iter::{MergeIter, Source};
use runakefli_storage::{Storage, StorageConfig, StorageError};
use std::collections::BTreeSet;
use std::sync::Arc;

/// `[start, end)` as inclusive bounds, `None` when empty.
fn bounds(start: Timestamp, end: Timestamp) -> Option<(i64, i64)> {
    (start < end).then(|| (start, end - 1))
}

/// The embedded store as the engine's [`Backend`]: the store plus the
/// executor's caches, sized by its [`QueryConfig`] and owned by this value
/// (two backends share nothing).
pub struct EmbeddedBackend {
    /// The store read.
    pub(crate) storage: Arc<Storage>,
    /// Rows rebuilt for the answers of log queries.
    pub(crate) answers: AnswerCache,
    /// Decoded block columns and directories.
    pub(crate) decoded: DecodedCache,
}

/// What the executor's caches hold now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Bytes of rows kept for answers.
    pub answer_bytes: u64,
    /// Bytes of decoded block columns and directories kept.
    pub decoded_bytes: u64,
}

impl EmbeddedBackend {
    /// Reads `storage`, with caches sized by `config`.
    pub fn new(storage: Arc<Storage>, config: &QueryConfig) -> EmbeddedBackend {
        EmbeddedBackend {
            storage,
            answers: AnswerCache::new(config.answer_cache_bytes),
            decoded: DecodedCache::new(config.decoded_cache_bytes),
        }
    }

    /// Opens the store in `config.data_dir` ([`Storage::open`]) and reads it
    /// with the default [`QueryConfig`] (tests and tools).
    pub fn open(config: StorageConfig) -> Result<Arc<EmbeddedBackend>, StorageError> {
        Ok(Arc::new(EmbeddedBackend::new(
            Storage::open(config)?,
            &QueryConfig::default(),
        )))
    }

    /// The store read; writing and operating it (`append`, `flush`,
    /// `stats`, …) go through it.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// What the caches hold now.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            answer_bytes: self.answers.bytes() as u64,
            decoded_bytes: self.decoded.bytes() as u64,
        }
    }

    fn matching(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        lo: i64,
        hi: i64,
    ) -> Vec<(StreamId, Arc<Labels>)> {
        match self.storage.snapshot(tenant, lo, hi) {
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
        let Some(snap) = self.storage.snapshot(&req.tenant, lo, hi) else {
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

impl Backend for EmbeddedBackend {
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
            .storage
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
