//! Tenant isolation on every endpoint, against the real router on a loopback
//! port: with authentication off (the tenant from `X-Scope-OrgID`) and on
//! (`--auth-file`: basic and bearer credentials mapped to tenants).
//!
//! Two tenants, `alpha` and `beta`, push through every protocol (Loki JSON
//! and protobuf, `/api/prom/push`, OTLP, Elasticsearch `_bulk`, JSON lines);
//! every label name, label value, structured-metadata key and line of a
//! tenant carries its name. Every read endpoint (query, query_range, labels,
//! label values, series, index stats/volume/volume_range, detected_labels,
//! detected_fields, detected_field values, patterns, tail, delete list) is
//! then asked as each tenant: the answer must hold the tenant's own data
//! (so the check is not vacuous) and never the other's name, before and
//! after a flush to parts. A delete request of one tenant removes nothing of
//! the other's and cannot be seen or cancelled by it.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use base64::Engine as _;
use prost::Message as _;
use runakefli_server::auth::secret;
use runakefli_server::{router, AppState, ServerConfig};
use serde_json::{json, Value};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;

const TENANTS: [&str; 2] = ["alpha", "beta"];
/// Similar lines each tenant pushes in one more stream, enough for a
/// pattern (the engine's smallest cluster is 30 lines).
const PATTERN_LINES: usize = 40;
/// Entries each tenant pushes: one per protocol path, and the pattern lines.
const PUSHED: usize = 6 + PATTERN_LINES;
/// Streams each tenant pushes.
const STREAMS: usize = 7;
/// Matches every stream of every protocol (`service_name` is discovered).
const ALL: &str = r#"{service_name=~".+"}"#;

/// A running server.
struct Server {
    base: String,
    _dir: tempfile::TempDir,
}

/// Starts the router over a fresh store on its own runtime thread.
fn start(auth_file: Option<&str>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let auth_file = auth_file.map(|text| {
        let p = dir.path().join("credentials.yaml");
        std::fs::write(&p, text).unwrap();
        p
    });
    let config = ServerConfig {
        data_dir: dir.path().join("data"),
        multi_tenant: true,
        auth_file,
        ..ServerConfig::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let state = tokio::task::spawn_blocking(move || AppState::open(config))
                .await
                .unwrap()
                .unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, router(state)).await.unwrap();
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    Server {
        base: format!("http://{addr}"),
        _dir: dir,
    }
}

/// How a request identifies itself: headers added to every request.
type Who = Vec<(String, String)>;

fn org(tenant: &str) -> Who {
    vec![("X-Scope-OrgID".into(), tenant.into())]
}

fn basic(user: &str, password: &str) -> Who {
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    vec![("Authorization".into(), format!("Basic {b}"))]
}

fn bearer(token: &str) -> Who {
    vec![("Authorization".into(), format!("Bearer {token}"))]
}

fn with(mut who: Who, extra: Who) -> Who {
    who.extend(extra);
    who
}

/// An answer: status, `WWW-Authenticate` values, body.
struct Answer {
    status: u16,
    www: Vec<String>,
    body: String,
}

fn call(
    server: &Server,
    method: &str,
    path: &str,
    who: &Who,
    body: Option<(&str, &[u8])>,
) -> Answer {
    let mut r =
        ureq::request(method, &format!("{}{path}", server.base)).timeout(Duration::from_secs(30));
    for (k, v) in who {
        r = r.set(k, v);
    }
    let result = match body {
        Some((ct, b)) => r.set("Content-Type", ct).send_bytes(b),
        None => r.call(),
    };
    let resp = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    Answer {
        status: resp.status(),
        www: resp
            .all("www-authenticate")
            .into_iter()
            .map(String::from)
            .collect(),
        body: resp.into_string().unwrap(),
    }
}

fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// The window every read asks for.
fn window() -> String {
    let now = now_ns();
    format!(
        "start={}&end={}",
        now - 3_600_000_000_000,
        now + 60_000_000_000
    )
}

/// One push of `tenant`'s data per protocol path, all answered 2xx.
fn push_all(server: &Server, who: &Who, t: &str) {
    let ts = now_ns() - 120_000_000_000;
    let line = |proto: &str| format!("{t}-line-{proto} {t}_field=1 user={t}-user level=info");
    let json_push = |proto: &str| {
        json!({"streams": [{
            "stream": {"app": format!("{t}-{proto}"), format!("{t}_only"): "yes"},
            "values": [[ts.to_string(), line(proto), {format!("{t}_meta"): format!("{t}-meta")}]],
        }]})
        .to_string()
    };
    let proto = runakefli_ingest::loki::proto::PushRequest {
        streams: vec![runakefli_ingest::loki::proto::StreamAdapter {
            labels: format!(r#"{{app="{t}-proto"}}"#),
            entries: vec![runakefli_ingest::loki::proto::EntryAdapter {
                timestamp: Some(runakefli_ingest::loki::proto::Timestamp {
                    seconds: ts / 1_000_000_000,
                    nanos: (ts % 1_000_000_000) as i32 + 1,
                }),
                line: line("proto"),
                structured_metadata: vec![],
            }],
            hash: 0,
        }],
    };
    let snappy = snap::raw::Encoder::new()
        .compress_vec(&proto.encode_to_vec())
        .unwrap();
    let otlp = json!({"resourceLogs": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": format!("{t}-otlp")}}]},
        "scopeLogs": [{"logRecords": [{
            "timeUnixNano": (ts + 2).to_string(),
            "body": {"stringValue": line("otlp")}}]}]}]})
    .to_string();
    let ms = ts / 1_000_000;
    let bulk = format!(
        "{{\"create\":{{}}}}\n{}\n",
        json!({"app": format!("{t}-bulk"), "message": line("bulk"), "@timestamp": ms + 3})
    );
    let jsonl = format!(
        "{}\n",
        json!({"app": format!("{t}-jsonl"), "_msg": line("jsonl"), "_time": ms + 4})
    );
    let pattern_lines: Vec<Value> = (0..PATTERN_LINES)
        .map(|i| {
            json!([
                (ts + 10 + i as i64).to_string(),
                format!("{t}-pattern handled request {i} in {i}ms")
            ])
        })
        .collect();
    let patterned =
        json!({"streams": [{"stream": {"app": format!("{t}-pattern")}, "values": pattern_lines}]})
            .to_string();
    let pushes: [(&str, &str, Vec<u8>); 7] = [
        ("/loki/api/v1/push", "application/json", patterned.into()),
        (
            "/loki/api/v1/push",
            "application/json",
            json_push("json").into(),
        ),
        (
            "/api/prom/push",
            "application/json",
            json_push("prom").into(),
        ),
        ("/loki/api/v1/push", "application/x-protobuf", snappy),
        ("/otlp/v1/logs", "application/json", otlp.into()),
        (
            "/_bulk?_stream_fields=app&_time_field=@timestamp",
            "application/x-ndjson",
            bulk.into(),
        ),
        (
            "/insert/jsonline?_stream_fields=app",
            "application/stream+json",
            jsonl.into(),
        ),
    ];
    for (path, ct, body) in &pushes {
        let a = call(server, "POST", path, who, Some((ct, body)));
        assert!(
            (200..300).contains(&a.status),
            "{t} push {path} ({ct}): {} {}",
            a.status,
            a.body
        );
        if path.contains("_bulk") {
            assert!(a.body.contains("\"errors\":false"), "{}", a.body);
        }
    }
}

/// Every read endpoint, as a GET path (query string included).
fn read_paths() -> Vec<(&'static str, String)> {
    let w = window();
    let all = enc(ALL);
    let metric = enc(&format!(
        "sum by (service_name, app) (count_over_time({ALL}[2h]))"
    ));
    vec![
        (
            "query_range",
            format!("/loki/api/v1/query_range?query={all}&{w}&limit=1000"),
        ),
        (
            "query_range metric",
            format!("/loki/api/v1/query_range?query={metric}&{w}&step=60"),
        ),
        (
            "query",
            format!("/loki/api/v1/query?query={metric}&time={}", now_ns()),
        ),
        ("labels", format!("/loki/api/v1/labels?{w}")),
        (
            "label values",
            format!("/loki/api/v1/label/service_name/values?{w}"),
        ),
        (
            "label values app",
            format!("/loki/api/v1/label/app/values?{w}"),
        ),
        (
            "series",
            format!("/loki/api/v1/series?match%5B%5D={all}&{w}"),
        ),
        (
            "index/stats",
            format!("/loki/api/v1/index/stats?query={all}&{w}"),
        ),
        (
            "index/volume",
            format!("/loki/api/v1/index/volume?query={all}&{w}"),
        ),
        (
            "index/volume_range",
            format!("/loki/api/v1/index/volume_range?query={all}&{w}&step=60"),
        ),
        (
            "detected_labels",
            format!("/loki/api/v1/detected_labels?query={all}&{w}"),
        ),
        (
            "detected_fields",
            format!("/loki/api/v1/detected_fields?query={all}&{w}"),
        ),
        (
            "detected_field values",
            format!("/loki/api/v1/detected_field/user/values?query={all}&{w}"),
        ),
        (
            "patterns",
            format!("/loki/api/v1/patterns?query={all}&{w}&step=60"),
        ),
        ("delete list", "/loki/api/v1/delete".to_string()),
    ]
}

/// Whether `body` says anything of tenant `t`.
fn mentions(body: &str, t: &str) -> bool {
    body.contains(t)
}

/// Reads every endpoint as `who` (acting for `me`): the other tenant's name
/// never appears; the tenant's own data does (the delete list may be empty).
fn check_reads(server: &Server, who: &Who, me: &str) {
    let other = TENANTS.iter().find(|t| **t != me).unwrap();
    for (name, path) in read_paths() {
        let a = call(server, "GET", &path, who, None);
        assert_eq!(a.status, 200, "{me} {name}: {}", a.body);
        assert!(
            !mentions(&a.body, other),
            "{me} {name} sees {other}'s data: {}",
            a.body
        );
        // Stats are numbers only: checked below.
        let own_expected = !matches!(name, "delete list" | "index/stats");
        assert!(
            !own_expected || mentions(&a.body, me),
            "{me} {name} shows none of its own data: {}",
            a.body
        );
        if name == "query_range" {
            let v: Value = serde_json::from_str(&a.body).unwrap();
            let n: usize = v["data"]["result"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["values"].as_array().unwrap().len())
                .sum();
            assert_eq!(n, PUSHED, "{me}: {}", a.body);
        }
        if name == "index/stats" {
            let v: Value = serde_json::from_str(&a.body).unwrap();
            assert_eq!(v["entries"], PUSHED, "{me}: {}", a.body);
            assert_eq!(v["streams"], STREAMS, "{me}: {}", a.body);
        }
    }
    let frames = tail(server, who, me);
    assert!(!mentions(&frames, other), "{me} tail: {frames}");
}

/// Opens the live tail as `who` and gathers frames until the tenant's
/// [`PUSHED`] entries have arrived (the tail first sends what is stored).
fn tail(server: &Server, who: &Who, me: &str) -> String {
    let base = server.base.replacen("http://", "ws://", 1);
    let url = format!(
        "{base}/loki/api/v1/tail?query={}&start={}",
        enc(ALL),
        now_ns() - 3_600_000_000_000
    );
    let mut req = url.into_client_request().unwrap();
    for (k, v) in who {
        req.headers_mut().append(
            tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    let (mut ws, resp) = tungstenite::connect(req).expect("websocket handshake");
    assert_eq!(resp.status(), 101);
    if let MaybeTlsStream::Plain(s) = ws.get_mut() {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut text, mut entries) = (String::new(), 0);
    while entries < PUSHED && Instant::now() < deadline {
        match ws.read() {
            Ok(tungstenite::Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                for s in v["streams"].as_array().unwrap() {
                    entries += s["values"].as_array().unwrap().len();
                }
                text.push_str(t.as_str());
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("{me} tail: {e}"),
        }
    }
    assert_eq!(entries, PUSHED, "{me} tail: {text}");
    assert!(mentions(&text, me), "{me} tail: {text}");
    let _ = ws.close(None);
    text
}

/// The tail's handshake status for `who` (101 when it was upgraded).
fn tail_handshake(server: &Server, who: &Who) -> u16 {
    let base = server.base.replacen("http://", "ws://", 1);
    let url = format!("{base}/loki/api/v1/tail?query={}", enc(ALL));
    let mut req = url.into_client_request().unwrap();
    for (k, v) in who {
        req.headers_mut().append(
            tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    match tungstenite::connect(req) {
        Ok((_, resp)) => resp.status().as_u16(),
        Err(tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("tail handshake: {e}"),
    }
}

/// Delete requests stay within their tenant: `beta` deletes all its lines;
/// `alpha` neither sees that request nor can cancel it, and keeps every
/// line; `beta`'s lines are gone (so the delete did run).
fn check_deletes(server: &Server, alpha: &Who, beta: &Who) {
    let w = window();
    let path = format!("/loki/api/v1/delete?query={}&{w}", enc(ALL));
    let a = call(server, "POST", &path, beta, None);
    assert_eq!(a.status, 204, "{}", a.body);
    let list = call(server, "GET", "/loki/api/v1/delete", beta, None);
    let v: Value = serde_json::from_str(&list.body).unwrap();
    let id = v[0]["request_id"].as_str().unwrap().to_string();
    let seen = call(server, "GET", "/loki/api/v1/delete", alpha, None);
    assert_eq!(seen.status, 200);
    assert_eq!(seen.body.trim(), "[]", "alpha sees beta's delete requests");
    let cancel = call(
        server,
        "DELETE",
        &format!("/loki/api/v1/delete?request_id={id}"),
        alpha,
        None,
    );
    assert_eq!(cancel.status, 404, "{}", cancel.body);
    let count = |who: &Who| {
        let a = call(
            server,
            "GET",
            &format!("/loki/api/v1/query_range?query={}&{w}&limit=1000", enc(ALL)),
            who,
            None,
        );
        assert_eq!(a.status, 200, "{}", a.body);
        let v: Value = serde_json::from_str(&a.body).unwrap();
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["values"].as_array().unwrap().len())
            .sum::<usize>()
    };
    assert_eq!(count(alpha), PUSHED, "beta's delete removed alpha's lines");
    assert_eq!(count(beta), 0, "beta's delete did not apply");
    let still = call(server, "GET", "/loki/api/v1/delete", beta, None);
    assert!(still.body.contains(&id), "alpha cancelled beta's request");
}

fn flush(server: &Server, who: &Who) {
    let a = call(server, "POST", "/flush", who, None);
    assert_eq!(a.status, 204, "{}", a.body);
}

/// Pushes as both tenants, reads as both (in memory, then from parts, after
/// a flush as `operator`), then checks deletes.
fn exercise(server: &Server, alpha: &Who, beta: &Who, operator: &Who) {
    push_all(server, alpha, "alpha");
    push_all(server, beta, "beta");
    check_reads(server, alpha, "alpha");
    check_reads(server, beta, "beta");
    flush(server, operator);
    check_reads(server, alpha, "alpha");
    check_reads(server, beta, "beta");
}

#[test]
fn tenants_are_isolated_on_every_endpoint_by_x_scope_orgid() {
    let server = start(None);
    let (alpha, beta) = (org("alpha"), org("beta"));
    exercise(&server, &alpha, &beta, &alpha);
    check_deletes(&server, &alpha, &beta);
    // Multi-tenancy without a tenant: Loki's 401, on reads and pushes.
    let a = call(&server, "GET", "/loki/api/v1/labels", &vec![], None);
    assert_eq!((a.status, a.body.as_str()), (401, "no org id\n"));
    let a = call(
        &server,
        "POST",
        "/loki/api/v1/push",
        &vec![],
        Some(("application/json", b"{\"streams\":[]}")),
    );
    assert_eq!(a.status, 401);
}

/// The credentials file of the authenticated tests.
fn credentials() -> String {
    format!(
        "users:\n\
         \x20 - name: ua\n    password_hash: '{}'\n    tenants: [alpha]\n\
         \x20 - name: both\n    password_hash: '{}'\n    tenants: [alpha, beta]\n\
         tokens:\n\
         \x20 - name: tb\n    sha256: {}\n    tenants: [beta]\n\
         \x20 - name: ops\n    sha256: {}\n    all_tenants: true\n",
        secret::hash_password("pa").unwrap(),
        secret::hash_password("pboth").unwrap(),
        secret::token_digest_hex("token-beta"),
        secret::token_digest_hex("token-ops"),
    )
}

#[test]
fn tenants_are_isolated_on_every_endpoint_by_credentials() {
    let server = start(Some(&credentials()));
    // Single-tenant credentials, no header: basic for alpha, bearer for beta.
    let (alpha, beta) = (basic("ua", "pa"), bearer("token-beta"));
    exercise(&server, &alpha, &beta, &bearer("token-ops"));
    // A credential with several tenants chooses with X-Scope-OrgID and sees
    // only the chosen tenant's data.
    let both_alpha = with(basic("both", "pboth"), org("alpha"));
    let both_beta = with(basic("both", "pboth"), org("beta"));
    check_reads(&server, &both_alpha, "alpha");
    check_reads(&server, &both_beta, "beta");
    let ops_beta = with(bearer("token-ops"), org("beta"));
    check_reads(&server, &ops_beta, "beta");
    check_deletes(&server, &alpha, &beta);
}

/// A request body: content type and bytes.
type Body = Option<(&'static str, &'static [u8])>;

/// Every route that needs a credential, with a body where it takes one.
fn guarded_requests() -> Vec<(&'static str, String, Body)> {
    let mut out: Vec<(&'static str, String, Body)> = vec![
        (
            "POST",
            "/loki/api/v1/push".into(),
            Some(("application/json", b"{\"streams\":[]}")),
        ),
        (
            "POST",
            "/api/prom/push".into(),
            Some(("application/json", b"{\"streams\":[]}")),
        ),
        (
            "POST",
            "/otlp/v1/logs".into(),
            Some(("application/json", b"{}")),
        ),
        ("POST", "/v1/logs".into(), Some(("application/json", b"{}"))),
        (
            "POST",
            "/_bulk".into(),
            Some(("application/x-ndjson", b"{\"create\":{}}\n{}\n")),
        ),
        (
            "POST",
            "/insert/jsonline".into(),
            Some(("application/json", b"{}\n")),
        ),
        ("POST", "/loki/api/v1/delete".into(), None),
        ("DELETE", "/loki/api/v1/delete?request_id=x".into(), None),
        ("GET", "/".into(), None),
    ];
    for (_, p) in read_paths() {
        out.push(("GET", p, None));
    }
    out
}

#[test]
fn requests_without_valid_credentials_are_refused_everywhere_but_ready_and_metrics() {
    let server = start(Some(&credentials()));
    let cases: Vec<(&str, Who, u16, &str)> = vec![
        ("no credentials", vec![], 401, "authentication required"),
        (
            "wrong password",
            basic("ua", "pb"),
            401,
            "invalid credentials",
        ),
        (
            "unknown user",
            basic("nobody", "pa"),
            401,
            "invalid credentials",
        ),
        (
            "wrong token",
            bearer("token-alpha"),
            401,
            "invalid credentials",
        ),
        (
            "another scheme",
            vec![("Authorization".into(), "Digest x".into())],
            401,
            "unsupported authorization scheme",
        ),
        (
            "a tenant not granted",
            with(basic("ua", "pa"), org("beta")),
            403,
            "is not allowed for these credentials",
        ),
        (
            "a bearer tenant not granted",
            with(bearer("token-beta"), org("alpha")),
            403,
            "not allowed",
        ),
        (
            "a second tenant header",
            with(with(basic("ua", "pa"), org("alpha")), org("beta")),
            400,
            "multiple tenant IDs",
        ),
    ];
    for (what, who, status, message) in &cases {
        for (method, path, body) in guarded_requests() {
            let a = call(&server, method, &path, who, body);
            assert_eq!(a.status, *status, "{what}: {method} {path}: {}", a.body);
            assert!(
                a.body.contains(message),
                "{what}: {method} {path}: {}",
                a.body
            );
            if *status == 401 {
                assert_eq!(
                    a.www,
                    [
                        "Basic realm=\"runakefli\", charset=\"UTF-8\"",
                        "Bearer realm=\"runakefli\""
                    ],
                    "{what}: {method} {path}"
                );
            }
        }
        assert_eq!(tail_handshake(&server, who), *status, "{what}: tail");
    }
    // Loki's formats: text for the Loki API, Status for OTLP, the error
    // object for Elasticsearch.
    let a = call(&server, "GET", "/loki/api/v1/labels", &vec![], None);
    assert_eq!(a.body, "authentication required\n");
    let a = call(
        &server,
        "POST",
        "/otlp/v1/logs",
        &vec![],
        Some(("application/json", b"{}")),
    );
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["message"], "authentication required");
    assert_eq!(v["code"], 16, "UNAUTHENTICATED");
    let a = call(
        &server,
        "POST",
        "/_bulk",
        &vec![],
        Some(("application/x-ndjson", b"")),
    );
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["status"], 401, "{v}");
    // Open without credentials.
    for path in ["/ready", "/metrics"] {
        let a = call(&server, "GET", path, &vec![], None);
        assert_eq!(a.status, 200, "{path}: {}", a.body);
    }
    // Valid credentials pass; several tenants and no header: Loki's 401.
    assert_eq!(tail_handshake(&server, &basic("ua", "pa")), 101);
    let a = call(
        &server,
        "GET",
        "/loki/api/v1/labels",
        &basic("both", "pboth"),
        None,
    );
    assert_eq!((a.status, a.body.as_str()), (401, "no org id\n"));
    let a = call(&server, "GET", "/flush", &bearer("token-ops"), None);
    assert_eq!(a.status, 405, "authenticated, then routed");
    // Operator paths: any failure above, and 403 for a tenant's credential.
    for (method, path) in [("POST", "/flush"), ("GET", "/admin/storage/stats")] {
        for (what, who, status, message) in &cases[..5] {
            let a = call(&server, method, path, who, None);
            assert_eq!(a.status, *status, "{what}: {path}: {}", a.body);
            assert!(a.body.contains(message), "{what}: {path}: {}", a.body);
        }
        for who in [
            basic("ua", "pa"),
            with(basic("both", "pboth"), org("alpha")),
        ] {
            let a = call(&server, method, path, &who, None);
            assert_eq!(
                (a.status, a.body.as_str()),
                (403, "this endpoint needs credentials with all_tenants\n"),
                "{path}"
            );
        }
        let a = call(&server, method, path, &bearer("token-ops"), None);
        assert!(a.status < 300, "{path}: {} {}", a.status, a.body);
    }
}
