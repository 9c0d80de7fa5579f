//! The LogQL evaluator of Rúnakefli.
//!
//! [`Engine`] runs parsed LogQL ([`runakefli_logql::Expr`]) against any
//! [`runakefli_model::Backend`]: log queries (selection, pipeline, limit,
//! direction) and metric queries (range and vector aggregations, binary
//! operations, `label_replace`, literals). [`json`] writes Loki's HTTP
//! response bodies. [`mem_backend::MemBackend`] keeps streams in memory (the
//! reference backend of the equivalence tests, and what a live tail runs its
//! query over for entries pushed behind it); `testing` (with the `testing`
//! feature, for tests only) loads Loki JSON push bodies into it.
//!
//! ```
//! use runakefli_engine::{json, testing::MemBackend, Engine, QueryLimits, RangeRequest};
//! use runakefli_model::{Direction, TenantId};
//! use std::sync::Arc;
//!
//! let backend = Arc::new(MemBackend::new());
//! let tenant = TenantId::default_tenant();
//! let push = br#"{"streams":[{"stream":{"app":"api"},"values":[["1000000000","level=error msg=boom"]]}]}"#;
//! backend.push(&tenant, &MemBackend::parse_push_json(push).unwrap());
//! let engine = Engine::new(backend, QueryLimits::default());
//!
//! let expr = runakefli_logql::parse_expr(r#"{app="api"} | logfmt | level="error""#).unwrap();
//! let range = RangeRequest { start: 0, end: 2_000_000_000, step: 0, limit: 100, direction: Direction::Backward };
//! let resp = engine.query_range(&tenant, &expr, range).unwrap();
//! let mut body = Vec::new();
//! json::write_query_response(&resp, &mut body);
//! assert!(body.starts_with(br#"{"status":"success","data":{"resultType":"streams""#));
//! ```
#![deny(missing_docs)]

pub mod columnar;
pub mod drilldown;
pub mod engine;
pub mod error;
pub mod fast_hash;
pub mod json;
pub mod labelset;
pub mod limits;
pub mod log_query;
pub mod mem_backend;
pub mod metadata;
pub mod metric;
pub mod options;
pub mod parallel;
pub mod pipeline;
pub mod pushdown;
pub mod result;
pub(crate) mod sampling;
pub mod scope;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use engine::{Engine, RangeRequest, VolumeRequest};
pub use error::EngineError;
pub use labelset::LabelSet;
pub use limits::QueryLimits;
pub use options::{EngineOptions, FastPaths};
pub use result::{QueryResponse, QueryResult, QueryStats, Sample, Series, StreamResult};
