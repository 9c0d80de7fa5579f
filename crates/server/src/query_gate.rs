//! The concurrent-query limit: at most `max_concurrent` read requests
//! (queries, labels, series, index stats and volumes) run at once; up to
//! `max_queued` more wait, each at most `queue_timeout`, for a slot; beyond
//! that, or after waiting that long, a request is answered 429 with Loki's
//! `too many outstanding requests`, which Grafana and `logcli` retry.
//!
//! A slot is held until the blocking work of its request has finished (the
//! permit moves into the blocking task), so a client that gives up does not
//! free a slot that is still computing.

use crate::error::ApiError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Loki's answer when its query queue is full.
pub const TOO_MANY_OUTSTANDING: &str = "too many outstanding requests";

/// Admission of read requests.
#[derive(Debug)]
pub struct QueryGate {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_queued: usize,
    queue_timeout: Duration,
}

/// A running request's slot; dropping it frees the slot.
#[derive(Debug)]
pub struct QuerySlot {
    _permit: OwnedSemaphorePermit,
}

/// Counts a request as waiting while it exists (also when its future is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl QueryGate {
    /// A gate running `max_concurrent` requests at once (0: no limit), with
    /// `max_queued` waiting at most `queue_timeout` each.
    pub fn new(max_concurrent: usize, max_queued: usize, queue_timeout: Duration) -> Self {
        let slots = if max_concurrent == 0 {
            Semaphore::MAX_PERMITS
        } else {
            max_concurrent.min(Semaphore::MAX_PERMITS)
        };
        QueryGate {
            slots: Arc::new(Semaphore::new(slots)),
            waiting: AtomicUsize::new(0),
            max_queued,
            queue_timeout,
        }
    }

    /// Requests waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// A slot for one request: at once when one is free, after queueing
    /// otherwise; 429 when the queue is full or the wait times out.
    pub async fn enter(&self) -> Result<QuerySlot, ApiError> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(QuerySlot { _permit: p });
        }
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_queued {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError::too_many_requests(TOO_MANY_OUTSTANDING));
        }
        let _w = Waiting(&self.waiting);
        match tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(QuerySlot { _permit: p }),
            Ok(Err(_)) => Err(ApiError::unavailable("server is shutting down")),
            Err(_) => Err(ApiError::too_many_requests(TOO_MANY_OUTSTANDING)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn full_slots_queue_then_refuse_with_429() {
        let gate = Arc::new(QueryGate::new(1, 1, Duration::from_millis(100)));
        let first = gate.enter().await.unwrap();
        // One may wait: it times out while the slot stays taken.
        let t0 = std::time::Instant::now();
        let err = gate.enter().await.unwrap_err();
        assert_eq!(
            (err.status, err.message.as_str()),
            (429, TOO_MANY_OUTSTANDING)
        );
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert_eq!(gate.waiting(), 0);
        // While one waits, the next is refused at once.
        let g = gate.clone();
        let queued = tokio::spawn(async move { g.enter().await.map(|_| ()) });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        let t0 = std::time::Instant::now();
        assert_eq!(gate.enter().await.unwrap_err().status, 429);
        assert!(t0.elapsed() < Duration::from_millis(50));
        // Freeing the slot lets the queued request in.
        drop(first);
        queued.await.unwrap().unwrap();
        assert!(gate.enter().await.is_ok());
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_queue() {
        let gate = QueryGate::new(1, 1, Duration::from_secs(60));
        let _slot = gate.enter().await.unwrap();
        let wait = gate.enter();
        tokio::select! {
            _ = wait => panic!("no slot is free"),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        assert_eq!(gate.waiting(), 0);
    }

    #[tokio::test]
    async fn zero_means_unlimited() {
        let gate = QueryGate::new(0, 0, Duration::from_millis(1));
        let mut slots = Vec::new();
        for _ in 0..100 {
            slots.push(gate.enter().await.unwrap());
        }
        assert_eq!(slots.len(), 100);
    }
}
