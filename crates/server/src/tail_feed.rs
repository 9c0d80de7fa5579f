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
//! ([`TailFeed::announce`]) — are queued for each subscribed tail of the
//! tenant (one shared copy per push, [`QUEUE_BYTES`] of entries at most per
//! tail). Entries at or past the horizon are left to the
//! store reads: no tail has read past them yet, and whatever read does will
//! see them, because the announcement and the offer take the same lock (an
//! offer that missed an announcement was made before it, so after the entry
//! was stored and before that read began). With no tail open, a push pays one
//! uncontended lock. A tail whose queue is full when a push comes (its client
//! too slow for a while) misses that push's late entries (it is told how many
//! pushes); the entries in order still come from the store.

use runakefli_model::{PushRequest, PushStream, TenantId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Most bytes of late entries (lines, metadata, labels) queued for one tail
/// between two of its looks.
pub const QUEUE_BYTES: usize = 16 << 20;

/// The feed; one per server.
#[derive(Debug)]
pub struct TailFeed {
    inner: Mutex<Inner>,
    queue_bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    /// The queues of the open tails, per tenant.
    queues: HashMap<TenantId, Vec<Arc<Mutex<Queue>>>>,
    /// The newest end (exclusive) of a store read any tail has announced.
    horizon: i64,
}

/// What waits for one tail.
#[derive(Debug, Default)]
struct Queue {
    pushes: Vec<Arc<PushRequest>>,
    bytes: usize,
    missed: u64,
}

/// One tail's end of the feed; dropping it removes its queue.
#[derive(Debug)]
pub struct Subscription {
    feed: Arc<TailFeed>,
    tenant: TenantId,
    queue: Arc<Mutex<Queue>>,
}

/// What a tail finds waiting in the feed.
#[derive(Debug, Default)]
pub struct Waiting {
    /// The pushes' late entries, in the order they were stored.
    pub pushes: Vec<Arc<PushRequest>>,
    /// Pushes whose late entries did not fit the tail's queue.
    pub missed: u64,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bytes a push's entries hold, roughly (lines, metadata, stream labels,
/// and a fixed 32 per entry).
fn push_bytes(request: &PushRequest) -> usize {
    request
        .streams
        .iter()
        .map(|s| {
            let labels: usize = s
                .labels
                .pairs()
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum();
            labels + s.entries.iter().map(|e| e.heap_bytes() + 32).sum::<usize>()
        })
        .sum()
}

impl TailFeed {
    /// A feed with no tail open, queueing at most [`QUEUE_BYTES`] per tail.
    pub fn new() -> Arc<Self> {
        Self::with_queue_bytes(QUEUE_BYTES)
    }

    /// A feed queueing at most `queue_bytes` of late entries per tail.
    pub fn with_queue_bytes(queue_bytes: usize) -> Arc<Self> {
        Arc::new(TailFeed {
            inner: Mutex::default(),
            queue_bytes,
        })
    }

    /// Opens a tail's end of the feed for `tenant`; pushes offered from now
    /// on reach it.
    pub fn subscribe(self: &Arc<Self>, tenant: &TenantId) -> Subscription {
        let queue = Arc::new(Mutex::new(Queue::default()));
        locked(&self.inner)
            .queues
            .entry(tenant.clone())
            .or_default()
            .push(queue.clone());
        Subscription {
            feed: self.clone(),
            tenant: tenant.clone(),
            queue,
        }
    }

    /// Announces that a tail is about to read the store up to `end`
    /// (exclusive): from now on, entries pushed before `end` are offered to
    /// the tails, since that read may carry the tail's cursor past them.
    pub fn announce(&self, end: i64) {
        let mut inner = locked(&self.inner);
        inner.horizon = inner.horizon.max(end);
    }

    /// Offers a push of `tenant` that has just been stored: its entries
    /// before the horizon are queued for the tenant's open tails.
    pub fn publish(&self, tenant: &TenantId, request: &PushRequest) {
        let inner = locked(&self.inner);
        let Some(queues) = inner.queues.get(tenant) else {
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
        if streams.is_empty() {
            return;
        }
        let late = Arc::new(PushRequest { streams });
        let bytes = push_bytes(&late);
        for queue in queues {
            let mut q = locked(queue);
            if q.bytes + bytes > self.queue_bytes {
                q.missed += 1;
            } else {
                q.bytes += bytes;
                q.pushes.push(late.clone());
            }
        }
    }

    /// Open subscriptions of `tenant` (for tests and metrics).
    pub fn subscribers(&self, tenant: &TenantId) -> usize {
        locked(&self.inner).queues.get(tenant).map_or(0, Vec::len)
    }
}

impl Subscription {
    /// Everything queued for this tail since it last looked, without waiting.
    pub fn take(&mut self) -> Waiting {
        let mut q = locked(&self.queue);
        q.bytes = 0;
        Waiting {
            pushes: std::mem::take(&mut q.pushes),
            missed: std::mem::take(&mut q.missed),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut inner = locked(&self.feed.inner);
        if let Some(queues) = inner.queues.get_mut(&self.tenant) {
            queues.retain(|q| !Arc::ptr_eq(q, &self.queue));
            if queues.is_empty() {
                inner.queues.remove(&self.tenant);
            }
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
        assert!(locked(&feed.inner).queues.is_empty());
    }

    #[test]
    fn a_full_queue_misses_pushes_and_says_how_many() {
        let one = push_bytes(&push(&[1]));
        let feed = TailFeed::with_queue_bytes(one * 5);
        let tenant = TenantId::default_tenant();
        let mut slow = feed.subscribe(&tenant);
        let mut quick = feed.subscribe(&tenant);
        feed.announce(i64::MAX);
        for i in 0..8 {
            feed.publish(&tenant, &push(&[i]));
            if i % 2 == 1 {
                assert_eq!(quick.take().missed, 0);
            }
        }
        let w = slow.take();
        assert_eq!(times(&w), vec![0, 1, 2, 3, 4]);
        assert_eq!(w.missed, 3);
        // Taking empties the queue: the next pushes fit again.
        feed.publish(&tenant, &push(&[9]));
        assert_eq!(times(&slow.take()), vec![9]);
    }
}
