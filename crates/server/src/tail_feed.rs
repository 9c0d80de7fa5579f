//! The live tails' feed of entries pushed *behind* them.
//!
//! A tail reads the store forward from the newest entry it has sent
//! (`loki_api::tail`). An entry stored later with an older timestamp — a
//! second collector's batch a moment behind the first, a client's retry — lies
//! behind that cursor, and a store read alone would never send it. Loki's
//! ingesters hand every pushed entry to their tailers whatever its time, so
//! such entries reach a Loki tail; this feed makes them reach ours.
//!
//! Every push, once stored, is offered here ([`TailFeed::publish`]). While a
//! tail is open, the entries older than the *horizon* — the newest end of a
//! range a tail has read from the store, announced before the read
//! ([`TailFeed::announce`]) — go to each subscribed tail of the tenant over a
//! bounded broadcast channel. Entries at or past the horizon are left to the
//! store reads: no tail has read past them yet, and whatever read does will
//! see them, because the announcement and the offer take the same lock (an
//! offer that missed an announcement was made before it, so after the entry
//! was stored and before that read began). With no tail open, a push pays one
//! uncontended lock. A tail that falls [`CAPACITY`] pushes behind loses the
//! late entries of the pushes it missed (it is told how many pushes); the
//! entries in order still come from the store.

use runakefli_model::{PushRequest, PushStream, TenantId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Pushes (with late entries) a tail may fall behind by before it misses some.
pub const CAPACITY: usize = 1024;

/// The feed; one per server.
#[derive(Debug, Default)]
pub struct TailFeed {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// One channel per tenant with an open tail.
    senders: HashMap<TenantId, broadcast::Sender<Arc<PushRequest>>>,
    /// The newest end (exclusive) of a store read any tail has announced.
    horizon: i64,
}

/// One tail's end of the feed; leaving it closes the tenant's channel when
/// it was the last.
#[derive(Debug)]
pub struct Subscription {
    feed: Arc<TailFeed>,
    tenant: TenantId,
    rx: broadcast::Receiver<Arc<PushRequest>>,
}

/// What a tail finds waiting in the feed.
#[derive(Debug, Default)]
pub struct Waiting {
    /// The pushes' late entries, in the order they were stored.
    pub pushes: Vec<Arc<PushRequest>>,
    /// Pushes the tail fell too far behind to receive.
    pub missed: u64,
}

impl TailFeed {
    /// A feed with no tail open.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a tail's end of the feed for `tenant`; pushes offered from now
    /// on reach it.
    pub fn subscribe(self: &Arc<Self>, tenant: &TenantId) -> Subscription {
        let mut inner = self.lock();
        let rx = match inner.senders.get(tenant) {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = broadcast::channel(CAPACITY);
                inner.senders.insert(tenant.clone(), tx);
                rx
            }
        };
        Subscription {
            feed: self.clone(),
            tenant: tenant.clone(),
            rx,
        }
    }

    /// Announces that a tail is about to read the store up to `end`
    /// (exclusive): from now on, entries pushed before `end` are offered to
    /// the tails, since that read may carry the tail's cursor past them.
    pub fn announce(&self, end: i64) {
        let mut inner = self.lock();
        inner.horizon = inner.horizon.max(end);
    }

    /// Offers a push of `tenant` that has just been stored: its entries
    /// before the horizon go to the tenant's open tails.
    pub fn publish(&self, tenant: &TenantId, request: &PushRequest) {
        let inner = self.lock();
        let Some(tx) = inner.senders.get(tenant) else {
            return;
        };
        let horizon = inner.horizon;
        let streams: Vec<PushStream> = request
            .streams
            .iter()
            .filter_map(|s| {
                let entries: Vec<_> = s
                    .entries
                    .iter()
                    .filter(|e| e.ts < horizon)
                    .cloned()
                    .collect();
                (!entries.is_empty()).then(|| PushStream {
                    labels: s.labels.clone(),
                    entries,
                })
            })
            .collect();
        if !streams.is_empty() {
            // No receiver left is not an error: the channel closes with its
            // last subscription.
            let _ = tx.send(Arc::new(PushRequest { streams }));
        }
    }

    /// Open subscriptions of `tenant` (for tests and metrics).
    pub fn subscribers(&self, tenant: &TenantId) -> usize {
        self.lock()
            .senders
            .get(tenant)
            .map_or(0, broadcast::Sender::receiver_count)
    }
}

impl Subscription {
    /// Everything offered to this tail since it last looked, without waiting.
    pub fn take(&mut self) -> Waiting {
        let mut waiting = Waiting::default();
        loop {
            match self.rx.try_recv() {
                Ok(push) => waiting.pushes.push(push),
                Err(broadcast::error::TryRecvError::Lagged(n)) => waiting.missed += n,
                Err(_) => return waiting,
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut inner = self.feed.lock();
        // This receiver still counts until it is dropped, after this.
        if inner
            .senders
            .get(&self.tenant)
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            inner.senders.remove(&self.tenant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::{Entry, Labels};

    fn push(ts: &[i64]) -> PushRequest {
        PushRequest {
            streams: vec![PushStream {
                labels: Labels::new(vec![("app".into(), "a".into())]),
                entries: ts
                    .iter()
                    .map(|&ts| Entry {
                        ts,
                        line: format!("line {ts}"),
                        metadata: Vec::new(),
                    })
                    .collect(),
            }],
        }
    }

    fn times(w: &Waiting) -> Vec<i64> {
        w.pushes
            .iter()
            .flat_map(|p| {
                p.streams
                    .iter()
                    .flat_map(|s| s.entries.iter().map(|e| e.ts))
            })
            .collect()
    }

    #[test]
    fn only_entries_behind_the_announced_horizon_reach_a_tail() {
        let feed = TailFeed::new();
        let tenant = TenantId::default_tenant();
        let mut sub = feed.subscribe(&tenant);
        // No read announced yet: nothing can be behind a tail.
        feed.publish(&tenant, &push(&[5, 10]));
        assert!(times(&sub.take()).is_empty());
        feed.announce(10);
        feed.publish(&tenant, &push(&[5, 10, 3]));
        assert_eq!(times(&sub.take()), vec![5, 3]);
        // Another tenant's pushes stay with it.
        feed.publish(&TenantId::new("other"), &push(&[1]));
        assert!(times(&sub.take()).is_empty());
    }

    #[test]
    fn the_channel_closes_with_its_last_subscription() {
        let feed = TailFeed::new();
        let tenant = TenantId::default_tenant();
        let a = feed.subscribe(&tenant);
        let b = feed.subscribe(&tenant);
        assert_eq!(feed.subscribers(&tenant), 2);
        drop(a);
        assert_eq!(feed.subscribers(&tenant), 1);
        drop(b);
        assert_eq!(feed.subscribers(&tenant), 0);
        assert!(feed.lock().senders.is_empty());
    }

    #[test]
    fn a_tail_too_far_behind_is_told_how_many_pushes_it_missed() {
        let feed = TailFeed::new();
        let tenant = TenantId::default_tenant();
        let mut sub = feed.subscribe(&tenant);
        feed.announce(i64::MAX);
        for i in 0..CAPACITY as i64 + 3 {
            feed.publish(&tenant, &push(&[i]));
        }
        let w = sub.take();
        assert_eq!(w.missed, 3);
        assert_eq!(w.pushes.len(), CAPACITY);
    }
}
