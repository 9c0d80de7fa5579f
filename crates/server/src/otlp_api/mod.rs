//! OTLP logs over HTTP: `POST /v1/logs` (the OTLP/HTTP default path) and
//! `POST /otlp/v1/logs` (Loki's path). Bodies are protobuf or OTLP/JSON,
//! optionally gzip-encoded; the mapping to streams is
//! [`runakefli_ingest::otlp`]'s.
//!
//! Answers, once the records are in the fsynced WAL:
//! - `/v1/logs`: 200 with an empty `ExportLogsServiceResponse`, encoded like
//!   the request (zero protobuf bytes, or `{}`), as the OTLP/HTTP spec asks.
//! - `/otlp/v1/logs`: 204 with no body, as Loki answers.
//!
//! OTLP exporters (collector and SDKs) take any 2xx as success. Errors are a
//! `google.rpc.Status` in the request's encoding (protobuf, or JSON
//! `{"code":3,"message":"..."}`) with HTTP 400 for bad input, 413 for an
//! oversized body and 500 for a storage failure ([`status`]).

pub mod status;

use crate::blocking;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use std::sync::Arc;

/// Routes of the OTLP/HTTP logs endpoint.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/logs", post(logs_otlp))
        .route("/otlp/v1/logs", post(logs_loki))
}

/// The wire encoding of a request, which the answer mirrors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`.
    Json,
}

impl WireFormat {
    /// The format named by a `Content-Type` (protobuf unless it says JSON).
    pub fn of(content_type: Option<&str>) -> WireFormat {
        match content_type {
            Some(ct)
                if ct
                    .trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json") =>
            {
                WireFormat::Json
            }
            _ => WireFormat::Protobuf,
        }
    }

    /// The `Content-Type` of answers in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            WireFormat::Protobuf => "application/x-protobuf",
            WireFormat::Json => "application/json",
        }
    }
}

/// `POST /v1/logs`: 200 with an empty export response.
pub async fn logs_otlp(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let format = WireFormat::of(header_str(&headers, header::CONTENT_TYPE).as_deref());
    match ingest(state, headers, body).await {
        Ok(()) => {
            let body: &'static [u8] = match format {
                WireFormat::Protobuf => b"",
                WireFormat::Json => b"{}",
            };
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, format.content_type())],
                body,
            )
                .into_response()
        }
        Err(e) => status::error_response(&e, format),
    }
}

/// `POST /otlp/v1/logs`: 204, as Loki.
pub async fn logs_loki(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let format = WireFormat::of(header_str(&headers, header::CONTENT_TYPE).as_deref());
    match ingest(state, headers, body).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => status::error_response(&e, format),
    }
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Decodes, maps and durably appends one export request.
async fn ingest(state: Arc<AppState>, headers: HeaderMap, body: Bytes) -> Result<(), ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let content_type = header_str(&headers, header::CONTENT_TYPE);
    let content_encoding = header_str(&headers, header::CONTENT_ENCODING);
    blocking(move || {
        let request = runakefli_ingest::otlp::decode_logs(
            &body,
            content_type.as_deref(),
            content_encoding.as_deref(),
            &state.push_limits,
        )
        .map_err(|e| ApiError::new(e.status(), e.to_string()))?;
        if request.entry_count() > 0 {
            state.append(crate::metrics::Protocol::Otlp, &tenant, &request)?;
        }
        Ok(())
    })
    .await
}
