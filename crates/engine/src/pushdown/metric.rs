//! Range aggregations as bucket plans.
//!
//! The windows `(t - range - offset, t - offset]` of all steps cut time into
//! elementary buckets (their bounds, sorted); the backend counts rows into
//! the buckets per group, and each step's value is computed from the
//! buckets its window covers.

use super::build::{error_drop_pieces, pipeline_pieces};
use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::pipeline::labels::{ERROR_DETAILS_LABEL, ERROR_LABEL};
use crate::sampling::window::aggregate;
use crate::sampling::{emit_value, range_pipeline, reduce, ByKey, Ctx, StepSeries};
use runakefli_logql::{Grouping, LabelFilterExpr, LogRange, RangeOp};
use runakefli_model::plan::{
    AnswerData, BucketData, BucketPlan, BucketValue, GroupBy, GroupKey, PlanOutput, QueryPlan,
    TopGroups,
};
use runakefli_model::BackendError;
use std::collections::HashMap;

/// What each bucket must accumulate for `op`; `None` when the op has no
/// bucket form.
fn bucket_value(op: RangeOp, unwrapped: bool) -> Option<BucketValue> {
    Some(match (op, unwrapped) {
        (RangeOp::CountOverTime | RangeOp::Rate, false) => BucketValue::Count,
        (RangeOp::BytesOverTime | RangeOp::BytesRate, false) => BucketValue::LineBytes,
        (RangeOp::MinOverTime, true) => BucketValue::Min,
        (RangeOp::MaxOverTime, true) => BucketValue::Max,
        (RangeOp::QuantileOverTime, true) => BucketValue::Values,
        // Float sums depend on the order of their terms: these take the
        // points in time order, as the plain path adds them.
        (
            RangeOp::SumOverTime
            | RangeOp::Rate
            | RangeOp::AvgOverTime
            | RangeOp::StddevOverTime
            | RangeOp::StdvarOverTime
            | RangeOp::FirstOverTime
            | RangeOp::LastOverTime,
            true,
        ) => BucketValue::Points,
        _ => return None,
    })
}

/// `topk`/`bottomk` over a plan's groups, as the engine will run it on
/// them: `k` per step (smallest first when `bottom`), in the parts its own
/// `grouping` makes.
#[derive(Clone, Debug)]
pub(crate) struct TopWanted {
    /// Series kept per step and part (at least 1).
    pub k: usize,
    /// `bottomk`.
    pub bottom: bool,
    /// The `topk`'s `by (…)`/`without (…)`.
    pub grouping: Option<Grouping>,
}

impl TopWanted {
    /// The labels of `group_by` whose values part its groups: a series'
    /// labels are its group's (present when not empty), so `by (l…)` parts
    /// by the group labels among `l…`, `without (l…)` by the others.
    fn partition(&self, group_by: &GroupBy) -> Vec<String> {
        let (GroupBy::Labels(labels), Some(g)) = (group_by, &self.grouping) else {
            return Vec::new();
        };
        let mut out: Vec<String> = labels
            .iter()
            .filter(|l| g.labels.contains(l) != g.without)
            .cloned()
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The series of one range aggregation computed through a bucket plan, one
/// value slot per step; `None` when the query has no plan form, the backend
/// declines it, or some row carries `__error__` (the plain path then gives
/// Loki's exact error).
///
/// `top`: the caller keeps only the `k` largest (`true`: smallest) series
/// at each step (`topk`/`bottomk` over these series, no grouping of its
/// own): the backend is told ([`TopGroups`]) and may leave out the groups
/// that are never among them, so the series returned are then only those.
pub(crate) fn range_series(
    ctx: &mut Ctx,
    op: RangeOp,
    r: &LogRange,
    param: Option<f64>,
    grouping: Option<&Grouping>,
    top: Option<TopWanted>,
) -> Result<Option<Vec<StepSeries>>, EngineError> {
    if !ctx.fast_paths.enabled() {
        return Ok(None);
    }
    let Some(value) = bucket_value(op, r.unwrap.is_some()) else {
        return Ok(None);
    };
    // `| drop __error__` with no parser (Logs Drilldown's level volume)
    // changes nothing when the groups are labels other than the error ones.
    let groups_without_errors = grouping.is_some_and(|g| {
        !g.without
            && !g
                .labels
                .iter()
                .any(|l| l == ERROR_LABEL || l == ERROR_DETAILS_LABEL)
    });
    let pieces = pipeline_pieces(&r.log.pipeline, r.unwrap.as_ref()).or_else(|| {
        (groups_without_errors && r.unwrap.is_none())
            .then(|| error_drop_pieces(&r.log.pipeline))
            .flatten()
    });
    let Some(pieces) = pieces else {
        return Ok(None);
    };
    let group_by = match grouping {
        Some(g) if g.without => return Ok(None),
        Some(g) => GroupBy::Labels(g.labels.clone()),
        None if pieces.fields.is_none() => GroupBy::Stream,
        None => return Ok(None),
    };
    // Windows and their buckets.
    let windows: Vec<(i64, i64)> = ctx
        .steps
        .iter()
        .map(|&t| {
            (
                t.saturating_sub(r.range).saturating_sub(r.offset),
                t.saturating_sub(r.offset),
            )
        })
        .collect();
    let mut bounds: Vec<i64> = windows.iter().flat_map(|&(a, b)| [a, b]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    if bounds.len() < 2 {
        return Ok(None);
    }
    let pos = |x: i64| bounds.binary_search(&x).unwrap_or(0);
    let spans: Vec<(usize, usize)> = windows.iter().map(|&(a, b)| (pos(a), pos(b))).collect();
    // Counts and byte sums rank groups as the values computed from them do
    // (`rate` and `bytes_rate` divide every group's by the same range).
    let top = top
        .filter(|t| t.k > 0)
        .filter(|_| matches!(value, BucketValue::Count | BucketValue::LineBytes))
        .map(|t| TopGroups {
            k: t.k,
            bottom: t.bottom,
            windows: spans.iter().map(|&(a, b)| (a as u32, b as u32)).collect(),
            partition: t.partition(&group_by),
        });
    let bucket = BucketPlan {
        bounds: bounds.clone(),
        group_by: group_by.clone(),
        value,
        top,
    };
    let plan = QueryPlan {
        tenant: ctx.tenant.clone(),
        selector: r.log.selector.clone(),
        start: bounds[0].saturating_add(1),
        end: bounds[bounds.len() - 1].saturating_add(1),
        line_filters: pieces.line_filters,
        fields: pieces.fields,
        output: PlanOutput::Buckets(bucket.clone()),
        deadline: Some(ctx.deadline),
        cancel: None,
    };
    let backend = ctx.backend;
    let answer = match crate::parallel::install(|| backend.execute(&plan)) {
        Ok(Some(a)) => a,
        Ok(None) => return Ok(None),
        Err(BackendError::Cancelled) => return Err(EngineError::Timeout),
        Err(e) => return Err(e.into()),
    };
    let AnswerData::Buckets(groups) = answer.data else {
        return Ok(None);
    };
    ctx.stats.lines_processed += answer.stats.rows_scanned;
    ctx.stats.bytes_processed += answer.stats.bytes_scanned;
    ctx.stats.post_filter_lines += answer.stats.rows_kept;
    ctx.stats.rows_from_columns += answer.stats.rows_from_columns;
    let mut series: HashMap<LabelSet, BucketData> = HashMap::with_capacity(groups.len());
    for g in groups {
        let labels = match (&g.key, &group_by) {
            (GroupKey::Labels(vals), GroupBy::Labels(names)) => LabelSet::new(
                names
                    .iter()
                    .zip(vals)
                    .filter_map(|(n, v)| v.as_ref().map(|v| (n.clone(), v.clone())))
                    .collect(),
            ),
            (GroupKey::Stream { labels, metadata }, _) => {
                let mut pairs = labels.pairs().to_vec();
                pairs.extend(metadata.iter().cloned());
                LabelSet::new(pairs)
            }
            _ => return Ok(None),
        };
        match series.get_mut(&labels) {
            Some(d) => d.merge(g.data),
            None => {
                series.insert(labels, g.data);
            }
        }
    }
    // Residual rows: the whole pipeline, as the plain path runs it.
    if !answer.residual.is_empty() {
        let mut pipeline = range_pipeline(r, grouping).map_err(EngineError::Plan)?;
        let post: Vec<crate::pipeline::label_filter::LabelFilter> = match &r.unwrap {
            Some(u) => u
                .post_filters
                .iter()
                .map(|f: &LabelFilterExpr| crate::pipeline::label_filter::LabelFilter::new(f))
                .collect::<Result<_, _>>()
                .map_err(EngineError::Plan)?,
            None => Vec::new(),
        };
        let unwrap_label = r.unwrap.as_ref().map(|u| u.label.as_str());
        let nb = bucket.buckets();
        let mut by_key = ByKey::new(grouping);
        for rows in answer.residual {
            let base = LabelSet::from(rows.stream.labels.as_ref());
            for (i, e) in rows.entries.into_iter().enumerate() {
                if i % 4096 == 0 && std::time::Instant::now() > ctx.deadline {
                    return Err(EngineError::Timeout);
                }
                let Some(b) = bucket.bucket_of(e.ts) else {
                    continue;
                };
                if !pipeline.run(e.ts, &e.line, &base, &e.metadata) {
                    continue;
                }
                let v = match value {
                    BucketValue::Count => 1.0,
                    BucketValue::LineBytes => pipeline.line().len() as f64,
                    _ => match emit_value(r, pipeline.labels_builder_mut(), &post) {
                        Some(v) => v,
                        None => continue,
                    },
                };
                ctx.stats.post_filter_lines += 1;
                let key = match by_key.as_mut() {
                    Some(k) => match k.key(pipeline.labels_builder_mut()) {
                        Some(key) => key,
                        None => return Ok(None),
                    },
                    None => reduce(&pipeline.intern_labels(), grouping, unwrap_label),
                };
                if key.get(ERROR_LABEL).is_some() {
                    return Ok(None);
                }
                series
                    .entry(key)
                    .or_insert_with(|| BucketData::new(value, nb))
                    .add(b, e.ts, v);
            }
        }
    }
    let mut out = Vec::with_capacity(series.len());
    for (labels, data) in series {
        let values = spans
            .iter()
            .zip(&windows)
            .map(|(&(a, b), &(wa, wb))| window_value(op, &data, (a, b), r.range, param, (wa, wb)))
            .collect();
        out.push(StepSeries { labels, values });
    }
    out.sort_by(|a, b| a.labels.cmp(&b.labels));
    Ok(Some(out))
}

/// The value of `op` over buckets `a..b` of one group, for the window
/// `(wa, wb]` of `range_ns`.
fn window_value(
    op: RangeOp,
    data: &BucketData,
    (a, b): (usize, usize),
    range_ns: i64,
    param: Option<f64>,
    (wa, wb): (i64, i64),
) -> Option<f64> {
    let range_secs = range_ns as f64 / 1e9;
    if a >= b {
        return None;
    }
    match data {
        BucketData::Count(c) => {
            let n: u64 = c[a..b].iter().sum();
            (n > 0).then(|| match op {
                RangeOp::Rate => n as f64 / range_secs,
                _ => n as f64,
            })
        }
        BucketData::Sum(c, s) => {
            let n: u64 = c[a..b].iter().sum();
            if n == 0 {
                return None;
            }
            let sum: f64 = s[a..b].iter().sum();
            Some(match op {
                RangeOp::Rate | RangeOp::BytesRate => sum / range_secs,
                RangeOp::AvgOverTime => sum / n as f64,
                _ => sum,
            })
        }
        BucketData::Min(c, m) | BucketData::Max(c, m) => {
            let mut best: Option<f64> = None;
            let max = matches!(data, BucketData::Max(..));
            for i in a..b {
                if c[i] == 0 {
                    continue;
                }
                best = Some(match best {
                    None => m[i],
                    Some(x) if m[i].is_nan() => x,
                    Some(x) if x.is_nan() => m[i],
                    Some(x) if max => x.max(m[i]),
                    Some(x) => x.min(m[i]),
                });
            }
            best
        }
        BucketData::Values(v) => {
            let pts: Vec<(i64, f64)> = v[a..b].iter().flatten().map(|&x| (0, x)).collect();
            if pts.is_empty() {
                return None;
            }
            aggregate(op, &pts, range_ns, param, true, wa, wb)
        }
        BucketData::Points(p) => {
            let mut pts: Vec<(i64, f64)> = p[a..b].iter().flatten().copied().collect();
            if pts.is_empty() {
                return None;
            }
            pts.sort_by_key(|x| x.0);
            aggregate(op, &pts, range_ns, param, true, wa, wb)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(grouping: Option<(bool, &[&str])>) -> TopWanted {
        TopWanted {
            k: 1,
            bottom: false,
            grouping: grouping.map(|(without, labels)| Grouping {
                without,
                labels: labels.iter().map(|l| l.to_string()).collect(),
            }),
        }
    }

    /// The parts `vector::topk` makes of series labelled by the plan's
    /// groups: `by` keeps the group labels it names, `without` the others.
    #[test]
    fn topk_parts_groups_by_the_group_labels_it_keeps() {
        let groups = GroupBy::Labels(vec!["app".into(), "tier".into(), "pod".into()]);
        let parts = |t: TopWanted| t.partition(&groups);
        assert!(parts(top(None)).is_empty());
        assert_eq!(parts(top(Some((false, &["tier", "ns"])))), ["tier"]);
        assert_eq!(parts(top(Some((true, &["app"])))), ["pod", "tier"]);
        assert!(parts(top(Some((false, &[])))).is_empty());
        assert!(top(Some((false, &["app"])))
            .partition(&GroupBy::Stream)
            .is_empty());
    }
}
