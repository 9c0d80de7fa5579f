//! What one query request runs against (backend, tenant, deadline, whether
//! fast paths may answer) and, for a log query, the window of entries it asks.

use crate::options::FastPaths;
use runakefli_model::{Backend, Direction, TenantId, Timestamp};
use std::time::Instant;

/// The backend, tenant, deadline and path choice of one request.
#[derive(Clone, Copy)]
pub struct QueryScope<'a> {
    /// The storage the request reads.
    pub backend: &'a dyn Backend,
    /// Whose data it reads.
    pub tenant: &'a TenantId,
    /// When it must be done.
    pub deadline: Instant,
    /// Whether query plans and the columnar path may answer.
    pub fast_paths: FastPaths,
}

/// The entries a log query asks: `[start, end)`, at most `limit`, the
/// first ones in `direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWindow {
    /// First timestamp (inclusive, ns).
    pub start: Timestamp,
    /// Last timestamp (exclusive, ns).
    pub end: Timestamp,
    /// Most entries in the answer.
    pub limit: usize,
    /// Which end of the window the answer starts from.
    pub direction: Direction,
}
