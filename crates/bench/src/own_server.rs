//! A server the benchmark starts itself (this binary's `serve`) on a free loopback
//! port, and can restart for cold query runs. Killed on drop; a temporary data
//! directory is removed then too.

use std::path::{Path, PathBuf};
use std::process::Child;

use anyhow::Context;

use crate::http::spawn_server;
use crate::procstat;

/// A server process the query benchmark may restart.
pub trait ServerProcess {
    /// Base URL of the running server.
    fn url(&self) -> &str;
    /// PID of the running server.
    fn pid(&self) -> u32;
    /// Stops the server and starts it again on the same data; `between` runs while
    /// no server is running (e.g. to drop the page cache). The URL may change.
    fn restart(&mut self, between: &mut dyn FnMut()) -> anyhow::Result<()>;
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server started by the benchmark.
pub struct OwnServer {
    exe: PathBuf,
    data_dir: PathBuf,
    extra_args: Vec<String>,
    child: Child,
    url: String,
    _tmp: Option<TempDir>,
}

fn free_listen_addr() -> anyhow::Result<String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(format!("127.0.0.1:{port}"))
}

impl OwnServer {
    /// Starts `exe serve` with `extra_args` on a free port, with its data in
    /// `data_dir` (kept) or, without one, in a fresh temporary directory (removed on drop).
    pub fn start(
        exe: PathBuf,
        data_dir: Option<PathBuf>,
        extra_args: Vec<String>,
    ) -> anyhow::Result<OwnServer> {
        let listen = free_listen_addr()?;
        let (data_dir, tmp) = match data_dir {
            Some(d) => (d, None),
            None => {
                let d = std::env::temp_dir().join(format!(
                    "runakefli-bench-{}-{}",
                    std::process::id(),
                    listen.rsplit(':').next().unwrap_or("0")
                ));
                (d.clone(), Some(TempDir(d)))
            }
        };
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        eprintln!(
            "starting {} serve on {listen}, data in {}",
            exe.display(),
            data_dir.display()
        );
        let child = spawn_server(&exe, &data_dir, &listen, &extra_args)?;
        Ok(OwnServer {
            exe,
            data_dir,
            extra_args,
            child,
            url: format!("http://{listen}"),
            _tmp: tmp,
        })
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerProcess for OwnServer {
    fn url(&self) -> &str {
        &self.url
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server, runs `between`, then starts it on a new free port (a new
    /// port keeps pooled client connections to the old process out of the way).
    fn restart(&mut self, between: &mut dyn FnMut()) -> anyhow::Result<()> {
        self.stop();
        between();
        let listen = free_listen_addr()?;
        self.child = spawn_server(&self.exe, &self.data_dir, &listen, &self.extra_args)?;
        self.url = format!("http://{listen}");
        Ok(())
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Peak resident set size (`VmHWM`) of process `pid`, bytes, if readable.
pub fn peak_rss(pid: u32) -> Option<u64> {
    procstat::sample(pid).ok().and_then(|s| s.peak_rss_bytes)
}

/// Writes dirty pages out and asks the kernel to drop the page cache
/// (`sync; echo 3 > /proc/sys/vm/drop_caches`). Needs root and a writable `/proc/sys`.
pub fn drop_page_cache() -> Result<(), String> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3")
        .map_err(|e| format!("writing /proc/sys/vm/drop_caches: {e}"))
}
