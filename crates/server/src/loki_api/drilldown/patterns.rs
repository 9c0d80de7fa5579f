//! `GET /loki/api/v1/patterns`: `{"status":"success","data":[{pattern,
//! level, samples: [[seconds, count], …]}]}` computed from the stored lines
//! (see `runakefli_engine::drilldown::patterns`). `step` defaults to
//! Loki's query default.

use super::{to_body, window};
use crate::error::ApiError;
use crate::loki_api::params::{default_step, parse_seconds_or_duration};
use crate::loki_api::query::{engine_error, parse_query};
use crate::loki_api::shell::ReadRequest;
use axum::response::Response;
use runakefli_logql::Expr;
use serde_json::json;

/// `GET|POST /loki/api/v1/patterns`.
pub async fn patterns(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let expr = parse_query(state, params.get("query").unwrap_or(""))?;
        let (start, end) = window(params)?;
        let step = match params.get("step") {
            None | Some("") => default_step(start, end),
            Some(v) => parse_seconds_or_duration("step", v)?,
        };
        if step <= 0 {
            return Err(ApiError::bad_request(
                "zero or negative query resolution step widths are not accepted. Try a positive integer",
            ));
        }
        let Expr::Log(log) = expr else {
            return Err(ApiError::bad_request("only log queries are supported for patterns"));
        };
        let found = engine.patterns(tenant, &log, start, end, step)
            .map_err(engine_error)?;
        let data: Vec<serde_json::Value> = found
            .iter()
            .map(|p| json!({"pattern": p.pattern, "level": p.level, "samples": p.samples}))
            .collect();
        to_body(&json!({"status": "success", "data": data}))
    })
    .await
}
