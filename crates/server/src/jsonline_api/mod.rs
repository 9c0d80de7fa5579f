//! `POST /insert/jsonline` (VictoriaLogs' JSON-lines ingestion): one JSON
//! object per line. How documents map to streams, time and line is set per
//! request by the query parameters `_stream_fields`, `_time_field`,
//! `_msg_field`, `_line`, or the headers `VL-Stream-Fields`, `VL-Time-Field`,
//! `VL-Msg-Field`, `VL-Line` (a parameter wins over its header). Answers 200
//! with an empty body once the lines are in the fsynced WAL, 400 with a
//! plain-text reason for bad input (nothing of that request is stored).

use crate::blocking;
use crate::error::ApiError;
use crate::loki_api::params::RawParams;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use runakefli_ingest::jsondoc::DocOptions;
use runakefli_ingest::PushError;
use std::sync::Arc;

/// Routes of the JSON-lines endpoint.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/insert/jsonline", post(jsonline))
}

/// Document mapping options from the query string, falling back to the
/// `VL-*` headers ([`DocOptions::HEADERS`]).
pub fn doc_options(query: Option<&str>, headers: &HeaderMap) -> Result<DocOptions, PushError> {
    let mut params = RawParams::default();
    if let Some(q) = query {
        params.extend_from_urlencoded(q);
    }
    DocOptions::from_lookup(|name| {
        params.get(name).or_else(|| {
            let (_, header_name) = DocOptions::HEADERS.iter().find(|(p, _)| *p == name)?;
            headers.get(*header_name).and_then(|v| v.to_str().ok())
        })
    })
}

/// The `Content-Encoding` header, if readable.
pub(crate) fn content_encoding(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Handles one JSON-lines request.
pub async fn jsonline(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let opts = doc_options(query.as_deref(), &headers)
        .map_err(|e| ApiError::new(e.status(), e.to_string()))?;
    let encoding = content_encoding(&headers);
    blocking(move || {
        let request = runakefli_ingest::jsonline::decode_jsonline(
            &body,
            encoding.as_deref(),
            &opts,
            &state.push_limits,
        )
        .map_err(|e| ApiError::new(e.status(), e.to_string()))?;
        if request.entry_count() > 0 {
            state.append(crate::metrics::Protocol::Jsonline, &tenant, &request)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_win_over_headers() {
        let mut h = HeaderMap::new();
        h.insert("VL-Stream-Fields", "host".parse().unwrap());
        h.insert("VL-Msg-Field", "msg".parse().unwrap());
        let o = doc_options(Some("_stream_fields=app%2Cpod&_time_field=ts"), &h).unwrap();
        assert_eq!(o.stream_fields, vec!["app", "pod"]);
        assert_eq!(o.time_fields, vec!["ts"]);
        assert_eq!(o.msg_fields, vec!["msg"]);
        let o = doc_options(None, &h).unwrap();
        assert_eq!(o.stream_fields, vec!["host"]);
        assert!(doc_options(Some("_line=bogus"), &h).is_err());
    }
}
