//! Query plans: LogQL cut into the pieces a backend executes
//! ([`runakefli_model::plan`]).
//!
//! A log query whose pipeline is only line filters becomes a lines plan; a
//! range aggregation over `{…} [line filters] [| json [params] [| label
//! filters]] [| unwrap …]` with a `by` grouping (its own, or a `sum by`
//! around `count_over_time`/`rate`/`bytes_*` pushed into it), or without
//! grouping when it reads no fields, becomes a bucket plan. The engine
//! supplies the compiled stages (line tests, label filter tests, unwrap
//! conversions), so a backend that calls them follows the engine's
//! semantics exactly; the engine runs the whole pipeline on the residual
//! rows a backend hands back, and the plain path (scan every row, run every
//! stage) stays the reference for everything else.

mod build;
pub mod log;
pub(crate) mod metric;

pub use build::{line_filter, pipeline_pieces, PipelinePieces};
