//! `GET /loki/api/v1/detected_labels`: `{"detectedLabels":[{label, cardinality}]}`.

use super::{to_body, window};
use crate::error::ApiError;
use crate::loki_api::query::{engine_error, parse_matchers_only};
use crate::loki_api::shell::ReadRequest;
use axum::response::Response;

/// `GET|POST /loki/api/v1/detected_labels` (`query` optional: every stream).
pub async fn detected_labels(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
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
