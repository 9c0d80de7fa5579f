//! Loki's ruler API: rule groups as YAML, per tenant and namespace.

use super::{ruler, ruler_error};
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use runakefli_ruler::RuleGroup;
use std::sync::Arc;

fn yaml_response<T: serde::Serialize>(value: &T) -> Result<Response, ApiError> {
    let body = serde_yaml::to_string(value).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, "application/yaml")], body).into_response())
}

/// Loki's answer to a change: 202 and an empty success.
fn accepted() -> Response {
    (
        StatusCode::ACCEPTED,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"success","data":null,"errorType":"","error":""}"#,
    )
        .into_response()
}

async fn list(
    state: Arc<AppState>,
    headers: HeaderMap,
    namespace: Option<String>,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let ruler = ruler(&state)?;
    let groups = crate::blocking(move || {
        ruler
            .list(tenant.as_str(), namespace.as_deref(), None)
            .map_err(ruler_error)
    })
    .await?;
    if groups.is_empty() {
        return Err(ApiError::new(404, "no rule groups found"));
    }
    yaml_response(&groups)
}

/// `GET /loki/api/v1/rules`.
pub async fn list_all(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    list(state, headers, None).await
}

/// `GET /loki/api/v1/rules/{namespace}`.
pub async fn list_namespace(
    State(state): State<Arc<AppState>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    list(state, headers, Some(namespace)).await
}

/// `GET /loki/api/v1/rules/{namespace}/{group}`.
pub async fn get_group(
    State(state): State<Arc<AppState>>,
    Path((namespace, group)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let ruler = ruler(&state)?;
    let mut found = crate::blocking(move || {
        ruler
            .list(tenant.as_str(), Some(&namespace), Some(&group))
            .map_err(ruler_error)
    })
    .await?;
    let group = found
        .pop_first()
        .and_then(|(_, mut g)| g.pop())
        .ok_or_else(|| ApiError::new(404, "group does not exist"))?;
    yaml_response(&group)
}

/// `POST /loki/api/v1/rules/{namespace}`: the body is one rule group.
pub async fn set_group(
    State(state): State<Arc<AppState>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let ruler = ruler(&state)?;
    let group: RuleGroup = serde_yaml::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("unable to decode rule group: {e}")))?;
    crate::blocking(move || {
        ruler
            .set_group(tenant.as_str(), &namespace, group)
            .map_err(ruler_error)
    })
    .await?;
    Ok(accepted())
}

/// `DELETE /loki/api/v1/rules/{namespace}`.
pub async fn delete_namespace(
    State(state): State<Arc<AppState>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    delete(state, headers, namespace, None).await
}

/// `DELETE /loki/api/v1/rules/{namespace}/{group}`.
pub async fn delete_group(
    State(state): State<Arc<AppState>>,
    Path((namespace, group)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    delete(state, headers, namespace, Some(group)).await
}

async fn delete(
    state: Arc<AppState>,
    headers: HeaderMap,
    namespace: String,
    group: Option<String>,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let ruler = ruler(&state)?;
    crate::blocking(move || {
        ruler
            .delete(tenant.as_str(), &namespace, group.as_deref())
            .map_err(ruler_error)
    })
    .await?;
    Ok(accepted())
}
