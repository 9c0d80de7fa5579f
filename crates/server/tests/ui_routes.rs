//! The web UI's routes against the real router on a loopback port: the page
//! at `/` for browsers and Elasticsearch's answer there for other clients,
//! assets with content types, gzip and ETags, the page's files served
//! without credentials when everything else needs them, `/ui/api/session`
//! naming only the credential's tenants, and the tail's `orgId` parameter checked by the
//! authentication layer like the header it stands for.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use base64::Engine as _;
use runakefli_server::auth::secret;
use runakefli_server::{router, AppState, ServerConfig};
use serde_json::{json, Value};
use std::time::Duration;
use tungstenite::client::IntoClientRequest;

struct Server {
    base: String,
    _dir: tempfile::TempDir,
}

fn start(auth_file: Option<String>) -> Server {
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

fn get(server: &Server, path: &str, headers: &[(&str, &str)]) -> ureq::Response {
    let mut r = ureq::get(&format!("{}{path}", server.base)).timeout(Duration::from_secs(30));
    for (k, v) in headers {
        r = r.set(k, v);
    }
    match r.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {path}: {e}"),
    }
}

/// A GET over a bare TCP connection: (lower-cased head, body bytes).
fn raw_get(server: &Server, path: &str, encoding: &str) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let addr = server.base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: {encoding}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&all[..split]).to_lowercase();
    (head, all[split + 4..].to_vec())
}

fn basic(user: &str, password: &str) -> String {
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {b}")
}

fn credentials() -> String {
    format!(
        "users:\n\
         \x20 - name: ua\n    password_hash: '{}'\n    tenants: [alpha]\n\
         \x20 - name: both\n    password_hash: '{}'\n    tenants: [alpha, beta]\n\
         tokens:\n\
         \x20 - name: ops\n    sha256: {}\n    all_tenants: true\n",
        secret::hash_password("pa").unwrap(),
        secret::hash_password("pboth").unwrap(),
        secret::token_digest_hex("token-ops"),
    )
}

#[test]
fn the_page_for_browsers_and_elasticsearch_for_the_rest() {
    let server = start(None);
    let page = get(
        &server,
        "/",
        &[("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")],
    );
    assert_eq!(page.status(), 200);
    assert_eq!(page.content_type(), "text/html");
    let html = page.into_string().unwrap();
    assert!(
        html.contains(r#"<script type="module" src="/ui/app.js">"#),
        "{html}"
    );
    assert_eq!(
        get(&server, "/ui/", &[]).into_string().unwrap(),
        html,
        "/ui/ is the page too"
    );

    // An Elasticsearch client probing / still gets the cluster answer.
    let es = get(
        &server,
        "/",
        &[(
            "Accept",
            "application/vnd.elasticsearch+json; compatible-with=8",
        )],
    );
    assert_eq!(es.status(), 200);
    assert_eq!(es.header("x-elastic-product"), Some("Elasticsearch"));
    let v: Value = serde_json::from_str(&es.into_string().unwrap()).unwrap();
    assert_eq!(v["version"]["number"], "8.17.0");
}

#[test]
fn assets_have_types_etags_and_gzip() {
    let server = start(None);
    for (path, ct) in [
        ("/ui/app.js", "text/javascript"),
        ("/ui/style.css", "text/css"),
        ("/ui/favicon.svg", "image/svg+xml"),
    ] {
        let r = get(&server, path, &[]);
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.content_type(), ct, "{path}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{path}");
        let etag = r.header("etag").unwrap().to_string();
        let again = get(&server, path, &[("If-None-Match", &etag)]);
        assert_eq!(again.status(), 304, "{path}");
    }
    // ureq decompresses on its own: ask over a bare socket to see the bytes sent.
    let (head, body) = raw_get(&server, "/ui/app.js", "gzip");
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert_eq!(&body[..2], &[0x1f, 0x8b], "a gzip stream");
    let (head, body) = raw_get(&server, "/ui/app.js", "identity");
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(String::from_utf8(body).unwrap().contains("import "));
    assert_eq!(get(&server, "/ui/nope.js", &[]).status(), 404);
    assert_eq!(get(&server, "/ui/..%2FCargo.toml", &[]).status(), 404);
}

#[test]
fn the_session_names_only_the_credentials_tenants() {
    let open = start(None);
    let v: Value =
        serde_json::from_str(&get(&open, "/ui/api/session", &[]).into_string().unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"multi_tenant": true, "auth": false, "tenants": null})
    );

    let server = start(Some(credentials()));
    // The page and its files hold no data: served without credentials.
    assert_eq!(get(&server, "/", &[("Accept", "text/html")]).status(), 200);
    assert_eq!(get(&server, "/ui/app.js", &[]).status(), 200);
    // Elasticsearch's `/` and the page's API are not.
    assert_eq!(get(&server, "/", &[]).status(), 401);
    assert_eq!(get(&server, "/ui/api/session", &[]).status(), 401);
    let session = |auth: &str| -> Value {
        let r = get(&server, "/ui/api/session", &[("Authorization", auth)]);
        assert_eq!(r.status(), 200);
        serde_json::from_str(&r.into_string().unwrap()).unwrap()
    };
    assert_eq!(session(&basic("ua", "pa"))["tenants"], json!(["alpha"]));
    assert_eq!(
        session(&basic("both", "pboth"))["tenants"],
        json!(["alpha", "beta"])
    );
    assert_eq!(session("Bearer token-ops")["tenants"], Value::Null);
    assert_eq!(session("Bearer token-ops")["auth"], true);
}

/// Opens the tail with `orgId` in the URL and the given `Authorization`;
/// returns the handshake's status (101 when upgraded).
fn tail_status(server: &Server, org_id: &str, auth: &str) -> u16 {
    let url = format!(
        "{}/loki/api/v1/tail?query=%7Bapp%3D%22x%22%7D&orgId={org_id}",
        server.base.replace("http://", "ws://")
    );
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("Authorization", auth.parse().unwrap());
    match tungstenite::connect(req) {
        Ok((mut ws, resp)) => {
            let _ = ws.close(None);
            resp.status().as_u16()
        }
        Err(tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("tail: {e}"),
    }
}

#[test]
fn the_tails_org_id_parameter_is_checked_like_the_header() {
    let server = start(Some(credentials()));
    let ua = basic("ua", "pa");
    assert_eq!(tail_status(&server, "alpha", &ua), 101);
    assert_eq!(tail_status(&server, "beta", &ua), 403, "not ua's tenant");
    let both = basic("both", "pboth");
    assert_eq!(tail_status(&server, "beta", &both), 101);
    // The parameter only stands in for the header on the tail route.
    let r = get(
        &server,
        "/loki/api/v1/labels?orgId=beta",
        &[("Authorization", &ua)],
    );
    assert_eq!(r.status(), 200, "ua's own tenant, alpha");
}
