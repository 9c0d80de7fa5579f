//! `GET /metrics` and the layer that counts every request for it: the HTTP
//! side of [`crate::metrics`], reading the figures it shows off the app
//! state ([`AppState`]).

use crate::metrics::Scrape;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Every metric, the backend's and the ruler's included, in the text format.
fn render(state: &AppState) -> String {
    state.metrics.render(Scrape {
        cancelled_queries: state
            .cancelled_queries
            .load(std::sync::atomic::Ordering::Relaxed),
        queries_queued: state.query_gate.waiting(),
        push_inflight_bytes: state.push_gate.in_flight(),
        backend: state.store.metrics(),
        ruler: state.ruler.as_ref().map(|r| r.metrics()),
    })
}

/// `GET /metrics`.
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let body = crate::blocking(move || Ok(render(&state)))
        .await
        .unwrap_or_else(|e| format!("# metrics unavailable: {}\n", e.message));
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// The layer around every route ([`crate::metrics::Metrics::track`]): counts
/// refused pushes by reason, times read requests per endpoint and counts
/// them while they run.
pub async fn track(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    state.metrics.track(req, next).await
}
