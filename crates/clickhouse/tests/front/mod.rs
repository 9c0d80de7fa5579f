//! The ClickHouse engine for tests: chdb-core behind `tests/chdb_http.py`,
//! started on loopback ports by each test process ([`FRONTS`] of them, a
//! database on one of them: [`url`]), or, for tests
//! that kill and restart ClickHouse, one of a test's own on a data path it
//! keeps ([`OwnFront`]).
//!
//! The Python comes from `.venv-chdb` (`.ci/setup-clients.sh chdb` makes it;
//! `RUNAKEFLI_CHDB_PYTHON` overrides). When it is missing the harness runs
//! that setup once; when that fails every test fails saying what to install.

use runakefli_clickhouse::{Client, Config};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
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

/// Makes `.venv-chdb` when chdb cannot be imported (once per process).
fn ensure_chdb() -> Result<(), String> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    READY.get_or_init(setup_chdb).clone()
}

fn setup_chdb() -> Result<(), String> {
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
    Ok(())
}

/// Starts `chdb_http.py` on `path` and `port` (0: any); the process and its port.
fn spawn(path: &Path, port: u16) -> Result<(Child, u16), String> {
    spawn_with(path, port, &[])
}

fn spawn_with(path: &Path, port: u16, extra: &[&str]) -> Result<(Child, u16), String> {
    ensure_chdb()?;
    let mut child = Command::new(python())
        .arg(workspace_root().join("crates/clickhouse/tests/chdb_http.py"))
        .arg("--path")
        .arg(path)
        .arg("--port")
        .arg(port.to_string())
        .args(extra)
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
    match line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse::<u16>().ok())
    {
        Some(port) => Ok((child, port)),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("the chdb front said {line:?}"))
        }
    }
}

fn start() -> Result<Front, String> {
    start_with(&[])
}

fn start_with(extra: &[&str]) -> Result<Front, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (child, port) = spawn_with(&dir.path().join("chdb"), 0, extra)?;
    Ok(Front {
        _child: child,
        _dir: dir,
        url: format!("http://127.0.0.1:{port}"),
    })
}

/// A front of a test's own on a data path the test keeps, to kill (as a
/// ClickHouse that crashes) and start again on the same data and port.
/// Dropping it kills the process.
#[allow(dead_code)] // used by the cli crate's kill tests, which include this module
pub struct OwnFront {
    child: Option<Child>,
    path: PathBuf,
    port: u16,
}

#[allow(dead_code)]
impl OwnFront {
    /// Starts a front on `path` (created by chdb when missing); panics
    /// (failing the test) naming what to install when chdb is missing.
    pub fn start(path: &Path) -> OwnFront {
        match spawn(path, 0) {
            Ok((child, port)) => OwnFront {
                child: Some(child),
                path: path.to_path_buf(),
                port,
            },
            Err(e) => panic!("{INSTALL}\n({e})"),
        }
    }

    /// `http://127.0.0.1:PORT`; the same after [`OwnFront::start_again`].
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILLs the front mid-whatever (no shutdown of chdb) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the front again on the same data path and port, after
    /// [`OwnFront::kill`]. Retries binding for a few seconds.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the front is still running");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            match spawn(&self.path, self.port) {
                Ok((child, port)) => {
                    assert_eq!(port, self.port);
                    self.child = Some(child);
                    return;
                }
                Err(e) if std::time::Instant::now() >= deadline => {
                    panic!("restarting the chdb front on port {}: {e}", self.port)
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
            }
        }
    }
}

impl Drop for OwnFront {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How many fronts a test process runs: each front answers one query at a
/// time (one chdb session), so tests running side by side share the cores
/// only if their databases live on different fronts.
const FRONTS: usize = 2;

static FRONT: [OnceLock<Result<Front, String>>; FRONTS] = [const { OnceLock::new() }; FRONTS];
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// The base URL of the front that holds `database` (the same front for the
/// same name, every time); panics (failing the test) naming what to install.
pub fn url(database: &str) -> String {
    let i = database.bytes().fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    }) % FRONTS;
    match FRONT[i].get_or_init(start) {
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
        &url(database),
        "--clickhouse-database",
        database,
    ]
    .map(str::to_string)
    .to_vec()
}

/// A client of a fresh database of its own (named after `test`).
pub fn client(test: &str) -> Client {
    let n = NEXT_DB.fetch_add(1, Ordering::Relaxed);
    let database = format!("t_{test}_{n}");
    Client::new(Config::new(url(&database), database))
}

/// The one-node cluster of [`cluster_client`]'s front.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub const TEST_CLUSTER: &str = "runakefli_test";

static CLUSTER_FRONT: OnceLock<Result<Front, String>> = OnceLock::new();

/// A client of a fresh database on a front of its own (started once per
/// test process) whose chdb knows [`TEST_CLUSTER`]: one shard, this process
/// itself, so `Distributed` tables over it work; the client's
/// [`runakefli_clickhouse::Cluster`] has `on_cluster` off (no Keeper).
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn cluster_client(test: &str) -> Client {
    let url = match CLUSTER_FRONT.get_or_init(|| start_with(&["--cluster", TEST_CLUSTER])) {
        Ok(f) => f.url.clone(),
        Err(e) => panic!("{INSTALL}\n({e})"),
    };
    let n = NEXT_DB.fetch_add(1, Ordering::Relaxed);
    let mut config = Config::new(url, format!("t_{test}_{n}"));
    config.cluster = Some(runakefli_clickhouse::Cluster {
        on_cluster: false,
        ..runakefli_clickhouse::Cluster::new(TEST_CLUSTER)
    });
    Client::new(config)
}

/// The text of `column` in each row `sql` selects (a column of strings).
#[allow(dead_code)] // not every test binary that includes this module reads one
pub fn strings(c: &Client, sql: &str, column: &str) -> Vec<String> {
    c.rows(sql, &runakefli_clickhouse::client::Request::default())
        .unwrap()
        .iter()
        .map(|r| r[column].as_str().unwrap().to_string())
        .collect()
}
