//! `POST /_bulk` and `POST /{index}/_bulk`: NDJSON action/document pairs,
//! decoded by [`runakefli_ingest::es_bulk`]. Documents map to streams by the
//! VictoriaLogs parameters (`_stream_fields` etc., as query parameters or
//! `VL-*` headers; see [`crate::jsonline_api::doc_options`]). The good
//! items are appended to the fsynced WAL before the answer, which lists every
//! item with its status (201 stored, 400 refused) and `errors: true` when any
//! item was refused.

use super::{es_error, json_response};
use crate::blocking;
use crate::error::ApiError;
use crate::jsonline_api::{content_encoding, doc_options};
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;

/// `/_bulk`.
pub async fn bulk(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run(state, None, query, headers, body).await
}

/// `/{index}/_bulk`: the index is the default `_index` of the items.
pub async fn bulk_index(
    State(state): State<Arc<AppState>>,
    Path(index): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    run(state, Some(index), query, headers, body).await
}

async fn run(
    state: Arc<AppState>,
    index: Option<String>,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    match ingest(state, index, query, headers, body).await {
        Ok(outcome) => json_response(
            StatusCode::OK,
            outcome.response_json(started.elapsed().as_millis() as u64),
        ),
        Err(e) => es_error(&e),
    }
}

async fn ingest(
    state: Arc<AppState>,
    index: Option<String>,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<runakefli_ingest::es_bulk::BulkOutcome, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let opts = doc_options(query.as_deref(), &headers)
        .map_err(|e| ApiError::new(e.status(), e.to_string()))?;
    let encoding = content_encoding(&headers);
    blocking(move || {
        let outcome = runakefli_ingest::es_bulk::decode_bulk(
            &body,
            encoding.as_deref(),
            index.as_deref(),
            &opts,
            &state.push_limits,
        )
        .map_err(|e| ApiError::new(e.status(), e.to_string()))?;
        if outcome.request.entry_count() > 0 {
            state.append(
                crate::metrics::Protocol::Elasticsearch,
                &tenant,
                &outcome.request,
            )?;
        }
        Ok(outcome)
    })
    .await
}
