//! Bucket plans (range aggregations) read by time legs, in parallel.
//!
//! A bucket plan's `bounds` are the elementary buckets the engine cut time
//! into from every step's window `(t - range - offset, t - offset]`
//! (`engine::pushdown::metric`): a row at `ts` belongs to the one bucket
//! with `bounds[i] < ts <= bounds[i + 1]`, and each output step's value is
//! computed by the engine from the buckets its window covers. So the plan's
//! buckets can be split into runs of consecutive buckets — **legs** — each
//! read by its own SQL query over only the rows of its buckets: every row
//! is in exactly one leg's bucket range, no row is read twice, and a
//! group's buckets from all legs, put side by side, are the buckets one
//! query gives. No leg reaches back before its first bound: the reach-back
//! of a step's window (`range`, `offset`) is already in the bounds, and a
//! window spanning a cut takes its first buckets from one leg and its last
//! from the next. Step alignment, windows, groups and values are therefore
//! those of one read; only which request brings each bucket changes.
//!
//! Legs are cut only for plans spanning at least two [`MetricLegs::unit`]s
//! (UTC days by default, the `logs` table's partitions), into at most
//! [`MetricLegs::max_parallel`] legs of about equal length, each cut at the
//! first bound at or after the day start nearest to an even split. All
//! legs are read at once, one HTTP request each; their answers are merged
//! per group in bucket order (a group absent from a leg has empty buckets
//! there, as in one read), and residual rows per stream.

use crate::cancel::check_cancel;
use crate::client::{Client, ReadProgress, Request};
use crate::lines::DAY_NS;
use crate::rows::{
    f64_of, i64_of, i64_of_value, key_of, pairs_of, residual_entries, u64_of, u64_of_value,
};
use crate::sql::{self, RowMask};
use crate::stats::Counters;
use crate::Error;
use runakefli_model::plan::{
    BucketData, BucketGroup, BucketPlan, GroupBy, GroupKey, PlanOutput, QueryPlan, ResidualRows,
};
use runakefli_model::{StreamId, StreamInfo, Timestamp};
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default of [`crate::ClickHouseBackend::with_residual_budget`]: the bytes of
/// residual rows (lines and metadata, 48 bytes a row and a pair on top) a
/// bucket plan's answer may hold, as the embedded store bounds its own.
pub const DEFAULT_RESIDUAL_BUDGET: usize = 32 << 20;

/// Default of [`MetricLegs::max_parallel`]: 1, every plan in one read,
/// until legs are measured to help on a real `clickhouse-server` (one
/// ClickHouse query already reads with `max_threads` threads, and each leg
/// pays a query's fixed cost; docs/clickhouse.md).
pub const DEFAULT_MAX_PARALLEL_LEGS: usize = 1;

/// How bucket plans over long ranges are split into legs read at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricLegs {
    /// At most this many legs per plan, all read at once (one HTTP request
    /// to ClickHouse each); 1 (or 0): every plan in one read.
    pub max_parallel: usize,
    /// Nanoseconds: legs are cut near multiples of it since the epoch, and
    /// a plan is split only into legs about this long or longer (a plan
    /// spanning less than two is read whole). [`DAY_NS`] by default.
    pub unit: i64,
}

impl Default for MetricLegs {
    /// [`DEFAULT_MAX_PARALLEL_LEGS`] legs of at least about a UTC day.
    fn default() -> Self {
        MetricLegs {
            max_parallel: DEFAULT_MAX_PARALLEL_LEGS,
            unit: DAY_NS,
        }
    }
}

impl MetricLegs {
    /// The legs of a plan with `bounds`, as ranges of bucket indexes (leg
    /// `a..b` counts the rows in `(bounds[a], bounds[b]]`): consecutive,
    /// non-empty, covering every bucket once, in time order. One leg when
    /// the bounds span less than two units or splitting is off.
    pub fn split(&self, bounds: &[Timestamp]) -> Vec<Range<usize>> {
        let n = bounds.len().saturating_sub(1);
        if n < 2 {
            return std::iter::once(0..n).collect();
        }
        let unit = i128::from(self.unit.max(1));
        let (first, span) = (
            i128::from(bounds[0]),
            i128::from(bounds[n]) - i128::from(bounds[0]),
        );
        let legs = (span / unit).min(self.max_parallel as i128).min(n as i128);
        if legs < 2 {
            return std::iter::once(0..n).collect();
        }
        let mut cuts = vec![0];
        for i in 1..legs {
            // The unit start nearest to an even split, then the first bound at or after it.
            let even = first + span * i / legs;
            let down = even - even.rem_euclid(unit);
            let at = if even - down >= (unit + 1) / 2 {
                down + unit
            } else {
                down
            };
            let k = bounds.partition_point(|&b| i128::from(b) < at);
            if k > cuts[cuts.len() - 1] && k < n {
                cuts.push(k);
            }
        }
        cuts.push(n);
        cuts.windows(2).map(|w| w[0]..w[1]).collect()
    }
}

/// The plan reading only the buckets `leg` of `b` (the plan's output) and
/// that output: the bounds `bounds[leg.start..=leg.end]`, the time range
/// clipped to them.
pub(crate) fn leg_plan(
    plan: &QueryPlan,
    b: &BucketPlan,
    leg: Range<usize>,
) -> (QueryPlan, BucketPlan) {
    let lb = BucketPlan {
        bounds: b.bounds[leg.start..=leg.end].to_vec(),
        group_by: b.group_by.clone(),
        value: b.value,
        top: None,
    };
    let (lo, hi) = (lb.bounds[0], lb.bounds[lb.bounds.len() - 1]);
    let p = QueryPlan {
        start: plan.start.max(lo.saturating_add(1)),
        end: plan.end.min(hi.saturating_add(1)),
        output: PlanOutput::Buckets(lb.clone()),
        ..plan.clone()
    };
    (p, lb)
}

/// What one leg (or one whole read) of a bucket plan answered.
#[derive(Debug, Default)]
pub(crate) struct BucketAnswer {
    /// One entry per group with rows, the leg's buckets only.
    pub(crate) groups: Vec<BucketGroup>,
    /// Rows left to the engine, per stream.
    pub(crate) residual: Vec<ResidualRows>,
}

/// Puts `src` (a leg's buckets) into `dst` (the plan's) from bucket `at` on.
fn place(dst: &mut BucketData, src: BucketData, at: usize) -> Result<(), Error> {
    fn put<T>(d: &mut [T], s: Vec<T>, at: usize) {
        d[at..].iter_mut().zip(s).for_each(|(d, s)| *d = s);
    }
    match (dst, src) {
        (BucketData::Count(d), BucketData::Count(s)) => put(d, s, at),
        (BucketData::Sum(dc, d), BucketData::Sum(sc, s))
        | (BucketData::Min(dc, d), BucketData::Min(sc, s))
        | (BucketData::Max(dc, d), BucketData::Max(sc, s)) => {
            put(dc, sc, at);
            put(d, s, at);
        }
        (BucketData::Values(d), BucketData::Values(s)) => put(d, s, at),
        (BucketData::Points(d), BucketData::Points(s)) => put(d, s, at),
        _ => return Err(Error::Internal("legs of different bucket kinds".into())),
    }
    Ok(())
}

/// The legs' answers (each with the first bucket it holds) as one answer
/// over all `b`'s buckets: each group's buckets side by side, a group
/// absent from a leg empty there; residual rows gathered per stream.
pub(crate) fn merge(
    b: &BucketPlan,
    legs: Vec<(usize, BucketAnswer)>,
) -> Result<BucketAnswer, Error> {
    if legs.len() == 1 {
        return Ok(legs.into_iter().next().map(|(_, a)| a).unwrap_or_default());
    }
    let mut out = BucketAnswer::default();
    let mut groups: HashMap<GroupKey, usize> = HashMap::new();
    let mut streams: HashMap<StreamId, usize> = HashMap::new();
    for (at, leg) in legs {
        for g in leg.groups {
            let i = *groups.entry(g.key.clone()).or_insert_with(|| {
                out.groups.push(BucketGroup {
                    key: g.key,
                    data: BucketData::new(b.value, b.buckets()),
                });
                out.groups.len() - 1
            });
            place(&mut out.groups[i].data, g.data, at)?;
        }
        for mut r in leg.residual {
            match streams.get(&r.stream.id) {
                Some(&i) => out.residual[i].entries.append(&mut r.entries),
                None => {
                    streams.insert(r.stream.id, out.residual.len());
                    out.residual.push(r);
                }
            }
        }
    }
    Ok(out)
}

/// Reads bucket plans: ClickHouse through `client`, in the legs `legs`
/// cuts, declined past `residual_budget`, legs and rows counted in
/// `counters`.
pub(crate) struct BucketReader<'a> {
    /// Where the rows are read.
    pub client: &'a Client,
    /// Where legs and rows are counted.
    pub counters: &'a Counters,
    /// How plans are split into legs.
    pub legs: MetricLegs,
    /// Bytes of residual rows an answer may hold; past them the plan is
    /// declined ([`Error::Declined`]).
    pub residual_budget: usize,
}

impl BucketReader<'_> {
    /// A bucket plan's groups and residual rows, read by the legs of
    /// [`MetricLegs::split`] at once; `stream` gives a row's stream.
    pub(crate) fn read(
        &self,
        plan: &QueryPlan,
        b: &BucketPlan,
        mask: &RowMask,
        stream: &(dyn Fn(u64) -> Result<StreamInfo, Error> + Sync),
        progress: &ReadProgress,
    ) -> Result<BucketAnswer, Error> {
        let legs = self.legs.split(&b.bounds);
        // Residual bytes held by every leg: past the budget the plan is declined.
        let held = AtomicUsize::new(0);
        if legs.len() == 1 {
            return self.read_bucket_leg(plan, b, mask, stream, &held, progress);
        }
        let read = |leg: &Range<usize>| {
            let (p, lb) = leg_plan(plan, b, leg.clone());
            self.read_bucket_leg(&p, &lb, mask, stream, &held, progress)
        };
        let answers: Vec<Result<BucketAnswer, Error>> = std::thread::scope(|s| {
            let others: Vec<_> = legs[1..]
                .iter()
                .map(|leg| {
                    std::thread::Builder::new()
                        .name("clickhouse-leg".into())
                        .spawn_scoped(s, move || read(leg))
                        .map_err(|_| leg)
                })
                .collect();
            let mut all = vec![read(&legs[0])];
            for h in others {
                all.push(match h {
                    Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                    // No thread to be had: read it here.
                    Err(leg) => read(leg),
                });
            }
            all
        });
        let mut done = Vec::with_capacity(legs.len());
        for (leg, a) in legs.iter().zip(answers) {
            done.push((leg.start, a?));
        }
        merge(b, done)
    }

    /// One SQL read of bucket plan `plan` (`b` its output): its groups and
    /// residual rows, read as they arrive. Residual rows add their cost to
    /// `residual_bytes` (shared by the plan's legs); past the backend's
    /// residual budget the read stops with [`Error::Declined`], and the
    /// engine scans instead (streamed, so bounded).
    fn read_bucket_leg(
        &self,
        plan: &QueryPlan,
        b: &BucketPlan,
        mask: &RowMask,
        stream: &(dyn Fn(u64) -> Result<StreamInfo, Error> + Sync),
        residual_bytes: &AtomicUsize,
        progress: &ReadProgress,
    ) -> Result<BucketAnswer, Error> {
        let c = self.counters;
        c.metric_legs.fetch_add(1, Ordering::Relaxed);
        let mut out = BucketAnswer::default();
        let mut index: HashMap<GroupKey, usize> = HashMap::new();
        let mut residual_of: HashMap<StreamId, usize> = HashMap::new();
        let q = sql::buckets_query(plan, mask)?;
        check_cancel(plan)?;
        let request = Request {
            deadline: plan.deadline,
            progress: Some(progress),
            ..Request::default()
        };
        self.client.each_row(&q, &request, &mut |r| {
            // The client went away: stop reading (the connection is dropped).
            check_cancel(plan)?;
            c.plan_rows.fetch_add(1, Ordering::Relaxed);
            if r.get("res").is_some_and(|v| u64_of_value(v) == Some(1)) {
                let id = u64_of(&r, "rsid")?;
                let mut entries = residual_entries(&r["residual"])?;
                c.residual_rows
                    .fetch_add(entries.len() as u64, Ordering::Relaxed);
                let bytes: usize = entries.iter().map(residual_cost).sum();
                let held = residual_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
                if held > self.residual_budget {
                    return Err(Error::Declined(format!(
                        "the rows SQL leaves to the engine pass {} bytes",
                        self.residual_budget
                    )));
                }
                match residual_of.get(&id) {
                    Some(&i) => out.residual[i].entries.append(&mut entries),
                    None => {
                        residual_of.insert(id, out.residual.len());
                        out.residual.push(ResidualRows {
                            stream: stream(id)?,
                            entries,
                        });
                    }
                }
                return Ok(true);
            }
            group_row(b, &r, stream, &mut out.groups, &mut index)?;
            Ok(true)
        })?;
        Ok(out)
    }
}

/// What holding a residual row costs, counted as the embedded store counts
/// it: its heap data and 48 bytes.
fn residual_cost(e: &runakefli_model::Entry) -> usize {
    e.heap_bytes() + 48
}

/// Adds one (group, bucket) row of a bucket plan's answer to `groups`.
fn group_row(
    b: &BucketPlan,
    r: &Value,
    stream: &(dyn Fn(u64) -> Result<StreamInfo, Error> + Sync),
    groups: &mut Vec<BucketGroup>,
    index: &mut HashMap<GroupKey, usize>,
) -> Result<(), Error> {
    let key = match b.group_by {
        GroupBy::Stream => GroupKey::Stream {
            labels: stream(u64_of(r, "stream_id")?)?.labels,
            metadata: pairs_of(&r["meta"])?,
        },
        GroupBy::Labels(_) => GroupKey::Labels(key_of(&r["key"])?),
    };
    let g = *index.entry(key.clone()).or_insert_with(|| {
        groups.push(BucketGroup {
            key,
            data: BucketData::new(b.value, b.buckets()),
        });
        groups.len() - 1
    });
    let bucket = usize::try_from(i64_of(r, "bucket")?)
        .ok()
        .filter(|&i| i < b.buckets())
        .ok_or_else(|| Error::Decode(format!("bucket of {r}")))?;
    add_row(&mut groups[g].data, bucket, r)
}

/// Adds answer row `r` (one per group and bucket) to `bucket` of `data`.
fn add_row(data: &mut BucketData, bucket: usize, r: &Value) -> Result<(), Error> {
    let rows = u64_of(r, "rows")?;
    match data {
        BucketData::Count(c) => c[bucket] += rows,
        BucketData::Sum(c, s) => {
            c[bucket] += rows;
            s[bucket] += u64_of(r, "bytes")? as f64;
        }
        // One answer row per (group, bucket): its extreme.
        BucketData::Min(c, m) | BucketData::Max(c, m) => {
            c[bucket] += rows;
            m[bucket] = f64_of(&r["unwrapped"])
                .ok_or_else(|| Error::Decode(format!("unwrapped in {r}")))?;
        }
        BucketData::Values(vs) => {
            let vals = r["unwrapped"]
                .as_array()
                .ok_or_else(|| Error::Decode(format!("unwrapped in {r}")))?;
            for v in vals {
                vs[bucket].push(
                    f64_of(v).ok_or_else(|| Error::Decode(format!("unwrapped value in {r}")))?,
                );
            }
        }
        BucketData::Points(ps) => {
            let bad = || Error::Decode(format!("unwrapped points in {r}"));
            for p in r["unwrapped"].as_array().ok_or_else(bad)? {
                let [ts, v] = p.as_array().map(Vec::as_slice).ok_or_else(bad)? else {
                    return Err(bad());
                };
                let ts = i64_of_value(ts).ok_or_else(bad)?;
                ps[bucket].push((ts, f64_of(v).ok_or_else(bad)?));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::plan::BucketValue;
    use runakefli_model::{Labels, TenantId};
    use std::sync::Arc;

    const D: i64 = DAY_NS;
    const M: i64 = 60_000_000_000;

    /// The bounds the engine makes for `steps` from `start` to `end` (Loki's
    /// alignment: `start`, `start + step`, …) with windows
    /// `(t - range - offset, t - offset]` (`engine::pushdown::metric`).
    fn engine_bounds(start: i64, end: i64, step: i64, range: i64, offset: i64) -> Vec<i64> {
        let mut b: Vec<i64> = (0..)
            .map(|i| start + i * step)
            .take_while(|&t| t <= end)
            .flat_map(|t| [t - range - offset, t - offset])
            .collect();
        b.sort_unstable();
        b.dedup();
        b
    }

    /// One leg of `n` buckets.
    fn one(n: usize) -> Vec<Range<usize>> {
        std::iter::once(0..n).collect()
    }

    fn legs(max_parallel: usize, unit: i64) -> MetricLegs {
        MetricLegs { max_parallel, unit }
    }

    /// Every bucket in exactly one leg, legs in order and non-empty.
    fn assert_partition(l: &[Range<usize>], buckets: usize) {
        assert_eq!(l.first().unwrap().start, 0);
        assert_eq!(l.last().unwrap().end, buckets);
        assert!(l.windows(2).all(|w| w[0].end == w[1].start), "{l:?}");
        assert!(l.iter().all(|r| r.start < r.end), "{l:?}");
    }

    /// Four legs at most (the default reads every plan whole).
    fn four() -> MetricLegs {
        MetricLegs {
            max_parallel: 4,
            ..MetricLegs::default()
        }
    }

    #[test]
    fn legs_are_runs_of_buckets_cut_at_day_starts() {
        // Seven days at a 1m step, a 5m range: cuts at the day starts
        // nearest to quarters of the bounds' span (7 days and 5m from
        // 5m before the first step: 1.75 days and 1m15s before it → day
        // 2; 3.5 days and 2m30s → day 3; 5.25 days … → day 5).
        let d0 = 20_000 * D;
        let b = engine_bounds(d0, d0 + 7 * D, M, 5 * M, 0);
        let l = four().split(&b);
        assert_eq!(l.len(), 4);
        assert_partition(&l, b.len() - 1);
        let cuts: Vec<i64> = l[1..].iter().map(|r| b[r.start]).collect();
        assert_eq!(cuts, [d0 + 2 * D, d0 + 3 * D, d0 + 5 * D]);

        // A step that never lands on a day start (7m, range 10m, offset
        // 3m): each cut is the first bound at or after a day start.
        let b = engine_bounds(d0 + 11, d0 + 3 * D, 7 * M, 10 * M, 3 * M);
        let l = four().split(&b);
        assert_eq!(l.len(), 3);
        assert_partition(&l, b.len() - 1);
        for r in &l[1..] {
            let k = r.start;
            let day = b[k] - b[k].rem_euclid(D);
            assert!(b[k] > day && b[k - 1] < day, "{}", b[k] - d0);
        }

        // Bounds spanning under two days (the window's reach-back
        // counts), one leg; two days, two; splitting off, one leg.
        let b = engine_bounds(d0, d0 + 2 * D - 2 * M, M, M, 0);
        assert_eq!(four().split(&b), one(b.len() - 1));
        let b = engine_bounds(d0, d0 + 2 * D - M, M, M, 0);
        assert_eq!(four().split(&b), [0..1441, 1441..2880]);
        let b = engine_bounds(d0, d0 + 30 * D, 10 * M, 10 * M, 0);
        assert_eq!(legs(1, D).split(&b), one(b.len() - 1));
        assert_eq!(legs(0, D).split(&b), one(b.len() - 1));
        assert_eq!(MetricLegs::default().split(&b), one(b.len() - 1));
        // Never more legs than buckets; a cut with no bound inside the
        // range after it is dropped.
        assert_eq!(legs(8, D).split(&[0, 5 * D, 9 * D]), [0..1, 1..2]);
        assert_eq!(legs(8, D).split(&[0, D, 9 * D]), one(2));
        assert_eq!(legs(8, D).split(&[0, 9 * D]), one(1));
        assert_eq!(legs(8, D).split(&[5]), one(0));
        // Before the epoch, days are UTC days too.
        let b = engine_bounds(-3 * D, 0, M, M, 0);
        let l = legs(3, D).split(&b);
        let cuts: Vec<i64> = l[1..].iter().map(|r| b[r.start]).collect();
        assert_eq!(cuts, [-2 * D, -D]);

        // Whatever the step, range, offset, span and parallelism: legs
        // cover every bucket once, at most `max_parallel` of them.
        for (span, step, range, offset) in [
            (7 * D, M, 5 * M, 0),
            (3 * D + 17, 13 * M, M, 0),
            (40 * D, 3_600 * 1_000_000_000, 2 * D, 7 * M),
            (2 * D, 2 * D, 3 * D, 0),
            (5 * D + 1, 11 * M, 29 * M, 2 * D),
        ] {
            let b = engine_bounds(d0 + 5, d0 + 5 + span, step, range, offset);
            for p in [2, 3, 4, 16] {
                for unit in [D, 3 * 3_600 * 1_000_000_000] {
                    let l = legs(p, unit).split(&b);
                    assert!(l.len() <= p);
                    assert_partition(&l, b.len() - 1);
                }
            }
        }
    }

    /// Rows counted into a whole plan's buckets, and counted leg by leg
    /// (each leg only the rows in its own bucket range, into its own
    /// buckets) then merged, give the same groups; so does every step's
    /// window summed from them, windows spanning a cut included.
    #[test]
    fn legs_merged_are_the_whole_plans_buckets() {
        let d0 = 20_000 * D;
        let (start, end, step, range, offset) = (d0 + 3 * M, d0 + 5 * D, 17 * M, 90 * M, 5 * M);
        let bounds = engine_bounds(start, end, step, range, offset);
        let labels = |s: &str| Arc::new(Labels::parse(s).unwrap());
        let keys = [
            GroupKey::Labels(vec![Some("a".into())]),
            GroupKey::Labels(vec![None]),
            GroupKey::Stream {
                labels: labels(r#"{app="x"}"#),
                metadata: vec![("k".into(), "v".into())],
            },
        ];
        // Rows at every bound and a nanosecond each side; the third group
        // only on the last day (absent from the first leg).
        let mut rows: Vec<(usize, i64)> = Vec::new();
        for (i, &t) in bounds.iter().enumerate() {
            for (j, ts) in [t - 1, t, t + 1].into_iter().enumerate() {
                rows.push(((i + j) % 2, ts));
                if ts > d0 + 4 * D {
                    rows.push((2, ts));
                }
            }
        }
        for value in [BucketValue::Count, BucketValue::Points] {
            let count = |b: &[i64]| {
                let plan = BucketPlan {
                    bounds: b.to_vec(),
                    group_by: GroupBy::Stream,
                    value,
                    top: None,
                };
                let mut groups: Vec<BucketGroup> = Vec::new();
                for &(g, ts) in &rows {
                    let Some(k) = plan.bucket_of(ts) else {
                        continue;
                    };
                    let i = match groups.iter().position(|x| x.key == keys[g]) {
                        Some(i) => i,
                        None => {
                            groups.push(BucketGroup {
                                key: keys[g].clone(),
                                data: BucketData::new(value, plan.buckets()),
                            });
                            groups.len() - 1
                        }
                    };
                    groups[i].data.add(k, ts, ts as f64);
                }
                BucketAnswer {
                    groups,
                    residual: Vec::new(),
                }
            };
            let plan = BucketPlan {
                bounds: bounds.clone(),
                group_by: GroupBy::Stream,
                value,
                top: None,
            };
            let whole = count(&bounds);
            for p in [2, 3, 4] {
                let l = legs(p, D).split(&bounds);
                assert_eq!(l.len(), p);
                let parts: Vec<(usize, BucketAnswer)> = l
                    .iter()
                    .map(|r| (r.start, count(&bounds[r.start..=r.end])))
                    .collect();
                // The third group is absent from the first leg.
                assert!(parts[0].1.groups.iter().all(|g| g.key != keys[2]));
                let merged = merge(&plan, parts).unwrap();
                assert_eq!(merged.groups.len(), whole.groups.len());
                for g in &whole.groups {
                    let m = merged.groups.iter().find(|x| x.key == g.key).unwrap();
                    assert_eq!(m.data, g.data, "{:?} in {p} legs", g.key);
                }
            }
        }
    }

    #[test]
    fn residual_rows_of_legs_are_gathered_per_stream() {
        let stream = |id| StreamInfo {
            id,
            labels: Arc::new(Labels::parse(&format!(r#"{{s="{id}"}}"#)).unwrap()),
        };
        let entry = |ts| runakefli_model::Entry {
            ts,
            line: String::new(),
            metadata: Vec::new(),
        };
        let res = |id, ts: &[i64]| ResidualRows {
            stream: stream(id),
            entries: ts.iter().map(|&t| entry(t)).collect(),
        };
        let plan = BucketPlan {
            bounds: vec![0, 10, 20, 30],
            group_by: GroupBy::Labels(Vec::new()),
            value: BucketValue::Count,
            top: None,
        };
        let leg = |r: Vec<ResidualRows>| BucketAnswer {
            groups: Vec::new(),
            residual: r,
        };
        let m = merge(
            &plan,
            vec![
                (0, leg(vec![res(1, &[5]), res(2, &[7])])),
                (1, leg(vec![res(2, &[15, 12])])),
                (2, leg(vec![res(3, &[25])])),
            ],
        )
        .unwrap();
        let got: Vec<(u64, Vec<i64>)> = m
            .residual
            .iter()
            .map(|r| (r.stream.id, r.entries.iter().map(|e| e.ts).collect()))
            .collect();
        assert_eq!(got, [(1, vec![5]), (2, vec![7, 15, 12]), (3, vec![25])]);
    }

    #[test]
    fn a_leg_plan_reads_its_buckets_only() {
        let plan = QueryPlan {
            tenant: TenantId::default_tenant(),
            selector: Vec::new(),
            start: 1,
            end: 41,
            line_filters: Vec::new(),
            fields: None,
            output: PlanOutput::Lines {
                limit: 1,
                direction: runakefli_model::Direction::Backward,
            },
            deadline: None,
            cancel: None,
        };
        let b = BucketPlan {
            bounds: vec![0, 10, 20, 30, 40],
            group_by: GroupBy::Stream,
            value: BucketValue::LineBytes,
            top: None,
        };
        let (p, lb) = leg_plan(&plan, &b, 1..3);
        assert_eq!(lb.bounds, [10, 20, 30]);
        // Rows in (10, 30]: start 11 inclusive, end 31 exclusive.
        assert_eq!((p.start, p.end), (11, 31));
        assert!(matches!(p.output, PlanOutput::Buckets(ref x) if x.bounds == lb.bounds));
        let (p, _) = leg_plan(&plan, &b, 0..4);
        assert_eq!((p.start, p.end), (1, 41));
    }
}
