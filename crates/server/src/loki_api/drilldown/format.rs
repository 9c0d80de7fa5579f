//! `GET /loki/api/v1/format_query`: the query in LogQL's canonical form
//! (`{"status":"success","data":"…"}`), or Loki's 400
//! `{"status":"invalid-query","error":"…"}`.

use super::to_body;
use crate::error::ApiError;
use crate::loki_api::query::{json_response, raw_params};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// `GET|POST /loki/api/v1/format_query`.
pub async fn format_query(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params = raw_params(query, &headers, &body);
    let text = params.get("query").unwrap_or("");
    match runakefli_logql::parse_expr_with(text, &state.parse_limits) {
        Ok(expr) => Ok(json_response(to_body(
            &json!({"status": "success", "data": expr.to_string()}),
        )?)),
        Err(e) => {
            let body = to_body(&json!({"status": "invalid-query", "error": e.to_string()}))?;
            let mut resp = json_response(body);
            *resp.status_mut() = StatusCode::BAD_REQUEST;
            Ok(resp.into_response())
        }
    }
}
