//! Go-compatible conversions of label text: `strconv.ParseFloat`,
//! `time.ParseDuration`, humanize's `ParseBytes`, with Go's error texts.

/// Parses a float as Go's `strconv.ParseFloat(s, 64)`; the error is Go's text.
pub fn parse_float(s: &str) -> Result<f64, String> {
    if let Some(v) = runakefli_model::number::short_decimal(s.as_bytes()) {
        return Ok(v);
    }
    let err = || {
        format!(
            "strconv.ParseFloat: parsing {}: invalid syntax",
            runakefli_model::labels::quote_go(s)
        )
    };
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let special = |w: &str| t.eq_ignore_ascii_case(w);
    if special("inf") || special("infinity") || special("nan") {
        let v: f64 = if special("nan") {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Ok(if s.starts_with('-') { -v } else { v });
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return Err(err());
    }
    s.parse::<f64>().map_err(|_| err())
}

/// Parses a Go duration (`1h2m3.5s`, `250ms`, `-1.5h`) into nanoseconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let err = || {
        format!(
            "time: invalid duration {}",
            runakefli_model::labels::quote_go(s)
        )
    };
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(err());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." {
            return Err(err());
        }
        let v: f64 = num.parse().map_err(|_| err())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        let mult: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => {
                return Err(format!(
                    "time: missing unit in duration {}",
                    runakefli_model::labels::quote_go(s)
                ))
            }
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    runakefli_model::labels::quote_go(unit),
                    runakefli_model::labels::quote_go(s)
                ))
            }
        };
        total += v * mult;
        rest = &rest[unit_end..];
    }
    if total > i64::MAX as f64 {
        return Err(err());
    }
    let t = total.round() as i64;
    Ok(if neg { -t } else { t })
}

pub use runakefli_logql::humanize::{
    humanize_si_bytes, loki_bytes_round_trip, parse_humanized_bytes as parse_bytes,
};

/// Formats a float as Go's `strconv.FormatFloat(v, 'f', -1, 64)`.
pub fn format_float_f(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let s = format!("{v}");
    if s == "-0" {
        return "-0".into();
    }
    s
}

/// Formats a float as Go's `%v` (shortest digits; exponent form when the
/// decimal exponent is below -4 or at least 6).
pub fn format_float_v(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let e = format!("{v:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{v}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_parse_as_go_parses_them() {
        for s in [
            "0",
            "-0",
            ".5",
            "5.",
            "12.5",
            "0.1",
            "007",
            "1e3",
            "-1.5E-3",
            "1234567890123456789",
        ] {
            let full: f64 = s.parse().unwrap();
            assert_eq!(parse_float(s).unwrap().to_bits(), full.to_bits(), "{s}");
        }
        assert_eq!(parse_float("-Inf"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_float("+infinity"), Ok(f64::INFINITY));
        assert!(parse_float("NaN").unwrap().is_nan());
        assert!(parse_float(".").is_err());
        assert!(parse_float("1_000").is_err());
        assert!(parse_float(" 1").is_err());
    }

    #[test]
    fn go_compatible() {
        assert_eq!(parse_float("1.5e3"), Ok(1500.0));
        assert_eq!(
            parse_float("n/a").unwrap_err(),
            "strconv.ParseFloat: parsing \"n/a\": invalid syntax"
        );
        assert_eq!(
            parse_float("").unwrap_err(),
            "strconv.ParseFloat: parsing \"\": invalid syntax"
        );
        assert_eq!(parse_duration("1h2m3s"), Ok(3_723_000_000_000));
        assert_eq!(parse_duration("750us"), Ok(750_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert!(parse_duration("abc").is_err());
        assert_eq!(parse_bytes("10kB"), Ok(10_000));
        assert_eq!(parse_bytes("3MiB"), Ok(3 * 1024 * 1024));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(format_float_v(1e21), "1e+21");
        assert_eq!(format_float_v(1e6), "1e+06");
        assert_eq!(format_float_v(3145728.0), "3.145728e+06");
        assert_eq!(format_float_v(100000.0), "100000");
        assert_eq!(format_float_v(0.00001), "1e-05");
        assert_eq!(format_float_f(-20.0), "-20");
    }
}
