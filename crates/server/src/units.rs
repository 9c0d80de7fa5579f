//! Sizes and durations in human units, as flags, variables and the config
//! file accept them: `64MiB`, `1.5GB`, `4096`; `30d`, `1w`, `1h30m`, `500ms`.
//!
//! Sizes: a number with an optional unit, binary (`KiB`, `MiB`, `GiB`,
//! `TiB`, also written `K`, `M`, `G`, `T`) or decimal (`kB`/`KB`, `MB`,
//! `GB`, `TB`); a bare number is bytes. Durations: Prometheus's and Loki's
//! syntax, one or more `<number><unit>` pieces with units `ms`, `s`, `m`,
//! `h`, `d` (24 h), `w` (7 d), `y` (365 d); a bare `0` is zero.

use std::time::Duration;

/// Parses a byte size such as `64MiB`, `2GB` or `1048576`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let n: f64 = num.parse().map_err(|_| {
        format!("invalid size {text:?}: expected a number with an optional unit such as 64MiB")
    })?;
    let mult: f64 = match unit {
        "" | "B" => 1.0,
        "KiB" | "Ki" | "K" => 1024.0,
        "MiB" | "Mi" | "M" => 1024.0 * 1024.0,
        "GiB" | "Gi" | "G" => 1024.0 * 1024.0 * 1024.0,
        "TiB" | "Ti" | "T" => 1024f64.powi(4),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        _ => {
            return Err(format!(
                "invalid size {text:?}: unknown unit {unit:?} (use B, KiB, MiB, GiB, TiB, kB, MB, GB or TB)"
            ))
        }
    };
    let v = n * mult;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("invalid size {text:?}: out of range"));
    }
    Ok(v.round() as u64)
}

/// Parses a duration such as `30d`, `1h30m`, `500ms` or `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || {
        format!("invalid duration {text:?}: expected pieces like 30d, 12h, 5m, 10s, 500ms (units ms s m h d w y)")
    };
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "w" => 7.0 * 86_400.0,
            "y" => 365.0 * 86_400.0,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total += Duration::try_from_secs_f64(n * secs).map_err(|_| bad())?;
    }
    Ok(total)
}

/// Prints a size in the largest binary unit that divides it (`64MiB`).
pub fn format_bytes(n: u64) -> String {
    for (unit, m) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if n >= m && (n / m) * m == n {
            return format!("{}{unit}", n / m);
        }
    }
    n.to_string()
}

/// Prints a duration in the largest units (days at most) that add up to it
/// (`30d`, `1h30m`, `0s`).
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, m) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ] {
        if ms >= m {
            out.push_str(&format!("{}{unit}", ms / m));
            ms %= m;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes(" 10 KiB "), Ok(10240));
        assert!(parse_bytes("10 parsecs").is_err());
        assert!(parse_bytes("MiB").is_err());
        assert_eq!(format_bytes(64 << 20), "64MiB");
        assert_eq!(format_bytes(1000), "1000");
        for n in [0, 1, 1 << 30, 5 << 10, 123_456_789] {
            assert_eq!(parse_bytes(&format_bytes(n)), Ok(n));
        }
    }

    #[test]
    fn durations() {
        let s = Duration::from_secs;
        assert_eq!(parse_duration("30d"), Ok(s(30 * 86_400)));
        assert_eq!(parse_duration("1w"), Ok(s(7 * 86_400)));
        assert_eq!(parse_duration("1h30m"), Ok(s(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1y"), Ok(s(365 * 86_400)));
        assert!(parse_duration("30").is_err());
        assert!(parse_duration("5 minutes").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(format_duration(s(30 * 86_400)), "30d");
        assert_eq!(format_duration(s(5400)), "1h30m");
        for d in [s(0), s(59), s(86_400 * 9 + 7), Duration::from_millis(1500)] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
