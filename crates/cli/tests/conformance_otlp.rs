//! Golden test: replays `testdata/conformance-otlp` (OTLP/HTTP export
//! bodies and Loki's answers to queries over them) against the real server:
//! every request of `requests.jsonl` POSTed to `/otlp/v1/logs` in order (204
//! expected), then every case of `cases.jsonl` and of `categorized.jsonl`
//! (sent with `X-Loki-Response-Encoding-Flags: categorize-labels`),
//! compared by the corpus rules (`common/corpus.rs`).
//!
//! Every case must pass unless the "OTLP cases that do not match" section of
//! `docs/conformance.md` lists its id with a reason, on the embedded store
//! and on ClickHouse (`--backend clickhouse`).
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;
#[path = "common/corpus.rs"]
mod corpus;
#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use common::TestServer;

/// The heading of the list of known failures in docs/conformance.md.
const SECTION: &str = "## OTLP cases that do not match";

#[test]
fn otlp_conformance_corpus() {
    run_corpus(&[]);
}

/// The same corpus with `--backend clickhouse` on the chdb engine (fails
/// naming `.ci/setup-clients.sh chdb` when chdb-core is missing): the same
/// cases must pass, with the same exceptions.
#[test]
fn otlp_conformance_corpus_on_clickhouse() {
    let args = front::serve_args(&format!("otlp_{}", std::process::id()));
    run_corpus(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

fn run_corpus(extra: &[&str]) {
    let dir = corpus::workspace_path("testdata/conformance-otlp");
    assert!(
        dir.join("cases.jsonl").exists(),
        "OTLP corpus missing at {}",
        dir.display()
    );
    // Recorded with Loki's defaults for otlp_config, discover_service_name,
    // discover_log_levels and log_level_fields: the server's defaults too
    // (the OTLP mapping has no settings of its own).
    let server = TestServer::start_with(extra);
    let requests = corpus::read_jsonl(&dir.join("requests.jsonl"));
    assert_eq!(requests.len(), 10, "requests.jsonl");
    for r in &requests {
        let file = r["file"].as_str().unwrap();
        let content_type = if file.ends_with(".json") {
            "application/json"
        } else {
            "application/x-protobuf"
        };
        assert_eq!(r["content_type"], content_type, "{file}");
        let body = std::fs::read(dir.join(file)).unwrap();
        let (status, text) =
            server.post(r["endpoint"].as_str().unwrap(), content_type, None, &body);
        assert_eq!(
            status,
            r["status"].as_u64().unwrap() as u16,
            "POST {file}: {text}"
        );
        assert_eq!(text, r["body"].as_str().unwrap(), "POST {file}");
    }
    corpus::wait_for_count(
        &server,
        r#"sum(count_over_time({service_name=~".+"}[10m]))"#,
        "2026-11-29T02:10:00Z",
        36,
    );
    let mut cases = corpus::read_jsonl(&dir.join("cases.jsonl"));
    assert_eq!(cases.len(), 56, "cases.jsonl");
    let categorized = corpus::read_jsonl(&dir.join("categorized.jsonl"));
    assert_eq!(categorized.len(), 3, "categorized.jsonl");
    cases.extend(categorized);
    corpus::replay(
        &server,
        "otlp conformance",
        &cases,
        &corpus::listed_exceptions(SECTION),
    );
}
