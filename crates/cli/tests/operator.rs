//! What an operator sees: the start-up lines (what was recovered), plain
//! text without colour codes when not on a terminal, or JSON lines.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the server with stdout piped; returns it and its log lines up to
/// the "listening" one.
fn start(data: &std::path::Path, extra: &[&str]) -> (Child, String, Vec<String>) {
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_runakefli"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data)
        .args(extra)
        .env("RUNAKEFLI_LOG", "info")
        .env_remove("RUNAKEFLI_LOG_FORMAT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "no listening line: {lines:?}");
        let mut l = String::new();
        assert!(
            out.read_line(&mut l).unwrap() > 0,
            "server exited: {lines:?}"
        );
        let done = l.contains("listening");
        lines.push(l.trim_end().to_string());
        if done {
            break;
        }
    }
    // Keep draining so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    (child, format!("http://127.0.0.1:{port}"), lines)
}

fn stop(mut child: Child) {
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait().unwrap();
}

#[test]
fn start_up_lines_say_what_was_recovered_in_text_or_json() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (child, base, lines) = start(&data, &[]);
    for l in &lines {
        assert!(!l.contains('\u{1b}'), "colour codes off a terminal: {l:?}");
    }
    let opened = lines.iter().find(|l| l.contains("storage opened")).unwrap();
    assert!(
        opened.contains("WAL replayed: 0 records, 0 lines (nothing was left only in the WAL"),
        "{opened}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let body = format!(
        r#"{{"streams":[{{"stream":{{"app":"a"}},"values":[["{now}","one"],["{now}","two"]]}}]}}"#
    );
    let r = ureq::post(&format!("{base}/loki/api/v1/push"))
        .set("Content-Type", "application/json")
        .send_string(&body)
        .unwrap();
    assert_eq!(r.status(), 204);
    // SIGKILL: the two lines are only in the WAL.
    let mut child = child;
    child.kill().unwrap();
    child.wait().unwrap();
    let (child, _, lines) = start(&data, &["--log-format", "json"]);
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect();
    let opened = events
        .iter()
        .find(|e| {
            e["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("storage opened"))
        })
        .expect("storage opened event");
    assert_eq!(opened["fields"]["wal_lines"], 2, "{opened}");
    assert_eq!(opened["fields"]["wal_records"], 1, "{opened}");
    assert!(opened["fields"]["message"]
        .as_str()
        .unwrap()
        .contains("WAL replayed: 1 records, 2 lines;"));
    assert_eq!(opened["level"], "INFO");
    stop(child);
    // After a clean stop everything is in parts, and the line says so.
    let (child, _, lines) = start(&data, &[]);
    let opened = lines.iter().find(|l| l.contains("storage opened")).unwrap();
    assert!(opened.contains("WAL replayed: 0 records, 0 lines (nothing was left only in the WAL: a clean shutdown); 2 lines in 1 parts of 1 tenants"), "{opened}");
    stop(child);
}
