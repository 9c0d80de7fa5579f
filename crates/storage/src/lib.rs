//! The embedded columnar log store.
//!
//! Hierarchy: storage → tenant → day partition → part → per-stream block → column.
//! See `docs/storage-format.md` for every on-disk layout.
//!
//! This crate is the write side, the on-disk format and its primitives: WAL,
//! memtable, day partitions, parts and their blocks, merge, stream index,
//! delete requests and retention. It reads nothing for queries itself: the
//! query executor is the crate above it, `runakefli-storage-query`, whose
//! `EmbeddedBackend` implements [`runakefli_model::Backend`] over one
//! [`Snapshot`] at a time; this crate never imports it.
//!
//! Entry points: [`Storage::open`] with a [`StorageConfig`];
//! [`Storage::append`] acknowledges durable writes; [`Storage::snapshot`]
//! hands a reader what one read of a tenant and time range sees (the read
//! rule, memtables first, then parts, is written once, in [`snapshot`]);
//! [`Storage::stats`] reports [`StorageStats`]. [`Storage`] implements the
//! server's write seam ([`runakefli_model::Ingest`], `Operations`,
//! `Deletes`).
#![deny(missing_docs)]

pub mod block;
pub mod config;
pub mod deletes;
pub mod encoding;
pub mod error;
mod fsutil;
pub mod manifest;
pub mod memtable;
pub mod merge;
pub mod merge_iter;
pub mod names;
pub mod padded;
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
