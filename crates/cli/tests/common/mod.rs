//! Test harness: starts the real `runakefli` binary on a loopback port with a
//! temporary data directory and talks HTTP to it.
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `serve` flags that keep streams exactly as pushed: Loki's ingestion-time
/// `service_name` and `detected_level` off (tests of round trips and exact
/// label sets; the defaults are tested in conformance_grafana.rs and tail.rs).
pub const AS_PUSHED: &[&str] = &[
    "--discover-service-name=false",
    "--discover-log-levels=false",
];

/// A running server process.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The data directory (kept across restarts).
    pub data_dir: PathBuf,
    child: Option<Child>,
    port: u16,
    extra: Vec<String>,
    /// Where the server's stdout (its log) is appended (`None`: dropped).
    log: Option<PathBuf>,
    _tmp: Option<tempfile::TempDir>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl TestServer {
    /// Starts a server on a fresh data directory.
    pub fn start() -> TestServer {
        Self::start_with(&[])
    }

    /// Starts a server with extra `serve` flags.
    pub fn start_with(extra: &[&str]) -> TestServer {
        Self::start_logging(extra, None)
    }

    /// Starts a server with extra `serve` flags, its stdout (the log)
    /// appended to `log` across restarts.
    pub fn start_logging(extra: &[&str], log: Option<&Path>) -> TestServer {
        let tmp = tempfile::tempdir().unwrap();
        let data_dir = tmp.path().join("data");
        let mut s = TestServer {
            base: String::new(),
            data_dir,
            child: None,
            port: 0,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            log: log.map(Path::to_path_buf),
            _tmp: Some(tmp),
        };
        s.spawn();
        s
    }

    /// Starts a server on a data directory the caller owns (kept after the test).
    pub fn start_on(data_dir: &Path, extra: &[&str]) -> TestServer {
        let mut s = TestServer {
            base: String::new(),
            data_dir: data_dir.to_path_buf(),
            child: None,
            port: 0,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            log: None,
            _tmp: None,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        self.port = free_port();
        self.base = format!("http://127.0.0.1:{}", self.port);
        let child = Command::new(env!("CARGO_BIN_EXE_runakefli"))
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(&self.extra)
            .env("RUNAKEFLI_LOG", "warn")
            .stdout(match &self.log {
                Some(path) => Stdio::from(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .expect("open the server's log"),
                ),
                None => Stdio::null(),
            })
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start runakefli");
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = ureq::get(&format!("{}/ready", self.base))
                .timeout(Duration::from_secs(2))
                .call()
            {
                if r.status() == 200 {
                    return;
                }
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("server exited early: {status}");
            }
            assert!(Instant::now() < deadline, "server did not become ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Adds `serve` flags for the next start.
    pub fn extra_args(&mut self, args: &[&str]) {
        self.extra.extend(args.iter().map(|s| s.to_string()));
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// SIGKILLs the server (no flush, no shutdown).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops with SIGTERM and waits.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same data directory.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Starts the server again after a kill, on the same data directory.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none());
        self.spawn();
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Pushes every `*.json` file of `dir` (Loki JSON push bodies), in name
    /// order, expecting 204 for each.
    pub fn push_json_files(&self, dir: &Path) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for f in &files {
            let body = std::fs::read(f).unwrap();
            let (status, text) = self.post("/loki/api/v1/push", "application/json", None, &body);
            assert_eq!(status, 204, "push {}: {text}", f.display());
        }
    }

    /// POSTs a body with a content type (and optional encoding); returns (status, text).
    pub fn post(
        &self,
        path: &str,
        content_type: &str,
        encoding: Option<&str>,
        body: &[u8],
    ) -> (u16, String) {
        self.post_with(path, content_type, encoding, &[], body)
    }

    /// POSTs with extra headers.
    pub fn post_with(
        &self,
        path: &str,
        content_type: &str,
        encoding: Option<&str>,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        let mut req =
            ureq::post(&format!("{}{}", self.base, path)).set("Content-Type", content_type);
        if let Some(e) = encoding {
            req = req.set("Content-Encoding", e);
        }
        for (k, v) in headers {
            req = req.set(k, v);
        }
        into_pair(req.send_bytes(body))
    }

    /// GETs `path` with query parameters; returns (status, text).
    pub fn get(&self, path: &str, params: &[(&str, &str)]) -> (u16, String) {
        self.get_with(path, params, &[])
    }

    /// GETs with extra headers.
    pub fn get_with(
        &self,
        path: &str,
        params: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut req = ureq::get(&format!("{}{}", self.base, path));
        for (k, v) in params {
            req = req.query(k, v);
        }
        for (k, v) in headers {
            req = req.set(k, v);
        }
        into_pair(req.call())
    }

    /// GETs and parses JSON, asserting status 200.
    pub fn get_json(&self, path: &str, params: &[(&str, &str)]) -> serde_json::Value {
        let (status, body) = self.get(path, params);
        assert_eq!(status, 200, "GET {path} {params:?}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The status and answer of a GET without its query statistics (timings
    /// differ between servers), which is what two backends must agree on; an
    /// error as its status and text.
    pub fn answer(&self, path: &str, params: &[(&str, &str)]) -> serde_json::Value {
        self.answer_with(path, params, &[])
    }

    /// [`TestServer::answer`] with extra headers (e.g. `X-Scope-OrgID`).
    pub fn answer_with(
        &self,
        path: &str,
        params: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> serde_json::Value {
        let (status, body) = self.get_with(path, params, headers);
        if status != 200 {
            return serde_json::json!({"status": status, "error": body});
        }
        let mut v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if let Some(o) = v.as_object_mut() {
            o.remove("stats");
        }
        if let Some(o) = v.get_mut("data").and_then(serde_json::Value::as_object_mut) {
            o.remove("stats");
        }
        v
    }

    /// POSTs a delete request (`/loki/api/v1/delete`) for `query` over
    /// `[start, end]` (ns); returns (status, text).
    pub fn delete_request(&self, query: &str, start: i64, end: i64) -> (u16, String) {
        let path = format!(
            "/loki/api/v1/delete?query={}&start={start}&end={end}",
            urlencode(query)
        );
        self.post(&path, "text/plain", None, b"")
    }

    /// Cancels delete request `id`; returns (status, text).
    pub fn cancel_delete(&self, id: &str) -> (u16, String) {
        into_pair(
            ureq::delete(&format!("{}/loki/api/v1/delete", self.base))
                .query("request_id", id)
                .call(),
        )
    }

    /// The delete requests `GET /loki/api/v1/delete` lists.
    pub fn delete_requests(&self) -> Vec<serde_json::Value> {
        self.get_json("/loki/api/v1/delete", &[])
            .as_array()
            .unwrap()
            .clone()
    }

    /// Pushes a Loki JSON body, asserting 204.
    pub fn push_json(&self, body: &serde_json::Value) {
        let (status, text) = self.post(
            "/loki/api/v1/push",
            "application/json",
            None,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 204, "push failed: {text}");
    }
}

/// `s` percent-encoded for a URL's query string.
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn into_pair(r: Result<ureq::Response, ureq::Error>) -> (u16, String) {
    match r {
        Ok(resp) => {
            let status = resp.status();
            let mut s = String::new();
            resp.into_reader().read_to_string(&mut s).unwrap();
            (status, s)
        }
        Err(ureq::Error::Status(code, resp)) => (code, resp.into_string().unwrap_or_default()),
        Err(e) => panic!("http error: {e}"),
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// One entry to push: (timestamp ns, line, structured metadata).
pub type TestEntry = (i64, String, Vec<(String, String)>);

/// Encodes a Loki protobuf push body, snappy-compressed.
pub fn proto_push_body(streams: &[(&str, Vec<TestEntry>)]) -> Vec<u8> {
    use prost::Message;
    use runakefli_ingest::loki::proto;
    let req = proto::PushRequest {
        streams: streams
            .iter()
            .map(|(labels, entries)| proto::StreamAdapter {
                labels: labels.to_string(),
                entries: entries
                    .iter()
                    .map(|(ts, line, md)| proto::EntryAdapter {
                        timestamp: Some(proto::Timestamp {
                            seconds: ts.div_euclid(1_000_000_000),
                            nanos: ts.rem_euclid(1_000_000_000) as i32,
                        }),
                        line: line.clone(),
                        structured_metadata: md
                            .iter()
                            .map(|(k, v)| proto::LabelPairAdapter {
                                name: k.clone(),
                                value: v.clone(),
                            })
                            .collect(),
                    })
                    .collect(),
                hash: 0,
            })
            .collect(),
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

/// The entries of a streams result as (labels JSON, [(ts, line)]), sorted by labels.
pub fn streams_of(v: &serde_json::Value) -> Vec<(String, Vec<(String, String)>)> {
    assert_eq!(v["status"], "success", "{v}");
    assert_eq!(v["data"]["resultType"], "streams", "{v}");
    let mut out: Vec<(String, Vec<(String, String)>)> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let values = s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e[0].as_str().unwrap().to_string(),
                        e[1].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            (s["stream"].to_string(), values)
        })
        .collect();
    out.sort();
    out
}
