//! Streams held in memory: the reference [`Backend`] the equivalence tests
//! compare every store with, and the live tail's evaluator of entries pushed
//! behind what it has sent (the server runs a tail's query over them alone).

use runakefli_model::{
    Backend, BackendError, Direction, Entry, EntryBatch, Matcher, PushRequest, ScanControl,
    ScanRequest, StreamInfo, TenantId, Timestamp,
};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

#[derive(Debug)]
struct MemStream {
    info: StreamInfo,
    /// Sorted by timestamp; equal timestamps in push order.
    entries: Vec<Entry>,
}

/// Streams held in memory, per tenant. Exact duplicates (same timestamp and
/// line in one stream) are stored once, as Loki's ingester does.
#[derive(Debug, Default)]
pub struct MemBackend {
    tenants: RwLock<HashMap<TenantId, Vec<MemStream>>>,
}

/// Entries per batch handed to scan callbacks.
const BATCH: usize = 256;

impl MemBackend {
    /// An empty backend.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores a push.
    pub fn push(&self, tenant: &TenantId, req: &PushRequest) {
        let mut g = self.tenants.write().unwrap_or_else(|e| e.into_inner());
        let streams = g.entry(tenant.clone()).or_default();
        for ps in &req.streams {
            let id = ps.labels.stream_id();
            let idx = match streams.iter().position(|s| s.info.id == id) {
                Some(i) => i,
                None => {
                    streams.push(MemStream {
                        info: StreamInfo {
                            id,
                            labels: Arc::new(ps.labels.clone()),
                        },
                        entries: Vec::new(),
                    });
                    streams.len() - 1
                }
            };
            let s = &mut streams[idx];
            for e in &ps.entries {
                let pos = s.entries.partition_point(|x| x.ts <= e.ts);
                let dup = s.entries[..pos]
                    .iter()
                    .rev()
                    .take_while(|x| x.ts == e.ts)
                    .any(|x| x.line == e.line);
                if !dup {
                    s.entries.insert(pos, e.clone());
                }
            }
        }
    }

    fn with_streams<T>(&self, tenant: &TenantId, f: impl FnOnce(&[MemStream]) -> T) -> T {
        let g = self.tenants.read().unwrap_or_else(|e| e.into_inner());
        f(g.get(tenant).map(Vec::as_slice).unwrap_or(&[]))
    }
}

fn has_data(s: &MemStream, start: Timestamp, end: Timestamp) -> bool {
    let i = s.entries.partition_point(|e| e.ts < start);
    i < s.entries.len() && s.entries[i].ts < end
}

fn selected(s: &MemStream, matchers: &[Matcher]) -> bool {
    matchers.iter().all(|m| m.matches_labels(&s.info.labels))
}

impl Backend for MemBackend {
    fn streams(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError> {
        Ok(self.with_streams(tenant, |ss| {
            ss.iter()
                .filter(|s| selected(s, matchers) && has_data(s, start, end))
                .map(|s| s.info.clone())
                .collect()
        }))
    }

    fn label_names(
        &self,
        tenant: &TenantId,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        Ok(self.with_streams(tenant, |ss| {
            let mut names: Vec<String> = ss
                .iter()
                .filter(|s| has_data(s, start, end))
                .flat_map(|s| s.info.labels.pairs().iter().map(|(k, _)| k.clone()))
                .collect();
            names.sort();
            names.dedup();
            names
        }))
    }

    fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        Ok(self.with_streams(tenant, |ss| {
            let mut values: Vec<String> = ss
                .iter()
                .filter(|s| selected(s, matchers) && has_data(s, start, end))
                .filter_map(|s| s.info.labels.get(name).map(str::to_string))
                .collect();
            values.sort();
            values.dedup();
            values
        }))
    }

    fn scan(
        &self,
        request: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.with_streams(&request.tenant, |ss| {
            for s in ss
                .iter()
                .filter(|s| selected(s, &request.matchers) && request.covers(s.info.id))
            {
                let lo = s.entries.partition_point(|e| e.ts < request.start);
                let hi = s.entries.partition_point(|e| e.ts < request.end);
                if lo >= hi {
                    continue;
                }
                let slice = &s.entries[lo..hi];
                let chunks: Vec<Vec<Entry>> = match request.direction {
                    Direction::Forward => slice.chunks(BATCH).map(<[Entry]>::to_vec).collect(),
                    Direction::Backward => {
                        let rev: Vec<Entry> = slice.iter().rev().cloned().collect();
                        rev.chunks(BATCH).map(<[Entry]>::to_vec).collect()
                    }
                };
                for c in chunks {
                    match visit(&s.info, EntryBatch { entries: c }) {
                        ScanControl::Continue => {}
                        ScanControl::NextStream => break,
                        ScanControl::Stop => return Ok(()),
                    }
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::MatchOp;

    #[test]
    fn push_dedup_and_scan_order() {
        let b = MemBackend::new();
        let t = TenantId::default_tenant();
        let body = br#"{"streams":[{"stream":{"app":"a"},"values":[["3","c"],["1","a"],["3","d"],["1","a"],["2","b",{"trace_id":"x"}]]}]}"#;
        b.push(&t, &MemBackend::parse_push_json(body).unwrap());
        let m = vec![Matcher::new("app", MatchOp::Eq, "a").unwrap()];
        let mut seen = Vec::new();
        let req = ScanRequest {
            tenant: t.clone(),
            matchers: m.clone(),
            start: 0,
            end: 10,
            direction: Direction::Backward,
            required_substrings: vec![],
            shard: None,
            cutoff: None,
        };
        b.scan(&req, &mut |_, batch| {
            seen.extend(batch.entries.into_iter().map(|e| e.line));
            ScanControl::Continue
        })
        .unwrap();
        assert_eq!(seen, ["d", "c", "b", "a"]);
        assert_eq!(b.streams(&t, &m, 4, 10).unwrap().len(), 0);
        assert_eq!(b.label_names(&t, 0, 10).unwrap(), ["app"]);
    }
}
