//! The shell every read endpoint of the Loki API runs in.
//!
//! A read endpoint differs from the others only in what it parses and what
//! it asks the engine; everything around that is here, once: the request's
//! parts ([`ReadRequest`]: query string, headers, form body), the tenant
//! ([`crate::tenant`]), a slot of the [`crate::query_gate`], the blocking
//! pool, cancellation when the client goes away ([`crate::cancel`]), and the
//! JSON answer. Failures are [`ApiError`]s; the `/metrics` layer
//! ([`crate::metrics_api::track`]) times and counts the requests by path.

use super::params::RawParams;
use crate::blocking;
use crate::cancel::CancelOnDrop;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use runakefli_engine::Engine;
use runakefli_model::TenantId;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The parameters of a request: the query string's, then, for a form body
/// (`application/x-www-form-urlencoded`), the body's.
pub(crate) fn raw_params(query: Option<String>, headers: &HeaderMap, body: &Bytes) -> RawParams {
    let mut p = RawParams::default();
    if let Some(q) = query {
        p.extend_from_urlencoded(&q);
    }
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"));
    if is_form && !body.is_empty() {
        p.extend_from_urlencoded(&String::from_utf8_lossy(body));
    }
    p
}

/// A 200 answer of a JSON body, with Loki's content type.
pub(crate) fn json_response(body: Vec<u8>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
        body,
    )
        .into_response()
}

/// A read request as every read endpoint takes it: the state, the query
/// string, the headers and the body (a form body carries parameters too).
/// Extracted last, after any path parameters; a body that cannot be read
/// is refused as axum refuses it.
pub struct ReadRequest {
    state: Arc<AppState>,
    query: Option<String>,
    headers: HeaderMap,
    body: Bytes,
}

impl FromRequest<Arc<AppState>> for ReadRequest {
    type Rejection = Response;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let query = req.uri().query().map(str::to_owned);
        let headers = req.headers().clone();
        let body = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(ReadRequest {
            state: state.clone(),
            query,
            headers,
            body,
        })
    }
}

impl ReadRequest {
    /// The request's headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The request's parameters ([`raw_params`]), for endpoints that read
    /// nothing through the engine.
    pub fn params(&self) -> RawParams {
        raw_params(self.query.clone(), &self.headers, &self.body)
    }

    /// Answers the request: resolves the tenant, gathers the parameters,
    /// waits for a slot of the [`crate::query_gate`], runs `answer` on the
    /// blocking pool holding the slot, and sends its JSON body. `answer`
    /// reads through an engine that stops when the client goes away (the
    /// future is dropped; see [`crate::cancel`]).
    pub async fn answer<F>(self, answer: F) -> Result<Response, ApiError>
    where
        F: FnOnce(&AppState, &Engine, &TenantId, &RawParams) -> Result<Vec<u8>, ApiError>
            + Send
            + 'static,
    {
        let ReadRequest {
            state,
            query,
            headers,
            body,
        } = self;
        let tenant = tenant_of(&headers, state.config.multi_tenant)?;
        let params = raw_params(query, &headers, &body);
        let slot = state.query_gate.enter().await?;
        let flag = Arc::new(AtomicBool::new(false));
        // Dropped with this future when the client disconnects.
        let guard = CancelOnDrop::new(flag.clone());
        let out = blocking(move || {
            let _slot = slot;
            let engine = state.request_engine(flag);
            answer(&state, &engine, &tenant, &params)
        })
        .await;
        guard.disarm();
        Ok(json_response(out?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_body_adds_parameters_after_the_query_string() {
        let mut form = HeaderMap::new();
        form.insert(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded; charset=utf-8"
                .parse()
                .expect("a header value"),
        );
        let body = Bytes::from_static(b"query=%7Bapp%3D%22a%22%7D&limit=5");
        let p = raw_params(Some("limit=10&start=1".into()), &form, &body);
        assert_eq!(p.get("query"), Some("{app=\"a\"}"));
        assert_eq!(p.get("start"), Some("1"));
        assert_eq!(p.get_all("limit"), ["10", "5"]);
        // Another body is not read for parameters.
        let p = raw_params(None, &HeaderMap::new(), &body);
        assert_eq!(p.get("query"), None);
    }
}
