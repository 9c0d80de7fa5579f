//! The Elasticsearch-compatible front: `_bulk` ingestion ([`bulk`]) and the
//! calls shippers (Filebeat, Logstash, Vector, the Python client) make before
//! they send ([`meta`]). Served at the root (`/_bulk`, `/{index}/_bulk`) and
//! under `/insert/elasticsearch` (VictoriaLogs' prefix), so either base URL
//! works. Every answer carries `X-Elastic-Product: Elasticsearch`, which the
//! official clients check. Errors use Elasticsearch's body:
//! `{"error":{"root_cause":[..],"type":..,"reason":..},"status":..}`.

pub mod bulk;
pub mod meta;

use crate::error::ApiError;
use crate::state::AppState;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// Path prefixes the Elasticsearch API is served under (besides the root).
pub const PREFIXES: &[&str] = &["", "/insert/elasticsearch"];

/// The product header the official clients require on every answer.
pub const PRODUCT_HEADER: &str = "x-elastic-product";

/// The `_bulk` routes under every prefix of [`PREFIXES`], which the router
/// puts behind the push budget.
pub fn bulk_routes() -> Router<Arc<AppState>> {
    let mut r = Router::new();
    for p in PREFIXES {
        r = r
            .route(&format!("{p}/_bulk"), post(bulk::bulk).put(bulk::bulk))
            .route(
                &format!("{p}/{{index}}/_bulk"),
                post(bulk::bulk_index).put(bulk::bulk_index),
            );
    }
    r.layer(axum::middleware::map_response(add_product_header))
}

/// The other routes of the Elasticsearch API (its start-up calls) under
/// every prefix of [`PREFIXES`].
pub fn routes() -> Router<Arc<AppState>> {
    let mut r = Router::new();
    for p in PREFIXES {
        // The bare `/` is shared with the web UI, which answers browsers and
        // hands every other client to [`meta::info`] (see `crate::ui::root`).
        if !p.is_empty() {
            r = r.route(p, get(meta::info));
        }
        r = r
            .route(&format!("{p}/_license"), get(meta::license))
            .route(&format!("{p}/_xpack"), get(meta::xpack))
            .route(&format!("{p}/_nodes"), get(meta::nodes))
            .route(&format!("{p}/_nodes/{{*rest}}"), get(meta::nodes))
            .route(&format!("{p}/_cluster/health"), get(meta::cluster_health))
            .route(
                &format!("{p}/_index_template/{{name}}"),
                get(meta::index_template)
                    .put(meta::acknowledged)
                    .post(meta::acknowledged),
            )
            .route(
                &format!("{p}/_template/{{name}}"),
                get(meta::legacy_template)
                    .put(meta::acknowledged)
                    .post(meta::acknowledged),
            )
            .route(
                &format!("{p}/_ilm/policy/{{name}}"),
                get(meta::ilm_policy).put(meta::acknowledged),
            );
        if !p.is_empty() {
            r = r.route(&format!("{p}/"), get(meta::info));
        }
    }
    r.layer(axum::middleware::map_response(add_product_header))
}

async fn add_product_header(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(PRODUCT_HEADER, HeaderValue::from_static("Elasticsearch"));
    resp
}

/// A JSON answer with a status.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Elasticsearch's error type for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 | 403 => "security_exception",
        413 => "content_too_long_exception",
        400..=499 => "illegal_argument_exception",
        _ => "internal_server_error",
    }
}

/// An error in Elasticsearch's body format.
pub fn es_error(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status.is_server_error() {
        tracing::warn!(status = e.status, message = %e.message, "elasticsearch request failed");
    }
    let kind = error_type(e.status);
    let cause = serde_json::json!({"type": kind, "reason": e.message});
    let body = serde_json::json!({
        "error": {"root_cause": [cause.clone()], "type": kind, "reason": e.message},
        "status": e.status,
    });
    json_response(status, body.to_string())
}
