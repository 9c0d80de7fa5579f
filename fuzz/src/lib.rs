//! Helpers shared by the fuzz targets; the targets' bodies are in
//! [`targets`], shared with the stable smoke run of the main workspace.

pub mod targets;

pub use targets::{limits, scratch_dir};
