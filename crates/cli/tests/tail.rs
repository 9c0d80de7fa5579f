//! Live tail end to end: a real WebSocket client (tungstenite) on
//! `/loki/api/v1/tail` of the real server receives lines pushed after the
//! tail started within a second, in order, with their labels, in Loki's
//! frame format; history since `start` comes first; tails past the
//! per-tenant cap are closed with Loki's error.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::{json, Value};
use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn connect(server: &TestServer, query: &str, extra: &str) -> WebSocket<MaybeTlsStream<TcpStream>> {
    open_tail(server, None, query, extra)
}

/// Connects with an `X-Scope-OrgID` header.
fn connect_as(
    server: &TestServer,
    tenant: &str,
    query: &str,
) -> WebSocket<MaybeTlsStream<TcpStream>> {
    open_tail(server, Some(tenant), query, "")
}

/// Opens a tail of `query` (parameters `extra` appended), as `tenant` when
/// given; reads time out after 100 ms (see [`next_message`]).
fn open_tail(
    server: &TestServer,
    tenant: Option<&str>,
    query: &str,
    extra: &str,
) -> WebSocket<MaybeTlsStream<TcpStream>> {
    use tungstenite::client::IntoClientRequest;
    let base = server.base.replacen("http://", "ws://", 1);
    let mut url = format!("{base}/loki/api/v1/tail?query=");
    for b in query.bytes() {
        if b.is_ascii_alphanumeric() {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url.push_str(extra);
    let mut req = url.into_client_request().unwrap();
    if let Some(t) = tenant {
        req.headers_mut()
            .insert("X-Scope-OrgID", t.parse().unwrap());
    }
    let (mut ws, resp) = tungstenite::connect(req).expect("websocket handshake");
    assert_eq!(resp.status(), 101);
    if let MaybeTlsStream::Plain(s) = ws.get_mut() {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
    }
    ws
}

/// The next message, or `None` when none came within the read timeout.
fn next_message(ws: &mut WebSocket<MaybeTlsStream<TcpStream>>) -> Option<Message> {
    match ws.read() {
        Ok(m) => Some(m),
        Err(tungstenite::Error::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(e) => panic!("websocket: {e}"),
    }
}

/// Reads frames until `want` entries arrived or `deadline`; returns
/// `(arrival, labels, ts, line)` per entry.
fn read_entries(
    ws: &mut WebSocket<MaybeTlsStream<TcpStream>>,
    want: usize,
    deadline: Instant,
) -> Vec<(Instant, Value, String, String)> {
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        if let Some(Message::Text(t)) = next_message(ws) {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            assert!(v.get("dropped_entries").is_some(), "Loki's frame: {v}");
            for s in v["streams"].as_array().unwrap() {
                for e in s["values"].as_array().unwrap() {
                    got.push((
                        Instant::now(),
                        s["stream"].clone(),
                        e[0].as_str().unwrap().to_string(),
                        e[1].as_str().unwrap().to_string(),
                    ));
                }
            }
        }
    }
    got
}

#[test]
fn lines_pushed_after_the_tail_starts_arrive_within_a_second_in_order() {
    let server = TestServer::start();
    let mut ws = connect(&server, r#"{app="tail"} |= "line""#, "");
    // Let the tailer start before pushing.
    std::thread::sleep(Duration::from_millis(300));
    let mut pushed = Vec::new();
    let mut arrivals = Vec::new();
    for i in 0..5 {
        let ts = now_ns();
        let line = format!("level=warn line {i}");
        server.push_json(&json!({"streams": [
            {"stream": {"app": "tail", "env": "test"}, "values": [[ts.to_string(), line]]},
            {"stream": {"app": "other"}, "values": [[ts.to_string(), "line elsewhere"]]}
        ]}));
        let sent = Instant::now();
        let got = read_entries(&mut ws, 1, sent + Duration::from_secs(3));
        assert_eq!(got.len(), 1, "entry {i} did not arrive");
        let (at, labels, gts, gline) = got.into_iter().next().unwrap();
        assert!(
            at.duration_since(sent) < Duration::from_secs(1),
            "entry {i} took {:?}",
            at.duration_since(sent)
        );
        assert_eq!(
            labels,
            json!({"app": "tail", "env": "test", "service_name": "tail", "detected_level": "warn"})
        );
        arrivals.push((gts, gline));
        pushed.push((ts.to_string(), format!("level=warn line {i}")));
    }
    assert_eq!(arrivals, pushed);
    // Nothing else (the other stream, duplicates) arrives.
    let extra = read_entries(&mut ws, 1, Instant::now() + Duration::from_millis(700));
    assert!(extra.is_empty(), "{extra:?}");
    ws.close(None).ok();
}

#[test]
fn history_since_start_comes_first_within_limit() {
    let server = TestServer::start();
    let t0 = now_ns() - 60_000_000_000;
    let values: Vec<Value> = (0..10)
        .map(|i| json!([(t0 + i * 1_000_000).to_string(), format!("old {i}")]))
        .collect();
    server.push_json(&json!({"streams": [{"stream": {"app": "hist"}, "values": values}]}));
    let mut ws = connect(
        &server,
        r#"{app="hist"}"#,
        &format!("&start={}&limit=4", t0 - 1),
    );
    let got = read_entries(&mut ws, 10, Instant::now() + Duration::from_secs(3));
    let lines: Vec<&str> = got.iter().map(|g| g.3.as_str()).collect();
    // The first frame holds at most `limit` entries, the rest follow: all in order.
    assert_eq!(
        lines,
        (0..10).map(|i| format!("old {i}")).collect::<Vec<_>>()
    );
    let (status, body) = server.get(
        "/loki/api/v1/tail",
        &[("query", r#"{app="hist"}"#), ("delay_for", "6")],
    );
    assert_eq!(status, 400, "{body}");
}

/// The close frame the server sends first, if it closes within `wait`.
fn close_within(
    ws: &mut WebSocket<MaybeTlsStream<TcpStream>>,
    wait: Duration,
) -> Option<(u16, String)> {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        match next_message(ws) {
            Some(Message::Close(Some(f))) => {
                return Some((u16::from(f.code), f.reason.to_string()))
            }
            Some(Message::Close(None)) => return Some((1005, String::new())),
            _ => {}
        }
    }
    None
}

#[test]
fn tails_past_the_per_tenant_cap_are_closed_with_lokis_error() {
    let server = TestServer::start_with(&["--multi-tenant", "--max-concurrent-tail-requests", "2"]);
    let q = r#"{app="capped"}"#;
    let mut first = connect_as(&server, "team-a", q);
    let mut second = connect_as(&server, "team-a", q);
    let mut third = connect_as(&server, "team-a", q);
    assert_eq!(
        close_within(&mut third, Duration::from_secs(3)),
        Some((
            1011,
            "rpc error: code = Code(400) desc = max concurrent tail requests limit exceeded, count > limit (3 > 2)"
                .to_string()
        ))
    );
    // Another tenant has its own slots.
    let mut other = connect_as(&server, "team-b", q);
    assert_eq!(close_within(&mut other, Duration::from_millis(500)), None);
    // The two open tails still serve.
    assert_eq!(close_within(&mut second, Duration::from_millis(300)), None);
    // A tail that ends gives its slot back.
    first.close(None).unwrap();
    let _ = first.flush();
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut again = loop {
        let mut ws = connect_as(&server, "team-a", q);
        match close_within(&mut ws, Duration::from_millis(400)) {
            None => break ws,
            Some((1011, _)) if Instant::now() < deadline => {}
            Some(other) => panic!("slot not given back: {other:?}"),
        }
    };
    let ts = now_ns();
    let (status, body) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &[("X-Scope-OrgID", "team-a")],
        json!({"streams": [{"stream": {"app": "capped"}, "values": [[ts.to_string(), "after the cap"]]}]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 204, "{body}");
    let got = read_entries(&mut again, 1, Instant::now() + Duration::from_secs(3));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].3, "after the cap");
}

/// Loki's tailer drops entries (and names them in `dropped_entries`) when
/// its client is too slow: its buffer of responses fills. This tailer reads
/// the store instead, so a client that stops reading only makes it wait:
/// once the client reads again, every entry arrives, in order, once, and
/// `dropped_entries` stays null. The client here stops reading while more
/// is pushed than the kernel's socket buffers hold (about 8 MB of lines
/// against at most 4 MB of send buffer and the unread receiver's 128 KB;
/// `ss` showed the server's send queue full at 3.9 MB for over a second),
/// so the server's sends block and it falls behind.
#[test]
fn a_client_that_stops_reading_falls_behind_and_loses_nothing() {
    let server = TestServer::start();
    let mut ws = connect(&server, r#"{app="slow"}"#, "");
    std::thread::sleep(Duration::from_millis(300));
    let pad = "x".repeat(400);
    let (batches, per_batch) = (20, 1000);
    let t0 = now_ns();
    for b in 0..batches {
        let values: Vec<Value> = (0..per_batch)
            .map(|i| {
                let n = b * per_batch + i;
                json!([
                    (t0 + n as i64 * 1000).to_string(),
                    format!("line {n:06} {pad}")
                ])
            })
            .collect();
        server.push_json(&json!({"streams": [{"stream": {"app": "slow"}, "values": values}]}));
    }
    // Not reading for a while (well under the server's 10 s send timeout).
    std::thread::sleep(Duration::from_secs(3));
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines.len() < batches * per_batch && Instant::now() < deadline {
        if let Some(Message::Text(t)) = next_message(&mut ws) {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            assert_eq!(v["dropped_entries"], Value::Null, "nothing dropped");
            for s in v["streams"].as_array().unwrap() {
                for e in s["values"].as_array().unwrap() {
                    lines.push(e[1].as_str().unwrap()[..11].to_string());
                }
            }
        }
    }
    let want: Vec<String> = (0..batches * per_batch)
        .map(|n| format!("line {n:06}"))
        .collect();
    assert_eq!(lines.len(), want.len(), "every entry arrived");
    assert!(lines == want, "in order, each once");
    ws.close(None).ok();
}

/// More entries at one nanosecond than a frame holds (1,000) all arrive,
/// and so do lines pushed after them: the tailer's next query asks for as
/// many more as it already sent at that nanosecond, which it skips.
#[test]
fn more_entries_at_one_nanosecond_than_a_frame_holds_all_arrive() {
    let server = TestServer::start();
    let ts = now_ns() - 2_000_000_000;
    let values: Vec<Value> = (0..2500)
        .map(|i| json!([ts.to_string(), format!("same ns {i:04}")]))
        .collect();
    server.push_json(&json!({"streams": [{"stream": {"app": "same"}, "values": values}]}));
    let mut ws = connect(
        &server,
        r#"{app="same"}"#,
        &format!("&start={}", ts - 10_000_000_000),
    );
    let got = read_entries(&mut ws, 2500, Instant::now() + Duration::from_secs(20));
    let mut lines: Vec<String> = got.iter().map(|g| g.3.clone()).collect();
    lines.sort();
    let want: Vec<String> = (0..2500).map(|i| format!("same ns {i:04}")).collect();
    assert_eq!(lines.len(), want.len(), "all 2,500 arrived");
    assert!(lines == want, "each of the 2,500 once");
    let later = (ts + 1_000_000).to_string();
    server.push_json(
        &json!({"streams": [{"stream": {"app": "same"}, "values": [[later, "one ms later"]]}]}),
    );
    let got = read_entries(&mut ws, 1, Instant::now() + Duration::from_secs(5));
    assert_eq!(got.len(), 1, "the tail went on past that nanosecond");
    assert_eq!(got[0].3, "one ms later");
    ws.close(None).ok();
}

/// Lines stored *behind* what the tail has sent — a second collector's batch
/// a moment older than the first's, a retried push — still arrive, through
/// the query's whole pipeline, once each, as Loki's ingesters hand every
/// pushed entry to their tailers whatever its time. (A tail reading the
/// store forward from its cursor alone never sent them.)
#[test]
fn lines_pushed_behind_what_the_tail_sent_still_arrive_once() {
    let server = TestServer::start();
    let mut ws = connect(
        &server,
        r#"{app="late"} | logfmt | line_format "{{.msg}} from {{.src}}""#,
        "",
    );
    std::thread::sleep(Duration::from_millis(300));
    let now = now_ns();
    server.push_json(&json!({"streams": [
        {"stream": {"app": "late", "collector": "a"}, "values": [[now.to_string(), "src=a msg=first"]]}
    ]}));
    let got = read_entries(&mut ws, 1, Instant::now() + Duration::from_secs(3));
    assert_eq!(got.len(), 1, "the first line arrived");
    assert_eq!(got[0].3, "first from a");
    // Two lines older than the one sent: another collector's, and one more
    // of the same stream's.
    server.push_json(&json!({"streams": [
        {"stream": {"app": "late", "collector": "b"}, "values": [[(now - 2_000_000_000).to_string(), "src=b msg=behind"]]},
        {"stream": {"app": "late", "collector": "a"}, "values": [[(now - 1_000_000_000).to_string(), "src=a msg=also-behind"]]},
        {"stream": {"app": "other"}, "values": [[(now - 1_000_000_000).to_string(), "src=x msg=elsewhere"]]}
    ]}));
    let sent = Instant::now();
    let got = read_entries(&mut ws, 2, sent + Duration::from_secs(3));
    let mut lines: Vec<(String, String, String)> = got
        .iter()
        .map(|g| {
            (
                g.2.clone(),
                g.1["collector"].as_str().unwrap().to_string(),
                g.3.clone(),
            )
        })
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            (
                (now - 2_000_000_000).to_string(),
                "b".into(),
                "behind from b".into()
            ),
            (
                (now - 1_000_000_000).to_string(),
                "a".into(),
                "also-behind from a".into()
            ),
        ],
        "both late lines arrived, through the pipeline"
    );
    assert!(got
        .iter()
        .all(|g| g.0.duration_since(sent) < Duration::from_secs(1)));
    assert_eq!(
        got[0].1["src"], "b",
        "labels the pipeline extracted: {}",
        got[0].1
    );
    // The tail goes on in time order after them, and nothing comes twice.
    server.push_json(&json!({"streams": [
        {"stream": {"app": "late", "collector": "a"}, "values": [[(now + 1_000_000).to_string(), "src=a msg=after"]]}
    ]}));
    let got = read_entries(&mut ws, 1, Instant::now() + Duration::from_secs(3));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].3, "after from a");
    let extra = read_entries(&mut ws, 1, Instant::now() + Duration::from_millis(700));
    assert!(extra.is_empty(), "{extra:?}");
    ws.close(None).ok();
}
