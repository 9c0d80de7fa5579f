//! Range aggregations: `count_over_time`, `rate`, `bytes_*`, the unwrapped
//! `*_over_time` family, `rate_counter` and `absent_over_time`. Windows are
//! `(t - range - offset, t - offset]` for every step `t`.

use super::points;
use super::{Ctx, SeriesBudget, StepSeries};
use crate::columnar::SeriesPoints;
use crate::error::EngineError;
use crate::labelset::{FastMap, LabelSet};
use crate::parallel::map_shards;
use crate::pipeline::convert::{parse_bytes, parse_duration, parse_float};
use crate::pipeline::label_filter::LabelFilter;
use crate::pipeline::labels::{LabelsBuilder, ERROR_DETAILS_LABEL, ERROR_LABEL};
use crate::pipeline::{required_substrings, Pipeline};
use crate::result::QueryStats;
use runakefli_logql::{Grouping, LogRange, RangeOp, UnwrapConversion};
use runakefli_model::{Direction, MatchOp, ScanControl, ScanRequest, Shard, Timestamp};
use std::collections::HashMap;

/// Error name set when an unwrapped label is not a number.
pub const ERR_SAMPLE_EXTRACTION: &str = "SampleExtractionErr";

/// Loki's message for a series that still carries `__error__`.
pub fn pipeline_error(err: &str, series: &LabelSet) -> EngineError {
    EngineError::BadRequest(format!(
        "pipeline error: '{err}' for series: '{series}'.\nUse a label filter to intentionally skip this error. (e.g | __error__!=\"{err}\").\nTo skip all potential errors you can match empty errors.(e.g __error__=\"\")\nThe label filter can also be specified after unwrap. (e.g | unwrap latency | __error__=\"\" )\n"
    ))
}

/// The labels a series keeps after a range aggregation's grouping (error
/// labels always stay; the unwrapped label goes without a `by`).
pub(crate) fn reduce(
    labels: &LabelSet,
    grouping: Option<&Grouping>,
    unwrap_label: Option<&str>,
) -> LabelSet {
    // A row with an error keeps all its labels, the unwrapped one too: Loki
    // returns them before grouping so that the error is not lost.
    if labels.get(ERROR_LABEL).is_some() {
        return labels.clone();
    }
    let keep_err = |k: &str| k == ERROR_LABEL || k == ERROR_DETAILS_LABEL;
    let pairs: Vec<(String, String)> = match grouping {
        Some(g) if !g.without => labels
            .pairs()
            .iter()
            .filter(|(k, _)| g.labels.iter().any(|l| l == k) || keep_err(k))
            .cloned()
            .collect(),
        Some(g) => labels
            .pairs()
            .iter()
            .filter(|(k, _)| !g.labels.iter().any(|l| l == k) && Some(k.as_str()) != unwrap_label)
            .cloned()
            .collect(),
        None => match unwrap_label {
            Some(u) => labels
                .pairs()
                .iter()
                .filter(|(k, _)| k != u)
                .cloned()
                .collect(),
            None => return labels.clone(),
        },
    };
    LabelSet::from_sorted(pairs)
}

/// Evaluates one range aggregation over all steps: through a bucket plan
/// when the backend answers one (`top`: see
/// [`crate::pushdown::metric::range_series`]), else scanned.
pub(crate) fn eval(
    ctx: &mut Ctx,
    op: RangeOp,
    r: &LogRange,
    param: Option<f64>,
    grouping: Option<&Grouping>,
    top: Option<crate::pushdown::metric::TopWanted>,
) -> Result<Vec<StepSeries>, EngineError> {
    if let Some(series) = crate::pushdown::metric::range_series(ctx, op, r, param, grouping, top)? {
        ctx.points
            .charge(series.len().saturating_mul(ctx.steps.len()))?;
        return Ok(series);
    }
    eval_scanned(ctx, op, r, param, grouping)
}

/// [`eval`] without the bucket plan: the columnar path when it answers, the
/// plain path otherwise.
fn eval_scanned(
    ctx: &mut Ctx,
    op: RangeOp,
    r: &LogRange,
    param: Option<f64>,
    grouping: Option<&Grouping>,
) -> Result<Vec<StepSeries>, EngineError> {
    // Strict: a failing row's series carries all its labels (see `reduce`),
    // which only the plain path keeps, so errors are left to it.
    if let Some(series) = crate::columnar::range_series(ctx, op, r, grouping, true)? {
        return finish_held(ctx, op, r, param, series);
    }
    let shared: &Ctx = ctx;
    let parts = map_shards(|shard| scan_shard(shared, op, r, grouping, shard));
    // Each shard's series were charged [`points::SERIES_POINTS`] while it
    // scanned; given back with the samples once the step values are made.
    let overhead = parts
        .iter()
        .filter_map(|p| p.as_ref().ok())
        .map(|(s, _)| s.len())
        .sum::<usize>()
        .saturating_mul(points::SERIES_POINTS);
    let mut stats = QueryStats::default();
    let series = merge_shards(parts, &mut stats)?;
    ctx.stats.add(&stats);
    let out = finish_held(ctx, op, r, param, series);
    ctx.points.give_back(overhead);
    out
}

/// [`finish`] under the query's point budget
/// ([`super::points`]): the step values are taken before they are made,
/// the scanned samples given back once they are.
pub(crate) fn finish_held(
    ctx: &Ctx,
    op: RangeOp,
    r: &LogRange,
    param: Option<f64>,
    series: Vec<SeriesPoints>,
) -> Result<Vec<StepSeries>, EngineError> {
    let samples: usize = series.iter().map(|(_, p)| p.len()).sum();
    let made = if op == RangeOp::AbsentOverTime {
        1
    } else {
        series.len()
    };
    ctx.points.charge(made.saturating_mul(ctx.steps.len()))?;
    let out = finish(&ctx.steps, op, r, param, series);
    ctx.points.give_back(samples);
    out
}

/// Merges per-shard series (same reduced labels → one series, points in
/// shard order) and their statistics.
pub(crate) fn merge_shards(
    parts: Vec<Result<(Vec<SeriesPoints>, QueryStats), EngineError>>,
    stats: &mut QueryStats,
) -> Result<Vec<SeriesPoints>, EngineError> {
    let mut series: Vec<SeriesPoints> = Vec::new();
    let mut index: HashMap<LabelSet, usize> = HashMap::new();
    for part in parts {
        let (part, st) = part?;
        stats.add(&st);
        for (key, pts) in part {
            match index.get(&key) {
                Some(&i) => series[i].1.extend(pts),
                None => {
                    index.insert(key.clone(), series.len());
                    series.push((key, pts));
                }
            }
        }
    }
    Ok(series)
}

/// The plain path over one shard of the streams: every entry through the
/// pipeline, points per reduced label set.
fn scan_shard(
    ctx: &Ctx,
    op: RangeOp,
    r: &LogRange,
    grouping: Option<&Grouping>,
    shard: Shard,
) -> Result<(Vec<SeriesPoints>, QueryStats), EngineError> {
    let (mut pipeline, post, mut req) = prepare_scan(ctx, r, required_substrings(&r.log.pipeline))?;
    req.shard = Some(shard);
    let (lo, hi) = (req.start.saturating_sub(1), req.end.saturating_sub(1)); // (lo, hi]
    let unwrap_label = r.unwrap.as_ref().map(|u| u.label.as_str());
    // Series by reduced labels; interned full label sets (by identity) to series index.
    let mut series: Vec<(LabelSet, Vec<(i64, f64)>)> = Vec::new();
    let mut series_index: HashMap<LabelSet, usize> = HashMap::new();
    let mut by_full: FastMap<usize, (LabelSet, usize)> = FastMap::default();
    let mut bases: FastMap<u64, LabelSet> = FastMap::default();
    let mut stats = QueryStats::default();
    let mut budget = SeriesBudget::new(ctx, op, r);
    let mut over = false;
    let mut over_points = false;
    backend_scan(
        ctx.backend,
        &req,
        ctx.deadline,
        &mut |id, labels, entries| {
            let mut samples = 0usize;
            let base = bases
                .entry(id)
                .or_insert_with(|| LabelSet::from(labels))
                .clone();
            for e in entries {
                if e.ts <= lo || e.ts > hi {
                    continue;
                }
                stats.lines_processed += 1;
                stats.bytes_processed += e.line.len() as u64;
                if !pipeline.run(e.ts, &e.line, &base, &e.metadata) {
                    continue;
                }
                let value = match &r.unwrap {
                    None => match op {
                        RangeOp::BytesOverTime | RangeOp::BytesRate => pipeline.line().len() as f64,
                        _ => 1.0,
                    },
                    Some(_) => match emit_value(r, pipeline.labels_builder_mut(), &post) {
                        Some(v) => v,
                        None => continue,
                    },
                };
                stats.post_filter_lines += 1;
                let full = pipeline.intern_labels();
                let idx = match by_full.get(&full.id()) {
                    Some((_, i)) => *i,
                    None => {
                        let key = reduce(&full, grouping, unwrap_label);
                        let i = *series_index.entry(key.clone()).or_insert_with(|| {
                            series.push((key, Vec::new()));
                            budget.add_series();
                            samples += points::SERIES_POINTS;
                            series.len() - 1
                        });
                        // A cache: bounded like the pipeline's (dropping the
                        // held sets is safe, no stale identity stays behind).
                        if by_full.len() >= crate::pipeline::INTERN_CAP {
                            by_full.clear();
                        }
                        // Keep `full` alive so its identity stays unique.
                        by_full.insert(full.id(), (full, i));
                        i
                    }
                };
                series[idx].1.push((e.ts, value));
                samples += 1;
                if !budget.note(idx, e.ts) {
                    over = true;
                    return false;
                }
            }
            if !ctx.points.take(samples) {
                over_points = true;
                return false;
            }
            true
        },
    )?;
    if over {
        return Err(budget.exceeded());
    }
    if over_points {
        return Err(ctx.points.exceeded());
    }
    Ok((series, stats))
}

/// What every evaluation of a log range starts with: the compiled pipeline, the
/// unwrap's post filters, and a forward scan of `(first step - range - offset,
/// last step - offset]` with the given pruning hints.
pub(crate) fn prepare_scan(
    ctx: &Ctx,
    r: &LogRange,
    required_substrings: Vec<String>,
) -> Result<(Pipeline, Vec<LabelFilter>, ScanRequest), EngineError> {
    let first = ctx.steps[0];
    let last = *ctx.steps.last().unwrap_or(&first);
    let lo = first.saturating_sub(r.range).saturating_sub(r.offset); // exclusive
    let hi = last.saturating_sub(r.offset); // inclusive
    let pipeline = Pipeline::new(&r.log.pipeline).map_err(EngineError::Plan)?;
    let post: Vec<LabelFilter> = match &r.unwrap {
        Some(u) => u
            .post_filters
            .iter()
            .map(LabelFilter::new)
            .collect::<Result<_, _>>()
            .map_err(EngineError::Plan)?,
        None => Vec::new(),
    };
    let req = ScanRequest {
        tenant: ctx.tenant.clone(),
        matchers: r.log.selector.clone(),
        start: lo.saturating_add(1),
        end: hi.saturating_add(1),
        direction: Direction::Forward,
        required_substrings,
        shard: None,
        cutoff: None,
    };
    Ok((pipeline, post, req))
}

/// Turns the points of each series into step values (and reports a series
/// still carrying `__error__` as Loki does).
pub(crate) fn finish(
    steps: &[Timestamp],
    op: RangeOp,
    r: &LogRange,
    param: Option<f64>,
    series: Vec<(LabelSet, Vec<(i64, f64)>)>,
) -> Result<Vec<StepSeries>, EngineError> {
    // Loki checks step by step and names a series with `__error__` of the
    // first step whose window holds one (among several at that step its
    // choice follows Go's map order; the smallest label set is taken here).
    let mut bad: Vec<&(LabelSet, Vec<(i64, f64)>)> = series
        .iter()
        .filter(|(k, _)| k.get(ERROR_LABEL).is_some())
        .collect();
    if !bad.is_empty() {
        bad.sort_by(|a, b| a.0.cmp(&b.0));
        let in_window = |pts: &[(i64, f64)], t: Timestamp| {
            let (a, b) = (
                t.saturating_sub(r.range).saturating_sub(r.offset),
                t.saturating_sub(r.offset),
            );
            let i = pts.partition_point(|p| p.0 <= a);
            i < pts.len() && pts[i].0 <= b
        };
        // A failing row that no step's window reaches (a step longer than
        // the range) is never looked at, as in Loki.
        if let Some(first) = steps
            .iter()
            .find_map(|&t| bad.iter().find(|(_, pts)| in_window(pts, t)))
        {
            return Err(pipeline_error(
                first.0.get(ERROR_LABEL).unwrap_or_default(),
                &first.0,
            ));
        }
    }
    if op == RangeOp::AbsentOverTime {
        let mut values = Vec::with_capacity(steps.len());
        for &t in steps {
            let (a, b) = (
                t.saturating_sub(r.range).saturating_sub(r.offset),
                t.saturating_sub(r.offset),
            );
            let any = series.iter().any(|(_, pts)| {
                let i = pts.partition_point(|p| p.0 <= a);
                i < pts.len() && pts[i].0 <= b
            });
            values.push(if any { None } else { Some(1.0) });
        }
        let labels = LabelSet::new(
            r.log
                .selector
                .iter()
                .filter(|m| m.op == MatchOp::Eq)
                .map(|m| (m.name.clone(), m.value.clone()))
                .collect(),
        );
        return Ok(vec![StepSeries { labels, values }]);
    }
    let mut out = Vec::with_capacity(series.len());
    let mut series = series;
    // Series in label order: every path (plain, columnar, plans) hands the
    // vector operators the same sequence.
    series.sort_by(|a, b| a.0.cmp(&b.0));
    for (labels, mut pts) in series {
        pts.sort_by_key(|p| p.0);
        let mut values = Vec::with_capacity(steps.len());
        for &t in steps {
            let (a, b) = (
                t.saturating_sub(r.range).saturating_sub(r.offset),
                t.saturating_sub(r.offset),
            );
            let i = pts.partition_point(|p| p.0 <= a);
            let j = pts.partition_point(|p| p.0 <= b);
            let w = &pts[i..j];
            values.push(if w.is_empty() {
                None
            } else {
                aggregate(op, w, r.range, param, r.unwrap.is_some(), a, b)
            });
        }
        out.push(StepSeries { labels, values });
    }
    Ok(out)
}

/// The sample of one kept row (1 for counting ops, the unwrapped value
/// otherwise), after the unwrap's post filters; `None` when they drop it.
/// Conversion failures set `__error__` as the plain path does.
pub(crate) fn emit_value(
    r: &LogRange,
    lbs: &mut LabelsBuilder,
    post: &[LabelFilter],
) -> Option<f64> {
    let Some(u) = &r.unwrap else {
        return Some(1.0);
    };
    let text = lbs.get(&u.label).unwrap_or("").to_string();
    // Loki takes no sample from a row whose unwrapped label is missing or
    // empty: no conversion error, whatever error an earlier stage left.
    if text.is_empty() {
        return None;
    }
    let conv = match u.conversion {
        UnwrapConversion::None => parse_float(&text),
        UnwrapConversion::Duration => parse_duration(&text).map(|ns| ns as f64 / 1e9),
        UnwrapConversion::Bytes => parse_bytes(&text).map(|b| b as f64),
    };
    let v = match conv {
        Ok(v) => v,
        Err(err) => {
            lbs.set_err(ERR_SAMPLE_EXTRACTION);
            lbs.set_err_details(&err);
            0.0
        }
    };
    post.iter().all(|f| f.keep(lbs)).then_some(v)
}

/// Scans `req`, handing each batch to `f` until it returns false or the
/// deadline passes (then `Timeout`).
fn backend_scan(
    backend: &dyn runakefli_model::Backend,
    req: &ScanRequest,
    deadline: std::time::Instant,
    f: &mut dyn FnMut(u64, &runakefli_model::Labels, Vec<runakefli_model::Entry>) -> bool,
) -> Result<(), EngineError> {
    let mut timed_out = false;
    backend.scan(req, &mut |info, batch| {
        if std::time::Instant::now() > deadline {
            timed_out = true;
            return ScanControl::Stop;
        }
        if f(info.id, &info.labels, batch.entries) {
            ScanControl::Continue
        } else {
            ScanControl::Stop
        }
    })?;
    if timed_out {
        return Err(EngineError::Timeout);
    }
    Ok(())
}

/// The value of `op` over the points `w` of one window `(a, b]`.
pub(crate) fn aggregate(
    op: RangeOp,
    w: &[(i64, f64)],
    range_ns: i64,
    param: Option<f64>,
    unwrapped: bool,
    a: i64,
    b: i64,
) -> Option<f64> {
    let range_secs = range_ns as f64 / 1e9;
    let n = w.len() as f64;
    // Added in time order from zero, as Loki adds a window's samples.
    let sum = || w.iter().fold(0.0, |s, p| s + p.1);
    Some(match op {
        RangeOp::CountOverTime => n,
        RangeOp::Rate => {
            if unwrapped {
                sum() / range_secs
            } else {
                n / range_secs
            }
        }
        RangeOp::BytesOverTime | RangeOp::SumOverTime => sum(),
        RangeOp::BytesRate => sum() / range_secs,
        RangeOp::AvgOverTime => mean_over_time(w.iter().map(|p| p.1)),
        RangeOp::MinOverTime => {
            w.iter()
                .map(|p| p.1)
                .fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m })
        }
        RangeOp::MaxOverTime => {
            w.iter()
                .map(|p| p.1)
                .fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m })
        }
        RangeOp::StdvarOverTime | RangeOp::StddevOverTime => {
            let (mut mean, mut aux) = (0.0, 0.0);
            for (k, p) in w.iter().enumerate() {
                let delta = p.1 - mean;
                mean += delta / (k as f64 + 1.0);
                aux += delta * (p.1 - mean);
            }
            let var = aux / n;
            if op == RangeOp::StddevOverTime {
                var.sqrt()
            } else {
                var
            }
        }
        RangeOp::QuantileOverTime => {
            quantile(param.unwrap_or(f64::NAN), w.iter().map(|p| p.1).collect())
        }
        RangeOp::FirstOverTime => w[0].1,
        RangeOp::LastOverTime => w[w.len() - 1].1,
        RangeOp::RateCounter => return extrapolated_rate(w, a, b, range_secs),
        RangeOp::AbsentOverTime => return None,
    })
}

/// `avg_over_time` of a window's samples in time order, as Loki computes it
/// (its answers are matched to the last bit): a running mean that adds each
/// sample's share and takes away the mean's, `mean += v / n - mean / n`
/// (not `(v - mean) / n`, which rounds differently), and that an infinite
/// mean keeps against finite samples and infinities of its own sign.
fn mean_over_time(values: impl Iterator<Item = f64>) -> f64 {
    let (mut mean, mut n) = (0.0f64, 0.0f64);
    for v in values {
        n += 1.0;
        if mean.is_infinite() && (v.is_finite() || (v.is_infinite() && (mean > 0.0) == (v > 0.0))) {
            continue;
        }
        mean += v / n - mean / n;
    }
    mean
}

/// Prometheus' quantile with linear interpolation.
pub fn quantile(q: f64, mut v: Vec<f64>) -> f64 {
    if v.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    let n = v.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    // The values of ranks `lower` and `upper` in the total order (what a
    // full sort would put there; values equal in it are the same bits):
    // a selection, then the smallest of the values above it.
    let (lo, hi) = (lower as usize, upper as usize);
    let (_, &mut at_lower, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let at_upper = if hi == lo {
        at_lower
    } else {
        above
            .iter()
            .copied()
            .min_by(f64::total_cmp)
            .unwrap_or(at_lower)
    };
    at_lower * (1.0 - weight) + at_upper * weight
}

/// `rate_counter`: Prometheus' extrapolated counter rate over the window
/// `(a, b]` (nanosecond precision), in the order Prometheus 3 (and the Loki
/// the corpus was recorded from) applies its limits: a start gap past the
/// threshold first becomes half the sample spacing, and only then is it capped
/// by the distance to the counter's zero point. Fewer than two samples give
/// no value.
fn extrapolated_rate(w: &[(i64, f64)], a: i64, b: i64, range_secs: f64) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let first = w[0];
    let last = w[w.len() - 1];
    let mut result = last.1 - first.1;
    let mut prev = 0.0;
    for p in w {
        if p.1 < prev {
            result += prev;
        }
        prev = p.1;
    }
    let mut to_start = (first.0 - a) as f64 / 1e9;
    let mut to_end = (b - last.0) as f64 / 1e9;
    let sampled = (last.0 - first.0) as f64 / 1e9;
    if sampled <= 0.0 {
        return None;
    }
    let avg = sampled / (w.len() as f64 - 1.0);
    let threshold = avg * 1.1;
    if to_start >= threshold {
        to_start = avg / 2.0;
    }
    if result > 0.0 && first.1 >= 0.0 {
        let to_zero = sampled * (first.1 / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    if to_end >= threshold {
        to_end = avg / 2.0;
    }
    Some(result * ((sampled + to_start + to_end) / sampled) / range_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_counter_caps_by_zero_point_after_the_threshold() {
        let s = 1_000_000_000i64;
        // Samples 10 s apart from 0 to 20 (counter 30 -> 50): the start gap
        // of 100 s is past the threshold (11 s) and becomes 5 s; the zero
        // point (30 s away) does not cap it. The end gap of 0 s is kept.
        let w = [(100 * s, 30.0), (110 * s, 40.0), (120 * s, 50.0)];
        let got = extrapolated_rate(&w, 0, 120 * s, 120.0).unwrap();
        assert_eq!(got, 20.0 * ((20.0 + 5.0) / 20.0) / 120.0);
        // Counter 1 -> 21: the zero point (1 s before the first sample) caps
        // the 5 s.
        let w = [(100 * s, 1.0), (110 * s, 11.0), (120 * s, 21.0)];
        let got = extrapolated_rate(&w, 0, 120 * s, 120.0).unwrap();
        assert_eq!(got, 20.0 * ((20.0 + 1.0) / 20.0) / 120.0);
        // A reset adds the value before it; one sample gives nothing.
        let w = [(0, 5.0), (s, 8.0), (2 * s, 2.0)];
        let got = extrapolated_rate(&w, 0, 2 * s, 2.0).unwrap();
        assert_eq!(got, 5.0 * ((2.0 + 0.0 + 0.0) / 2.0) / 2.0);
        assert_eq!(extrapolated_rate(&[(s, 1.0)], 0, 2 * s, 2.0), None);
    }

    #[test]
    fn avg_over_time_takes_shares_as_loki() {
        let w = |v: &[f64]| -> Vec<(i64, f64)> {
            v.iter().enumerate().map(|(i, &x)| (i as i64, x)).collect()
        };
        let avg =
            |v: &[f64]| aggregate(RangeOp::AvgOverTime, &w(v), 60, None, true, -1, 10).unwrap();
        // `mean += v / n - mean / n` gives 0.3; `mean += (v - mean) / n`
        // would give 0.30000000000000004.
        let mut naive = 0.0;
        for (k, x) in [0.1, 0.2, 0.6].iter().enumerate() {
            naive += (x - naive) / (k as f64 + 1.0);
        }
        assert_eq!(naive, 0.30000000000000004);
        assert_eq!(avg(&[0.1, 0.2, 0.6]).to_bits(), 0.3f64.to_bits());
        // An infinite mean stays against finite samples and its own sign.
        assert_eq!(avg(&[f64::INFINITY, 1.0, f64::INFINITY]), f64::INFINITY);
        assert_eq!(avg(&[1.0, f64::NEG_INFINITY, 5.0]), f64::NEG_INFINITY);
        assert!(avg(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert!(avg(&[f64::INFINITY, f64::NAN]).is_nan());
    }

    #[test]
    fn sums_over_time_start_from_zero() {
        let w = [(0, -0.0), (1, -0.0)];
        let sum = aggregate(RangeOp::SumOverTime, &w, 60, None, true, -1, 10).unwrap();
        assert_eq!(sum.to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn quantiles_like_prometheus() {
        assert_eq!(quantile(0.5, vec![1.0, 3.0, 2.0]), 2.0);
        assert_eq!(quantile(0.0, vec![5.0, 1.0]), 1.0);
        assert_eq!(quantile(1.5, vec![1.0]), f64::INFINITY);
        assert_eq!(quantile(0.25, vec![0.0, 4.0]), 1.0);
    }

    #[test]
    fn quantiles_by_selection_equal_those_of_a_full_sort() {
        let sorted = |q: f64, mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            let rank = q * (n - 1.0);
            let lower = rank.floor().max(0.0);
            let upper = (lower + 1.0).min(n - 1.0);
            let w = rank - rank.floor();
            v[lower as usize] * (1.0 - w) + v[upper as usize] * w
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in [1usize, 2, 3, 7, 100, 1001] {
            let v: Vec<f64> = (0..len)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    match i % 11 {
                        0 => -0.0,
                        1 => 0.0,
                        2 => f64::NAN,
                        3 => f64::INFINITY,
                        _ => (x >> 40) as f64 / 7.0 - 1000.0,
                    }
                })
                .collect();
            for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0] {
                let (a, b) = (quantile(q, v.clone()), sorted(q, v.clone()));
                assert_eq!(a.to_bits(), b.to_bits(), "q {q} len {len}");
            }
        }
    }
}
