//! The embedded columnar log store.
//!
//! Hierarchy: storage → tenant → day partition → part → per-stream block → column.
//! See `docs/storage-format.md` for every on-disk layout.
#![deny(missing_docs)]

pub mod block;
pub mod error;

pub use error::StorageError;
