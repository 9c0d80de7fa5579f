//! Index endpoints Grafana uses for sizing and the Drilldown apps:
//! `/index/stats`, `/index/volume`, `/index/volume_range`.

use super::params::{parse_bounds, RawParams};
use super::query::{answer_json, engine_error, parse_matchers_only};
use crate::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use std::sync::Arc;

/// Loki's default number of groups in a volume answer.
const DEFAULT_VOLUME_LIMIT: usize = 100;

fn selector(
    state: &AppState,
    params: &RawParams,
) -> Result<Vec<runakefli_model::Matcher>, ApiError> {
    parse_matchers_only(state, params.get("query").unwrap_or(""))
}

/// `GET|POST /loki/api/v1/index/stats`.
pub async fn stats(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    answer_json(state, query, &headers, &body, |state, tenant, params| {
        let (start, end) = parse_bounds(params)?;
        let matchers = selector(state, params)?;
        let st = state
            .engine
            .index_stats(tenant, &matchers, start, end)
            .map_err(engine_error)?;
        let mut out = Vec::with_capacity(128);
        runakefli_engine::json::write_index_stats(&st, &mut out);
        Ok(out)
    })
    .await
}

/// `GET|POST /loki/api/v1/index/volume` and `/index/volume_range`.
pub async fn volume(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    answer_json(state, query, &headers, &body, |state, tenant, params| {
        let (start, end) = parse_bounds(params)?;
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
        let groups = state
            .engine
            .volume(tenant, &matchers, start, end, &targets, by_labels, limit)
            .map_err(engine_error)?;
        let mut out = Vec::with_capacity(1024);
        runakefli_engine::json::write_volume(&groups, end / 1_000_000, &mut out);
        Ok(out)
    })
    .await
}
