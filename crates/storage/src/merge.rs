//! Background merges: which parts of a partition to combine (size-tiered over
//! neighbours in push order), and the merge itself, stream by stream.

use crate::merge_iter::{MergeIter, Source};
use crate::part::{BlockFormat, Part, PartInfo, PartWriter};
use crate::partition::Partition;
use crate::StorageError;
use runakefli_model::Direction;
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

/// Merges `inputs` (neighbours in push order) of `partition` into one part at
/// zstd `level` and commits it. Returns the rows written, or `None` when
/// `stop` was raised (the partial output is discarded).
pub fn merge_parts(
    partition: &Partition,
    inputs: &[Arc<Part>],
    level: i32,
    stop: &AtomicBool,
) -> Result<Option<u64>, StorageError> {
    let id = partition.alloc_part_id();
    let mut writer = PartWriter::create(&partition.dir, id, BlockFormat::Columnar, level)?;
    let mut sids: Vec<u64> = inputs
        .iter()
        .flat_map(|p| p.stream_ids().iter().copied())
        .collect();
    sids.sort_unstable();
    sids.dedup();
    let mut released = vec![0usize; inputs.len()];
    for sid in sids {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut sources = Vec::with_capacity(inputs.len());
        for p in inputs {
            if let Some(s) = Source::part(p, sid, i64::MIN, i64::MAX, Direction::Forward, &[])? {
                sources.push(s);
            }
        }
        let rows = MergeIter::new(sources, i64::MIN, i64::MAX, Direction::Forward)?;
        writer.write_stream(sid, rows)?;
        for (p, from) in inputs.iter().zip(released.iter_mut()) {
            *from = p.release_through_stream(*from, sid);
        }
    }
    let rows = writer.rows();
    let order = inputs.iter().map(|p| p.info().order).min().unwrap_or(id);
    let level_out = inputs.iter().map(|p| p.info().level).max().unwrap_or(0) + 1;
    let info = writer.finish(order, level_out)?;
    let remove: Vec<u64> = inputs.iter().map(|p| p.info().id).collect();
    partition.commit(&remove, Some(info), None)?;
    Ok(Some(rows))
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
