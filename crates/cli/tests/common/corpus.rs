//! Replaying a recorded Loki corpus (`cases.jsonl` of `testdata/conformance*`)
//! against a running server and comparing by the corpora's rules: status
//! exact; error texts ignoring surrounding whitespace; streams as a set keyed
//! by label set, entries in order, timestamps, lines and per-entry metadata
//! exact (JSON objects compared as maps); matrix and vector as sets keyed by
//! metric labels, floats within 1e-9 relative (Loki's order for `sort`,
//! `sort_desc`, `topk`, `bottomk`); label names and values exactly (absent =
//! empty); series as a set; index stats by `streams` and `entries`.
//!
//! Each corpus lists the cases it may fail, with a reason, under its own
//! heading of `docs/conformance.md` ([`listed_exceptions`]).
//!
//! Included by the conformance tests with
//! `#[path = "common/corpus.rs"] mod corpus;` beside `mod common;`.

use crate::common::TestServer;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A path under the workspace root (`testdata/…`, `docs/…`).
pub fn workspace_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Case ids listed under the `## ` heading `section` of docs/conformance.md
/// (up to the next `## ` heading) as bullets "- `id` — reason"; each must
/// have a reason.
pub fn listed_exceptions(section: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(workspace_path("docs/conformance.md")).unwrap_or_default();
    assert!(
        text.lines().any(|l| l.starts_with(section)),
        "docs/conformance.md has no heading {section:?}"
    );
    let mut out = BTreeSet::new();
    let lines = text
        .lines()
        .skip_while(|l| !l.starts_with(section))
        .skip(1)
        .take_while(|l| !l.starts_with("## "));
    for line in lines {
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

/// The JSON values of a `.jsonl` file, one a line.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The single value of an instant `query` at `time`, when it answers one.
fn instant_value(server: &TestServer, query: &str, time: &str) -> Option<u64> {
    let (status, body) = server.get("/loki/api/v1/query", &[("query", query), ("time", time)]);
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

/// Waits (up to a minute) until the instant `query` at `time` answers
/// `want`: the corpus's pushed entries are all visible.
pub fn wait_for_count(server: &TestServer, query: &str, time: &str, want: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let got = instant_value(server, query, time);
        if got == Some(want) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pushed entries not all visible: {query} at {time} answers {got:?}, expected {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `v` as text with every object's keys sorted (objects compare as maps).
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&o[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

fn float_eq(a: &Value, b: &Value) -> bool {
    let parse = |v: &Value| -> Option<f64> {
        match v {
            Value::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "+Inf" | "Inf" => Some(f64::INFINITY),
                "-Inf" => Some(f64::NEG_INFINITY),
                s => s.parse().ok(),
            },
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    };
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => {
            if x.is_nan() || y.is_nan() {
                x.is_nan() && y.is_nan()
            } else if x.is_infinite() || y.is_infinite() {
                x == y
            } else {
                x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
            }
        }
        _ => a == b,
    }
}

fn sample_eq(a: &Value, b: &Value) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(x), Some(y)) if x.len() == 2 && y.len() == 2 => {
            x[0] == y[0] && float_eq(&x[1], &y[1])
        }
        _ => false,
    }
}

fn label_key(v: &Value) -> String {
    let mut pairs: Vec<(String, String)> = v
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    format!("{pairs:?}")
}

fn is_ordered(query: &str) -> bool {
    let mut q = query.trim();
    loop {
        if q.starts_with('(') && q.ends_with(')') {
            let mut depth = 0;
            let mut closes_at_end = true;
            for (i, ch) in q.char_indices() {
                if ch == '(' {
                    depth += 1;
                }
                if ch == ')' {
                    depth -= 1;
                }
                if depth == 0 && i < q.len() - 1 {
                    closes_at_end = false;
                    break;
                }
            }
            if closes_at_end {
                q = q[1..q.len() - 1].trim();
                continue;
            }
        }
        break;
    }
    let re = regex::Regex::new(r"^(sort|sort_desc|topk|bottomk)\s*(\(|by\b|without\b)").unwrap();
    re.is_match(q)
}

fn group_by_labels<'a>(items: &'a [Value], key: &str) -> BTreeMap<String, Vec<&'a Value>> {
    let mut m: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for it in items {
        m.entry(label_key(&it[key])).or_default().push(it);
    }
    m
}

/// Compares an answer with the recorded one by the corpus rules (see the module header).
pub fn compare_result(case: &Value, exp: &Value, got: &Value) -> Result<(), String> {
    let endpoint = case["endpoint"].as_str().unwrap();
    if endpoint.ends_with("/labels") || endpoint.contains("/label/") {
        let e = exp.get("data").cloned().unwrap_or(Value::Array(vec![]));
        let g = got.get("data").cloned().unwrap_or(Value::Array(vec![]));
        return if e == g {
            Ok(())
        } else {
            Err(format!("data differs: expected {e}, got {g}"))
        };
    }
    if endpoint.ends_with("/series") {
        let set = |v: &Value| -> BTreeSet<String> {
            v.get("data")
                .and_then(|d| d.as_array())
                .map(|a| a.iter().map(label_key).collect())
                .unwrap_or_default()
        };
        return if set(exp) == set(got) {
            Ok(())
        } else {
            Err(format!(
                "series differ: got {}",
                got.get("data").unwrap_or(&Value::Null)
            ))
        };
    }
    if endpoint.ends_with("/index/stats") {
        for k in ["streams", "entries"] {
            if exp[k] != got[k] {
                return Err(format!("{k}: expected {}, got {}", exp[k], got[k]));
            }
        }
        return Ok(());
    }
    let (ed, gd) = (&exp["data"], &got["data"]);
    if ed["encodingFlags"] != gd["encodingFlags"] {
        return Err(format!(
            "encodingFlags: expected {}, got {}",
            ed["encodingFlags"], gd["encodingFlags"]
        ));
    }
    if ed["resultType"] != gd["resultType"] {
        return Err(format!(
            "resultType: expected {}, got {}",
            ed["resultType"], gd["resultType"]
        ));
    }
    let empty = vec![];
    let er = ed["result"].as_array().unwrap_or(&empty);
    let gr = gd["result"].as_array().unwrap_or(&empty);
    match ed["resultType"].as_str().unwrap_or("") {
        "streams" => {
            let (e, g) = (group_by_labels(er, "stream"), group_by_labels(gr, "stream"));
            if e.keys().collect::<Vec<_>>() != g.keys().collect::<Vec<_>>() {
                return Err(format!(
                    "stream label sets differ: expected {}, got {}",
                    e.len(),
                    g.len()
                ));
            }
            for (k, ev) in &e {
                let mut a: Vec<String> = ev.iter().map(|s| canonical(&s["values"])).collect();
                let mut b: Vec<String> = g[k].iter().map(|s| canonical(&s["values"])).collect();
                a.sort();
                b.sort();
                if a != b {
                    return Err(format!("entries differ for stream {k}"));
                }
            }
            Ok(())
        }
        "matrix" => {
            let (e, g) = (group_by_labels(er, "metric"), group_by_labels(gr, "metric"));
            if e.keys().collect::<Vec<_>>() != g.keys().collect::<Vec<_>>() {
                return Err(format!(
                    "series label sets differ: expected {}, got {}",
                    e.len(),
                    g.len()
                ));
            }
            for (k, ev) in &e {
                let (a, b) = (
                    ev[0]["values"].as_array().unwrap_or(&empty),
                    g[k][0]["values"].as_array().unwrap_or(&empty),
                );
                if a.len() != b.len() || !a.iter().zip(b).all(|(x, y)| sample_eq(x, y)) {
                    return Err(format!("samples differ for series {k}"));
                }
            }
            Ok(())
        }
        "vector" => {
            let query = case["params"]["query"].as_str().unwrap_or("");
            if is_ordered(query) {
                if er.len() != gr.len() {
                    return Err(format!(
                        "vector length: expected {}, got {}",
                        er.len(),
                        gr.len()
                    ));
                }
                for (x, y) in er.iter().zip(gr) {
                    if label_key(&x["metric"]) != label_key(&y["metric"])
                        || !sample_eq(&x["value"], &y["value"])
                    {
                        return Err("ordered vector differs".to_string());
                    }
                }
                return Ok(());
            }
            let (e, g) = (group_by_labels(er, "metric"), group_by_labels(gr, "metric"));
            if e.keys().collect::<Vec<_>>() != g.keys().collect::<Vec<_>>() {
                return Err(format!(
                    "vector label sets differ: expected {}, got {}",
                    e.len(),
                    g.len()
                ));
            }
            for (k, ev) in &e {
                if !sample_eq(&ev[0]["value"], &g[k][0]["value"]) {
                    return Err(format!(
                        "value differs for {k}: expected {}, got {}",
                        ev[0]["value"], g[k][0]["value"]
                    ));
                }
            }
            Ok(())
        }
        "scalar" => {
            if sample_eq(&ed["result"], &gd["result"]) {
                Ok(())
            } else {
                Err(format!(
                    "scalar: expected {}, got {}",
                    ed["result"], gd["result"]
                ))
            }
        }
        other => Err(format!("unknown resultType {other}")),
    }
}

/// Sends one case (`GET endpoint?params`, with the case's `headers` if any)
/// and compares status and body with the recorded answer.
pub fn run_case(server: &TestServer, case: &Value) -> Result<(), String> {
    let mut params: Vec<(String, String)> = Vec::new();
    for (k, v) in case["params"].as_object().unwrap() {
        match v {
            Value::Array(items) => items
                .iter()
                .for_each(|i| params.push((k.clone(), i.as_str().unwrap().to_string()))),
            v => params.push((
                k.clone(),
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string()),
            )),
        }
    }
    let refs: Vec<(&str, &str)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let headers: Vec<(&str, &str)> = case["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    let (status, body) = server.get_with(case["endpoint"].as_str().unwrap(), &refs, &headers);
    let want_status = case["status"].as_u64().unwrap() as u16;
    if status != want_status {
        return Err(format!(
            "status {status}, expected {want_status}: {}",
            body.chars().take(200).collect::<String>()
        ));
    }
    match &case["body"] {
        Value::String(msg) => {
            if body.trim() == msg.trim() {
                Ok(())
            } else {
                Err(format!(
                    "message {:?}, expected {:?}",
                    body.trim(),
                    msg.trim()
                ))
            }
        }
        exp => {
            let got: Value =
                serde_json::from_str(&body).map_err(|e| format!("invalid JSON answer: {e}"))?;
            compare_result(case, exp, &got)
        }
    }
}

/// Runs every case and fails on any that does not match and is not in
/// `exceptions`; prints the pass count per topic (the id's prefix) and the
/// listed cases that pass now. Returns the number of cases that matched.
pub fn replay(
    server: &TestServer,
    name: &str,
    cases: &[Value],
    exceptions: &BTreeSet<String>,
) -> usize {
    let mut per_topic: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    for case in cases {
        let id = case["id"].as_str().unwrap().to_string();
        let topic = id.split('-').next().unwrap().to_string();
        let result = run_case(server, case);
        let t = per_topic.entry(topic).or_default();
        t.1 += 1;
        match result {
            Ok(()) => {
                t.0 += 1;
                if exceptions.contains(&id) {
                    fixed.push(id);
                }
            }
            Err(why) => {
                if !exceptions.contains(&id) {
                    unexpected.push(format!("{id}: {why}"));
                }
            }
        }
    }
    let passed: usize = per_topic.values().map(|t| t.0).sum();
    eprintln!("{name} per topic (passed/total):");
    for (topic, (p, n)) in &per_topic {
        eprintln!("  {topic:5} {p}/{n}");
    }
    eprintln!(
        "{name}: {passed} of {} cases match Loki; {} listed in docs/conformance.md",
        cases.len(),
        exceptions.len()
    );
    if !fixed.is_empty() {
        eprintln!("listed in docs/conformance.md but passing now (remove them): {fixed:?}");
    }
    assert!(
        unexpected.is_empty(),
        "{} unlisted cases fail:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    passed
}
