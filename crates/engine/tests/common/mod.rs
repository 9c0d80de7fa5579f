//! Test support: conformance case loading, Loki's HTTP parameter forms and
//! the corpus's comparison rules.

#![allow(dead_code)]

use runakefli_model::civil::days_from_civil;

/// Parses Loki's time parameter: RFC3339, unix seconds (with fraction) or nanoseconds.
pub fn parse_time(v: &str) -> Option<i64> {
    if let Ok(n) = v.parse::<i64>() {
        return Some(if v.len() <= 10 { n * 1_000_000_000 } else { n });
    }
    if let Ok(f) = v.parse::<f64>() {
        return Some((f * 1e9).round() as i64);
    }
    // 2026-11-29T00:00:00(.fff)Z
    let b = v.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| v.get(r).and_then(|x| x.parse::<i64>().ok());
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut nanos = 0i64;
    let rest = &v[19..];
    let rest = if let Some(fr) = rest.strip_prefix('.') {
        let digits: String = fr.chars().take_while(|c| c.is_ascii_digit()).collect();
        let mut padded = digits.clone();
        while padded.len() < 9 {
            padded.push('0');
        }
        nanos = padded[..9].parse().ok()?;
        &fr[digits.len()..]
    } else {
        rest
    };
    if rest != "Z" {
        return None;
    }
    let days = days_from_civil(y, u32::try_from(mo).ok()?, u32::try_from(d).ok()?);
    Some(((days * 86400 + h * 3600 + mi * 60 + s) * 1_000_000_000) + nanos)
}

/// One recorded case.
pub struct Case {
    pub id: String,
    pub endpoint: String,
    pub params: serde_json::Value,
    pub status: u16,
    pub body: serde_json::Value,
}

/// The LogQL conformance corpus, committed under `testdata/` at the workspace root.
pub fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance")
}

/// Loads the cases; panics (failing the test) when the corpus is missing.
pub fn load_cases() -> Vec<Case> {
    let path = corpus_dir().join("cases.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "conformance corpus missing: cannot read {}: {e} (it is part of the repository)",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("case json");
            Case {
                id: v["id"].as_str().unwrap_or_default().to_string(),
                endpoint: v["endpoint"].as_str().unwrap_or_default().to_string(),
                params: v["params"].clone(),
                status: v["status"].as_u64().unwrap_or(0) as u16,
                body: v["body"].clone(),
            }
        })
        .collect()
}

fn label_key(v: &serde_json::Value) -> Vec<(String, String)> {
    let mut k: Vec<(String, String)> = v
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(a, b)| (a.clone(), b.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    k.sort();
    k
}

/// The corpus rule for streams: a set keyed by label set, entries in order.
pub fn compare_streams(
    expected: &serde_json::Value,
    got: &serde_json::Value,
) -> Result<(), String> {
    use std::collections::BTreeMap;
    let group = |v: &serde_json::Value| {
        let mut m: BTreeMap<Vec<(String, String)>, Vec<String>> = BTreeMap::new();
        for s in v.as_array().cloned().unwrap_or_default() {
            m.entry(label_key(&s["stream"]))
                .or_default()
                .push(s["values"].to_string());
        }
        for v in m.values_mut() {
            v.sort();
        }
        m
    };
    let (e, g) = (group(expected), group(got));
    if e.keys().ne(g.keys()) {
        let missing: Vec<_> = e.keys().filter(|k| !g.contains_key(*k)).take(2).collect();
        let extra: Vec<_> = g.keys().filter(|k| !e.contains_key(*k)).take(2).collect();
        return Err(format!(
            "label sets differ ({} vs {}): missing {missing:?} extra {extra:?}",
            e.len(),
            g.len()
        ));
    }
    for (k, ev) in &e {
        if g[k] != *ev {
            let a = ev.join("\n");
            let b = g[k].join("\n");
            return Err(format!(
                "entries differ for {k:?}:\n  expected {}\n  got      {}",
                &a[..a.len().min(600)],
                &b[..b.len().min(600)]
            ));
        }
    }
    Ok(())
}

fn float_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let parse = |v: &serde_json::Value| -> Option<f64> {
        match v {
            serde_json::Value::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "+Inf" | "Inf" => Some(f64::INFINITY),
                "-Inf" => Some(f64::NEG_INFINITY),
                x => x.parse().ok(),
            },
            serde_json::Value::Number(n) => n.as_f64(),
            _ => None,
        }
    };
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => {
            if x.is_nan() || y.is_nan() {
                return x.is_nan() && y.is_nan();
            }
            if x.is_infinite() || y.is_infinite() {
                return x == y;
            }
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        }
        _ => a == b,
    }
}

fn sample_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let time_eq = |x: &serde_json::Value, y: &serde_json::Value| match (x.as_f64(), y.as_f64()) {
        (Some(p), Some(q)) => p == q,
        _ => x == y,
    };
    time_eq(&a[0], &b[0]) && float_eq(&a[1], &b[1])
}

/// Matrix: a set keyed by metric labels, samples compared with the float rule.
pub fn compare_matrix(expected: &serde_json::Value, got: &serde_json::Value) -> Result<(), String> {
    use std::collections::BTreeMap;
    let index = |v: &serde_json::Value| {
        let mut m: BTreeMap<Vec<(String, String)>, serde_json::Value> = BTreeMap::new();
        for s in v.as_array().cloned().unwrap_or_default() {
            m.insert(label_key(&s["metric"]), s["values"].clone());
        }
        m
    };
    let (e, g) = (index(expected), index(got));
    if e.keys().ne(g.keys()) {
        let missing: Vec<_> = e.keys().filter(|k| !g.contains_key(*k)).take(2).collect();
        let extra: Vec<_> = g.keys().filter(|k| !e.contains_key(*k)).take(2).collect();
        return Err(format!(
            "series differ ({} vs {}): missing {missing:?} extra {extra:?}",
            e.len(),
            g.len()
        ));
    }
    for (k, ev) in &e {
        let (ea, ga) = (
            ev.as_array().cloned().unwrap_or_default(),
            g[k].as_array().cloned().unwrap_or_default(),
        );
        if ea.len() != ga.len() {
            return Err(format!(
                "{k:?}: {} samples expected, {} got; first expected {:?} got {:?}",
                ea.len(),
                ga.len(),
                ea.first(),
                ga.first()
            ));
        }
        for (a, b) in ea.iter().zip(&ga) {
            if !sample_eq(a, b) {
                return Err(format!("{k:?}: sample {a} expected, {b} got"));
            }
        }
    }
    Ok(())
}

/// Vector: a set keyed by labels, or Loki's order when `ordered`.
pub fn compare_vector(
    expected: &serde_json::Value,
    got: &serde_json::Value,
    ordered: bool,
) -> Result<(), String> {
    let mut e = expected.as_array().cloned().unwrap_or_default();
    let mut g = got.as_array().cloned().unwrap_or_default();
    if e.len() != g.len() {
        return Err(format!(
            "{} samples expected, {} got: {:?}",
            e.len(),
            g.len(),
            g.iter().take(3).collect::<Vec<_>>()
        ));
    }
    if !ordered {
        e.sort_by_key(|s| label_key(&s["metric"]));
        g.sort_by_key(|s| label_key(&s["metric"]));
    }
    for (a, b) in e.iter().zip(&g) {
        if label_key(&a["metric"]) != label_key(&b["metric"])
            || !sample_eq(&a["value"], &b["value"])
        {
            return Err(format!("expected {a}, got {b}"));
        }
    }
    Ok(())
}

/// Scalar: `[time, "value"]`.
pub fn compare_scalar(expected: &serde_json::Value, got: &serde_json::Value) -> Result<(), String> {
    if sample_eq(expected, got) {
        Ok(())
    } else {
        Err(format!("expected {expected}, got {got}"))
    }
}

/// Series: a set of label sets.
pub fn compare_series(expected: &serde_json::Value, got: &serde_json::Value) -> Result<(), String> {
    let set = |v: &serde_json::Value| {
        let mut s: Vec<_> = v
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(label_key)
            .collect();
        s.sort();
        s
    };
    if set(expected) == set(got) {
        Ok(())
    } else {
        Err(format!(
            "series differ: expected {:?}, got {:?}",
            set(expected),
            set(got)
        ))
    }
}

/// Parses a `step`: a duration (`60s`, `1m`) or (fractional) seconds.
pub fn parse_step(v: &str) -> Option<i64> {
    if let Ok(f) = v.parse::<f64>() {
        return Some((f * 1e9) as i64);
    }
    runakefli_engine::pipeline::convert::parse_duration(v).ok()
}
