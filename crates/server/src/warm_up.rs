//! The server's own first query, answered before `/ready` says yes.
//!
//! A process's first query costs more than the same query a moment later,
//! whatever data it reads: the first connection's and request's code is
//! faulted in and its lazily built state made (the blocking pool's first
//! thread, the HTTP stack's buffers, the LogQL parser's and the engine's
//! first allocations, the JSON writer). Measured on the 2M-line varied
//! workload: a rare-id search right after a restart took ~8 ms of wall time
//! where the same search after one unrelated query took ~7 (the difference
//! almost all outside the query's `execTime`), and the query before it needed
//! no data (a window with none gave the same).
//!
//! So, once listening, the server sends itself two requests over loopback,
//! as a client would: `/loki/api/v1/labels` for the last hour, then a
//! backward `query_range` with a line filter on the first label name it
//! got, over the same hour, `limit=1`. Nothing depends on their answers:
//! a failure (authentication on, no data, a timeout) is logged at debug
//! and the server goes on. They carry a per-process key that keeps them out
//! of `/metrics`' read counts. `/ready` answers 503 until they are done
//! ([`crate::state::AppState::warming_up`]); everything else is served
//! meanwhile. `--warm-up false` turns it off.

use crate::metrics::WARM_UP_HEADER;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest the warm-up may take in all; past it the server is ready anyway.
const DEADLINE: Duration = Duration::from_secs(5);

/// Window the warm-up asks about, ending now.
const WINDOW: Duration = Duration::from_secs(3600);

/// The needle of the warm-up's line filter (a phrase no log is expected to
/// hold; its answer is not used either way).
const NEEDLE: &str = "runakefli warm-up 7f3a9c";

/// Label name asked for when the labels request names none.
const FALLBACK_LABEL: &str = "service_name";

/// Sends the warm-up's requests to the server listening on `addr`, marked
/// with `key` ([`crate::metrics::Metrics::warm_up_key`]: not counted in
/// `/metrics`); returns how long they took.
pub async fn run(addr: SocketAddr, key: u64) -> Duration {
    let began = Instant::now();
    match tokio::time::timeout(DEADLINE, requests(addr, key)).await {
        Ok(Ok(statuses)) => {
            tracing::debug!(?statuses, took = ?began.elapsed(), "warm-up queries answered")
        }
        Ok(Err(e)) => tracing::debug!(error = %e, "warm-up query failed"),
        Err(_) => tracing::debug!(?DEADLINE, "warm-up queries timed out"),
    }
    began.elapsed()
}

/// The two requests; their status codes.
async fn requests(addr: SocketAddr, key: u64) -> std::io::Result<[u16; 2]> {
    let end = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let start = end.saturating_sub(WINDOW);
    let bounds = format!("start={}&end={}", start.as_nanos(), end.as_nanos());
    let (labels_status, body) = get(addr, key, &format!("/loki/api/v1/labels?{bounds}")).await?;
    let label = first_label(&body).unwrap_or_else(|| FALLBACK_LABEL.to_string());
    let query = format!("{{{label}=~\".+\"}} |= \"{NEEDLE}\"");
    let path = format!(
        "/loki/api/v1/query_range?query={}&{bounds}&limit=1&direction=backward",
        runakefli_ruler::notifier::percent_encode(&query)
    );
    let (query_status, _) = get(addr, key, &path).await?;
    Ok([labels_status, query_status])
}

/// The first label name of a `/labels` answer, when it is one a selector
/// can use unquoted.
fn first_label(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Labels {
        data: Vec<String>,
    }
    let labels: Labels = serde_json::from_slice(body).ok()?;
    labels.data.into_iter().find(|n| {
        let mut bytes = n.bytes();
        bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// One HTTP/1.1 GET of `path`, the connection closed after it: the status
/// code and the body (empty unless the answer gave its length).
async fn get(addr: SocketAddr, key: u64, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: runakefli-warm-up\r\n{WARM_UP_HEADER}: {key}\r\nConnection: close\r\n\r\n"
    );
    conn.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer).await?;
    parse_answer(&answer)
        .ok_or_else(|| std::io::Error::other("the warm-up's answer is not HTTP/1.1"))
}

/// The status code and the body of a whole HTTP/1.1 answer; the body only
/// when it came with a `Content-Length` (not chunked).
fn parse_answer(answer: &[u8]) -> Option<(u16, Vec<u8>)> {
    let head_end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&answer[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let length = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    let body = &answer[head_end + 4..];
    let body = match length {
        Some(n) => body.get(..n)?.to_vec(),
        None => Vec::new(),
    };
    Some((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_usable_label_name_is_taken() {
        let body = br#"{"status":"success","data":["app","namespace"]}"#;
        assert_eq!(first_label(body).as_deref(), Some("app"));
        let body = br#"{"status":"success","data":["1bad","a-b","pod"]}"#;
        assert_eq!(first_label(body).as_deref(), Some("pod"));
        assert_eq!(first_label(br#"{"status":"success","data":[]}"#), None);
        assert_eq!(first_label(b"not json"), None);
    }

    #[test]
    fn answers_are_split_into_status_and_body() {
        let a = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 4\r\n\r\n{}\r\nextra";
        assert_eq!(parse_answer(a), Some((200, b"{}\r\n".to_vec())));
        let a = b"HTTP/1.1 401 Unauthorized\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        assert_eq!(parse_answer(a), Some((401, Vec::new())));
        assert_eq!(parse_answer(b"garbage"), None);
    }
}
