//! What Grafana's Logs Drilldown asks beyond LogQL: the labels and fields
//! a selection offers ([`labels`], [`fields`]) and its log patterns
//! ([`patterns`]). Each is computed from the stored data through the same
//! [`Backend`](runakefli_model::Backend) as queries.

pub mod fields;
pub mod labels;
pub mod patterns;
pub mod types;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::labelset::LabelSet;
use crate::log_query;
use crate::pipeline::Pipeline;
use crate::result::{QueryStats, StreamResult};
use crate::scope::LogWindow;
use runakefli_logql::LogExpr;
use runakefli_model::{Direction, Matcher, ScanControl, ScanRequest, TenantId, Timestamp};
use std::time::Instant;

impl Engine {
    /// The newest `line_limit` entries of the log query `expr` over
    /// `[start, end)`, with their label categories: the sample Loki reads
    /// detected fields and their values from.
    pub fn newest_entries(
        &self,
        tenant: &TenantId,
        expr: &LogExpr,
        start: Timestamp,
        end: Timestamp,
        line_limit: usize,
    ) -> Result<Vec<StreamResult>, EngineError> {
        let mut stats = QueryStats::default();
        let window = LogWindow {
            start,
            end,
            limit: line_limit,
            direction: Direction::Backward,
        };
        let scope = self.scope(tenant, Instant::now() + self.limits().query_timeout);
        log_query::run(&scope, expr, window, &mut stats)
    }

    /// `detected_fields`: the fields of the newest `line_limit` entries.
    pub fn detected_fields(
        &self,
        tenant: &TenantId,
        expr: &LogExpr,
        start: Timestamp,
        end: Timestamp,
        line_limit: usize,
    ) -> Result<Vec<fields::DetectedField>, EngineError> {
        let sample = self.newest_entries(tenant, expr, start, end, line_limit)?;
        Ok(fields::detect_fields(&sample))
    }

    /// `patterns`: the log patterns of the entries of `expr` in
    /// `[start, end)`, counted per `step` (ns).
    pub fn patterns(
        &self,
        tenant: &TenantId,
        expr: &LogExpr,
        start: Timestamp,
        end: Timestamp,
        step: i64,
    ) -> Result<Vec<patterns::Pattern>, EngineError> {
        let deadline = Instant::now() + self.limits().query_timeout;
        let mut pipeline = Pipeline::new(&expr.pipeline).map_err(EngineError::Plan)?;
        let req = ScanRequest::new(
            tenant.clone(),
            expr.selector.clone(),
            start,
            end,
            Direction::Forward,
        );
        let mut rows: Vec<(i64, String, String)> = Vec::new();
        let mut timed_out = false;
        let mut base: Option<(u64, LabelSet)> = None;
        self.backend().scan(&req, &mut |info, batch| {
            if Instant::now() > deadline {
                timed_out = true;
                return ScanControl::Stop;
            }
            if base.as_ref().is_none_or(|b| b.0 != info.id) {
                base = Some((info.id, LabelSet::from(info.labels.as_ref())));
            }
            let Some((_, labels)) = base.as_ref() else {
                return ScanControl::Stop;
            };
            for e in batch.entries {
                if e.ts < start || e.ts >= end {
                    continue;
                }
                if pipeline
                    .process(e.ts, &e.line, labels, &e.metadata)
                    .is_none()
                {
                    continue;
                }
                let level = e
                    .metadata
                    .iter()
                    .find(|(k, _)| k == "detected_level")
                    .map(|(_, v)| v.as_str())
                    .or_else(|| labels.get("detected_level"))
                    .unwrap_or("unknown");
                rows.push((e.ts, level.to_string(), e.line.to_string()));
            }
            ScanControl::Continue
        })?;
        if timed_out {
            return Err(EngineError::Timeout);
        }
        rows.sort_by_key(|r| r.0);
        Ok(patterns::patterns(
            rows.iter()
                .map(|(t, l, line)| (*t, l.as_str(), line.as_str())),
            step,
        ))
    }

    /// `detected_labels`: stream label names with their cardinality over
    /// the streams matching `matchers` in `[start, end)`.
    pub fn detected_labels(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<(String, usize)>, EngineError> {
        let series = self.series(tenant, &[matchers.to_vec()], start, end)?;
        Ok(labels::detected_labels(&series))
    }
}
