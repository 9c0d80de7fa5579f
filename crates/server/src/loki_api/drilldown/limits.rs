//! `GET /loki/api/v1/drilldown-limits`: the tenant limits Logs Drilldown
//! reads to switch its features on (level discovery, volumes, patterns),
//! with Loki's keys and JSON types; the values are this server's.

use super::to_body;
use crate::error::ApiError;
use crate::loki_api::shell::json_response;
use crate::state::AppState;
use axum::extract::State;
use axum::response::Response;
use runakefli_ingest::discover::SERVICE_NAME_SOURCES;
use runakefli_ingest::otlp::mapping::INDEX_ATTRIBUTES;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The level fields Loki's level discovery reads (its `log_level_fields`).
const LOG_LEVEL_FIELDS: &[&str] = &[
    "level",
    "LEVEL",
    "Level",
    "log.level",
    "severity",
    "SEVERITY",
    "Severity",
    "SeverityText",
    "lvl",
    "LVL",
    "Lvl",
    "severity_text",
    "Severity_Text",
    "SEVERITY_TEXT",
];

/// A duration as Loki prints one in limits (`1m`, `30d1h`, `0s`: days, no weeks).
pub fn go_model_duration(d: Duration) -> String {
    let mut s = d.as_secs();
    if s == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, len) in [
        ("y", 365 * 86400),
        ("d", 86400),
        ("h", 3600),
        ("m", 60),
        ("s", 1),
    ] {
        if s >= len {
            out.push_str(&format!("{}{unit}", s / len));
            s %= len;
        }
    }
    out
}

/// `GET /loki/api/v1/drilldown-limits`.
pub async fn drilldown_limits(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let c = &state.config;
    let service_sources: Vec<&str> = if c.discover_service_name {
        SERVICE_NAME_SOURCES.to_vec()
    } else {
        Vec::new()
    };
    let body = json!({
        "limits": {
            "discover_log_levels": c.discover_log_levels,
            "discover_service_name": service_sources,
            "log_level_fields": LOG_LEVEL_FIELDS,
            "max_entries_limit_per_query": c.max_entries_per_query,
            "max_line_size_truncate": false,
            "max_query_bytes_read": "0B",
            "max_query_length": "30d1h",
            "max_query_lookback": "0s",
            "max_query_range": "0s",
            "max_query_series": c.max_query_series,
            "metric_aggregation_enabled": false,
            "otlp_config": {"resource_attributes": {"attributes_config": [
                {"action": "index_label", "attributes": INDEX_ATTRIBUTES}
            ]}},
            "pattern_persistence_enabled": false,
            "query_timeout": go_model_duration(c.query_timeout),
            "retention_period": go_model_duration(c.retention_period.unwrap_or_default()),
            "volume_enabled": true,
            "volume_max_series": 1000,
        },
        "pattern_ingester_enabled": true,
        "version": concat!("runakefli-", env!("CARGO_PKG_VERSION")),
    });
    Ok(json_response(to_body(&body)?))
}

#[cfg(test)]
mod tests {
    use super::go_model_duration;
    use std::time::Duration;

    #[test]
    fn durations_as_loki_prints_them() {
        assert_eq!(go_model_duration(Duration::ZERO), "0s");
        assert_eq!(go_model_duration(Duration::from_secs(60)), "1m");
        assert_eq!(
            go_model_duration(Duration::from_secs(30 * 86400 + 3600)),
            "30d1h"
        );
    }
}
