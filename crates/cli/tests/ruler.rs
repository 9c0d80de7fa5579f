//! The ruler (issue 46) against real components: Debian's Alertmanager 0.25
//! receives the alerts, Prometheus 2.42 (`--web.enable-remote-write-receiver`)
//! the recorded samples; both are started here on loopback ports with their
//! own temporary storage and killed at the end. Without the binaries the
//! first test runs `.ci/setup-ruler.sh` (apt-get, as root); when they are
//! still missing, the tests fail saying what to install. One test runs
//! the rules over the ClickHouse backend (chdb-core behind the test front of
//! `crates/clickhouse/tests/`, `.ci/setup-clients.sh chdb`).
//!
//! Groups run every second (the `interval:` of the rule files): the tests
//! take seconds, but for the fault tests — SIGKILLs with Prometheus up and
//! down (about 20 s), and Alertmanager down for two minutes (the one slow
//! test, about 2 min).
#![allow(
    clippy::unwrap_used,
    reason = "test code (and the shared harness): a failed unwrap is a failed test"
)]

mod common;
#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use common::{TestServer, AS_PUSHED};
use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `name` on the PATH, if it is there.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// A binary the tests need. On first use without it, `.ci/setup-ruler.sh`
/// runs once (as the clients' tests set theirs up: apt-get, as root); when
/// the binary is still missing, the test fails naming what to install.
fn require(name: &str) -> PathBuf {
    static SETUP: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    if let Some(p) = on_path(name) {
        return p;
    }
    let mut tried = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if on_path(name).is_none() && tried.is_none() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/setup-ruler.sh");
        eprintln!(
            "setting up the ruler's test components: {}",
            script.display()
        );
        let out = Command::new("bash").arg(&script).output();
        *tried = Some(match out {
            Ok(o) if o.status.success() => "ran".into(),
            Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => e.to_string(),
        });
    }
    on_path(name).unwrap_or_else(|| {
        panic!(
            "{name} is not installed: run .ci/setup-ruler.sh \
             (or apt-get install prometheus prometheus-alertmanager); \
             the setup tried here said: {}",
            tried.as_deref().unwrap_or("-")
        )
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// A process of ours, killed when dropped.
struct External {
    child: Child,
    base: String,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for External {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl External {
    /// Stops it with SIGTERM (its storage written out) and waits.
    fn stop(mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }

    /// Waits until `GET base+path` answers 200.
    fn wait_ready(&mut self, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(r) = ureq::get(&format!("{}{path}", self.base))
                .timeout(Duration::from_secs(1))
                .call()
            {
                if r.status() == 200 {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited early: {status}", self.base);
            }
            assert!(
                Instant::now() < deadline,
                "{} did not become ready",
                self.base
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn get_json(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let mut req = ureq::get(&format!("{}{path}", self.base));
        for (k, v) in params {
            req = req.query(k, v);
        }
        let body = req.call().expect("GET").into_string().expect("body");
        serde_json::from_str(&body).expect("JSON")
    }
}

/// Alertmanager on a free port, its own storage, no cluster.
fn alertmanager() -> External {
    alertmanager_on(free_port())
}

/// Alertmanager on `port`.
fn alertmanager_on(port: u16) -> External {
    let bin = require("prometheus-alertmanager");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("alertmanager.yml");
    std::fs::write(
        &config,
        "route:\n  receiver: sink\n  group_wait: 1s\nreceivers:\n  - name: sink\n",
    )
    .expect("write config");
    let child = Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--cluster.listen-address=")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start alertmanager");
    let mut am = External {
        child,
        base: format!("http://127.0.0.1:{port}"),
        _dir: Some(dir),
    };
    am.wait_ready("/-/ready");
    am
}

/// Prometheus on a free port with the remote-write receiver, its own TSDB.
fn prometheus() -> External {
    prometheus_on(free_port())
}

/// Prometheus on `port`.
fn prometheus_on(port: u16) -> External {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = prometheus_in(port, dir.path());
    p._dir = Some(dir);
    p
}

/// Prometheus on `port` with its configuration and TSDB in `dir` (kept
/// across restarts).
fn prometheus_in(port: u16, dir: &Path) -> External {
    let bin = require("prometheus");
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").expect("write config");
    let child = Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let mut p = External {
        child,
        base: format!("http://127.0.0.1:{port}"),
        _dir: None,
    };
    p.wait_ready("/-/ready");
    p
}

/// Writes `text` as `<rules>/fake/<namespace>.yaml`.
fn write_rules(rules: &Path, namespace: &str, text: &str) {
    let dir = rules.join("fake");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("{namespace}.yaml")), text).expect("write rules");
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64
}

/// Pushes `lines` into `{app="checkout"}`, timestamped now.
fn push_checkout(server: &TestServer, lines: &[&str]) {
    let t = now_ns();
    let values: Vec<Value> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| serde_json::json!([(t + i as i64).to_string(), l]))
        .collect();
    server.push_json(&serde_json::json!({
        "streams": [{"stream": {"app": "checkout", "env": "prod"}, "values": values}]
    }));
}

/// The value of the series written exactly `series` in a `/metrics` text.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} not in /metrics:\n{text}"))
        .parse()
        .expect("a number")
}

/// Polls `f` every 100 ms until it returns `Some`, for at most `secs`.
fn eventually<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const ALERT_RULES: &str = r#"
groups:
  - name: checkout
    interval: 1s
    rules:
      - alert: Checkout5xx
        expr: |
          sum by (app) (count_over_time({app="checkout"} | json | status >= 500 [8s]))
            /
          sum by (app) (count_over_time({app="checkout"} | json [8s])) > 0.5
        for: 1s
        labels:
          severity: page
          team: "{{ $labels.app }}-team"
        annotations:
          summary: "{{ $labels.app }}: {{ $value | humanizePercentage }} of requests failed"
"#;

#[test]
fn an_alert_goes_pending_fires_at_alertmanager_and_resolves() {
    let am = alertmanager();
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(&rules, "shop", ALERT_RULES);
    let rules_arg = format!("--rules-dir={}", rules.display());
    let am_arg = format!("--alertmanager-url={}", am.base);
    // A long resend delay: the alert's endsAt is 4 × 30 s ahead, so its
    // leaving Alertmanager early proves the resolution was sent.
    let mut args = vec![
        rules_arg.as_str(),
        am_arg.as_str(),
        "--ruler-resend-delay=30s",
    ];
    args.extend_from_slice(AS_PUSHED);
    let server = TestServer::start_with(&args);

    push_checkout(
        &server,
        &[
            r#"{"status":503,"path":"/pay"}"#,
            r#"{"status":500,"path":"/pay"}"#,
            r#"{"status":502,"path":"/cart"}"#,
            r#"{"status":200,"path":"/cart"}"#,
        ],
    );

    // Pending first (held for `for: 1s`), then firing, on the Prometheus API.
    let mut states = Vec::new();
    eventually(15, "the alert to fire in /prometheus/api/v1/alerts", || {
        let v = server.get_json("/prometheus/api/v1/alerts", &[]);
        let alerts = v["data"]["alerts"].as_array().cloned().unwrap_or_default();
        let state = alerts
            .first()
            .map(|a| a["state"].as_str().unwrap_or("").to_string());
        if let Some(s) = &state {
            if states.last() != Some(s) {
                states.push(s.clone());
            }
        }
        (state.as_deref() == Some("firing")).then_some(())
    });
    assert_eq!(states, ["pending", "firing"], "states seen");

    // At Alertmanager with the rule's labels and expanded annotations.
    let alert = eventually(10, "the alert at Alertmanager", || {
        let v = am.get_json("/api/v2/alerts", &[]);
        v.as_array().and_then(|a| {
            a.iter()
                .find(|x| x["labels"]["alertname"] == "Checkout5xx")
                .cloned()
        })
    });
    let labels = &alert["labels"];
    assert_eq!(labels["severity"], "page");
    assert_eq!(labels["team"], "checkout-team");
    assert_eq!(labels["app"], "checkout");
    assert_eq!(
        alert["annotations"]["summary"],
        "checkout: 75% of requests failed"
    );
    assert_eq!(alert["status"]["state"], "active");
    let generator = alert["generatorURL"].as_str().expect("generatorURL");
    assert!(
        generator.starts_with("http://127.0.0.1:3100/loki/api/v1/query?query=sum%20by%20%28app%29"),
        "{generator}"
    );

    // The rules API shows the rule firing, healthy.
    let rules_v = server.get_json("/prometheus/api/v1/rules", &[]);
    let group = &rules_v["data"]["groups"][0];
    assert_eq!(group["name"], "checkout");
    assert_eq!(group["file"], "shop");
    assert_eq!(group["interval"], 1.0);
    let rule = &group["rules"][0];
    assert_eq!(rule["type"], "alerting");
    assert_eq!(rule["health"], "ok", "{rule}");
    assert_eq!(rule["state"], "firing");
    assert_eq!(rule["duration"], 1.0);
    assert_eq!(rule["alerts"][0]["value"], "7.5e-01");

    // The lines leave the 8 s window: the alert resolves and the resolution
    // reaches Alertmanager long before the firing alert's endsAt.
    eventually(20, "the resolved alert to leave Alertmanager", || {
        let v = am.get_json("/api/v2/alerts", &[]);
        v.as_array()
            .is_some_and(|a| !a.iter().any(|x| x["labels"]["alertname"] == "Checkout5xx"))
            .then_some(())
    });
    let v = server.get_json("/prometheus/api/v1/alerts", &[]);
    assert_eq!(v["data"]["alerts"], serde_json::json!([]));

    let (_, metrics) = server.get("/metrics", &[]);
    let sent = metric(
        &metrics,
        &format!(
            "prometheus_notifications_sent_total{{alertmanager=\"{}/api/v2/alerts\"}}",
            am.base
        ),
    );
    assert!(sent >= 2.0, "{sent}");
    assert!(
        metrics.contains(
            "prometheus_rule_group_iterations_total{tenant=\"fake\",rule_group=\"shop;checkout\"}"
        ),
        "{metrics}"
    );
}

const RECORDING_RULES: &str = r#"
groups:
  - name: checkout-recording
    interval: 1s
    rules:
      - record: checkout:lines:count5m
        expr: sum by (app, env) (count_over_time({app="checkout"}[5m]))
        labels:
          source: runakefli
      - alert: CheckoutBusy
        expr: sum by (app) (count_over_time({app="checkout"}[5m])) > 3
"#;

/// The samples of a Prometheus range-vector selector, `(seconds, value)`.
fn prom_samples(p: &External, query: &str) -> Vec<(f64, f64)> {
    let v = p.get_json("/api/v1/query", &[("query", query)]);
    let Some(series) = v["data"]["result"]
        .as_array()
        .and_then(|r| r.first())
        .cloned()
    else {
        return Vec::new();
    };
    series["values"]
        .as_array()
        .map(|vals| {
            vals.iter()
                .map(|pair| {
                    (
                        pair[0].as_f64().expect("timestamp"),
                        pair[1].as_str().expect("value").parse().expect("number"),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn recorded_samples_reach_prometheus_with_the_instant_querys_values() {
    let prom = prometheus();
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(&rules, "shop", RECORDING_RULES);
    let rules_arg = format!("--rules-dir={}", rules.display());
    let rw_arg = format!("--remote-write-url={}/api/v1/write", prom.base);
    let mut args = vec![rules_arg.as_str(), rw_arg.as_str()];
    args.extend_from_slice(AS_PUSHED);
    let server = TestServer::start_with(&args);

    push_checkout(&server, &["a", "b", "c"]);
    std::thread::sleep(Duration::from_millis(1500));
    push_checkout(&server, &["d", "e"]);

    // Wait for samples of both pushes to be in Prometheus.
    let samples = eventually(20, "recorded samples in Prometheus", || {
        let s = prom_samples(
            &prom,
            r#"checkout:lines:count5m{app="checkout",env="prod",source="runakefli"}[1m]"#,
        );
        s.iter().any(|(_, v)| *v == 5.0).then_some(s)
    });
    assert!(samples.iter().any(|(_, v)| *v == 3.0), "{samples:?}");
    // Every recorded sample equals Rúnakefli's instant query at its time.
    for (t, v) in &samples {
        let time = format!("{}", (*t * 1e3).round() as i64 * 1_000_000);
        let ans = server.get_json(
            "/loki/api/v1/query",
            &[
                (
                    "query",
                    r#"sum by (app, env) (count_over_time({app="checkout"}[5m]))"#,
                ),
                ("time", &time),
            ],
        );
        let got: f64 = ans["data"]["result"][0]["value"][1]
            .as_str()
            .expect("a value")
            .parse()
            .expect("number");
        assert_eq!(got, *v, "sample at {t}");
    }

    // The alerting rule's ALERTS series is written too.
    eventually(15, "ALERTS in Prometheus", || {
        let v = prom.get_json(
            "/api/v1/query",
            &[(
                "query",
                r#"ALERTS{alertname="CheckoutBusy",alertstate="firing"}"#,
            )],
        );
        let r = v["data"]["result"].as_array().cloned().unwrap_or_default();
        (r.len() == 1 && r[0]["metric"]["app"] == "checkout").then_some(())
    });
    let v = prom.get_json(
        "/api/v1/query",
        &[("query", r#"ALERTS_FOR_STATE{alertname="CheckoutBusy"}"#)],
    );
    let active_at: f64 = v["data"]["result"][0]["value"][1]
        .as_str()
        .expect("value")
        .parse()
        .expect("number");
    assert!(active_at > 1.7e9, "{active_at}");

    let (_, metrics) = server.get("/metrics", &[]);
    let written = metrics
        .lines()
        .find_map(|l| l.strip_prefix("runakefli_ruler_remote_write_samples_total "))
        .expect("remote-write metric");
    assert!(written.parse::<f64>().expect("number") >= 2.0, "{written}");
}

#[test]
fn samples_evaluated_while_the_receiver_is_down_survive_a_restart() {
    // Prometheus' port, with nothing listening yet.
    let port = free_port();
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(
        &rules,
        "shop",
        "groups:\n  - name: rec\n    interval: 1s\n    rules:\n      - record: checkout:lines:count5m\n        expr: sum by (app) (count_over_time({app=\"checkout\"}[5m]))\n",
    );
    let rules_arg = format!("--rules-dir={}", rules.display());
    let rw_arg = format!("--remote-write-url=http://127.0.0.1:{port}/api/v1/write");
    let mut args = vec![rules_arg.as_str(), rw_arg.as_str()];
    args.extend_from_slice(AS_PUSHED);
    let mut server = TestServer::start_with(&args);
    let iterations = |server: &TestServer| -> f64 {
        let (_, m) = server.get("/metrics", &[]);
        m.lines()
            .find_map(|l| {
                l.strip_prefix(
                    "prometheus_rule_group_iterations_total{tenant=\"fake\",rule_group=\"shop;rec\"} ",
                )
            })
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    push_checkout(&server, &["a", "b"]);
    // A few evaluations whose samples cannot be sent. Evaluations before
    // the push (or running while it lands) record no sample or a smaller
    // count: three whole ones begin after it.
    let before = iterations(&server);
    eventually(15, "three evaluations after the push", || {
        (iterations(&server) >= before + 4.0).then_some(())
    });
    server.stop();
    let stopped_ms = now_ns() / 1_000_000;

    // Receiver up, server back on the same data directory: the samples of
    // the first run arrive.
    let prom = prometheus_on(port);
    server.start_again();
    let samples = eventually(15, "the first run's samples in Prometheus", || {
        let s = prom_samples(&prom, r#"checkout:lines:count5m{app="checkout"}[5m]"#);
        let early = s
            .iter()
            .filter(|(t, _)| (*t * 1e3) < stopped_ms as f64)
            .count();
        (early >= 3).then_some(s)
    });
    assert!(samples.iter().all(|(_, v)| *v == 2.0), "{samples:?}");
}

#[test]
fn the_rules_api_validates_stores_and_reloads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(
        &rules,
        "good",
        "groups:\n  - name: g1\n    rules:\n      - record: a:count\n        expr: sum(count_over_time({app=\"x\"}[1m]))\n",
    );
    // A bad file is reported and skipped; the server starts anyway.
    write_rules(
        &rules,
        "bad",
        "groups:\n  - name: b\n    rules:\n      - alert: A\n        expr: sum(rate({app=\"x\"}[1m])\n",
    );
    let rules_arg = format!("--rules-dir={}", rules.display());
    let mut server = TestServer::start_with(&[rules_arg.as_str()]);

    let (status, text) = server.get("/loki/api/v1/rules", &[]);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("good:\n- name: g1\n"), "{text}");
    let names = |server: &TestServer| -> Vec<String> {
        let v = server.get_json("/prometheus/api/v1/rules", &[]);
        v["data"]["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| {
                format!(
                    "{}/{}",
                    g["file"].as_str().unwrap_or(""),
                    g["name"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(names(&server), ["good/g1"]);

    // POST a group: 202, stored durably as YAML on disk, running at once.
    let group = "name: api-group\ninterval: 1s\nrules:\n  - alert: Many\n    expr: sum(count_over_time({app=\"x\"}[1m])) > 100\n    for: 5m\n    annotations:\n      summary: \"{{ $value }} lines\"\n";
    let (status, text) = server.post(
        "/loki/api/v1/rules/team",
        "application/yaml",
        None,
        group.as_bytes(),
    );
    assert_eq!(status, 202, "{text}");
    let on_disk = std::fs::read_to_string(rules.join("fake/team.yaml")).expect("file written");
    assert!(on_disk.contains("name: api-group"), "{on_disk}");
    assert_eq!(names(&server), ["good/g1", "team/api-group"]);
    let (status, text) = server.get("/loki/api/v1/rules/team/api-group", &[]);
    assert_eq!(status, 200);
    assert_eq!(
        server.get("/api/prom/rules/team/api-group", &[]),
        (200, text.clone()),
        "the older prefix"
    );
    assert!(
        text.starts_with("name: api-group\ninterval: 1s\n"),
        "{text}"
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_runakefli"))
        .args(["rules", "list", "--addr", &server.base])
        .output()
        .expect("run rules list");
    assert!(listed.status.success(), "{listed:?}");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("team:\n- name: api-group\n") && listed.contains("good:\n- name: g1\n"),
        "{listed}"
    );

    // Invalid groups: 400 with the reason; nothing changes.
    let (status, text) = server.post(
        "/loki/api/v1/rules/team",
        "application/yaml",
        None,
        b"name: broken\nrules:\n  - alert: X\n    expr: '{app=\"x\"}'\n",
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("must be a metric query"), "{text}");
    let (status, text) = server.post(
        "/loki/api/v1/rules/team",
        "application/yaml",
        None,
        b"name: broken\nrules:\n  - alert: X\n    expr: sum(rate({app=\"x\"}[1m]))\n    annotations: {a: '{{ $nope }}'}\n",
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("undefined variable \"$nope\""), "{text}");
    assert_eq!(names(&server), ["good/g1", "team/api-group"]);

    // A namespace that cannot be a file name is the request's fault.
    let (status, text) = server.post(
        "/loki/api/v1/rules/.hidden",
        "application/yaml",
        None,
        group.as_bytes(),
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("invalid namespace name"), "{text}");

    // DELETE the group: its file goes with its last group.
    let del = ureq::delete(&format!("{}/loki/api/v1/rules/team/api-group", server.base))
        .call()
        .expect("delete");
    assert_eq!(del.status(), 202);
    assert!(!rules.join("fake/team.yaml").exists());
    let (status, _) = server.get("/loki/api/v1/rules/team", &[]);
    assert_eq!(status, 404);

    // Fixing the bad file and sending SIGHUP loads it.
    write_rules(
        &rules,
        "bad",
        "groups:\n  - name: b\n    rules:\n      - alert: A\n        expr: sum(rate({app=\"x\"}[1m])) > 1\n",
    );
    unsafe {
        libc::kill(server.pid() as i32, libc::SIGHUP);
    }
    eventually(5, "the fixed file to load", || {
        (names(&server) == ["bad/b", "good/g1"]).then_some(())
    });
    let (_, metrics) = server.get("/metrics", &[]);
    let failures = metrics
        .lines()
        .find_map(|l| l.strip_prefix("runakefli_ruler_rule_file_load_failures_total "))
        .expect("load failures metric");
    assert!(
        failures.parse::<f64>().expect("number") >= 1.0,
        "{failures}"
    );
    server.stop();
}

#[test]
fn rules_evaluate_over_the_clickhouse_backend() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(
        &rules,
        "shop",
        "groups:\n  - name: ch\n    interval: 1s\n    rules:\n      - alert: CheckoutLines\n        expr: sum by (app) (count_over_time({app=\"checkout\"} | json | status >= 500 [1m])) > 1\n        annotations: {summary: \"{{ $value }} failures\"}\n",
    );
    let db = format!("ruler_{}", std::process::id());
    let rules_arg = format!("--rules-dir={}", rules.display());
    let owned = front::serve_args(&db);
    let mut args: Vec<&str> = owned.iter().map(String::as_str).collect();
    args.push(&rules_arg);
    args.extend_from_slice(AS_PUSHED);
    let server = TestServer::start_with(&args);
    push_checkout(
        &server,
        &[
            r#"{"status":500}"#,
            r#"{"status":503}"#,
            r#"{"status":200}"#,
        ],
    );
    let alert = eventually(20, "the alert over ClickHouse", || {
        let v = server.get_json("/prometheus/api/v1/alerts", &[]);
        v["data"]["alerts"]
            .as_array()
            .and_then(|a| a.first().cloned())
            .filter(|a| a["state"] == "firing")
    });
    assert_eq!(alert["labels"]["app"], "checkout");
    assert_eq!(alert["value"], "2e+00");
    assert_eq!(alert["annotations"]["summary"], "2 failures");
}

#[test]
fn rules_check_reports_each_files_problems() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let good = tmp.path().join("good.yaml");
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&good, ALERT_RULES).expect("write");
    std::fs::write(
        &bad,
        "groups:\n  - name: b\n    rules:\n      - record: \"not a name\"\n        expr: sum(rate({app=\"x\"}[1m]))\n      - alert: A\n        expr: nonsense(\n",
    )
    .expect("write");
    let run = |files: &[&Path]| {
        Command::new(env!("CARGO_BIN_EXE_runakefli"))
            .args(["rules", "check"])
            .args(files)
            .output()
            .expect("run rules check")
    };
    let ok = run(&[&good]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stdout).contains("SUCCESS: 1 rules found"));
    let out = run(&[&good, &bad]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("invalid recording rule name: not a name"),
        "{text}"
    );
    assert!(
        text.contains("rule 2: could not parse expression"),
        "{text}"
    );
}

/// The recording rules of the fault test: their names and expressions.
const FAULT_RULES: [(&str, &str); 2] = [
    (
        "fault:lines:count2m",
        r#"sum by (app) (count_over_time({job="fault"}[2m]))"#,
    ),
    (
        "fault:lines:count1m",
        r#"sum(count_over_time({job="fault"}[1m]))"#,
    ),
];

/// A series as `name{label="value",…}`, labels sorted.
fn series_key(name: &str, labels: &serde_json::Map<String, Value>) -> String {
    let mut pairs: Vec<String> = labels
        .iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    format!("{name}{{{}}}", pairs.join(","))
}

/// What Rúnakefli's instant queries answer at `t_ms` for the fault rules:
/// the samples the ruler must have written for an evaluation at that time.
fn fault_expected(server: &TestServer, t_ms: i64) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    let time = (t_ms * 1_000_000).to_string();
    for (name, expr) in FAULT_RULES {
        let v = server.get_json("/loki/api/v1/query", &[("query", expr), ("time", &time)]);
        for r in v["data"]["result"].as_array().expect("a vector") {
            let value: f64 = r["value"][1]
                .as_str()
                .expect("value")
                .parse()
                .expect("number");
            out.insert(
                series_key(name, r["metric"].as_object().expect("labels")),
                value,
            );
        }
    }
    out
}

/// Every sample Prometheus holds of the fault rules: `t_ms` → series → value.
fn fault_stored(
    prom: &External,
) -> std::collections::BTreeMap<i64, std::collections::BTreeMap<String, f64>> {
    let v = prom.get_json(
        "/api/v1/query",
        &[("query", r#"{__name__=~"fault:.+"}[30m]"#)],
    );
    let mut out: std::collections::BTreeMap<i64, std::collections::BTreeMap<String, f64>> =
        Default::default();
    for s in v["data"]["result"].as_array().expect("a matrix") {
        let labels = s["metric"].as_object().expect("labels");
        let name = labels["__name__"].as_str().expect("name");
        let key = series_key(name, labels);
        for pair in s["values"].as_array().expect("values") {
            let t_ms = (pair[0].as_f64().expect("time") * 1e3).round() as i64;
            let value: f64 = pair[1].as_str().expect("value").parse().expect("number");
            assert!(
                out.entry(t_ms)
                    .or_default()
                    .insert(key.clone(), value)
                    .is_none(),
                "{key} twice at {t_ms}"
            );
        }
    }
    out
}

/// The evaluations whose samples were logged durably (fsynced), from the
/// server's debug lines `remote write: samples logged … t_ms=…`.
fn fault_logged(log: &Path) -> std::collections::BTreeSet<i64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("remote write: samples logged"))
        .map(|l| {
            let at = l.find("t_ms=").expect("t_ms field") + 5;
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
                .expect("t_ms value")
        })
        .collect()
}

#[test]
fn sigkill_during_evaluation_and_remote_write_loses_no_logged_sample() {
    // A sample counts as evaluated once it is in the remote-write log,
    // fsynced: the server says so in a debug line right after the fsync.
    // The server is killed (SIGKILL) eight times at different moments —
    // evaluating and sending normally, with Prometheus down (its queue
    // filling), while it resends the backlog of earlier runs — and each
    // time started again on the same data directory. At the end every
    // logged evaluation's samples must be in Prometheus with the value of
    // the instant query at that time; any other sample there must be one of
    // an evaluation killed between its fsync and its debug line (at most one
    // per kill), with the right value too. Prometheus keeps one sample per
    // series and time: a sample sent twice (the batch in flight at a kill)
    // is only accepted again if identical.
    let t0 = Instant::now();
    let prom_port = free_port();
    let prom_dir = tempfile::tempdir().expect("tempdir");
    let mut prom = Some(prometheus_in(prom_port, prom_dir.path()));
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    let mut text = String::from("groups:\n  - name: fault\n    interval: 1s\n    rules:\n");
    for (name, expr) in FAULT_RULES {
        text.push_str(&format!("      - record: {name}\n        expr: '{expr}'\n"));
    }
    write_rules(&rules, "faults", &text);
    let log = tmp.path().join("server.log");
    let rules_arg = format!("--rules-dir={}", rules.display());
    let rw_arg = format!("--remote-write-url=http://127.0.0.1:{prom_port}/api/v1/write");
    let mut args = vec![
        rules_arg.as_str(),
        rw_arg.as_str(),
        "--log=warn,runakefli_ruler::remote_write=debug",
    ];
    args.extend_from_slice(AS_PUSHED);
    let mut server = TestServer::start_logging(&args, Some(&log));

    // Lines every 100 ms over the last four minutes for three apps: the
    // rules' windows slide over them, so every evaluation's values differ.
    let now = now_ns();
    let streams: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|app| {
            let values: Vec<Value> = (0..2400i64)
                .map(|i| {
                    serde_json::json!([(now - 240_000_000_000 + i * 100_000_000).to_string(), "x"])
                })
                .collect();
            serde_json::json!({"stream": {"job": "fault", "app": app}, "values": values})
        })
        .collect();
    server.push_json(&serde_json::json!({ "streams": streams }));

    let ms = Duration::from_millis;
    let mut kills = 0;
    let mut kill_after = |server: &mut TestServer, wait: Duration| {
        std::thread::sleep(wait);
        server.kill9();
        kills += 1;
    };
    // Receiver up: killed while evaluating and sending.
    kill_after(&mut server, ms(3300));
    server.start_again();
    kill_after(&mut server, ms(2450));
    // Receiver down: the queue (and its log) fills, and is killed full.
    prom.take().expect("prometheus").stop();
    let down_from = now_ns() / 1_000_000;
    server.start_again();
    kill_after(&mut server, ms(3700));
    server.start_again();
    kill_after(&mut server, ms(2200));
    let down_until = now_ns() / 1_000_000;
    // Receiver back: killed while the backlog is resent, and after.
    prom = Some(prometheus_in(prom_port, prom_dir.path()));
    server.start_again();
    kill_after(&mut server, ms(150));
    server.start_again();
    kill_after(&mut server, ms(600));
    server.start_again();
    kill_after(&mut server, ms(1900));
    server.start_again();
    kill_after(&mut server, ms(1250));
    // A last run sends what is left; stopping it cleanly sends the rest.
    server.start_again();
    std::thread::sleep(ms(2500));
    server.stop();
    let prom = prom.expect("prometheus");

    let logged = fault_logged(&log);
    let stored = fault_stored(&prom);
    server.start_again();
    assert!(
        logged
            .iter()
            .filter(|t| (down_from..down_until).contains(*t))
            .count()
            >= 3,
        "evaluations while Prometheus was down: {logged:?} ({down_from}..{down_until})"
    );
    let mut missing = Vec::new();
    for &t in &logged {
        let want = fault_expected(&server, t);
        assert!(!want.is_empty(), "the rules have samples at {t}");
        if stored.get(&t) != Some(&want) {
            missing.push(format!("{t}: want {want:?}, stored {:?}", stored.get(&t)));
        }
    }
    assert!(
        missing.is_empty(),
        "logged evaluations not in Prometheus as evaluated:\n{}",
        missing.join("\n")
    );
    let unlogged: Vec<i64> = stored
        .keys()
        .copied()
        .filter(|t| !logged.contains(t))
        .collect();
    // The group's evaluations fall at one place in its 1 s interval
    // (its slot offset, a whole number of milliseconds).
    let slot = logged.iter().next().map_or(0, |t| t.rem_euclid(1000));
    assert!(
        logged.iter().all(|t| t.rem_euclid(1000) == slot),
        "evaluation times off the group's slots: {logged:?}"
    );
    for &t in &unlogged {
        assert_eq!(t.rem_euclid(1000), slot, "{t}: not an evaluation time");
        assert_eq!(
            stored[&t],
            fault_expected(&server, t),
            "unlogged samples at {t}"
        );
    }
    assert!(
        unlogged.len() <= kills,
        "{} evaluations in Prometheus not logged, {kills} kills: {unlogged:?}",
        unlogged.len()
    );
    eprintln!(
        "fault test: {} evaluations logged and in Prometheus ({} while it was down), {} more killed between fsync and log line, {kills} kills, {:.1} s",
        logged.len(),
        logged.iter().filter(|t| (down_from..down_until).contains(*t)).count(),
        unlogged.len(),
        t0.elapsed().as_secs_f64()
    );
}

const FIRING_RULES: &str = r#"
groups:
  - name: always
    interval: 1s
    rules:
      - alert: CheckoutSeen
        expr: sum by (app) (count_over_time({app="checkout"}[30m])) > 0
        for: 1s
        labels:
          severity: info
        annotations:
          summary: "{{ $value }} checkout lines"
"#;

/// The alert `CheckoutSeen` as an Alertmanager holds it, if it does.
fn checkout_seen(am: &External) -> Option<Value> {
    let v = am.get_json("/api/v2/alerts", &[]);
    v.as_array()?
        .iter()
        .find(|x| x["labels"]["alertname"] == "CheckoutSeen")
        .cloned()
}

/// Seconds since the epoch of an RFC 3339 time as Alertmanager writes it.
fn rfc3339_secs(s: &str) -> f64 {
    let out = Command::new("date")
        .args(["-u", "-d", s, "+%s.%N"])
        .output()
        .expect("date");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("seconds")
}

#[test]
fn an_alert_arrives_after_alertmanager_was_down_for_two_minutes() {
    // Alertmanager is down (nothing listens on its port) when the alert
    // starts firing and for two minutes after; every send fails. Once it
    // is up, the next resend (here every 5 s; default 1 m) delivers the
    // alert, with the time it started firing.
    let t0 = Instant::now();
    let port = free_port();
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(&rules, "shop", FIRING_RULES);
    let rules_arg = format!("--rules-dir={}", rules.display());
    let am_url = format!("http://127.0.0.1:{port}");
    let am_arg = format!("--alertmanager-url={am_url}");
    let mut args = vec![
        rules_arg.as_str(),
        am_arg.as_str(),
        "--ruler-resend-delay=5s",
    ];
    args.extend_from_slice(AS_PUSHED);
    let server = TestServer::start_with(&args);
    push_checkout(&server, &["a", "b"]);
    let fired = eventually(15, "the alert to fire", || {
        let v = server.get_json("/prometheus/api/v1/alerts", &[]);
        v["data"]["alerts"]
            .as_array()
            .and_then(|a| a.first().cloned())
            .filter(|a| a["state"] == "firing")
    });
    let down_since = Instant::now();
    std::thread::sleep(Duration::from_secs(120).saturating_sub(down_since.elapsed()));
    let (_, metrics) = server.get("/metrics", &[]);
    let errors = metric(
        &metrics,
        &format!(
            "prometheus_notifications_errors_total{{alertmanager=\"{am_url}/api/v2/alerts\"}}"
        ),
    );
    // Sent at firing and every 5 s since: about 24 failed sends.
    assert!(errors >= 10.0, "{errors} failed sends while down");
    let down_for = down_since.elapsed();
    let up_at = now_ns() as f64 / 1e9;
    let am = alertmanager_on(port);
    let alert = eventually(20, "the alert at Alertmanager after its outage", || {
        checkout_seen(&am)
    });
    assert_eq!(alert["labels"]["severity"], "info");
    assert_eq!(alert["labels"]["app"], "checkout");
    assert_eq!(alert["annotations"]["summary"], "2 checkout lines");
    assert_eq!(alert["status"]["state"], "active");
    // It started firing before Alertmanager came up, two minutes earlier.
    let starts = rfc3339_secs(alert["startsAt"].as_str().expect("startsAt"));
    assert!(starts < up_at - 115.0, "startsAt {starts}, up at {up_at}");
    assert_eq!(fired["state"], "firing");
    let (_, metrics) = server.get("/metrics", &[]);
    let sent = metric(
        &metrics,
        &format!("prometheus_notifications_sent_total{{alertmanager=\"{am_url}/api/v2/alerts\"}}"),
    );
    assert!(sent >= 1.0, "{sent}");
    eprintln!(
        "alertmanager outage test: down {:.0} s after the alert fired, the alert there {:.1} s after it came up, {:.1} s in all",
        down_for.as_secs_f64(),
        now_ns() as f64 / 1e9 - up_at,
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn every_alertmanager_gets_every_alert() {
    // Three URLs — one flag, then a comma-separated list with one where
    // nothing listens: the two real Alertmanagers both get the alert
    // (with the external labels it lacks) and its resolution, the dead one
    // delays neither.
    let a = alertmanager();
    let b = alertmanager();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(&rules, "shop", &FIRING_RULES.replace("[30m]", "[10s]"));
    let rules_arg = format!("--rules-dir={}", rules.display());
    let first = format!("--alertmanager-url={}", a.base);
    let more = format!("--alertmanager-url={dead},{}", b.base);
    let mut args = vec![
        rules_arg.as_str(),
        first.as_str(),
        more.as_str(),
        "--ruler-resend-delay=30s",
        "--ruler-external-labels=cluster=eu-1,severity=ignored",
    ];
    args.extend_from_slice(AS_PUSHED);
    let server = TestServer::start_with(&args);
    push_checkout(&server, &["a", "b", "c"]);
    for am in [&a, &b] {
        let alert = eventually(20, "the alert at each Alertmanager", || checkout_seen(am));
        // The external label it lacked added; its own severity kept.
        assert_eq!(alert["labels"]["cluster"], "eu-1");
        assert_eq!(alert["labels"]["severity"], "info");
        assert_eq!(alert["annotations"]["summary"], "3 checkout lines");
    }
    // The lines leave the 10 s window: both learn of the resolution long
    // before the firing alert's endsAt (4 × 30 s).
    for am in [&a, &b] {
        eventually(25, "the resolution at each Alertmanager", || {
            checkout_seen(am).is_none().then_some(())
        });
    }
    let (_, metrics) = server.get("/metrics", &[]);
    for base in [&a.base, &b.base] {
        let sent = metric(
            &metrics,
            &format!(
                "prometheus_notifications_sent_total{{alertmanager=\"{base}/api/v2/alerts\"}}"
            ),
        );
        assert!(sent >= 2.0, "{base}: {sent}");
    }
    assert_eq!(
        metric(
            &metrics,
            "prometheus_notifications_alertmanagers_discovered"
        ),
        3.0
    );
    let failed = metric(
        &metrics,
        &format!("prometheus_notifications_errors_total{{alertmanager=\"{dead}/api/v2/alerts\"}}"),
    );
    assert!(failed >= 1.0, "{failed}");
}

/// Remote-writes `samples` of one series `x:count` to Prometheus as one
/// request; its status.
fn remote_write(prom: &External, samples: &[(i64, f64)]) -> u16 {
    let samples: Vec<runakefli_ruler::sample::RecordedSample> = samples
        .iter()
        .map(|&(t_ms, value)| runakefli_ruler::sample::RecordedSample {
            tenant: "fake".into(),
            labels: vec![("__name__".into(), "x:count".into())],
            t_ms,
            value,
        })
        .collect();
    let body = runakefli_ruler::remote_write::encode(&samples);
    match ureq::post(&format!("{}/api/v1/write", prom.base))
        .set("Content-Type", "application/x-protobuf")
        .set("Content-Encoding", "snappy")
        .set("X-Prometheus-Remote-Write-Version", "0.1.0")
        .send_bytes(&body)
    {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(code, _)) => code,
        Err(e) => panic!("remote write: {e}"),
    }
}

#[test]
fn a_batch_resent_after_a_crash_gets_its_unsent_samples_into_prometheus() {
    // The state a SIGKILL can leave (in a window too narrow for the kill
    // test to hit): the remote-write log holds samples Prometheus already
    // took — the kill came between its answer and the log's
    // acknowledgement — followed by one it never got.
    let prom = prometheus();
    let t = (now_ns() / 1_000_000_000 - 30) * 1000;
    assert_eq!(remote_write(&prom, &[(t, 1.0), (t + 1000, 2.0)]), 204);
    // Prometheus 2.42 refuses the three in one request, whole: the first
    // is out of order now. Sent so, the third would be lost.
    assert_eq!(
        remote_write(&prom, &[(t, 1.0), (t + 1000, 2.0), (t + 2000, 3.0)]),
        400
    );
    let stored = || prom_samples(&prom, "x:count[5m]");
    assert_eq!(
        stored(),
        [(t as f64 / 1e3, 1.0), ((t + 1000) as f64 / 1e3, 2.0)]
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let rules = tmp.path().join("rules");
    std::fs::create_dir_all(&rules).expect("mkdir");
    {
        let (mut log, _) =
            runakefli_ruler::sample_log::SampleLog::open(&data.join("ruler/remote-write"))
                .expect("log");
        let samples = [(t, 1.0), (t + 1000, 2.0), (t + 2000, 3.0)]
            .iter()
            .map(|&(t_ms, value)| runakefli_ruler::sample::RecordedSample {
                tenant: "fake".into(),
                labels: vec![("__name__".into(), "x:count".into())],
                t_ms,
                value,
            })
            .collect();
        log.append(samples).1.expect("logged");
    }
    let rules_arg = format!("--rules-dir={}", rules.display());
    let rw_arg = format!("--remote-write-url={}/api/v1/write", prom.base);
    let server = TestServer::start_on(&data, &[rules_arg.as_str(), rw_arg.as_str()]);
    let got = eventually(15, "the unsent sample in Prometheus", || {
        let s = stored();
        (s.len() == 3).then_some(s)
    });
    assert_eq!(
        got,
        [
            (t as f64 / 1e3, 1.0),
            ((t + 1000) as f64 / 1e3, 2.0),
            ((t + 2000) as f64 / 1e3, 3.0)
        ]
    );
    // Only the out-of-order first sample was refused.
    let (_, metrics) = server.get("/metrics", &[]);
    assert_eq!(
        metric(
            &metrics,
            "runakefli_ruler_remote_write_samples_failed_total"
        ),
        1.0
    );
}

/// Checks that `ours` has every member of `loki` with the same JSON type, at
/// every level; `labels` and `annotations` are maps of strings whatever their
/// names; an array's elements are matched by their `type` member when they
/// have one (alerting and recording rules sit in one array).
fn same_shape(loki: &Value, ours: &Value, at: &str, problems: &mut Vec<String>) {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if kind(loki) != kind(ours) {
        problems.push(format!(
            "{at}: Loki has {}, ours {}",
            kind(loki),
            kind(ours)
        ));
        return;
    }
    match (loki, ours) {
        (Value::Object(l), Value::Object(o)) => {
            for (k, lv) in l {
                let path = format!("{at}.{k}");
                match o.get(k) {
                    None => problems.push(format!("{path}: missing")),
                    Some(ov) if k == "labels" || k == "annotations" => match ov.as_object() {
                        Some(m) if m.values().all(Value::is_string) => {}
                        _ => problems.push(format!("{path}: not an object of strings: {ov}")),
                    },
                    Some(ov) => same_shape(lv, ov, &path, problems),
                }
            }
        }
        (Value::Array(l), Value::Array(o)) => {
            for (i, lv) in l.iter().enumerate() {
                let path = format!("{at}[{i}]");
                let twin = o
                    .iter()
                    .find(|ov| ov.get("type") == lv.get("type"))
                    .or(o.first());
                match twin {
                    Some(ov) => same_shape(lv, ov, &path, problems),
                    None => problems.push(format!("{path}: ours is empty")),
                }
            }
        }
        _ => {}
    }
}

const SHAPE_RULES: &str = r#"
groups:
  - name: checkout
    interval: 1s
    rules:
      - alert: Checkout5xx
        expr: sum by (app) (count_over_time({app="checkout"} | json | status >= 500 [8s])) > 0
        for: 1s
        labels:
          severity: page
        annotations:
          summary: checkout failing
      - record: checkout:lines:count8s
        expr: sum by (app) (count_over_time({app="checkout"}[8s]))
        labels:
          source: runakefli
"#;

/// Grafana reads a Loki data source's rules and alerts from Loki's
/// Prometheus-format answers: ours have every member of Loki's
/// (`ruler_shapes/`, written from Loki's ruler API types) with the same
/// JSON types, for a firing alerting rule and a recording rule.
#[test]
fn prometheus_rules_answer_has_lokis_shape() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules");
    write_rules(&rules, "shop", SHAPE_RULES);
    let rules_arg = format!("--rules-dir={}", rules.display());
    let mut args = vec![rules_arg.as_str()];
    args.extend_from_slice(AS_PUSHED);
    let server = TestServer::start_with(&args);
    push_checkout(&server, &[r#"{"status":503}"#, r#"{"status":200}"#]);
    eventually(20, "the alert to fire", || {
        let v = server.get_json("/prometheus/api/v1/alerts", &[]);
        (v["data"]["alerts"][0]["state"] == "firing").then_some(())
    });
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ruler_shapes");
    for (path, file) in [
        ("/prometheus/api/v1/rules", "loki_prometheus_rules.json"),
        ("/prometheus/api/v1/alerts", "loki_prometheus_alerts.json"),
    ] {
        let loki: Value =
            serde_json::from_slice(&std::fs::read(fixtures.join(file)).expect("fixture"))
                .expect("fixture JSON");
        let ours = server.get_json(path, &[]);
        let mut problems = Vec::new();
        same_shape(&loki, &ours, "", &mut problems);
        assert!(problems.is_empty(), "{path}: {problems:#?}\nours: {ours:#}");
    }
}
