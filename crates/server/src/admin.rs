//! Health and administration: `/ready`, `/flush`, `/admin/storage/stats`, build info.

use crate::blocking;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// Admin routes.
pub fn routes(_state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/ready", get(ready))
        .route("/flush", post(flush))
        .route("/admin/storage/stats", get(storage_stats))
        .route("/loki/api/v1/status/buildinfo", get(buildinfo))
}

/// 200 `ready` while the store can acknowledge writes; 503 with the reason
/// once the write-ahead log has failed (or the server is shutting down), so
/// load balancers and orchestrators stop sending pushes to it.
async fn ready(State(state): State<Arc<AppState>>) -> Result<impl IntoResponse, ApiError> {
    match state.storage.health() {
        Ok(()) => Ok((StatusCode::OK, "ready\n")),
        Err(e) => Err(ApiError::unavailable(format!("not ready: {e}"))),
    }
}

/// Flushes every memtable to parts synchronously (Loki's `/flush`).
async fn flush(State(state): State<Arc<AppState>>) -> Result<StatusCode, ApiError> {
    blocking(move || state.storage.flush().map_err(ApiError::from)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn storage_stats(State(state): State<Arc<AppState>>) -> Result<impl IntoResponse, ApiError> {
    let stats = blocking(move || Ok(state.storage.stats())).await?;
    let body = serde_json::to_string(&stats).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body))
}

async fn buildinfo() -> impl IntoResponse {
    // Loki's keys, each a non-empty string (Grafana reads `version`).
    let body = serde_json::json!({
        "version": "3.0.0",
        "revision": env!("CARGO_PKG_VERSION"),
        "branch": "runakefli",
        "buildUser": "runakefli",
        "buildDate": "unknown",
        "goVersion": "none (Rust)",
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}
