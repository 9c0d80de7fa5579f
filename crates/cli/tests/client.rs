//! `runakefli push`, `query`, `labels` and `series` end to end against the
//! real server.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::TestServer;
use serde_json::json;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs the binary with `args` (and `stdin`), returning (ok, stdout, stderr).
fn run(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runakefli"));
    c.args(args)
        .env_remove("LOKI_ADDR")
        .env_remove("LOKI_ORG_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).unwrap();
    }
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn ok(args: &[&str], stdin: Option<&str>) -> (String, String) {
    let (success, out, err) = run(args, stdin);
    assert!(success, "runakefli {args:?} failed: {err}");
    (out, err)
}

#[test]
fn push_then_query_labels_and_series() {
    let server = TestServer::start();
    let addr = server.base.as_str();
    let input: String = (0..2500).map(|i| format!("line {i}\n")).collect();
    let (_, err) = ok(
        &[
            "push",
            "--addr",
            addr,
            "--labels",
            r#"{app="import"}"#,
            "--batch-lines",
            "1000",
        ],
        Some(&input),
    );
    assert!(
        err.contains("pushed 2500 lines") && err.contains("in 3 requests"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (f1, f2) = (dir.path().join("a.log"), dir.path().join("b.log"));
    std::fs::write(&f1, "alpha 1\r\nalpha 2\n").unwrap();
    std::fs::write(&f2, "beta 1\n").unwrap();
    ok(
        &[
            "push",
            "--addr",
            addr,
            "--labels",
            r#"{app="files"}"#,
            "--file-label",
            "filename",
            "-q",
            f1.to_str().unwrap(),
            f2.to_str().unwrap(),
        ],
        None,
    );

    // Paginated: 2500 lines over pages of 700, newest first, none twice.
    let (out, _) = ok(
        &[
            "query",
            "--addr",
            addr,
            "--limit",
            "5000",
            "--batch",
            "700",
            "-o",
            "raw",
            "-q",
            r#"{app="import"}"#,
        ],
        None,
    );
    let want: Vec<String> = (0..2500).rev().map(|i| format!("line {i}")).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    // Forward as JSON lines.
    let (out, _) = ok(
        &[
            "query",
            "--addr",
            addr,
            "--limit",
            "5000",
            "--batch",
            "999",
            "--forward",
            "-o",
            "jsonl",
            r#"{app="import"}"#,
        ],
        None,
    );
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2500);
    assert_eq!(rows[0]["line"], "line 0");
    assert_eq!(rows[2499]["line"], "line 2499");
    // Loki's ingestion-time labels: service_name from `app`, detected_level metadata.
    assert_eq!(
        rows[0]["labels"],
        json!({"app": "import", "detected_level": "unknown", "service_name": "import"})
    );
    assert!(rows[0]["timestamp"].as_str().unwrap().ends_with('Z'));
    // The limit, with a note on stderr.
    let (out, err) = ok(
        &[
            "query",
            "--addr",
            addr,
            "--limit",
            "10",
            "-o",
            "raw",
            r#"{app="import"}"#,
        ],
        None,
    );
    assert_eq!(out.lines().count(), 10);
    assert_eq!(out.lines().next(), Some("line 2499"));
    assert!(err.contains("--limit"), "{err}");
    // Table: time, labels, line; CR stripped; file label added.
    let (out, _) = ok(
        &["query", "--addr", addr, "--forward", r#"{app="files"}"#],
        None,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].ends_with(&format!(
            "{{app=\"files\", detected_level=\"unknown\", filename=\"{}\", service_name=\"files\"}} alpha 1",
            f1.display()
        )),
        "{out}"
    );
    assert!(lines[2].ends_with("beta 1"), "{out}");
    // A metric query, instant and range.
    let (out, _) = ok(
        &[
            "query",
            "--addr",
            addr,
            "--instant",
            "-o",
            "raw",
            r#"sum(count_over_time({app="import"}[1h]))"#,
        ],
        None,
    );
    assert_eq!(out.trim(), "2500");
    let (out, _) = ok(
        &[
            "query",
            "--addr",
            addr,
            "--since",
            "10m",
            "--step",
            "1m",
            "-o",
            "jsonl",
            r#"sum(count_over_time({app=~"import|files"}[1h]))"#,
        ],
        None,
    );
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["value"], "2503", "{out}");
    // Labels, values, series.
    let (out, _) = ok(&["labels", "--addr", addr], None);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["app", "filename", "service_name"]
    );
    let (out, _) = ok(&["labels", "--addr", addr, "app"], None);
    assert_eq!(out.lines().collect::<Vec<_>>(), ["files", "import"]);
    let (out, _) = ok(&["series", "--addr", addr, r#"{app="files"}"#], None);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.contains(&format!("filename=\"{}\"", f2.display())),
        "{out}"
    );
    // Errors carry the server's message.
    let (success, _, err) = run(&["query", "--addr", addr, r#"{app="import""#], None);
    assert!(!success);
    assert!(
        err.contains("the server answered 400") && err.contains("parse error"),
        "{err}"
    );
}

#[test]
fn pages_that_split_equal_timestamps_lose_and_repeat_nothing() {
    let server = TestServer::start();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
        - 60_000_000_000;
    // 50 lines at one timestamp, 20 at the next.
    let values: Vec<_> = (0..70)
        .map(|i| json!([(now + i64::from(i >= 50)).to_string(), format!("same {i}")]))
        .collect();
    server.push_json(&json!({"streams":[{"stream":{"app":"ties"},"values":values}]}));
    for forward in [false, true] {
        let mut args = vec![
            "query",
            "--addr",
            &server.base,
            "--limit",
            "1000",
            "--batch",
            "20",
            "-o",
            "raw",
            "-q",
        ];
        if forward {
            args.push("--forward");
        }
        args.push(r#"{app="ties"}"#);
        let (out, _) = ok(&args, None);
        let mut got: Vec<&str> = out.lines().collect();
        assert_eq!(got.len(), 70, "forward={forward}: {out}");
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 70, "forward={forward}: duplicates");
    }
}
