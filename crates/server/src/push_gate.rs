//! The in-flight push budget: the bodies of pushes being received,
//! decoded and appended at one moment may hold at most `max_bytes` between
//! them. A push that does not fit is answered 503 at once (collectors retry
//! with backoff) instead of waiting in memory, so many writers beyond the
//! server's capacity cannot grow it without bound.
//!
//! A push is charged its `Content-Length` before its body is read; a body
//! without one (chunked) is charged chunk by chunk as it arrives. The charge
//! is held until the push's handler has finished, its blocking work
//! included: the handler runs in its own task, which a client that gives up
//! does not stop, so an abandoned push keeps its bytes counted until its
//! append ends. A body larger than the whole budget is charged the whole
//! budget (it is admitted only when no other push is in flight).
//!
//! What one in-flight byte costs in memory: the body, plus what decoding
//! makes of it (decompressed and decoded entries, the WAL record), so the
//! memory of pushes in flight is a small multiple of the budget.
//!
//! Syslog messages are charged their frame's bytes while they wait in a
//! batch and until the batch's append ends: the TCP listener waits for room
//! (stops reading the connection, so the sender is slowed by TCP flow
//! control); the UDP listener drops a datagram that does not fit and counts
//! it as `runakefli_rejected_requests_total{protocol="syslog",
//! reason="inflight_limit"}`.

use crate::error::ErrorReason;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The metrics reason of a push refused here.
pub const REASON: &str = "inflight_limit";

/// Admission of push bodies by their size.
#[derive(Debug)]
pub struct PushGate {
    budget: Arc<Semaphore>,
    max_bytes: usize,
    /// The push body limit: the most of a chunked body read (413 past it)
    /// and of a refused body drained.
    max_body_bytes: usize,
    refused: AtomicU64,
}

/// What an admitted push holds; dropping it gives its bytes back.
#[derive(Debug)]
pub struct PushCharge {
    _permits: Vec<OwnedSemaphorePermit>,
}

/// Why a push was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The budget is spent by other pushes.
    Busy,
    /// The body is larger than the push body limit (413).
    TooLarge,
    /// The body could not be read.
    Body(String),
}

impl PushGate {
    /// A budget of `max_bytes` (0: no limit) for HTTP push bodies of at
    /// most `max_body_bytes` each.
    pub fn new(max_bytes: usize, max_body_bytes: usize) -> Self {
        let permits = max_bytes.clamp(1, Semaphore::MAX_PERMITS);
        PushGate {
            budget: Arc::new(Semaphore::new(permits)),
            max_bytes,
            max_body_bytes,
            refused: AtomicU64::new(0),
        }
    }

    /// The configured budget (0: none).
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes charged to pushes in flight now.
    pub fn in_flight(&self) -> usize {
        if self.max_bytes == 0 {
            return 0;
        }
        self.max_bytes.clamp(1, Semaphore::MAX_PERMITS) - self.budget.available_permits()
    }

    /// Charges refused because the budget was spent, since the start (HTTP
    /// pushes and syslog datagrams refused, and syslog TCP reads that then
    /// waited for room).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Charges `bytes` more to `charge`, or refuses without waiting.
    pub fn charge(&self, charge: &mut PushCharge, bytes: usize) -> Result<(), Refusal> {
        if self.max_bytes == 0 || bytes == 0 {
            return Ok(());
        }
        let held: usize = charge._permits.iter().map(|p| p.num_permits()).sum();
        let cap = self.max_bytes.clamp(1, Semaphore::MAX_PERMITS);
        // Never more than the whole budget for one push.
        let n = bytes.min(cap.saturating_sub(held));
        if n == 0 {
            return Ok(());
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        match self.budget.clone().try_acquire_many_owned(n) {
            Ok(p) => {
                charge._permits.push(p);
                Ok(())
            }
            Err(_) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(Refusal::Busy)
            }
        }
    }

    /// Charges `bytes` more to `charge`, waiting until the budget has room
    /// (for the syslog TCP listener, whose senders are slowed by TCP flow
    /// control instead of being answered 503).
    pub async fn charge_waiting(&self, charge: &mut PushCharge, bytes: usize) {
        if self.max_bytes == 0 || bytes == 0 {
            return;
        }
        let held: usize = charge._permits.iter().map(|p| p.num_permits()).sum();
        let cap = self.max_bytes.clamp(1, Semaphore::MAX_PERMITS);
        let n = bytes.min(cap.saturating_sub(held));
        if n == 0 {
            return;
        }
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        // The semaphore is never closed, so acquiring only waits.
        if let Ok(p) = self.budget.clone().acquire_many_owned(n).await {
            charge._permits.push(p);
        }
    }

    /// An empty charge.
    pub fn empty_charge() -> PushCharge {
        PushCharge {
            _permits: Vec::new(),
        }
    }
}

/// The answer to a push the budget refused.
fn busy(gate: &PushGate) -> Response {
    let body = format!(
        "too many push bytes in flight (limit {} bytes, --max-inflight-push-bytes); retry later\n",
        gate.max_bytes
    );
    let mut resp = (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::RETRY_AFTER, HeaderValue::from_static("1")),
        ],
        body,
    )
        .into_response();
    resp.extensions_mut().insert(ErrorReason(REASON));
    resp
}

/// Reads a refused push's body and drops it chunk by chunk (up to `limit`
/// bytes), so the client, still sending, reads the 503 instead of a broken
/// connection; it costs no memory beyond one chunk.
async fn drain(body: Body, limit: usize) {
    let mut body = body;
    let mut seen = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            seen += data.len();
            if seen > limit {
                return;
            }
        }
    }
}

/// Reads a body of unknown length, charging each chunk as it arrives.
async fn read_charged(
    gate: &PushGate,
    charge: &mut PushCharge,
    body: &mut Body,
    limit: usize,
) -> Result<bytes::Bytes, Refusal> {
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Refusal::Body(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(Refusal::TooLarge);
            }
            gate.charge(charge, data.len())?;
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// The layer around the HTTP push routes.
pub async fn limit(State(gate): State<Arc<PushGate>>, req: Request, next: Next) -> Response {
    let gate = gate.as_ref();
    if gate.max_bytes() == 0 {
        return next.run(req).await;
    }
    let mut charge = PushGate::empty_charge();
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let req = match length {
        Some(n) => {
            if gate.charge(&mut charge, n).is_err() {
                drain(req.into_body(), gate.max_body_bytes).await;
                return busy(gate);
            }
            req
        }
        None => {
            let (parts, mut body) = req.into_parts();
            let limit = gate.max_body_bytes;
            match read_charged(gate, &mut charge, &mut body, limit).await {
                Ok(bytes) => Request::from_parts(parts, Body::from(bytes)),
                Err(Refusal::Busy) => {
                    drop(charge);
                    drain(body, limit).await;
                    return busy(gate);
                }
                Err(Refusal::TooLarge) => {
                    return crate::error::ApiError::too_large(format!(
                        "request body larger than {} bytes",
                        gate.max_body_bytes
                    ))
                    .into_response()
                }
                Err(Refusal::Body(e)) => {
                    return crate::error::ApiError::bad_request(format!(
                        "could not read the request body: {e}"
                    ))
                    .into_response()
                }
            }
        }
    };
    // The handler runs to its end in its own task, holding the charge, even
    // when this future is dropped because the client went away.
    let task = tokio::spawn(async move {
        let resp = next.run(req).await;
        drop(charge);
        resp
    });
    match task.await {
        Ok(resp) => resp,
        Err(e) => crate::error::ApiError::internal(format!("internal error: {e}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_refused_past_the_budget_and_given_back_when_dropped() {
        let gate = PushGate::new(100, 1 << 20);
        let mut a = PushGate::empty_charge();
        gate.charge(&mut a, 60).unwrap();
        let mut b = PushGate::empty_charge();
        assert_eq!(gate.charge(&mut b, 50), Err(Refusal::Busy));
        assert_eq!(gate.refused(), 1);
        gate.charge(&mut b, 40).unwrap();
        assert_eq!(gate.in_flight(), 100);
        drop(a);
        assert_eq!(gate.in_flight(), 40);
        // Chunks add up on one charge.
        gate.charge(&mut b, 30).unwrap();
        assert_eq!(gate.in_flight(), 70);
        drop(b);
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn a_body_larger_than_the_budget_is_charged_the_whole_budget() {
        let gate = PushGate::new(100, 1 << 20);
        let mut big = PushGate::empty_charge();
        gate.charge(&mut big, 1_000).unwrap();
        assert_eq!(gate.in_flight(), 100);
        // Its later chunks cost nothing more.
        gate.charge(&mut big, 1_000).unwrap();
        let mut small = PushGate::empty_charge();
        assert_eq!(gate.charge(&mut small, 1), Err(Refusal::Busy));
        drop(big);
        gate.charge(&mut small, 1).unwrap();
    }

    #[test]
    fn no_budget_admits_everything() {
        let gate = PushGate::new(0, 1 << 20);
        let mut c = PushGate::empty_charge();
        gate.charge(&mut c, usize::MAX).unwrap();
        assert_eq!(gate.in_flight(), 0);
        assert_eq!(gate.refused(), 0);
    }
}
