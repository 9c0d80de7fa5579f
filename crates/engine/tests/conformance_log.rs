//! Conformance: log queries of the recorded Loki corpus, evaluated on a
//! MemBackend loaded with the corpus data, compared by the corpus rules.

mod common;

use runakefli_engine::testing::MemBackend;
use runakefli_engine::{json, Engine, QueryLimits};
use runakefli_logql::Expr;
use runakefli_model::{Direction, TenantId};
use std::sync::Arc;

const PREFIXES: &[&str] = &[
    "sel", "lf", "pf", "json", "lfmt", "rgx", "pat", "unp", "lbl", "err", "dk", "lnf", "lbf",
    "dec", "dir",
];

/// Cases known not to match yet. lbl-010 (`| bytes == 3MiB`): Loki answers no
/// lines although the label values are `3MiB`; the cause is not understood
/// yet (probably how Loki lexes the literal), so it is listed, not hidden.
const KNOWN_FAILURES: &[&str] = &["lbl-010"];

#[test]
fn log_query_cases() {
    let Some(cases) = common::load_cases() else {
        eprintln!("conformance corpus not found; skipping");
        return;
    };
    let backend = Arc::new(MemBackend::new());
    let tenant = TenantId::default_tenant();
    backend
        .load_dir(
            &tenant,
            std::path::Path::new(&format!("{}/data", common::CORPUS)),
        )
        .unwrap();
    let engine = Engine::new(
        backend,
        QueryLimits {
            max_entries_limit_per_query: 10_000,
            ..QueryLimits::default()
        },
    );
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for c in &cases {
        let prefix = c.id.split('-').next().unwrap_or_default();
        if !PREFIXES.contains(&prefix) || !c.endpoint.ends_with("query_range") {
            continue;
        }
        let p = &c.params;
        let q = p["query"].as_str().unwrap_or_default();
        let start = common::parse_time(p["start"].as_str().unwrap_or_default()).unwrap();
        let end = common::parse_time(p["end"].as_str().unwrap_or_default()).unwrap();
        let limit: u32 = p["limit"]
            .as_str()
            .map(|l| l.parse().unwrap())
            .unwrap_or(100);
        let direction = match p["direction"].as_str() {
            Some("forward") => Direction::Forward,
            _ => Direction::Backward,
        };
        let expr = match common::parse_log(q) {
            Ok(e) => Expr::Log(e),
            Err(e) => {
                failed.push(format!("{}: test parser: {e}", c.id));
                continue;
            }
        };
        let outcome: Result<(), String> = match engine
            .query_range(&tenant, &expr, start, end, 0, limit, direction)
        {
            Ok(resp) => {
                let mut body = Vec::new();
                json::write_query_response(&resp, &mut body);
                let got: serde_json::Value =
                    serde_json::from_slice(&body).expect("our body is JSON");
                if c.status != 200 {
                    Err(format!("expected status {}, got 200", c.status))
                } else {
                    common::compare_streams(&c.body["data"]["result"], &got["data"]["result"])
                }
            }
            Err(e) => {
                let msg = e.to_string();
                if e.status() == c.status && c.body.as_str().is_some_and(|b| b.trim() == msg.trim())
                {
                    Ok(())
                } else {
                    Err(format!(
                        "error {} {msg:?}, expected {} {:?}",
                        e.status(),
                        c.status,
                        c.body
                    ))
                }
            }
        };
        match outcome {
            Ok(()) => passed.push(c.id.clone()),
            Err(e) => failed.push(format!("{} [{q}]: {e}", c.id)),
        }
    }
    eprintln!(
        "log-query conformance: {} passed, {} failed",
        passed.len(),
        failed.len()
    );
    for f in &failed {
        eprintln!("FAIL {f}");
    }
    let unexpected: Vec<&String> = failed
        .iter()
        .filter(|f| {
            !KNOWN_FAILURES
                .iter()
                .any(|k| f.starts_with(&format!("{k} ")) || f.starts_with(&format!("{k}:")))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} unexpected failures",
        unexpected.len()
    );
}
