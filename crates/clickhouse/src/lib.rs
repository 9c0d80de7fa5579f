//! Rúnakefli's ClickHouse backend (issue 11), served by `runakefli serve --backend clickhouse`.
//!
//! - [`client`]: ClickHouse's plain HTTP interface (queries, inserts,
//!   exceptions mapped to [`Error::Server`]);
//! - [`schema`]: the versioned tables and their migrations;
//! - [`cluster`]: the cluster layout (`ON CLUSTER`, local and `Distributed`
//!   tables, Replicated engines);
//! - [`sql`]: SQL text for the pieces of a [`runakefli_model::plan::QueryPlan`],
//!   as pure functions;
//! - [`stream_catalog`]: the streams a query reads rows of (read again when
//!   a push lands between the streams' read and the rows');
//! - [`insert`]: push requests encoded as `JSONEachRow` insert bodies;
//! - [`group_commit`]: concurrent pushes joined into shared inserts, and the
//!   bound on pushes waiting for ClickHouse;
//! - [`push`]: a batch's pair of inserts, retried ([`PushRetry`]);
//! - [`backend`]: [`ClickHouseBackend`], `model::Backend` (streams, labels,
//!   scans, plans) and pushes, delegating each concern to the modules below;
//!   `seam` adds the server's write, operations and delete-request seam
//!   (`model::Ingest`, `model::Operations`, `model::Deletes`);
//! - [`stats`]: what the backend counts (queries in SQL, housekeeping);
//! - `failure`: ClickHouse's failures as the model's error kinds (which
//!   HTTP status a query or a push gets);
//! - `scan`: a scan's streamed rows handed on in per-stream batches;
//! - `rows`, `clock`, `cancel`: JSON answer rows read as values, the wall
//!   clock as timestamps, a plan's cancel flag;
//! - [`lines`]: lines plans read by legs (day slices) and keyset pages;
//! - [`buckets`]: bucket plans (range aggregations) read by legs of whole
//!   days at once;
//! - [`deletes`]: delete requests (persisted, hidden, purged);
//! - [`retention`]: retention passes (partition drops, lightweight deletes);
//! - [`housekeeping`]: the thread running both.
//!
//! The modules form no cycle: the helpers and the concerns (`lines`,
//! `buckets`, `deletes`, `retention`, `stream_catalog`) take what they need
//! (a [`Client`], the [`stats`] counters, their settings) and never name
//! [`ClickHouseBackend`], which holds them all; only `backend` and `seam`
//! (its trait impls for the server) do.
//!
//! The design, with the reasons, is `docs/clickhouse.md`.

#![deny(missing_docs)]

pub mod backend;
pub mod buckets;
mod cancel;
pub mod client;
mod clock;
pub mod cluster;
pub mod deletes;
mod error;
mod failure;
pub mod group_commit;
pub mod housekeeping;
pub mod insert;
pub mod lines;
pub mod push;
pub mod retention;
mod rows;
mod scan;
pub mod schema;
mod seam;
mod selector;
pub mod sql;
pub mod stats;
pub mod stream_catalog;
pub mod tls;

pub use backend::ClickHouseBackend;
pub use buckets::MetricLegs;
pub use client::{Client, Config};
pub use cluster::Cluster;
pub use error::{Error, RETRYABLE_CODES};
pub use group_commit::{Backlog, BatchLimits, PushStats};
pub use housekeeping::Housekeeping;
pub use lines::LinesPaging;
pub use push::PushRetry;
pub use retention::RetentionReport;
pub use stats::{HousekeepingStats, SqlStats};
