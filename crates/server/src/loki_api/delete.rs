//! Loki's log deletion API, `/loki/api/v1/delete`:
//! - `POST ?query=<selector with line filters>&start=<t>&end=<t>` accepts a
//!   request (204); its rows are hidden from queries at once and purged from
//!   disk once the cancellation period (`--delete-request-cancel-period`,
//!   Loki's `delete_request_cancel_period`) has passed;
//! - `GET` lists the tenant's requests as Loki does (`request_id`,
//!   `start_time`, `end_time`, `query`, `status`, `created_at`; times in
//!   seconds);
//! - `DELETE ?request_id=<id>[&force=true]` cancels a request still in its
//!   cancellation period (204).
//!
//! Parameters come in the query string or a form body. Times take every
//! form the query endpoints accept (seconds, nanoseconds, RFC 3339).

use super::params::{now_ns, parse_timestamp, RawParams};
use super::shell::raw_params;
use crate::blocking;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use runakefli_logql::{Expr, LineFilterOp, LineFilterValue, Stage};
use runakefli_model::deletes::{CancelRefusal, DeleteRequest, DeleteStatus, LineFilter, LineTest};
use std::sync::Arc;

/// What a delete query may hold.
const UNSUPPORTED: &str =
    "unsupported delete query: only a stream selector and line filters (|=, !=, |~, !~) are allowed";

/// Turns a parsed delete query into the store's form.
fn to_request(text: &str, expr: Expr, start: i64, end: i64) -> Result<DeleteRequest, ApiError> {
    let Expr::Log(log) = expr else {
        return Err(ApiError::bad_request(UNSUPPORTED));
    };
    let mut filters = Vec::new();
    for stage in log.pipeline {
        let Stage::LineFilter(f) = stage else {
            return Err(ApiError::bad_request(UNSUPPORTED));
        };
        let negate = match f.op {
            LineFilterOp::Contains | LineFilterOp::Match => false,
            LineFilterOp::NotContains | LineFilterOp::NotMatch => true,
            _ => return Err(ApiError::bad_request(UNSUPPORTED)),
        };
        let regex = matches!(f.op, LineFilterOp::Match | LineFilterOp::NotMatch);
        let mut alternatives = Vec::new();
        for v in f.values {
            let LineFilterValue::Str(s) = v else {
                return Err(ApiError::bad_request(UNSUPPORTED));
            };
            alternatives.push(if regex {
                LineTest::Regex(
                    regex::Regex::new(&s)
                        .map_err(|e| ApiError::bad_request(format!("invalid regexp {s:?}: {e}")))?,
                )
            } else {
                LineTest::Contains(s)
            });
        }
        filters.push(LineFilter {
            negate,
            alternatives,
        });
    }
    Ok(DeleteRequest {
        id: String::new(),
        query: text.to_string(),
        matchers: log.selector,
        filters,
        start,
        end,
        created: 0,
        status: DeleteStatus::Received,
    })
}

/// Parameters of a new request.
fn parse_new(state: &AppState, p: &RawParams) -> Result<DeleteRequest, ApiError> {
    let query = p
        .get("query")
        .filter(|q| !q.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("query not set"))?;
    if p.get("start").is_none_or(str::is_empty) {
        return Err(ApiError::bad_request("start time not set"));
    }
    let start = parse_timestamp("start", p.get("start"), 0)?;
    let end = parse_timestamp("end", p.get("end"), now_ns())?;
    if end < start {
        return Err(ApiError::bad_request("start time must be before end time"));
    }
    let expr = super::query::parse_query(state, query)?;
    to_request(query, expr, start, end)
}

/// Loki's `model.Time` in JSON: seconds with up to millisecond precision.
fn seconds(ns: i64) -> serde_json::Value {
    let ms = ns.div_euclid(1_000_000);
    if ms % 1000 == 0 {
        serde_json::json!(ms / 1000)
    } else {
        serde_json::json!(ms as f64 / 1000.0)
    }
}

/// What a backend without delete requests answers 501 for.
const DELETES: &str = "delete requests (/loki/api/v1/delete)";

/// `POST|PUT /loki/api/v1/delete`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let params = raw_params(query, &headers, &body);
    blocking(move || {
        let deletes = state.store.deletes(DELETES)?;
        let req = parse_new(&state, &params)?;
        let stored = deletes.add_delete(&tenant, req)?;
        tracing::info!(tenant = %tenant.as_str(), request_id = %stored.id, query = %stored.query, "delete request accepted");
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /loki/api/v1/delete`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let out = blocking(move || {
        let list: Vec<serde_json::Value> = state
            .store
            .deletes(DELETES)?
            .delete_requests(&tenant)?
            .iter()
            .map(|r| {
                serde_json::json!({
                    "request_id": r.id,
                    "start_time": seconds(r.start),
                    "end_time": seconds(r.end),
                    "query": r.query,
                    "status": r.status.as_str(),
                    "created_at": seconds(r.created),
                })
            })
            .collect();
        serde_json::to_vec(&list).map_err(|e| ApiError::internal(e.to_string()))
    })
    .await?;
    Ok(super::shell::json_response(out))
}

/// `DELETE /loki/api/v1/delete`.
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let params = raw_params(query, &headers, &body);
    blocking(move || {
        let id = params
            .get("request_id")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ApiError::bad_request("request_id not set"))?;
        let force = params.get("force") == Some("true");
        match state
            .store
            .deletes(DELETES)?
            .cancel_delete(&tenant, id, force)?
        {
            Ok(()) => Ok(()),
            Err(CancelRefusal::NotFound) => Err(ApiError::new(
                404,
                "could not find delete request with given id",
            )),
            Err(CancelRefusal::TooLate) => Err(ApiError::bad_request(
                "deletion of request which is in process or already processed is not allowed",
            )),
        }
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(q: &str) -> Result<DeleteRequest, ApiError> {
        to_request(q, runakefli_logql::parse_expr(q).unwrap(), 0, 10)
    }

    #[test]
    fn selectors_and_line_filters_only() {
        let r = req(r#"{app="api"} |= "secret" or "token" !~ "keep.*""#).unwrap();
        assert_eq!(r.matchers.len(), 1);
        assert_eq!(r.filters.len(), 2);
        assert!(r.deletes(5, "a token here"));
        assert!(!r.deletes(5, "a token to keep it"));
        for bad in [
            r#"{app="api"} | json"#,
            r#"{app="api"} |> "<_> x""#,
            r#"count_over_time({app="api"}[1m])"#,
        ] {
            assert_eq!(req(bad).unwrap_err().message, UNSUPPORTED, "{bad}");
        }
        assert_eq!(seconds(1_500_000_000), serde_json::json!(1.5));
        assert_eq!(seconds(3_000_000_000), serde_json::json!(3));
    }
}
