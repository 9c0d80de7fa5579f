//! Group commit of pushes, and the bound on pushes waiting for ClickHouse.
//!
//! Many small inserts make many small parts, which ClickHouse merges in the
//! background and, past `parts_to_throw_insert`, refuses with
//! `TOO_MANY_PARTS`. So concurrent pushes share inserts, as the embedded
//! store's WAL shares its `fdatasync`s: a push encodes its rows in its own
//! thread and queues them. The first push that finds no insert in progress
//! becomes the leader: it takes the queued pushes from the front, as many as
//! [`BatchLimits`] allow (always at least one), joins them
//! ([`crate::insert::encode_batch`]), writes the pair of inserts (`streams`,
//! then `logs`, each retried as [`crate::PushRetry`] says) and hands the
//! outcome to every member. Pushes queued meanwhile form the next batch. A
//! push that arrives while nothing is in flight is written at once, alone,
//! exactly as before batching. A push returns only with the outcome of the
//! batch holding it: `Ok` once ClickHouse acknowledged both inserts, so an
//! acknowledged line is never only in memory.
//!
//! [`Backlog`] bounds the pushes (and their encoded bytes) waiting here,
//! queued or in the batch being written: a push past it is refused at once
//! with [`Error::Backlog`] (the server answers 503 with `Retry-After`)
//! instead of holding a thread and its rows while ClickHouse is slow or
//! stalled. Nothing of a refused push is stored.

use crate::insert::{encode_batch, PushInserts};
use crate::Error;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// How large one batch (one insert pair) may grow. A single push larger
/// than either bound is written alone, never split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchLimits {
    /// Most `logs` rows in one batch.
    pub max_rows: u64,
    /// Most encoded bytes (both bodies) in one batch.
    pub max_bytes: usize,
}

impl Default for BatchLimits {
    /// 100,000 rows or 16 MiB: far above the 1,000 rows an insert should
    /// hold for ClickHouse to keep up with its parts, well under
    /// `max_insert_block_size` (1,048,576 rows, so a batch is one block per
    /// partition and one deduplication token covers it), and small enough
    /// that the members of a batch wait for one insert of a few hundred
    /// milliseconds, not seconds.
    fn default() -> Self {
        BatchLimits {
            max_rows: 100_000,
            max_bytes: 16 << 20,
        }
    }
}

/// How many pushes may wait for ClickHouse at once (queued, or in the batch
/// being written); 0 in a field: no bound on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backlog {
    /// Most pushes waiting.
    pub max_pushes: usize,
    /// Most encoded bytes of rows waiting. A push larger than this alone is
    /// admitted only when no other push waits.
    pub max_bytes: usize,
}

/// Default of [`Backlog::max_pushes`]. Each waiting push holds one thread
/// of the server's blocking pool (512 threads), which queries need too: at
/// most half of it waits on ClickHouse.
pub const DEFAULT_MAX_WAITING_PUSHES: usize = 256;
/// Default of [`Backlog::max_bytes`]: the server's default in-flight push
/// body budget (256 MiB), as encoded rows.
pub const DEFAULT_MAX_WAITING_BYTES: usize = 256 << 20;

impl Default for Backlog {
    /// [`DEFAULT_MAX_WAITING_PUSHES`], [`DEFAULT_MAX_WAITING_BYTES`].
    fn default() -> Self {
        Backlog {
            max_pushes: DEFAULT_MAX_WAITING_PUSHES,
            max_bytes: DEFAULT_MAX_WAITING_BYTES,
        }
    }
}

impl Backlog {
    /// The refusal for a push of `bytes` when `pushes` pushes of
    /// `waiting_bytes` wait, or `None` when it may wait too.
    fn refusal(&self, pushes: usize, waiting_bytes: usize, bytes: usize) -> Option<Error> {
        let too_many = self.max_pushes > 0 && pushes >= self.max_pushes;
        let too_large = self.max_bytes > 0
            && pushes > 0
            && waiting_bytes.saturating_add(bytes) > self.max_bytes;
        (too_many || too_large).then_some(Error::Backlog {
            pushes,
            bytes: waiting_bytes,
            max_pushes: self.max_pushes,
            max_bytes: self.max_bytes,
        })
    }
}

/// What the group commit did since the backend opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PushStats {
    /// Inserts retried ([`crate::PushRetry`]).
    pub retries: u64,
    /// Batches (insert pairs) ClickHouse acknowledged.
    pub batches: u64,
    /// Batches that failed (every member answered the failure).
    pub failed_batches: u64,
    /// Pushes in acknowledged batches.
    pub batched_pushes: u64,
    /// `logs` rows in acknowledged batches.
    pub batched_rows: u64,
    /// Pushes refused at once by the [`Backlog`].
    pub refused: u64,
    /// Pushes waiting now (queued or being written).
    pub waiting_pushes: u64,
    /// Their encoded bytes.
    pub waiting_bytes: u64,
}

struct Queued {
    ticket: u64,
    inserts: PushInserts,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    next_ticket: u64,
    leader: bool,
    /// Outcomes of written batches, per member, until the member takes it.
    outcomes: HashMap<u64, Result<(), Error>>,
    waiting_pushes: usize,
    waiting_bytes: usize,
}

/// The queue of pushes and the leader/follower protocol (module docs).
pub(crate) struct GroupCommit {
    state: Mutex<State>,
    written: Condvar,
    pub(crate) limits: BatchLimits,
    pub(crate) backlog: Backlog,
    pub(crate) retries: AtomicU64,
    batches: AtomicU64,
    failed_batches: AtomicU64,
    batched_pushes: AtomicU64,
    batched_rows: AtomicU64,
    refused: AtomicU64,
}

impl GroupCommit {
    pub(crate) fn new(limits: BatchLimits, backlog: Backlog) -> Self {
        GroupCommit {
            state: Mutex::new(State::default()),
            written: Condvar::new(),
            limits,
            backlog,
            retries: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            failed_batches: AtomicU64::new(0),
            batched_pushes: AtomicU64::new(0),
            batched_rows: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> PushStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (waiting_pushes, waiting_bytes) = {
            let st = self.state.lock();
            (st.waiting_pushes as u64, st.waiting_bytes as u64)
        };
        PushStats {
            retries: get(&self.retries),
            batches: get(&self.batches),
            failed_batches: get(&self.failed_batches),
            batched_pushes: get(&self.batched_pushes),
            batched_rows: get(&self.batched_rows),
            refused: get(&self.refused),
            waiting_pushes,
            waiting_bytes,
        }
    }

    /// Queues `inserts` and returns the outcome of the batch that held
    /// them, writing batches with `write` while leading; refuses at once
    /// past the [`Backlog`].
    pub(crate) fn submit(
        &self,
        inserts: PushInserts,
        write: impl Fn(&PushInserts) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let bytes = inserts.bytes();
        let mut st = self.state.lock();
        if let Some(e) = self
            .backlog
            .refusal(st.waiting_pushes, st.waiting_bytes, bytes)
        {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        st.waiting_pushes += 1;
        st.waiting_bytes += bytes;
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push_back(Queued { ticket, inserts });
        loop {
            if let Some(outcome) = st.outcomes.remove(&ticket) {
                return outcome;
            }
            if st.leader {
                self.written.wait(&mut st);
                continue;
            }
            st.leader = true;
            let batch = take_batch(&mut st.queue, &self.limits);
            drop(st);
            let members: Vec<&PushInserts> = batch.iter().map(|q| &q.inserts).collect();
            let joined = encode_batch(&members);
            // A panic would leave the followers waiting for ever: it fails
            // the batch instead.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(&joined)))
                .unwrap_or_else(|_| Err(Error::Internal("a batch insert panicked".into())));
            match &outcome {
                Ok(()) => {
                    self.batches.fetch_add(1, Ordering::Relaxed);
                    self.batched_pushes
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    self.batched_rows
                        .fetch_add(joined.entries, Ordering::Relaxed);
                }
                Err(_) => {
                    self.failed_batches.fetch_add(1, Ordering::Relaxed);
                }
            }
            st = self.state.lock();
            for q in &batch {
                st.outcomes.insert(q.ticket, outcome.clone());
                st.waiting_pushes -= 1;
                st.waiting_bytes -= q.inserts.bytes();
            }
            st.leader = false;
            self.written.notify_all();
        }
    }
}

/// The pushes at the front of `queue` that fit in one batch (at least one).
fn take_batch(queue: &mut VecDeque<Queued>, limits: &BatchLimits) -> Vec<Queued> {
    let mut batch: Vec<Queued> = Vec::new();
    let (mut rows, mut bytes) = (0u64, 0usize);
    while let Some(next) = queue.front() {
        let (r, b) = (next.inserts.entries, next.inserts.bytes());
        if !batch.is_empty() && (rows + r > limits.max_rows || bytes + b > limits.max_bytes) {
            break;
        }
        rows += r;
        bytes += b;
        batch.extend(queue.pop_front());
    }
    batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insert::InsertBody;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    fn inserts(name: &str, rows: u64, bytes: usize) -> PushInserts {
        PushInserts {
            logs: InsertBody {
                data: vec![b'x'; bytes],
                token: format!("logs-{name}"),
            },
            streams: InsertBody {
                data: Vec::new(),
                token: format!("streams-{name}"),
            },
            entries: rows,
        }
    }

    fn queued(items: &[(u64, usize)]) -> VecDeque<Queued> {
        items
            .iter()
            .enumerate()
            .map(|(i, &(rows, bytes))| Queued {
                ticket: i as u64,
                inserts: inserts(&i.to_string(), rows, bytes),
            })
            .collect()
    }

    #[test]
    fn batches_take_the_front_of_the_queue_within_the_limits() {
        let limits = BatchLimits {
            max_rows: 10,
            max_bytes: 100,
        };
        let tickets = |b: Vec<Queued>| b.iter().map(|q| q.ticket).collect::<Vec<_>>();
        let mut q = queued(&[(4, 10), (4, 10), (4, 10), (20, 10), (1, 90), (1, 20)]);
        assert_eq!(tickets(take_batch(&mut q, &limits)), [0, 1]);
        assert_eq!(tickets(take_batch(&mut q, &limits)), [2]);
        // Larger than the bound alone: written alone, not split.
        assert_eq!(tickets(take_batch(&mut q, &limits)), [3]);
        assert_eq!(tickets(take_batch(&mut q, &limits)), [4]);
        assert_eq!(tickets(take_batch(&mut q, &limits)), [5]);
        assert!(take_batch(&mut q, &limits).is_empty());
    }

    #[test]
    fn the_backlog_refuses_past_its_pushes_or_bytes() {
        let b = Backlog {
            max_pushes: 2,
            max_bytes: 100,
        };
        assert!(b.refusal(0, 0, 1_000).is_none(), "alone, any size");
        assert!(b.refusal(1, 50, 50).is_none());
        assert!(b.refusal(1, 50, 51).is_some());
        let e = b.refusal(2, 10, 1).unwrap();
        assert!(matches!(e, Error::Backlog { pushes: 2, .. }), "{e:?}");
        assert!(!e.is_retryable(), "refused at once, not retried inside");
        let none = Backlog {
            max_pushes: 0,
            max_bytes: 0,
        };
        assert!(none.refusal(1 << 20, usize::MAX - 1, 1).is_none());
    }

    /// Pushes arriving while an insert is in flight share the next one;
    /// each gets its batch's outcome; the backlog refuses past its bound
    /// and admits again once the batch is written.
    #[test]
    fn concurrent_pushes_share_inserts_and_the_backlog_bounds_the_wait() {
        let gc = Arc::new(GroupCommit::new(
            BatchLimits::default(),
            Backlog {
                max_pushes: 6,
                max_bytes: 0,
            },
        ));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let writes = Arc::new(Mutex::new(Vec::<u64>::new()));
        let write = {
            let (release, writes) = (release.clone(), writes.clone());
            move |b: &PushInserts| {
                writes.lock().push(b.entries);
                let (open, cond) = &*release;
                let mut open = open.lock();
                while !*open {
                    cond.wait(&mut open);
                }
                if b.logs.token.contains("fail") {
                    return Err(Error::Transport("cut".into()));
                }
                Ok(())
            }
        };
        // The first push leads and blocks in its insert.
        let first = {
            let (gc, write) = (gc.clone(), write.clone());
            std::thread::spawn(move || gc.submit(inserts("a", 1, 1), write))
        };
        while writes.lock().is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Five more queue behind it.
        let started = Arc::new(Barrier::new(6));
        let done = Arc::new(AtomicUsize::new(0));
        let followers: Vec<_> = (0..5u64)
            .map(|i| {
                let (gc, write, started, done) =
                    (gc.clone(), write.clone(), started.clone(), done.clone());
                std::thread::spawn(move || {
                    started.wait();
                    let r = gc.submit(inserts(&format!("f{i}"), 10 + i, 1), write);
                    done.fetch_add(1, Ordering::SeqCst);
                    r
                })
            })
            .collect();
        started.wait();
        while gc.stats().waiting_pushes < 6 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The seventh is one too many: refused at once.
        let e = gc.submit(inserts("late", 1, 1), &write).unwrap_err();
        assert!(matches!(e, Error::Backlog { pushes: 6, .. }), "{e}");
        assert_eq!(done.load(Ordering::SeqCst), 0, "nobody answered early");
        {
            let (open, cond) = &*release;
            *open.lock() = true;
            cond.notify_all();
        }
        first.join().unwrap().unwrap();
        for f in followers {
            f.join().unwrap().unwrap();
        }
        // One insert for the first push, one for the five others.
        assert_eq!(*writes.lock(), [1, 10 + 11 + 12 + 13 + 14]);
        let s = gc.stats();
        assert_eq!(
            (s.batches, s.batched_pushes, s.batched_rows, s.refused),
            (2, 6, 61, 1)
        );
        assert_eq!((s.waiting_pushes, s.waiting_bytes), (0, 0));
        // A failed batch is every member's failure, and admits again.
        let e = gc.submit(inserts("fail", 1, 1), &write).unwrap_err();
        assert!(matches!(e, Error::Transport(_)), "{e}");
        assert_eq!(gc.stats().failed_batches, 1);
        gc.submit(inserts("b", 1, 1), &write).unwrap();
    }

    #[test]
    fn a_panicking_insert_fails_its_batch_and_frees_the_queue() {
        let gc = GroupCommit::new(BatchLimits::default(), Backlog::default());
        let e = gc
            .submit(inserts("a", 1, 1), |_| panic!("boom"))
            .unwrap_err();
        assert!(matches!(e, Error::Internal(_)), "{e}");
        gc.submit(inserts("b", 1, 1), |_| Ok(())).unwrap();
        assert_eq!(gc.stats().waiting_pushes, 0);
    }
}
