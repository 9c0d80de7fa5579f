//! `GET /loki/api/v1/tail`: live tail over a WebSocket, as Loki serves it
//! to `logcli query --tail` and Grafana's live mode.
//!
//! Parameters: `query` (a log query), `start` (default one hour ago: the
//! entries since then are sent first, at most `limit`), `limit` (default
//! 100), `delay_for` (seconds, at most 5: entries are sent once they are
//! that old, so late pushes within it still arrive in order).
//!
//! Each frame is Loki's `{"streams":[{"stream":{…},"values":[["ns","line"],…]}],
//! "dropped_entries":null}`. The tailer reads the store: every [`TICK`] it
//! runs the query forward from the newest entry it has sent (entries at that
//! same nanosecond already sent are skipped, and the query's limit counts
//! them, so any number of entries at one nanosecond gets through), at most
//! [`MAX_BATCH`] new entries per frame. So ingest never waits for a tailer,
//! a slow client only falls behind and catches up from the store (memory per
//! tailer is one batch, plus the entries sharing the newest nanosecond
//! sent), and many tailers cost one small query per tick each. Entries
//! stored *behind* that cursor (older than what was sent, pushed later) come
//! from the push path instead ([`crate::tail_feed`]): each tick the tailer
//! runs its query over them alone, in memory, and sends them first, as
//! Loki's ingesters send every pushed entry to their tailers whatever its
//! time. The keys of the entries the last [`RECENT_BATCHES`] store reads sent
//! keep an entry from going twice when its push reached the feed only after
//! a store read had already sent it. The server pings every [`PING_EVERY`];
//! a client that does not take a frame within [`SEND_TIMEOUT`] is
//! disconnected. At most
//! `max_concurrent_tail_requests` tails per tenant are open at once
//! ([`super::tail_slots`]); one more is closed at once with Loki's error.

use super::params::{now_ns, parse_limit, parse_timestamp, RawParams};
use super::query::parse_query;
use super::shell::raw_params;
use super::tail_slots::TailSlot;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tail_feed::Waiting;
use crate::tenant::tenant_of;
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use runakefli_engine::mem_backend::MemBackend;
use runakefli_engine::{Engine, QueryResult, StreamResult};
use runakefli_logql::Expr;
use runakefli_model::{Direction, TenantId};
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

/// How often a tailer looks for new entries.
pub const TICK: Duration = Duration::from_millis(200);
/// Most entries one frame carries after the first.
pub const MAX_BATCH: u32 = 1000;
/// How often the server pings an idle client.
pub const PING_EVERY: Duration = Duration::from_secs(10);
/// Longest a frame may take to be accepted by the client.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Loki's upper bound on `delay_for`, in seconds.
pub const MAX_DELAY_FOR: i64 = 5;
/// Store reads whose sent entries are remembered, so an entry whose push
/// reached the feed late (after a read sent it) is not sent again.
pub const RECENT_BATCHES: usize = 8;

/// A validated tail request.
struct TailRequest {
    tenant: TenantId,
    expr: Expr,
    start: i64,
    limit: u32,
    delay_ns: i64,
}

fn parse(state: &AppState, tenant: TenantId, p: &RawParams) -> Result<TailRequest, ApiError> {
    let expr = parse_query(state, p.get("query").unwrap_or(""))?;
    if !matches!(expr, Expr::Log(_)) {
        return Err(ApiError::bad_request(
            "only log queries are supported for tailing",
        ));
    }
    let start = parse_timestamp("start", p.get("start"), now_ns() - 3_600_000_000_000)?;
    let limit = parse_limit(p)?;
    let delay = match p.get("delay_for") {
        None | Some("") => 0,
        Some(v) => v
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid delay_for {v:?}")))?,
    };
    if delay > MAX_DELAY_FOR {
        return Err(ApiError::bad_request("delay_for can't be greater than 5"));
    }
    Ok(TailRequest {
        tenant,
        expr,
        start,
        limit,
        delay_ns: delay.max(0) * 1_000_000_000,
    })
}

/// `GET /loki/api/v1/tail` (WebSocket upgrade).
pub async fn tail(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let tenant = tenant_of(&headers, state.config.multi_tenant)?;
    let params = raw_params(query, &headers, &Bytes::new());
    let req = parse(&state, tenant, &params)?;
    match state.tail_slots.acquire(&req.tenant) {
        Ok(slot) => Ok(ws.on_upgrade(move |socket| run(socket, state, req, slot))),
        // Loki upgrades, then closes with its querier's error.
        Err(e) => Ok(ws.on_upgrade(move |mut socket| async move {
            let _ = send(&mut socket, close_frame(e.to_string())).await;
        })),
    }
}

/// A close frame with code 1011 (internal error), as Loki closes a tail it
/// cannot serve.
fn close_frame(reason: String) -> Message {
    Message::Close(Some(axum::extract::ws::CloseFrame {
        code: 1011,
        reason: reason.into(),
    }))
}

/// Where a tailer is: the newest timestamp sent and what was sent at it.
struct Cursor {
    from: i64,
    sent_at_from: HashSet<u64>,
}

fn entry_key(labels: &runakefli_engine::LabelSet, line: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    labels.to_string().hash(&mut h);
    line.hash(&mut h);
    h.finish()
}

/// A hash of a stream's labels, worked out once per stream of a batch.
fn labels_hash(labels: &runakefli_engine::LabelSet) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    labels.to_string().hash(&mut h);
    h.finish()
}

/// An entry's key with its time (its stream's [`labels_hash`] given), for
/// entries sent at any time.
fn sent_key(stream: u64, ts: i64, line: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    stream.hash(&mut h);
    ts.hash(&mut h);
    line.hash(&mut h);
    h.finish()
}

impl Cursor {
    /// The limit of the next query, for `batch` new entries: the entries
    /// already sent at `from` come back first and are skipped, so the limit
    /// counts them too. Without that, more than `batch` entries at one
    /// nanosecond would fill every answer with entries already sent and the
    /// tail would stop there for good.
    fn limit(&self, batch: u32) -> u32 {
        let sent = u32::try_from(self.sent_at_from.len()).unwrap_or(u32::MAX);
        batch.saturating_add(sent)
    }

    /// Drops entries already sent and moves past the rest.
    fn advance(&mut self, streams: &mut Vec<StreamResult>) {
        let mut newest = self.from;
        for s in streams.iter() {
            for (ts, _) in &s.entries {
                newest = newest.max(*ts);
            }
        }
        let mut sent_at_newest = if newest == self.from {
            self.sent_at_from.clone()
        } else {
            HashSet::new()
        };
        for s in streams.iter_mut() {
            let labels = s.labels.clone();
            s.entries.retain(|(ts, line)| {
                let key = entry_key(&labels, line);
                if *ts == self.from && self.sent_at_from.contains(&key) {
                    return false;
                }
                if *ts == newest {
                    sent_at_newest.insert(key);
                }
                true
            });
        }
        streams.retain(|s| !s.entries.is_empty());
        self.from = newest;
        self.sent_at_from = sent_at_newest;
    }
}

/// The keys of the entries the last [`RECENT_BATCHES`] store reads sent.
#[derive(Default)]
struct RecentKeys {
    batches: VecDeque<HashSet<u64>>,
}

impl RecentKeys {
    /// Remembers what one store read sent, forgetting the oldest read's.
    fn note(&mut self, streams: &[StreamResult]) {
        let mut keys = HashSet::new();
        for s in streams {
            let stream = labels_hash(&s.labels);
            for (ts, line) in &s.entries {
                keys.insert(sent_key(stream, *ts, line));
            }
        }
        if self.batches.len() == RECENT_BATCHES {
            self.batches.pop_front();
        }
        self.batches.push_back(keys);
    }

    /// Drops the entries a recent store read sent (and repeats within
    /// `streams`), remembering the rest with the newest read's.
    fn drop_sent(&mut self, streams: &mut Vec<StreamResult>) {
        if self.batches.is_empty() {
            self.batches.push_back(HashSet::new());
        }
        for s in streams.iter_mut() {
            let stream = labels_hash(&s.labels);
            s.entries.retain(|(ts, line)| {
                let key = sent_key(stream, *ts, line);
                if self.batches.iter().any(|b| b.contains(&key)) {
                    return false;
                }
                if let Some(newest) = self.batches.back_mut() {
                    newest.insert(key);
                }
                true
            });
        }
        streams.retain(|s| !s.entries.is_empty());
    }
}

/// The query's answer over the late entries waiting in the feed: those
/// before `before` (the tail's cursor), run in memory with the tail's query,
/// oldest first. Entries at or after `before` are left to the store reads.
async fn late_entries(
    state: &Arc<AppState>,
    req: &Arc<TailRequest>,
    waiting: Waiting,
    before: i64,
) -> Result<Vec<StreamResult>, ApiError> {
    if waiting.missed > 0 {
        tracing::warn!(
            tenant = %req.tenant,
            missed_pushes = waiting.missed,
            "tail fell behind the push feed; late entries of those pushes are not sent"
        );
    }
    let memory = MemBackend::new();
    let (mut first, mut count) = (i64::MAX, 0usize);
    for push in &waiting.pushes {
        for e in push.streams.iter().flat_map(|s| &s.entries) {
            if e.ts < before {
                first = first.min(e.ts);
                count += 1;
            }
        }
        memory.push(&req.tenant, push);
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    let (state, req) = (state.clone(), req.clone());
    crate::blocking(move || {
        // The entries are in memory already: no per-query entry cap.
        let mut limits = state.engine.limits().clone();
        limits.max_entries_limit_per_query = 0;
        let engine = Engine::new(Arc::new(memory), limits);
        let limit = u32::try_from(count).unwrap_or(u32::MAX);
        forward_streams(&engine, &req, first, before, limit)
    })
    .await
}

/// Loki's tail frame.
fn frame(streams: &[StreamResult]) -> String {
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"{\"streams\":[");
    for (i, s) in streams.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"stream\":{");
        for (j, (k, v)) in s.labels.pairs().iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            runakefli_engine::json::write_str(&mut out, k);
            out.push(b':');
            runakefli_engine::json::write_str(&mut out, v);
        }
        out.extend_from_slice(b"},\"values\":[");
        for (j, (ts, line)) in s.entries.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(format!("[\"{ts}\",").as_bytes());
            runakefli_engine::json::write_str(&mut out, line);
            out.push(b']');
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"],\"dropped_entries\":null}");
    String::from_utf8(out).unwrap_or_default()
}

/// Entries of `req` in `[from, to)`, oldest first, each stream's in order.
async fn fetch(
    state: &Arc<AppState>,
    req: &Arc<TailRequest>,
    from: i64,
    to: i64,
    limit: u32,
) -> Result<Vec<StreamResult>, ApiError> {
    let (state, req) = (state.clone(), req.clone());
    crate::blocking(move || forward_streams(&state.engine, &req, from, to, limit)).await
}

/// `req`'s query over `[from, to)` on `engine`, forward, at most `limit`
/// entries: its streams.
fn forward_streams(
    engine: &Engine,
    req: &TailRequest,
    from: i64,
    to: i64,
    limit: u32,
) -> Result<Vec<StreamResult>, ApiError> {
    let resp = engine
        .query_range(
            &req.tenant,
            &req.expr,
            runakefli_engine::RangeRequest {
                start: from,
                end: to,
                step: 1,
                limit,
                direction: Direction::Forward,
            },
        )
        .map_err(super::query::engine_error)?;
    Ok(match resp.result {
        QueryResult::Streams(s) => s,
        _ => Vec::new(),
    })
}

async fn send(socket: &mut WebSocket, msg: Message) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, socket.send(msg)).await,
        Ok(Ok(()))
    )
}

/// Serves one tail until the client goes; `_slot` is given back on return.
async fn run(mut socket: WebSocket, state: Arc<AppState>, req: TailRequest, _slot: TailSlot) {
    let req = Arc::new(req);
    // Subscribed before the first store read: whatever that read cannot see
    // reaches the tail through the feed.
    let mut feed = state.tail_feed.subscribe(&req.tenant);
    let mut cursor = Cursor {
        from: req.start,
        sent_at_from: HashSet::new(),
    };
    let mut recent = RecentKeys::default();
    let mut limit = req.limit.max(1);
    let mut tick = tokio::time::interval(TICK);
    let mut last_frame = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let to = now_ns() - req.delay_ns + 1;
                let reads = to > cursor.from;
                if reads {
                    // Before the read: pushes stored from now on with entries
                    // before `to` are offered to the feed.
                    state.tail_feed.announce(to);
                }
                let late = late_entries(&state, &req, feed.take(), cursor.from).await;
                let mut streams = match late {
                    Ok(mut late) => {
                        recent.drop_sent(&mut late);
                        late
                    }
                    Err(e) => {
                        let _ = send(&mut socket, close_frame(e.message.clone())).await;
                        return;
                    }
                };
                if reads {
                    let batch = cursor.limit(limit);
                    let mut read = match fetch(&state, &req, cursor.from, to, batch).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = send(&mut socket, close_frame(e.message.clone())).await;
                            return;
                        }
                    };
                    limit = MAX_BATCH;
                    cursor.advance(&mut read);
                    recent.note(&read);
                    streams.extend(read);
                }
                if !streams.is_empty() {
                    if !send(&mut socket, Message::Text(frame(&streams).into())).await {
                        return;
                    }
                    last_frame = tokio::time::Instant::now();
                } else if last_frame.elapsed() >= PING_EVERY {
                    if !send(&mut socket, Message::Ping(Bytes::from_static(b"ping"))).await {
                        return;
                    }
                    last_frame = tokio::time::Instant::now();
                }
            }
            msg = socket.recv() => match msg {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_engine::LabelSet;

    fn batch(entries: &[(i64, &str)]) -> Vec<StreamResult> {
        vec![StreamResult {
            labels: LabelSet::new(vec![("app".into(), "a".into())]),
            entries: entries.iter().map(|(t, l)| (*t, l.to_string())).collect(),
            categories: Vec::new(),
        }]
    }

    #[test]
    fn cursor_sends_each_entry_once() {
        let mut c = Cursor {
            from: 0,
            sent_at_from: HashSet::new(),
        };
        let mut b = batch(&[(1, "x"), (5, "y")]);
        c.advance(&mut b);
        assert_eq!(b[0].entries.len(), 2);
        // The query starts at the newest timestamp again: y is not resent, z (same ns) is.
        let mut b = batch(&[(5, "y"), (5, "z")]);
        c.advance(&mut b);
        assert_eq!(b[0].entries, vec![(5, "z".to_string())]);
        let mut b = batch(&[(5, "y"), (5, "z")]);
        c.advance(&mut b);
        assert!(b.is_empty());
        let mut b = batch(&[(5, "z"), (6, "w")]);
        c.advance(&mut b);
        assert_eq!(b[0].entries, vec![(6, "w".to_string())]);
    }

    #[test]
    fn the_limit_counts_what_was_sent_at_the_newest_nanosecond() {
        let mut c = Cursor {
            from: 0,
            sent_at_from: HashSet::new(),
        };
        assert_eq!(c.limit(3), 3);
        // Three entries at ns 7 sent: the next query asks for three more than a batch.
        let mut b = batch(&[(7, "a"), (7, "b"), (7, "c")]);
        c.advance(&mut b);
        assert_eq!(c.limit(3), 6);
        // Past ns 7, only what was sent at the new newest nanosecond counts.
        let mut b = batch(&[(7, "a"), (8, "d")]);
        c.advance(&mut b);
        assert_eq!(c.limit(3), 4);
    }

    #[test]
    fn recent_keys_drop_what_a_recent_read_sent_and_repeats() {
        let mut recent = RecentKeys::default();
        recent.note(&batch(&[(5, "x"), (6, "y")]));
        // Same line at another time is another entry; a repeat in one batch goes once.
        let mut late = batch(&[(5, "x"), (4, "x"), (3, "z"), (3, "z")]);
        recent.drop_sent(&mut late);
        assert_eq!(
            late[0].entries,
            vec![(4, "x".to_string()), (3, "z".to_string())]
        );
        // What went late counts as sent too.
        let mut again = batch(&[(4, "x")]);
        recent.drop_sent(&mut again);
        assert!(again.is_empty());
        // Reads older than the last RECENT_BATCHES are forgotten.
        for _ in 0..RECENT_BATCHES {
            recent.note(&batch(&[]));
        }
        let mut old = batch(&[(6, "y")]);
        recent.drop_sent(&mut old);
        assert_eq!(old.len(), 1);
    }
}
