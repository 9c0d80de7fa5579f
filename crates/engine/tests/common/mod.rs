//! Test support: a minimal LogQL log-query parser (stand-in until
//! `runakefli_logql::parse_expr` lands), conformance case loading and the
//! corpus's comparison rules.

#![allow(dead_code)]

use runakefli_logql::*;
use runakefli_model::labels::unquote_go;
use runakefli_model::{MatchOp, Matcher};

struct P<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> P<'a> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s.as_bytes()[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self, t: &str) -> bool {
        self.ws();
        self.s[self.i..].starts_with(t)
    }
    fn eat(&mut self, t: &str) -> bool {
        if self.peek(t) {
            self.i += t.len();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, t: &str) -> Result<(), String> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(format!("expected {t:?} at {}", self.i))
        }
    }
    fn ident(&mut self) -> Result<String, String> {
        self.ws();
        let st = self.i;
        let b = self.s.as_bytes();
        while self.i < b.len() && (b[self.i].is_ascii_alphanumeric() || b[self.i] == b'_') {
            self.i += 1;
        }
        if st == self.i {
            return Err(format!("expected identifier at {st}"));
        }
        Ok(self.s[st..self.i].to_string())
    }
    fn string(&mut self) -> Result<String, String> {
        self.ws();
        let (v, used) = unquote_go(&self.s[self.i..])
            .ok_or_else(|| format!("expected string at {}", self.i))?;
        self.i += used;
        Ok(v)
    }
    fn is_string(&mut self) -> bool {
        self.peek("\"") || self.peek("`")
    }
    fn word_ahead(&mut self, w: &str) -> bool {
        self.ws();
        let r = &self.s[self.i..];
        r.starts_with(w)
            && !r[w.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    }
}

fn match_op(p: &mut P) -> Result<MatchOp, String> {
    for (t, op) in [
        ("=~", MatchOp::Re),
        ("!~", MatchOp::Nre),
        ("!=", MatchOp::Neq),
        ("=", MatchOp::Eq),
    ] {
        if p.eat(t) {
            return Ok(op);
        }
    }
    Err(format!("expected match operator at {}", p.i))
}

fn selector(p: &mut P) -> Result<Vec<Matcher>, String> {
    p.expect("{")?;
    let mut out = Vec::new();
    loop {
        if p.eat("}") {
            break;
        }
        let name = p.ident()?;
        let op = match_op(p)?;
        let v = p.string()?;
        out.push(Matcher::new(name, op, v).map_err(|e| e.to_string())?);
        if !p.eat(",") {
            p.expect("}")?;
            break;
        }
    }
    Ok(out)
}

fn extractions(p: &mut P) -> Result<Vec<LabelExtraction>, String> {
    let mut out = Vec::new();
    loop {
        p.ws();
        let save = p.i;
        let Ok(label) = p.ident() else {
            p.i = save;
            break;
        };
        if ["unwrap"].contains(&label.as_str()) {
            p.i = save;
            break;
        }
        let expression = if p.eat("=") { Some(p.string()?) } else { None };
        out.push(LabelExtraction { label, expression });
        if !p.eat(",") {
            break;
        }
    }
    Ok(out)
}

fn selector_items(p: &mut P) -> Result<Vec<LabelSelectorItem>, String> {
    let mut out = Vec::new();
    loop {
        let name = p.ident()?;
        let matcher = if p.peek("=") || p.peek("!=") || p.peek("!~") {
            let op = match_op(p)?;
            let v = p.string()?;
            Some(Matcher::new(name.clone(), op, v).map_err(|e| e.to_string())?)
        } else {
            None
        };
        out.push(LabelSelectorItem { name, matcher });
        if !p.eat(",") {
            break;
        }
    }
    Ok(out)
}

fn cmp_op(p: &mut P) -> Option<CmpOp> {
    for (t, op) in [
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Neq),
        (">=", CmpOp::Gte),
        ("<=", CmpOp::Lte),
        (">", CmpOp::Gt),
        ("<", CmpOp::Lt),
        ("=", CmpOp::Eq),
    ] {
        if p.eat(t) {
            return Some(op);
        }
    }
    None
}

fn parse_bytes_lit(s: &str) -> Option<u64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let n: f64 = s[..split].parse().ok()?;
    let m: f64 = match &s[split..] {
        "B" => 1.0,
        "kB" | "KB" => 1e3,
        "KiB" | "Ki" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1048576.0,
        "GB" => 1e9,
        "GiB" => 1073741824.0,
        "TB" => 1e12,
        "TiB" => 1099511627776.0,
        _ => return None,
    };
    Some((n * m) as u64)
}

fn parse_duration_lit(s: &str) -> Option<i64> {
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let ne = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..ne].parse().ok()?;
        rest = &rest[ne..];
        let ue = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let m = match &rest[..ue] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            "w" => 7.0 * 86400e9,
            "y" => 365.0 * 86400e9,
            _ => return None,
        };
        total += n * m;
        rest = &rest[ue..];
    }
    Some(total as i64)
}

fn lf_primary(p: &mut P) -> Result<LabelFilterExpr, String> {
    if p.eat("(") {
        let e = lf_or(p)?;
        p.expect(")")?;
        return Ok(LabelFilterExpr::Paren(Box::new(e)));
    }
    let name = p.ident()?;
    p.ws();
    let save = p.i;
    // string matchers
    if p.peek("=~") || p.peek("!~") {
        let op = match_op(p)?;
        let v = p.string()?;
        return Ok(LabelFilterExpr::String(
            Matcher::new(name, op, v).map_err(|e| e.to_string())?,
        ));
    }
    let op = cmp_op(p).ok_or_else(|| format!("expected comparison at {}", p.i))?;
    if p.is_string() && matches!(op, CmpOp::Eq | CmpOp::Neq) {
        let v = p.string()?;
        let mop = if op == CmpOp::Eq {
            MatchOp::Eq
        } else {
            MatchOp::Neq
        };
        return Ok(LabelFilterExpr::String(
            Matcher::new(name, mop, v).map_err(|e| e.to_string())?,
        ));
    }
    if p.word_ahead("ip") {
        p.expect("ip")?;
        p.expect("(")?;
        let pattern = p.string()?;
        p.expect(")")?;
        return Ok(LabelFilterExpr::Ip {
            name,
            negated: op == CmpOp::Neq,
            pattern,
        });
    }
    p.ws();
    let st = p.i;
    let b = p.s.as_bytes();
    if p.i < b.len() && b[p.i] == b'-' {
        p.i += 1;
    }
    while p.i < b.len() && (b[p.i].is_ascii_alphanumeric() || b[p.i] == b'.') {
        p.i += 1;
    }
    let lit = &p.s[st..p.i];
    if lit.is_empty() {
        p.i = save;
        return Err(format!("expected value at {st}"));
    }
    if let Ok(v) = lit.parse::<f64>() {
        return Ok(LabelFilterExpr::Number { name, op, value: v });
    }
    if let Some(v) = parse_duration_lit(lit.trim_start_matches('-')) {
        return Ok(LabelFilterExpr::Duration {
            name,
            op,
            value: if lit.starts_with('-') { -v } else { v },
        });
    }
    if let Some(v) = parse_bytes_lit(lit) {
        return Ok(LabelFilterExpr::Bytes { name, op, value: v });
    }
    Err(format!("bad literal {lit}"))
}

fn lf_and(p: &mut P) -> Result<LabelFilterExpr, String> {
    let mut l = lf_primary(p)?;
    loop {
        if p.word_ahead("and") {
            p.expect("and")?;
        } else if p.peek(",") {
            p.expect(",")?;
        } else {
            return Ok(l);
        }
        let r = lf_primary(p)?;
        l = LabelFilterExpr::And(Box::new(l), Box::new(r));
    }
}

fn lf_or(p: &mut P) -> Result<LabelFilterExpr, String> {
    let mut l = lf_and(p)?;
    while p.word_ahead("or") {
        p.expect("or")?;
        let r = lf_and(p)?;
        l = LabelFilterExpr::Or(Box::new(l), Box::new(r));
    }
    Ok(l)
}

fn line_filter(p: &mut P, op: LineFilterOp) -> Result<Stage, String> {
    let mut values = Vec::new();
    loop {
        if p.word_ahead("ip") {
            p.expect("ip")?;
            p.expect("(")?;
            values.push(LineFilterValue::Ip(p.string()?));
            p.expect(")")?;
        } else {
            values.push(LineFilterValue::Str(p.string()?));
        }
        if p.word_ahead("or") {
            p.expect("or")?;
        } else {
            break;
        }
    }
    Ok(Stage::LineFilter(LineFilter { op, values }))
}

fn pipeline(p: &mut P) -> Result<Vec<Stage>, String> {
    let mut out = Vec::new();
    loop {
        p.ws();
        let lf = [
            ("|=", LineFilterOp::Contains),
            ("!=", LineFilterOp::NotContains),
            ("|~", LineFilterOp::Match),
            ("!~", LineFilterOp::NotMatch),
            ("|>", LineFilterOp::Pattern),
            ("!>", LineFilterOp::NotPattern),
        ];
        if let Some((t, op)) = lf.iter().find(|(t, _)| p.s[p.i..].starts_with(t)) {
            p.i += t.len();
            out.push(line_filter(p, *op)?);
            continue;
        }
        if !p.peek("|") || p.peek("||") {
            break;
        }
        p.expect("|")?;
        p.ws();
        if p.peek("(") {
            out.push(Stage::LabelFilter(lf_or(p)?));
            continue;
        }
        let save = p.i;
        let word = p.ident()?;
        let stage = match word.as_str() {
            "json" => Stage::Json(extractions(p)?),
            "logfmt" => {
                let mut strict = false;
                let mut keep_empty = false;
                loop {
                    if p.eat("--strict") {
                        strict = true;
                    } else if p.eat("--keep-empty") {
                        keep_empty = true;
                    } else {
                        break;
                    }
                }
                Stage::Logfmt {
                    strict,
                    keep_empty,
                    params: extractions(p)?,
                }
            }
            "regexp" => Stage::Regexp(p.string()?),
            "pattern" => Stage::Pattern(p.string()?),
            "unpack" => Stage::Unpack,
            "decolorize" => Stage::Decolorize,
            "line_format" => Stage::LineFormat(p.string()?),
            "label_format" => {
                let mut ops = Vec::new();
                loop {
                    let dst = p.ident()?;
                    p.expect("=")?;
                    if p.is_string() {
                        ops.push(LabelFormatOp::Template {
                            dst,
                            template: p.string()?,
                        });
                    } else {
                        ops.push(LabelFormatOp::Rename {
                            dst,
                            src: p.ident()?,
                        });
                    }
                    if !p.eat(",") {
                        break;
                    }
                }
                Stage::LabelFormat(ops)
            }
            "drop" => Stage::Drop(selector_items(p)?),
            "keep" => Stage::Keep(selector_items(p)?),
            "distinct" => {
                let mut l = vec![p.ident()?];
                while p.eat(",") {
                    l.push(p.ident()?);
                }
                Stage::Distinct(l)
            }
            "unwrap" => {
                p.i = save - 1;
                break;
            }
            _ => {
                p.i = save;
                Stage::LabelFilter(lf_or(p)?)
            }
        };
        out.push(stage);
    }
    Ok(out)
}

/// Parses a log query (`{…} | …`); metric queries are not handled here.
pub fn parse_log(q: &str) -> Result<LogExpr, String> {
    let mut p = P { s: q, i: 0 };
    let selector = selector(&mut p)?;
    let pipeline = pipeline(&mut p)?;
    p.ws();
    if p.i != q.len() {
        return Err(format!("trailing input at {}: {:?}", p.i, &q[p.i..]));
    }
    Ok(LogExpr { selector, pipeline })
}

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
    let days = days_from_civil(y, mo, d);
    Some(((days * 86400 + h * 3600 + mi * 60 + s) * 1_000_000_000) + nanos)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// One recorded case.
pub struct Case {
    pub id: String,
    pub endpoint: String,
    pub params: serde_json::Value,
    pub status: u16,
    pub body: serde_json::Value,
}

pub const CORPUS: &str = "/work/shared/conformance";

/// Loads the cases, or `None` when the corpus is not on this machine.
pub fn load_cases() -> Option<Vec<Case>> {
    let text = std::fs::read_to_string(format!("{CORPUS}/cases.jsonl")).ok()?;
    Some(
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
            .collect(),
    )
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
