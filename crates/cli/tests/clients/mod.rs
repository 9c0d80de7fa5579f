//! The real ingestion clients the protocol tests drive, set up on first use.
//!
//! The Python clients live in the project virtualenv `.venv-clients`, made by
//! `.ci/setup-clients.sh python` (python3 -m venv, then pip install of the pins
//! in `.ci/clients-requirements.txt`). The script leaves a copy of that file in
//! the virtualenv as a stamp; while the stamp matches, nothing is run. `logger`
//! comes from `.ci/setup-clients.sh logger` (apt-get, when usable) if it is not
//! on `PATH`.
//!
//! Test threads and test processes may start at the same time: each setup runs
//! under an exclusive `flock` on `.venv-clients.lock` and checks again once it
//! holds the lock. A process tries each setup once; when it fails, every test
//! that needs it fails with a message saying what to run.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Overrides the Python interpreter (no setup is done then).
const PYTHON_ENV: &str = "RUNAKEFLI_TEST_PYTHON";

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

fn venv() -> PathBuf {
    workspace_root().join(".venv-clients")
}

fn venv_python() -> PathBuf {
    venv().join("bin/python")
}

/// The Python interpreter that has the clients: `RUNAKEFLI_TEST_PYTHON`, else
/// the project virtualenv, created or updated first when needed. Panics with
/// instructions when that fails.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| match std::env::var_os(PYTHON_ENV) {
            Some(p) => {
                let p = PathBuf::from(p);
                if p.exists() {
                    Ok(p)
                } else {
                    Err(format!("{PYTHON_ENV}={} does not exist", p.display()))
                }
            }
            None => ensure(python_ready, "python").map(|()| venv_python()),
        })
        .clone()
        .unwrap_or_else(|e| {
            panic!(
                "the Python test clients are not available: {e}\n\
                 They need python3 with its venv module and network access to PyPI. \
                 Fix that, then run:\n    cd {} && .ci/setup-clients.sh python\n\
                 (or set {PYTHON_ENV} to a python that has the packages of \
                 .ci/clients-requirements.txt)",
                workspace_root().display()
            )
        })
}

/// Makes sure util-linux `logger` is on `PATH`, installing it with apt-get
/// when missing and possible. Panics with instructions when it is not there.
pub fn ensure_logger() {
    static LOGGER: OnceLock<Result<(), String>> = OnceLock::new();
    LOGGER
        .get_or_init(|| ensure(logger_ready, "logger"))
        .clone()
        .unwrap_or_else(|e| {
            panic!(
                "util-linux `logger` is not available: {e}\n\
                 Install it (Debian/Ubuntu: sudo apt-get install bsdutils), or run as root:\n    \
                 cd {} && .ci/setup-clients.sh logger",
                workspace_root().display()
            )
        })
}

/// The virtualenv exists and its stamp matches the pinned requirements.
fn python_ready() -> bool {
    let pins = std::fs::read(workspace_root().join(".ci/clients-requirements.txt"));
    let stamp = std::fs::read(venv().join("installed-requirements.txt"));
    venv_python().exists() && matches!((pins, stamp), (Ok(a), Ok(b)) if a == b)
}

fn logger_ready() -> bool {
    Command::new("logger")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `.ci/setup-clients.sh <part>` under the setup lock unless `ready`
/// holds (before or after taking the lock), then checks `ready` again.
fn ensure(ready: fn() -> bool, part: &str) -> Result<(), String> {
    if ready() {
        return Ok(());
    }
    let _lock = SetupLock::acquire()?;
    if ready() {
        return Ok(());
    }
    eprintln!("setting up the test clients: .ci/setup-clients.sh {part}");
    run_setup(part)?;
    if ready() {
        Ok(())
    } else {
        Err(format!(
            ".ci/setup-clients.sh {part} succeeded but the clients are still not ready"
        ))
    }
}

fn run_setup(part: &str) -> Result<(), String> {
    let script = workspace_root().join(".ci/setup-clients.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(part)
        .env("RUNAKEFLI_CLIENTS_VENV", venv())
        .output()
        .map_err(|e| format!("cannot run bash {}: {e}", script.display()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        ".ci/setup-clients.sh {part} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// An exclusive lock on `.venv-clients.lock`, held until dropped (closing
/// the file releases it, also when the process dies).
struct SetupLock {
    _file: File,
}

impl SetupLock {
    fn acquire() -> Result<SetupLock, String> {
        let path = workspace_root().join(".venv-clients.lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        loop {
            // SAFETY: flock on a file descriptor we own and keep open.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(SetupLock { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("cannot lock {}: {err}", path.display()));
            }
        }
    }
}
