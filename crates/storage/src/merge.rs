//! Background merges: which parts of a partition to combine (size-tiered over
//! neighbours in push order), and the merge itself, stream by stream.

use crate::merge_iter::{MergeIter, Source};
use crate::part::{BlockFormat, Part, PartInfo, PartWriter};
use crate::partition::Partition;
use crate::StorageError;
use runakefli_model::{Direction, Entry, StreamId};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Merge policy knobs (from the store configuration).
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Minimum neighbours of similar size for a tiered merge.
    pub min_parts: usize,
    /// Maximum inputs of one merge.
    pub max_parts: usize,
    /// "Similar size": largest ≤ ratio × smallest.
    pub size_ratio: u64,
}

/// Picks neighbouring parts to merge, or `None`.
///
/// Tiered: the first window of `min_parts..=max_parts` neighbours whose sizes are
/// within `size_ratio` of each other. Idle (the partition got no flush for a
/// while): the newest up to `max_parts` parts, dropping old parts that are more
/// than twice the size of everything after them (so a large settled part is not
/// rewritten for a trickle of small ones).
pub fn pick(parts: &[PartInfo], policy: Policy, idle: bool) -> Option<Range<usize>> {
    let n = parts.len();
    let max = policy.max_parts.max(2);
    let min = policy.min_parts.max(2);
    for i in 0..n {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        let mut j = i;
        while j < n && j - i < max {
            let b = parts[j].bytes.max(1);
            let (nlo, nhi) = (lo.min(b), hi.max(b));
            if nhi > nlo.saturating_mul(policy.size_ratio.max(1)) {
                break;
            }
            (lo, hi) = (nlo, nhi);
            j += 1;
        }
        if j - i >= min {
            return Some(i..j);
        }
    }
    if idle && n >= 2 {
        let mut start = n.saturating_sub(max);
        while start + 1 < n {
            let rest: u64 = parts[start + 1..].iter().map(|p| p.bytes).sum();
            if parts[start].bytes > rest.saturating_mul(2) {
                start += 1;
            } else {
                break;
            }
        }
        if n - start >= 2 {
            return Some(start..n);
        }
    }
    None
}

/// What a rewrite keeps of one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKeep {
    /// Every row (the stream is copied as merges copy it).
    All,
    /// No row: the stream is not even read.
    Nothing,
    /// The rows [`RowFilter::keep`] accepts.
    Rows,
}

/// Which rows a merge or rewrite carries into its output: retention drops
/// expired streams, deletes drop deleted rows.
pub trait RowFilter {
    /// What to keep of stream `sid`.
    fn stream(&self, sid: StreamId) -> StreamKeep;
    /// For streams answered [`StreamKeep::Rows`]: whether `row` stays.
    fn keep(&self, sid: StreamId, row: &Entry) -> bool;
}

/// Keeps everything (a plain merge).
pub struct KeepAll;

impl RowFilter for KeepAll {
    fn stream(&self, _sid: StreamId) -> StreamKeep {
        StreamKeep::All
    }
    fn keep(&self, _sid: StreamId, _row: &Entry) -> bool {
        true
    }
}

/// What a merge or rewrite did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Rows written to the output part.
    pub rows: u64,
    /// Stored rows left out by the filter (rows of streams left out whole
    /// are counted as their inputs store them, duplicates included).
    pub removed: u64,
}

/// Merges `inputs` (neighbours in push order) of `partition` into one part at
/// zstd `level` and commits it. Returns the rows written, or `None` when
/// `stop` was raised (the partial output is discarded).
pub fn merge_parts(
    partition: &Partition,
    inputs: &[Arc<Part>],
    level: i32,
    stop: &AtomicBool,
) -> Result<Option<u64>, StorageError> {
    Ok(rewrite_parts(partition, inputs, level, stop, &KeepAll)?.map(|o| o.rows))
}

/// [`merge_parts`] keeping only what `filter` keeps. When nothing is kept,
/// the inputs are removed from the manifest and no part is written.
pub fn rewrite_parts(
    partition: &Partition,
    inputs: &[Arc<Part>],
    level: i32,
    stop: &AtomicBool,
    filter: &dyn RowFilter,
) -> Result<Option<MergeOutcome>, StorageError> {
    let id = partition.alloc_part_id();
    let mut writer = PartWriter::create(&partition.dir, id, BlockFormat::Columnar, level)?;
    let mut sids: Vec<u64> = inputs
        .iter()
        .flat_map(|p| p.stream_ids().iter().copied())
        .collect();
    sids.sort_unstable();
    sids.dedup();
    let mut released = vec![0usize; inputs.len()];
    let mut removed = 0u64;
    for sid in sids {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let keep = filter.stream(sid);
        if keep == StreamKeep::Nothing {
            removed += inputs
                .iter()
                .flat_map(|p| p.stream_blocks(sid))
                .map(|b| u64::from(b.meta.rows))
                .sum::<u64>();
            continue;
        }
        let mut sources = Vec::with_capacity(inputs.len());
        for p in inputs {
            if let Some(s) = Source::part(p, sid, i64::MIN, i64::MAX, Direction::Forward, &[])? {
                sources.push(s);
            }
        }
        let mut iter = MergeIter::new(sources, i64::MIN, i64::MAX, Direction::Forward)?;
        if keep == StreamKeep::Rows {
            let mut dropped = 0u64;
            let filtered = iter.by_ref().filter(|r| match r {
                Ok(e) if !filter.keep(sid, e) => {
                    dropped += 1;
                    false
                }
                _ => true,
            });
            writer.write_stream(sid, filtered)?;
            removed += dropped;
        } else {
            writer.write_stream(sid, iter)?;
        }
        for (p, from) in inputs.iter().zip(released.iter_mut()) {
            *from = p.release_through_stream(*from, sid);
        }
    }
    let rows = writer.rows();
    let remove: Vec<u64> = inputs.iter().map(|p| p.info().id).collect();
    if rows == 0 {
        drop(writer);
        partition.commit(&remove, None, None)?;
        return Ok(Some(MergeOutcome { rows, removed }));
    }
    let order = inputs.iter().map(|p| p.info().order).min().unwrap_or(id);
    let level_out = inputs.iter().map(|p| p.info().level).max().unwrap_or(0) + 1;
    let info = writer.finish(order, level_out)?;
    partition.commit(&remove, Some(info), None)?;
    Ok(Some(MergeOutcome { rows, removed }))
}

/// Due delete requests' rows are left out of merged parts.
impl RowFilter for crate::deletes::PurgeFilter<'_> {
    fn stream(&self, sid: StreamId) -> StreamKeep {
        if self.of(sid).is_empty() {
            StreamKeep::All
        } else {
            StreamKeep::Rows
        }
    }

    fn keep(&self, sid: StreamId, row: &runakefli_model::Entry) -> bool {
        !self.of(sid).deletes(row.ts, &row.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(sizes: &[u64]) -> Vec<PartInfo> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &b)| PartInfo {
                id: i as u64,
                order: i as u64,
                level: 0,
                rows: 1,
                bytes: b,
            })
            .collect()
    }

    const P: Policy = Policy {
        min_parts: 4,
        max_parts: 6,
        size_ratio: 4,
    };

    #[test]
    fn tiered_windows() {
        assert_eq!(pick(&parts(&[10, 10, 10]), P, false), None);
        assert_eq!(pick(&parts(&[10, 10, 10, 12]), P, false), Some(0..4));
        assert_eq!(
            pick(&parts(&[1000, 10, 10, 10, 12, 9, 9, 9]), P, false),
            Some(1..7)
        );
        assert_eq!(pick(&parts(&[1000, 10, 100, 10, 10]), P, false), None);
    }

    #[test]
    fn idle_merge_spares_large_settled_parts() {
        const P: Policy = Policy {
            min_parts: 8,
            max_parts: 16,
            size_ratio: 4,
        };
        assert_eq!(pick(&parts(&[600, 75, 75, 75, 75]), P, true), Some(0..5));
        assert_eq!(pick(&parts(&[600, 75, 75, 75]), P, true), Some(1..4));
        assert_eq!(pick(&parts(&[10_000, 75, 75]), P, true), Some(1..3));
        assert_eq!(pick(&parts(&[10_000, 75]), P, true), None);
        assert_eq!(pick(&parts(&[75]), P, true), None);
    }
}
