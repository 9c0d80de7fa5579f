//! Index endpoints Grafana uses for sizing and the Drilldown apps:
//! `/index/stats`, `/index/volume`, `/index/volume_range` (a matrix per `step`).

use super::params::{parse_bounds, RawParams};
use super::query::{engine_error, parse_matchers_only};
use super::shell::ReadRequest;
use crate::error::ApiError;
use crate::state::AppState;
use axum::response::Response;

/// Loki's default number of groups in a volume answer.
const DEFAULT_VOLUME_LIMIT: usize = 100;

fn selector(
    state: &AppState,
    params: &RawParams,
) -> Result<Vec<runakefli_model::Matcher>, ApiError> {
    parse_matchers_only(state, params.get("query").unwrap_or(""))
}

/// `GET|POST /loki/api/v1/index/stats`.
pub async fn stats(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let (start, end) = parse_bounds(params)?;
        let matchers = selector(state, params)?;
        let st = engine
            .index_stats(tenant, &matchers, start, end)
            .map_err(engine_error)?;
        let mut out = Vec::with_capacity(128);
        runakefli_engine::json::write_index_stats(&st, &mut out);
        Ok(out)
    })
    .await
}

/// The label selection, grouping and limit of a volume request.
struct VolumeArgs {
    matchers: Vec<runakefli_model::Matcher>,
    targets: Vec<String>,
    by_labels: bool,
    limit: usize,
}

impl VolumeArgs {
    /// The volume of the selected streams over `[start, end]`, at most `limit` groups.
    fn volume(
        &self,
        engine: &runakefli_engine::Engine,
        tenant: &runakefli_model::TenantId,
        start: i64,
        end: i64,
        limit: usize,
    ) -> Result<Vec<(runakefli_engine::LabelSet, u64)>, ApiError> {
        engine
            .volume(
                tenant,
                &runakefli_engine::VolumeRequest {
                    matchers: &self.matchers,
                    target_labels: &self.targets,
                    by_labels: self.by_labels,
                    limit,
                },
                start,
                end,
            )
            .map_err(engine_error)
    }
}

fn volume_args(state: &AppState, params: &RawParams) -> Result<VolumeArgs, ApiError> {
    let matchers = selector(state, params)?;
    let targets: Vec<String> = params
        .get("targetLabels")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let by_labels = params.get("aggregateBy") == Some("labels");
    let limit = match params.get("limit") {
        None | Some("") => DEFAULT_VOLUME_LIMIT,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {v:?}")))?,
    };
    Ok(VolumeArgs {
        matchers,
        targets,
        by_labels,
        limit,
    })
}

/// `GET|POST /loki/api/v1/index/volume_range`: the volume of each group per
/// `step` bucket as a matrix. Bucket `i` covers `[start + i·step, start +
/// (i+1)·step)` and is stamped 1 ms before its end, the last one at `end`
/// (as Loki stamps them); the groups are those the whole window's volume
/// answer keeps under `limit`; buckets without bytes are left out. A step
/// covering the whole window gives the `/index/volume` vector, as in Loki.
pub async fn volume_range(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let a = volume_args(state, params)?;
        // Loki reads the rest as a range query's parameters (bounds, step,
        // resolution limit, interval), with the same errors.
        let range = super::params::parse_range(params)?;
        let (start, end, step) = (range.start, range.end, range.step);
        if step >= end - start {
            // One bucket: Loki answers as /index/volume does (a vector at `end`).
            let groups = a.volume(engine, tenant, start, end, a.limit)?;
            let mut out = Vec::with_capacity(1024);
            runakefli_engine::json::write_volume(&groups, end / 1_000_000, &mut out);
            return Ok(out);
        }
        let mut windows = Vec::new();
        let mut b = start;
        while b < end {
            let e = b.saturating_add(step).min(end);
            windows.push((b, e));
            b = e;
        }
        let volumes = engine
            .volume_range(
                tenant,
                &runakefli_engine::VolumeRequest {
                    matchers: &a.matchers,
                    target_labels: &a.targets,
                    by_labels: a.by_labels,
                    limit: a.limit,
                },
                (start, end),
                &windows,
            )
            .map_err(engine_error)?;
        let groups = volumes.whole;
        let mut series: Vec<Vec<serde_json::Value>> = vec![Vec::new(); groups.len()];
        for (&(_, e), window) in windows.iter().zip(volumes.per_window) {
            let t_ms = if e >= end {
                end / 1_000_000
            } else {
                e / 1_000_000 - 1
            };
            let t = serde_json::Number::from_f64(t_ms as f64 / 1000.0)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null);
            let t = if t_ms % 1000 == 0 {
                serde_json::json!(t_ms / 1000)
            } else {
                t
            };
            for (labels, bytes) in window {
                if bytes == 0 {
                    continue;
                }
                if let Some(i) = groups.iter().position(|(l, _)| *l == labels) {
                    series[i].push(serde_json::json!([t.clone(), bytes.to_string()]));
                }
            }
        }
        let result: Vec<serde_json::Value> = groups
            .iter()
            .zip(series)
            .filter(|(_, values)| !values.is_empty())
            .map(|((labels, _), values)| {
                let metric: serde_json::Map<String, serde_json::Value> = labels
                    .pairs()
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::json!(v)))
                    .collect();
                serde_json::json!({"metric": metric, "values": values})
            })
            .collect();
        let body = serde_json::json!({
            "status": "success",
            "data": {"resultType": "matrix", "result": result},
        });
        let mut out = serde_json::to_vec(&body).map_err(|e| ApiError::internal(e.to_string()))?;
        out.push(b'\n');
        Ok(out)
    })
    .await
}

/// `GET|POST /loki/api/v1/index/volume`.
pub async fn volume(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let (start, end) = parse_bounds(params)?;
        let a = volume_args(state, params)?;
        let groups = a.volume(engine, tenant, start, end, a.limit)?;
        let mut out = Vec::with_capacity(1024);
        runakefli_engine::json::write_volume(&groups, end / 1_000_000, &mut out);
        Ok(out)
    })
    .await
}
