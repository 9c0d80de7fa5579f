//! `runakefli bench clickhouse` end to end at a tiny size: the real binary
//! starts chdb behind its Python front, an embedded-store server and a
//! ClickHouse-backed one, pushes the same few thousand generated lines into
//! both and times the nine queries on both. The answers must agree and the
//! ClickHouse server's `/metrics` must show plans answered in SQL.
//!
//! Like the other ClickHouse tests, a missing `.venv-chdb` is first made by
//! `.ci/setup-clients.sh chdb` (the test front's harness does it); when that
//! fails, this test fails naming the script, and so does the bench.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[allow(dead_code)]
#[path = "../../clickhouse/tests/front/mod.rs"]
mod front;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runakefli"));
    // Where .venv-chdb is (unless RUNAKEFLI_CHDB_PYTHON says otherwise).
    c.current_dir(workspace_root())
        .arg("bench")
        .arg("clickhouse");
    c
}

#[test]
fn side_by_side_bench_runs_both_backends_and_their_answers_agree() {
    // Makes .venv-chdb when it is missing, or fails naming the setup.
    front::url("bench");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = bench()
        .args(["--lines", "3000", "--streams", "40", "--warm-runs", "1"])
        // A fixed hour (2026-10-01 11:00-12:00 UTC), so the data and the step
        // alignment, and with them the answers compared, are the same every run.
        .args(["--end-ns", "1790856000000000000"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench clickhouse failed:\n{stderr}\n{stdout}"
    );
    assert!(stdout.contains("| 9 | series |"), "{stdout}");
    assert!(stdout.contains("not a clickhouse-server"), "{stdout}");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let queries = report["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 9, "{report}");
    assert_eq!(report["mismatches"], 0, "{stdout}");
    for q in queries {
        for side in ["embedded", "clickhouse"] {
            assert_eq!(q[side]["outcome"], "answered", "{side}: {q}");
        }
        assert_eq!(q["answers"]["answers"], "same", "{q}");
        assert!(q["sql_per_run"].is_object(), "no counters: {q}");
    }
    let answered = |i: usize| {
        queries[i]["sql_per_run"]["plans_answered"]
            .as_f64()
            .unwrap()
    };
    // The log filter and the bare count_over_time are answered in SQL.
    assert_eq!(answered(0), 1.0, "{}", queries[0]);
    assert_eq!(answered(2), 1.0, "{}", queries[2]);
    assert!(
        queries[0]["sql_per_run"]["plan_rows"].as_f64().unwrap() > 0.0,
        "{}",
        queries[0]
    );
    // Some answers hold data.
    let lines = queries[0]["embedded"]["size"]["values"].as_u64().unwrap();
    assert!(lines > 0, "{}", queries[0]);
}

#[test]
fn side_by_side_bench_without_chdb_names_the_setup() {
    let out = bench()
        .env("RUNAKEFLI_CHDB_PYTHON", "/nonexistent/python")
        .args(["--lines", "10"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(".ci/setup-clients.sh chdb"), "{stderr}");
}
