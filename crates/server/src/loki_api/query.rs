//! Query endpoints: `query_range`, `query`, `labels`, `label/<name>/values`, `series`.
//! Parameters may come in the query string or, for POST, a form body; each
//! handler runs in the read shell ([`super::shell::ReadRequest`]).

use super::params::{parse_bounds, parse_instant, parse_range, RawParams};
use super::shell::ReadRequest;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::Response;
use runakefli_engine::{Engine, EngineError, QueryResponse, QueryResult};
use runakefli_logql::Expr;
use runakefli_model::Matcher;

pub(crate) fn engine_error(e: EngineError) -> ApiError {
    ApiError::new(e.status(), e.to_string())
}

/// Parses LogQL under the server's limits, answering Loki's 400 on a syntax
/// error, an over-long or too deeply nested query.
pub fn parse_query(state: &AppState, text: &str) -> Result<Expr, ApiError> {
    runakefli_logql::parse_expr_with(text, &state.parse_limits)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Parses a selector that must be label matchers only (labels/series endpoints).
pub(crate) fn parse_matchers_only(state: &AppState, text: &str) -> Result<Vec<Matcher>, ApiError> {
    runakefli_logql::parse_matchers_with(text, &state.parse_limits)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// The matcher groups of a series request as Loki reads them
/// (`loghttp.ParseSeriesQuery`, `logql.MatchForSeriesRequest`): `match` and
/// `match[]` together, deduplicated and sorted, parsed without the
/// empty-compatible check; a lone `{}` or no group at all lists every stream
/// (one group without matchers), and a group of no matchers among others is
/// refused.
pub(crate) fn series_groups(
    state: &AppState,
    params: &RawParams,
) -> Result<Vec<Vec<Matcher>>, ApiError> {
    let mut texts: Vec<&str> = params
        .get_all("match")
        .into_iter()
        .chain(params.get_all("match[]"))
        .collect();
    texts.sort_unstable();
    texts.dedup();
    if texts.len() == 1 && texts[0].replace(' ', "") == "{}" {
        texts.clear();
    }
    if texts.is_empty() {
        return Ok(vec![Vec::new()]);
    }
    texts
        .into_iter()
        .map(|t| {
            let ms = runakefli_logql::parse_matchers_unvalidated_with(t, &state.parse_limits)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            if ms.is_empty() {
                return Err(ApiError::bad_request(format!("0 matchers in group: {t}")));
            }
            Ok(ms)
        })
        .collect()
}

/// The optional `query` selector of the labels endpoints.
fn optional_selector(
    state: &AppState,
    params: &RawParams,
) -> Result<Option<Vec<Matcher>>, ApiError> {
    match params.get("query") {
        Some(q) if !q.trim().is_empty() => Ok(Some(parse_matchers_only(state, q)?)),
        _ => Ok(None),
    }
}

/// True when the request asks for Loki's `categorize-labels` encoding
/// (`X-Loki-Response-Encoding-Flags`, a comma-separated list of flags).
pub(crate) fn wants_categorized(headers: &HeaderMap) -> bool {
    headers
        .get_all("x-loki-response-encoding-flags")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|f| f.trim() == "categorize-labels")
}

/// True for Logs Drilldown's queries (`X-Query-Tags: Source=grafana-lokiexplore-app`),
/// which Loki answers with partial results rather than a series-limit error.
pub(crate) fn wants_partial(headers: &HeaderMap) -> bool {
    headers
        .get_all("x-query-tags")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            t.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("source") && v.trim() == "grafana-lokiexplore-app"
            })
        })
}

/// Runs `run` on the engine; past the series limit, when `partial`, runs it
/// again without the limit and keeps the first `max` series, returning
/// Loki's partial-results warning with them.
fn with_partial<F>(
    state: &AppState,
    engine: &Engine,
    partial: bool,
    run: F,
) -> Result<(QueryResponse, Option<String>), ApiError>
where
    F: Fn(&runakefli_engine::Engine) -> Result<QueryResponse, EngineError>,
{
    // Both runs read through the request's (cancellable) backend.
    match run(engine) {
        Err(EngineError::SeriesLimit(max)) if partial => {
            let limits = runakefli_engine::QueryLimits {
                max_query_series: 0,
                ..state.engine.limits().clone()
            };
            let unbounded = engine.with_limits(limits);
            let mut resp = run(&unbounded).map_err(engine_error)?;
            match &mut resp.result {
                QueryResult::Matrix(s) => s.truncate(max),
                QueryResult::Vector(s) => s.truncate(max),
                _ => {}
            }
            let warning = format!(
                "maximum number of series ({max}) reached for a single query; returning partial results"
            );
            Ok((resp, Some(warning)))
        }
        other => Ok((other.map_err(engine_error)?, None)),
    }
}

/// Writes an answer, with Loki's top-level `warnings` when there is one.
fn write_answer(resp: &QueryResponse, categorize: bool, warning: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    runakefli_engine::json::write_query_response_with(resp, categorize, &mut out);
    if let Some(w) = warning {
        while out.last().is_some_and(|b| b.is_ascii_whitespace()) {
            out.pop();
        }
        if out.last() == Some(&b'}') {
            out.pop();
            out.extend_from_slice(b",\"warnings\":[");
            runakefli_engine::json::write_str(&mut out, w);
            out.extend_from_slice(b"]}\n");
        }
    }
    out
}

/// `GET|POST /loki/api/v1/query_range`.
pub async fn query_range(req: ReadRequest) -> Result<Response, ApiError> {
    let categorize = wants_categorized(req.headers());
    let partial = wants_partial(req.headers());
    req.answer(move |state, engine, tenant, params| {
        let p = parse_range(params)?;
        let expr = parse_query(state, &p.query)?;
        let (resp, warning) = with_partial(state, engine, partial, |engine| {
            engine.query_range(
                tenant,
                &expr,
                runakefli_engine::RangeRequest {
                    start: p.start,
                    end: p.end,
                    step: p.step,
                    limit: p.limit,
                    direction: p.direction,
                },
            )
        })?;
        Ok(write_answer(&resp, categorize, warning.as_deref()))
    })
    .await
}

/// `GET|POST /loki/api/v1/query`.
pub async fn query_instant(req: ReadRequest) -> Result<Response, ApiError> {
    let categorize = wants_categorized(req.headers());
    let partial = wants_partial(req.headers());
    req.answer(move |state, engine, tenant, params| {
        let p = parse_instant(params)?;
        let expr = parse_query(state, &p.query)?;
        let (resp, warning) = with_partial(state, engine, partial, |engine| {
            engine.query_instant(tenant, &expr, p.time, p.limit, p.direction)
        })?;
        Ok(write_answer(&resp, categorize, warning.as_deref()))
    })
    .await
}

/// `GET|POST /loki/api/v1/labels`.
pub async fn labels(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let (start, end) = parse_bounds(params)?;
        let matchers = optional_selector(state, params)?;
        let names = engine
            .labels(tenant, matchers.as_deref(), start, end)
            .map_err(engine_error)?;
        let mut out = Vec::with_capacity(256);
        runakefli_engine::json::write_string_list(&names, &mut out);
        Ok(out)
    })
    .await
}

/// `GET|POST /loki/api/v1/label/<name>/values`.
pub async fn label_values(
    Path(name): Path<String>,
    req: ReadRequest,
) -> Result<Response, ApiError> {
    req.answer(move |state, engine, tenant, params| {
        let (start, end) = parse_bounds(params)?;
        let matchers = optional_selector(state, params)?;
        let values = engine
            .label_values(tenant, &name, matchers.as_deref(), start, end)
            .map_err(engine_error)?;
        let mut out = Vec::with_capacity(256);
        runakefli_engine::json::write_string_list(&values, &mut out);
        Ok(out)
    })
    .await
}

/// `GET|POST /loki/api/v1/series`.
pub async fn series(req: ReadRequest) -> Result<Response, ApiError> {
    req.answer(|state, engine, tenant, params| {
        let (start, end) = parse_bounds(params)?;
        let selectors = series_groups(state, params)?;
        let series = engine
            .series(tenant, &selectors, start, end)
            .map_err(engine_error)?;
        let mut out = Vec::with_capacity(1024);
        runakefli_engine::json::write_series(&series, &mut out);
        Ok(out)
    })
    .await
}
