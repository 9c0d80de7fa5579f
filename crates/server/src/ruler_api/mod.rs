//! The ruler's HTTP API (issue 46), as Loki serves it:
//!
//! - `GET /loki/api/v1/rules[/{namespace}[/{group}]]`: the tenant's rule
//!   groups as YAML (a map of namespace to groups; one group by name);
//! - `POST /loki/api/v1/rules/{namespace}`: a YAML rule group, created or
//!   replaced (checked first: 400 with the problems), 202;
//! - `DELETE /loki/api/v1/rules/{namespace}[/{group}]`: 202;
//! - the same under `/api/prom/rules` (Loki's older prefix);
//! - `GET /prometheus/api/v1/rules` and `/prometheus/api/v1/alerts`: the
//!   running groups' rules and alerts in Prometheus' JSON, as Grafana reads
//!   them ([`prometheus`]).
//!
//! Without `--rules-dir` every path answers 404.

mod loki;
mod prometheus;

use crate::error::ApiError;
use crate::state::AppState;
use axum::routing::get;
use axum::Router;
use runakefli_ruler::{Ruler, RulerError};
use std::sync::Arc;

/// The ruler's routes: under `/loki/api/v1/rules` and Loki's older
/// `/api/prom/rules` (the prefix Grafana's rule editor uses for Loki).
pub fn routes() -> Router<Arc<AppState>> {
    let mut router = Router::new();
    for prefix in ["/loki/api/v1/rules", "/api/prom/rules"] {
        router = router
            .route(prefix, get(loki::list_all))
            .route(
                &format!("{prefix}/{{namespace}}"),
                get(loki::list_namespace)
                    .post(loki::set_group)
                    .delete(loki::delete_namespace),
            )
            .route(
                &format!("{prefix}/{{namespace}}/{{group}}"),
                get(loki::get_group).delete(loki::delete_group),
            );
    }
    router
        .route("/prometheus/api/v1/rules", get(prometheus::rules))
        .route("/prometheus/api/v1/alerts", get(prometheus::alerts))
}

/// The ruler, or 404 when it is off.
fn ruler(state: &AppState) -> Result<Arc<Ruler>, ApiError> {
    state.ruler.clone().ok_or_else(|| {
        ApiError::new(
            404,
            "the ruler is not enabled: start the server with --rules-dir",
        )
    })
}

/// One status per ruler failure.
fn ruler_error(e: RulerError) -> ApiError {
    match e {
        RulerError::Invalid(_) | RulerError::BadRequest(_) => ApiError::bad_request(e.to_string()),
        RulerError::NotFound(_) => ApiError::new(404, e.to_string()),
        RulerError::Store(runakefli_ruler::store::StoreError::BadName { .. }) => {
            ApiError::bad_request(e.to_string())
        }
        RulerError::Store(_) => ApiError::internal(e.to_string()),
    }
}
