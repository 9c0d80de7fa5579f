//! Core data types shared by every layer of Rúnakefli.
//!
//! This crate owns the vocabulary: [`TenantId`], [`Labels`], [`Entry`],
//! [`PushRequest`], label [`Matcher`]s, the [`Backend`] contract that a
//! storage engine implements for the query engine, and the write and
//! operations contracts ([`Ingest`], [`Operations`], [`Deletes`]) it
//! implements for the server, the backend-neutral retention settings
//! ([`retention`]) and calendar-date arithmetic ([`civil`]). It performs no
//! I/O.
#![deny(missing_docs)]

pub mod backend;
pub mod civil;
pub mod deletes;
pub mod entry;
pub mod label_condition;
pub mod labels;
pub mod matcher;
pub mod number;
pub mod plan;
pub mod regex_cache;
pub mod retention;
pub mod store;
pub mod tenant;

pub use backend::{
    Backend, BackendError, ColumnBatch, ColumnRequest, ColumnRow, Direction, EntryBatch, JsonValue,
    RowFields, ScanControl, ScanRequest, Shard, StreamBounds, StreamInfo, StreamTotals, TimeCutoff,
};
pub use deletes::Deletes;
pub use entry::{Entry, PushRequest, PushStream};
pub use labels::{Labels, LabelsParseError, StreamId};
pub use matcher::{MatchOp, Matcher, MatcherError};
pub use store::{Ingest, Operations, StoreError};
pub use tenant::TenantId;

/// Nanoseconds since the Unix epoch, the unit of every timestamp in Rúnakefli.
pub type Timestamp = i64;

/// Nanoseconds in one day; storage partitions data by UTC day.
pub const NANOS_PER_DAY: i64 = 86_400 * 1_000_000_000;
