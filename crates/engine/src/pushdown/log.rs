//! Log queries as lines plans.

use super::build::{line_filter_pieces, pipeline_pieces};
use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::pipeline::Pipeline;
use crate::result::{EntryLabels, QueryStats, StreamResult};
use crate::scope::{LogWindow, QueryScope};
use runakefli_logql::LogExpr;
use runakefli_model::plan::{AnswerData, PlanOutput, QueryPlan};
use std::collections::HashMap;

/// Runs a log query whose pipeline is line filters, optionally followed by
/// `| json` (or `| logfmt`) and label filters, or by stages that drop no
/// line (`build::line_filter_pieces`), as a lines plan; `None` when the
/// query has other stages or the backend declines.
///
/// The engine runs the query's pipeline on every row of the answer: it
/// gives each row its labels (stream labels, metadata and, with `| json`,
/// the parsed ones) exactly as the plain path does, and re-checks the
/// filters. With a fields stage the answer may hold rows the backend could
/// not decide among the rows it kept (see
/// [`AnswerData::Lines`](runakefli_model::plan::AnswerData)); the first
/// `limit` rows the pipeline keeps are the answer.
///
/// The caller decides whether fast paths may run ([`QueryScope::fast_paths`]).
pub fn run(
    scope: &QueryScope,
    expr: &LogExpr,
    window: LogWindow,
    stats: &mut QueryStats,
) -> Result<Option<Vec<StreamResult>>, EngineError> {
    let LogWindow {
        start,
        end,
        limit,
        direction,
    } = window;
    let backend = scope.backend;
    let pieces =
        pipeline_pieces(&expr.pipeline, None).or_else(|| line_filter_pieces(&expr.pipeline));
    let Some(pieces) = pieces else {
        return Ok(None);
    };
    if pieces.fields.as_ref().is_some_and(|f| f.unwrap.is_some()) {
        return Ok(None);
    }
    let plan = QueryPlan {
        tenant: scope.tenant.clone(),
        selector: expr.selector.clone(),
        start,
        end,
        line_filters: pieces.line_filters,
        fields: pieces.fields,
        output: PlanOutput::Lines { limit, direction },
        deadline: Some(scope.deadline),
        cancel: None,
    };
    let answer = match crate::parallel::install(|| backend.execute(&plan)) {
        Ok(Some(a)) => a,
        Ok(None) => return Ok(None),
        Err(runakefli_model::BackendError::Cancelled) => return Err(EngineError::Timeout),
        Err(e) => return Err(e.into()),
    };
    let AnswerData::Lines(rows) = answer.data else {
        return Ok(None);
    };
    let mut pipeline = Pipeline::new(&expr.pipeline).map_err(EngineError::Plan)?;
    let mut bases: HashMap<u64, LabelSet> = HashMap::new();
    let mut groups: HashMap<LabelSet, usize> = HashMap::new();
    let mut out: Vec<StreamResult> = Vec::new();
    let mut streams = std::collections::HashSet::new();
    let mut returned = 0usize;
    for row in rows {
        if returned == limit {
            break;
        }
        let base = bases
            .entry(row.stream.id)
            .or_insert_with(|| LabelSet::from(row.stream.labels.as_ref()))
            .clone();
        streams.insert(row.stream.id);
        let e = row.entry;
        let Some((line, labels)) = pipeline.process(e.ts, &e.line, &base, &e.metadata) else {
            continue;
        };
        let line = line.to_string();
        let categories = EntryLabels::of(&labels, &base, &e.metadata);
        let i = *groups.entry(labels.clone()).or_insert_with(|| {
            out.push(StreamResult {
                labels,
                entries: Vec::new(),
                categories: Vec::new(),
            });
            out.len() - 1
        });
        out[i].entries.push((e.ts, line));
        out[i].categories.push(categories);
        stats.entries_returned += 1;
        returned += 1;
    }
    stats.lines_processed += answer.stats.rows_scanned;
    stats.bytes_processed += answer.stats.bytes_scanned;
    stats.post_filter_lines += answer.stats.rows_kept;
    stats.streams_matched += streams.len() as u64;
    stats.rows_from_columns += answer.stats.rows_from_columns;
    Ok(Some(out))
}
