//! Blocking HTTP helpers for the drivers (ureq), and starting a server child process.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// The outcome of one request: the status and the body text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// The body (decoded as UTF-8, lossy).
    pub body: String,
}

impl Reply {
    /// True for 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// An agent with keep-alive and a generous timeout.
pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new().timeout(timeout).build()
}

fn finish(result: Result<ureq::Response, ureq::Error>) -> anyhow::Result<Reply> {
    match result {
        Ok(resp) => {
            let status = resp.status();
            let body = resp.into_string().unwrap_or_default();
            Ok(Reply { status, body })
        }
        Err(ureq::Error::Status(status, resp)) => {
            let body = resp.into_string().unwrap_or_default();
            Ok(Reply { status, body })
        }
        Err(e) => Err(anyhow::Error::new(e)),
    }
}

/// `POST url` with `body` and headers; any status is a [`Reply`], only transport
/// failures are errors.
pub fn post(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> anyhow::Result<Reply> {
    let mut req = agent.post(url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    finish(req.send_bytes(body))
}

/// `GET url` with query parameters and headers.
pub fn get(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, &str)],
    query: &[(&str, &str)],
) -> anyhow::Result<Reply> {
    let mut req = agent.get(url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    for (k, v) in query {
        req = req.query(k, v);
    }
    finish(req.call())
}

/// Polls `GET base/ready` until it answers 200 or `timeout` passes.
pub fn wait_ready(
    base_url: &str,
    timeout: Duration,
    mut alive: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let agent = agent(Duration::from_secs(2));
    let url = format!("{}/ready", base_url.trim_end_matches('/'));
    let start = Instant::now();
    loop {
        alive()?;
        if let Ok(r) = get(&agent, &url, &[], &[]) {
            if r.status == 200 {
                return Ok(());
            }
        }
        if start.elapsed() > timeout {
            bail!("server at {base_url} not ready after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `exe serve --listen LISTEN --data-dir DIR EXTRA...` (its stdout sent to our
/// stderr) and waits (up to 60 s) until `GET /ready` answers 200. The child is killed
/// if it does not become ready.
pub fn spawn_server(
    exe: &Path,
    data_dir: &Path,
    listen: &str,
    extra_args: &[String],
) -> anyhow::Result<Child> {
    let mut child = Command::new(exe)
        .arg("serve")
        .arg("--listen")
        .arg(listen)
        .arg("--data-dir")
        .arg(data_dir)
        .args(extra_args)
        .stdin(Stdio::null())
        // The server logs to stdout; keep that off the report the benchmark prints there.
        .stdout(Stdio::from(std::io::stderr()))
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let base = format!("http://{listen}");
    let ready = wait_ready(&base, Duration::from_secs(60), || match child.try_wait() {
        Ok(Some(status)) => bail!("server exited before becoming ready: {status}"),
        Ok(None) => Ok(()),
        Err(e) => Err(e.into()),
    });
    if let Err(e) = ready {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Ok(child)
}

/// A reply body, trimmed and cut to at most 200 bytes (ending in `…` when
/// cut), for reports.
pub fn short_message(body: &str) -> String {
    let mut message = body.trim().to_string();
    if message.len() > 200 {
        let mut cut = 200;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

#[cfg(test)]
pub(crate) mod testserver {
    //! A tiny HTTP/1.1 server for driver tests: answers every request with a fixed
    //! status and body and records request lines and body sizes.

    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    /// Requests seen: (request line, body length).
    pub type Seen = Arc<Mutex<Vec<(String, usize)>>>;

    /// Starts the server; `respond(request_line) -> (status, body)`.
    pub fn start(respond: fn(&str) -> (u16, String)) -> (String, Seen) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let seen: Seen = Arc::default();
        let seen2 = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let seen = seen2.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut writer = conn;
                    loop {
                        let mut request_line = String::new();
                        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                            return;
                        }
                        let mut len = 0usize;
                        loop {
                            let mut h = String::new();
                            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                                return;
                            }
                            let h = h.trim_end();
                            if h.is_empty() {
                                break;
                            }
                            if let Some((k, v)) = h.split_once(':') {
                                if k.eq_ignore_ascii_case("content-length") {
                                    len = v.trim().parse().unwrap_or(0);
                                }
                            }
                        }
                        let mut body = vec![0u8; len];
                        if reader.read_exact(&mut body).is_err() {
                            return;
                        }
                        let line = request_line.trim_end().to_string();
                        let (status, text) = respond(&line);
                        seen.lock().unwrap().push((line, len));
                        let resp = format!(
                            "HTTP/1.1 {status} X\r\ncontent-length: {}\r\ncontent-type: application/json\r\n\r\n{text}",
                            text.len()
                        );
                        if writer.write_all(resp.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, seen)
    }
}
