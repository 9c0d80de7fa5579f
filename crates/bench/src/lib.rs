//! Benchmark tooling for Rúnakefli: the deterministic reference-workload generator
//! (with its information floor), the push encoders of every ingest protocol, and the ingest and query
//! benchmark drivers that exercise a running server over HTTP, among them the
//! side-by-side run of the embedded store and ClickHouse ([`side_by_side`]).
#![deny(missing_docs)]

pub mod chdb_front;
pub mod data_marker;
pub mod dist;
pub mod generator;
pub mod http;
pub mod ingest_bench;
pub mod machine;
pub mod needles;
pub mod needles_varied;
pub mod own_server;
pub mod procstat;
pub mod protocol;
pub mod push;
pub mod push_json;
pub mod push_otlp;
pub mod query_bench;
pub mod query_config;
pub mod query_report;
pub mod query_set;
pub mod rng;
pub mod ruler_bench;
pub mod side_by_side;
pub mod stats;
pub mod text;
pub mod victorialogs;
pub mod vocab;

pub use generator::{
    generate, GeneratedLine, Generator, GeneratorConfig, GeneratorError, GeneratorStats,
    OutputFormat, Shape,
};
pub use http::spawn_server;
pub use ingest_bench::{run_ingest_bench, IngestBenchConfig, IngestReport};
pub use machine::MachineInfo;
pub use own_server::{OwnServer, ServerProcess};
pub use protocol::Protocol;
pub use query_bench::{run_query_bench, QueryBenchConfig};
pub use query_report::QueryReport;
pub use query_set::QuerySet;
pub use ruler_bench::{run_ruler_bench, RulerBenchConfig, RulerReport};
pub use side_by_side::{run_side_by_side, SideBySideConfig, SideBySideReport};
