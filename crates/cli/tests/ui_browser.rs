//! The built-in web UI (issue 47) end to end in a real browser: the real
//! `runakefli` binary on a loopback port, a few hundred lines pushed, then
//! Debian's headless Chromium driven by Playwright for Python
//! (`tests/ui/browser.py`) loads the page and uses it as a person would:
//! completion, a log query, a line's fields, its context, infinite scroll,
//! a histogram zoom, a metric chart and table, a syntax error, the live
//! tail, patterns, the theme; and, behind `--auth-file`, the login form
//! (user and password; a bearer token, with the tail opened by a ticket)
//! and the tenant picker.
//!
//! Chromium (`/usr/bin/chromium`, or `RUNAKEFLI_CHROMIUM`) and the
//! virtualenv `.venv-ui` come from `.ci/setup-ui.sh`, which the first test
//! runs when either is missing; when it cannot (not root, no network) the
//! tests fail saying so (they never pass without a browser).
//! `RUNAKEFLI_UI_SCREENSHOTS=<dir>` keeps the screenshots (docs/ui/ holds a
//! set made so).
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The virtualenv's python, after checking that it and Chromium are there.
/// On first use without them, `.ci/setup-ui.sh` runs once (as the clients'
/// tests set theirs up); when they are still missing, the test fails naming
/// that script.
fn browser_python() -> PathBuf {
    static SETUP: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut tried = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if !*tried && !browser_missing().is_empty() {
        *tried = true;
        let script = workspace_root().join(".ci/setup-ui.sh");
        eprintln!("setting up the browser test: {}", script.display());
        match Command::new("bash").arg(&script).output() {
            Ok(o) if !o.status.success() => eprintln!(
                ".ci/setup-ui.sh failed ({}):\n{}{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Ok(_) => {}
            Err(e) => eprintln!("cannot run .ci/setup-ui.sh: {e}"),
        }
    }
    drop(tried);
    let missing = browser_missing();
    let root = workspace_root();
    assert!(
        missing.is_empty(),
        "the browser test needs {}: run\n    cd {} && .ci/setup-ui.sh\n\
         (apt-get install chromium as root, and a virtualenv from PyPI; no browser download)",
        missing.join(" and "),
        root.display()
    );
    root.join(".venv-ui/bin/python")
}

/// What the browser test lacks: Chromium, the virtualenv with its pins.
fn browser_missing() -> Vec<String> {
    let root = workspace_root();
    let chromium = std::env::var_os("RUNAKEFLI_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let python = root.join(".venv-ui/bin/python");
    let pins = std::fs::read(root.join(".ci/ui-requirements.txt")).unwrap();
    let stamp = std::fs::read(root.join(".venv-ui/installed-requirements.txt")).ok();
    let mut missing = Vec::new();
    if !chromium.exists() {
        missing.push(format!("Chromium ({})", chromium.display()));
    }
    if !python.exists() || stamp.as_deref() != Some(pins.as_slice()) {
        missing.push("Playwright for Python (.venv-ui, pinned in .ci/ui-requirements.txt)".into());
    }
    missing
}

/// Runs `tests/ui/browser.py` with `job`; returns what it saw, failing on a failed step.
fn run_browser(job: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/browser.py");
    let mut child = Command::new(browser_python())
        .arg(&script)
        .env("RUNAKEFLI_CHROMIUM", chromium_path())
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
        "browser.py failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "browser.py output: {e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        v.get("failed").is_none(),
        "{}\npage: {}\nconsole: {}",
        v["failed"],
        v["failed_state"],
        v["console_errors"]
    );
    // The browser logs every non-2xx fetch as "Failed to load resource";
    // the syntax-error step makes one on purpose. Nothing else may fail.
    let errors: Vec<&str> = v["console_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|e| !e.starts_with("Failed to load resource"))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    v
}

fn chromium_path() -> PathBuf {
    std::env::var_os("RUNAKEFLI_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Where screenshots go: `RUNAKEFLI_UI_SCREENSHOTS` (relative to the
/// workspace root), else a temporary directory.
fn screenshot_dir(tmp: &tempfile::TempDir) -> PathBuf {
    match std::env::var_os("RUNAKEFLI_UI_SCREENSHOTS") {
        Some(d) => {
            let d = workspace_root().join(d);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::canonicalize(d).unwrap()
        }
        None => tmp.path().to_path_buf(),
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

const LEVELS: [&str; 4] = ["info", "info", "warn", "error"];

/// Pushes `n` JSON lines of service `shop` over the last 50 minutes, in
/// two streams (hosts a and b); returns their timestamps.
fn push_shop(server: &TestServer, tenant: Option<&str>, n: usize, tag: &str) -> Vec<i64> {
    let end = now_ns() - 60_000_000_000;
    let span = 50 * 60 * 1_000_000_000_i64;
    let mut streams: Vec<(String, Vec<Value>)> = vec![("a".into(), vec![]), ("b".into(), vec![])];
    let mut stamps = Vec::new();
    for i in 0..n {
        let ts = end - span + (i as i64) * span / n as i64 + (i as i64 % 7);
        stamps.push(ts);
        let level = LEVELS[i % LEVELS.len()];
        let line = json!({"level": level, "msg": format!("{tag} order {i} processed"), "order": i, "user": format!("u{}", i % 5)});
        streams[i % 2]
            .1
            .push(json!([ts.to_string(), line.to_string()]));
    }
    let body = json!({"streams": streams.into_iter().map(|(host, values)| json!({
        "stream": {"service_name": "shop", "host": host},
        "values": values,
    })).collect::<Vec<_>>()});
    let mut headers = vec![];
    if let Some(t) = tenant {
        headers.push(("X-Scope-OrgID", t));
    }
    let (status, text) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        &headers,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 204, "{text}");
    stamps.sort_unstable_by(|a, b| b.cmp(a));
    stamps
}

/// Pushes one `service_name="shop"` line two minutes old, sending `headers`
/// (credentials, tenant); the push must be accepted.
fn push_with(server: &TestServer, headers: &[(&str, &str)], line: &str) {
    let body = json!({"streams": [{"stream": {"service_name": "shop"},
        "values": [[(now_ns() - 120_000_000_000).to_string(), line]]}]});
    let (status, text) = server.post_with(
        "/loki/api/v1/push",
        "application/json",
        None,
        headers,
        body.to_string().as_bytes(),
    );
    assert_eq!(status, 204, "{text}");
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_page_queries_charts_tails_and_shows_errors() {
    let server = TestServer::start();
    let stamps = push_shop(&server, None, 600, "shop");
    let tmp = tempfile::tempdir().unwrap();
    let shots = screenshot_dir(&tmp);
    let v = run_browser(&json!({
        "url": server.base,
        "screenshots": shots,
        "service": "shop",
    }));
    let steps = strings(&v["steps"]);
    assert_eq!(
        steps,
        [
            "load",
            "completion",
            "logs",
            "fields",
            "context",
            "scroll",
            "zoom",
            "big_page",
            "metric",
            "table",
            "syntax_error",
            "cancel",
            "tail",
            "patterns",
            "theme"
        ]
    );
    assert_eq!(v["title"], "Rúnakefli");

    // Completion: labels, then values of the chosen label, then stages and parsed fields.
    let labels = strings(&v["label_completions"]);
    assert!(labels.contains(&"service_name".to_string()), "{labels:?}");
    assert!(labels.contains(&"host".to_string()), "{labels:?}");
    assert_eq!(strings(&v["value_completions"]), ["shop"]);
    let stages = strings(&v["stage_completions"]);
    for want in ["json", "logfmt", "msg", "order"] {
        assert!(stages.contains(&want.to_string()), "{want} in {stages:?}");
    }
    assert_eq!(v["editor_after_completion"], r#"{service_name="shop"} | "#);

    // The first page: the newest 100 lines, newest first, and a histogram.
    let first: Vec<i64> = strings(&v["first_page"])
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(first, stamps[..100], "newest first, limit 100");
    assert!(!v["bars"].as_array().unwrap().is_empty(), "histogram bars");
    assert_eq!(v["error_hidden_after_logs"], true);
    assert!(v["log_timing"]["shownMs"].as_f64().unwrap() > 0.0);

    // The newest line's fields: parsed from its JSON, and its stream labels.
    let fields: Vec<(String, String)> = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let line: Value = serde_json::from_str(v["first_line"].as_str().unwrap()).unwrap();
    let has = |k: &str, val: &str| fields.iter().any(|(a, b)| a == k && b == val);
    assert!(has("msg", line["msg"].as_str().unwrap()), "{fields:?}");
    assert!(has("order", &line["order"].to_string()), "{fields:?}");
    assert!(has("service_name", "shop"), "{fields:?}");
    assert!(
        v["context_rows"].as_u64().unwrap() >= 10,
        "{}",
        v["context_rows"]
    );

    // Infinite scroll: every line once, newest first, then the end.
    let all: Vec<i64> = v["all_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(all, stamps, "all 600 lines, in order, no duplicates");
    assert_eq!(v["more_text"], "end of results");

    // Zoom: the range became the clicked bucket and only its lines are shown.
    let zoom = &v["zoom"];
    let from = zoom["from"].as_str().unwrap();
    assert!(from.ends_with('Z') && from != "now-1h", "{zoom}");
    let bar_ns = zoom["bar_start_ms"].as_i64().unwrap() * 1_000_000;
    let rows: Vec<i64> = strings(&zoom["rows"])
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert!(!rows.is_empty() && rows.len() < 600, "{zoom}");
    assert!(rows.iter().all(|&t| t >= bar_ns), "{zoom}");

    // A page of 600 lines: the first frame held a screenful of them (the
    // histogram and those rows are what "shown" times), the others were
    // appended after it, all in order; `j` went past the first screenful.
    let big = &v["big_page"];
    let t = &big["timing"];
    let first_rows = t["firstRows"].as_u64().unwrap();
    assert_eq!(t["rowsAtShown"].as_u64(), Some(first_rows), "{t}");
    assert_eq!(t["filled"], true, "the first rows fill the window: {t}");
    assert!((1..100).contains(&first_rows), "{t}");
    assert_eq!(t["lines"], 600, "{t}");
    assert!(
        t["allRowsMs"].as_f64().unwrap() >= t["renderMs"].as_f64().unwrap(),
        "{t}"
    );
    let rows: Vec<i64> = strings(&big["rows"])
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(rows, stamps, "all 600 rows, in order");
    assert_eq!(big["focused"], stamps[59].to_string(), "{big}");
    assert_eq!(big["focused_is_active"], true);

    // The metric query: one line per level, hover values, a table.
    let mut series = strings(&v["series"]);
    series.sort();
    assert_eq!(
        series,
        [
            r#"{level="error"}"#,
            r#"{level="info"}"#,
            r#"{level="warn"}"#
        ]
    );
    assert!(
        v["tooltip"].as_str().unwrap().contains("level="),
        "{}",
        v["tooltip"]
    );
    assert_eq!(v["table_rows"], 4, "a header and a row per series");

    // The syntax error: the API's message, its position marked in the editor.
    let err = &v["syntax_error"];
    let query = r#"{service_name="shop"} |= "x" | json | level=~"#;
    let (status, body) = server.get(
        "/loki/api/v1/query_range",
        &[("query", query), ("limit", "10")],
    );
    assert_eq!(status, 400);
    assert!(
        err["text"].as_str().unwrap().contains(body.trim()),
        "{err} vs {body}"
    );
    assert_eq!(err["line"], "1", "{err}");
    let col: u64 = err["col"].as_str().unwrap().parse().unwrap();
    assert_eq!(err["mark_offset"].as_u64().unwrap(), col - 1, "{err}");

    // Cancelled before its answer: no error, the Cancel button gone.
    assert_eq!(
        v["cancelled"],
        json!({"status": "cancelled", "cancel_hidden": true, "error_hidden": true})
    );

    // The tail showed the pushed lines; pausing held one back until resumed.
    assert!(v["tailed"].as_str().unwrap().starts_with("tailed line"));
    assert_eq!(v["paused_hidden"], true);
    assert_eq!(v["tail_dropped"], "0");

    // Patterns of the lines.
    let patterns = strings(&v["patterns"]);
    assert!(patterns.iter().any(|p| p.contains("order")), "{patterns:?}");
    let theme = strings(&v["theme"]);
    assert_ne!(theme[0], theme[1]);
    let shots_taken = strings(&v["screenshots"]);
    assert!(shots_taken.len() >= 10, "{shots_taken:?}");
    for s in &shots_taken {
        assert!(shots.join(s).metadata().unwrap().len() > 1000, "{s}");
    }
}

/// Runs `runakefli <args>` with `stdin`; returns (success, stdout).
fn runakefli(args: &[&str], stdin: &str) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runakefli"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_bearer_token_logs_in_through_the_form_queries_and_tails() {
    let token = runakefli_server::auth::secret::new_token();
    let file = format!(
        "tokens:\n  - name: browser\n    sha256: {}\n    tenants: [team-a]\n",
        runakefli_server::auth::secret::token_digest_hex(&token)
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.yaml");
    std::fs::write(&path, file).unwrap();
    let server = TestServer::start_with(&["--auth-file", path.to_str().unwrap()]);
    let bearer = format!("Bearer {token}");
    push_with(&server, &[("Authorization", &bearer)], "behind a token");
    let tmp = tempfile::tempdir().unwrap();
    let v = run_browser(&json!({
        "url": server.base,
        "screenshots": screenshot_dir(&tmp),
        "scenario": "token",
        "token": token,
        "tenant": "team-a",
    }));
    assert_eq!(
        strings(&v["steps"]),
        ["login_form", "token_query", "token_tail", "logout"]
    );
    assert_eq!(v["login_shown"], true);
    assert_eq!(v["stored"], bearer, "kept in sessionStorage");
    assert_eq!(v["local_storage_keys"], json!([]), "never in localStorage");
    assert_eq!(strings(&v["lines"]), ["behind a token"]);
    assert_eq!(v["error_hidden"], true);
    assert!(v["tailed"]
        .as_str()
        .unwrap()
        .starts_with("tailed with a ticket"));
    assert_eq!(v["stored_after_logout"], Value::Null, "forgotten");
}

#[test]
fn the_tenant_picker_offers_only_the_credentials_tenants() {
    let (ok, phc) = runakefli(&["auth", "hash-password"], "pw-alice\n");
    assert!(ok);
    let alice = phc.trim().to_string();
    let (ok, phc) = runakefli(&["auth", "hash-password"], "pw-bob\n");
    assert!(ok);
    let bob = phc.trim().to_string();
    let file = format!(
        "users:\n  - name: alice\n    password_hash: '{alice}'\n    tenants: [team-a, team-b]\n  \
         - name: bob\n    password_hash: '{bob}'\n    tenants: [team-b]\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("credentials.yaml");
    std::fs::write(&path, file).unwrap();
    let server = TestServer::start_with(&["--auth-file", path.to_str().unwrap()]);
    // Pushes as alice, once per tenant.
    let auth = format!("Basic {}", base64_encode(b"alice:pw-alice"));
    for tenant in ["team-a", "team-b"] {
        push_with(
            &server,
            &[("Authorization", &auth), ("X-Scope-OrgID", tenant)],
            &format!("secret of {tenant}"),
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let v = run_browser(&json!({
        "url": server.base,
        "screenshots": screenshot_dir(&tmp),
        "scenario": "tenants",
        "users": [
            {"user": "alice", "password": "pw-alice", "visits": ["team-a", "team-b"]},
            {"user": "bob", "password": "pw-bob", "visits": ["team-a"]},
        ],
    }));
    let alice_a = &v["seen"]["alice"]["team-a"];
    assert_eq!(alice_a["picker_visible"], true, "{v}");
    assert_eq!(strings(&alice_a["choices"]), ["team-a", "team-b"]);
    assert_eq!(alice_a["picker_value"], "team-a");
    assert_eq!(strings(&alice_a["lines"]), ["secret of team-a"]);
    let alice_b = &v["seen"]["alice"]["team-b"];
    assert_eq!(strings(&alice_b["lines"]), ["secret of team-b"], "{v}");
    // bob may use team-b only: asking for team-a picks team-b, and team-a's
    // line is never shown.
    let bob = &v["seen"]["bob"]["team-a"];
    assert_eq!(strings(&bob["choices"]), ["team-b"]);
    assert_eq!(bob["picker_value"], "team-b");
    assert_eq!(strings(&bob["lines"]), ["secret of team-b"]);
}

fn base64_encode(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
