//! Bucket plans: kept rows counted into per-group time buckets.
//!
//! Workers take units from a shared cursor, each accumulating its own groups;
//! the groups are merged at the end. On columnar blocks the labels a query
//! reads come from the templates (which slot `| json` names a label, see
//! `query.rs`), the stream labels and the metadata; label filters and the
//! unwrap conversion are the engine's, called once per distinct value. Rows
//! the store cannot read this way (not an object template, a value `| json`
//! would unescape or reject, a filter or conversion error) are returned as
//! residual rows for the engine.

use super::agg::{base_key, decode_all_used, line_len, Agg};
use super::block::{BlockEval, TemplateCache};
use super::rows::filtered_rows;
use super::units::{Unit, UnitData};
use super::{on_workers, Context};
use runakefli_model::plan::{
    AnswerData, BucketGroup, BucketPlan, BucketValue, GroupBy, GroupKey, PlanAnswer, PlanStats,
    ResidualRows,
};
use runakefli_model::Entry;
use runakefli_storage::block::hash::FastMap as HashMap;
use runakefli_storage::StorageError;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs a bucket plan over `units`.
pub fn run(
    ctx: &Context<'_>,
    units: Vec<Unit>,
    plan: &BucketPlan,
) -> Result<PlanAnswer, StorageError> {
    let next = AtomicUsize::new(0);
    // Every unit's block is read when no line filter may skip it by its
    // bloom: only then are the next units' blocks worth fetching ahead (a
    // block skipped would be fetched for nothing, on every run).
    let read_all = ctx.q.filters.is_empty();
    let results = on_workers(|| -> Result<Agg<'_>, StorageError> {
        let mut agg = Agg::new(plan);
        let mut cache = TemplateCache::default();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(u) = units.get(i) else { break };
            if read_all {
                super::units::prefetch_ahead(&units, i);
            }
            ctx.check_deadline()?;
            run_unit(ctx, u, &mut agg, &mut cache).map_err(|e| ctx.unit_failed(u, e))?;
            ctx.over_bounds(agg.groups.len())?;
        }
        Ok(agg)
    });
    let mut index: HashMap<GroupKey, usize> = HashMap::default();
    let mut groups: Vec<BucketGroup> = Vec::new();
    let mut residual: HashMap<usize, Vec<Entry>> = HashMap::default();
    let mut stats = PlanStats::default();
    for r in results {
        let agg = r?;
        stats.rows_scanned += agg.stats.rows_scanned;
        stats.bytes_scanned += agg.stats.bytes_scanned;
        stats.rows_kept += agg.stats.rows_kept;
        stats.rows_from_columns += agg.stats.rows_from_columns;
        for (key, data) in agg.groups {
            match index.get(&key) {
                Some(&i) => groups[i].data.merge(data),
                None => {
                    index.insert(key.clone(), groups.len());
                    groups.push(BucketGroup { key, data });
                }
            }
        }
        for (s, mut rows) in agg.residual {
            residual.entry(s).or_default().append(&mut rows);
        }
    }
    let mut residual: Vec<ResidualRows> = residual
        .into_iter()
        .map(|(s, entries)| ResidualRows {
            stream: ctx.streams[s].clone(),
            entries,
        })
        .collect();
    residual.sort_by_key(|r| r.stream.id);
    Ok(PlanAnswer {
        data: AnswerData::Buckets(groups),
        residual,
        stats,
    })
}

fn run_unit(
    ctx: &Context<'_>,
    u: &Unit,
    agg: &mut Agg<'_>,
    cache: &mut TemplateCache,
) -> Result<(), StorageError> {
    let mut keep = std::mem::take(&mut cache.buffers.keep);
    let done = run_unit_with(ctx, u, agg, cache, &mut keep);
    cache.buffers.keep = keep;
    done
}

/// [`run_unit`] with the worker's row buffer.
fn run_unit_with(
    ctx: &Context<'_>,
    u: &Unit,
    agg: &mut Agg<'_>,
    cache: &mut TemplateCache,
    keep: &mut Vec<bool>,
) -> Result<(), StorageError> {
    let (lo, hi) = (ctx.q.lo, ctx.q.hi);
    let stream = &ctx.streams[u.stream];
    let UnitData::Columnar { part, block } = &u.data else {
        let rows = filtered_rows(ctx, u, lo, hi, &mut agg.stats)?;
        if ctx.q.fields().is_some() {
            if !rows.is_empty() {
                ctx.note_residual(&rows);
                agg.residual.entry(u.stream).or_default().extend(rows);
            }
            return Ok(());
        }
        for e in rows {
            agg.stats.rows_kept += 1;
            let g = agg.group(base_key(agg.plan, &e.metadata, &stream.labels));
            agg.add(g, e.ts, e.line.len() as f64);
        }
        return Ok(());
    };
    let Some(header) = super::block::header_if_may_match(&ctx.q, part, block, cache)? else {
        return Ok(());
    };
    let (r, primed) = ctx.decoded.open_reader(part, block, header)?;
    let Some(mut ev) = BlockEval::open(&r, &ctx.q, cache, lo, hi)? else {
        return Ok(());
    };
    let admit = ctx.admit_block(u64::from(block.meta.rows));
    ev.keep_decoded_as(ctx.decoded, part.serial(), block.index, admit);
    ev.keep_verdicts_in(part, block.index);
    let nrows = ev.rows();
    keep.clear();
    keep.resize(nrows, false);
    keep[ev.first..ev.end].iter_mut().for_each(|k| *k = true);
    agg.stats.rows_scanned += (ev.end - ev.first) as u64;
    agg.stats.bytes_scanned += ev.range_line_bytes_estimate();
    let mut lines: Vec<Option<String>> = Vec::new();
    ev.line_filters(&ctx.q, keep, &mut lines)?;
    if !super::row_mask::any_set(keep) {
        return Ok(());
    }
    // Rows' metadata matters to a plan without fields only through the
    // group key: not at all when no grouping label is a metadata name; to a
    // fields plan also through the labels it reads (see `metadata_matters`).
    let md_needed = r.has_metadata()
        && match (&agg.plan.group_by, ctx.q.fields()) {
            (GroupBy::Stream, _) => true,
            (GroupBy::Labels(_), Some(_)) => {
                let md_names = part.metadata_names(block.index, &r)?;
                super::fields::metadata_matters(ctx, &ev, &md_names)?
            }
            (GroupBy::Labels(names), None) => {
                let md_names = part.metadata_names(block.index, &r)?;
                names.iter().any(|n| md_names.contains(n))
            }
        };
    let md: Option<&runakefli_storage::block::RowMetadata> =
        if md_needed { Some(r.metadata()?) } else { None };
    let ts = r.timestamps();
    if admit {
        ctx.decoded.keep_decoded(part, block, &r, primed);
    }
    let row_md = |i: usize| md.map_or(&[][..], |m| m.row(i));
    let bytes = agg.plan.value == BucketValue::LineBytes;
    if bytes {
        decode_all_used(&mut ev, keep)?;
    }
    if ctx.q.fields().is_none() {
        let constant = md.is_none().then(|| agg.stream_group(ctx, u.stream));
        if let (Some(g), BucketValue::Count) = (constant, agg.plan.value) {
            let n = agg.count_kept(g, ts, ev.first, ev.end, keep);
            agg.stats.rows_kept += n;
            agg.stats.rows_from_columns += n;
            return Ok(());
        }
        // Rows share a few metadata sets: one group lookup per set.
        let mut group_of_set = vec![usize::MAX; md.map_or(0, |m| m.set_count())];
        for i in ev.first..ev.end {
            if !keep[i] {
                continue;
            }
            agg.stats.rows_kept += 1;
            agg.stats.rows_from_columns += 1;
            let g = match constant {
                Some(g) => g,
                None => {
                    let set = md.map_or(0, |m| m.set_of(i));
                    if group_of_set[set] == usize::MAX {
                        group_of_set[set] =
                            agg.group(base_key(agg.plan, row_md(i), &stream.labels));
                    }
                    group_of_set[set]
                }
            };
            let v = if bytes { line_len(&ev, i) as f64 } else { 1.0 };
            agg.add(g, ts[i], v);
        }
        return Ok(());
    }
    let rows = super::fields::BlockRows {
        keep,
        stream: u.stream,
        ts,
        md,
    };
    super::fields::run(ctx, &mut ev, agg, rows, cache)
}
