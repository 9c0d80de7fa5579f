//! The ClickHouse engine for tests: chdb-core behind `tests/chdb_http.py`,
//! started once per test process on a loopback port.
//!
//! The Python comes from `.venv-chdb` (`.ci/setup-clients.sh chdb` makes it;
//! `RUNAKEFLI_CHDB_PYTHON` overrides). When it is missing the harness runs
//! that setup once; when that fails every test fails saying what to install.

use runakefli_clickhouse::{Client, Config};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    match std::env::var_os("RUNAKEFLI_CHDB_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join(".venv-chdb/bin/python"),
    }
}

fn chdb_ready() -> bool {
    Command::new(python())
        .args(["-c", "import chdb"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

const INSTALL: &str = "chdb-core 26.9 is needed for the ClickHouse tests: run \
    `.ci/setup-clients.sh chdb` (python3 with its venv module and access to PyPI; it \
    installs chdb-core==26.9.0 into .venv-chdb), or point RUNAKEFLI_CHDB_PYTHON at a \
    python that can `import chdb`";

/// The running front (its process lives as long as the test process: the
/// front exits when its standard input, held here, closes).
pub struct Front {
    _child: Child,
    _dir: tempfile::TempDir,
    url: String,
}

fn start() -> Result<Front, String> {
    if !chdb_ready() && std::env::var_os("RUNAKEFLI_CHDB_PYTHON").is_none() {
        let out = Command::new("bash")
            .arg(workspace_root().join(".ci/setup-clients.sh"))
            .arg("chdb")
            .output()
            .map_err(|e| format!("running .ci/setup-clients.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "setup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    if !chdb_ready() {
        return Err(format!("{} cannot import chdb", python().display()));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut child = Command::new(python())
        .arg(workspace_root().join("crates/clickhouse/tests/chdb_http.py"))
        .arg("--path")
        .arg(dir.path().join("chdb"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the chdb front: {e}"))?;
    let mut line = String::new();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let port = line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse::<u16>().ok())
        .ok_or_else(|| format!("the chdb front said {line:?}"))?;
    Ok(Front {
        _child: child,
        _dir: dir,
        url: format!("http://127.0.0.1:{port}"),
    })
}

static FRONT: OnceLock<Result<Front, String>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// The front's base URL; panics (failing the test) naming what to install.
pub fn url() -> String {
    match FRONT.get_or_init(start) {
        Ok(f) => f.url.clone(),
        Err(e) => panic!("{INSTALL}\n({e})"),
    }
}

/// The `runakefli serve` flags that put a server on the front, in database
/// `database`.
#[allow(dead_code)] // used by the cli crate's tests, which include this module
pub fn serve_args(database: &str) -> Vec<String> {
    [
        "--backend",
        "clickhouse",
        "--clickhouse-url",
        &url(),
        "--clickhouse-database",
        database,
    ]
    .map(str::to_string)
    .to_vec()
}

/// A client of a fresh database of its own (named after `test`).
pub fn client(test: &str) -> Client {
    let n = NEXT_DB.fetch_add(1, Ordering::Relaxed);
    Client::new(Config::new(url(), format!("t_{test}_{n}")))
}
