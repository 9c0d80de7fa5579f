//! Cancellation of read requests whose client went away.
//!
//! When a client disconnects, the HTTP server drops the request's future. A
//! [`CancelOnDrop`] guard held by that future then raises the request's flag,
//! and the [`CancellableBackend`] the request's engine reads through stops
//! every scan at its next batch (at most [`runakefli_model`]'s batch of rows
//! per stream later) with [`BackendError::Cancelled`], so the blocking work
//! ends and frees its query slot instead of computing an answer no one
//! reads. Plans the store executes whole (`Backend::execute`) get the flag
//! in [`QueryPlan::cancel`] and stop where they check their deadline.

use runakefli_model::plan::{PlanAnswer, QueryPlan};
use runakefli_model::{
    Backend, BackendError, ColumnBatch, ColumnRequest, EntryBatch, Matcher, ScanControl,
    ScanRequest, StreamBounds, StreamInfo, StreamTotals, TenantId, Timestamp,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Raises its flag when dropped before [`CancelOnDrop::disarm`].
pub struct CancelOnDrop {
    flag: Arc<AtomicBool>,
    armed: bool,
}

impl CancelOnDrop {
    /// A guard over `flag`.
    pub fn new(flag: Arc<AtomicBool>) -> Self {
        CancelOnDrop { flag, armed: true }
    }

    /// The request finished: dropping the guard no longer cancels anything.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

/// A backend that fails every read with [`BackendError::Cancelled`] once its
/// flag is raised, stopping scans in progress; it counts a stopped request
/// once, however many of its scans ran.
pub struct CancellableBackend {
    inner: Arc<dyn Backend>,
    flag: Arc<AtomicBool>,
    cancelled: Arc<AtomicU64>,
    /// Set once this request is counted, so parallel scans count it once.
    counted: AtomicBool,
}

impl CancellableBackend {
    /// Reads `inner` until `flag` is raised; a stopped request (the one this
    /// backend serves) adds one to `cancelled`.
    pub fn new(inner: Arc<dyn Backend>, flag: Arc<AtomicBool>, cancelled: Arc<AtomicU64>) -> Self {
        CancellableBackend {
            inner,
            flag,
            cancelled,
            counted: AtomicBool::new(false),
        }
    }

    fn check(&self) -> Result<(), BackendError> {
        if self.flag.load(Ordering::Relaxed) {
            return Err(BackendError::Cancelled);
        }
        Ok(())
    }

    /// Runs a scan whose visitor stops once the flag is raised.
    fn guarded<T>(
        &self,
        run: impl FnOnce(&dyn Fn() -> bool) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        self.check()?;
        let stop = || self.flag.load(Ordering::Relaxed);
        let out = run(&stop);
        if stop() {
            if !self.counted.swap(true, Ordering::Relaxed) {
                self.cancelled.fetch_add(1, Ordering::Relaxed);
            }
            return Err(BackendError::Cancelled);
        }
        out
    }
}

impl Backend for CancellableBackend {
    fn streams(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError> {
        self.check()?;
        self.inner.streams(tenant, matchers, start, end)
    }

    fn label_names(
        &self,
        tenant: &TenantId,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        self.check()?;
        self.inner.label_names(tenant, start, end)
    }

    fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        self.check()?;
        self.inner.label_values(tenant, name, matchers, start, end)
    }

    fn scan(
        &self,
        request: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.guarded(|stop| {
            self.inner.scan(request, &mut |info, batch| {
                if stop() {
                    return ScanControl::Stop;
                }
                visit(info, batch)
            })
        })
    }

    fn execute(&self, plan: &QueryPlan) -> Result<Option<PlanAnswer>, BackendError> {
        // The store checks the flag where it checks the deadline (before
        // each stream's block or memtable run), so a plan stops part-way.
        let mut plan = plan.clone();
        plan.cancel = Some(self.flag.clone());
        self.guarded(|_| self.inner.execute(&plan))
    }

    fn stream_bounds(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
        deadline: Option<std::time::Instant>,
    ) -> Result<Option<Vec<StreamBounds>>, BackendError> {
        // Answered in one call: the flag is checked before and after it.
        self.guarded(|_| {
            self.inner
                .stream_bounds(tenant, matchers, start, end, deadline)
        })
    }

    fn stream_totals(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
        deadline: Option<std::time::Instant>,
    ) -> Result<Option<Vec<StreamTotals>>, BackendError> {
        // Answered in one call: the flag is checked before and after it.
        self.guarded(|_| {
            self.inner
                .stream_totals(tenant, matchers, start, end, deadline)
        })
    }

    fn scan_columns(
        &self,
        request: &ScanRequest,
        columns: &ColumnRequest,
        visit: &mut dyn FnMut(&StreamInfo, ColumnBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.guarded(|stop| {
            self.inner
                .scan_columns(request, columns, &mut |info, batch| {
                    if stop() {
                        return ScanControl::Stop;
                    }
                    visit(info, batch)
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::{Direction, Entry, Labels};

    /// A backend with one endless stream.
    struct Endless;

    impl Backend for Endless {
        fn streams(
            &self,
            _: &TenantId,
            _: &[Matcher],
            _: Timestamp,
            _: Timestamp,
        ) -> Result<Vec<StreamInfo>, BackendError> {
            Ok(vec![])
        }
        fn label_names(
            &self,
            _: &TenantId,
            _: Timestamp,
            _: Timestamp,
        ) -> Result<Vec<String>, BackendError> {
            Ok(vec![])
        }
        fn label_values(
            &self,
            _: &TenantId,
            _: &str,
            _: &[Matcher],
            _: Timestamp,
            _: Timestamp,
        ) -> Result<Vec<String>, BackendError> {
            Ok(vec![])
        }
        fn scan(
            &self,
            _: &ScanRequest,
            visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
        ) -> Result<(), BackendError> {
            let info = StreamInfo {
                id: 1,
                labels: Arc::new(Labels::new(vec![("a".into(), "b".into())])),
            };
            loop {
                let batch = EntryBatch {
                    entries: vec![Entry {
                        ts: 1,
                        line: "x".into(),
                        metadata: vec![],
                    }],
                };
                if visit(&info, batch) == ScanControl::Stop {
                    return Ok(());
                }
            }
        }
    }

    #[test]
    fn a_dropped_guard_stops_a_running_scan() {
        let flag = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let b = CancellableBackend::new(Arc::new(Endless), flag.clone(), count.clone());
        let guard = CancelOnDrop::new(flag.clone());
        let req = ScanRequest {
            tenant: TenantId::new("t"),
            matchers: vec![],
            start: 0,
            end: 10,
            direction: Direction::Forward,
            required_substrings: vec![],
            shard: None,
            cutoff: None,
        };
        let mut seen = 0;
        let mut guard = Some(guard);
        let r = b.scan(&req, &mut |_, _| {
            seen += 1;
            if seen == 100 {
                drop(guard.take()); // the client went away
            }
            ScanControl::Continue
        });
        assert!(matches!(r, Err(BackendError::Cancelled)));
        assert_eq!(seen, 100);
        assert_eq!(count.load(Ordering::Relaxed), 1);
        // A disarmed guard cancels nothing.
        let flag = Arc::new(AtomicBool::new(false));
        CancelOnDrop::new(flag.clone()).disarm();
        assert!(!flag.load(Ordering::Relaxed));
    }
}
