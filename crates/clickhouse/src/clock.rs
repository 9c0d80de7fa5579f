//! The wall clock, as the timestamps the tables hold.

use runakefli_model::Timestamp;
use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in nanoseconds since the epoch.
pub(crate) fn now_ns() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}
