//! The LogQL evaluator of Rúnakefli.
//!
//! [`Engine`] runs parsed LogQL ([`runakefli_logql::Expr`]) against any
//! [`runakefli_model::Backend`]: log queries (selection, pipeline, limit,
//! direction) and, as they land, metric queries. [`json`] writes Loki's exact
//! HTTP response bodies. [`testing`] holds an in-memory backend for tests.
#![deny(missing_docs)]

pub mod engine;
pub mod error;
pub mod json;
pub mod labelset;
pub mod limits;
pub mod log_query;
pub mod metadata;
pub mod metric;
pub mod pipeline;
pub mod result;
pub mod testing;

pub use engine::Engine;
pub use error::EngineError;
pub use labelset::LabelSet;
pub use limits::QueryLimits;
pub use result::{QueryResponse, QueryResult, QueryStats, Sample, Series, StreamResult};
