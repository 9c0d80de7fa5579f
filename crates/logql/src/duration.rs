//! Durations and byte sizes as LogQL writes them: Prometheus-style durations
//! (`1h30m`, `5d`), Go-style durations (`1.5h`, `100us`, `-5m`), their canonical
//! formatting, and humanized byte sizes (`10MB`, `1KiB`).
//!
//! All durations are nanoseconds (`i64`).

use thiserror::Error;

/// Why a duration or byte size could not be parsed. The messages are the ones
/// Loki (Go) prints.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DurationError {
    /// An empty string where a duration was required.
    #[error("empty duration string")]
    Empty,
    /// Not of Prometheus' `1y2w3d4h5m6s7ms` form.
    #[error("not a valid duration string: {0:?}")]
    NotValid(String),
    /// Prometheus' `model.ParseDuration`: a unit it does not know.
    #[error("unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole input.
        input: String,
    },
    /// Too large for a signed 64-bit nanosecond count.
    #[error("duration out of range")]
    OutOfRange,
    /// Go's `time.ParseDuration` rejected it.
    #[error("time: invalid duration {0:?}")]
    GoInvalid(String),
    /// Go's `time.ParseDuration`: a number without a unit.
    #[error("time: missing unit in duration {0:?}")]
    GoMissingUnit(String),
    /// Go's `time.ParseDuration`: an unknown unit.
    #[error("time: unknown unit {unit:?} in duration {input:?}")]
    GoUnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole input.
        input: String,
    },
    /// A byte size that humanize could not read.
    #[error("{0}")]
    Bytes(String),
}

const NS_MS: i64 = 1_000_000;
const NS_S: i64 = 1_000 * NS_MS;
const NS_M: i64 = 60 * NS_S;
const NS_H: i64 = 60 * NS_M;
const NS_D: i64 = 24 * NS_H;
const NS_W: i64 = 7 * NS_D;
const NS_Y: i64 = 365 * NS_D;

/// Parses a duration the way Loki's lexer does: Prometheus style first
/// (`5m`, `1h30m`, `2d`, `1w`, `1y`), then Go's `time.ParseDuration`
/// (`1.5h`, `100us`, `-5m`). This is what the HTTP API should use for
/// `step`, `since` and friends when they carry a unit.
pub fn parse_duration(s: &str) -> Result<i64, DurationError> {
    match parse_prom_duration(s) {
        Ok(d) => Ok(d),
        Err(_) => parse_go_duration(s),
    }
}

/// Parses a Prometheus duration (`model.ParseDuration`): units y, w, d, h, m,
/// s, ms, each at most once, in that order, integer amounts; `0` alone is
/// allowed. This is the only form range selectors `[5m]` accept. Errors are
/// Prometheus' texts: a unit is the whole run of non-digits after a number
/// (`1.5h` has the unit `.`), units out of order are "not a valid duration
/// string", and an amount above 2^63 / unit is "duration out of range".
pub fn parse_prom_duration(s: &str) -> Result<i64, DurationError> {
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if s == "0" {
        return Ok(0);
    }
    let bad = || DurationError::NotValid(s.to_string());
    // (unit, position, nanoseconds); positions must increase.
    const UNITS: [(&str, u8, u64); 7] = [
        ("y", 1, NS_Y as u64),
        ("w", 2, NS_W as u64),
        ("d", 3, NS_D as u64),
        ("h", 4, NS_H as u64),
        ("m", 5, NS_M as u64),
        ("s", 6, NS_S as u64),
        ("ms", 7, NS_MS as u64),
    ];
    let b = s.as_bytes();
    let mut i = 0;
    let mut last_pos = 0u8;
    let mut total: u64 = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        let num: u64 = s[start..i].parse().map_err(|_| bad())?;
        let ustart = i;
        while i < b.len() && !b[i].is_ascii_digit() {
            i += 1;
        }
        if i == ustart {
            return Err(bad());
        }
        let unit = &s[ustart..i];
        let Some(&(_, pos, mult)) = UNITS.iter().find(|(u, _, _)| *u == unit) else {
            return Err(DurationError::UnknownUnit {
                unit: unit.to_string(),
                input: s.to_string(),
            });
        };
        if pos <= last_pos {
            return Err(bad());
        }
        last_pos = pos;
        if num > (1u64 << 63) / mult {
            return Err(DurationError::OutOfRange);
        }
        total = total.saturating_add(num * mult);
        if total > i64::MAX as u64 {
            return Err(DurationError::OutOfRange);
        }
    }
    Ok(total as i64)
}

/// Parses a Go duration (`time.ParseDuration`): optional sign, then one or
/// more decimal numbers each with a unit among ns, us, µs, μs, ms, s, m, h.
pub fn parse_go_duration(orig: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::GoInvalid(orig.to_string());
    let mut s = orig;
    let mut neg = false;
    if let Some(r) = s.strip_prefix('-') {
        neg = true;
        s = r;
    } else if let Some(r) = s.strip_prefix('+') {
        s = r;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let mut i = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let int_part = &s[..i];
        let mut frac_part = "";
        if i < b.len() && b[i] == b'.' {
            let fs = i + 1;
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            frac_part = &s[fs..i];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let rest = &s[i..];
        let ulen = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map(|(j, _)| j)
            .unwrap_or(rest.len());
        let unit = &rest[..ulen];
        if unit.is_empty() {
            return Err(DurationError::GoMissingUnit(orig.to_string()));
        }
        let mult: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(DurationError::GoUnknownUnit {
                    unit: unit.to_string(),
                    input: orig.to_string(),
                })
            }
        };
        let iv: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut v = iv.checked_mul(mult).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            // Digits past the 18th are below a nanosecond for every unit.
            let digits = &frac_part[..frac_part.len().min(18)];
            let f: u128 = digits.parse().map_err(|_| invalid())?;
            let scale = 10u128.pow(digits.len() as u32);
            v = v.checked_add(f * mult / scale).ok_or_else(invalid)?;
        }
        total = total.checked_add(v).ok_or_else(invalid)?;
        if total > i64::MAX as u128 + u128::from(neg) {
            return Err(invalid());
        }
        s = &rest[ulen..];
    }
    let t = total as i128;
    Ok(if neg { (-t) as i64 } else { t as i64 })
}

/// Formats a duration so that [`parse_duration`] reads it back exactly:
/// Prometheus style (`1h30m`, `5d`, `0s`) for whole milliseconds, Go style
/// (`1m0.5us` becomes `1m500ns`) otherwise and for negative values.
pub fn format_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    if ns > 0 && ns % NS_MS == 0 {
        let mut ms = ns / NS_MS;
        let mut out = String::new();
        let units: [(&str, i64, bool); 7] = [
            ("y", NS_Y / NS_MS, true),
            ("w", NS_W / NS_MS, true),
            ("d", NS_D / NS_MS, false),
            ("h", NS_H / NS_MS, false),
            ("m", NS_M / NS_MS, false),
            ("s", NS_S / NS_MS, false),
            ("ms", 1, false),
        ];
        for (u, mult, exact) in units {
            if exact && ms % mult != 0 {
                continue;
            }
            let v = ms / mult;
            if v > 0 {
                out.push_str(&format!("{v}{u}"));
                ms -= v * mult;
            }
        }
        return out;
    }
    let mut out = String::new();
    let mut rest = ns.unsigned_abs();
    if ns < 0 {
        out.push('-');
    }
    for (u, mult) in [
        ("h", NS_H as u64),
        ("m", NS_M as u64),
        ("s", NS_S as u64),
        ("ms", NS_MS as u64),
        ("us", 1_000),
        ("ns", 1),
    ] {
        let v = rest / mult;
        if v > 0 {
            out.push_str(&format!("{v}{u}"));
            rest -= v * mult;
        }
    }
    out
}

/// Parses a humanized byte size the way Loki does (go-humanize's
/// `ParseBytes`): a decimal number (commas allowed) then an optional unit
/// among B, kB/KB/K, KiB/Ki, MB, MiB, … (case-insensitive, SI units are
/// powers of 1000, IEC units powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, DurationError> {
    let num_end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == ','))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let num: String = s[..num_end].chars().filter(|c| *c != ',').collect();
    let f: f64 = num.parse().map_err(|_| {
        DurationError::Bytes(format!(
            "strconv.ParseFloat: parsing {num:?}: invalid syntax"
        ))
    })?;
    let extra = s[num_end..].trim().to_lowercase();
    let mult: f64 = match extra.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "ki" | "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mi" | "mib" => 1024f64.powi(2),
        "g" | "gb" => 1e9,
        "gi" | "gib" => 1024f64.powi(3),
        "t" | "tb" => 1e12,
        "ti" | "tib" => 1024f64.powi(4),
        "p" | "pb" => 1e15,
        "pi" | "pib" => 1024f64.powi(5),
        "e" | "eb" => 1e18,
        "ei" | "eib" => 1024f64.powi(6),
        _ => {
            return Err(DurationError::Bytes(format!(
                "unhandled size name: {extra}"
            )))
        }
    };
    let v = f * mult;
    if v >= u64::MAX as f64 {
        return Err(DurationError::Bytes(format!("too large: {s}")));
    }
    Ok(v as u64)
}

/// Formats a byte size so that [`parse_bytes`] (and the LogQL lexer) reads it
/// back exactly: the largest unit that divides it (`10MB`, `1KiB`), else `B`.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 10] = [
        ("PiB", 1 << 50),
        ("PB", 1_000_000_000_000_000),
        ("TiB", 1 << 40),
        ("TB", 1_000_000_000_000),
        ("GiB", 1 << 30),
        ("GB", 1_000_000_000),
        ("MiB", 1 << 20),
        ("MB", 1_000_000),
        ("KiB", 1 << 10),
        ("kB", 1_000),
    ];
    if b > 0 {
        for (u, m) in UNITS {
            if b.is_multiple_of(m) {
                return format!("{}{u}", b / m);
            }
        }
    }
    if b == 0 {
        // `0B` would lex as an empty binary literal.
        return "0kB".to_string();
    }
    format!("{b}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prom_durations() {
        assert_eq!(parse_prom_duration("5m"), Ok(5 * NS_M));
        assert_eq!(parse_prom_duration("1h30m"), Ok(NS_H + 30 * NS_M));
        assert_eq!(
            parse_prom_duration("1y2w3d"),
            Ok(NS_Y + 2 * NS_W + 3 * NS_D)
        );
        assert_eq!(parse_prom_duration("100ms"), Ok(100 * NS_MS));
        assert_eq!(parse_prom_duration("0"), Ok(0));
        assert_eq!(
            parse_prom_duration("1.5h").unwrap_err().to_string(),
            "unknown unit \".\" in duration \"1.5h\""
        );
        assert_eq!(
            parse_prom_duration("5x").unwrap_err().to_string(),
            "unknown unit \"x\" in duration \"5x\""
        );
        assert_eq!(
            parse_prom_duration("5m1h").unwrap_err().to_string(),
            "not a valid duration string: \"5m1h\""
        );
        assert_eq!(
            parse_prom_duration("1h30").unwrap_err().to_string(),
            "not a valid duration string: \"1h30\""
        );
        assert_eq!(
            parse_prom_duration("-5m").unwrap_err().to_string(),
            "not a valid duration string: \"-5m\""
        );
        assert_eq!(parse_prom_duration("292y").unwrap(), 292 * NS_Y);
        assert_eq!(
            parse_prom_duration("293y").unwrap_err().to_string(),
            "duration out of range"
        );
        assert_eq!(
            parse_prom_duration("99999999999999999999s")
                .unwrap_err()
                .to_string(),
            "not a valid duration string: \"99999999999999999999s\""
        );
        assert!(parse_prom_duration("5m1h").is_err());
        assert!(parse_prom_duration("5").is_err());
        assert_eq!(
            parse_prom_duration("").unwrap_err().to_string(),
            "empty duration string"
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("1.5h"), Ok(NS_H + 30 * NS_M));
        assert_eq!(parse_go_duration("100us"), Ok(100_000));
        assert_eq!(parse_go_duration("-5m"), Ok(-5 * NS_M));
        assert_eq!(
            parse_go_duration("1h2m3s4ms5us6ns"),
            Ok(NS_H + 2 * NS_M + 3 * NS_S + 4 * NS_MS + 5006)
        );
        assert_eq!(parse_go_duration(".5s"), Ok(NS_S / 2));
        assert_eq!(
            parse_go_duration("1").unwrap_err().to_string(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            parse_go_duration("1x").unwrap_err().to_string(),
            "time: unknown unit \"x\" in duration \"1x\""
        );
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("99999999999999999h").is_err());
        assert!(parse_go_duration("0.2444444444444444444444444444h").is_ok());
    }

    #[test]
    fn combined_and_format() {
        assert_eq!(parse_duration("1d"), Ok(NS_D));
        assert_eq!(parse_duration("750us"), Ok(750_000));
        for ns in [
            0,
            1,
            1500,
            NS_MS,
            90 * NS_M,
            NS_D + NS_S,
            2 * NS_W,
            NS_Y,
            -5 * NS_M,
            -1,
            13 * NS_D,
        ] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns), "{ns}");
        }
        assert_eq!(format_duration(90 * NS_M), "1h30m");
        assert_eq!(format_duration(5 * NS_M), "5m");
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("10MB"), Ok(10_000_000));
        assert_eq!(parse_bytes("1KiB"), Ok(1024));
        assert_eq!(parse_bytes("1kb"), Ok(1000));
        assert_eq!(parse_bytes("1.5K"), Ok(1500));
        assert_eq!(parse_bytes("42"), Ok(42));
        assert!(parse_bytes("1X").is_err());
        for b in [0, 1, 999, 1000, 1024, 1536, 10_000_000, 3 << 30] {
            assert_eq!(parse_bytes(&format_bytes(b)), Ok(b), "{b}");
        }
    }
}
