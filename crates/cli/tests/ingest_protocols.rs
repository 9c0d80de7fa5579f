//! Every ingestion protocol driven by a real client, then read back over the
//! Loki API and compared field by field:
//! - Elasticsearch `_bulk`: the official Python client's `helpers.bulk`;
//! - OTLP/HTTP: the OpenTelemetry Python SDK with its OTLP/HTTP log exporter;
//! - syslog over TCP and UDP: util-linux `logger`;
//! - JSON lines: plain HTTP (VictoriaLogs' format has no dedicated client).
//!
//! The clients are set up on first use (see [`clients`]): the Python ones in
//! the project virtualenv `.venv-clients` (`RUNAKEFLI_TEST_PYTHON` overrides
//! its interpreter). A client that cannot be set up fails the test (it does
//! not skip).
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod clients;
mod common;

use common::TestServer;
use runakefli_model::civil::civil_from_days;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Runs `tests/clients/<script>` with `job` as JSON on stdin; returns its JSON output.
fn run_client(script: &str, job: &Value) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let mut child = Command::new(clients::python())
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(job.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} output: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// One entry read back: time, line, and the labels the API reports for it
/// (stream labels, structured metadata and labels extracted by the query).
#[derive(Debug, Clone)]
struct Row {
    ts: i64,
    line: String,
    labels: BTreeMap<String, String>,
}

impl Row {
    fn get(&self, k: &str) -> Option<&str> {
        self.labels.get(k).map(String::as_str)
    }
}

/// Runs a forward `query_range` over `[start, end]` and flattens the result, sorted by time.
fn query(server: &TestServer, q: &str, start: i64, end: i64) -> Vec<Row> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", q),
            ("start", &start.to_string()),
            ("end", &end.to_string()),
            ("limit", "1000"),
            ("direction", "forward"),
        ],
    );
    assert_eq!(v["status"], "success", "{v}");
    let mut rows = Vec::new();
    for s in v["data"]["result"].as_array().unwrap() {
        let labels: BTreeMap<String, String> = s["stream"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        for e in s["values"].as_array().unwrap() {
            rows.push(Row {
                ts: e[0].as_str().unwrap().parse().unwrap(),
                line: e[1].as_str().unwrap().to_string(),
                labels: labels.clone(),
            });
        }
    }
    rows.sort_by(|a, b| a.ts.cmp(&b.ts).then(a.line.cmp(&b.line)));
    rows
}

/// Polls until the query returns at least `want` rows (syslog batches linger).
fn query_until(server: &TestServer, q: &str, start: i64, end: i64, want: usize) -> Vec<Row> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = query(server, q, start, end);
        if rows.len() >= want || Instant::now() > deadline {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn assert_labels(row: &Row, want: &[(&str, &str)]) {
    for (k, v) in want {
        assert_eq!(row.get(k), Some(*v), "label {k} of {row:?}");
    }
}

#[test]
fn elasticsearch_python_client_bulk_helper() {
    let server = TestServer::start();
    let base_ms = (now_ns() / 1_000_000 / 1000) * 1000 - 600_000;
    let levels = ["info", "warn", "error", "info", "debug"];
    let mut docs: Vec<Value> = (0..5)
        .map(|i| {
            let ms = base_ms + i * 1500 + 7;
            json!({
                "@timestamp": format!("{}Z", iso_ms(ms)),
                "message": format!("order {i} processed"),
                "service": {"name": "checkout"},
                "host": {"name": "node-a"},
                "level": levels[i as usize],
                "http": {"status": 200 + i},
                "user_id": i * 11,
            })
        })
        .collect();
    // Refused per item (unparsable time), while the good ones are stored.
    docs.push(
        json!({"@timestamp": "not a time", "message": "bad", "service": {"name": "checkout"}}),
    );
    let out = run_client(
        "es_bulk.py",
        &json!({
            "url": server.base,
            "headers": {"VL-Stream-Fields": "service.name,host.name"},
            "index": "logs-checkout",
            "docs": docs,
        }),
    );
    assert_eq!(out["version"], "8.17.0", "{out}");
    assert_eq!(out["ok"], 5, "{out}");
    let errors = out["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{out}");
    let item = errors[0].as_object().unwrap().values().next().unwrap();
    assert_eq!(item["status"], 400, "{out}");
    assert_eq!(item["_index"], "logs-checkout", "{out}");
    assert_eq!(item["error"]["type"], "document_parsing_exception", "{out}");

    let rows = query(
        &server,
        r#"{service_name="checkout"} | json"#,
        base_ms * 1_000_000 - 1,
        now_ns(),
    );
    assert_eq!(rows.len(), 5, "{rows:?}");
    for (i, (row, doc)) in rows.iter().zip(&docs).enumerate() {
        let i = i as i64;
        assert_eq!(row.ts, (base_ms + i * 1500 + 7) * 1_000_000);
        let stored: Value = serde_json::from_str(&row.line).unwrap();
        assert_eq!(&stored, doc, "line is the document as sent");
        assert_labels(
            row,
            &[
                ("service_name", "checkout"),
                ("host_name", "node-a"),
                ("message", &format!("order {i} processed")),
                ("level", levels[i as usize]),
                ("http_status", &(200 + i).to_string()),
                ("user_id", &(i * 11).to_string()),
            ],
        );
    }
    // The index of the URL does not make a stream; only the stream fields do.
    let v = server.get_json(
        "/loki/api/v1/series",
        &[("match[]", r#"{service_name="checkout"}"#)],
    );
    assert_eq!(v["data"].as_array().unwrap().len(), 1, "{v}");
}

/// `YYYY-MM-DDTHH:MM:SS.mmm` (UTC) of a Unix time in milliseconds.
fn iso_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        ms.rem_euclid(1000)
    )
}

#[test]
fn opentelemetry_python_sdk_otlp_http_exporter() {
    let server = TestServer::start();
    let base = (now_ns() / 1_000_000_000 - 300) * 1_000_000_000;
    let trace_id = "5b8efff798038103d269b633813fc60c";
    let span_id = "eee19b7ec3c1b174";
    let records = json!([
        {"time_ns": base + 1_000_000, "observed_ns": base + 2_000_000, "body": "user logged in",
         "severity_text": "INFO", "severity_number": 9,
         "attributes": {"http.method": "GET", "user.id": 42}, "trace_id": trace_id, "span_id": span_id},
        {"time_ns": base + 5_000_000, "observed_ns": base + 6_000_000, "body": "payment failed",
         "severity_text": "ERROR", "severity_number": 17, "attributes": {"order": "A-1"}},
        {"time_ns": base + 9_000_000, "observed_ns": base + 9_500_000, "body": {"event": "checkout", "items": 3},
         "severity_text": "WARN", "severity_number": 13, "attributes": {}},
    ]);
    for (endpoint, service, gzip) in [
        ("/v1/logs", "api", true),
        ("/otlp/v1/logs", "api-loki-path", false),
    ] {
        let out = run_client(
            "otlp_logs.py",
            &json!({
                "endpoint": format!("{}{endpoint}", server.base),
                "gzip": gzip,
                "resource": {"service.name": service, "service.namespace": "shop", "k8s.pod.name": "api-7f9c",
                             "host.arch": "amd64"},
                "scope": ["checkout.module", "1.2.3"],
                "records": records,
            }),
        );
        let results = out["results"].as_array().unwrap();
        assert_eq!(results.len(), 3, "{out}");
        assert!(results.iter().all(|r| r == "SUCCESS"), "{endpoint}: {out}");

        let q = format!(r#"{{service_name="{service}"}}"#);
        let rows = query(&server, &q, base, now_ns());
        assert_eq!(rows.len(), 3, "{rows:?}");
        let stream = [
            ("service_name", service),
            ("service_namespace", "shop"),
            ("k8s_pod_name", "api-7f9c"),
        ];
        for (row, rec) in rows.iter().zip(records.as_array().unwrap()) {
            assert_eq!(row.ts, rec["time_ns"].as_i64().unwrap());
            assert_labels(row, &stream);
            assert_labels(
                row,
                &[
                    ("severity_text", rec["severity_text"].as_str().unwrap()),
                    ("severity_number", &rec["severity_number"].to_string()),
                    ("observed_timestamp", &rec["observed_ns"].to_string()),
                    ("scope_name", "checkout.module"),
                    ("scope_version", "1.2.3"),
                    ("host_arch", "amd64"),
                    ("telemetry_sdk_language", "python"),
                ],
            );
        }
        assert_eq!(rows[0].line, "user logged in");
        assert_labels(
            &rows[0],
            &[
                ("http_method", "GET"),
                ("user_id", "42"),
                ("trace_id", trace_id),
                ("span_id", span_id),
                ("detected_level", "info"),
            ],
        );
        assert_eq!(rows[1].line, "payment failed");
        assert_labels(&rows[1], &[("order", "A-1"), ("detected_level", "error")]);
        assert_eq!(rows[1].get("trace_id"), None);
        let body: Value = serde_json::from_str(&rows[2].line).unwrap();
        assert_eq!(body, json!({"event": "checkout", "items": 3}));
        assert_labels(&rows[2], &[("detected_level", "warn")]);
        // A structured body is JSON: `| json` reaches its fields.
        let rows = query(
            &server,
            &format!(r#"{q} | json | event="checkout""#),
            base,
            now_ns(),
        );
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_labels(&rows[0], &[("items", "3")]);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    assert_eq!(rc, 0);
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Sends `lines` (one message each) with util-linux `logger`.
fn logger(args: &[&str], lines: &[String]) {
    clients::ensure_logger();
    let mut child = Command::new("logger")
        .args(args)
        .env("TZ", "UTC")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start logger");
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "logger {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server listening for syslog on a free TCP and a free UDP port (the
/// ports returned), with `extra` flags.
fn start_with_syslog(extra: &[&str]) -> (TestServer, u16, u16) {
    let (tcp, udp) = (free_port(), free_udp_port());
    let tcp_addr = format!("127.0.0.1:{tcp}");
    let udp_addr = format!("127.0.0.1:{udp}");
    let mut args = vec![
        "--syslog-tcp-listen",
        &tcp_addr,
        "--syslog-udp-listen",
        &udp_addr,
    ];
    args.extend_from_slice(extra);
    let server = TestServer::start_with(&args);
    (server, tcp, udp)
}

#[test]
fn syslog_from_logger_over_tcp_and_udp() {
    let (server, tcp, udp) = start_with_syslog(&[]);
    let host = hostname();
    let cases: [(&str, &str, Vec<&str>); 3] = [
        (
            "tcp-5424",
            "app5424",
            vec![
                "--tcp",
                "--rfc5424",
                "--octet-count",
                "--msgid",
                "M1",
                "--sd-id",
                "origin@123",
                "--sd-param",
                "ip=\"10.1.2.3\"",
            ],
        ),
        ("tcp-3164", "app3164", vec!["--tcp", "--rfc3164"]),
        ("udp-5424", "appudp", vec!["--udp", "--rfc5424"]),
    ];
    for (name, app, extra) in cases {
        let start = now_ns() - 2_000_000_000;
        let port = if name.starts_with("udp") {
            udp.to_string()
        } else {
            tcp.to_string()
        };
        let mut args = vec![
            "-n",
            "127.0.0.1",
            "-P",
            &port,
            "-t",
            app,
            "--id=4242",
            "-p",
            "local3.warning",
        ];
        args.extend(extra.iter().copied());
        let lines: Vec<String> = (0..3)
            .map(|i| format!("{name} message {i} with spaces"))
            .collect();
        logger(&args, &lines);
        let q = format!(r#"{{service_name="{app}"}}"#);
        let rows = query_until(&server, &q, start, now_ns() + 5_000_000_000, 3);
        let end = now_ns() + 2_000_000_000;
        assert_eq!(rows.len(), 3, "{name}: {rows:?}");
        let mut got: Vec<&str> = rows.iter().map(|r| r.line.as_str()).collect();
        got.sort();
        assert_eq!(
            got,
            lines.iter().map(String::as_str).collect::<Vec<_>>(),
            "{name}"
        );
        for row in &rows {
            assert!(
                row.ts >= start && row.ts <= end,
                "{name}: time {} outside [{start}, {end}]",
                row.ts
            );
            assert_labels(
                row,
                &[
                    ("service_name", app),
                    ("hostname", &host),
                    ("facility", "local3"),
                    ("severity", "warning"),
                    ("proc_id", "4242"),
                    ("detected_level", "warn"),
                ],
            );
            if name == "tcp-5424" {
                assert_labels(row, &[("msg_id", "M1"), ("origin_123_ip", "10.1.2.3")]);
            }
        }
    }
    // Streams are keyed by app, host and facility only.
    let v = server.get_json("/loki/api/v1/label/service_name/values", &[]);
    let apps: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(apps, vec!["app3164", "app5424", "appudp"]);
    let v = server.get_json(
        "/loki/api/v1/series",
        &[("match[]", r#"{facility="local3"}"#)],
    );
    for s in v["data"].as_array().unwrap() {
        let mut keys: Vec<&String> = s.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, vec!["facility", "hostname", "service_name"], "{s}");
    }
}

#[test]
fn jsonline_with_parameters_and_headers() {
    let server = TestServer::start();
    let t0 = (now_ns() / 1_000_000_000 - 100) * 1_000_000_000;
    let body = format!(
        "{{\"ts\":{},\"app\":\"billing\",\"msg\":\"charged\",\"amount\":12.5}}\n\n{{\"ts\":{},\"app\":\"billing\",\"msg\":\"refunded\",\"req\":{{\"id\":\"r-1\"}}}}\n",
        t0 / 1_000_000,
        t0 / 1_000_000 + 1
    );
    let (status, text) = server.post_with(
        "/insert/jsonline?_stream_fields=app&_time_field=ts",
        "application/stream+json",
        None,
        &[("VL-Msg-Field", "msg"), ("VL-Line", "message")],
        body.as_bytes(),
    );
    assert_eq!(status, 200, "{text}");
    let rows = query(&server, r#"{app="billing"}"#, t0 - 1, now_ns());
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!((rows[0].ts, rows[0].line.as_str()), (t0, "charged"));
    assert_labels(&rows[0], &[("amount", "12.5")]);
    assert_eq!(
        (rows[1].ts, rows[1].line.as_str()),
        (t0 + 1_000_000, "refunded")
    );
    assert_labels(&rows[1], &[("req_id", "r-1")]);
    // A bad line rejects the request with a plain-text 400 and stores nothing.
    let (status, text) = server.post(
        "/insert/jsonline?_stream_fields=app",
        "application/json",
        None,
        b"{\"app\":\"x\"}\nnot json\n",
    );
    assert_eq!(status, 400);
    assert!(text.contains("line 2"), "{text}");
    assert!(query(&server, r#"{app="x"}"#, t0 - 1, now_ns() + 1_000_000_000).is_empty());
}

#[test]
fn protocol_errors_in_each_protocols_format() {
    let server = TestServer::start();
    // OTLP: a google.rpc.Status, as JSON or protobuf.
    let (status, text) = server.post("/v1/logs", "application/json", None, b"{not json");
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["code"], 3, "{v}");
    assert!(!v["message"].as_str().unwrap().is_empty());
    let resp = ureq::post(&format!("{}/v1/logs", server.base))
        .set("Content-Type", "application/x-protobuf")
        .send_bytes(&[0xff, 0xff, 0xff]);
    let Err(ureq::Error::Status(400, resp)) = resp else {
        panic!("expected 400")
    };
    assert_eq!(resp.header("content-type"), Some("application/x-protobuf"));
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut bytes).unwrap();
    assert_eq!(bytes.first(), Some(&0x08), "field 1 (code) first");
    assert_eq!(bytes.get(1), Some(&3));
    // Elasticsearch: an error object, and the product header on every answer.
    let resp = ureq::post(&format!("{}/_bulk", server.base)).send_bytes(b"{\"upsert\":{}}\n{}\n");
    let Err(ureq::Error::Status(400, resp)) = resp else {
        panic!("expected 400")
    };
    assert_eq!(resp.header("x-elastic-product"), Some("Elasticsearch"));
    let v: Value = serde_json::from_str(&resp.into_string().unwrap()).unwrap();
    assert_eq!(v["status"], 400);
    assert_eq!(v["error"]["type"], "illegal_argument_exception");
    assert!(
        v["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("Malformed action/metadata line [1]"),
        "{v}"
    );
    for path in [
        "/",
        "/_license",
        "/_index_template/filebeat",
        "/_cluster/health",
        "/insert/elasticsearch/",
    ] {
        let resp = ureq::get(&format!("{}{path}", server.base)).call().unwrap();
        assert_eq!(
            resp.header("x-elastic-product"),
            Some("Elasticsearch"),
            "{path}"
        );
    }
    let resp = ureq::head(&format!("{}/_index_template/x", server.base))
        .call()
        .unwrap();
    assert_eq!(resp.status(), 200);
    // The VictoriaLogs prefix takes bulk requests too.
    let (status, text) = server.post(
        "/insert/elasticsearch/_bulk?_stream_fields=app",
        "application/x-ndjson",
        None,
        b"{\"create\":{}}\n{\"app\":\"vl\",\"message\":\"m\"}\n",
    );
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["errors"], false);
    assert_eq!(v["items"][0]["create"]["status"], 201);
}

/// `runakefli_rejected_requests_total{protocol="syslog",reason="inflight_limit"}`.
fn syslog_refused(server: &TestServer) -> f64 {
    let (_, text) = server.get("/metrics", &[]);
    text.lines()
        .find_map(|l| {
            l.strip_prefix(
                r#"runakefli_rejected_requests_total{protocol="syslog",reason="inflight_limit"} "#,
            )
        })
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// Syslog messages are charged to `--max-inflight-push-bytes` like HTTP
/// pushes: while an HTTP push that never sends its body holds the whole
/// 2 KiB budget, UDP datagrams are dropped and counted, and TCP messages
/// wait (none stored, none counted); once the HTTP client goes away, the
/// waiting TCP messages are all stored and new datagrams are stored.
#[test]
fn syslog_is_charged_to_the_inflight_push_budget() {
    let (server, tcp, udp) = start_with_syslog(&["--max-inflight-push-bytes", "2KiB"]);
    let tcp_addr = format!("127.0.0.1:{tcp}");
    let udp_addr = format!("127.0.0.1:{udp}");
    const N: usize = 20;
    let msg =
        |app: &str, i: usize| format!("<14>1 - host {app} - - - message {i} {}", "p".repeat(90));
    let count = |app: &str| {
        let v = server.get_json(
            "/loki/api/v1/query",
            &[
                (
                    "query",
                    &format!(r#"sum(count_over_time({{service_name="{app}"}}[1d]))"#),
                ),
                ("time", &(now_ns() + 1_000_000_000).to_string()),
            ],
        );
        v["data"]["result"][0]["value"][1]
            .as_str()
            .map_or(0, |s| s.parse::<usize>().unwrap())
    };
    let gauge = || {
        let (_, text) = server.get("/metrics", &[]);
        text.lines()
            .find_map(|l| l.strip_prefix("runakefli_push_inflight_bytes "))
            .map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
    };
    let wait_for = |what: &str, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // An HTTP push announcing the whole budget and sending no body.
    let base = server.base.trim_start_matches("http://").to_string();
    let mut stalled = std::net::TcpStream::connect(&base).unwrap();
    write!(
        stalled,
        "POST /loki/api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2048\r\n\r\n"
    )
    .unwrap();
    wait_for("the stalled push's charge", &|| gauge() >= 2048.0);
    // UDP: dropped and counted.
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..N {
        sock.send_to(msg("budgetudp", i).as_bytes(), &udp_addr)
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    wait_for("the datagrams to be counted", &|| {
        syslog_refused(&server) as usize == N
    });
    // TCP: waits for room.
    let tcp_thread = std::thread::spawn(move || {
        let mut conn = std::net::TcpStream::connect(&tcp_addr).unwrap();
        for i in 0..N {
            let m = msg("budgettcp", i);
            write!(conn, "{} {m}", m.len()).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(count("budgetudp"), 0, "a refused datagram was stored");
    assert_eq!(count("budgettcp"), 0, "TCP messages passed a spent budget");
    assert_eq!(
        syslog_refused(&server) as usize,
        N,
        "TCP messages are not refused"
    );
    // The HTTP client goes away: its charge is given back.
    drop(stalled);
    tcp_thread.join().unwrap();
    wait_for("the waiting TCP messages", &|| count("budgettcp") == N);
    for i in 0..N {
        sock.send_to(msg("budgetudp", i).as_bytes(), &udp_addr)
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    wait_for("the later datagrams", &|| count("budgetudp") == N);
    assert_eq!(syslog_refused(&server) as usize, N);
}
