//! `GET /loki/api/v1/detected_fields` and `detected_field/<name>/values`.
//!
//! Parameters as Loki: `query` (a log query; its parsers' labels count),
//! `start`/`end`, `line_limit` (how many of the newest lines are read,
//! default [`DEFAULT_LINE_LIMIT`]) and `limit` (most fields or values
//! returned, default [`DEFAULT_LIMIT`], echoed in the answer).

use super::{count_param, to_body, window};
use crate::error::ApiError;
use crate::loki_api::params::RawParams;
use crate::loki_api::query::{engine_error, parse_query};
use crate::loki_api::shell::ReadRequest;
use crate::state::AppState;
use axum::extract::Path;
use axum::response::Response;
use runakefli_engine::drilldown::fields::DetectedField;
use runakefli_logql::Expr;
use runakefli_model::TenantId;
use serde_json::{json, Value};

/// Lines read when `line_limit` is not given (Loki's default).
pub const DEFAULT_LINE_LIMIT: usize = 100;
/// Fields or values returned when `limit` is not given (Loki's default).
pub const DEFAULT_LIMIT: usize = 1000;

/// The detected fields of a request, and its `limit`.
fn detect(
    state: &AppState,
    engine: &runakefli_engine::Engine,
    tenant: &TenantId,
    params: &RawParams,
) -> Result<(Vec<DetectedField>, usize), ApiError> {
    let (start, end) = window(params)?;
    let limit = count_param(params, "limit", DEFAULT_LIMIT)?;
    let line_limit = count_param(params, "line_limit", DEFAULT_LINE_LIMIT)?;
    let expr = parse_query(state, params.get("query").unwrap_or(""))?;
    let Expr::Log(log) = expr else {
        return Err(ApiError::bad_request(
            "only log queries are supported for detected fields",
        ));
    };
    let fields = engine
        .detected_fields(tenant, &log, start, end, line_limit)
        .map_err(engine_error)?;
    Ok((fields, limit))
}

/// One field in Loki's shape: `jsonPath` only for JSON-detected fields,
/// `parsers` null for structured metadata.
fn field_json(f: &DetectedField) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("label".into(), json!(f.label));
    o.insert("type".into(), json!(f.field_type.name()));
    o.insert("cardinality".into(), json!(f.cardinality()));
    o.insert(
        "parsers".into(),
        match &f.parsers {
            None => Value::Null,
            Some(p) => json!(p.iter().map(|p| p.name()).collect::<Vec<_>>()),
        },
    );
    if let Some(path) = &f.json_path {
        o.insert("jsonPath".into(), json!(path));
    }
    Value::Object(o)
}

/// `GET|POST /loki/api/v1/detected_fields`.
pub async fn detected_fields(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let (fields, limit) = detect(state, engine, tenant, params)?;
        let list: Vec<Value> = fields.iter().take(limit).map(field_json).collect();
        to_body(&json!({ "fields": list, "limit": limit }))
    })
    .await
}

/// `GET|POST /loki/api/v1/detected_field/<name>/values`: the distinct values
/// of one field; `{}` when the field is not found, as Loki answers.
pub async fn field_values(
    Path(name): Path<String>,
    req: ReadRequest,
) -> Result<Response, ApiError> {
    req.answer(move |state, engine, tenant, params| {
        let (fields, limit) = detect(state, engine, tenant, params)?;
        match fields.iter().find(|f| f.label == name) {
            Some(f) if !f.values.is_empty() => {
                let values: Vec<&String> = f.values.iter().take(limit).collect();
                to_body(&json!({ "values": values, "limit": limit }))
            }
            _ => to_body(&json!({})),
        }
    })
    .await
}
