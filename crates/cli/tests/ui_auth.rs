//! The web UI with a credentials file of bearer tokens only, end to end
//! with the real binary on a loopback port: the page's files load without
//! credentials; the page's own calls (`X-Runakefli-UI: 1`) get 401 without
//! a `WWW-Authenticate` challenge, and work with `Authorization: Bearer`;
//! other clients keep the challenge; the live tail opens over a real
//! WebSocket with a ticket minted by `POST /ui/api/tail-ticket`, once, for
//! its tenant and query only. Without `--auth-file` there are no tickets.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{urlencode, TestServer};
use runakefli_server::auth::secret;
use serde_json::{json, Value};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

const UI: (&str, &str) = ("X-Runakefli-UI", "1");

/// A server whose credentials file holds one bearer token (for tenants
/// team-a and team-b) and no users; returns it and the token.
fn tokens_only_server() -> (TestServer, String, tempfile::TempDir) {
    let token = secret::new_token();
    let file = format!(
        "tokens:\n  - name: browser\n    sha256: {}\n    tenants: [team-a, team-b]\n",
        secret::token_digest_hex(&token)
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.yaml");
    std::fs::write(&path, file).unwrap();
    let server = TestServer::start_with(&["--auth-file", path.to_str().unwrap()]);
    (server, token, dir)
}

/// An answer: status, its `WWW-Authenticate` values, content type, body.
struct Answer {
    status: u16,
    challenges: Vec<String>,
    content_type: String,
    body: String,
}

/// Sends `method path` with `headers` (and `body`, when given).
fn send(
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let mut req = ureq::request(method, &format!("{}{}", server.base, path));
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let sent = match body {
        Some(b) => req.send_string(b),
        None => req.call(),
    };
    let resp = match sent {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    Answer {
        status: resp.status(),
        challenges: resp
            .all("www-authenticate")
            .into_iter()
            .map(str::to_string)
            .collect(),
        content_type: resp.content_type().to_string(),
        body: resp.into_string().unwrap(),
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Pushes `line` to `tenant` with the token.
fn push(server: &TestServer, bearer: &str, tenant: &str, line: &str) {
    let body = json!({"streams": [{"stream": {"app": "ui"},
        "values": [[now_ns().to_string(), line]]}]});
    let (status, text) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &[("Authorization", bearer), ("X-Scope-OrgID", tenant)],
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 204, "{text}");
}

#[test]
fn the_page_loads_without_credentials_and_its_calls_answer_401_without_a_challenge() {
    let (server, token, _dir) = tokens_only_server();
    let bearer = format!("Bearer {token}");

    // The page and its files: no credentials needed.
    for path in [
        "/ui/",
        "/ui/app.js",
        "/ui/api.js",
        "/ui/login.js",
        "/ui/style.css",
    ] {
        let a = send(&server, "GET", path, &[], None);
        assert_eq!(a.status, 200, "{path}: {}", a.body);
    }
    let page = send(&server, "GET", "/", &[("Accept", "text/html")], None);
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html");
    assert!(page.body.contains("id=\"login-form\""), "the login form");
    // `/` for other clients (Elasticsearch's cluster information) is not the
    // page and stays behind the layer, as every API route.
    let es = send(&server, "GET", "/", &[], None);
    assert_eq!(es.status, 401);

    // The page's own calls: 401 without a challenge (no browser prompt).
    for (method, path) in [
        ("GET", "/ui/api/session"),
        ("GET", "/loki/api/v1/labels"),
        ("POST", "/ui/api/tail-ticket"),
    ] {
        let body = (method == "POST").then_some(r#"{"query":"{app=\"ui\"}"}"#);
        let a = send(&server, method, path, &[UI], body);
        assert_eq!(a.status, 401, "{path}");
        assert!(a.challenges.is_empty(), "{path}: {:?}", a.challenges);
    }
    // Any other client keeps the challenge as before (bearer only: the file
    // has no users).
    let a = send(&server, "GET", "/loki/api/v1/labels", &[], None);
    assert_eq!(a.status, 401);
    assert_eq!(a.challenges, [r#"Bearer realm="runakefli""#]);

    // With the token, the page's calls work.
    let session = send(
        &server,
        "GET",
        "/ui/api/session",
        &[UI, ("Authorization", &bearer)],
        None,
    );
    assert_eq!(session.status, 200, "{}", session.body);
    let session: Value = serde_json::from_str(&session.body).unwrap();
    assert_eq!(session["auth"], true);
    assert_eq!(session["tenants"], json!(["team-a", "team-b"]));
    push(&server, &bearer, "team-a", "seen by the page");
    let start = (now_ns() - 60_000_000_000).to_string();
    let path = format!(
        "/loki/api/v1/query_range?query={}&start={start}",
        urlencode(r#"{app="ui"}"#)
    );
    let a = send(
        &server,
        "GET",
        &path,
        &[UI, ("Authorization", &bearer), ("X-Scope-OrgID", "team-a")],
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["data"]["result"][0]["values"][0][1], "seen by the page");
    // A wrong token from the page: 401, still no challenge.
    let a = send(
        &server,
        "GET",
        &path,
        &[UI, ("Authorization", "Bearer nope")],
        None,
    );
    assert_eq!(a.status, 401);
    assert!(a.challenges.is_empty(), "{:?}", a.challenges);
}

/// Mints a tail ticket for `query` and `tenant` with the token.
fn mint(server: &TestServer, bearer: &str, tenant: &str, query: &str) -> String {
    let a = send(
        server,
        "POST",
        "/ui/api/tail-ticket",
        &[
            UI,
            ("Authorization", bearer),
            ("X-Scope-OrgID", tenant),
            ("Content-Type", "application/json"),
        ],
        Some(&json!({ "query": query }).to_string()),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["expires_in_seconds"], 30);
    let ticket = v["ticket"].as_str().unwrap().to_string();
    assert_eq!(ticket.len(), 64, "256 random bits as hex");
    ticket
}

/// Opens the tail as the page does: no headers, the tenant in `orgId`, the
/// ticket in `ticket`. `Err(status)` when the handshake is refused.
fn open_tail(
    server: &TestServer,
    query: &str,
    tenant: &str,
    ticket: &str,
) -> Result<WebSocket<MaybeTlsStream<TcpStream>>, u16> {
    let base = server.base.replacen("http://", "ws://", 1);
    let url = format!(
        "{base}/loki/api/v1/tail?query={}&start={}&orgId={tenant}&ticket={ticket}",
        urlencode(query),
        now_ns() - 1_000_000_000,
    );
    match tungstenite::connect(url) {
        Ok((mut ws, resp)) => {
            assert_eq!(resp.status(), 101);
            if let MaybeTlsStream::Plain(s) = ws.get_mut() {
                s.set_read_timeout(Some(Duration::from_millis(100)))
                    .unwrap();
            }
            Ok(ws)
        }
        Err(tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("websocket: {e}"),
    }
}

/// The lines of the frames received before `deadline`, until `want` came.
fn lines(
    ws: &mut WebSocket<MaybeTlsStream<TcpStream>>,
    want: &str,
    deadline: Instant,
) -> Vec<String> {
    let mut got = Vec::new();
    while Instant::now() < deadline && !got.iter().any(|l| l == want) {
        match ws.read() {
            Ok(Message::Text(t)) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                for s in v["streams"].as_array().unwrap() {
                    for e in s["values"].as_array().unwrap() {
                        got.push(e[1].as_str().unwrap().to_string());
                    }
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("websocket: {e}"),
        }
    }
    got
}

#[test]
fn a_tail_ticket_opens_the_websocket_tail_once_for_its_tenant_and_query() {
    let (server, token, _dir) = tokens_only_server();
    let bearer = format!("Bearer {token}");
    let query = r#"{app="ui"}"#;

    // No ticket, no credentials: refused.
    assert_eq!(open_tail(&server, query, "team-a", "").err(), Some(401));

    let ticket = mint(&server, &bearer, "team-a", query);
    let mut ws = open_tail(&server, query, "team-a", &ticket).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    push(&server, &bearer, "team-b", "not for this tail");
    push(&server, &bearer, "team-a", "pushed while tailing");
    let got = lines(
        &mut ws,
        "pushed while tailing",
        Instant::now() + Duration::from_secs(10),
    );
    assert_eq!(got, ["pushed while tailing"]);
    ws.close(None).unwrap();

    // Used once: a replay is refused.
    assert_eq!(
        open_tail(&server, query, "team-a", &ticket).err(),
        Some(401)
    );
    // Minted for team-a: refused for team-b, which the token may also use.
    let ticket = mint(&server, &bearer, "team-a", query);
    assert_eq!(
        open_tail(&server, query, "team-b", &ticket).err(),
        Some(401)
    );
    // Minted for one query: refused for another.
    let ticket = mint(&server, &bearer, "team-a", query);
    let other = r#"{app=~".+"}"#;
    assert_eq!(
        open_tail(&server, other, "team-a", &ticket).err(),
        Some(401)
    );
    // On any other path a ticket is not a credential.
    let ticket = mint(&server, &bearer, "team-a", query);
    let path = format!(
        "/loki/api/v1/query_range?query={}&orgId=team-a&ticket={ticket}",
        urlencode(query)
    );
    let a = send(&server, "GET", &path, &[("X-Scope-OrgID", "team-a")], None);
    assert_eq!(a.status, 401, "{}", a.body);
    // ... and was not spent there.
    assert!(open_tail(&server, query, "team-a", &ticket).is_ok());
}

#[test]
fn without_an_auth_file_there_is_no_login_and_no_ticket() {
    let server = TestServer::start();
    let session = send(&server, "GET", "/ui/api/session", &[UI], None);
    assert_eq!(session.status, 200);
    let v: Value = serde_json::from_str(&session.body).unwrap();
    assert_eq!(v["auth"], false);
    let a = send(
        &server,
        "POST",
        "/ui/api/tail-ticket",
        &[UI],
        Some(r#"{"query":"{app=\"ui\"}"}"#),
    );
    assert_eq!(a.status, 404, "{}", a.body);
}
