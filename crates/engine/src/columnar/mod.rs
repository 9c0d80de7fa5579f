//! The columnar fast path for range aggregations over `| json`.
//!
//! Plans `{selector} | json [| label filters] [| unwrap x [| post filters]]`
//! under a `by (...)` grouping (its own, or the one an enclosing `sum`
//! hands down, see `metric::vector::sum_grouping_in_range`) and asks the
//! backend's
//! [`scan_columns`](runakefli_model::Backend::scan_columns) only for the JSON
//! members that the filters, the unwrap and the grouping read. Rows the
//! backend answers from columns get exactly those labels, set as the `| json`
//! parser would set them (`_extracted` renames, first member wins, string
//! unescaping); rows it answers with their line run the ordinary pipeline.
//!
//! Why labels nobody reads can be left out: with a `by` grouping a series key
//! holds only the grouping labels and `__error__`/`__error_details__`, and
//! label filters read only the labels they name, so the other extracted
//! labels cannot change which rows count, their values or their series. The
//! plain path in [`crate::metric`] stays the reference; the equivalence tests
//! run both (the plain one on an engine built with
//! [`FastPaths::Off`](crate::FastPaths::Off)).

use crate::error::EngineError;
use crate::fast_hash::FastMap;
use crate::labelset::LabelSet;
use crate::parallel::map_shards;
use crate::pipeline::jsonscan;
use crate::pipeline::label_filter::LabelFilter;
use crate::pipeline::labels::{LabelsBuilder, ERROR_DETAILS_LABEL, ERROR_LABEL};
use crate::pipeline::reorder;
use crate::result::QueryStats;
use crate::sampling::{emit_value, merge_shards, prepare_scan, Ctx, SeriesPoints};
use runakefli_logql::{Grouping, LabelFilterExpr, LogRange, RangeOp, Stage};
use runakefli_model::{ColumnRequest, RowFields, ScanControl, Shard};
use std::borrow::Cow;
use std::collections::HashMap;

/// Label names a label filter expression reads.
fn filter_names(e: &LabelFilterExpr, out: &mut Vec<String>) {
    match e {
        LabelFilterExpr::And(a, b) | LabelFilterExpr::Or(a, b) => {
            filter_names(a, out);
            filter_names(b, out);
        }
        LabelFilterExpr::Paren(a) => filter_names(a, out),
        LabelFilterExpr::String(m) => out.push(m.name.clone()),
        LabelFilterExpr::Number { name, .. }
        | LabelFilterExpr::Duration { name, .. }
        | LabelFilterExpr::Bytes { name, .. }
        | LabelFilterExpr::Ip { name, .. } => out.push(name.clone()),
    }
}

/// A planned fast path for one range aggregation.
struct Plan {
    /// `| json label="key", …`: (label, top-level key) per parameter; empty
    /// for the parameterless `| json`.
    params: Vec<(String, String)>,
    filters: Vec<LabelFilter>,
    /// Final label names the query reads.
    needed: Vec<String>,
    /// JSON labels asked of the backend (before `_extracted` renames).
    requested: Vec<String>,
    grouping: Vec<String>,
}

fn plan(op: RangeOp, r: &LogRange, grouping: Option<&Grouping>) -> Option<Plan> {
    let g = grouping?;
    if g.without {
        return None;
    }
    if matches!(
        op,
        RangeOp::BytesOverTime | RangeOp::BytesRate | RangeOp::AbsentOverTime
    ) {
        return None;
    }
    let stages = reorder(&r.log.pipeline);
    let (first, rest) = stages.split_first()?;
    let Stage::Json(extractions) = first else {
        return None;
    };
    let simple_key =
        |k: &str| k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && !k.is_empty();
    let mut params = Vec::with_capacity(extractions.len());
    for e in extractions {
        let key = e.expression.as_deref().unwrap_or(&e.label);
        if !simple_key(key) {
            return None;
        }
        params.push((e.label.clone(), key.to_string()));
    }
    let mut filters = Vec::new();
    let mut needed: Vec<String> = vec![ERROR_LABEL.into(), ERROR_DETAILS_LABEL.into()];
    for s in rest {
        match s {
            Stage::LabelFilter(e) => {
                filters.push(LabelFilter::new(e).ok()?);
                filter_names(e, &mut needed);
            }
            _ => return None,
        }
    }
    if let Some(u) = &r.unwrap {
        needed.push(u.label.clone());
        for f in &u.post_filters {
            filter_names(f, &mut needed);
        }
    }
    needed.extend(g.labels.iter().cloned());
    needed.sort();
    needed.dedup();
    let mut requested: Vec<String> = Vec::new();
    for n in needed.iter().filter(|_| params.is_empty()) {
        requested.push(n.clone());
        if let Some(s) = n.strip_suffix("_extracted") {
            requested.push(s.to_string());
        }
    }
    requested.sort();
    requested.dedup();
    let mut grouping: Vec<String> = g.labels.clone();
    grouping.extend([ERROR_LABEL.to_string(), ERROR_DETAILS_LABEL.to_string()]);
    grouping.sort();
    grouping.dedup();
    Some(Plan {
        params,
        filters,
        needed,
        requested,
        grouping,
    })
}

/// A JSON string value as the `| json` parser reads it.
fn json_string(v: &str) -> Cow<'_, str> {
    if !v.contains('\\') {
        if v.contains('\u{FFFD}') {
            return Cow::Borrowed("");
        }
        return Cow::Borrowed(v);
    }
    Cow::Owned(jsonscan::unescape_string(v.as_bytes()))
}

/// The series of a range aggregation by the fast path: reduced labels and
/// their points. `None` when the query is not of a shape the fast path
/// answers exactly, or (with `strict`) when a series carries `__error__`
/// (the caller then uses the plain path, whose error text names the full
/// series).
pub(crate) fn range_series(
    ctx: &mut Ctx,
    op: RangeOp,
    r: &LogRange,
    grouping: Option<&Grouping>,
    strict: bool,
) -> Result<Option<Vec<SeriesPoints>>, EngineError> {
    if !ctx.fast_paths.enabled() {
        return Ok(None);
    }
    let Some(plan) = plan(op, r, grouping) else {
        return Ok(None);
    };
    let shared: &Ctx = ctx;
    let parts = map_shards(|shard| scan_shard(shared, r, &plan, grouping, shard));
    let mut stats = QueryStats::default();
    let series = merge_shards(parts, &mut stats)?;
    ctx.stats.add(&stats);
    if strict && series.iter().any(|(k, _)| k.get(ERROR_LABEL).is_some()) {
        // The plain path takes its own samples.
        ctx.points
            .give_back(series.iter().map(|(_, p)| p.len()).sum());
        return Ok(None);
    }
    Ok(Some(series))
}

/// The fast path over one shard of the streams: series and statistics
/// (rows answered from columns among them).
fn scan_shard(
    ctx: &Ctx,
    r: &LogRange,
    plan: &Plan,
    grouping: Option<&Grouping>,
    shard: Shard,
) -> Result<(Vec<SeriesPoints>, QueryStats), EngineError> {
    let (mut pipeline, post, mut req) = prepare_scan(ctx, r, grouping, Vec::new())?;
    req.shard = Some(shard);
    let (lo, hi) = (req.start.saturating_sub(1), req.end.saturating_sub(1)); // (lo, hi]
    let cols = ColumnRequest {
        json_labels: plan.requested.clone(),
        json_keys: plan.params.iter().map(|(_, k)| k.clone()).collect(),
    };
    let filters = &plan.filters;
    let mut lbs = LabelsBuilder::default();
    let mut series: Vec<SeriesPoints> = Vec::new();
    let mut series_index: HashMap<LabelSet, usize> = HashMap::new();
    let mut bases: FastMap<u64, LabelSet> = FastMap::default();
    let mut chosen: Vec<(usize, u32)> = Vec::new();
    let mut stats = QueryStats::default();
    let deadline = ctx.deadline;
    let mut timed_out = false;
    let mut over_points = false;
    ctx.backend.scan_columns(&req, &cols, &mut |info, batch| {
        if std::time::Instant::now() > deadline {
            timed_out = true;
            return ScanControl::Stop;
        }
        let base = bases
            .entry(info.id)
            .or_insert_with(|| LabelSet::from(&*info.labels))
            .clone();
        stats.bytes_processed += batch.json_line_bytes;
        let mut samples = 0usize;
        for row in batch.rows {
            if row.ts <= lo || row.ts > hi {
                continue;
            }
            stats.lines_processed += 1;
            let b: &mut LabelsBuilder = match &row.fields {
                RowFields::Line(line) => {
                    stats.bytes_processed += line.len() as u64;
                    if !pipeline.run(row.ts, line, &base, &row.metadata) {
                        continue;
                    }
                    pipeline.labels_builder_mut()
                }
                RowFields::Json(values) if !plan.params.is_empty() => {
                    stats.rows_from_columns += 1;
                    lbs.reset(&base, &row.metadata);
                    // As `| json label="key"`: every parameter sets its label.
                    for ((label, _), v) in plan.params.iter().zip(values) {
                        let text: Cow<'_, str> = match v {
                            Some(v) if v.string => {
                                Cow::Owned(jsonscan::unescape_string(v.text.as_bytes()))
                            }
                            Some(v) if v.text != "null" => Cow::Borrowed(v.text.as_str()),
                            _ => Cow::Borrowed(""),
                        };
                        if lbs.base_has(label) {
                            lbs.set(&format!("{label}_extracted"), &text);
                        } else {
                            lbs.set(label, &text);
                        }
                    }
                    if !filters.iter().all(|f| f.keep(&mut lbs)) {
                        continue;
                    }
                    &mut lbs
                }
                RowFields::Json(values) => {
                    stats.rows_from_columns += 1;
                    lbs.reset(&base, &row.metadata);
                    // First member (by line order) per final label name.
                    chosen.clear();
                    for (i, v) in values.iter().enumerate() {
                        let Some(v) = v else { continue };
                        let raw = &plan.requested[i];
                        let fin: Cow<'_, str> = if lbs.base_has(raw) {
                            Cow::Owned(format!("{raw}_extracted"))
                        } else {
                            Cow::Borrowed(raw)
                        };
                        let Ok(n) = plan.needed.binary_search_by(|x| x.as_str().cmp(&fin)) else {
                            continue;
                        };
                        match chosen.iter_mut().find(|c| c.0 == n) {
                            Some(c)
                                if values[c.1 as usize]
                                    .as_ref()
                                    .is_some_and(|o| o.order <= v.order) => {}
                            Some(c) => c.1 = i as u32,
                            None => chosen.push((n, i as u32)),
                        }
                    }
                    for &(n, i) in &chosen {
                        if let Some(v) = &values[i as usize] {
                            let text = if v.string {
                                json_string(&v.text)
                            } else {
                                Cow::Borrowed(v.text.as_str())
                            };
                            lbs.set(&plan.needed[n], &text);
                        }
                    }
                    if !filters.iter().all(|f| f.keep(&mut lbs)) {
                        continue;
                    }
                    &mut lbs
                }
            };
            let Some(value) = emit_value(r, b, &post) else {
                continue;
            };
            stats.post_filter_lines += 1;
            let key = LabelSet::from_sorted(
                plan.grouping
                    .iter()
                    .filter_map(|n| b.get(n).map(|v| (n.clone(), v.to_string())))
                    .collect(),
            );
            let idx = match series_index.get(&key) {
                Some(&i) => i,
                None => {
                    series.push((key.clone(), Vec::new()));
                    series_index.insert(key, series.len() - 1);
                    series.len() - 1
                }
            };
            series[idx].1.push((row.ts, value));
            samples += 1;
        }
        if !ctx.points.take(samples) {
            over_points = true;
            return ScanControl::Stop;
        }
        ScanControl::Continue
    })?;
    if timed_out {
        return Err(EngineError::Timeout);
    }
    if over_points {
        return Err(ctx.points.exceeded());
    }
    Ok((series, stats))
}
