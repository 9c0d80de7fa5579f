//! The start-up calls of Elasticsearch shippers, answered so they start
//! without special configuration: `GET /` (version), `_license`, `_xpack`,
//! `_nodes`, `_cluster/health`, index and legacy templates and ILM policies
//! (reported as present; a `PUT` is acknowledged and ignored, since
//! Rúnakefli has no mappings).

use super::json_response;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

/// The Elasticsearch version reported to clients. Shippers refuse servers
/// older than themselves or of another major, so this is a recent 8.x.
pub const ES_VERSION: &str = "8.17.0";

/// `GET /` and `HEAD /`: cluster name and version.
pub async fn info() -> Response {
    let body = json!({
        "name": "runakefli",
        "cluster_name": "runakefli",
        "cluster_uuid": "runakefli-0000000000000000",
        "version": {
            "number": ES_VERSION,
            "build_flavor": "default",
            "build_type": "runakefli",
            "build_hash": "runakefli",
            "build_date": "2026-01-01T00:00:00.000Z",
            "build_snapshot": false,
            "lucene_version": "9.12.0",
            "minimum_wire_compatibility_version": "7.17.0",
            "minimum_index_compatibility_version": "7.0.0"
        },
        "tagline": "You Know, for Search"
    });
    json_response(StatusCode::OK, body.to_string())
}

/// `GET /_license`: an active basic license.
pub async fn license() -> Response {
    let body = json!({"license": {
        "status": "active",
        "uid": "runakefli",
        "type": "basic",
        "issue_date": "2026-01-01T00:00:00.000Z",
        "issue_date_in_millis": 1_767_225_600_000u64,
        "max_nodes": 1000,
        "issued_to": "runakefli",
        "issuer": "runakefli",
        "start_date_in_millis": -1
    }});
    json_response(StatusCode::OK, body.to_string())
}

/// `GET /_xpack`: no features enabled.
pub async fn xpack() -> Response {
    let body = json!({
        "build": {"hash": "runakefli", "date": "2026-01-01T00:00:00.000Z"},
        "license": {"uid": "runakefli", "type": "basic", "mode": "basic", "status": "active"},
        "features": {}
    });
    json_response(StatusCode::OK, body.to_string())
}

/// `GET /_nodes[/...]`: one node with an HTTP address.
pub async fn nodes() -> Response {
    let body = json!({
        "_nodes": {"total": 1, "successful": 1, "failed": 0},
        "cluster_name": "runakefli",
        "nodes": {"runakefli": {
            "name": "runakefli",
            "version": ES_VERSION,
            "roles": ["data", "ingest", "master"],
            "http": {"publish_address": "127.0.0.1:3100"}
        }}
    });
    json_response(StatusCode::OK, body.to_string())
}

/// `GET /_cluster/health`: green.
pub async fn cluster_health() -> Response {
    let body = json!({
        "cluster_name": "runakefli",
        "status": "green",
        "timed_out": false,
        "number_of_nodes": 1,
        "number_of_data_nodes": 1,
        "active_primary_shards": 0,
        "active_shards": 0,
        "relocating_shards": 0,
        "initializing_shards": 0,
        "unassigned_shards": 0
    });
    json_response(StatusCode::OK, body.to_string())
}

/// `GET`/`HEAD /_index_template/{name}`: present, matching everything.
pub async fn index_template(Path(name): Path<String>) -> Response {
    let body = json!({"index_templates": [{
        "name": name,
        "index_template": {"index_patterns": [format!("{name}*")], "composed_of": [], "template": {}}
    }]});
    json_response(StatusCode::OK, body.to_string())
}

/// `GET`/`HEAD /_template/{name}`: present.
pub async fn legacy_template(Path(name): Path<String>) -> Response {
    let mut body = serde_json::Map::new();
    body.insert(
        name.clone(),
        json!({"order": 0, "index_patterns": [format!("{name}*")], "settings": {}, "mappings": {}, "aliases": {}}),
    );
    json_response(StatusCode::OK, serde_json::Value::Object(body).to_string())
}

/// `GET`/`HEAD /_ilm/policy/{name}`: present, empty.
pub async fn ilm_policy(Path(name): Path<String>) -> Response {
    let mut body = serde_json::Map::new();
    body.insert(name, json!({"version": 1, "policy": {"phases": {}}}));
    json_response(StatusCode::OK, serde_json::Value::Object(body).to_string())
}

/// `PUT` of a template or policy: acknowledged, nothing stored.
pub async fn acknowledged() -> Response {
    json_response(StatusCode::OK, json!({"acknowledged": true}).to_string())
}
