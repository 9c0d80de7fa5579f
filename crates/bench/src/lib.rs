//! Benchmark tooling for Rúnakefli: the deterministic reference-workload generator
//! (with its information floor), the Loki push encoder, and the ingest and query
//! benchmark drivers that exercise a running server over HTTP.
#![deny(missing_docs)]

pub mod dist;
pub mod generator;
pub mod rng;
pub mod text;
pub mod vocab;

pub use generator::{
    generate, GeneratedLine, Generator, GeneratorConfig, GeneratorError, GeneratorStats,
    OutputFormat,
};
