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

/// 200 `ready` while the backend can acknowledge writes; 503 with the reason
/// once it cannot (the embedded store's write-ahead log has failed, the
/// server is shutting down, ClickHouse does not answer) or, for the embedded
/// store, while its data directory's file system has less free space than
/// `--ready-min-free-disk`, so load balancers and orchestrators stop sending
/// pushes to it before the disk is full.
async fn ready(State(state): State<Arc<AppState>>) -> Result<impl IntoResponse, ApiError> {
    if state.warming_up.load(std::sync::atomic::Ordering::Acquire) {
        return Err(ApiError::unavailable(
            "not ready: warming up (answering a first query of its own)",
        ));
    }
    blocking(move || {
        state
            .store
            .ops()
            .health()
            .map_err(|e| ApiError::unavailable(format!("not ready: {e}")))?;
        low_disk(&state).map_or(Ok(()), |m| Err(ApiError::unavailable(m)))
    })
    .await?;
    Ok((StatusCode::OK, "ready\n"))
}

/// Why the data directory's free space makes the server unready, if it does.
fn low_disk(state: &AppState) -> Option<String> {
    let min = state.config.ready_min_free_disk_bytes;
    let files = state.store.local_files().filter(|_| min > 0)?;
    match files.free_disk_bytes() {
        Ok(free) if free < min => Some(format!(
            "not ready: {free} bytes free on the file system of {}, below --ready-min-free-disk ({min} bytes)",
            state.config.data_dir.display()
        )),
        Ok(_) => None,
        Err(e) => Some(format!(
            "not ready: free space of {} unknown: {e}",
            state.config.data_dir.display()
        )),
    }
}

/// Makes buffered data permanent (Loki's `/flush`): the embedded store
/// flushes every memtable to parts synchronously; ClickHouse buffers nothing.
async fn flush(State(state): State<Arc<AppState>>) -> Result<StatusCode, ApiError> {
    blocking(move || state.store.ops().flush().map_err(ApiError::from)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The embedded store's statistics (501 on another backend).
async fn storage_stats(State(state): State<Arc<AppState>>) -> Result<impl IntoResponse, ApiError> {
    let body = blocking(move || {
        state
            .store
            .local_files_for("/admin/storage/stats")?
            .stats_json()
            .map_err(ApiError::internal)
    })
    .await?;
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
