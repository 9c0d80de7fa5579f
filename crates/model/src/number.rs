//! Numbers read from label text.

/// Powers of ten a short decimal's digits are divided by (all exact in f64).
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// Digits as an integer below this (10^15 < 2^53) are exact in f64.
const MAX_EXACT_DIGITS: u64 = 1_000_000_000_000_000;

/// A decimal of at most 15 significant digits and 15 after the point, with
/// an optional sign and point
/// (`-12.5`, `250`, `.5`, `5.`), or `None` for anything else. Its digits as
/// an integer are below 2^53 and its power of ten is exact, so the one
/// correctly rounded division is the correctly rounded value of the decimal:
/// the same double a full parse (Go's `ParseFloat`, Rust's `parse`) gives,
/// without the general parser's cost.
pub fn short_decimal(s: &[u8]) -> Option<f64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let mut m: u64 = 0;
    let mut n = 0usize;
    let mut scale: Option<usize> = None;
    for &c in digits {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                n += 1;
                if m >= MAX_EXACT_DIGITS {
                    return None;
                }
                if let Some(k) = scale.as_mut() {
                    *k += 1;
                    if *k >= POW10.len() {
                        return None;
                    }
                }
            }
            b'.' if scale.is_none() => scale = Some(0),
            _ => return None,
        }
    }
    if n == 0 {
        return None;
    }
    let v = m as f64 / POW10[scale.unwrap_or(0)];
    Some(if neg { -v } else { v })
}

/// The double nearest to `m / 10^scale` (a decimal stored as its digits
/// and scale), when one correctly rounded division gives it: `m` is exact in
/// f64 (at most 2^53 in magnitude, or any `m` when `scale` is 0, where the
/// conversion itself rounds correctly) and `10^scale` is exact (`scale` at
/// most 15). So it is the double a full parse of the decimal's text gives.
/// `None` otherwise.
pub fn scaled_decimal(m: i64, scale: u8) -> Option<f64> {
    if scale == 0 {
        return Some(m as f64);
    }
    let p = *POW10.get(usize::from(scale))?;
    (m.unsigned_abs() <= 1u64 << 53).then(|| m as f64 / p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_decimals_are_the_doubles_the_full_parser_gives() {
        for s in [
            "0",
            "-0",
            "+0",
            "0.0",
            "-0.0",
            ".5",
            "5.",
            "-.5",
            "250",
            "12.5",
            "0.1",
            "0.3",
            "999999999999999",
            "-999999999999999",
            "0.000000000000001",
            "123456789.012345",
            "007",
            "1.000",
        ] {
            let fast = short_decimal(s.as_bytes()).expect(s);
            let full: f64 = s.parse().unwrap();
            assert_eq!(fast.to_bits(), full.to_bits(), "{s}");
        }
        // Not short decimals: left to a full parser (which may accept them).
        for s in [
            "",
            "-",
            "+",
            ".",
            "-.",
            "1.2.3",
            "1e3",
            "inf",
            "NaN",
            "0x10",
            " 1",
            "1 ",
            "1234567890123456",
            "0.1234567890123456",
            "0.0000000000000001",
            "1_000",
        ] {
            assert_eq!(short_decimal(s.as_bytes()), None, "{s}");
        }
    }

    /// The text a stored decimal prints as (`format_decimal` in the store:
    /// sign, integer digits, point and exactly `scale` fraction digits).
    fn printed(m: i64, scale: u8) -> String {
        if scale == 0 {
            return m.to_string();
        }
        let unit = 10u64.pow(u32::from(scale));
        let a = m.unsigned_abs();
        let sign = if m < 0 { "-" } else { "" };
        format!(
            "{sign}{}.{:0w$}",
            a / unit,
            a % unit,
            w = usize::from(scale)
        )
    }

    #[test]
    fn scaled_decimals_are_the_doubles_their_text_parses_to() {
        let edges = [
            0,
            1,
            -1,
            5,
            -5,
            12_345,
            1 << 53,
            -(1 << 53),
            (1 << 53) - 1,
            999_999_999_999_999,
            i64::MAX,
            i64::MIN,
            (1 << 53) + 1,
        ];
        for m in edges {
            for scale in 0..=18u8 {
                let text = printed(m, scale);
                match scaled_decimal(m, scale) {
                    Some(v) => {
                        let full: f64 = text.parse().unwrap();
                        assert_eq!(v.to_bits(), full.to_bits(), "{m} scale {scale}: {text}");
                    }
                    None => assert!(
                        scale > 15 || m.unsigned_abs() > 1 << 53,
                        "{m} scale {scale} declined"
                    ),
                }
            }
        }
    }

    proptest! {
        #[test]
        fn any_short_decimal_parses_exactly(
            neg in any::<bool>(),
            int in "[0-9]{0,8}",
            frac in proptest::option::of("[0-9]{0,7}"),
        ) {
            let s = format!("{}{}{}", if neg { "-" } else { "" }, int,
                frac.map(|f| format!(".{f}")).unwrap_or_default());
            let full = s.parse::<f64>();
            match short_decimal(s.as_bytes()) {
                Some(v) => prop_assert_eq!(v.to_bits(), full.unwrap().to_bits(), "{}", s),
                None => prop_assert!(!s.bytes().any(|c| c.is_ascii_digit())),
            }
        }

        #[test]
        fn any_scaled_decimal_is_its_text_parsed(m in any::<i64>(), scale in 0u8..=15) {
            let text = printed(m, scale);
            if let Some(v) = scaled_decimal(m, scale) {
                prop_assert_eq!(v.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{}", text);
            }
        }

        #[test]
        fn small_scaled_decimals_are_their_text_parsed(
            m in -(1i64 << 53)..=(1i64 << 53),
            scale in 0u8..=15,
        ) {
            let text = printed(m, scale);
            let v = scaled_decimal(m, scale).expect("exact operands");
            prop_assert_eq!(v.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{}", text);
        }
    }
}
