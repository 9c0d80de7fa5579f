//! Byte sizes as Loki reads and prints them in label filters (go-humanize's
//! `ParseBytes` and `Bytes`), shared by the engine and the backends that
//! decide byte-size filters themselves.

use runakefli_model::labels::quote_go;

/// Parses a byte size as humanize's `ParseBytes` (`10kB` = 10000, `3MiB`).
pub fn parse_humanized_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(t.len());
    let num: String = t[..split].chars().filter(|&c| c != ',').collect();
    let f: f64 = num.parse().map_err(|_| {
        format!(
            "strconv.ParseFloat: parsing {}: invalid syntax",
            quote_go(&num)
        )
    })?;
    let unit = t[split..].trim().to_ascii_lowercase();
    let mult: f64 = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "ki" | "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mi" | "mib" => 1048576.0,
        "g" | "gb" => 1e9,
        "gi" | "gib" => 1073741824.0,
        "t" | "tb" => 1e12,
        "ti" | "tib" => 1099511627776.0,
        "p" | "pb" => 1e15,
        "pi" | "pib" => 1125899906842624.0,
        "e" | "eb" => 1e18,
        "ei" | "eib" => 1152921504606846976.0,
        _ => return Err(format!("unhandled size name: {unit}")),
    };
    let v = f * mult;
    if v >= 18446744073709551615.0 {
        return Err(format!("too large: {s}"));
    }
    Ok(v as u64)
}

/// Loki's printed form of a byte size: SI units with one rounded decimal below
/// ten ("3.1MB", "67MB", "512B"), as go-humanize's `Bytes` without the space.
pub fn humanize_si_bytes(v: u64) -> String {
    if v < 10 {
        return format!("{v}B");
    }
    const SIZES: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let f = v as f64;
    let e = (f.ln() / 1000f64.ln()).floor();
    let suffix = SIZES[(e as usize).min(SIZES.len() - 1)];
    let val = (f / 1000f64.powf(e) * 10.0 + 0.5).floor() / 10.0;
    if val < 10.0 {
        format!("{val:.1}{suffix}")
    } else {
        format!("{val:.0}{suffix}")
    }
}

/// The value a byte-size label filter really compares with in Loki: the query
/// reaches its evaluator as text, where the filter prints its size in rounded
/// SI units (`3MiB` becomes `3.1MB`, 3,100,000), which is then parsed again.
/// Zero prints as `0B`, which Loki's lexer cannot read back; it is kept as 0.
pub fn loki_bytes_round_trip(v: u64) -> u64 {
    if v == 0 {
        return 0;
    }
    parse_humanized_bytes(&humanize_si_bytes(v)).unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humanized_sizes_as_go_humanize_prints_them() {
        assert_eq!(humanize_si_bytes(0), "0B");
        assert_eq!(humanize_si_bytes(9), "9B");
        assert_eq!(humanize_si_bytes(512), "512B");
        assert_eq!(humanize_si_bytes(1024), "1.0kB");
        assert_eq!(humanize_si_bytes(1500), "1.5kB");
        assert_eq!(humanize_si_bytes(3 * 1024 * 1024), "3.1MB");
        assert_eq!(humanize_si_bytes(64 * 1024 * 1024), "67MB");
        assert_eq!(humanize_si_bytes(999_960), "1000kB");
        assert_eq!(humanize_si_bytes(2_000_000_000), "2.0GB");
    }

    #[test]
    fn byte_filters_compare_with_the_reprinted_size() {
        assert_eq!(loki_bytes_round_trip(3 * 1024 * 1024), 3_100_000);
        assert_eq!(loki_bytes_round_trip(1024), 1000);
        assert_eq!(loki_bytes_round_trip(1500), 1500);
        assert_eq!(loki_bytes_round_trip(512), 512);
        assert_eq!(loki_bytes_round_trip(0), 0);
        assert_eq!(loki_bytes_round_trip(64 * 1024 * 1024), 67_000_000);
    }

    #[test]
    fn sizes_parse_as_humanize_reads_them() {
        assert_eq!(parse_humanized_bytes("10kB"), Ok(10_000));
        assert_eq!(parse_humanized_bytes("3MiB"), Ok(3 * 1024 * 1024));
        assert_eq!(parse_humanized_bytes("1.5KB"), Ok(1500));
        assert_eq!(parse_humanized_bytes(" 1,024 b "), Ok(1024));
        assert!(parse_humanized_bytes("5 parsecs").is_err());
    }
}
