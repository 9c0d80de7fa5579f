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
//! checked before the handshake is answered.

use super::{Authenticator, Principal};
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::TENANT_HEADER;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use std::sync::Arc;

/// Paths served without credentials: readiness for load balancers and
/// orchestrators, and Prometheus metrics (which name tenants and count
/// their lines, but hold no log data; as Loki serves them).
pub const OPEN_PATHS: &[&str] = &["/ready", "/metrics"];

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
}

impl Refusal {
    fn status(&self) -> u16 {
        match self {
            Refusal::Missing | Refusal::Scheme | Refusal::Invalid => 401,
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
    if r.status() == 401 {
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

/// The middleware: passes every request through when auth is off.
pub async fn require(State(state): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let Some(auth) = state.auth.clone() else {
        return next.run(req).await;
    };
    let path = req.uri().path().to_string();
    if OPEN_PATHS.contains(&path.as_str()) {
        return next.run(req).await;
    }
    let checked = match credential(req.headers()) {
        Err(r) => Err(r),
        Ok(c) => match verify(&auth, c).await {
            None => Err(Refusal::Invalid),
            Some(p) if is_operator_path(&path) && p.tenants != super::Tenants::All => {
                Err(Refusal::NotOperator)
            }
            Some(p) => {
                tracing::trace!(principal = %p.name, path = %path, "authenticated");
                let chosen = choose_tenant(req.headers(), &p);
                // The web UI's tenant picker lists what this credential may use.
                req.extensions_mut().insert(p.tenants);
                chosen
            }
        },
    };
    match checked {
        Err(r) => {
            tracing::debug!(path = %path, reason = %r, "request refused by auth");
            refuse(&auth, &path, req.headers(), &r)
        }
        Ok(tenant) => {
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
}
