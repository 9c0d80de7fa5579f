//! `POST /loki/api/v1/push`: decode, validate, append durably, answer 204.

use crate::blocking;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use std::sync::Arc;

/// Handles one push. Answers 204 only once the entries are in the fsynced WAL.
pub async fn push(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let header_str = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header_str(header::CONTENT_TYPE);
    let content_encoding = header_str(header::CONTENT_ENCODING);
    blocking(move || {
        let request = runakefli_ingest::loki::decode_push(
            &body,
            content_type.as_deref(),
            content_encoding.as_deref(),
            &state.push_limits,
        )
        .map_err(|e| {
            let mut message = e.to_string();
            if let Some(hint) = content_type_hint(content_type.as_deref(), &body) {
                message.push('\n');
                message.push_str(hint);
            }
            ApiError::new(e.status(), message)
        })?;
        state.append(crate::metrics::Protocol::Loki, &tenant, &request)?;
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A hint for a refused push whose Content-Type is missing or not one Loki
/// reads (curl's `-d` sends `application/x-www-form-urlencoded`, which Loki
/// decodes as snappy protobuf and fails on): Loki's message stays first.
fn content_type_hint(content_type: Option<&str>, body: &[u8]) -> Option<&'static str> {
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if media == "application/json" || media.contains("protobuf") {
        return None;
    }
    let looks_json = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    Some(if looks_json {
        "hint: the body looks like JSON; send it with Content-Type: application/json (curl: -H 'Content-Type: application/json')"
    } else if media.is_empty() {
        "hint: no Content-Type; use application/json for JSON bodies or application/x-protobuf for snappy-compressed protobuf"
    } else {
        "hint: Loki pushes are application/json or application/x-protobuf (snappy-compressed)"
    })
}

#[cfg(test)]
mod tests {
    use super::content_type_hint;

    #[test]
    fn hints_only_for_unknown_content_types() {
        assert_eq!(content_type_hint(Some("application/json"), b"{"), None);
        assert_eq!(
            content_type_hint(Some("application/x-protobuf"), b"x"),
            None
        );
        assert!(
            content_type_hint(Some("application/x-www-form-urlencoded"), b" {\"streams\"")
                .unwrap()
                .contains("looks like JSON")
        );
        assert!(content_type_hint(None, b"\x00")
            .unwrap()
            .contains("no Content-Type"));
    }
}
