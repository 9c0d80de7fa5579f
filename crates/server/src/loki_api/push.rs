//! `POST /loki/api/v1/push`: decode, validate, append durably, answer 204.

use crate::blocking;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use std::sync::Arc;

/// Handles one push. Answers 204 only once the entries are in the fsynced WAL.
pub async fn push(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let header_str = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header_str(header::CONTENT_TYPE);
    let content_encoding = header_str(header::CONTENT_ENCODING);
    blocking(move || {
        let request = runakefli_ingest::loki::decode_push(
            &body,
            content_type.as_deref(),
            content_encoding.as_deref(),
            &state.push_limits,
        )
        .map_err(|e| ApiError::new(e.status(), e.to_string()))?;
        if request.entry_count() > 0 {
            state.append(crate::metrics::Protocol::Loki, &tenant, &request)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
