//! The embedded store's query executor: reads over one
//! [`Snapshot`](runakefli_storage::Snapshot) of `runakefli-storage`.
//!
//! Crate tree: `runakefli-storage` (write side, format, primitives) below
//! this crate, below the engine. A read takes a snapshot of a tenant and
//! time range (memtables first, then parts: the store's read rule, written
//! once in `runakefli_storage::snapshot`) and answers from its sources:
//!
//! - [`EmbeddedBackend`] implements [`runakefli_model::Backend`] for a
//!   [`Storage`](runakefli_storage::Storage): label queries from the stream
//!   index, scans that merge parts and memtables per stream (`backend.rs`),
//!   column scans ([`column_scan`]) and query plans (`exec/`).
//! - Its caches (rows rebuilt for answers, decoded block columns) are its
//!   own fields, sized by the [`QueryConfig`] it is built with: two stores
//!   in one process share nothing.
//! - [`limits`] holds the executor's fixed limits.
#![deny(missing_docs)]

mod backend;
pub mod column_scan;
pub mod config;
mod exec;
pub mod limits;

pub use backend::{CacheStats, EmbeddedBackend};
pub use config::QueryConfig;
