//! Row timestamps: decoded from the directory's deltas on first use, or
//! read backward from the newest row for a time bound near a block's end.

use std::sync::Arc;

use super::frames::FrameRef;
use super::BlockReader;
use crate::block::ints::{get_ints, IntsLayout};
use crate::block::varint::{unzigzag, Cursor};
use crate::StorageError;

/// A version-2 directory's row timestamps. Rows are in time order, so
/// every delta is non-negative and its zigzag form is twice it: the deltas
/// are added as `d >> 1` (and multiplied by the divisor only when it is
/// not 1), with the low bits of all of them or-ed together on the way; a
/// delta with its low bit set (a negative one, which the store never
/// writes) has the block decoded again the general way.
fn decode_timestamps(l: &TsLayout<'_>, min_ts: i64, rows: usize) -> Arc<[i64]> {
    let g = l.gcd;
    let mut odd = 0u64;
    let mut prev = min_ts;
    let ts = if g == 1 {
        l.deltas.all_shared(&l.frame, rows, |d| {
            odd |= d;
            prev = prev.wrapping_add((d >> 1) as i64);
            prev
        })
    } else {
        l.deltas.all_shared(&l.frame, rows, |d| {
            odd |= d;
            prev = prev.wrapping_add(((d >> 1) as i64).wrapping_mul(g));
            prev
        })
    };
    if odd & 1 == 0 {
        return ts;
    }
    let mut prev = min_ts;
    l.deltas.all_shared(&l.frame, rows, |d| {
        prev = prev.wrapping_add(unzigzag(d).wrapping_mul(g));
        prev
    })
}

pub(super) fn read_row_timestamps(
    c: &mut Cursor<'_>,
    rows: usize,
    min_ts: i64,
) -> Result<Vec<i64>, StorageError> {
    let g = c.uvarint()?;
    if g == 0 || g > i64::MAX as u64 {
        return Err(c.err("bad timestamp divisor"));
    }
    let mut prev = min_ts;
    Ok(get_ints(c, rows)?
        .into_iter()
        .map(|d| {
            prev = prev.wrapping_add(unzigzag(d).wrapping_mul(g as i64));
            prev
        })
        .collect())
}

/// Where a version-2 block's row timestamps lie in its directory frame.
pub(super) struct TsLayout<'a> {
    pub(super) frame: FrameRef<'a>,
    pub(super) gcd: i64,
    pub(super) deltas: IntsLayout,
}

/// The first index of `ts` (ascending) whose value is at least `lo`,
/// searched from the end in doubling steps: a log query past its cutoff
/// asks for bounds near a block's end, and this touches the few cache
/// lines there instead of a binary search's spread over the whole array.
fn first_at_or_after_from_end(ts: &[i64], lo: i64) -> usize {
    let n = ts.len();
    // Invariant: every value of ts[hi..] is at least `lo`.
    let mut hi = n;
    let mut step = 1;
    loop {
        let probe = n.saturating_sub(step);
        if probe == 0 {
            return ts[..hi].partition_point(|&t| t < lo);
        }
        if ts[probe] < lo {
            return probe + 1 + ts[probe + 1..hi].partition_point(|&t| t < lo);
        }
        hi = probe;
        step *= 2;
    }
}

impl<'a> BlockReader<'a> {
    /// Row timestamps, nanoseconds, in row order.
    pub fn timestamps(&self) -> &[i64] {
        self.timestamps_shared()
    }

    /// [`Self::timestamps`], shared (for keeping them past this reader).
    pub fn timestamps_shared(&self) -> &Arc<[i64]> {
        self.ts.get_or_init(|| match &self.ts_layout {
            Some(l) => decode_timestamps(l, self.header.min_ts, self.rows()),
            None => Vec::new().into(),
        })
    }

    /// Whether the row timestamps were decoded (or given) already.
    pub fn has_timestamps(&self) -> bool {
        self.ts.get().is_some()
    }

    /// Gives the row timestamps, decoded earlier from this very block, so
    /// that they are not decoded again; ignored when already decoded or
    /// when their count is not the block's row count.
    pub fn set_timestamps(&self, ts: Arc<[i64]>) {
        if ts.len() == self.rows() {
            let _ = self.ts.set(ts);
        }
    }

    /// The timestamp of row `r` (below [`Self::rows`]). Rows read by
    /// [`Self::first_row_from`] are answered without decoding the others.
    pub fn row_ts(&self, r: usize) -> i64 {
        if let Some(ts) = self.ts.get() {
            return ts[r];
        }
        {
            let tail = self.ts_tail.borrow();
            if r >= tail.0 && tail.0 != usize::MAX {
                return tail.1[r - tail.0];
            }
        }
        self.timestamps()[r]
    }

    /// The first row with a timestamp at or after `lo` (rows are in time
    /// order). Reads the timestamps backward from the newest row, so a
    /// bound near the block's end costs only the rows after it.
    pub fn first_row_from(&self, lo: i64) -> usize {
        let n = self.rows();
        if lo <= self.header.min_ts || n == 0 {
            return 0;
        }
        if lo > self.header.max_ts {
            return n;
        }
        if let Some(ts) = self.ts.get() {
            return first_at_or_after_from_end(ts, lo);
        }
        let Some(l) = &self.ts_layout else {
            return self.timestamps().partition_point(|&t| t < lo);
        };
        let mut tail = self.ts_tail.borrow_mut();
        if tail.0 == usize::MAX {
            *tail = (n, Vec::new());
        }
        // Extend the tail backward until its first row is before `lo`.
        let limit = n / 4;
        // Room for the few rows a log query past its cutoff reads of most
        // blocks: one allocation, not one per doubling.
        let mut rev: Vec<i64> = Vec::with_capacity(16.min(limit + 2));
        let mut at = tail.0;
        let mut t = if at == n {
            self.header.max_ts
        } else {
            tail.1[0]
        };
        if at == n {
            at -= 1;
            rev.push(t);
        }
        while t >= lo && at > 0 {
            if n - at > limit {
                drop(tail);
                return self.timestamps().partition_point(|&t| t < lo);
            }
            let d = unzigzag(l.deltas.get(&l.frame, at));
            t = t.wrapping_sub(d.wrapping_mul(l.gcd));
            at -= 1;
            rev.push(t);
        }
        if !rev.is_empty() {
            rev.reverse();
            rev.extend_from_slice(&tail.1);
            *tail = (at, rev);
        }
        // Rows [tail.0, n) are known; the first at or after `lo`:
        let base = tail.0;
        base + tail.1.partition_point(|&t| t < lo)
    }
}

#[cfg(test)]
mod tests {
    use super::first_at_or_after_from_end;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn search_from_the_end_finds_what_a_binary_search_finds(
            mut ts in prop::collection::vec(-50i64..50, 0..300),
            lo in -60i64..60,
        ) {
            ts.sort_unstable();
            prop_assert_eq!(
                first_at_or_after_from_end(&ts, lo),
                ts.partition_point(|&t| t < lo)
            );
        }
    }
}
