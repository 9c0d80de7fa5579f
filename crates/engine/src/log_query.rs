//! Log queries: select streams, run the pipeline, keep the `limit` first
//! entries in the query's direction over all streams, group them by their
//! final label set.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::pipeline::{required_substrings, Pipeline};
use crate::result::{QueryStats, StreamResult};
use runakefli_logql::LogExpr;
use runakefli_model::{Backend, Direction, ScanControl, ScanRequest, TenantId, Timestamp};
use std::collections::HashMap;
use std::time::Instant;

struct Candidate {
    ts: i64,
    source: usize,
    seq: usize,
    line: String,
    labels: LabelSet,
}

/// Runs a log query over `[start, end)`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    backend: &dyn Backend,
    tenant: &TenantId,
    expr: &LogExpr,
    start: Timestamp,
    end: Timestamp,
    limit: usize,
    direction: Direction,
    deadline: Instant,
    stats: &mut QueryStats,
) -> Result<Vec<StreamResult>, EngineError> {
    let mut pipeline = Pipeline::new(&expr.pipeline).map_err(EngineError::Plan)?;
    let req = ScanRequest {
        tenant: tenant.clone(),
        matchers: expr.selector.clone(),
        start,
        end,
        direction,
        required_substrings: required_substrings(&expr.pipeline),
    };
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut sources: Vec<LabelSet> = Vec::new();
    let mut source_index: HashMap<u64, usize> = HashMap::new();
    let mut per_source: Vec<usize> = Vec::new();
    if limit == 0 {
        return Ok(Vec::new());
    }
    let mut timed_out = false;
    backend.scan(&req, &mut |info, batch| {
        if Instant::now() > deadline {
            timed_out = true;
            return ScanControl::Stop;
        }
        let src = *source_index.entry(info.id).or_insert_with(|| {
            sources.push(LabelSet::from(info.labels.as_ref()));
            per_source.push(0);
            sources.len() - 1
        });
        let base = sources[src].clone();
        for e in batch.entries {
            if e.ts < start || e.ts >= end {
                continue;
            }
            stats.lines_processed += 1;
            stats.bytes_processed += e.line.len() as u64;
            if let Some((line, labels)) = pipeline.process(e.ts, &e.line, &base, &e.metadata) {
                stats.post_filter_lines += 1;
                let seq = per_source[src];
                per_source[src] += 1;
                candidates.push(Candidate {
                    ts: e.ts,
                    source: src,
                    seq,
                    line: line.to_string(),
                    labels,
                });
                if per_source[src] >= limit {
                    return ScanControl::NextStream;
                }
            }
        }
        ScanControl::Continue
    })?;
    if timed_out {
        return Err(EngineError::Timeout);
    }
    stats.streams_matched = sources.len() as u64;
    let order: Vec<String> = sources.iter().map(|l| l.to_string()).collect();
    candidates.sort_by(|a, b| {
        let t = match direction {
            Direction::Forward => a.ts.cmp(&b.ts),
            Direction::Backward => b.ts.cmp(&a.ts),
        };
        t.then_with(|| order[a.source].cmp(&order[b.source]))
            .then(a.seq.cmp(&b.seq))
    });
    candidates.truncate(limit);
    stats.entries_returned = candidates.len() as u64;
    let mut groups: HashMap<LabelSet, usize> = HashMap::new();
    let mut out: Vec<StreamResult> = Vec::new();
    for c in candidates {
        let i = *groups.entry(c.labels.clone()).or_insert_with(|| {
            out.push(StreamResult {
                labels: c.labels,
                entries: Vec::new(),
            });
            out.len() - 1
        });
        out[i].entries.push((c.ts, c.line));
    }
    Ok(out)
}
