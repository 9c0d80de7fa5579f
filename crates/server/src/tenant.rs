//! Which tenant a request acts for: `X-Scope-OrgID` when multi-tenancy is on,
//! the single default tenant otherwise (as Loki with `auth_enabled: false`).

use crate::error::ApiError;
use axum::http::HeaderMap;
use runakefli_model::TenantId;

/// The header Loki reads the tenant from.
pub const TENANT_HEADER: &str = "x-scope-orgid";

/// Resolves the request's tenant.
pub fn tenant_of(headers: &HeaderMap, multi_tenant: bool) -> Result<TenantId, ApiError> {
    if !multi_tenant {
        return Ok(TenantId::default_tenant());
    }
    let value = headers
        .get(TENANT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .unwrap_or("");
    if value.is_empty() {
        return Err(ApiError::new(401, "no org id"));
    }
    if value.contains('|') {
        return Err(ApiError::bad_request(
            "multiple tenant IDs are not supported",
        ));
    }
    TenantId::validate(value).map_err(ApiError::bad_request)?;
    Ok(TenantId::new(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_header_tenants() {
        let mut h = HeaderMap::new();
        assert_eq!(tenant_of(&h, false).unwrap().as_str(), "fake");
        assert_eq!(tenant_of(&h, true).unwrap_err().status, 401);
        h.insert(TENANT_HEADER, "team-a".parse().unwrap());
        assert_eq!(tenant_of(&h, true).unwrap().as_str(), "team-a");
        assert_eq!(tenant_of(&h, false).unwrap().as_str(), "fake");
        h.insert(TENANT_HEADER, "a/b".parse().unwrap());
        assert_eq!(tenant_of(&h, true).unwrap_err().status, 400);
    }
}
