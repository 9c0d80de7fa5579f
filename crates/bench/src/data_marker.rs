//! A marker file that says "this data directory holds a completed push of the
//! workload with these parameters", so that `bench query --data-dir DIR` can query
//! data pushed by an earlier run instead of pushing it again (10M lines take minutes).
//!
//! The marker is written only after a push that was fully accepted, flushed and whose
//! merges settled. It lives at the top of the data directory, beside the server's own
//! `tenants` and `wal` directories, which the server ignores.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::generator::Shape;

/// File name of the marker inside the data directory.
pub const MARKER_FILE: &str = "runakefli-bench-push.json";

/// The parameters of a completed push.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataMarker {
    /// Lines pushed.
    pub lines: u64,
    /// Streams (pods).
    pub streams: usize,
    /// Generator seed.
    pub seed: u64,
    /// Covered span, seconds.
    pub span_secs: u64,
    /// End of the covered span, nanoseconds since the epoch (the queries end there).
    pub end_ns: i64,
    /// Workload shape (markers written before shapes existed read as the reference).
    #[serde(default)]
    pub shape: Shape,
}

impl DataMarker {
    /// True when the marker describes a push of the same generated lines; `end_ns`
    /// must agree too when the caller names one.
    pub fn matches(&self, wanted: &DataMarker, end_ns_given: bool) -> bool {
        self.lines == wanted.lines
            && self.streams == wanted.streams
            && self.seed == wanted.seed
            && self.span_secs == wanted.span_secs
            && self.shape == wanted.shape
            && (!end_ns_given || self.end_ns == wanted.end_ns)
    }
}

/// What a data directory holds, for a wanted push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataDirState {
    /// Missing or empty: push into it.
    Empty,
    /// Holds the wanted push: query it as it is.
    Reusable(DataMarker),
}

/// Path of the marker in `dir`.
pub fn marker_path(dir: &Path) -> PathBuf {
    dir.join(MARKER_FILE)
}

/// Reads the marker of `dir`, if there is one.
pub fn read_marker(dir: &Path) -> io::Result<Option<DataMarker>> {
    match std::fs::read(marker_path(dir)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the marker of `dir` (to a temporary file first, then renamed).
pub fn write_marker(dir: &Path, marker: &DataMarker) -> io::Result<()> {
    let tmp = dir.join(format!("{MARKER_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec_pretty(marker)?)?;
    std::fs::rename(&tmp, marker_path(dir))
}

/// Decides what to do with `dir` for a push of `wanted`: push into an empty (or
/// missing) directory, reuse one whose marker matches, and refuse anything else,
/// since pushing on top of other data would change every answer.
pub fn inspect(
    dir: &Path,
    wanted: &DataMarker,
    end_ns_given: bool,
) -> anyhow::Result<DataDirState> {
    let empty = match std::fs::read_dir(dir) {
        Ok(mut rd) => rd.next().is_none(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        Err(e) => return Err(anyhow::Error::new(e).context(format!("reading {}", dir.display()))),
    };
    if empty {
        return Ok(DataDirState::Empty);
    }
    match read_marker(dir)? {
        Some(m) if m.matches(wanted, end_ns_given) => Ok(DataDirState::Reusable(m)),
        Some(m) => anyhow::bail!(
            "{} holds a push of {} lines, {} streams, seed {}, shape {}, {} s span ending at {} \
             ns, not the one asked for; use another --data-dir or remove it",
            dir.display(),
            m.lines,
            m.streams,
            m.seed,
            m.shape.name(),
            m.span_secs,
            m.end_ns
        ),
        None => anyhow::bail!(
            "{} is not empty but has no {MARKER_FILE} (an unfinished or foreign push); use \
             another --data-dir or remove it",
            dir.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker() -> DataMarker {
        DataMarker {
            lines: 2_000_000,
            streams: 5_000,
            seed: 1,
            span_secs: 3_600,
            end_ns: 1_790_812_800_000_000_000,
            shape: Shape::Reference,
        }
    }

    #[test]
    fn empty_missing_reusable_and_foreign_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(
            inspect(&d.join("nope"), &marker(), false).unwrap(),
            DataDirState::Empty
        );
        assert_eq!(inspect(d, &marker(), false).unwrap(), DataDirState::Empty);
        std::fs::create_dir(d.join("wal")).unwrap();
        assert!(inspect(d, &marker(), false).is_err(), "data without marker");
        write_marker(d, &marker()).unwrap();
        let later = DataMarker {
            end_ns: marker().end_ns + 1,
            ..marker()
        };
        // Without --end-ns the stored end is used; with a different one it is refused.
        assert_eq!(
            inspect(d, &later, false).unwrap(),
            DataDirState::Reusable(marker())
        );
        assert!(inspect(d, &later, true).is_err());
        let other = DataMarker {
            seed: 2,
            ..marker()
        };
        let err = inspect(d, &other, false).unwrap_err().to_string();
        assert!(err.contains("seed 1"), "{err}");
        assert_eq!(read_marker(d).unwrap(), Some(marker()));
        let varied = DataMarker {
            shape: Shape::Varied,
            ..marker()
        };
        let err = inspect(d, &varied, false).unwrap_err().to_string();
        assert!(err.contains("shape reference"), "{err}");
    }

    #[test]
    fn old_markers_read_as_the_reference_shape() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"lines":2000000,"streams":5000,"seed":1,"span_secs":3600,"end_ns":1790812800000000000}"#;
        std::fs::write(marker_path(dir.path()), old).unwrap();
        assert_eq!(read_marker(dir.path()).unwrap(), Some(marker()));
        let varied = DataMarker {
            shape: Shape::Varied,
            ..marker()
        };
        write_marker(dir.path(), &varied).unwrap();
        let text = std::fs::read_to_string(marker_path(dir.path())).unwrap();
        assert!(text.contains("\"shape\": \"varied\""), "{text}");
        assert_eq!(
            inspect(dir.path(), &varied, true).unwrap(),
            DataDirState::Reusable(varied)
        );
    }
}
