//! The built-in web UI (issue 47): static assets embedded in the binary and
//! served at `/` (the page, for requests that accept `text/html`; other
//! clients get Elasticsearch's cluster information there, as before) and
//! `/ui/` (the page again) and `/ui/<file>` (its scripts and styles), plus
//! `/ui/api/session`, which tells the page whether it must pick a tenant and
//! which ones it may pick, and `/ui/api/tail-ticket`, which mints the ticket
//! its live tail opens the WebSocket with when authentication is on.
//!
//! The assets are hand-written ES modules, CSS and the HTML page under
//! `crates/server/ui/`, checked in as source: no build step, no CDN, the page
//! works offline. Each asset is answered with its content type, a strong
//! `ETag` (SHA-256 of the bytes; `If-None-Match` gets 304) and
//! `Cache-Control: no-cache` (the browser revalidates, so a new binary's
//! assets are seen at once), gzip-compressed once on first use when the
//! client accepts gzip.
//!
//! With `--auth-file`, the page and its files are served without
//! credentials (they hold no data; [`is_page_request`]); `/ui/api/…` and
//! every API route stay behind the authentication layer. The page asks for
//! a user and password or a bearer token in its own login form when a call
//! answers 401, keeps it in `sessionStorage` and sends it on every call.

use crate::auth::{Principal, Tenants};
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::TENANT_HEADER;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, OnceLock};

/// One embedded file.
struct Asset {
    /// The name under `/ui/` (`index.html` is also `/`).
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $ct:expr) => {
        Asset {
            name: $name,
            content_type: $ct,
            bytes: include_bytes!(concat!("../ui/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the UI.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("login.js", JS),
    asset!("editor.js", JS),
    asset!("chart.js", JS),
    asset!("lines.js", JS),
    asset!("time.js", JS),
    asset!("favicon.svg", "image/svg+xml"),
];

/// An asset ready to answer: its ETag and its gzip form.
struct Prepared {
    etag: HeaderValue,
    gzip: Option<Vec<u8>>,
}

fn prepared() -> &'static [Prepared] {
    static PREPARED: OnceLock<Vec<Prepared>> = OnceLock::new();
    PREPARED.get_or_init(|| ASSETS.iter().map(prepare).collect())
}

fn prepare(a: &Asset) -> Prepared {
    let digest = Sha256::digest(a.bytes);
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let etag = HeaderValue::from_str(&format!("\"{hex}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("\"0\""));
    Prepared {
        etag,
        gzip: gzip(a.bytes),
    }
}

/// The gzip form of `bytes`, when compressing works and makes it smaller.
fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes).ok()?;
    let out = enc.finish().ok()?;
    (out.len() < bytes.len()).then_some(out)
}

/// Total size of the embedded assets as served gzip-compressed (the
/// uncompressed size for files gzip does not shrink): the number the issue's
/// 500 KB budget is about.
pub fn gzipped_size() -> usize {
    ASSETS
        .iter()
        .zip(prepared())
        .map(|(a, p)| p.gzip.as_ref().map_or(a.bytes.len(), Vec::len))
        .sum()
}

/// The routes of the UI: `/`, `/ui/{file}` and `/ui/api/session`.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(root))
        .route("/ui/", get(index))
        .route("/ui/api/session", get(session))
        .route("/ui/api/tail-ticket", post(tail_ticket))
        .route("/ui/{file}", get(file))
}

/// Whether a request accepts `text/html` (a browser opening `/`).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/html"))
}

/// Whether the request at `path` asks for one of the page's files, which
/// hold no data and are served without credentials: `/` for a browser
/// ([`root`] answers it with the page), `/ui/` and `/ui/<file>` (one path
/// segment, so never `/ui/api/…`).
pub fn is_page_request(path: &str, headers: &HeaderMap) -> bool {
    match path.strip_prefix("/ui/") {
        Some(rest) => !rest.contains('/'),
        None => path == "/" && wants_html(headers),
    }
}

/// `GET /`: the page for a browser (a request that accepts `text/html`),
/// Elasticsearch's cluster information for every other client (shippers
/// probe `/` on start-up and need its JSON and product header).
async fn root(headers: HeaderMap) -> Response {
    if wants_html(&headers) {
        return serve("index.html", &headers);
    }
    let mut resp = crate::es_api::meta::info().await;
    resp.headers_mut().insert(
        crate::es_api::PRODUCT_HEADER,
        HeaderValue::from_static("Elasticsearch"),
    );
    resp
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn file(Path(name): Path<String>, headers: HeaderMap) -> Response {
    serve(&name, &headers)
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let mut parts = t.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| p.trim().replace(' ', "") == "q=0");
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
        })
}

fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.name == name) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    let (asset, prep) = (&ASSETS[i], &prepared()[i]);
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == "*" || t.trim().trim_start_matches("W/") == prep.etag);
    let mut resp = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        match &prep.gzip {
            Some(gz) if accepts_gzip(headers) => {
                let mut r = gz.clone().into_response();
                r.headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                r
            }
            _ => asset.bytes.into_response(),
        }
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::ETAG, prep.etag.clone());
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// The query parameter the page's live tail names its tenant with.
pub const TAIL_TENANT_PARAM: &str = "orgId";

/// Middleware, outside the authentication layer: a browser cannot set
/// headers on a WebSocket, so on `/loki/api/v1/tail` only, a request without
/// `X-Scope-OrgID` gets one from its `orgId` query parameter. The header is
/// then checked as any other (the credential must allow that tenant); a
/// request that has the header keeps it and the parameter is ignored.
pub async fn tail_tenant_param(mut req: axum::extract::Request, next: Next) -> Response {
    if req.uri().path() == "/loki/api/v1/tail" && !req.headers().contains_key(TENANT_HEADER) {
        let asked = axum::extract::Query::<HashMap<String, String>>::try_from_uri(req.uri())
            .ok()
            .and_then(|q| q.0.get(TAIL_TENANT_PARAM).cloned())
            .filter(|t| !t.trim().is_empty());
        if let Some(t) = asked {
            match HeaderValue::from_str(t.trim()) {
                Ok(v) => {
                    req.headers_mut().insert(TENANT_HEADER, v);
                }
                Err(_) => return ApiError::bad_request("invalid orgId").into_response(),
            }
        }
    }
    next.run(req).await
}

/// `GET /ui/api/session`: `{"multi_tenant": bool, "auth": bool, "tenants":
/// [...] | null}`. `tenants` lists the tenants the request's credential may
/// use (only its own, never other tenants' names); `null` means any tenant
/// may be named (no credentials file, or an `all_tenants` credential).
async fn session(
    State(state): State<Arc<AppState>>,
    allowed: Option<Extension<Tenants>>,
) -> Response {
    let tenants = match allowed.as_ref().map(|e| &e.0) {
        Some(Tenants::Only(list)) => serde_json::json!(list
            .iter()
            .map(|t| t.as_str().to_string())
            .collect::<Vec<_>>()),
        _ => serde_json::Value::Null,
    };
    no_store_json(serde_json::json!({
        "multi_tenant": state.config.multi_tenant,
        "auth": state.auth.is_some(),
        "tenants": tenants,
    }))
}

/// The body of `POST /ui/api/tail-ticket`.
#[derive(serde::Deserialize)]
struct TicketRequest {
    query: String,
}

/// `POST /ui/api/tail-ticket` with `{"query": "<LogQL>"}`, behind the
/// authentication layer: `{"ticket": "<hex>", "expires_in_seconds": 30}`,
/// a single-use ticket for a tail of that query, for the tenant this
/// request was checked for, by this request's credential
/// ([`crate::auth::ticket`]). 404 without `--auth-file` (the tail needs no
/// ticket then).
async fn tail_ticket(
    State(state): State<Arc<AppState>>,
    principal: Option<Extension<Principal>>,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> Response {
    let (Some(auth), Some(Extension(principal))) = (state.auth.as_ref(), principal) else {
        let e = ApiError::new(404, "tail tickets are used only with --auth-file");
        return e.into_response();
    };
    let asked: TicketRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return ApiError::bad_request(format!("expected {{\"query\": …}}: {e}")).into_response()
        }
    };
    if asked.query.trim().is_empty() {
        return ApiError::bad_request("query is empty").into_response();
    }
    let tenant = headers
        .get(TENANT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let ticket =
        match auth
            .tickets()
            .mint(principal, tenant, asked.query, std::time::Instant::now())
        {
            Ok(t) => t,
            Err(e) => return ApiError::too_many_requests(e.to_string()).into_response(),
        };
    no_store_json(serde_json::json!({
        "ticket": ticket,
        "expires_in_seconds": crate::auth::ticket::TICKET_TTL.as_secs(),
    }))
}

/// `body` as a JSON answer no cache keeps (it is per credential).
fn no_store_json(body: serde_json::Value) -> Response {
    let mut resp = body.to_string().into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_a_gzip_form_within_budget() {
        assert_eq!(prepared().len(), ASSETS.len());
        for (a, p) in ASSETS.iter().zip(prepared()) {
            assert!(!a.bytes.is_empty(), "{} is empty", a.name);
            if a.name.ends_with(".js") || a.name.ends_with(".css") {
                assert!(p.gzip.is_some(), "{} does not compress", a.name);
            }
        }
        assert!(gzipped_size() < 500 * 1024, "{} bytes", gzipped_size());
    }

    #[test]
    fn gzip_negotiation() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
            m
        };
        assert!(accepts_gzip(&h("gzip, deflate, br")));
        assert!(accepts_gzip(&h("br;q=1.0, gzip;q=0.8")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("br")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn etag_revalidation_and_unknown_files() {
        let first = serve("app.js", &HeaderMap::new());
        assert_eq!(first.status(), StatusCode::OK);
        assert_eq!(first.headers()[header::CONTENT_TYPE], JS);
        let etag = first.headers()[header::ETAG].clone();
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(serve("app.js", &h).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            serve("../Cargo.toml", &HeaderMap::new()).status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn only_the_pages_files_are_page_requests() {
        let browser = {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_static("text/html,*/*"));
            h
        };
        let none = HeaderMap::new();
        assert!(is_page_request("/", &browser));
        assert!(
            !is_page_request("/", &none),
            "Elasticsearch's / is not the page"
        );
        for p in ["/ui/", "/ui/app.js", "/ui/nothing-here"] {
            assert!(is_page_request(p, &none), "{p}");
        }
        for p in [
            "/ui/api/session",
            "/ui/api/tail-ticket",
            "/ui",
            "/uix/app.js",
            "/loki/api/v1/query_range",
            "/ui/a/b",
        ] {
            assert!(!is_page_request(p, &browser), "{p}");
        }
    }
}
