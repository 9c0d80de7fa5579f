//! Range aggregations: `count_over_time`, `rate`, `bytes_*`, the unwrapped
//! `*_over_time` family, `rate_counter` and `absent_over_time`. Windows are
//! `(t - range - offset, t - offset]` for every step `t`.

use super::SeriesBudget;
use crate::error::EngineError;
use crate::fast_hash::FastMap;
use crate::labelset::LabelSet;
use crate::parallel::map_shards;
use crate::pipeline::labels::ERROR_LABEL;
use crate::pipeline::required_substrings;
use crate::result::QueryStats;
use crate::sampling::window::aggregate;
use crate::sampling::{
    emit_value, merge_shards, points, prepare_scan, reduce, ByKey, Ctx, SeriesPoints, StepSeries,
};
use runakefli_logql::{Grouping, LogRange, RangeOp};
use runakefli_model::{MatchOp, ScanControl, ScanRequest, Shard, Timestamp};
use std::collections::HashMap;

/// Loki's message for a series that still carries `__error__`.
pub fn pipeline_error(err: &str, series: &LabelSet) -> EngineError {
    EngineError::BadRequest(format!(
        "pipeline error: '{err}' for series: '{series}'.\nUse a label filter to intentionally skip this error. (e.g | __error__!=\"{err}\").\nTo skip all potential errors you can match empty errors.(e.g __error__=\"\")\nThe label filter can also be specified after unwrap. (e.g | unwrap latency | __error__=\"\" )\n"
    ))
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
/// ([`crate::sampling::points`]): the step values are taken before they are made,
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

/// The plain path over one shard of the streams: every entry through the
/// pipeline, points per reduced label set.
fn scan_shard(
    ctx: &Ctx,
    op: RangeOp,
    r: &LogRange,
    grouping: Option<&Grouping>,
    shard: Shard,
) -> Result<(Vec<SeriesPoints>, QueryStats), EngineError> {
    let (mut pipeline, post, mut req) =
        prepare_scan(ctx, r, grouping, required_substrings(&r.log.pipeline))?;
    req.shard = Some(shard);
    let (lo, hi) = (req.start.saturating_sub(1), req.end.saturating_sub(1)); // (lo, hi]
    let unwrap_label = r.unwrap.as_ref().map(|u| u.label.as_str());
    // Series by reduced labels; interned full label sets (by identity) to series index.
    let mut series: Vec<(LabelSet, Vec<(i64, f64)>)> = Vec::new();
    let mut series_index: HashMap<LabelSet, usize> = HashMap::new();
    let mut by_full: FastMap<usize, (LabelSet, usize)> = FastMap::default();
    let mut bases: FastMap<u64, LabelSet> = FastMap::default();
    let mut by_key = ByKey::new(grouping);
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
                let full = match by_key
                    .as_mut()
                    .and_then(|k| k.key(pipeline.labels_builder_mut()))
                {
                    Some(key) => key,
                    None => pipeline.intern_labels(),
                };
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
