//! Ordered reading of one stream from several sources (parts, then memtables):
//! a k-way merge by (timestamp, source rank, position) with exact-duplicate
//! removal. Used by scans (either direction) and by merges (forward).
//!
//! Sources are ranked in push order: older parts first, memtables last. Ties on
//! timestamp go to the lower rank when reading forward and the higher rank
//! backward, so equal timestamps keep push order (reversed backward). Blocks are
//! decoded lazily, one at a time per source, so memory stays at a block or so
//! per source.

use crate::part::{BlockRef, Part};
use crate::StorageError;
use runakefli_model::{Direction, Entry, StreamId, TimeCutoff};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::sync::Arc;

/// Rows of one equal-timestamp run examined together for duplicates; longer runs
/// are deduplicated in chunks of this size (bounds memory on pathological input),
/// and each chunk also against a [`SpillSet`] of the run's earlier chunks.
const DEDUP_RUN_LIMIT: usize = 4096;

/// Fingerprints of the rows of an equal-timestamp run already handed out in
/// earlier chunks, so a copy in a later chunk is dropped too. Only runs longer
/// than [`DEDUP_RUN_LIMIT`] use it: 16 bytes per row instead of the row.
/// Fingerprints are 128 bits of two SipHash functions with random keys, so
/// two different rows (which no client can aim at) share one with a
/// probability below 2^-100 for any run that fits in memory. A backward scan
/// keeps the copy it meets first when copies fall in different chunks, so the
/// rows are the same as forward, in the reverse order except among copies.
#[derive(Default)]
struct SpillSet {
    ts: Option<i64>,
    seen: HashSet<u128>,
    keys: (
        std::collections::hash_map::RandomState,
        std::collections::hash_map::RandomState,
    ),
}

impl SpillSet {
    fn fingerprint(&self, e: &Entry) -> u128 {
        use std::hash::BuildHasher;
        let k = (e.line.as_str(), e.metadata.as_slice());
        (u128::from(self.keys.0.hash_one(k)) << 64) | u128::from(self.keys.1.hash_one(k))
    }
}

/// One input of the merge.
pub struct Source {
    part: Option<Arc<Part>>,
    blocks: VecDeque<BlockRef>,
    cur: std::vec::IntoIter<Entry>,
    head: Option<Entry>,
    undecoded: Option<BlockRef>,
}

impl Source {
    /// The blocks of `sid` in `part` that overlap `[lo, hi]` and may hold every
    /// one of `substrings`; `None` when no block qualifies.
    pub fn part(
        part: &Arc<Part>,
        sid: StreamId,
        lo: i64,
        hi: i64,
        dir: Direction,
        substrings: &[String],
    ) -> Result<Option<Source>, StorageError> {
        let mut blocks = VecDeque::new();
        for b in part.stream_blocks(sid) {
            if b.meta.max_ts < lo || b.meta.min_ts > hi {
                continue;
            }
            if !substrings.is_empty() && !part.may_contain(b, substrings)? {
                continue;
            }
            match dir {
                Direction::Forward => blocks.push_back(b.clone()),
                Direction::Backward => blocks.push_front(b.clone()),
            }
        }
        if blocks.is_empty() {
            return Ok(None);
        }
        Ok(Some(Source {
            part: Some(part.clone()),
            blocks,
            cur: Vec::new().into_iter(),
            head: None,
            undecoded: None,
        }))
    }

    /// Entries given in push order (already within the range); sorted here.
    pub fn memory(mut entries: Vec<Entry>, dir: Direction) -> Source {
        entries.sort_by_key(|e| e.ts); // stable: push order among equal timestamps
        if dir == Direction::Backward {
            entries.reverse();
        }
        Source {
            part: None,
            blocks: VecDeque::new(),
            cur: entries.into_iter(),
            head: None,
            undecoded: None,
        }
    }
}

#[derive(PartialEq, Eq)]
struct Key {
    ts: i64,
    rank: usize,
    backward: bool,
}

impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap pops the greatest: forward wants the smallest (ts, rank).
        let natural = (self.ts, self.rank).cmp(&(o.ts, o.rank));
        if self.backward {
            natural
        } else {
            natural.reverse()
        }
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The merged, deduplicated sequence of a stream's entries.
pub struct MergeIter {
    sources: Vec<Source>,
    heap: BinaryHeap<Key>,
    lo: i64,
    hi: i64,
    backward: bool,
    pending: VecDeque<Entry>,
    lookahead: Option<Entry>,
    failed: bool,
    needles: Vec<String>,
    cutoff: Option<Arc<TimeCutoff>>,
    spill: SpillSet,
}

impl MergeIter {
    /// Merges `sources` (in rank order) within the inclusive range `[lo, hi]`.
    pub fn new(
        sources: Vec<Source>,
        lo: i64,
        hi: i64,
        dir: Direction,
    ) -> Result<Self, StorageError> {
        let backward = dir == Direction::Backward;
        let mut it = MergeIter {
            sources,
            heap: BinaryHeap::new(),
            lo,
            hi,
            backward,
            pending: VecDeque::new(),
            lookahead: None,
            failed: false,
            needles: Vec::new(),
            cutoff: None,
            spill: SpillSet::default(),
        };
        for rank in 0..it.sources.len() {
            it.advance(rank)?;
        }
        Ok(it)
    }

    /// Leaves out part rows whose lines certainly lack one of `needles`
    /// (rows that may hold them all are kept; memtable rows are not tested).
    /// Duplicate removal is unaffected: copies of a row have the same line.
    pub fn with_needles(mut self, needles: &[String]) -> Self {
        self.needles = needles.to_vec();
        self
    }

    /// Ends the sequence at the first row `cutoff` excludes (see
    /// [`TimeCutoff`]); blocks wholly past it are not decoded.
    pub fn with_cutoff(mut self, cutoff: Option<Arc<TimeCutoff>>) -> Self {
        self.cutoff = cutoff;
        self
    }

    /// Moves source `rank` to its next row (or next undecoded block) and queues it.
    fn advance(&mut self, rank: usize) -> Result<(), StorageError> {
        let (lo, hi, backward) = (self.lo, self.hi, self.backward);
        let s = &mut self.sources[rank];
        if let Some(e) = s.cur.next() {
            s.head = Some(e);
            let ts = s.head.as_ref().map_or(0, |e| e.ts);
            self.heap.push(Key { ts, rank, backward });
            return Ok(());
        }
        if let Some(b) = s.blocks.pop_front() {
            // Queue with a bound on its first row; decoded when it reaches the top.
            let ts = if backward {
                b.meta.max_ts.min(hi)
            } else {
                b.meta.min_ts.max(lo)
            };
            s.undecoded = Some(b);
            self.heap.push(Key { ts, rank, backward });
        }
        Ok(())
    }

    fn decode(&mut self, rank: usize) -> Result<(), StorageError> {
        let s = &mut self.sources[rank];
        let (Some(b), Some(part)) = (s.undecoded.take(), s.part.as_ref()) else {
            return Ok(());
        };
        let (lo, hi) = match &self.cutoff {
            Some(c) => c.narrow(self.lo, self.hi),
            None => (self.lo, self.hi),
        };
        let d = part.decode_filtered(&b, lo, hi, &self.needles)?;
        let n = d.ts.len();
        if d.lines.len() != n || d.metadata.len() != n {
            return Err(StorageError::corrupt(
                part.path().display().to_string(),
                "block columns disagree on row count",
            ));
        }
        let mut rows: Vec<Entry> =
            d.ts.into_iter()
                .zip(d.lines)
                .zip(d.metadata)
                .filter(|((ts, _), _)| *ts >= self.lo && *ts <= self.hi)
                .map(|((ts, line), metadata)| Entry { ts, line, metadata })
                .collect();
        if self.backward {
            rows.reverse();
        }
        s.cur = rows.into_iter();
        Ok(())
    }

    fn next_raw(&mut self) -> Result<Option<Entry>, StorageError> {
        while let Some(k) = self.heap.pop() {
            // The heap yields rows (and block bounds) in scan order, so the
            // first one past the cutoff ends the stream.
            if self.cutoff.as_ref().is_some_and(|c| c.excludes(k.ts)) {
                self.heap.clear();
                return Ok(None);
            }
            if self.sources[k.rank].undecoded.is_some() {
                self.decode(k.rank)?;
                self.advance(k.rank)?;
                continue;
            }
            let e = self.sources[k.rank].head.take();
            self.advance(k.rank)?;
            if e.is_some() {
                return Ok(e);
            }
        }
        Ok(None)
    }

    /// The next entry, skipping exact duplicates (same timestamp, line and
    /// metadata). The copy kept is the first in push order, in both directions,
    /// so a backward scan is exactly the reverse of a forward one (except among
    /// copies in runs longer than [`DEDUP_RUN_LIMIT`], see [`SpillSet`]).
    pub fn next_entry(&mut self) -> Result<Option<Entry>, StorageError> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            let first = match self.lookahead.take() {
                Some(e) => e,
                None => match self.next_raw()? {
                    Some(e) => e,
                    None => return Ok(None),
                },
            };
            let ts = first.ts;
            let continues = self.spill.ts == Some(ts);
            if !continues && self.spill.ts.is_some() {
                self.spill.ts = None;
                self.spill.seen = HashSet::new();
            }
            let mut run = vec![first];
            while run.len() < DEDUP_RUN_LIMIT {
                match self.next_raw()? {
                    Some(e) if e.ts == ts => run.push(e),
                    other => {
                        self.lookahead = other;
                        break;
                    }
                }
            }
            // Fast path: a lone row at its timestamp, nothing to compare.
            if run.len() == 1 && !continues {
                return Ok(run.pop());
            }
            let full = run.len() == DEDUP_RUN_LIMIT;
            let mut rows = dedup(run, self.backward);
            if continues || full {
                // The run may go on past this chunk: drop copies of rows
                // handed out earlier, remember what is handed out now.
                if continues {
                    rows.retain(|e| !self.spill.seen.contains(&self.spill.fingerprint(e)));
                }
                for e in &rows {
                    let f = self.spill.fingerprint(e);
                    self.spill.seen.insert(f);
                }
                self.spill.ts = Some(ts);
            }
            // Empty when the whole chunk repeated earlier rows: read on.
            self.pending = rows.into();
        }
    }
}

/// Drops repeated (line, metadata) pairs of an equal-timestamp run, keeping the
/// first occurrence (or the last one when `keep_last`, i.e. reading backward).
fn dedup(run: Vec<Entry>, keep_last: bool) -> Vec<Entry> {
    if run.len() < 2 {
        return run;
    }
    let n = run.len();
    let mut keep = vec![true; n];
    {
        let mut seen: HashSet<(&str, &[(String, String)])> = HashSet::with_capacity(n);
        let order: Box<dyn Iterator<Item = usize>> = if keep_last {
            Box::new((0..n).rev())
        } else {
            Box::new(0..n)
        };
        for i in order {
            keep[i] = seen.insert((run[i].line.as_str(), run[i].metadata.as_slice()));
        }
    }
    run.into_iter()
        .zip(keep)
        .filter_map(|(e, k)| k.then_some(e))
        .collect()
}

impl Iterator for MergeIter {
    type Item = Result<Entry, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_entry() {
            Ok(e) => e.map(Ok),
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(ts: i64, line: &str) -> Entry {
        Entry {
            ts,
            line: line.into(),
            metadata: vec![],
        }
    }

    fn run(sources: Vec<Source>, dir: Direction) -> Vec<(i64, String)> {
        MergeIter::new(sources, i64::MIN, i64::MAX, dir)
            .unwrap()
            .map(|r| r.map(|e| (e.ts, e.line)).unwrap())
            .collect()
    }

    #[test]
    fn ties_follow_rank_then_position_and_duplicates_go() {
        let a = vec![e(1, "a1"), e(2, "a2"), e(2, "dup")];
        let b = vec![e(2, "b2"), e(0, "b0"), e(2, "dup")];
        let fwd = run(
            vec![
                Source::memory(a.clone(), Direction::Forward),
                Source::memory(b.clone(), Direction::Forward),
            ],
            Direction::Forward,
        );
        let want: Vec<(i64, String)> = [(0, "b0"), (1, "a1"), (2, "a2"), (2, "dup"), (2, "b2")]
            .iter()
            .map(|(t, l)| (*t, l.to_string()))
            .collect();
        assert_eq!(fwd, want);
        let bwd = run(
            vec![
                Source::memory(a, Direction::Backward),
                Source::memory(b, Direction::Backward),
            ],
            Direction::Backward,
        );
        let mut rev = want.clone();
        rev.reverse();
        // Backward keeps one copy of the duplicate; order is exactly reversed.
        assert_eq!(bwd, rev);
    }

    #[test]
    fn metadata_distinguishes_entries() {
        let a = vec![
            e(1, "x"),
            Entry {
                ts: 1,
                line: "x".into(),
                metadata: vec![("k".into(), "v".into())],
            },
        ];
        assert_eq!(
            run(
                vec![Source::memory(a, Direction::Forward)],
                Direction::Forward
            )
            .len(),
            2
        );
    }

    /// The issue-8 case: copies of a row in different 4,096-row chunks of one
    /// equal-timestamp run (here 2 × 5,000 rows at one timestamp, between
    /// rows at other timestamps) are removed too, in both directions.
    #[test]
    fn duplicates_across_a_chunk_boundary_go() {
        let n = 5000;
        let make = |tag: &str| {
            let mut v = vec![e(0, &format!("before {tag}"))];
            v.extend((0..n).map(|i| e(1, &format!("line {i}"))));
            v.push(e(2, &format!("after {tag}")));
            v
        };
        for dir in [Direction::Forward, Direction::Backward] {
            let got = run(
                vec![
                    Source::memory(make("a"), dir),
                    Source::memory(make("b"), dir),
                ],
                dir,
            );
            assert_eq!(got.len(), n + 4, "{dir:?}");
            let distinct: HashSet<&(i64, String)> = got.iter().collect();
            assert_eq!(distinct.len(), got.len(), "{dir:?}: no copy left");
            let mut ts: Vec<i64> = got.iter().map(|(t, _)| *t).collect();
            if dir == Direction::Backward {
                ts.reverse();
            }
            assert!(
                ts.windows(2).all(|w| w[0] <= w[1]),
                "{dir:?}: in time order"
            );
        }
        // Forward keeps push order: all of the run from the first source.
        let fwd = run(
            vec![
                Source::memory(make("a"), Direction::Forward),
                Source::memory(make("b"), Direction::Forward),
            ],
            Direction::Forward,
        );
        let want: Vec<String> = (0..n).map(|i| format!("line {i}")).collect();
        let run_lines: Vec<String> = fwd
            .iter()
            .filter(|(t, _)| *t == 1)
            .map(|(_, l)| l.clone())
            .collect();
        assert_eq!(run_lines, want);
    }

    /// A chunk made only of copies of earlier chunks does not end the stream.
    #[test]
    fn a_chunk_of_only_copies_does_not_end_the_stream() {
        let rows: Vec<Entry> = (0..DEDUP_RUN_LIMIT)
            .map(|i| e(1, &format!("x{i}")))
            .chain((0..DEDUP_RUN_LIMIT).map(|i| e(1, &format!("x{i}"))))
            .chain(std::iter::once(e(5, "last")))
            .collect();
        let got = run(
            vec![Source::memory(rows, Direction::Forward)],
            Direction::Forward,
        );
        assert_eq!(got.len(), DEDUP_RUN_LIMIT + 1);
        assert_eq!(got.last().unwrap().1, "last");
    }
}
