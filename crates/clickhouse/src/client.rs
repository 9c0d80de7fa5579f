//! ClickHouse's HTTP interface: the query in the POST body (or, for
//! inserts, in the `query` parameter with the rows in the body), the
//! database, output format and settings as URL parameters, credentials in
//! the `X-ClickHouse-User`/`X-ClickHouse-Key` headers. Any answer but 200,
//! or a 200 carrying `X-ClickHouse-Exception-Code`, is [`Error::Server`].

use crate::cluster::Cluster;
use crate::Error;
use std::io::Read;
use std::time::{Duration, Instant};

/// Where and how to reach ClickHouse. `Debug` leaves the password out.
#[derive(Clone)]
pub struct Config {
    /// Base URL, e.g. `http://127.0.0.1:8123`.
    pub url: String,
    /// The database holding Rúnakefli's tables.
    pub database: String,
    /// User name (`None`: ClickHouse's `default`).
    pub user: Option<String>,
    /// Password.
    pub password: Option<String>,
    /// Settings sent with every request (`name`, `value`).
    pub settings: Vec<(String, String)>,
    /// Time limit of one HTTP request.
    pub timeout: Duration,
    /// The cluster the tables are spread over (`None`: one server). Every
    /// request then carries [`Cluster::request_settings`].
    pub cluster: Option<Cluster>,
    /// TLS beyond the built-in roots (a private CA, a client certificate;
    /// [`crate::tls::client_config`]); `None`: the client's defaults.
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl Config {
    /// A configuration for `url` and `database` with no credentials or settings.
    pub fn new(url: impl Into<String>, database: impl Into<String>) -> Self {
        Config {
            url: url.into(),
            database: database.into(),
            user: None,
            password: None,
            settings: Vec::new(),
            timeout: Duration::from_secs(300),
            cluster: None,
            tls: None,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("url", &self.url)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<secret>"))
            .field("settings", &self.settings)
            .field("timeout", &self.timeout)
            .field("cluster", &self.cluster)
            .field("tls", &self.tls.as_ref().map(|_| "<custom>"))
            .finish()
    }
}

/// A client of one ClickHouse database (blocking; cheap to clone).
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    config: Config,
}

/// One request's options beyond the configuration.
#[derive(Clone, Debug, Default)]
pub struct Request<'a> {
    /// `default_format` (e.g. `JSONEachRow`); `None` leaves ClickHouse's.
    pub format: Option<&'a str>,
    /// Extra settings for this request.
    pub settings: Vec<(&'a str, String)>,
    /// Give up when this passes (sent as `max_execution_time`).
    pub deadline: Option<Instant>,
    /// Run outside the configured database (for `CREATE DATABASE`).
    pub no_database: bool,
    /// Add what ClickHouse reports having read for this request
    /// ([`ReadProgress`]) to this; [`Client::each_row`] then asks for
    /// `JSONEachRowWithProgress`.
    pub progress: Option<&'a ReadProgress>,
}

/// Rows and bytes ClickHouse read for one or more requests, as its
/// progress reports count them (`read_rows`, `read_bytes`: every table the
/// query reads, whole granules after index pruning, bytes uncompressed);
/// shared by requests running at once.
#[derive(Debug, Default)]
pub struct ReadProgress {
    rows: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

impl ReadProgress {
    /// Rows read so far.
    pub fn rows(&self) -> u64 {
        self.rows.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bytes read so far (uncompressed).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn add(&self, rows: u64, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.rows.fetch_add(rows, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }
}

/// What one answer line of `JSONEachRowWithProgress` is.
enum ProgressLine {
    /// A row (`{"row": {…}}`): the row.
    Row(serde_json::Value),
    /// `{"progress": {…}}`: the rows and bytes read so far (the format
    /// writes running totals).
    Progress(u64, u64),
    /// Anything else (`meta`, `totals`, `rows_before_limit_at_least`, …).
    Other,
}

impl ProgressLine {
    fn of(v: serde_json::Value) -> Self {
        let serde_json::Value::Object(mut o) = v else {
            return ProgressLine::Other;
        };
        if let Some(row) = o.remove("row") {
            return ProgressLine::Row(row);
        }
        match o.get("progress") {
            Some(p) => {
                let n = |k: &str| crate::rows::u64_of_value(&p[k]).unwrap_or(0);
                ProgressLine::Progress(n("read_rows"), n("read_bytes"))
            }
            None => ProgressLine::Other,
        }
    }
}

impl Client {
    /// A client for `config`.
    pub fn new(config: Config) -> Self {
        let mut agent = ureq::AgentBuilder::new().timeout(config.timeout);
        if let Some(tls) = &config.tls {
            agent = agent.tls_config(tls.clone());
        }
        let agent = agent.build();
        Client { agent, config }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs `sql` (query in the body) and returns the answer's body.
    pub fn query(&self, sql: &str, req: &Request<'_>) -> Result<String, Error> {
        let r = self.request(req, None)?;
        let resp = r.send_string(sql);
        read(resp)
    }

    /// Runs a statement that returns nothing (DDL).
    pub fn execute(&self, sql: &str) -> Result<(), Error> {
        self.query(sql, &Request::default()).map(|_| ())
    }

    /// Runs `sql` with `default_format=JSONEachRow` and parses each answer line.
    pub fn rows(&self, sql: &str, req: &Request<'_>) -> Result<Vec<serde_json::Value>, Error> {
        let mut out = Vec::new();
        self.each_row(sql, req, &mut |v| {
            out.push(v);
            Ok(true)
        })?;
        Ok(out)
    }

    /// Runs `sql` with `default_format=JSONEachRow` and hands each answer
    /// row to `row` as it arrives, so an answer of any size is never held
    /// whole. `row` returns `false` to stop: the rest of the answer is not
    /// read (the connection is dropped). An exception ClickHouse writes
    /// into an answer it has begun (its status already 200) is
    /// [`Error::Server`], whichever of its forms it takes (`Code: …` text,
    /// an `{"exception": …}` row, or the `__exception__` marker). With
    /// [`Request::progress`] the answer comes as `JSONEachRowWithProgress`:
    /// its rows are handed on the same, and the last running totals of
    /// rows and bytes read are added to the progress, also when reading
    /// stops early or fails.
    pub fn each_row(
        &self,
        sql: &str,
        req: &Request<'_>,
        row: &mut dyn FnMut(serde_json::Value) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let mut req = req.clone();
        let progress = req.progress;
        req.format = Some(match progress {
            Some(_) => "JSONEachRowWithProgress",
            None => "JSONEachRow",
        });
        let resp = match self.request(&req, None)?.send_string(sql) {
            Ok(resp) if header_code(&resp).is_none_or(|c| c == 0) => resp,
            other => return read(other).map(|_| ()),
        };
        // The highest running totals seen, added to `progress` however the
        // reading ends.
        let mut read_so_far = (0u64, 0u64);
        let out = Self::answer_rows(resp, progress.is_some(), &mut read_so_far, row);
        if let Some(p) = progress {
            p.add(read_so_far.0, read_so_far.1);
        }
        out
    }

    fn answer_rows(
        resp: ureq::Response,
        with_progress: bool,
        read_so_far: &mut (u64, u64),
        row: &mut dyn FnMut(serde_json::Value) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        use std::io::BufRead;
        let mut reader = std::io::BufReader::with_capacity(64 << 10, resp.into_reader());
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::Transport(format!("reading the answer: {e}")))?;
            if n == 0 {
                return Ok(());
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.is_empty() {
                continue;
            }
            let parsed = serde_json::from_slice::<serde_json::Value>(text);
            if let Ok(v) = &parsed {
                if let Some(m) = exception_row(v) {
                    return Err(Error::from_exception(200, None, m));
                }
            }
            match parsed {
                Ok(v) => {
                    let v = if with_progress {
                        match ProgressLine::of(v) {
                            ProgressLine::Row(v) => v,
                            ProgressLine::Progress(rows, bytes) => {
                                read_so_far.0 = read_so_far.0.max(rows);
                                read_so_far.1 = read_so_far.1.max(bytes);
                                continue;
                            }
                            ProgressLine::Other => continue,
                        }
                    } else {
                        v
                    };
                    if !row(v)? {
                        return Ok(());
                    }
                }
                Err(e) => {
                    let mut rest = text.to_vec();
                    // What follows belongs to the same message, if any.
                    let _ = reader.read_to_end(&mut rest);
                    let rest = String::from_utf8_lossy(&rest);
                    if rest.starts_with("Code: ")
                        || rest.starts_with("__exception__")
                        || rest.contains("DB::Exception")
                    {
                        let message = rest.trim_start_matches("__exception__").trim();
                        return Err(Error::from_exception(200, None, message));
                    }
                    let shown: String = rest.chars().take(200).collect();
                    return Err(Error::Decode(format!("{e} in {shown:?}")));
                }
            }
        }
    }

    /// Sends `insert` (`INSERT INTO t FORMAT F`) in the URL and `data` in the
    /// body; ClickHouse has written the rows when this returns `Ok`.
    pub fn insert(&self, insert: &str, data: &[u8], req: &Request<'_>) -> Result<(), Error> {
        let r = self.request(req, Some(insert))?;
        read(r.send_bytes(data)).map(|_| ())
    }

    fn request(&self, req: &Request<'_>, query: Option<&str>) -> Result<ureq::Request, Error> {
        let url = format!("{}/", self.config.url.trim_end_matches('/'));
        let mut r = self.agent.post(&url);
        if !req.no_database {
            r = r.query("database", &self.config.database);
        }
        if let Some(q) = query {
            r = r.query("query", q);
        }
        if let Some(f) = req.format {
            r = r.query("default_format", f);
        }
        if let Some(c) = &self.config.cluster {
            for (k, v) in c.request_settings() {
                r = r.query(k, v);
            }
        }
        for (k, v) in &self.config.settings {
            r = r.query(k, v);
        }
        for (k, v) in &req.settings {
            r = r.query(k, v);
        }
        if let Some(d) = req.deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Server {
                    status: 0,
                    code: Some(159),
                    message: "deadline passed before the request was sent".into(),
                });
            }
            let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
            r = r.query("max_execution_time", &secs.to_string());
        }
        if let Some(u) = &self.config.user {
            r = r.set("X-ClickHouse-User", u);
        }
        if let Some(p) = &self.config.password {
            r = r.set("X-ClickHouse-Key", p);
        }
        Ok(r)
    }
}

/// The message of a row that is ClickHouse's exception written in the
/// output format (`{"exception": "Code: …"}`), not an answer row.
fn exception_row(v: &serde_json::Value) -> Option<&str> {
    let o = v.as_object()?;
    if o.len() != 1 {
        return None;
    }
    o.get("exception")?.as_str()
}

fn header_code(resp: &ureq::Response) -> Option<u32> {
    resp.header("X-ClickHouse-Exception-Code")
        .and_then(|c| c.trim().parse().ok())
}

/// The whole body of an answer as text. Not `Response::into_string`, which
/// refuses bodies over 10 MiB: a scan or a series answer over many streams
/// is larger.
fn body_text(resp: ureq::Response) -> Result<String, Error> {
    let mut bytes = Vec::new();
    resp.into_reader()
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Transport(format!("reading the answer: {e}")))?;
    String::from_utf8(bytes).map_err(|e| Error::Decode(format!("answer is not UTF-8: {e}")))
}

fn read(resp: Result<ureq::Response, ureq::Error>) -> Result<String, Error> {
    match resp {
        Ok(resp) => {
            let code = header_code(&resp);
            let status = resp.status();
            let body = body_text(resp)?;
            match code {
                Some(c) if c != 0 => Err(Error::from_exception(status, Some(c), &body)),
                _ => Ok(body),
            }
        }
        Err(ureq::Error::Status(status, resp)) => {
            let code = header_code(&resp);
            let body = resp.into_string().unwrap_or_default();
            Err(Error::from_exception(status, code, &body))
        }
        Err(ureq::Error::Transport(t)) => Err(Error::Transport(t.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_password() {
        let mut c = Config::new("http://h:8123", "db");
        c.password = Some("hunter2".into());
        let text = format!("{c:?}");
        assert!(
            !text.contains("hunter2") && text.contains("<secret>"),
            "{text}"
        );
    }

    #[test]
    fn a_passed_deadline_is_a_timeout_before_any_request() {
        // Nothing listens on port 1: reaching the network would be Transport.
        let c = Client::new(Config::new("http://127.0.0.1:1", "x"));
        let past = Instant::now() - Duration::from_secs(1);
        let r = c.query(
            "SELECT 1",
            &Request {
                deadline: Some(past),
                ..Request::default()
            },
        );
        assert_eq!(r.unwrap_err().code(), Some(159));
    }

    /// The request line of one insert `config`'s client sends (answered 200).
    fn insert_url(config: Config) -> String {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap();
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim_end().is_empty() {
                    break;
                }
            }
            let mut w = conn;
            w.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .unwrap();
            first
        });
        let c = Client::new(Config { url, ..config });
        c.insert(
            "INSERT INTO logs FORMAT JSONEachRow",
            b"",
            &Request::default(),
        )
        .unwrap();
        seen.join().unwrap()
    }

    /// On a cluster every request asks for inserts acknowledged once the
    /// shards have the rows, and for subqueries read on each shard; on one
    /// server the URL is as it always was.
    #[test]
    fn cluster_requests_carry_the_cluster_settings() {
        let single = insert_url(Config::new("", "db"));
        assert_eq!(
            single,
            "POST /?database=db&query=INSERT+INTO+logs+FORMAT+JSONEachRow HTTP/1.1\r\n"
        );
        let mut config = Config::new("", "db");
        config.cluster = Some(Cluster::new("c"));
        let clustered = insert_url(config);
        assert!(
            clustered.contains("&insert_distributed_sync=1&distributed_product_mode=local "),
            "{clustered}"
        );
    }

    /// A server answering one request with `answer` (status line, headers
    /// and body as given), then keeping the connection open for `hold`.
    fn answer_once(answer: Vec<u8>, hold: Duration) -> String {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end().to_ascii_lowercase();
                if h.is_empty() {
                    break;
                }
                if let Some(v) = h.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut sql = vec![0u8; len];
            reader.read_exact(&mut sql).unwrap();
            let mut w = conn;
            w.write_all(&answer).unwrap();
            w.flush().unwrap();
            std::thread::sleep(hold);
        });
        url
    }

    fn with_length(body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// Rows are handed on as they arrive: a reader that stops after the
    /// first returns at once, though the answer has not ended.
    #[test]
    fn a_row_reader_stops_without_waiting_for_the_rest() {
        let chunk = "{\"n\":1}\n{\"n\":2}\n";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n",
            chunk.len()
        );
        let url = answer_once(answer.into_bytes(), Duration::from_secs(20));
        let c = Client::new(Config::new(url, "x"));
        let began = Instant::now();
        let mut seen = Vec::new();
        c.each_row("SELECT n", &Request::default(), &mut |v| {
            seen.push(v["n"].as_u64().unwrap());
            Ok(false)
        })
        .unwrap();
        assert_eq!(seen, [1]);
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "waited for the end"
        );
    }

    /// An exception written into an answer already begun (status 200) is a
    /// server error with its code, after the rows before it, in each of the
    /// forms ClickHouse writes it; `rows` then fails as a whole.
    #[test]
    fn exceptions_inside_a_begun_answer_are_server_errors() {
        let forms = [
            (
                "{\"n\":1}\nCode: 241. DB::Exception: Memory limit (total) exceeded. (MEMORY_LIMIT_EXCEEDED)\n",
                241,
            ),
            (
                "{\"n\":1}\n{\"exception\": \"Code: 159. DB::Exception: Timeout exceeded. (TIMEOUT_EXCEEDED)\"}\n",
                159,
            ),
            (
                "{\"n\":1}\n__exception__\r\nabcdefghijklmnop\r\nCode: 395. DB::Exception: thrown. (FUNCTION_THROW_IF_VALUE_IS_NON_ZERO)\n",
                395,
            ),
        ];
        for (body, code) in forms {
            let c = Client::new(Config::new(
                answer_once(with_length(body), Duration::ZERO),
                "x",
            ));
            let mut seen = 0;
            let err = c
                .each_row("SELECT n", &Request::default(), &mut |_| {
                    seen += 1;
                    Ok(true)
                })
                .unwrap_err();
            assert_eq!((seen, err.code()), (1, Some(code)), "{body}: {err}");
            let c = Client::new(Config::new(
                answer_once(with_length(body), Duration::ZERO),
                "x",
            ));
            let err = c.rows("SELECT n", &Request::default()).unwrap_err();
            assert_eq!(err.code(), Some(code), "{body}: {err}");
        }
        // A row cut short is a decoding error, not an answer.
        let c = Client::new(Config::new(
            answer_once(with_length("{\"n\":1}\n{\"n\":"), Duration::ZERO),
            "x",
        ));
        let err = c.rows("SELECT n", &Request::default()).unwrap_err();
        assert!(matches!(err, Error::Decode(_)), "{err}");
    }

    /// With a progress to fill, rows come out of their `{"row": …}`
    /// wrappers, the other lines are skipped, and the highest running
    /// totals are added (not each progress line's), also when the reader
    /// stops early.
    #[test]
    fn progress_answers_hand_rows_on_and_add_the_totals_read() {
        let body = concat!(
            "{\"meta\":[{\"name\":\"n\",\"type\":\"UInt8\"}]}\n",
            "{\"progress\":{\"read_rows\":\"3\",\"read_bytes\":\"30\"}}\n",
            "{\"row\":{\"n\":1}}\n",
            "{\"progress\":{\"read_rows\":\"10\",\"read_bytes\":\"100\",\"elapsed_ns\":\"5\"}}\n",
            "{\"row\":{\"n\":2}}\n",
            "{\"rows_before_limit_at_least\":2}\n",
        );
        let progress = ReadProgress::default();
        let req = Request {
            progress: Some(&progress),
            ..Request::default()
        };
        for _ in 0..2 {
            let c = Client::new(Config::new(
                answer_once(with_length(body), Duration::ZERO),
                "x",
            ));
            let rows = c.rows("SELECT n", &req).unwrap();
            assert_eq!(
                rows,
                [serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]
            );
        }
        assert_eq!((progress.rows(), progress.bytes()), (20, 200));
        let stopped = ReadProgress::default();
        let c = Client::new(Config::new(
            answer_once(with_length(body), Duration::ZERO),
            "x",
        ));
        let req = Request {
            progress: Some(&stopped),
            ..Request::default()
        };
        c.each_row("SELECT n", &req, &mut |_| Ok(false)).unwrap();
        assert_eq!((stopped.rows(), stopped.bytes()), (3, 30));
    }

    #[test]
    fn answers_over_ten_mebibytes_are_read_whole() {
        let body = "x".repeat(11 << 20);
        let url = answer_once(with_length(&body), Duration::ZERO);
        let c = Client::new(Config::new(url, "x"));
        let got = c.query("SELECT big", &Request::default()).unwrap();
        assert_eq!(got.len(), body.len());
    }
}
