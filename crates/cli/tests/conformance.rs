//! Golden test: replays testdata/conformance (answers recorded from a real Loki)
//! against the real server and compares with the rules of its README
//! (`common/corpus.rs`).
//!
//! Every case must pass unless `docs/conformance.md` lists its id with a reason,
//! on the embedded store and on ClickHouse (`--backend clickhouse`).
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
const SECTION: &str = "## Cases that do not match, with the reason";

#[test]
fn loki_conformance_corpus() {
    run_corpus(&[]);
}

/// The same corpus with `--backend clickhouse` on the chdb engine (fails
/// naming `.ci/setup-clients.sh chdb` when chdb-core is missing): the same
/// cases must pass, with the same exceptions.
#[test]
fn loki_conformance_corpus_on_clickhouse() {
    let args = front::serve_args(&format!("conformance_{}", std::process::id()));
    run_corpus(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

fn run_corpus(extra: &[&str]) {
    let dir = corpus::workspace_path("testdata/conformance");
    assert!(
        dir.join("cases.jsonl").exists(),
        "conformance corpus missing at {}",
        dir.display()
    );
    // The corpus was recorded with Loki's ingestion-time extras off (its
    // README: "no service_name discovery, no detected_level metadata").
    let server = TestServer::start_with(
        &[
            "--discover-service-name=false",
            "--discover-log-levels=false",
            "--max-entries-per-query",
            "10000",
            "--max-query-series",
            "10000",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .collect::<Vec<_>>(),
    );
    server.push_json_files(&dir.join("data"));
    corpus::wait_for_count(
        &server,
        r#"sum(count_over_time({app=~".+"}[2h]))"#,
        "2026-11-29T01:00:00Z",
        20280,
    );
    let cases = corpus::read_jsonl(&dir.join("cases.jsonl"));
    corpus::replay(
        &server,
        "conformance",
        &cases,
        &corpus::listed_exceptions(SECTION),
    );
}
