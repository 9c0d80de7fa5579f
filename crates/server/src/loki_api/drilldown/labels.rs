//! `GET /loki/api/v1/detected_labels`: `{"detectedLabels":[{label, cardinality}]}`.

use super::{to_body, window};
use crate::error::ApiError;
use crate::loki_api::query::{answer_json_cancellable, engine_error, parse_matchers_only};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use std::sync::Arc;

/// `GET|POST /loki/api/v1/detected_labels` (`query` optional: every stream).
pub async fn detected_labels(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    answer_json_cancellable(state, query, &headers, &body, |state, engine, tenant, params| {
        let (start, end) = window(params)?;
        let matchers = match params.get("query") {
            Some(q) if !q.trim().is_empty() => parse_matchers_only(state, q)?,
            _ => Vec::new(),
        };
        let found = engine.detected_labels(tenant, &matchers, start, end)
            .map_err(engine_error)?;
        let list: Vec<serde_json::Value> = found
            .into_iter()
            .map(|(label, cardinality)| serde_json::json!({"label": label, "cardinality": cardinality}))
            .collect();
        to_body(&serde_json::json!({ "detectedLabels": list }))
    })
    .await
}
