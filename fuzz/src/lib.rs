//! Helpers shared by the fuzz targets.

use runakefli_ingest::PushLimits;
use std::path::PathBuf;

/// Push limits small enough that no input can make a target allocate much.
pub fn limits() -> PushLimits {
    PushLimits {
        max_body_bytes: 1 << 20,
        max_entries_per_request: 10_000,
        max_expanded_bytes_per_request: 4 << 20,
        ..PushLimits::default()
    }
}

/// An empty directory of this process for `target` (removed and recreated).
pub fn scratch_dir(target: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("runakefli-fuzz-{target}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
