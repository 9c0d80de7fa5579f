//! The endpoints Grafana's Logs Drilldown app calls besides queries:
//! `detected_labels`, `detected_fields`, `detected_field/<name>/values`,
//! `patterns`, `drilldown-limits` and `format_query`, in Loki's shapes.

pub mod fields;
pub mod format;
pub mod labels;
pub mod limits;
pub mod patterns;

use super::params::{parse_bounds, RawParams};
use crate::error::ApiError;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

use crate::state::AppState;

/// Routes under `/loki/api/v1/`.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/loki/api/v1/detected_labels",
            get(labels::detected_labels).post(labels::detected_labels),
        )
        .route(
            "/loki/api/v1/detected_fields",
            get(fields::detected_fields).post(fields::detected_fields),
        )
        .route(
            "/loki/api/v1/detected_field/{name}/values",
            get(fields::field_values).post(fields::field_values),
        )
        .route(
            "/loki/api/v1/patterns",
            get(patterns::patterns).post(patterns::patterns),
        )
        .route(
            "/loki/api/v1/drilldown-limits",
            get(limits::drilldown_limits),
        )
        .route(
            "/loki/api/v1/format_query",
            get(format::format_query).post(format::format_query),
        )
}

/// `start`/`end` as the query endpoints take them, refusing an empty or
/// inverted window with Loki's message.
pub(crate) fn window(params: &RawParams) -> Result<(i64, i64), ApiError> {
    let (start, end) = parse_bounds(params)?;
    if end <= start {
        return Err(ApiError::bad_request(
            "end timestamp must not be before or equal to start time",
        ));
    }
    Ok((start, end))
}

/// An unsigned count parameter with its default.
pub(crate) fn count_param(
    params: &RawParams,
    name: &str,
    default: usize,
) -> Result<usize, ApiError> {
    match params.get(name) {
        None | Some("") => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("invalid {name}: {v:?}"))),
    }
}

/// Serialises an answer built with `serde_json`.
pub(crate) fn to_body(v: &serde_json::Value) -> Result<Vec<u8>, ApiError> {
    let mut out = serde_json::to_vec(v).map_err(|e| ApiError::internal(e.to_string()))?;
    out.push(b'\n');
    Ok(out)
}
