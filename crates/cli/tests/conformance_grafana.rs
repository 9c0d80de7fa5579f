//! Golden test: replays `testdata/conformance-grafana` (the calls Grafana's
//! Loki data source and Logs Drilldown make, answers recorded from a real
//! Loki) against the real server, compared by the corpus's own checker
//! (`check.py`, its README's rules per endpoint).
//!
//! Every case must pass unless the "Grafana cases that do not match"
//! section of `docs/conformance.md` lists its id with a reason; a listed
//! case that passes is reported so the list only shrinks.

mod common;
#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use common::TestServer;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance-grafana")
}

/// The heading of the list of known failures in docs/conformance.md.
const SECTION: &str = "## Grafana cases that do not match";

/// Case ids listed under [`SECTION`], each with a reason.
fn listed_exceptions() -> BTreeSet<String> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/conformance.md");
    let text = std::fs::read_to_string(doc).unwrap_or_default();
    let mut out = BTreeSet::new();
    let section = text
        .lines()
        .skip_while(|l| !l.starts_with(SECTION))
        .skip(1)
        .take_while(|l| !l.starts_with("## "));
    for line in section {
        if let Some(rest) = line.trim().strip_prefix("- `") {
            if let Some((id, reason)) = rest.split_once('`') {
                assert!(
                    reason.trim().len() > 3,
                    "docs/conformance.md: {id} needs a reason"
                );
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// Entries visible to `sum(count_over_time({service_name=~".+"}[2h]))` at 04:00.
fn visible(server: &TestServer) -> Option<u64> {
    let (status, body) = server.get(
        "/loki/api/v1/query",
        &[
            ("query", r#"sum(count_over_time({service_name=~".+"}[2h]))"#),
            ("time", "2026-11-29T04:00:00Z"),
        ],
    );
    if status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

#[test]
fn grafana_conformance_corpus() {
    run_corpus(&[]);
}

/// The same corpus with `--backend clickhouse` on the chdb engine (fails
/// naming `.ci/setup-clients.sh chdb` when chdb-core is missing).
#[test]
fn grafana_conformance_corpus_on_clickhouse() {
    let args = front::serve_args(&format!("grafana_{}", std::process::id()));
    run_corpus(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

fn run_corpus(extra: &[&str]) {
    let dir = corpus_dir();
    assert!(
        dir.join("cases.jsonl").exists(),
        "Grafana corpus missing at {}",
        dir.display()
    );
    // The limits the corpus was recorded with (its drilldown-limits answer).
    let mut args = vec![
        "--max-entries-per-query",
        "5000",
        "--max-query-series",
        "500",
    ];
    args.extend_from_slice(extra);
    let server = TestServer::start_with(&args);
    server.push_json_files(&dir.join("data"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while visible(&server) != Some(9700) {
        assert!(Instant::now() < deadline, "pushed entries not all visible");
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = Command::new("python3")
        .arg(dir.join("check.py"))
        .arg(&dir)
        .arg(&server.base)
        .args(["--pattern-wait", "0"])
        .output()
        .expect("python3 runs check.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let exceptions = listed_exceptions();
    let (mut passed, mut total) = (0, 0);
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    for line in stdout.lines() {
        if let Some(id) = line.strip_prefix("PASS ") {
            total += 1;
            passed += 1;
            if exceptions.contains(id) {
                fixed.push(id.to_string());
            }
        } else if let Some(rest) = line.strip_prefix("FAIL ") {
            total += 1;
            let id = rest.split(':').next().unwrap_or(rest);
            if !exceptions.contains(id) {
                unexpected.push(rest.to_string());
            }
        }
    }
    eprintln!(
        "grafana conformance: {passed} of {total} cases match Loki; {} listed in docs/conformance.md",
        exceptions.len()
    );
    if !fixed.is_empty() {
        eprintln!("listed in docs/conformance.md but passing now (remove them): {fixed:?}");
    }
    assert!(
        total >= 131,
        "check.py ran {total} cases:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        unexpected.is_empty(),
        "{} unlisted cases fail:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
