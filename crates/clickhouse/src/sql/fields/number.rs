//! Label values as numbers, exactly as the engine reads them.
//!
//! The engine converts a label's text with Go's `strconv.ParseFloat` rules
//! (`parse_float`: Rust's correctly rounded parse for decimal text). The SQL
//! takes a value as a number only where it can prove it gets that same
//! `f64`:
//! - the text is a plain decimal, `-?D{1,30}(.D{1,30})?` (no exponent, no
//!   sign `+`, no spaces: far inside `f64`'s range, so no overflow and no
//!   underflow to zero or subnormals);
//! - ClickHouse's parse of it, printed back (`toString(Float64)`, the
//!   shortest text that reads back as the same `f64`), is the text itself
//!   with trailing fraction zeros removed. Then the text and the printed
//!   form are the same decimal number, and since the printed form reads
//!   back as ClickHouse's value under correct rounding, so does the text:
//!   the engine's value is ClickHouse's, whatever ClickHouse's own parser
//!   does. Anything else (`1e3`, `0.1000000000000000055511`, 17 significant
//!   digits, `007`) is left to the engine.
//!
//! A JSON member that ClickHouse types `Float64` is re-printed by
//! ClickHouse (`1.50` comes back as `1.5`, `-0` as `0`), so its text is read
//! from the line: the one match of `"key":` followed by a number, taken only
//! when the line holds exactly one `"key":` and that number is, for
//! ClickHouse, the member's value (a key written with escapes, or a `"key":`
//! inside another key, could put the match elsewhere; then the two values
//! still agree). Values are shipped as `toString(Float64)` and read with
//! Rust's correctly rounded parse, which gives the same `f64` back.

use crate::sql::quote;
use runakefli_model::label_condition::Comparison as CmpOp;

/// `Nullable(Float64)`: the value of the `Nullable(String)` text `t` where
/// the engine provably reads the same `f64` (see the module documentation),
/// else `NULL`.
pub fn exact_float(t: &str) -> String {
    format!(
        "if(match({t}, '^-?[0-9]{{1,30}}(\\\\.[0-9]{{1,30}})?$') AND \
         toString(toFloat64OrNull({t})) = if(position({t}, '.') > 0, \
         replaceRegexpOne({t}, '\\\\.?0+$', ''), {t}), toFloat64OrNull({t}), NULL)"
    )
}

/// A duration the SQL decides: one decimal number and one unit (captures 1
/// and 2).
const DURATION: &str = r"^([0-9]{1,30}(?:\.[0-9]{1,30})?)(ns|us|µs|μs|ms|s|m|h)$";

/// `Nullable(Int64)`: the nanoseconds the engine reads from the duration
/// text `t` (its `parse_duration`: the decimal number as `f64`, times the
/// unit's nanoseconds in `f64`, rounded), where the SQL provably gets the
/// same: one number with one unit, the number an [`exact_float`] (so
/// ClickHouse's `f64` is the engine's), and the product — one IEEE
/// multiplication on both sides — a whole number within 2^53 (so rounding
/// leaves it and `Int64` holds it exactly). Else `NULL`: several
/// components (`1m30s`), a sign, `0` alone, a missing or unknown unit, a
/// fractional or too large product are the engine's.
pub fn exact_duration_ns(t: &str) -> String {
    let re = quote(DURATION);
    let number = exact_float(&format!("regexpExtract({t}, {re}, 1)"));
    let unit = format!("regexpExtract({t}, {re}, 2)");
    let product = format!(
        "({number} * multiIf({unit} = 'ns', toFloat64(1), {unit} IN ('us', 'µs', 'μs'), \
         toFloat64(1000), {unit} = 'ms', toFloat64(1000000), {unit} = 's', \
         toFloat64(1000000000), {unit} = 'm', toFloat64(60000000000), {unit} = 'h', \
         toFloat64(3600000000000), NULL))"
    );
    format!(
        "if({product} = floor({product}) AND {product} <= toFloat64(9007199254740992), \
         toInt64({product}), NULL)"
    )
}

/// A byte size the SQL decides: one decimal number and a unit (captures 1
/// and 2; any case, no spaces, no digit separators).
const BYTE_SIZE: &str = r"^([0-9]{1,30}(?:\.[0-9]{1,30})?)((?i)b|k|kb|ki|kib|m|mb|mi|mib|g|gb|gi|gib|t|tb|ti|tib|p|pb|pi|pib|e|eb|ei|eib|)$";

/// `Nullable(UInt64)`: the bytes the engine reads from the size text `t`
/// (go-humanize's `ParseBytes`: the number as `f64`, times the unit in
/// `f64`, truncated), where the SQL provably gets the same: one number and
/// one unit (or none) without spaces or `,`, the number an
/// [`exact_float`], and the product — one IEEE multiplication on both sides
/// — within 2^53, so its floor is exact. Else `NULL` (the engine's).
pub fn exact_bytes(t: &str) -> String {
    let re = quote(BYTE_SIZE);
    let number = exact_float(&format!("regexpExtract({t}, {re}, 1)"));
    let unit = format!("lower(regexpExtract({t}, {re}, 2))");
    let mut arms = String::new();
    for (names, mult) in [
        ("'', 'b'", 1u64),
        ("'k', 'kb'", 1_000),
        ("'ki', 'kib'", 1 << 10),
        ("'m', 'mb'", 1_000_000),
        ("'mi', 'mib'", 1 << 20),
        ("'g', 'gb'", 1_000_000_000),
        ("'gi', 'gib'", 1 << 30),
        ("'t', 'tb'", 1_000_000_000_000),
        ("'ti', 'tib'", 1 << 40),
        ("'p', 'pb'", 1_000_000_000_000_000),
        ("'pi', 'pib'", 1 << 50),
        ("'e', 'eb'", 1_000_000_000_000_000_000),
        ("'ei', 'eib'", 1 << 60),
    ] {
        arms.push_str(&format!("{unit} IN ({names}), toFloat64({mult}), "));
    }
    let product = format!("({number} * multiIf({arms}NULL))");
    format!("if({product} <= toFloat64(9007199254740992), toUInt64(floor({product})), NULL)")
}

/// A plain dotted-quad IPv4 address: four decimal octets without leading
/// zeros.
const IPV4: &str = r"^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$";

/// `Nullable(UInt32)`: the address of the text `t` as a number where `t` is
/// a plain dotted quad (then the engine's `ip()` filter, which looks for
/// addresses in the text as in a line, finds exactly this one: the whole
/// text is one run of address characters); else `NULL` (the engine's).
pub fn exact_ipv4(t: &str) -> String {
    format!(
        "if(match({t}, {}), IPv4StringToNumOrNull({t}), NULL)",
        quote(IPV4)
    )
}

/// A plain IPv6 address of eight groups of one to four hex digits (no
/// zone, no IPv4 part).
const IPV6_FULL: &str = r"^([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$";

/// A plain IPv6 address with one `::` (groups of one to four hex digits on
/// either side, no zone, no IPv4 part); at most seven groups.
const IPV6_SHORT: &str =
    r"^(([0-9a-fA-F]{1,4}:)*[0-9a-fA-F]{1,4})?::(([0-9a-fA-F]{1,4}:)*[0-9a-fA-F]{1,4})?$";

/// `Nullable(IPv6)`: the address of the text `t` where `t` is a plain IPv6
/// address ([`IPV6_FULL`], or [`IPV6_SHORT`] with one to seven groups); else
/// `NULL` (the engine's). The engine's `ip()` filter looks for addresses in
/// the text as in a line: such a text starts with an IPv6 hint (`::` and a
/// hex digit, or one to four hex digits and `:`) and is one run of address
/// characters, so the engine reads exactly this one address (`::` alone
/// starts with no hint: the engine's).
pub fn exact_ipv6(t: &str) -> String {
    format!(
        "if(match({t}, {}) OR (match({t}, {}) AND countMatches({t}, '[0-9a-fA-F]+') BETWEEN 1 AND 7), \
         toIPv6OrNull({t}), NULL)",
        quote(IPV6_FULL),
        quote(IPV6_SHORT)
    )
}

/// An IPv6 address as a ClickHouse `IPv6` literal, written in full (eight
/// groups of four hex digits: no compressed or dotted form to read).
pub(super) fn ipv6_literal(a: u128) -> String {
    let groups: Vec<String> = (0..8)
        .map(|k| format!("{:04x}", (a >> (112 - 16 * k)) & 0xffff))
        .collect();
    format!("toIPv6('{}')", groups.join(":"))
}

/// `Nullable(String)`: the text of the top-level member `key` (of
/// `[A-Za-z0-9_]`) of the JSON object `line` whose value `member` (a
/// `Dynamic`) ClickHouse typed `Float64`, as written in the line; `NULL`
/// where the line does not show it unambiguously.
pub(super) fn float_member_text(line: &str, key: &str, member: &str) -> String {
    debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    let text = format!("extract({line}, '\"{key}\"\\\\s*:\\\\s*(-?[0-9][0-9.eE+-]*)')");
    format!(
        "if(countMatches({line}, '\"{key}\"\\\\s*:') = 1 AND \
         toFloat64OrNull({text}) = dynamicElement({member}, 'Float64'), {text}, NULL)"
    )
}

/// `x op c` for a `Float64` expression `x` holding no NaN, as `f64`
/// compares (IEEE), with `c` written exactly.
pub(super) fn float_compare(x: &str, op: CmpOp, c: f64) -> String {
    if c.is_nan() {
        // Every comparison with NaN is false but `!=`.
        return if op == CmpOp::Neq { "1" } else { "0" }.to_string();
    }
    format!("{x} {} {}", sql_cmp(op), f64_literal(c))
}

/// A comparison as its SQL operator.
pub(super) fn sql_cmp(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Neq => "!=",
        CmpOp::Gt => ">",
        CmpOp::Gte => ">=",
        CmpOp::Lt => "<",
        CmpOp::Lte => "<=",
    }
}

/// A `Float64` constant equal to `c` bit for bit (an integer when it is
/// one within 2^53, else the bits reinterpreted), so no float text is
/// parsed by ClickHouse.
pub(super) fn f64_literal(c: f64) -> String {
    if c.fract() == 0.0 && c.abs() <= 9_007_199_254_740_992.0 && c != 0.0 {
        format!("toFloat64({})", c as i64)
    } else {
        format!("reinterpretAsFloat64(toUInt64({}))", c.to_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_exact_and_nan_compares_as_in_rust() {
        assert_eq!(f64_literal(500.0), "toFloat64(500)");
        assert_eq!(f64_literal(-3.0), "toFloat64(-3)");
        assert_eq!(f64_literal(0.0), "reinterpretAsFloat64(toUInt64(0))");
        assert_eq!(
            f64_literal(-0.0),
            format!("reinterpretAsFloat64(toUInt64({}))", (-0.0f64).to_bits())
        );
        assert_eq!(
            f64_literal(0.1),
            "reinterpretAsFloat64(toUInt64(4591870180066957722))"
        );
        assert_eq!(float_compare("x", CmpOp::Gte, 1.0), "x >= toFloat64(1)");
        assert_eq!(float_compare("x", CmpOp::Neq, f64::NAN), "1");
        assert_eq!(float_compare("x", CmpOp::Lt, f64::NAN), "0");
        assert!(float_compare("x", CmpOp::Lt, f64::INFINITY).starts_with("x < reinterpret"));
    }

    #[test]
    fn member_text_is_read_from_the_line_once() {
        let t = float_member_text("l", "duration_ms", "m");
        assert!(
            t.starts_with(r#"if(countMatches(l, '"duration_ms"\\s*:') = 1"#),
            "{t}"
        );
        assert!(t.contains("dynamicElement(m, 'Float64')"), "{t}");
        let e = exact_float("t");
        assert!(e.contains(r"'^-?[0-9]{1,30}(\\.[0-9]{1,30})?$'"), "{e}");
        assert!(e.contains(r"replaceRegexpOne(t, '\\.?0+$', '')"), "{e}");
    }
}
