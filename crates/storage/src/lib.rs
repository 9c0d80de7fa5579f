//! The embedded columnar log store.
//!
//! Hierarchy: storage → tenant → day partition → part → per-stream block → column.
//! See `docs/storage-format.md` for every on-disk layout.
//!
//! Entry point: [`Storage::open`] with a [`StorageConfig`]; [`Storage::append`]
//! acknowledges durable writes; [`Storage`] implements
//! [`runakefli_model::Backend`] for the query engine; [`Storage::stats`] reports
//! [`StorageStats`].
#![deny(missing_docs)]

mod backend;
pub mod block;
pub mod column_scan;
pub mod config;
pub mod deletes;
pub mod encoding;
pub mod error;
mod exec;
mod fsutil;
pub mod manifest;
pub mod memtable;
pub mod merge;
pub mod merge_iter;
pub mod names;
mod padded;
pub mod part;
pub mod partition;
mod prefetch;
pub mod quarantine;
pub mod retention;
mod seam;
pub mod snapshot;
pub mod stats;
mod storage;
pub mod stream_index;
mod upkeep;
pub mod wal;

pub use config::StorageConfig;
pub use error::StorageError;
pub use snapshot::Snapshot;
pub use stats::StorageStats;
pub use storage::Storage;
