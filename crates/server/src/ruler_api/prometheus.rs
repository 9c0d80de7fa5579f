//! Prometheus' rules and alerts API over the running groups, the JSON
//! Grafana's alerting views read from a Loki data source.

use super::ruler;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tenant::tenant_of;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use runakefli_ruler::alert::{Alert, AlertState};
use runakefli_ruler::group::GroupState;
use runakefli_ruler::time::rfc3339;
use serde_json::{json, Value};
use std::sync::Arc;

/// A value as Prometheus writes an alert's (`strconv.FormatFloat(v, 'e', -1, 64)`).
fn format_value(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format!("{v:e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

fn alert_json(a: &Alert) -> Value {
    json!({
        "labels": a.labels,
        "annotations": a.annotations,
        "state": a.state.as_str(),
        "activeAt": rfc3339(a.active_at_ns),
        "value": format_value(a.value),
    })
}

fn ok(data: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        // Loki's ruler sends `errorType` and `error` empty on success too.
        json!({"status": "success", "data": data, "errorType": "", "error": ""}).to_string(),
    )
        .into_response()
}

/// The `type` filter (`alert` or `record`), refused otherwise as Prometheus does.
fn type_filter(query: Option<&str>) -> Result<Option<bool>, ApiError> {
    let Some(q) = query else { return Ok(None) };
    for pair in q.split('&') {
        if let Some(v) = pair.strip_prefix("type=") {
            return match v {
                "alert" => Ok(Some(true)),
                "record" => Ok(Some(false)),
                "" => Ok(None),
                other => Err(ApiError::bad_request(format!(
                    "unsupported rule type {other:?}: must be alert or record"
                ))),
            };
        }
    }
    Ok(None)
}

fn group_json(g: &GroupState, only: Option<bool>) -> Value {
    let status = g.status.lock().clone();
    let rules: Vec<Value> = g
        .compiled
        .rules
        .iter()
        .zip(&status.rules)
        .filter(|(r, _)| only.is_none_or(|alerts| alerts == r.rule.is_alert()))
        .map(|(r, s)| {
            let health = match (&s.last_error, s.evaluated) {
                (Some(_), _) => "err",
                (None, true) => "ok",
                (None, false) => "unknown",
            };
            let last = if s.evaluated {
                rfc3339(s.last_eval_ns)
            } else {
                "0001-01-01T00:00:00Z".into()
            };
            let mut v = json!({
                "name": r.rule.name(),
                "query": r.rule.expr,
                "labels": r.rule.labels,
                "health": health,
                "lastError": s.last_error.clone().unwrap_or_default(),
                "evaluationTime": s.eval_secs,
                "lastEvaluation": last,
            });
            if r.rule.is_alert() {
                let alerts: Vec<Value> = s.alerts.active().map(alert_json).collect();
                let state = if s.alerts.active().any(|a| a.state == AlertState::Firing) {
                    "firing"
                } else if s.alerts.active().next().is_some() {
                    "pending"
                } else {
                    "inactive"
                };
                v["type"] = json!("alerting");
                v["state"] = json!(state);
                v["duration"] = json!(r.rule.for_.unwrap_or_default().as_secs_f64());
                v["keepFiringFor"] =
                    json!(r.rule.keep_firing_for.unwrap_or_default().as_secs_f64());
                v["annotations"] = json!(r.rule.annotations);
                v["alerts"] = Value::Array(alerts);
            } else {
                v["type"] = json!("recording");
            }
            v
        })
        .collect();
    json!({
        "name": g.compiled.group.name,
        "file": g.namespace,
        "rules": rules,
        "interval": g.interval.as_secs_f64(),
        "limit": g.compiled.group.limit,
        "evaluationTime": status.eval_secs,
        "lastEvaluation": if status.last_eval_ns > 0 { rfc3339(status.last_eval_ns) } else { "0001-01-01T00:00:00Z".into() },
    })
}

/// `GET /prometheus/api/v1/rules` (`?type=alert|record`).
pub async fn rules(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let ruler = ruler(&state)?;
    let only = type_filter(query.as_deref())?;
    let groups: Vec<Value> = ruler
        .groups(tenant.as_str())
        .iter()
        .map(|g| group_json(g, only))
        .filter(|g| only.is_none() || g["rules"].as_array().is_some_and(|r| !r.is_empty()))
        .collect();
    Ok(ok(json!({ "groups": groups })))
}

/// `GET /prometheus/api/v1/alerts`: every pending and firing alert.
pub async fn alerts(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let ruler = ruler(&state)?;
    let mut alerts = Vec::new();
    for g in ruler.groups(tenant.as_str()) {
        let status = g.status.lock();
        for r in &status.rules {
            alerts.extend(r.alerts.active().map(alert_json));
        }
    }
    Ok(ok(json!({ "alerts": alerts })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_prometheus_writes_them() {
        assert_eq!(format_value(5.0), "5e+00");
        assert_eq!(format_value(0.125), "1.25e-01");
        assert_eq!(format_value(1234.5), "1.2345e+03");
    }
}
