//! Every query of the recorded Loki conformance corpus: accepted ones must
//! parse and survive print → parse unchanged; rejected ones must fail with
//! exactly Loki's message.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_logql::{parse_expr, parse_matchers};

#[test]
fn conformance_corpus() {
    let data = include_str!("data/conformance_queries.jsonl");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("valid test data");
        let id = v["id"].as_str().unwrap_or("?");
        let kind = v["kind"].as_str().unwrap_or("expr");
        let query = v["query"].as_str().unwrap_or("");
        let want_err = v["error"].as_str();
        count += 1;
        let got: Result<String, String> = if kind == "matchers" {
            parse_matchers(query)
                .map(|m| {
                    m.iter()
                        .map(|m| m.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .map_err(|e| e.to_string())
        } else {
            match parse_expr(query) {
                Ok(e) => {
                    let printed = e.to_string();
                    match parse_expr(&printed) {
                        Ok(e2) if e2 == e => Ok(printed),
                        Ok(e2) => Err(format!(
                            "round trip changed the AST: {printed}\n  {e:?}\n  {e2:?}"
                        )),
                        Err(err) => Err(format!("printed form {printed:?} does not parse: {err}")),
                    }
                }
                Err(e) => Err(e.to_string()),
            }
        };
        match (want_err, got) {
            (None, Ok(_)) => {}
            (None, Err(e)) => failures.push(format!("{id}: {query}\n  unexpected error: {e}")),
            (Some(w), Err(e)) if e == w => {}
            (Some(w), Err(e)) => failures.push(format!("{id}: {query}\n  want: {w}\n  got:  {e}")),
            (Some(w), Ok(p)) => failures.push(format!(
                "{id}: {query}\n  want error: {w}\n  parsed as: {p}"
            )),
        }
    }
    assert!(count > 300, "corpus too small: {count}");
    assert!(
        failures.is_empty(),
        "{} of {count} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
