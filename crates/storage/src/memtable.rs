//! The memtable: acknowledged entries not yet in parts, per tenant and stream,
//! in push order. Queries read it directly; a flush freezes it (no more inserts)
//! and writes it out as parts.

use crate::config::MEMTABLE_ENTRY_OVERHEAD;
use parking_lot::RwLock;
use runakefli_model::{Entry, Labels, StreamId, TenantId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Buffered entries of one stream.
#[derive(Debug)]
pub struct StreamBuf {
    /// The stream's labels.
    pub labels: Arc<Labels>,
    /// Entries in push order.
    pub entries: Vec<Entry>,
}

/// Streams of one tenant.
pub type TenantMem = HashMap<StreamId, StreamBuf>;

/// A memtable generation.
#[derive(Debug)]
pub struct Memtable {
    tables: RwLock<HashMap<TenantId, TenantMem>>,
    bytes: AtomicUsize,
    rows: AtomicUsize,
    created: RwLock<Option<Instant>>,
}

impl Default for Memtable {
    fn default() -> Self {
        Memtable {
            tables: RwLock::new(HashMap::new()),
            bytes: AtomicUsize::new(0),
            rows: AtomicUsize::new(0),
            created: RwLock::new(None),
        }
    }
}

/// Approximate memory an entry takes in the memtable.
pub fn entry_bytes(e: &Entry) -> usize {
    e.heap_bytes() + MEMTABLE_ENTRY_OVERHEAD
}

impl Memtable {
    /// Adds entries of several streams of `tenant` (one lock acquisition).
    pub fn insert<'a>(
        &self,
        tenant: &TenantId,
        streams: impl Iterator<Item = (StreamId, &'a Arc<Labels>, &'a [Entry])>,
    ) {
        let mut bytes = 0;
        let mut rows = 0;
        {
            let mut t = self.tables.write();
            let tm = match t.get_mut(tenant) {
                Some(tm) => tm,
                None => t.entry(tenant.clone()).or_default(),
            };
            for (sid, labels, entries) in streams {
                let buf = tm.entry(sid).or_insert_with(|| StreamBuf {
                    labels: labels.clone(),
                    entries: Vec::new(),
                });
                buf.entries.reserve(entries.len());
                for e in entries {
                    bytes += entry_bytes(e);
                    buf.entries.push(e.clone());
                }
                rows += entries.len();
            }
        }
        if rows > 0 {
            let mut c = self.created.write();
            if c.is_none() {
                *c = Some(Instant::now());
            }
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    /// Approximate bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Entries held.
    pub fn rows(&self) -> usize {
        self.rows.load(Ordering::Relaxed)
    }

    /// When the first entry arrived.
    pub fn created(&self) -> Option<Instant> {
        *self.created.read()
    }

    /// Clones the entries of `sid` with `lo <= ts <= hi`, in push order.
    pub fn entries_in(&self, tenant: &TenantId, sid: StreamId, lo: i64, hi: i64) -> Vec<Entry> {
        let t = self.tables.read();
        t.get(tenant)
            .and_then(|tm| tm.get(&sid))
            .map(|b| {
                b.entries
                    .iter()
                    .filter(|e| e.ts >= lo && e.ts <= hi)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Read access to every tenant's streams (used by flush on a frozen memtable).
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, HashMap<TenantId, TenantMem>> {
        self.tables.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_and_read_back_in_push_order() {
        let m = Memtable::default();
        let t = TenantId::new("t");
        let labels = Arc::new(Labels::new(vec![("a".into(), "b".into())]));
        let es: Vec<Entry> = [5, 1, 3]
            .iter()
            .map(|&ts| Entry {
                ts,
                line: format!("l{ts}"),
                metadata: vec![],
            })
            .collect();
        m.insert(&t, std::iter::once((1, &labels, &es[..])));
        assert_eq!(m.rows(), 3);
        assert!(m.bytes() > 6);
        let got: Vec<i64> = m.entries_in(&t, 1, 2, 10).iter().map(|e| e.ts).collect();
        assert_eq!(got, vec![5, 3]);
        assert!(m.entries_in(&TenantId::new("other"), 1, 0, 10).is_empty());
        assert!(m.created().is_some());
    }
}
