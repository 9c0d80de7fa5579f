//! Golden test: replays `testdata/conformance-grafana` (the calls Grafana's
//! Loki data source and Logs Drilldown make, answers recorded from a real
//! Loki) against the real server, compared by the corpus's own checker
//! (`check.py`, its README's rules per endpoint).
//!
//! Every case must pass unless the "Grafana cases that do not match"
//! section of `docs/conformance.md` lists its id with a reason; a listed
//! case that passes is reported so the list only shrinks.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;
#[allow(dead_code)] // its exception list and wait only
#[path = "common/corpus.rs"]
mod corpus;
#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use common::TestServer;
use std::process::Command;

/// The heading of the list of known failures in docs/conformance.md.
const SECTION: &str = "## Grafana cases that do not match";

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
    let dir = corpus::workspace_path("testdata/conformance-grafana");
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
    corpus::wait_for_count(
        &server,
        r#"sum(count_over_time({service_name=~".+"}[2h]))"#,
        "2026-11-29T04:00:00Z",
        9700,
    );
    let out = Command::new("python3")
        .arg(dir.join("check.py"))
        .arg(&dir)
        .arg(&server.base)
        .args(["--pattern-wait", "0"])
        .output()
        .expect("python3 runs check.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let exceptions = corpus::listed_exceptions(SECTION);
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
