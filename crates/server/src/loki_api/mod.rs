//! The Loki HTTP API: push, queries, metadata.

pub mod delete;
pub mod drilldown;
pub mod index;
pub mod params;
pub mod push;
pub mod query;
pub mod shell;
pub mod tail;
pub mod tail_slots;

use crate::state::AppState;
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// The push routes (`/loki/api/v1/push`, `/api/prom/push`), which the
/// router puts behind the push budget.
pub fn push_routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/loki/api/v1/push", post(push::push))
        .route("/api/prom/push", post(push::push))
}

/// Routes under `/loki/api/v1/` but the push routes ([`push_routes`]).
pub fn routes(_state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .merge(drilldown::routes())
        .route("/loki/api/v1/tail", get(tail::tail))
        .route(
            "/loki/api/v1/query_range",
            get(query::query_range).post(query::query_range),
        )
        .route(
            "/loki/api/v1/query",
            get(query::query_instant).post(query::query_instant),
        )
        .route(
            "/loki/api/v1/labels",
            get(query::labels).post(query::labels),
        )
        .route("/loki/api/v1/label", get(query::labels))
        .route(
            "/loki/api/v1/label/{name}/values",
            get(query::label_values).post(query::label_values),
        )
        .route(
            "/loki/api/v1/series",
            get(query::series).post(query::series),
        )
        .route(
            "/loki/api/v1/delete",
            post(delete::create)
                .put(delete::create)
                .get(delete::list)
                .delete(delete::cancel),
        )
        .route(
            "/loki/api/v1/index/stats",
            get(index::stats).post(index::stats),
        )
        .route(
            "/loki/api/v1/index/volume",
            get(index::volume).post(index::volume),
        )
        .route(
            "/loki/api/v1/index/volume_range",
            get(index::volume_range).post(index::volume_range),
        )
}
