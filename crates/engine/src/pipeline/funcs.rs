//! The template function library: Loki's functions plus the Sprig subset
//! Loki registers, with Go's argument typing rules and error texts.

use super::builtins;
use super::convert::{format_float_v, parse_float};
use super::template::Val;
use super::time_parse::parse_in_zone;
use super::zone::Zone;
use runakefli_model::civil::civil_from_days;

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
    /// Argument `index` has the wrong type; `msg` is Go's text.
    Type {
        /// Index of the argument (the piped value is last).
        index: usize,
        /// Go's message.
        msg: String,
    },
    /// The function returned an error.
    Failed(String),
    /// Wrong argument count: (wanted, got).
    Arity(usize, usize),
}

/// Go's zero `time.Time` (0001-01-01 00:00:00 UTC) in nanoseconds since the epoch.
const GO_ZERO_TIME: i128 = -62_135_596_800 * 1_000_000_000;

/// Largest padding a template may ask for (guards memory against hostile widths).
const MAX_PAD: i64 = 1 << 16;

/// True when `name` is a function templates may call: the list the LogQL
/// parser checks templates against
/// ([`TEMPLATE_FUNCTIONS`](runakefli_logql::template::TEMPLATE_FUNCTIONS)),
/// every one of which [`call`] (or the template evaluator, for `call`,
/// `__line__` and `__timestamp__`) implements.
pub fn exists(name: &str) -> bool {
    runakefli_logql::template::TEMPLATE_FUNCTIONS.contains(&name)
}

fn type_err(index: usize, want: &str, got: &Val) -> CallError {
    CallError::Type {
        index,
        msg: format!(
            "wrong type for value; expected {want}; got {}",
            got.type_name()
        ),
    }
}

fn s(args: &[Val], i: usize) -> Result<&str, CallError> {
    match &args[i] {
        Val::Str(x) => Ok(x),
        other => Err(type_err(i, "string", other)),
    }
}

fn int(args: &[Val], i: usize) -> Result<i64, CallError> {
    match &args[i] {
        Val::Int(x) => Ok(*x),
        other => Err(type_err(i, "int", other)),
    }
}

/// spf13/cast's `ToFloat64`: strings parsed, failures give 0.
pub fn cast_f64(v: &Val) -> f64 {
    match v {
        Val::Str(x) => parse_float(x).unwrap_or(0.0),
        Val::Int(i) => *i as f64,
        Val::Float(f) => *f,
        Val::Bool(b) => f64::from(u8::from(*b)),
        Val::Time(_) | Val::List(_) | Val::Map(_) | Val::Nil => 0.0,
    }
}

/// spf13/cast's `ToInt64`: strings parsed as integers (`9.0` allowed), failures give 0.
pub fn cast_i64(v: &Val) -> i64 {
    match v {
        Val::Str(x) => {
            let t = x.strip_suffix(".0").unwrap_or(x);
            t.parse().unwrap_or(0)
        }
        Val::Int(i) => *i,
        Val::Float(f) => *f as i64,
        Val::Bool(b) => i64::from(*b),
        Val::Time(_) | Val::List(_) | Val::Map(_) | Val::Nil => 0,
    }
}

fn arity(args: &[Val], n: usize) -> Result<(), CallError> {
    if args.len() != n {
        return Err(CallError::Arity(n, args.len()));
    }
    Ok(())
}

fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_sep = true;
    for c in s.chars() {
        if prev_sep && c.is_alphabetic() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = !(c.is_alphanumeric() || c == '_');
    }
    out
}

fn cmp_vals(a: &Val, b: &Val) -> Result<std::cmp::Ordering, CallError> {
    use std::cmp::Ordering;
    Ok(match (a, b) {
        (Val::Str(x), Val::Str(y)) => x.cmp(y),
        (Val::Int(x), Val::Int(y)) => x.cmp(y),
        (Val::Float(x), Val::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Val::Int(x), Val::Float(y)) => (*x as f64).partial_cmp(y).unwrap_or(Ordering::Equal),
        (Val::Float(x), Val::Int(y)) => x.partial_cmp(&(*y as f64)).unwrap_or(Ordering::Equal),
        (Val::Bool(x), Val::Bool(y)) => x.cmp(y),
        _ => {
            return Err(CallError::Failed(
                "incompatible types for comparison".into(),
            ))
        }
    })
}

/// Calls function `name` with evaluated arguments (the piped value last).
pub fn call(name: &str, args: Vec<Val>) -> Result<Val, CallError> {
    let a = &args;
    let st = |x: String| Ok(Val::Str(x));
    match name {
        "ToLower" | "lower" => {
            arity(a, 1)?;
            st(s(a, 0)?.to_lowercase())
        }
        "ToUpper" | "upper" => {
            arity(a, 1)?;
            st(s(a, 0)?.to_uppercase())
        }
        "title" => {
            arity(a, 1)?;
            st(title(s(a, 0)?))
        }
        "TrimSpace" | "trim" => {
            arity(a, 1)?;
            st(s(a, 0)?.trim().to_string())
        }
        "Trim" => {
            arity(a, 2)?;
            let cut = s(a, 1)?;
            st(s(a, 0)?.trim_matches(|c| cut.contains(c)).to_string())
        }
        "trimAll" => {
            arity(a, 2)?;
            let cut = s(a, 0)?;
            st(s(a, 1)?.trim_matches(|c| cut.contains(c)).to_string())
        }
        "TrimLeft" => {
            arity(a, 2)?;
            let cut = s(a, 1)?;
            st(s(a, 0)?.trim_start_matches(|c| cut.contains(c)).to_string())
        }
        "TrimRight" => {
            arity(a, 2)?;
            let cut = s(a, 1)?;
            st(s(a, 0)?.trim_end_matches(|c| cut.contains(c)).to_string())
        }
        "TrimPrefix" => {
            arity(a, 2)?;
            let (x, p) = (s(a, 0)?, s(a, 1)?);
            st(x.strip_prefix(p).unwrap_or(x).to_string())
        }
        "TrimSuffix" => {
            arity(a, 2)?;
            let (x, p) = (s(a, 0)?, s(a, 1)?);
            st(x.strip_suffix(p).unwrap_or(x).to_string())
        }
        "trimPrefix" => {
            arity(a, 2)?;
            let (p, x) = (s(a, 0)?, s(a, 1)?);
            st(x.strip_prefix(p).unwrap_or(x).to_string())
        }
        "trimSuffix" => {
            arity(a, 2)?;
            let (p, x) = (s(a, 0)?, s(a, 1)?);
            st(x.strip_suffix(p).unwrap_or(x).to_string())
        }
        "Replace" => {
            arity(a, 4)?;
            let (x, old, new, n) = (s(a, 0)?, s(a, 1)?, s(a, 2)?, int(a, 3)?);
            st(if n < 0 {
                x.replace(old, new)
            } else {
                x.replacen(old, new, n as usize)
            })
        }
        "replace" => {
            arity(a, 3)?;
            let (old, new, x) = (s(a, 0)?, s(a, 1)?, s(a, 2)?);
            st(x.replace(old, new))
        }
        "contains" => {
            arity(a, 2)?;
            Ok(Val::Bool(s(a, 1)?.contains(s(a, 0)?)))
        }
        "hasPrefix" => {
            arity(a, 2)?;
            Ok(Val::Bool(s(a, 1)?.starts_with(s(a, 0)?)))
        }
        "hasSuffix" => {
            arity(a, 2)?;
            Ok(Val::Bool(s(a, 1)?.ends_with(s(a, 0)?)))
        }
        "trunc" => {
            arity(a, 2)?;
            let (c, x) = (int(a, 0)?, s(a, 1)?);
            let n = x.len() as i64;
            let b = x.as_bytes();
            st(if c < 0 && n + c > 0 {
                String::from_utf8_lossy(&b[(n + c) as usize..]).into_owned()
            } else if c >= 0 && n > c {
                String::from_utf8_lossy(&b[..c as usize]).into_owned()
            } else {
                x.to_string()
            })
        }
        "substr" => {
            arity(a, 3)?;
            let (start, end, x) = (int(a, 0)?, int(a, 1)?, s(a, 2)?);
            let n = x.len() as i64;
            let b = x.as_bytes();
            let r = if start < 0 {
                &b[..end.clamp(0, n) as usize]
            } else if end < 0 || end > n {
                &b[start.min(n) as usize..]
            } else if start > end {
                return Err(CallError::Failed(format!(
                    "runtime error: slice bounds out of range [{start}:{end}]"
                )));
            } else {
                &b[start as usize..end as usize]
            };
            st(String::from_utf8_lossy(r).into_owned())
        }
        "repeat" => {
            arity(a, 2)?;
            let (c, x) = (int(a, 0)?, s(a, 1)?);
            if c < 0 || (c as usize).saturating_mul(x.len()) > 1 << 20 {
                return Err(CallError::Failed("strings: negative Repeat count".into()));
            }
            st(x.repeat(c as usize))
        }
        "alignLeft" | "alignRight" => {
            arity(a, 2)?;
            let (c, x) = (int(a, 0)?, s(a, 1)?);
            let chars: Vec<char> = x.chars().collect();
            let l = chars.len() as i64;
            if c < 0 || c == l {
                return st(x.to_string());
            }
            let pad = (c - l).min(MAX_PAD);
            st(if pad > 0 {
                let p = " ".repeat(pad as usize);
                if name == "alignLeft" {
                    format!("{x}{p}")
                } else {
                    format!("{p}{x}")
                }
            } else if name == "alignLeft" {
                chars[..c as usize].iter().collect()
            } else {
                chars[(l - c) as usize..].iter().collect()
            })
        }
        "len" => {
            arity(a, 1)?;
            match &a[0] {
                Val::Str(x) => Ok(Val::Int(x.len() as i64)),
                Val::List(l) => Ok(Val::Int(l.len() as i64)),
                Val::Map(m) => Ok(Val::Int(m.len() as i64)),
                other => Err(CallError::Failed(format!(
                    "len of type {}",
                    other.type_name()
                ))),
            }
        }
        "int" => {
            arity(a, 1)?;
            Ok(Val::Int(cast_i64(&a[0])))
        }
        "float64" => {
            arity(a, 1)?;
            Ok(Val::Float(cast_f64(&a[0])))
        }
        "add" => Ok(Val::Int(
            a.iter().map(cast_i64).fold(0i64, i64::wrapping_add),
        )),
        "mul" => Ok(Val::Int(
            a.iter().map(cast_i64).fold(1i64, i64::wrapping_mul),
        )),
        "sub" => {
            arity(a, 2)?;
            Ok(Val::Int(cast_i64(&a[0]).wrapping_sub(cast_i64(&a[1]))))
        }
        "div" | "mod" => {
            arity(a, 2)?;
            let (x, y) = (cast_i64(&a[0]), cast_i64(&a[1]));
            if y == 0 {
                return Err(CallError::Failed(
                    "runtime error: integer divide by zero".into(),
                ));
            }
            Ok(Val::Int(if name == "div" {
                x.wrapping_div(y)
            } else {
                x.wrapping_rem(y)
            }))
        }
        "addf" => Ok(Val::Float(round_decimal(a.iter().map(cast_f64).sum()))),
        "mulf" => Ok(Val::Float(round_decimal(a.iter().map(cast_f64).product()))),
        "subf" => {
            if a.is_empty() {
                return Err(CallError::Arity(1, 0));
            }
            let mut v = cast_f64(&a[0]);
            for x in &a[1..] {
                v -= cast_f64(x);
            }
            Ok(Val::Float(round_decimal(v)))
        }
        "divf" => {
            if a.is_empty() {
                return Err(CallError::Arity(1, 0));
            }
            let mut v = cast_f64(&a[0]);
            for x in &a[1..] {
                v /= cast_f64(x);
            }
            Ok(Val::Float(round_decimal(v)))
        }
        "max" | "min" => {
            let it = a.iter().map(cast_i64);
            let v = if name == "max" { it.max() } else { it.min() };
            Ok(Val::Int(v.unwrap_or(0)))
        }
        "maxf" | "minf" => {
            let it = a.iter().map(cast_f64);
            let v = if name == "maxf" {
                it.fold(f64::NEG_INFINITY, f64::max)
            } else {
                it.fold(f64::INFINITY, f64::min)
            };
            Ok(Val::Float(v))
        }
        "ceil" => {
            arity(a, 1)?;
            Ok(Val::Float(cast_f64(&a[0]).ceil()))
        }
        "floor" => {
            arity(a, 1)?;
            Ok(Val::Float(cast_f64(&a[0]).floor()))
        }
        "round" => {
            if a.len() < 2 || a.len() > 3 {
                return Err(CallError::Arity(2, a.len()));
            }
            let v = cast_f64(&a[0]);
            let p = int(a, 1)?;
            let on = if a.len() == 3 { cast_f64(&a[2]) } else { 0.5 };
            let pow = 10f64.powi(p as i32);
            let digit = pow * v;
            let frac = digit.fract();
            let r = if frac >= on {
                digit.ceil()
            } else {
                digit.floor()
            };
            Ok(Val::Float(r / pow))
        }
        "default" => {
            if a.is_empty() {
                return Err(CallError::Arity(2, 0));
            }
            if a.len() == 1 || !a[1].truthy() {
                return Ok(a[0].clone());
            }
            Ok(a[1].clone())
        }
        "date" => {
            arity(a, 2)?;
            let layout = s(a, 0)?;
            let t = match &a[1] {
                Val::Time(t) => *t,
                Val::Int(i) => i128::from(*i) * 1_000_000_000,
                _ => 0,
            };
            st(format_time(t, layout))
        }
        "unixEpoch" | "unixEpochMillis" | "unixEpochNanos" => {
            arity(a, 1)?;
            let Val::Time(t) = a[0] else {
                return Err(type_err(0, "time.Time", &a[0]));
            };
            // Nanoseconds past the range of an int64 wrap, as Go's do.
            let v = match name {
                "unixEpoch" => t.div_euclid(1_000_000_000),
                "unixEpochMillis" => t.div_euclid(1_000_000),
                _ => i128::from(t as i64),
            };
            st(v.to_string())
        }
        "unixToTime" => {
            arity(a, 1)?;
            let x = s(a, 0)?;
            let v: i64 = x.parse().map_err(|_| {
                CallError::Failed(format!("strconv.ParseInt: parsing {x:?}: invalid syntax"))
            })?;
            let ns = match x.len() {
                0..=10 => v.saturating_mul(1_000_000_000),
                11..=13 => v.saturating_mul(1_000_000),
                14..=16 => v.saturating_mul(1_000),
                _ => v,
            };
            Ok(Val::Time(i128::from(ns)))
        }
        "now" => Ok(Val::Time(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0),
        )),
        // Sprig's `toDate` reads the server's local zone (UTC here);
        // Loki's `toDateInZone` the named zone, UTC when it is unknown.
        // A value that does not fit the layout is Go's zero time.
        "toDate" => {
            arity(a, 2)?;
            Ok(Val::Time(
                parse_in_zone(s(a, 0)?, s(a, 1)?, &Zone::utc()).unwrap_or(GO_ZERO_TIME),
            ))
        }
        "toDateInZone" => {
            arity(a, 3)?;
            let zone = cached_zone(s(a, 1)?);
            Ok(Val::Time(
                parse_in_zone(s(a, 0)?, s(a, 2)?, &zone).unwrap_or(GO_ZERO_TIME),
            ))
        }
        // Sprig's `fromJson`: what the text decodes to, nothing when it is not JSON.
        "fromJson" => {
            arity(a, 1)?;
            Ok(serde_json::from_str::<serde_json::Value>(s(a, 0)?)
                .map(Val::from_json)
                .unwrap_or(Val::Nil))
        }
        "index" => {
            let Some((item, indexes)) = a.split_first() else {
                return Err(CallError::Arity(1, 0));
            };
            builtins::index(item, indexes).map_err(CallError::Failed)
        }
        "slice" => {
            let Some((item, indexes)) = a.split_first() else {
                return Err(CallError::Arity(1, 0));
            };
            builtins::slice(item, indexes).map_err(CallError::Failed)
        }
        "js" => st(builtins::js_escape(&builtins::sprint(a))),
        "regexReplaceAll" | "regexReplaceAllLiteral" => {
            arity(a, 3)?;
            let (re, x, repl) = (s(a, 0)?, s(a, 1)?, s(a, 2)?);
            let re = cached_regex(re)?;
            st(if name == "regexReplaceAll" {
                re.replace_all(x, repl).into_owned()
            } else {
                re.replace_all(x, regex::NoExpand(repl)).into_owned()
            })
        }
        "count" => {
            arity(a, 2)?;
            let re = cached_regex(s(a, 0)?)?;
            Ok(Val::Int(re.find_iter(s(a, 1)?).count() as i64))
        }
        "bytes" => {
            arity(a, 1)?;
            let b = super::convert::parse_bytes(s(a, 0)?).map_err(CallError::Failed)?;
            Ok(Val::Float(b as f64))
        }
        "duration" | "duration_seconds" => {
            arity(a, 1)?;
            let d = super::convert::parse_duration(s(a, 0)?).map_err(CallError::Failed)?;
            Ok(Val::Float(d as f64 / 1e9))
        }
        "printf" => {
            if a.is_empty() {
                return Err(CallError::Arity(1, 0));
            }
            st(sprintf(s(a, 0)?, &a[1..]))
        }
        "print" => {
            let mut out = String::new();
            for (i, v) in a.iter().enumerate() {
                if i > 0 && !matches!(v, Val::Str(_)) && !matches!(a[i - 1], Val::Str(_)) {
                    out.push(' ');
                }
                v.print(&mut out);
            }
            st(out)
        }
        "println" => {
            let parts: Vec<String> = a.iter().map(Val::to_text).collect();
            st(parts.join(" ") + "\n")
        }
        "eq" => {
            if a.len() < 2 {
                return Err(CallError::Failed("missing argument for comparison".into()));
            }
            for b in &a[1..] {
                if cmp_vals(&a[0], b)? == std::cmp::Ordering::Equal {
                    return Ok(Val::Bool(true));
                }
            }
            Ok(Val::Bool(false))
        }
        "ne" | "lt" | "le" | "gt" | "ge" => {
            arity(a, 2)?;
            let o = cmp_vals(&a[0], &a[1])?;
            use std::cmp::Ordering::*;
            Ok(Val::Bool(match name {
                "ne" => o != Equal,
                "lt" => o == Less,
                "le" => o != Greater,
                "gt" => o == Greater,
                _ => o != Less,
            }))
        }
        "and" => Ok(a
            .iter()
            .find(|v| !v.truthy())
            .or(a.last())
            .cloned()
            .unwrap_or(Val::Nil)),
        "or" => Ok(a
            .iter()
            .find(|v| v.truthy())
            .or(a.last())
            .cloned()
            .unwrap_or(Val::Nil)),
        "not" => {
            arity(a, 1)?;
            Ok(Val::Bool(!a[0].truthy()))
        }
        "indent" | "nindent" => {
            arity(a, 2)?;
            let (n, x) = (int(a, 0)?, s(a, 1)?);
            let pad = " ".repeat(n.clamp(0, 1024) as usize);
            let body = format!("{pad}{}", x.replace('\n', &format!("\n{pad}")));
            st(if name == "nindent" {
                format!("\n{body}")
            } else {
                body
            })
        }
        "b64enc" => {
            arity(a, 1)?;
            st(b64_encode(s(a, 0)?.as_bytes()))
        }
        "b64dec" => {
            arity(a, 1)?;
            // Sprig answers the decoder's error text instead of failing.
            st(match b64_decode(s(a, 0)?) {
                Some(b) => String::from_utf8_lossy(&b).into_owned(),
                None => "illegal base64 data at input byte 0".to_string(),
            })
        }
        "urlencode" => {
            arity(a, 1)?;
            st(query_escape(&a[0].to_text()))
        }
        "urlquery" => st(query_escape(&builtins::sprint(a))),
        "urldecode" => {
            arity(a, 1)?;
            let x = s(a, 0)?;
            query_unescape(x)
                .map(Val::Str)
                .ok_or_else(|| CallError::Failed(format!("invalid URL escape {x:?}")))
        }
        "html" => {
            let text = builtins::sprint(a);
            st(text
                .replace('&', "&amp;")
                .replace('\'', "&#39;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&#34;"))
        }
        _ => Err(CallError::Failed(format!(
            "function {name:?} not implemented"
        ))),
    }
}

/// Compiles a template's regular expression once per thread (templates run
/// per entry with the same few expressions).
fn cached_regex(src: &str) -> Result<regex::Regex, CallError> {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, regex::Regex>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    CACHE.with(|c| {
        if let Some(r) = c.borrow().get(src) {
            return Ok(r.clone());
        }
        let r = regex::Regex::new(src).map_err(|e| CallError::Failed(e.to_string()))?;
        let mut m = c.borrow_mut();
        if m.len() >= 64 {
            m.clear();
        }
        m.insert(src.to_string(), r.clone());
        Ok(r)
    })
}

/// Loads a zone once per thread (templates run per entry with the same
/// few zones); an unknown name is UTC, as in Loki's `toDateInZone`.
fn cached_zone(name: &str) -> std::rc::Rc<Zone> {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, std::rc::Rc<Zone>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    CACHE.with(|c| {
        if let Some(z) = c.borrow().get(name) {
            return z.clone();
        }
        let z = std::rc::Rc::new(Zone::load(name).unwrap_or_else(Zone::utc));
        let mut m = c.borrow_mut();
        if m.len() >= 64 {
            m.clear();
        }
        m.insert(name.to_string(), z.clone());
        z
    })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Go's `url.QueryEscape`.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Go's `url.QueryUnescape`.
fn query_unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Sprig's float helpers go through decimal arithmetic; rounding to 15
/// significant digits gives the same printed results.
fn round_decimal(v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    format!("{v:.14e}").parse().unwrap_or(v)
}

/// Go's `time.Duration.String()`.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1u64)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&frac(u, div));
        out.push_str(unit);
    } else {
        let h = u / 3_600_000_000_000;
        let m = (u / 60_000_000_000) % 60;
        let s = u % 60_000_000_000;
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&frac(s, 1_000_000_000));
        out.push('s');
    }
    if neg {
        format!("-{out}")
    } else {
        out
    }
}

fn frac(v: u64, div: u64) -> String {
    let whole = v / div;
    let rem = v % div;
    if rem == 0 {
        return whole.to_string();
    }
    let width = (div as f64).log10() as usize;
    let digits = format!("{rem:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Formats a UTC time with a Go layout (`2006-01-02T15:04:05.000Z07:00`).
pub fn format_time(ns: i128, layout: &str) -> String {
    let secs = ns.div_euclid(1_000_000_000) as i64;
    let nanos = ns.rem_euclid(1_000_000_000) as i64;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let (hh, mm, ss) = (sod / 3600, (sod / 60) % 60, sod % 60);
    let wd = (days + 4).rem_euclid(7) as usize;
    use super::time_parse::{DAYS, MONTHS};
    let mut out = String::new();
    let mut r = layout;
    while !r.is_empty() {
        let take = |tok: &str| r.starts_with(tok);
        let (text, n): (String, usize) = if take("2006") {
            (format!("{y:04}"), 4)
        } else if take("January") {
            (MONTHS[(mo - 1) as usize].into(), 7)
        } else if take("Jan") {
            (MONTHS[(mo - 1) as usize][..3].into(), 3)
        } else if take("Monday") {
            (DAYS[wd].into(), 6)
        } else if take("Mon") {
            (DAYS[wd][..3].into(), 3)
        } else if take("MST") {
            ("UTC".into(), 3)
        } else if take("01") {
            (format!("{mo:02}"), 2)
        } else if take("02") {
            (format!("{d:02}"), 2)
        } else if take("_2") {
            (format!("{d:>2}"), 2)
        } else if take("06") {
            (format!("{:02}", y % 100), 2)
        } else if take("15") {
            (format!("{hh:02}"), 2)
        } else if take("03") {
            (format!("{:02}", if hh % 12 == 0 { 12 } else { hh % 12 }), 2)
        } else if take("04") {
            (format!("{mm:02}"), 2)
        } else if take("05") {
            (format!("{ss:02}"), 2)
        } else if take("PM") {
            ((if hh >= 12 { "PM" } else { "AM" }).into(), 2)
        } else if take("pm") {
            ((if hh >= 12 { "pm" } else { "am" }).into(), 2)
        } else if take("Z07:00") || take("Z0700") || take("Z07") {
            (
                "Z".into(),
                if take("Z07:00") {
                    6
                } else if take("Z0700") {
                    5
                } else {
                    3
                },
            )
        } else if take("-07:00") {
            ("+00:00".into(), 6)
        } else if take("-0700") {
            ("+0000".into(), 5)
        } else if take("-07") {
            ("+00".into(), 3)
        } else if (take(".0") || take(".9") || take(",0") || take(",9")) && {
            let digits = &r[1..];
            let c = digits.as_bytes()[0];
            let n = digits.bytes().take_while(|&x| x == c).count();
            !digits[n..].starts_with(|ch: char| ch.is_ascii_digit())
        } {
            let sep = &r[..1];
            let c = r.as_bytes()[1];
            let n = r[1..].bytes().take_while(|&x| x == c).count();
            let full = format!("{nanos:09}");
            let mut digits = full[..n.min(9)].to_string();
            if c == b'9' {
                digits = digits.trim_end_matches('0').to_string();
                if digits.is_empty() {
                    (String::new(), n + 1)
                } else {
                    (format!("{sep}{digits}"), n + 1)
                }
            } else {
                (format!("{sep}{digits}"), n + 1)
            }
        } else if take("1") {
            (mo.to_string(), 1)
        } else if take("2") {
            (d.to_string(), 1)
        } else if take("3") {
            ((if hh % 12 == 0 { 12 } else { hh % 12 }).to_string(), 1)
        } else if take("4") {
            (mm.to_string(), 1)
        } else if take("5") {
            (ss.to_string(), 1)
        } else {
            let c = r.chars().next().unwrap_or(' ');
            (c.to_string(), c.len_utf8())
        };
        out.push_str(&text);
        r = &r[n..];
    }
    out
}

/// Go's `fmt.Sprintf` for the common verbs (`%s %v %d %f %q %x %t %%`, width,
/// precision, `-` and `0` flags).
pub fn sprintf(format: &str, args: &[Val]) -> String {
    let mut out = String::new();
    let mut it = format.chars().peekable();
    let mut ai = 0;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut left = false;
        let mut zero = false;
        let mut plus = false;
        while let Some(&f) = it.peek() {
            match f {
                '-' => left = true,
                '0' => zero = true,
                '+' => plus = true,
                ' ' | '#' => {}
                _ => break,
            }
            it.next();
        }
        let mut width = String::new();
        while let Some(&d) = it.peek().filter(|d| d.is_ascii_digit()) {
            width.push(d);
            it.next();
        }
        let mut prec: Option<usize> = None;
        if it.peek() == Some(&'.') {
            it.next();
            let mut p = String::new();
            while let Some(&d) = it.peek().filter(|d| d.is_ascii_digit()) {
                p.push(d);
                it.next();
            }
            prec = Some(p.parse().unwrap_or(0));
        }
        let Some(verb) = it.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(ai) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        ai += 1;
        let text = match (verb, arg) {
            ('v' | 's', Val::Str(x)) => match prec {
                Some(p) => x.chars().take(p).collect(),
                None => x.clone(),
            },
            ('v', other) => other.to_text(),
            ('d', Val::Int(i)) => {
                if plus && *i >= 0 {
                    format!("+{i}")
                } else {
                    i.to_string()
                }
            }
            ('f' | 'F', Val::Float(f)) => format!("{:.*}", prec.unwrap_or(6), f),
            ('f' | 'F', Val::Int(i)) => format!("%!f(int={i})"),
            ('e', Val::Float(f)) => {
                let s = format!("{:.*e}", prec.unwrap_or(6), f);
                match s.split_once('e') {
                    Some((m, e)) => {
                        let ev: i32 = e.parse().unwrap_or(0);
                        format!("{m}e{}{:02}", if ev < 0 { '-' } else { '+' }, ev.abs())
                    }
                    None => s,
                }
            }
            ('g', Val::Float(f)) => format_float_v(*f),
            ('q', Val::Str(x)) => runakefli_model::labels::quote_go(x),
            ('x', Val::Str(x)) => x.bytes().map(|b| format!("{b:02x}")).collect(),
            ('x', Val::Int(i)) => format!("{i:x}"),
            ('X', Val::Int(i)) => format!("{i:X}"),
            ('t', Val::Bool(b)) => b.to_string(),
            (v, other) => format!("%!{v}({}={})", other.type_name(), other.to_text()),
        };
        let w: usize = width.parse::<usize>().unwrap_or(0).min(MAX_PAD as usize);
        let len = text.chars().count();
        if len < w {
            let pad = w - len;
            if left {
                out.push_str(&text);
                out.push_str(&" ".repeat(pad));
            } else if zero && !matches!(arg, Val::Str(_)) {
                let (sign, digits) = text
                    .strip_prefix('-')
                    .map(|d| ("-", d))
                    .unwrap_or(("", &text));
                out.push_str(sign);
                out.push_str(&"0".repeat(pad));
                out.push_str(digits);
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(&text);
            }
        } else {
            out.push_str(&text);
        }
    }
    if ai < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[ai..]
            .iter()
            .map(|v| format!("{}={}", v.type_name(), v.to_text()))
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(250_000_000), "250ms");
        assert_eq!(
            sprintf(
                "%s-%v|%5d|%.2f",
                &[
                    Val::Str("a".into()),
                    Val::Int(3),
                    Val::Int(42),
                    Val::Float(1.234)
                ]
            ),
            "a-3|   42|1.23"
        );
        assert_eq!(
            format_time(0, "2006-01-02 15:04:05 Mon Jan"),
            "1970-01-01 00:00:00 Thu Jan"
        );
        assert_eq!(
            call("addf", vec![Val::Str("-10.00".into()), Val::Float(0.01)]).ok(),
            Some(Val::Float(-9.99))
        );
    }
}
