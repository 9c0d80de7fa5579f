//! The ClickHouse engine the side-by-side benchmark starts for itself: chdb
//! (ClickHouse in-process, from Python) behind the small HTTP front the
//! ClickHouse tests use (`crates/clickhouse/tests/chdb_http.py`, built into
//! this crate). It is not a `clickhouse-server`: one Python process runs one
//! query at a time, and every answer crosses the Python HTTP front.
//!
//! The Python is `RUNAKEFLI_CHDB_PYTHON` when set, else `.venv-chdb/bin/python`
//! of the working directory or one of its parents, else of the workspace this
//! binary was built from; `.ci/setup-clients.sh chdb` makes that virtualenv.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The front's script (the same file the ClickHouse tests run).
const SCRIPT: &str = include_str!("../../clickhouse/tests/chdb_http.py");

/// What to do when chdb is missing.
pub const SETUP_HINT: &str = "the ClickHouse side of the bench runs chdb-core 26.9: run \
    `.ci/setup-clients.sh chdb` (python3 with its venv module and access to PyPI; it \
    installs chdb-core into .venv-chdb), or point RUNAKEFLI_CHDB_PYTHON at a python \
    that can `import chdb`";

/// Why the front could not be started.
#[derive(Debug, thiserror::Error)]
pub enum FrontError {
    /// No Python that can `import chdb`.
    #[error("{python} cannot import chdb ({detail}); {SETUP_HINT}")]
    Missing {
        /// The Python tried.
        python: String,
        /// What went wrong.
        detail: String,
    },
    /// The front did not start or did not say where it listens.
    #[error("the chdb front did not start: {0}")]
    Start(String),
}

/// The Python that runs the front (see the module documentation).
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("RUNAKEFLI_CHDB_PYTHON") {
        return PathBuf::from(p);
    }
    let venv_python = |root: &Path| root.join(".venv-chdb/bin/python");
    if let Ok(cwd) = std::env::current_dir() {
        if let Some(found) = cwd.ancestors().map(venv_python).find(|p| p.exists()) {
            return found;
        }
    }
    venv_python(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// `chdb.__version__` of `python`, if it imports chdb.
pub fn chdb_version(python: &Path) -> Option<String> {
    let out = Command::new(python)
        .args(["-c", "import chdb; print(chdb.__version__)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A running front; killed (and its data removed) on drop.
pub struct ChdbFront {
    child: Child,
    dir: PathBuf,
    url: String,
}

impl ChdbFront {
    /// Checks that `python` imports chdb, then starts the front on a free
    /// loopback port with its data in a fresh directory under `parent`.
    pub fn start(python: &Path, parent: &Path) -> Result<ChdbFront, FrontError> {
        let missing = |detail: String| FrontError::Missing {
            python: python.display().to_string(),
            detail,
        };
        let check = Command::new(python)
            .args(["-c", "import chdb"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| missing(e.to_string()))?;
        if !check.status.success() {
            let err = String::from_utf8_lossy(&check.stderr);
            let last = err.lines().last().unwrap_or("import failed").to_string();
            return Err(missing(last));
        }
        let dir = parent.join(format!("runakefli-chdb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| FrontError::Start(e.to_string()))?;
        let script = dir.join("chdb_http.py");
        std::fs::write(&script, SCRIPT).map_err(|e| FrontError::Start(e.to_string()))?;
        let child = Command::new(python)
            .arg(&script)
            .arg("--path")
            .arg(dir.join("data"))
            // The front exits when its standard input closes: held by `child`.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| FrontError::Start(format!("{}: {e}", python.display())))?;
        let mut front = ChdbFront {
            child,
            dir,
            url: String::new(),
        };
        let mut line = String::new();
        let stdout = front.child.stdout.take();
        if let Some(out) = stdout {
            BufReader::new(out)
                .read_line(&mut line)
                .map_err(|e| FrontError::Start(e.to_string()))?;
        }
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse::<u16>().ok())
            .ok_or_else(|| FrontError::Start(format!("it said {line:?}")))?;
        front.url = format!("http://127.0.0.1:{port}");
        Ok(front)
    }

    /// The front's base URL (ClickHouse's HTTP interface).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// PID of the Python process running chdb.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ChdbFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_without_chdb_names_the_setup_script() {
        let dir = tempfile::tempdir().unwrap();
        let err = ChdbFront::start(Path::new("/nonexistent/python"), dir.path())
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(matches!(err, FrontError::Missing { .. }), "{text}");
        assert!(text.contains(".ci/setup-clients.sh chdb"), "{text}");
        assert!(text.contains("/nonexistent/python"), "{text}");
    }

    #[test]
    fn the_script_is_the_tests_front() {
        assert!(SCRIPT.contains("listening"));
        assert!(SCRIPT.contains("from chdb import session"));
    }
}
