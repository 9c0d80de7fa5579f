//! A bounded cache of the rows rebuilt for the answers of log queries.
//!
//! A log query's answer rows usually sit in as many blocks as it returns
//! lines, and rebuilding one line decompresses most of its block. Grafana
//! refreshing a panel or Explore re-running a query asks for the same rows
//! again: they are kept here (line and metadata) and served without opening
//! their blocks. Only rows that made an answer are kept, never scanned ones,
//! so a scan cannot churn it. Rows are keyed by (part serial, block, row): a
//! part's serial is unique for the process's life, so a merged-away part's
//! rows are never served for a new part; they age out like any other.
//!
//! Each [`EmbeddedBackend`](crate::EmbeddedBackend) owns one [`AnswerCache`].

use runakefli_model::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Bytes charged per kept row on top of its strings (key, entry, queue slot).
const ROW_OVERHEAD: usize = 96;

/// The rows rebuilt for answers, within a budget of bytes.
pub(crate) struct AnswerCache {
    budget: usize,
    rows: Mutex<Option<RowCache>>,
}

/// Where a row is: (part serial, block index, row in the block).
pub type RowKey = (u64, u32, u32);

#[derive(Default)]
struct RowCache {
    rows: HashMap<RowKey, Entry>,
    order: VecDeque<RowKey>,
    bytes: usize,
}

fn charge(e: &Entry) -> usize {
    ROW_OVERHEAD + e.heap_bytes()
}

impl RowCache {
    fn get(&self, part: u64, block: u32, rows: &[usize]) -> Vec<(usize, Entry)> {
        rows.iter()
            .filter_map(|&r| {
                self.rows
                    .get(&(part, block, r as u32))
                    .map(|e| (r, e.clone()))
            })
            .collect()
    }

    fn put(&mut self, budget: usize, part: u64, block: u32, rows: &[(usize, Entry)]) {
        for (r, e) in rows {
            let key = (part, block, *r as u32);
            let len = charge(e);
            if len > budget / 16 || self.rows.contains_key(&key) {
                continue;
            }
            while self.bytes + len > budget {
                let Some(old) = self.order.pop_front() else {
                    break;
                };
                if let Some(gone) = self.rows.remove(&old) {
                    self.bytes -= charge(&gone);
                }
            }
            self.rows.insert(key, e.clone());
            self.order.push_back(key);
            self.bytes += len;
        }
    }
}

impl AnswerCache {
    /// A cache keeping at most `budget` bytes (0 turns it off).
    pub fn new(budget: usize) -> AnswerCache {
        AnswerCache {
            budget,
            rows: Mutex::new(None),
        }
    }

    /// The kept rows of block `block` of part `part` among `rows`: (row, entry).
    pub fn get(&self, part: u64, block: u32, rows: &[usize]) -> Vec<(usize, Entry)> {
        if self.budget == 0 {
            return Vec::new();
        }
        match self.rows.lock() {
            Ok(c) => c
                .as_ref()
                .map_or_else(Vec::new, |c| c.get(part, block, rows)),
            Err(_) => Vec::new(),
        }
    }

    /// Keeps rebuilt rows of block `block` of part `part`, evicting the oldest
    /// rows to stay within the budget.
    pub fn put(&self, part: u64, block: u32, rows: &[(usize, Entry)]) {
        if self.budget == 0 || rows.is_empty() {
            return;
        }
        if let Ok(mut c) = self.rows.lock() {
            c.get_or_insert_with(RowCache::default)
                .put(self.budget, part, block, rows);
        }
    }

    /// Bytes kept now.
    pub fn bytes(&self) -> usize {
        self.rows
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(|c| c.bytes))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &str) -> Entry {
        Entry {
            ts: 1,
            line: line.into(),
            metadata: vec![("detected_level".into(), "info".into())],
        }
    }

    #[test]
    fn rows_are_kept_within_the_budget_oldest_evicted_first() {
        let mut c = RowCache::default();
        let rows: Vec<(usize, Entry)> = (0..10).map(|r| (r, entry(&"x".repeat(100)))).collect();
        let one = charge(&rows[0].1);
        let budget = 16 * 20 * one;
        c.put(budget, 1, 3, &rows);
        let got = c.get(1, 3, &[0, 4, 9, 11]);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 4, 9]);
        assert_eq!(got[1].1.line, rows[4].1.line);
        assert_eq!(got[1].1.metadata, rows[4].1.metadata);
        assert!(c.get(2, 3, &[0]).is_empty(), "another part misses");
        assert!(c.get(1, 4, &[0]).is_empty(), "another block misses");
        assert_eq!(c.bytes, 10 * one);
        // Over budget, the oldest rows go first.
        let many: Vec<(usize, Entry)> = (0..400).map(|r| (r, entry(&"y".repeat(100)))).collect();
        c.put(budget, 1, 5, &many);
        assert!(c.bytes <= budget);
        assert!(c.get(1, 3, &[0]).is_empty(), "the oldest rows are evicted");
        assert_eq!(c.get(1, 5, &[399]).len(), 1);
        // A row larger than a sixteenth of the budget is not kept.
        c.put(budget, 1, 6, &[(0, entry(&"z".repeat(budget)))]);
        assert!(c.get(1, 6, &[0]).is_empty());
    }

    #[test]
    fn the_cache_serves_what_was_put_and_off_keeps_nothing() {
        let cache = AnswerCache::new(1 << 20);
        let part = 7;
        cache.put(part, 1, &[(2, entry("a line"))]);
        let off = AnswerCache::new(0);
        off.put(part, 1, &[(2, entry("a line"))]);
        assert!(off.get(part, 1, &[2]).is_empty() && off.bytes() == 0);
        assert!(cache.bytes() > 0);
        let got = cache.get(part, 1, &[1, 2]);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].0, got[0].1.line.as_str()), (2, "a line"));
    }
}
