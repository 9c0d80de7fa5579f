//! How a batch of pushes is written: its `streams` insert, then its
//! `logs` insert, each retried as [`PushRetry`] says.

use crate::client::{Client, Request};
use crate::insert::{PushInserts, INSERT_LOGS, INSERT_STREAMS};
use crate::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How [`crate::ClickHouseBackend::push`] retries an insert that failed in a way
/// that may pass ([`Error::is_retryable`]): the same body with the same
/// deduplication token, so an insert ClickHouse wrote but whose answer was
/// lost is not written twice. The tries and the time budget are per batch
/// of pushes ([`crate::group_commit`]), counted from the batch's first
/// insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushRetry {
    /// Inserts tried in all per batch, first tries included (1: no retry).
    pub attempts: u32,
    /// Wait before the first retry; doubled before each later one.
    pub backoff: Duration,
    /// No retry starts once this long has passed since the batch began (a
    /// collector waiting longer than this has likely given up and re-sends
    /// the push itself, which the token deduplicates too).
    pub budget: Duration,
}

impl Default for PushRetry {
    /// Four tries in all, 100 ms, 200 ms and 400 ms apart, within 10 s.
    fn default() -> Self {
        PushRetry {
            attempts: 4,
            backoff: Duration::from_millis(100),
            budget: Duration::from_secs(10),
        }
    }
}

impl PushRetry {
    /// Writes one batch's `streams` rows, then its `logs` rows through
    /// `client`, retrying each as `self` says; retries are counted in
    /// `retries`.
    pub(crate) fn insert_pair(
        &self,
        client: &Client,
        ins: &PushInserts,
        retries: &AtomicU64,
    ) -> Result<(), Error> {
        let began = Instant::now();
        let mut tries = 0u32;
        let mut backoff = self.backoff;
        for (stmt, body) in [(INSERT_STREAMS, &ins.streams), (INSERT_LOGS, &ins.logs)] {
            if body.data.is_empty() {
                continue;
            }
            let r = Request {
                settings: vec![("insert_deduplication_token", body.token.clone())],
                ..Request::default()
            };
            loop {
                tries += 1;
                match client.insert(stmt, &body.data, &r) {
                    Ok(()) => break,
                    Err(e)
                        if e.is_retryable()
                            && tries < self.attempts
                            && began.elapsed() + backoff < self.budget =>
                    {
                        std::thread::sleep(backoff);
                        backoff = backoff.saturating_mul(2);
                        retries.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}
