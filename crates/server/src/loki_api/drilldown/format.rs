//! `GET /loki/api/v1/format_query`: the query in LogQL's canonical form
//! (`{"status":"success","data":"…"}`), or Loki's 400
//! `{"status":"invalid-query","error":"…"}`.

use super::to_body;
use crate::error::ApiError;
use crate::loki_api::shell::{json_response, ReadRequest};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `GET|POST /loki/api/v1/format_query`.
pub async fn format_query(req: ReadRequest) -> Result<Response, ApiError> {
    let params = req.params();
    let text = params.get("query").unwrap_or("");
    match runakefli_logql::parse_expr_with(text, &req.state().parse_limits) {
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
