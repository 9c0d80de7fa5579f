//! One worker's share of a bucket plan ([`Agg`]: its groups, residual rows
//! and counts) and what both ways of filling it — rows without fields
//! (`buckets.rs`) and the fields stage (`fields.rs`) — use: a row's group
//! key from its metadata and stream labels, and a template's columns.

use super::block::BlockEval;
use super::Context;
use runakefli_model::plan::{BucketData, BucketPlan, GroupBy, GroupKey, PlanStats};
use runakefli_model::{Entry, Labels};
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::StorageError;

/// One worker's groups.
pub(super) struct Agg<'b> {
    pub plan: &'b BucketPlan,
    index: HashMap<GroupKey, usize>,
    pub groups: Vec<(GroupKey, BucketData)>,
    pub residual: HashMap<usize, Vec<Entry>>,
    pub stats: PlanStats,
    /// The bucket of the last row added: the first guess for the next one.
    last_bucket: usize,
    /// Rows in the last bucket run: the first guess for the next run's
    /// length ([`Agg::for_each_run`]).
    last_run: usize,
    /// Per stream of the plan: the group of its rows without metadata
    /// (`usize::MAX`: not looked up yet).
    stream_groups: Vec<usize>,
    /// Groups of stream rows by the group labels' cells in the plan's
    /// stream label table ([`Agg::stream_group`]).
    by_cells: HashMap<Vec<u32>, usize>,
    /// Scratch cells of one stream.
    cells: Vec<u32>,
    /// Scratch: the rows of a block that pass ([`Agg::count_rows`]).
    passing: Vec<u32>,
    /// Scratch: a block's kept rows as a bitmap ([`Agg::count_kept`]).
    marks: Vec<u64>,
}

impl<'b> Agg<'b> {
    /// No groups yet.
    pub fn new(plan: &'b BucketPlan) -> Self {
        Agg {
            plan,
            index: HashMap::default(),
            groups: Vec::new(),
            residual: HashMap::default(),
            stats: PlanStats::default(),
            last_bucket: 0,
            last_run: 1,
            stream_groups: Vec::new(),
            by_cells: HashMap::default(),
            cells: Vec::new(),
            passing: Vec::new(),
            marks: Vec::new(),
        }
    }

    /// The index of the group with `key` (created empty when new).
    pub fn group(&mut self, key: GroupKey) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.groups.len();
        self.groups.push((
            key.clone(),
            BucketData::new(self.plan.value, self.plan.buckets()),
        ));
        self.index.insert(key, i);
        i
    }

    /// The group of stream `stream`'s rows that have no metadata.
    ///
    /// Grouped by labels, the key is made from the plan's stream label
    /// table ([`Context::stream_labels`]) and looked up by its cells: the
    /// streams' own labels are not read, and a key is made once per
    /// distinct tuple of values, not once per stream.
    pub fn stream_group(&mut self, ctx: &Context<'_>, stream: usize) -> usize {
        if self.stream_groups.len() <= stream {
            self.stream_groups.resize(stream + 1, usize::MAX);
        }
        if self.stream_groups[stream] != usize::MAX {
            return self.stream_groups[stream];
        }
        let g = match &self.plan.group_by {
            GroupBy::Labels(_) => {
                let table = &ctx.stream_labels;
                let group = &ctx.q.labels.group;
                self.cells.clear();
                self.cells
                    .extend(group.iter().map(|&j| table.cell(stream, j)));
                match self.by_cells.get(self.cells.as_slice()) {
                    Some(&g) => g,
                    None => {
                        let key = GroupKey::Labels(
                            group
                                .iter()
                                .map(|&j| table.get(stream, j).map(str::to_string))
                                .collect(),
                        );
                        let g = self.group(key);
                        self.by_cells.insert(self.cells.clone(), g);
                        g
                    }
                }
            }
            GroupBy::Stream => self.group(base_key(self.plan, &[], &ctx.streams[stream].labels)),
        };
        self.stream_groups[stream] = g;
        g
    }

    /// Walks the rows `first..end` of a block (`ts` ascending, see
    /// block/FORMAT.md) a bucket's run at a time: `run(self, Some(b), i, j)`
    /// for each run `i..j` of rows in bucket `b`, `run(self, None, i, i + 1)`
    /// for a row in no bucket.
    #[inline]
    fn for_each_run(
        &mut self,
        ts: &[i64],
        first: usize,
        end: usize,
        mut run: impl FnMut(&mut Self, Option<usize>, usize, usize),
    ) {
        let mut i = first;
        while i < end {
            let Some(b) = self.plan.bucket_of_near(ts[i], self.last_bucket) else {
                run(self, None, i, i + 1);
                i += 1;
                continue;
            };
            self.last_bucket = b;
            let hi = self.plan.bounds[b + 1];
            // Rows after `i` are no older: the run ends at the first row
            // past `hi`. Runs of a block are of about one length (rows
            // spread over time), so the search starts where the last run's
            // length puts the end and walks from there (a binary search's
            // scattered reads miss the cache on a block's timestamps; a
            // walk from `i` compared every row: 22 % of the CPU of
            // `sum(count_over_time({app="…"} | json | level="error" [1m]))`).
            let mut j = (i + self.last_run).clamp(i + 1, end);
            if ts[j - 1] <= hi {
                while j < end && ts[j] <= hi {
                    j += 1;
                }
            } else {
                // `ts[i] <= hi`: the walk back stops at `i + 1` at the latest.
                j -= 1;
                while ts[j - 1] > hi {
                    j -= 1;
                }
            }
            self.last_run = j - i;
            run(self, Some(b), i, j);
            i = j;
        }
    }

    /// Counts the rows `i` of `first..end` with `pass(i)` into group `g`
    /// (a [`BucketValue::Count`] plan), `ts` ascending as in a block;
    /// returns how many passed. `pass` is summed over each bucket's run of
    /// rows without a branch.
    ///
    /// When few rows pass (a quarter or fewer: a line filter or a label
    /// filter keeping rare rows, the common case), they are gathered first,
    /// branch-free, and only they are put in buckets: a walk over every
    /// bucket run of the block cost ~20 instructions a row, passing or not
    /// (callgrind, `sum by (app) (count_over_time({…} |= "…" [1m]))`).
    #[inline]
    pub fn count_rows(
        &mut self,
        g: usize,
        ts: &[i64],
        first: usize,
        end: usize,
        pass: impl Fn(usize) -> bool,
    ) -> u64 {
        if first >= end {
            return 0;
        }
        let mut passing = std::mem::take(&mut self.passing);
        passing.clear();
        passing.resize(end - first, 0);
        // Each row is written to the slot after the last passing one (a
        // row that does not pass is overwritten by the next): no branch.
        // `k` is at most the rows before `i`, so the slot is in bounds.
        // The first 64 rows decide whether to go on (a block where more
        // than a quarter of them pass is counted by runs, not gathered).
        let rows = end - first;
        let mut k = 0usize;
        let probe = first + rows.min(64);
        for i in first..probe {
            passing[k] = i as u32;
            k += usize::from(pass(i));
        }
        let mut sparse = k * 4 <= probe - first;
        if sparse {
            for i in probe..end {
                passing[k] = i as u32;
                k += usize::from(pass(i));
            }
            sparse = k * 4 <= rows;
        }
        if sparse {
            for &i in &passing[..k] {
                if let Some(b) = self.plan.bucket_of_near(ts[i as usize], self.last_bucket) {
                    self.last_bucket = b;
                    self.groups[g].1.add_count(b, 1);
                }
            }
            self.passing = passing;
            return k as u64;
        }
        self.passing = passing;
        let mut passed = 0u64;
        self.for_each_run(ts, first, end, |agg, b, i, j| {
            let n: u64 = (i..j).map(|r| u64::from(pass(r))).sum();
            if let Some(b) = b {
                agg.groups[g].1.add_count(b, n);
            }
            passed += n;
        });
        passed
    }

    /// [`Self::count_rows`] for rows given as a bitmap: row `first + r`
    /// passes when bit `r` of `marks` is set ([`super::entry_marks`]),
    /// `marked` of them. Few marked rows are visited bit by bit, no row
    /// test at all for the others; many are counted by bucket runs.
    pub fn count_marked(
        &mut self,
        g: usize,
        ts: &[i64],
        first: usize,
        end: usize,
        marks: &[u64],
        marked: usize,
    ) -> u64 {
        let rows = end.saturating_sub(first);
        if marked == rows {
            // Every row: each bucket run counts whole.
            self.for_each_run(ts, first, end, |agg, b, i, j| {
                if let Some(b) = b {
                    agg.groups[g].1.add_count(b, (j - i) as u64);
                }
            });
            return marked as u64;
        }
        if marked * 4 > rows {
            return self.count_rows(g, ts, first, end, |i| {
                super::entry_marks::is_marked(marks, i - first)
            });
        }
        for r in super::entry_marks::rows(marks) {
            if let Some(b) = self.plan.bucket_of_near(ts[first + r], self.last_bucket) {
                self.last_bucket = b;
                self.groups[g].1.add_count(b, 1);
            }
        }
        marked as u64
    }

    /// [`Self::count_rows`] of the rows of `first..end` set in `keep`:
    /// the mask read sixteen rows at a time into a bitmap, few kept rows
    /// then visited one by one ([`Self::count_marked`]).
    pub fn count_kept(
        &mut self,
        g: usize,
        ts: &[i64],
        first: usize,
        end: usize,
        keep: &[bool],
    ) -> u64 {
        if first >= end {
            return 0;
        }
        let mut marks = std::mem::take(&mut self.marks);
        let n = super::row_mask::to_marks(&keep[first..end], &mut marks);
        let counted = self.count_marked(g, ts, first, end, &marks, n);
        self.marks = marks;
        counted
    }

    /// Counts the rows `i` of `first..end` into groups by class (a
    /// [`BucketValue::Count`] plan), `ts` ascending as in a block: `class(i)`
    /// is the row's class below `groups.len()`, or `groups.len()` for a row
    /// not counted; `groups[c]` is class `c`'s group, made from `key(c)` when
    /// its first row is counted (`usize::MAX`: not made yet). Each bucket's
    /// run of rows is tallied per class without a branch; returns how many
    /// rows were counted.
    pub fn count_rows_by_class(
        &mut self,
        ts: &[i64],
        first: usize,
        end: usize,
        groups: &mut [usize],
        class: impl Fn(usize) -> u32,
        mut key: impl FnMut(u32) -> GroupKey,
    ) -> u64 {
        let skip = groups.len();
        let mut counts = vec![0u64; skip + 1];
        let mut passed = 0u64;
        self.for_each_run(ts, first, end, |agg, b, i, j| {
            let Some(b) = b else {
                passed += u64::from(class(i) as usize != skip);
                return;
            };
            for r in i..j {
                counts[class(r) as usize] += 1;
            }
            for (c, n) in counts[..skip].iter_mut().enumerate() {
                if *n == 0 {
                    continue;
                }
                if groups[c] == usize::MAX {
                    groups[c] = agg.group(key(c as u32));
                }
                agg.groups[groups[c]].1.add_count(b, *n);
                passed += *n;
                *n = 0;
            }
        });
        passed
    }

    /// Adds the rows `r` of `first..end` with `pass(r)` and value
    /// `value(r)` to group `g`, `ts` ascending as in a block, in row order
    /// (the order [`Self::add`] row by row would give); returns how many
    /// passed. Each bucket's run of rows is added at once.
    #[inline]
    pub fn add_rows(
        &mut self,
        g: usize,
        ts: &[i64],
        first: usize,
        end: usize,
        pass: impl Fn(usize) -> bool,
        value: impl Fn(usize) -> f64,
    ) -> u64 {
        let mut passed = 0u64;
        self.for_each_run(ts, first, end, |agg, b, i, j| {
            let rows = (i..j).filter(|&r| pass(r)).map(|r| (ts[r], value(r)));
            passed += match b {
                Some(b) => agg.groups[g].1.add_all(b, rows),
                None => rows.count() as u64,
            };
        });
        passed
    }

    /// Adds a row at `ts` with value `v` to group `g`.
    pub fn add(&mut self, g: usize, ts: i64, v: f64) {
        if let Some(b) = self.plan.bucket_of_near(ts, self.last_bucket) {
            self.last_bucket = b;
            self.groups[g].1.add(b, ts, v);
        }
    }
}

/// The value of `name` from a row's metadata (the last pair of that name)
/// or its stream labels.
pub(super) fn base_value<'v>(
    name: &str,
    md: &'v [(String, String)],
    labels: &'v Labels,
) -> Option<&'v str> {
    md.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .or_else(|| labels.get(name))
}

/// The group key of a row without fields.
pub(super) fn base_key(
    plan: &BucketPlan,
    md: &[(String, String)],
    labels: &std::sync::Arc<Labels>,
) -> GroupKey {
    match &plan.group_by {
        GroupBy::Labels(names) => GroupKey::Labels(
            names
                .iter()
                .map(|n| base_value(n, md, labels).map(str::to_string))
                .collect(),
        ),
        GroupBy::Stream => {
            let mut m: Vec<(String, String)> = Vec::with_capacity(md.len());
            for (k, v) in md {
                match m.iter_mut().find(|(mk, _)| mk == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => m.push((k.clone(), v.clone())),
                }
            }
            m.sort();
            GroupKey::Stream {
                labels: labels.clone(),
                metadata: m,
            }
        }
    }
}

/// Decodes every column the kept rows' templates use.
pub(super) fn decode_all_used(
    ev: &mut BlockEval<'_, '_>,
    keep: &[bool],
) -> Result<(), StorageError> {
    let nt = ev.infos.len();
    let mut used = vec![false; nt];
    let row_tpl = ev.r.row_templates();
    for (i, &k) in keep.iter().enumerate() {
        if k {
            used[row_tpl[i] as usize] = true;
        }
    }
    let heads = ev.r.template_heads().to_vec();
    for (t, h) in heads.iter().enumerate() {
        if used[t] {
            for &c in &h.slots {
                ev.values(c as usize)?;
                ev.value_index(c as usize);
            }
        }
    }
    Ok(())
}

/// The line length of row `i` (every column of its template decoded).
pub(super) fn line_len(ev: &BlockEval<'_, '_>, i: usize) -> usize {
    let t = ev.r.row_templates()[i] as usize;
    let mut n = ev.infos[t].const_len;
    for &c in &ev.r.template_heads()[t].slots {
        n += ev.value_ro(c as usize, i).len();
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::plan::BucketValue;

    /// Counting a block's rows a bucket run at a time gives what adding
    /// them one by one gives, rows outside every bucket included.
    #[test]
    fn count_rows_matches_adding_row_by_row() {
        let plan = BucketPlan {
            bounds: vec![10, 20, 30, 45, 60],
            group_by: GroupBy::Labels(Vec::new()),
            value: BucketValue::Count,
            top: None,
        };
        let ts: Vec<i64> = vec![
            0, 5, 10, 11, 12, 20, 20, 21, 29, 30, 31, 44, 45, 46, 59, 60, 61, 70,
        ];
        for (first, end) in [(0, ts.len()), (3, 9), (8, 17), (5, 5)] {
            // Every row, half, a third (bucket runs), a fifth and a ninth
            // (few enough rows to be put in buckets one by one).
            for (every, guess) in [1, 2, 3, 5, 9]
                .into_iter()
                .flat_map(|e| [(e, 1), (e, 3), (e, 40)])
            {
                let pass = |i: usize| i.is_multiple_of(every);
                let mut a = Agg::new(&plan);
                let g = a.group(GroupKey::Labels(Vec::new()));
                // Start from stale guesses, as a later block would.
                a.last_bucket = 3;
                a.last_run = guess;
                let n = a.count_rows(g, &ts, first, end, pass);
                let mut b = Agg::new(&plan);
                let h = b.group(GroupKey::Labels(Vec::new()));
                let mut m = 0;
                for (i, &t) in ts.iter().enumerate().take(end).skip(first) {
                    if pass(i) {
                        m += 1;
                        b.add(h, t, 1.0);
                    }
                }
                assert_eq!(n, m, "rows {first}..{end} every {every} guess {guess}");
                let counts = |x: &Agg<'_>| -> Vec<u64> {
                    (0..plan.buckets()).map(|k| x.groups[0].1.rows(k)).collect()
                };
                assert_eq!(
                    counts(&a),
                    counts(&b),
                    "rows {first}..{end} every {every} guess {guess}"
                );
            }
        }
    }

    /// Bucket runs found from a guessed run length: blocks of random
    /// ascending timestamps (ties, gaps, rows before and after every
    /// bucket) counted with stale guesses of every size give the row-by-row
    /// counts.
    #[test]
    fn guessed_run_ends_count_every_row_once() {
        let plan = BucketPlan {
            bounds: (0..=40).map(|k| 1_000 + k * 100).collect(),
            group_by: GroupBy::Labels(Vec::new()),
            value: BucketValue::Count,
            top: None,
        };
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..200 {
            let rows = 1 + next(400) as usize;
            let step = 1 + next(60) as i64;
            let mut t = 900 + next(200) as i64;
            let ts: Vec<i64> = (0..rows)
                .map(|_| {
                    t += next(step as u64 + 1) as i64;
                    t
                })
                .collect();
            let mut a = Agg::new(&plan);
            let g = a.group(GroupKey::Labels(Vec::new()));
            a.last_bucket = next(40) as usize;
            a.last_run = 1 + next(100) as usize;
            // Every row (bucket runs), or a random share of them (down to
            // few enough to be put in buckets one by one).
            let share = [1, 1, 2, 4, 10, 50][next(6) as usize];
            let keep: Vec<bool> = (0..rows).map(|_| next(share) == 0).collect();
            let n = a.count_rows(g, &ts, 0, rows, |i| keep[i]);
            let mut b = Agg::new(&plan);
            let h = b.group(GroupKey::Labels(Vec::new()));
            for (&t, _) in ts.iter().zip(&keep).filter(|(_, &k)| k) {
                b.add(h, t, 1.0);
            }
            assert_eq!(n, keep.iter().filter(|&&k| k).count() as u64);
            let counts = |x: &Agg<'_>| -> Vec<u64> {
                (0..plan.buckets()).map(|k| x.groups[0].1.rows(k)).collect()
            };
            assert_eq!(counts(&a), counts(&b), "{ts:?}");
            // The same rows of a window, given as a bitmap (few: bit by
            // bit; many: bucket runs).
            let first = next(rows as u64) as usize;
            let end = first + next((rows - first) as u64 + 1) as usize;
            let window: Vec<u32> = (first..end).map(|i| u32::from(keep[i])).collect();
            let mut marks = Vec::new();
            let marked = super::super::entry_marks::mark(&window, &[1], &mut marks);
            let mut c = Agg::new(&plan);
            let g = c.group(GroupKey::Labels(Vec::new()));
            c.last_bucket = next(40) as usize;
            let n = c.count_marked(g, &ts, first, end, &marks, marked);
            let mut d = Agg::new(&plan);
            let h = d.group(GroupKey::Labels(Vec::new()));
            for i in (first..end).filter(|&i| keep[i]) {
                d.add(h, ts[i], 1.0);
            }
            assert_eq!(n, window.iter().sum::<u32>() as u64);
            assert_eq!(counts(&c), counts(&d), "{ts:?} {first}..{end}");
        }
    }

    /// Counting rows per class gives what adding each row to its class's
    /// group gives; a class no row falls in makes no group, and rows of the
    /// skip class are not counted.
    #[test]
    fn count_rows_by_class_matches_adding_row_by_row() {
        let plan = BucketPlan {
            bounds: vec![10, 20, 30, 45, 60],
            group_by: GroupBy::Labels(vec!["level".into()]),
            value: BucketValue::Count,
            top: None,
        };
        let ts: Vec<i64> = vec![
            0, 5, 10, 11, 12, 20, 20, 21, 29, 30, 31, 44, 45, 46, 59, 60, 61, 70,
        ];
        // Classes 0, 1 and 3 of 4 (2 is never used); 4 = not counted.
        let class_of = |i: usize| [0u32, 1, 3, 4][i % 4];
        let key = |c: u32| GroupKey::Labels(vec![Some(format!("c{c}"))]);
        for (first, end) in [(0, ts.len()), (3, 9), (8, 17), (5, 5)] {
            let mut a = Agg::new(&plan);
            a.last_bucket = 3;
            let mut groups = vec![usize::MAX; 4];
            let n = a.count_rows_by_class(&ts, first, end, &mut groups, class_of, key);
            let mut b = Agg::new(&plan);
            let mut m = 0;
            for (i, &t) in ts.iter().enumerate().take(end).skip(first) {
                let c = class_of(i);
                if c < 4 {
                    m += 1;
                    let g = b.group(key(c));
                    b.add(g, t, 1.0);
                }
            }
            assert_eq!(n, m, "rows {first}..{end}");
            assert_eq!(groups[2], usize::MAX, "no row of class 2");
            let counts = |x: &Agg<'_>| -> Vec<(GroupKey, Vec<u64>)> {
                let mut v: Vec<_> = x
                    .groups
                    .iter()
                    .map(|(k, d)| (k.clone(), (0..plan.buckets()).map(|j| d.rows(j)).collect()))
                    .filter(|(_, c): &(GroupKey, Vec<u64>)| c.iter().any(|&n| n > 0))
                    .collect();
                v.sort_by(|x, y| format!("{:?}", x.0).cmp(&format!("{:?}", y.0)));
                v
            };
            assert_eq!(counts(&a), counts(&b), "rows {first}..{end}");
        }
    }
}
