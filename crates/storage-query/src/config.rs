//! Settings of the query executor ([`QueryConfig`]), given to
//! [`EmbeddedBackend::new`](crate::EmbeddedBackend::new).

/// Default of [`QueryConfig::decoded_cache_bytes`]: 64 MiB.
pub const DEFAULT_DECODED_CACHE_BYTES: usize = 64 << 20;

/// Default of [`QueryConfig::answer_cache_bytes`]: 32 MiB.
pub const DEFAULT_ANSWER_CACHE_BYTES: usize = 32 << 20;

/// Settings of one [`EmbeddedBackend`](crate::EmbeddedBackend).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryConfig {
    /// Memory for the rows (lines and metadata) rebuilt for the answers of
    /// log queries, kept for the next queries (see `exec/answer_cache.rs`).
    /// 0 turns the cache off.
    pub answer_cache_bytes: usize,
    /// Memory for blocks' decoded columns and row timestamps, kept for the
    /// next queries (see `exec/decoded_cache.rs`). 0 turns the cache off.
    pub decoded_cache_bytes: usize,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            answer_cache_bytes: DEFAULT_ANSWER_CACHE_BYTES,
            decoded_cache_bytes: DEFAULT_DECODED_CACHE_BYTES,
        }
    }
}
