//! The authentication layer: checks the `Authorization` header and decides
//! the request's tenant before any handler runs.
//!
//! - No or unusable credentials: 401 with `WWW-Authenticate` (`Basic` when
//!   users are configured, `Bearer` when tokens are) and the error in the
//!   endpoint's format (Loki's text; OTLP's `Status`; Elasticsearch's error
//!   object).
//! - `X-Scope-OrgID` present: it must be one of the credential's tenants,
//!   else 403. Absent: a credential with exactly one tenant gets it; with
//!   several (or `all_tenants`) the header stays absent and endpoints that
//!   need a tenant answer Loki's 401 `no org id`.
//! - The header the handlers see is the single checked value: extra
//!   `X-Scope-OrgID` headers are refused (400), never passed on.
//! - `/flush` and `/admin/…` act on every tenant's data: only credentials
//!   with `all_tenants` may use them ([`is_operator_path`]), others get 403.
//!
//! The WebSocket tail is covered like every route: the upgrade request is
//! checked before the handshake is answered. A browser cannot put
//! `Authorization` on a WebSocket, so on `/loki/api/v1/tail` only, a
//! request without that header may instead carry a tail ticket minted for
//! the same tenant and query ([`super::ticket`]).
//!
//! The web UI's own files (the page, its scripts and styles) hold no data
//! and are served without credentials ([`is_open`]), so the page can load
//! and ask for them itself. Its API calls carry [`UI_HEADER`]; their 401s
//! have no `WWW-Authenticate` challenge, so the browser does not open its
//! basic-auth prompt over the page's own login form. Every other client
//! gets the challenge as before.

use super::ticket::{TAIL_PATH, TICKET_PARAM};
use super::{Authenticator, Principal};
use crate::error::ApiError;
use crate::loki_api::params::RawParams;
use crate::state::AppState;
use crate::tenant::TENANT_HEADER;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use std::sync::Arc;
use std::time::Instant;

/// Paths served without credentials: readiness for load balancers and
/// orchestrators, and Prometheus metrics (which name tenants and count
/// their lines, but hold no log data; as Loki serves them).
pub const OPEN_PATHS: &[&str] = &["/ready", "/metrics"];

/// The header the web UI sends on each of its API calls (value `1`): a 401
/// answered to it has no `WWW-Authenticate` challenge.
pub const UI_HEADER: &str = "x-runakefli-ui";

/// Whether the request at `path` is served without credentials:
/// [`OPEN_PATHS`] and the web UI's files ([`crate::ui::is_page_request`]).
pub fn is_open(path: &str, headers: &HeaderMap) -> bool {
    OPEN_PATHS.contains(&path) || crate::ui::is_page_request(path, headers)
}

/// Whether the request comes from the web UI's own scripts.
fn from_ui(headers: &HeaderMap) -> bool {
    headers
        .get(UI_HEADER)
        .is_some_and(|v| v.as_bytes().trim_ascii() == b"1")
}

/// Paths that act on the whole store, not one tenant (flushing, storage
/// statistics): they need a credential with `all_tenants` (an operator's),
/// else 403.
pub fn is_operator_path(path: &str) -> bool {
    path == "/flush" || path.starts_with("/admin/")
}

/// The realm named in `WWW-Authenticate`.
pub const REALM: &str = "runakefli";

/// Credentials as sent.
#[derive(Debug, PartialEq, Eq)]
pub enum Credential {
    /// `Authorization: Basic base64(user:password)`.
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(String),
}

/// Why a request is refused before its handler.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header.
    #[error("authentication required")]
    Missing,
    /// A header that is not basic or bearer credentials.
    #[error("unsupported authorization scheme: use Basic or Bearer")]
    Scheme,
    /// Credentials that do not verify.
    #[error("invalid credentials")]
    Invalid,
    /// A tenant the credential may not use.
    #[error("tenant {0:?} is not allowed for these credentials")]
    Forbidden(String),
    /// An operator path asked for by a credential without `all_tenants`.
    #[error("this endpoint needs credentials with all_tenants")]
    NotOperator,
    /// More than one `X-Scope-OrgID` header, or one that is not text.
    #[error("multiple tenant IDs are not supported")]
    BadTenantHeader,
    /// A tail ticket that is unknown, already used, expired, or minted for
    /// another tenant or query.
    #[error("invalid tail ticket: unknown, used, expired, or for another tenant or query")]
    Ticket,
}

impl Refusal {
    fn status(&self) -> u16 {
        match self {
            Refusal::Missing | Refusal::Scheme | Refusal::Invalid | Refusal::Ticket => 401,
            Refusal::Forbidden(_) | Refusal::NotOperator => 403,
            Refusal::BadTenantHeader => 400,
        }
    }
}

/// Reads the `Authorization` header.
pub fn credential(headers: &HeaderMap) -> Result<Credential, Refusal> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(Refusal::Missing)?
        .to_str()
        .map_err(|_| Refusal::Invalid)?
        .trim();
    let (scheme, rest) = value.split_once(' ').ok_or(Refusal::Scheme)?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return Ok(Credential::Bearer(rest.to_string()));
    }
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(Refusal::Scheme);
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest)
        .map_err(|_| Refusal::Invalid)?;
    let text = String::from_utf8(decoded).map_err(|_| Refusal::Invalid)?;
    let (user, password) = text.split_once(':').ok_or(Refusal::Invalid)?;
    Ok(Credential::Basic {
        user: user.to_string(),
        password: password.to_string(),
    })
}

/// The tenant the request acts for, given what the credential may use:
/// `Some` to set as the only `X-Scope-OrgID`, `None` to leave it absent.
pub fn choose_tenant(headers: &HeaderMap, p: &Principal) -> Result<Option<String>, Refusal> {
    let mut values = headers.get_all(TENANT_HEADER).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(Refusal::BadTenantHeader);
    }
    let asked = match first {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| Refusal::BadTenantHeader)?.trim()),
    };
    match asked {
        None | Some("") => Ok(p.tenants.single().map(|t| t.as_str().to_string())),
        Some(t) if p.tenants.allows(t) => Ok(Some(t.to_string())),
        Some(t) => Err(Refusal::Forbidden(t.to_string())),
    }
}

async fn verify(auth: &Arc<Authenticator>, c: Credential) -> Option<Principal> {
    match c {
        Credential::Bearer(t) => auth.verify_token(&t),
        Credential::Basic { user, password } => auth.verify_basic(&user, &password).await,
    }
}

/// The refusal in the format of the endpoint at `path`.
fn refuse(auth: &Authenticator, path: &str, headers: &HeaderMap, r: &Refusal) -> Response {
    let e = ApiError::new(r.status(), r.to_string());
    let mut resp = match crate::metrics::Protocol::of_path(path) {
        Some(crate::metrics::Protocol::Otlp) => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            crate::otlp_api::status::error_response(&e, crate::otlp_api::WireFormat::of(ct))
        }
        Some(crate::metrics::Protocol::Elasticsearch) => crate::es_api::es_error(&e),
        _ => e.into_response(),
    };
    if r.status() == 401 && !from_ui(headers) {
        let h = resp.headers_mut();
        if auth.has_users() || !auth.has_tokens() {
            let v = format!("Basic realm=\"{REALM}\", charset=\"UTF-8\"");
            h.append(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&v).expect("the realm is visible ASCII"),
            );
        }
        if auth.has_tokens() {
            let v = format!("Bearer realm=\"{REALM}\"");
            h.append(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&v).expect("the realm is visible ASCII"),
            );
        }
    }
    resp
}

/// Who the request is from and the tenant it acts for: a tail ticket on
/// [`TAIL_PATH`] (when the request has no `Authorization` header), else the
/// `Authorization` header's credential. `query` is the request's query
/// string; `now` decides whether a ticket has expired.
pub async fn authenticate(
    auth: &Arc<Authenticator>,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    now: Instant,
) -> Result<(Principal, Option<String>), Refusal> {
    if path == TAIL_PATH && !headers.contains_key(header::AUTHORIZATION) {
        let mut params = RawParams::default();
        params.extend_from_urlencoded(query.unwrap_or(""));
        if let Some(value) = params.get(TICKET_PARAM) {
            let t = auth.tickets().take(value, now).ok_or(Refusal::Ticket)?;
            if params.get("query").unwrap_or("") != t.query {
                return Err(Refusal::Ticket);
            }
            let chosen = choose_tenant(headers, &t.principal)?;
            if chosen != t.tenant {
                return Err(Refusal::Ticket);
            }
            tracing::trace!(principal = %t.principal.name, "tail ticket used");
            return Ok((t.principal, chosen));
        }
    }
    let p = verify(auth, credential(headers)?)
        .await
        .ok_or(Refusal::Invalid)?;
    if is_operator_path(path) && p.tenants != super::Tenants::All {
        return Err(Refusal::NotOperator);
    }
    tracing::trace!(principal = %p.name, path = %path, "authenticated");
    let chosen = choose_tenant(headers, &p)?;
    Ok((p, chosen))
}

/// The middleware: passes every request through when auth is off.
pub async fn require(State(state): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let Some(auth) = state.auth.clone() else {
        return next.run(req).await;
    };
    let path = req.uri().path().to_string();
    if is_open(&path, req.headers()) {
        return next.run(req).await;
    }
    let checked = authenticate(
        &auth,
        &path,
        req.uri().query(),
        req.headers(),
        Instant::now(),
    )
    .await;
    match checked {
        Err(r) => {
            tracing::debug!(path = %path, reason = %r, "request refused by auth");
            refuse(&auth, &path, req.headers(), &r)
        }
        Ok((principal, tenant)) => {
            // The web UI's tenant picker lists what this credential may
            // use; its tail tickets are minted for the principal.
            req.extensions_mut().insert(principal.tenants.clone());
            req.extensions_mut().insert(principal);
            let headers = req.headers_mut();
            headers.remove(TENANT_HEADER);
            if let Some(t) = tenant {
                // Checked against the file's valid tenant names, or taken
                // from a header value that was already valid text.
                if let Ok(v) = HeaderValue::from_str(&t) {
                    headers.insert(TENANT_HEADER, v);
                }
            }
            next.run(req).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Tenants;
    use runakefli_model::TenantId;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn authorization_headers_parse() {
        let basic = |s: &str| {
            let b = base64::engine::general_purpose::STANDARD.encode(s);
            credential(&headers(&[("authorization", &format!("Basic {b}"))]))
        };
        assert_eq!(
            basic("u:p:q"),
            Ok(Credential::Basic {
                user: "u".into(),
                password: "p:q".into()
            })
        );
        assert_eq!(basic("nocolon"), Err(Refusal::Invalid));
        assert_eq!(
            credential(&headers(&[("authorization", "bearer  abc ")])),
            Ok(Credential::Bearer("abc".into()))
        );
        assert_eq!(credential(&headers(&[])), Err(Refusal::Missing));
        assert_eq!(
            credential(&headers(&[("authorization", "Digest x")])),
            Err(Refusal::Scheme)
        );
        assert_eq!(
            credential(&headers(&[("authorization", "Basic !!!")])),
            Err(Refusal::Invalid)
        );
    }

    #[test]
    fn the_tenant_is_checked_or_chosen() {
        let one = Principal {
            name: "x".into(),
            tenants: Tenants::Only(vec![TenantId::new("a")]),
        };
        let two = Principal {
            name: "y".into(),
            tenants: Tenants::Only(vec![TenantId::new("a"), TenantId::new("b")]),
        };
        let h = headers;
        assert_eq!(choose_tenant(&h(&[]), &one), Ok(Some("a".into())));
        assert_eq!(choose_tenant(&h(&[]), &two), Ok(None));
        assert_eq!(
            choose_tenant(&h(&[(TENANT_HEADER, " b ")]), &two),
            Ok(Some("b".into()))
        );
        assert_eq!(
            choose_tenant(&h(&[(TENANT_HEADER, "b")]), &one),
            Err(Refusal::Forbidden("b".into()))
        );
        assert_eq!(
            choose_tenant(&h(&[(TENANT_HEADER, "a|b")]), &two),
            Err(Refusal::Forbidden("a|b".into()))
        );
        assert_eq!(
            choose_tenant(&h(&[(TENANT_HEADER, "a"), (TENANT_HEADER, "b")]), &two),
            Err(Refusal::BadTenantHeader)
        );
    }

    /// An authenticator with one bearer token `tok` for tenants a and b.
    fn tokens_only() -> Arc<Authenticator> {
        let text = format!(
            "tokens: [{{name: t, sha256: {}, tenants: [a, b]}}]\n",
            crate::auth::secret::token_digest_hex("tok"),
        );
        Arc::new(Authenticator::new(crate::auth::Credentials::parse(&text).unwrap()).unwrap())
    }

    /// A tail request's query string: `query` (URL-encoded) and `ticket`.
    fn tail_query(query: &str, ticket: &str) -> String {
        let enc: String = query
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!("query={enc}&start=1&{TICKET_PARAM}={ticket}")
    }

    /// Mints a ticket for tenant `tenant` and `query` at `now`, as the
    /// token's principal.
    async fn mint(auth: &Arc<Authenticator>, tenant: &str, query: &str, now: Instant) -> String {
        let h = headers(&[("authorization", "Bearer tok"), (TENANT_HEADER, tenant)]);
        let (p, chosen) = authenticate(auth, "/ui/api/tail-ticket", None, &h, now)
            .await
            .unwrap();
        auth.tickets()
            .mint(p, chosen, query.to_string(), now)
            .unwrap()
    }

    #[tokio::test]
    async fn a_tail_ticket_works_once_for_its_tenant_and_query() {
        let auth = tokens_only();
        let now = Instant::now();
        let q = r#"{app="x"} |= "a b""#;
        let ticket = mint(&auth, "b", q, now).await;
        let as_b = headers(&[(TENANT_HEADER, "b")]);
        let qs = tail_query(q, &ticket);
        let (p, tenant) = authenticate(&auth, TAIL_PATH, Some(&qs), &as_b, now)
            .await
            .unwrap();
        assert_eq!(p.name, "t");
        assert_eq!(tenant.as_deref(), Some("b"));
        // A replay is refused.
        assert_eq!(
            authenticate(&auth, TAIL_PATH, Some(&qs), &as_b, now)
                .await
                .unwrap_err(),
            Refusal::Ticket
        );
        assert!(auth.tickets().is_empty());
    }

    #[tokio::test]
    async fn a_tail_ticket_for_another_tenant_or_query_is_refused() {
        let auth = tokens_only();
        let now = Instant::now();
        let q = r#"{app="x"}"#;
        // Minted for b, used for a (which the token may also use).
        let ticket = mint(&auth, "b", q, now).await;
        let as_a = headers(&[(TENANT_HEADER, "a")]);
        let r = authenticate(&auth, TAIL_PATH, Some(&tail_query(q, &ticket)), &as_a, now).await;
        assert_eq!(r.unwrap_err(), Refusal::Ticket);
        // Minted for b and used without a tenant (the token has two, so
        // none is chosen).
        let ticket = mint(&auth, "b", q, now).await;
        let r = authenticate(
            &auth,
            TAIL_PATH,
            Some(&tail_query(q, &ticket)),
            &headers(&[]),
            now,
        )
        .await;
        assert_eq!(r.unwrap_err(), Refusal::Ticket);
        // Another query.
        let ticket = mint(&auth, "b", q, now).await;
        let as_b = headers(&[(TENANT_HEADER, "b")]);
        let other = tail_query(r#"{app="y"}"#, &ticket);
        let r = authenticate(&auth, TAIL_PATH, Some(&other), &as_b, now).await;
        assert_eq!(r.unwrap_err(), Refusal::Ticket);
        // A refused ticket is spent: the right query cannot use it after.
        let r = authenticate(&auth, TAIL_PATH, Some(&tail_query(q, &ticket)), &as_b, now).await;
        assert_eq!(r.unwrap_err(), Refusal::Ticket);
        // A made-up ticket.
        let r = authenticate(&auth, TAIL_PATH, Some(&tail_query(q, "00ff")), &as_b, now).await;
        assert_eq!(r.unwrap_err(), Refusal::Ticket);
    }

    #[tokio::test]
    async fn an_expired_tail_ticket_is_refused() {
        let auth = tokens_only();
        let now = Instant::now();
        let q = r#"{app="x"}"#;
        let ticket = mint(&auth, "a", q, now).await;
        let as_a = headers(&[(TENANT_HEADER, "a")]);
        let later = now + crate::auth::ticket::TICKET_TTL;
        let r = authenticate(
            &auth,
            TAIL_PATH,
            Some(&tail_query(q, &ticket)),
            &as_a,
            later,
        )
        .await;
        assert_eq!(r.unwrap_err(), Refusal::Ticket);
        // Just before expiry it works.
        let ticket = mint(&auth, "a", q, now).await;
        let almost = later - std::time::Duration::from_millis(1);
        let r = authenticate(
            &auth,
            TAIL_PATH,
            Some(&tail_query(q, &ticket)),
            &as_a,
            almost,
        )
        .await;
        assert_eq!(r.unwrap().1.as_deref(), Some("a"));
    }

    #[tokio::test]
    async fn a_tail_ticket_on_any_other_path_is_ignored() {
        let auth = tokens_only();
        let now = Instant::now();
        let q = r#"{app="x"}"#;
        let ticket = mint(&auth, "a", q, now).await;
        let as_a = headers(&[(TENANT_HEADER, "a")]);
        let qs = tail_query(q, &ticket);
        for path in [
            "/loki/api/v1/query_range",
            "/loki/api/v1/tail/",
            "/api/prom/tail",
            "/ui/api/session",
        ] {
            let r = authenticate(&auth, path, Some(&qs), &as_a, now).await;
            assert_eq!(r.unwrap_err(), Refusal::Missing, "{path}");
        }
        // It was not spent there: the tail still takes it.
        let r = authenticate(&auth, TAIL_PATH, Some(&qs), &as_a, now).await;
        assert_eq!(r.unwrap().0.name, "t");
    }

    #[tokio::test]
    async fn the_ui_gets_no_basic_challenge_other_clients_do() {
        let text = format!(
            "users: [{{name: u, password_hash: '{}', tenants: [a]}}]\n",
            crate::auth::secret::hash_password("pw").unwrap(),
        );
        let auth = Authenticator::new(crate::auth::Credentials::parse(&text).unwrap()).unwrap();
        let path = "/loki/api/v1/labels";
        let client = refuse(&auth, path, &headers(&[]), &Refusal::Missing);
        assert_eq!(client.status(), 401);
        let challenge = client.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
        assert!(challenge.starts_with("Basic realm="), "{challenge}");
        let page = refuse(
            &auth,
            path,
            &headers(&[(UI_HEADER, "1")]),
            &Refusal::Missing,
        );
        assert_eq!(page.status(), 401);
        assert!(!page.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}
