//! `GET /loki/api/v1/patterns` (placeholder).

use crate::error::ApiError;
use crate::loki_api::query::json_response;
use axum::response::Response;

/// `GET|POST /loki/api/v1/patterns`.
pub async fn patterns() -> Result<Response, ApiError> {
    Ok(json_response(
        b"{\"status\":\"success\",\"data\":[]}\n".to_vec(),
    ))
}
