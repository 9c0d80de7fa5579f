//! Timestamps in JSON documents, in the forms VictoriaLogs accepts: RFC 3339
//! / ISO 8601 text (`2023-06-20T15:32:10Z`, `2023-06-20 15:32:10.123+02:00`;
//! without a zone, UTC), or Unix time in seconds, milliseconds, microseconds
//! or nanoseconds (chosen by magnitude), as a number or a string of digits.
//! `0` means "now".

use runakefli_model::civil::days_from_civil;

/// A parsed time field: nanoseconds, or "use the time of receipt".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocTime {
    /// Nanoseconds since the epoch.
    Nanos(i64),
    /// `0`: stamp with the time of receipt.
    Now,
}

/// Parses a time field value (a JSON string or number).
pub fn parse_time(v: &serde_json::Value) -> Result<DocTime, String> {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                unix_int(i)
            } else if let Some(f) = n.as_f64() {
                unix_float(f)
            } else {
                Err(format!("cannot parse timestamp {n}"))
            }
        }
        serde_json::Value::String(s) => parse_time_str(s),
        other => Err(format!(
            "cannot parse timestamp {other}: expected a string or a number"
        )),
    }
}

/// Parses a time given as text.
pub fn parse_time_str(s: &str) -> Result<DocTime, String> {
    let t = s.trim();
    let numeric = !t.is_empty()
        && t.bytes()
            .enumerate()
            .all(|(i, b)| b.is_ascii_digit() || b == b'.' || (i == 0 && b == b'-'));
    if numeric {
        if let Ok(i) = t.parse::<i64>() {
            return unix_int(i);
        }
        if let Ok(f) = t.parse::<f64>() {
            return unix_float(f);
        }
        return Err(format!("cannot parse timestamp {s:?}"));
    }
    rfc3339(t)
        .map(DocTime::Nanos)
        .ok_or_else(|| format!("cannot parse timestamp {s:?}: expected RFC 3339 or Unix time"))
}

fn unix_int(i: i64) -> Result<DocTime, String> {
    if i == 0 {
        return Ok(DocTime::Now);
    }
    let a = i.unsigned_abs();
    let scale: i64 = if a < 10_000_000_000 {
        1_000_000_000
    } else if a < 10_000_000_000_000 {
        1_000_000
    } else if a < 10_000_000_000_000_000 {
        1_000
    } else {
        1
    };
    i.checked_mul(scale)
        .map(DocTime::Nanos)
        .ok_or_else(|| format!("timestamp {i} out of range"))
}

fn unix_float(f: f64) -> Result<DocTime, String> {
    if !f.is_finite() {
        return Err(format!("cannot parse timestamp {f}"));
    }
    if f == 0.0 {
        return Ok(DocTime::Now);
    }
    let a = f.abs();
    let scale = if a < 1e10 {
        1e9
    } else if a < 1e13 {
        1e6
    } else if a < 1e16 {
        1e3
    } else {
        1.0
    };
    let ns = (f * scale).round();
    if ns.abs() >= 9.2e18 {
        return Err(format!("timestamp {f} out of range"));
    }
    Ok(DocTime::Nanos(ns as i64))
}

/// `YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]][Z|±HH[:]MM]` to nanoseconds.
fn rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = num(0..4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let (month, day) = (num(5..7)?, num(8..10)?);
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) || b.get(13) != Some(&b':') {
        return None;
    }
    let (hour, minute) = (num(11..13)?, num(14..16)?);
    let mut i = 16;
    let mut second = 0;
    if b.get(i) == Some(&b':') {
        second = num(17..19)?;
        i = 19;
    }
    let mut frac_ns = 0i64;
    if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &s[start..i.min(start + 9)];
        frac_ns = digits.parse::<i64>().ok()? * 10i64.pow(9 - digits.len() as u32);
    }
    let offset_s = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) => {
            let rest = &s[i + 1..];
            let (h, m) = match rest.len() {
                5 if rest.as_bytes()[2] == b':' => (
                    rest.get(..2)?.parse::<i64>().ok()?,
                    rest.get(3..)?.parse::<i64>().ok()?,
                ),
                4 => (
                    rest.get(..2)?.parse::<i64>().ok()?,
                    rest.get(2..)?.parse::<i64>().ok()?,
                ),
                2 => (rest.parse::<i64>().ok()?, 0),
                _ => return None,
            };
            let o = h * 3600 + m * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Month and day are in range (checked above).
    let days = days_from_civil(year, month as u32, day as u32);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ns(v: serde_json::Value) -> i64 {
        match parse_time(&v).unwrap() {
            DocTime::Nanos(n) => n,
            DocTime::Now => panic!("now"),
        }
    }

    #[test]
    fn rfc3339_forms() {
        assert_eq!(ns(json!("1970-01-01T00:00:00Z")), 0);
        assert_eq!(ns(json!("2023-06-20T15:32:10Z")), 1_687_275_130_000_000_000);
        assert_eq!(
            ns(json!("2023-06-20 17:32:10.123456789+02:00")),
            1_687_275_130_123_456_789
        );
        assert_eq!(
            ns(json!("2023-06-20T15:32:10.5")),
            1_687_275_130_500_000_000
        );
        assert_eq!(
            ns(json!("2023-06-20T12:32:10-0300")),
            1_687_275_130_000_000_000
        );
        assert_eq!(ns(json!("2000-02-29T00:00:00Z")), 951_782_400_000_000_000);
        for bad in [
            "2023-13-01T00:00:00Z",
            "yesterday",
            "2023-06-20",
            "2023-06-20T15:32:10Q",
            "2023-06-20T15:32:10.",
        ] {
            assert!(parse_time(&json!(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn unix_units() {
        assert_eq!(ns(json!(1686026893)), 1_686_026_893_000_000_000);
        assert_eq!(ns(json!("1686026893735")), 1_686_026_893_735_000_000);
        assert_eq!(ns(json!(1686026893735321u64)), 1_686_026_893_735_321_000);
        assert_eq!(ns(json!("1686026893735321456")), 1_686_026_893_735_321_456);
        assert_eq!(ns(json!(1686026893.5)), 1_686_026_893_500_000_000);
        assert_eq!(parse_time(&json!(0)).unwrap(), DocTime::Now);
        assert_eq!(parse_time(&json!("0")).unwrap(), DocTime::Now);
        assert!(parse_time(&json!(true)).is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_time_str(&s);
        }
    }
}
