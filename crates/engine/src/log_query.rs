//! Log queries: select streams, run the pipeline, keep the `limit` first
//! entries in the query's direction over all streams, group them by their
//! final label set.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::parallel::map_shards;
use crate::pipeline::{required_substrings, Pipeline};
use crate::result::{EntryLabels, QueryStats, StreamResult};
use crate::scope::{LogWindow, QueryScope};
use runakefli_logql::LogExpr;
use runakefli_model::{Backend, Direction, ScanControl, ScanRequest, TimeCutoff};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

struct Candidate {
    ts: i64,
    /// The source stream's labels as text (ties on time are broken by it).
    order: Arc<str>,
    seq: usize,
    line: String,
    labels: LabelSet,
    categories: EntryLabels,
}

/// The answer order: time in the query's direction, then stream labels,
/// then position within the stream.
fn answer_order(direction: Direction, a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    let t = match direction {
        Direction::Forward => a.ts.cmp(&b.ts),
        Direction::Backward => b.ts.cmp(&a.ts),
    };
    t.then_with(|| a.order.cmp(&b.order))
        .then(a.seq.cmp(&b.seq))
}

/// Keeps the best `limit` candidates; once there are that many, rows past
/// the worst of them cannot make the answer, which `cutoff` tells the scans.
fn prune(candidates: &mut Vec<Candidate>, limit: usize, direction: Direction, cutoff: &TimeCutoff) {
    candidates.sort_by(|a, b| answer_order(direction, a, b));
    candidates.truncate(limit);
    if candidates.len() == limit {
        if let Some(worst) = candidates.last() {
            cutoff.tighten(worst.ts);
        }
    }
}

/// What one shard's scan found.
#[derive(Default)]
struct ShardResult {
    candidates: Vec<Candidate>,
    streams: u64,
    stats: QueryStats,
    timed_out: bool,
}

/// Runs a log query over the window's `[start, end)`: through a lines plan
/// when fast paths may run and the backend answers one, else the streams
/// are scanned in parallel shards sharing one [`TimeCutoff`], each shard
/// keeping its best `limit` rows; the shards' rows are merged and the best
/// `limit` kept.
pub fn run(
    scope: &QueryScope,
    expr: &LogExpr,
    window: LogWindow,
    stats: &mut QueryStats,
) -> Result<Vec<StreamResult>, EngineError> {
    // Compile once up front so a bad pipeline is reported before any scan.
    Pipeline::new(&expr.pipeline).map_err(EngineError::Plan)?;
    if window.limit == 0 {
        return Ok(Vec::new());
    }
    if scope.fast_paths.enabled() {
        if let Some(out) = crate::pushdown::log::run(scope, expr, window, stats)? {
            return Ok(out);
        }
    }
    let LogWindow {
        start,
        end,
        limit,
        direction,
    } = window;
    let (backend, tenant, deadline) = (scope.backend, scope.tenant, scope.deadline);
    let cutoff = Arc::new(TimeCutoff::new(direction));
    let mut base_req =
        ScanRequest::new(tenant.clone(), expr.selector.clone(), start, end, direction);
    base_req.required_substrings = required_substrings(&expr.pipeline);
    base_req.cutoff = Some(cutoff.clone());
    let results = map_shards(|shard| {
        let mut req = base_req.clone();
        req.shard = Some(shard);
        scan_shard(backend, &expr.pipeline, &req, limit, deadline, &cutoff)
    });
    let mut candidates: Vec<Candidate> = Vec::new();
    for r in results {
        let r = r?;
        if r.timed_out {
            return Err(EngineError::Timeout);
        }
        stats.add(&r.stats);
        stats.streams_matched += r.streams;
        candidates.extend(r.candidates);
    }
    candidates.sort_by(|a, b| answer_order(direction, a, b));
    candidates.truncate(limit);
    stats.entries_returned = candidates.len() as u64;
    let mut groups: HashMap<LabelSet, usize> = HashMap::new();
    let mut out: Vec<StreamResult> = Vec::new();
    for c in candidates {
        let i = *groups.entry(c.labels.clone()).or_insert_with(|| {
            out.push(StreamResult {
                labels: c.labels,
                entries: Vec::new(),
                categories: Vec::new(),
            });
            out.len() - 1
        });
        out[i].entries.push((c.ts, c.line));
        out[i].categories.push(c.categories);
    }
    Ok(out)
}

/// One shard of a log query: the pipeline over its streams, at most
/// `limit` rows per stream, the best `limit` rows kept.
fn scan_shard(
    backend: &dyn Backend,
    stages: &[runakefli_logql::Stage],
    req: &ScanRequest,
    limit: usize,
    deadline: Instant,
    cutoff: &TimeCutoff,
) -> Result<ShardResult, EngineError> {
    let mut pipeline = Pipeline::new(stages).map_err(EngineError::Plan)?;
    let (start, end, direction) = (req.start, req.end, req.direction);
    let mut out = ShardResult::default();
    let mut current: Option<(u64, LabelSet, Arc<str>)> = None;
    let mut per_stream = 0usize;
    backend.scan(req, &mut |info, batch| {
        if Instant::now() > deadline {
            out.timed_out = true;
            return ScanControl::Stop;
        }
        if current.as_ref().is_none_or(|c| c.0 != info.id) {
            let labels = LabelSet::from(info.labels.as_ref());
            let order: Arc<str> = labels.to_string().into();
            current = Some((info.id, labels, order));
            per_stream = 0;
            out.streams += 1;
        }
        let Some((_, base, order)) = current.as_ref() else {
            return ScanControl::Stop;
        };
        for e in batch.entries {
            if e.ts < start || e.ts >= end || cutoff.excludes(e.ts) {
                continue;
            }
            out.stats.lines_processed += 1;
            out.stats.bytes_processed += e.line.len() as u64;
            if let Some((line, labels)) = pipeline.process(e.ts, &e.line, base, &e.metadata) {
                out.stats.post_filter_lines += 1;
                let categories = EntryLabels::of(&labels, base, &e.metadata);
                out.candidates.push(Candidate {
                    ts: e.ts,
                    order: order.clone(),
                    seq: per_stream,
                    line: line.to_string(),
                    labels,
                    categories,
                });
                per_stream += 1;
                if out.candidates.len() >= limit.saturating_mul(2).max(64) {
                    prune(&mut out.candidates, limit, direction, cutoff);
                }
                if per_stream >= limit {
                    return ScanControl::NextStream;
                }
            }
        }
        ScanControl::Continue
    })?;
    prune(&mut out.candidates, limit, direction, cutoff);
    Ok(out)
}
