//! Cutting a plan's data into independent units of work.
//!
//! A stream's rows come from its blocks in parts and from the memtables.
//! When those sources cover disjoint time ranges, no row of one can equal a
//! row of another (equal rows share a timestamp), so every columnar block is
//! a unit of its own and needs no duplicate removal (flushes and merges
//! already removed duplicates within a part). Memtable rows are sorted and
//! deduplicated as one unit. A stream whose sources overlap in time is one
//! unit read through the deduplicating [`MergeIter`](runakefli_storage::merge_iter).

use runakefli_model::{Entry, StreamInfo, TenantId};
use runakefli_storage::memtable::Memtable;
use runakefli_storage::part::{BlockFormat, BlockRef, Part};
use std::sync::Arc;

/// What a unit reads.
pub enum UnitData {
    /// One columnar (version 2) block.
    Columnar {
        /// Its part.
        part: Arc<Part>,
        /// The block.
        block: BlockRef,
    },
    /// One raw or version-1 block, read whole.
    OldBlock {
        /// Its part.
        part: Arc<Part>,
        /// The block.
        block: BlockRef,
    },
    /// Rows in time order, duplicates removed.
    Rows(Vec<Entry>),
    /// Every source of a stream whose sources overlap (merged on reading).
    Merged {
        /// The blocks, per part in push order.
        parts: Vec<(Arc<Part>, Vec<BlockRef>)>,
        /// Memtable rows, per memtable in push order (frozen first).
        memory: Vec<Vec<Entry>>,
    },
}

/// One unit of work.
pub struct Unit {
    /// Index of the stream in the plan's stream list.
    pub stream: usize,
    /// Smallest timestamp it may hold.
    pub min_ts: i64,
    /// Largest timestamp it may hold.
    pub max_ts: i64,
    /// What to read.
    pub data: UnitData,
}

impl Unit {
    /// Hints the CPU to fetch this unit's part entries, three units ahead
    /// of its read (see [`runakefli_storage::part::Part::prefetch_entries`]).
    pub fn prefetch_entries(&self) {
        if let UnitData::Columnar { part, block } = &self.data {
            part.prefetch_entries(block);
        }
    }

    /// Hints the CPU to fetch this unit's block header, two units ahead
    /// (see [`runakefli_storage::part::Part::prefetch_header`]).
    pub fn prefetch_header(&self) {
        if let UnitData::Columnar { part, block } = &self.data {
            part.prefetch_header(block);
        }
    }

    /// Hints the CPU to fetch what reading this unit first touches, a unit
    /// ahead (see [`runakefli_storage::part::Part::prefetch_block`]).
    pub fn prefetch(&self) {
        if let UnitData::Columnar { part, block } = &self.data {
            part.prefetch_block(block);
        }
    }
}

/// Hints the memory of the units after unit `i`, which this worker or
/// another takes next, in three stages: the next unit's block, the header
/// of the one after, the part entries of the third (each stage finds what
/// it reads hinted by the stage before).
pub(super) fn prefetch_ahead(units: &[Unit], i: usize) {
    if let Some(u) = units.get(i + 1) {
        u.prefetch();
    }
    if let Some(u) = units.get(i + 2) {
        u.prefetch_header();
    }
    if let Some(u) = units.get(i + 3) {
        u.prefetch_entries();
    }
}

/// The sources of one stream within the inclusive time span `(lo, hi)`.
pub fn stream_units(
    stream: usize,
    info: &StreamInfo,
    tenant: &TenantId,
    parts: &[Arc<Part>],
    memtables: &[Arc<Memtable>],
    (lo, hi): (i64, i64),
    out: &mut Vec<Unit>,
) {
    let sid = info.id;
    // The common case: one part, nothing in memory. Blocks of one part are
    // disjoint in time and hold no duplicates.
    if parts.len() == 1 && memtables.iter().all(|m| m.rows() == 0) {
        let part = &parts[0];
        let columnar = part.format() == BlockFormat::Columnar;
        for b in part.stream_blocks(sid) {
            if b.meta.max_ts < lo || b.meta.min_ts > hi || part.block_damaged(b) {
                continue;
            }
            let data = if columnar && is_v2(part, b) {
                UnitData::Columnar {
                    part: part.clone(),
                    block: b.clone(),
                }
            } else {
                UnitData::OldBlock {
                    part: part.clone(),
                    block: b.clone(),
                }
            };
            out.push(Unit {
                stream,
                min_ts: b.meta.min_ts,
                max_ts: b.meta.max_ts,
                data,
            });
        }
        return;
    }
    let mut part_blocks: Vec<(Arc<Part>, Vec<BlockRef>)> = Vec::new();
    for p in parts {
        let blocks: Vec<BlockRef> = p
            .stream_blocks(sid)
            .iter()
            .filter(|b| b.meta.max_ts >= lo && b.meta.min_ts <= hi && !p.block_damaged(b))
            .cloned()
            .collect();
        if !blocks.is_empty() {
            part_blocks.push((p.clone(), blocks));
        }
    }
    let memory: Vec<Vec<Entry>> = memtables
        .iter()
        .filter(|m| m.rows() > 0)
        .map(|m| m.entries_in(tenant, sid, lo, hi))
        .filter(|e| !e.is_empty())
        .collect();
    // Time span of each source.
    let mut spans: Vec<(i64, i64)> = part_blocks
        .iter()
        .map(|(_, bs)| {
            (
                bs.iter().map(|b| b.meta.min_ts).min().unwrap_or(i64::MAX),
                bs.iter().map(|b| b.meta.max_ts).max().unwrap_or(i64::MIN),
            )
        })
        .collect();
    spans.extend(memory.iter().map(|es| {
        (
            es.iter().map(|e| e.ts).min().unwrap_or(i64::MAX),
            es.iter().map(|e| e.ts).max().unwrap_or(i64::MIN),
        )
    }));
    spans.sort_unstable();
    let disjoint = spans.windows(2).all(|w| w[0].1 < w[1].0);
    if !disjoint {
        let min_ts = spans.iter().map(|s| s.0).min().unwrap_or(lo);
        let max_ts = spans.iter().map(|s| s.1).max().unwrap_or(hi);
        out.push(Unit {
            stream,
            min_ts,
            max_ts,
            data: UnitData::Merged {
                parts: part_blocks,
                memory,
            },
        });
        return;
    }
    for (part, blocks) in part_blocks {
        for block in blocks {
            let data = if part.format() == BlockFormat::Columnar && is_v2(&part, &block) {
                UnitData::Columnar {
                    part: part.clone(),
                    block: block.clone(),
                }
            } else {
                UnitData::OldBlock {
                    part: part.clone(),
                    block: block.clone(),
                }
            };
            out.push(Unit {
                stream,
                min_ts: block.meta.min_ts,
                max_ts: block.meta.max_ts,
                data,
            });
        }
    }
    for mut entries in memory {
        entries.sort_by_key(|e| e.ts); // stable: push order among equal timestamps
        dedup_sorted(&mut entries);
        let min_ts = entries.first().map_or(lo, |e| e.ts);
        let max_ts = entries.last().map_or(hi, |e| e.ts);
        out.push(Unit {
            stream,
            min_ts,
            max_ts,
            data: UnitData::Rows(entries),
        });
    }
}

/// Whether a columnar block is in format version 2 (read from its first byte).
fn is_v2(part: &Part, block: &BlockRef) -> bool {
    part.block_version(block).is_some_and(|v| v >= 2)
}

/// Removes exact duplicates (timestamp, line, metadata) from time-sorted
/// entries, keeping the first in push order.
pub fn dedup_sorted(entries: &mut Vec<Entry>) {
    let mut i = 0;
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let all = std::mem::take(entries);
    let n = all.len();
    let mut all = all.into_iter().peekable();
    while i < n {
        let first = all.next().expect("counted");
        i += 1;
        let mut run = vec![first];
        while all.peek().is_some_and(|e| e.ts == run[0].ts) {
            run.push(all.next().expect("peeked"));
            i += 1;
        }
        if run.len() == 1 {
            out.append(&mut run);
            continue;
        }
        let mut kept: Vec<Entry> = Vec::with_capacity(run.len());
        for e in run {
            if !kept
                .iter()
                .any(|k| k.line == e.line && k.metadata == e.metadata)
            {
                kept.push(e);
            }
        }
        out.append(&mut kept);
    }
    *entries = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(ts: i64, l: &str) -> Entry {
        Entry {
            ts,
            line: l.into(),
            metadata: vec![],
        }
    }

    #[test]
    fn dedup_keeps_first_of_equal_rows() {
        let mut v = vec![e(1, "a"), e(2, "b"), e(2, "c"), e(2, "b"), e(3, "a")];
        dedup_sorted(&mut v);
        let got: Vec<(i64, &str)> = v.iter().map(|e| (e.ts, e.line.as_str())).collect();
        assert_eq!(got, vec![(1, "a"), (2, "b"), (2, "c"), (3, "a")]);
    }
}
