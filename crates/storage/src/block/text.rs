//! Exact text forms that typed column encodings rely on: canonical decimals,
//! RFC 3339 UTC timestamps with a fixed fraction width, dotted IPv4 and packed
//! hex. Each parser accepts a value only when the matching printer gives the
//! same bytes back, which is what makes the typed encodings lossless.

use runakefli_model::civil::{civil_from_days, days_from_civil};

/// Parses a canonical decimal: `-?(0|[1-9][0-9]*)(\.[0-9]+)?` with at most 18
/// digits, not negative zero. Returns (mantissa, scale).
pub fn parse_decimal(s: &[u8]) -> Option<(i64, u8)> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let dot = memchr::memchr(b'.', digits);
    let (int, frac) = match dot {
        Some(d) => (&digits[..d], &digits[d + 1..]),
        None => (digits, &digits[..0]),
    };
    if int.is_empty() || (dot.is_some() && frac.is_empty()) || int.len() + frac.len() > 18 {
        return None;
    }
    if int.len() > 1 && int[0] == b'0' {
        return None;
    }
    let mut m: i64 = 0;
    for &b in int.iter().chain(frac) {
        if !b.is_ascii_digit() {
            return None;
        }
        m = m * 10 + i64::from(b - b'0');
    }
    if neg {
        if m == 0 {
            return None;
        }
        m = -m;
    }
    Some((m, frac.len() as u8))
}

/// Appends the canonical decimal for (mantissa, scale).
pub fn format_decimal(dst: &mut Vec<u8>, m: i64, scale: u8) {
    let mut digits = itoa::Buffer::new();
    if scale == 0 {
        dst.extend_from_slice(digits.format(m).as_bytes());
        return;
    }
    if m < 0 {
        dst.push(b'-');
    }
    // Scales are at most 18 (checked where columns are read): 10^18 fits.
    let unit = 10u64.pow(u32::from(scale));
    let abs = m.unsigned_abs();
    dst.extend_from_slice(digits.format(abs / unit).as_bytes());
    dst.push(b'.');
    let frac = digits.format(abs % unit).as_bytes();
    dst.resize(
        dst.len() + (scale as usize).saturating_sub(frac.len()),
        b'0',
    );
    dst.extend_from_slice(frac);
}

/// Appends the decimal digits of `v`, zero-padded to `width`.
fn push_num(dst: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    let mut v = v;
    while v > 0 {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let start = i.min(buf.len() - width);
    dst.extend_from_slice(&buf[start..]);
}

fn digits(s: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Some(v)
}

const POW10: [i64; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// Parses `YYYY-MM-DDTHH:MM:SS[.f{w}]Z` and returns (units since the epoch,
/// w) where a unit is 10^-w seconds. Does not check round-tripping; callers
/// compare with [`format_rfc3339`].
pub fn parse_rfc3339(s: &[u8]) -> Option<(i64, u8)> {
    if s.len() < 20
        || s[4] != b'-'
        || s[7] != b'-'
        || s[10] != b'T'
        || s[13] != b':'
        || s[16] != b':'
    {
        return None;
    }
    if *s.last()? != b'Z' {
        return None;
    }
    let w = match s.len() {
        20 => 0,
        n if (22..=30).contains(&n) && s[19] == b'.' => n - 21,
        _ => return None,
    };
    let y = digits(&s[0..4])? as i64;
    let mo = digits(&s[5..7])? as u32;
    let d = digits(&s[8..10])? as u32;
    let h = digits(&s[11..13])? as i64;
    let mi = digits(&s[14..16])? as i64;
    let se = digits(&s[17..19])? as i64;
    let frac = if w > 0 {
        digits(&s[20..20 + w])? as i64
    } else {
        0
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se;
    let units = secs.checked_mul(POW10[w])?.checked_add(frac)?;
    Some((units, w as u8))
}

/// Appends the RFC 3339 UTC form of `units` (10^-w seconds since the epoch).
/// Returns false when the year does not fit four digits.
pub fn format_rfc3339(dst: &mut Vec<u8>, units: i64, w: u8) -> bool {
    let p = POW10[w as usize];
    let secs = units.div_euclid(p);
    let frac = units.rem_euclid(p);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return false;
    }
    push_num(dst, y as u64, 4);
    dst.push(b'-');
    push_num(dst, m as u64, 2);
    dst.push(b'-');
    push_num(dst, d as u64, 2);
    dst.push(b'T');
    push_num(dst, (sod / 3600) as u64, 2);
    dst.push(b':');
    push_num(dst, (sod / 60 % 60) as u64, 2);
    dst.push(b':');
    push_num(dst, (sod % 60) as u64, 2);
    if w > 0 {
        dst.push(b'.');
        push_num(dst, frac as u64, w as usize);
    }
    dst.push(b'Z');
    true
}

/// Parses canonical dotted IPv4 (no leading zeros) into its 4 bytes.
pub fn parse_ipv4(s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split(|&b| b == b'.');
    for o in &mut out {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || (p.len() > 1 && p[0] == b'0') {
            return None;
        }
        *o = u8::try_from(digits(p)?).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// Appends dotted IPv4.
pub fn format_ipv4(dst: &mut Vec<u8>, a: [u8; 4]) {
    for (i, o) in a.iter().enumerate() {
        if i > 0 {
            dst.push(b'.');
        }
        push_num(dst, u64::from(*o), 1);
    }
}

/// Nibble of each byte as a hex digit of one case; 0x10 marks non-digits.
const fn hex_table(upper: bool) -> [u8; 256] {
    let mut t = [0x10u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let alpha = if upper { b'A' } else { b'a' };
    let mut i = 0;
    while i < 6 {
        t[alpha as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
}

const HEX_LOWER: [u8; 256] = hex_table(false);
const HEX_UPPER: [u8; 256] = hex_table(true);

/// Layout shared by all values of a packed-hex column: total length, the
/// positions of `-` separators, and the letter case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HexLayout {
    /// Length of each value in bytes.
    pub len: usize,
    /// Offsets of `-` characters.
    pub dashes: Vec<usize>,
    /// True for `A-F`, false for `a-f`.
    pub upper: bool,
}

impl HexLayout {
    /// The layout of `s` when it is hex digits with optional dashes and an even
    /// digit count; the case is taken from its first letter (lower if none).
    pub fn of(s: &[u8]) -> Option<HexLayout> {
        let dashes: Vec<usize> = s
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'-')
            .map(|(i, _)| i)
            .collect();
        let digits = s.len() - dashes.len();
        if digits == 0 || !digits.is_multiple_of(2) || dashes.len() > 8 {
            return None;
        }
        let upper = s
            .iter()
            .find(|b| b.is_ascii_alphabetic())
            .is_some_and(|b| b.is_ascii_uppercase());
        Some(HexLayout {
            len: s.len(),
            dashes,
            upper,
        })
    }

    /// Bytes per packed value.
    pub fn packed_len(&self) -> usize {
        (self.len - self.dashes.len()) / 2
    }

    /// Packs `s` into `dst` if it follows this layout exactly (on failure
    /// `dst` may hold a partial value; callers discard it).
    pub fn pack(&self, s: &[u8], dst: &mut Vec<u8>) -> bool {
        if s.len() != self.len || self.dashes.iter().any(|&d| s[d] != b'-') {
            return false;
        }
        let table = if self.upper { &HEX_UPPER } else { &HEX_LOWER };
        let mut bad = 0u8;
        let mut hi: Option<u8> = None;
        let mut start = 0;
        for end in self.dashes.iter().copied().chain(std::iter::once(self.len)) {
            for &b in &s[start..end] {
                let v = table[b as usize];
                bad |= v;
                match hi.take() {
                    None => hi = Some(v),
                    Some(h) => dst.push(h << 4 | (v & 15)),
                }
            }
            start = end + 1;
        }
        bad & 0x10 == 0
    }

    /// Whether each value of `packed` (values of this layout, packed one
    /// after another) is exactly `text`, decided on the packed digits: a
    /// text that does not follow the layout (length, dashes, digit case)
    /// equals none. Appends one flag per value to `out`.
    pub fn equal_values(&self, packed: &[u8], text: &[u8], out: &mut Vec<bool>) {
        let pl = self.packed_len();
        if pl == 0 {
            return;
        }
        let n = packed.len() / pl;
        let mut want = Vec::with_capacity(pl);
        if !self.pack(text, &mut want) {
            out.resize(out.len() + n, false);
            return;
        }
        out.extend(packed.chunks_exact(pl).map(|v| v == want.as_slice()));
    }

    /// Appends the text form of one packed value.
    pub fn unpack(&self, packed: &[u8], dst: &mut Vec<u8>) {
        if self.dashes.is_empty() && packed.len() * 2 == self.len {
            let table = if self.upper {
                &HEX_PAIRS_UPPER
            } else {
                &HEX_PAIRS_LOWER
            };
            // Two digits stored per byte into room made once (a push per
            // byte cost ~265 instructions a 32-digit value, callgrind q4).
            let at = dst.len();
            dst.resize(at + self.len, 0);
            for (pair, &b) in dst[at..].chunks_exact_mut(2).zip(packed) {
                pair.copy_from_slice(&table[b as usize]);
            }
            return;
        }
        let table = if self.upper {
            &HEX_PAIRS_UPPER
        } else {
            &HEX_PAIRS_LOWER
        };
        if packed.len() * 2 + self.dashes.len() == self.len && packed.len() <= 32 {
            // Digits into a buffer, then copied between the dashes.
            let mut digits = [0u8; 64];
            for (i, &b) in packed.iter().enumerate() {
                digits[2 * i..2 * i + 2].copy_from_slice(&table[b as usize]);
            }
            let mut from = 0usize;
            let mut at = 0usize;
            for &d in &self.dashes {
                let n = d - at;
                dst.extend_from_slice(&digits[from..from + n]);
                dst.push(b'-');
                from += n;
                at = d + 1;
            }
            dst.extend_from_slice(&digits[from..packed.len() * 2]);
            return;
        }
        let alpha = if self.upper { b'A' } else { b'a' };
        let digit = |v: u8| if v < 10 { b'0' + v } else { alpha + v - 10 };
        let mut d = self.dashes.iter().peekable();
        let mut nibbles = packed.iter().flat_map(|&b| [b >> 4, b & 15]);
        for i in 0..self.len {
            if d.peek() == Some(&&i) {
                d.next();
                dst.push(b'-');
            } else {
                dst.push(digit(nibbles.next().unwrap_or(0)));
            }
        }
    }
}

/// The two hex digits of each byte value.
const fn hex_pairs(alpha: u8) -> [[u8; 2]; 256] {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        let (hi, lo) = ((i >> 4) as u8, (i & 15) as u8);
        t[i][0] = if hi < 10 { b'0' + hi } else { alpha + hi - 10 };
        t[i][1] = if lo < 10 { b'0' + lo } else { alpha + lo - 10 };
        i += 1;
    }
    t
}

static HEX_PAIRS_LOWER: [[u8; 2]; 256] = hex_pairs(b'a');
static HEX_PAIRS_UPPER: [[u8; 2]; 256] = hex_pairs(b'A');

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_format_as_digits_with_a_point() {
        // The digits of |m|, a point `scale` digits from the right (zeros
        // in front as needed), and the sign.
        let reference = |m: i64, scale: usize| {
            let digits = m.unsigned_abs().to_string();
            let digits = format!("{digits:0>width$}", width = scale + 1);
            let (int, frac) = digits.split_at(digits.len() - scale);
            let sign = if m < 0 { "-" } else { "" };
            if scale == 0 {
                format!("{sign}{int}")
            } else {
                format!("{sign}{int}.{frac}")
            }
        };
        let ms = [
            0,
            1,
            -1,
            5,
            -5,
            9,
            10,
            99,
            100,
            -100,
            12345,
            123456,
            i64::MAX,
            i64::MIN,
        ];
        for m in ms {
            for scale in [0u8, 1, 2, 3, 6, 18] {
                let mut fast = Vec::new();
                format_decimal(&mut fast, m, scale);
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    reference(m, scale as usize),
                    "{m} scale {scale}"
                );
            }
        }
    }

    #[test]
    fn decimals_round_trip_only_canonical() {
        for s in [
            "0",
            "1",
            "-1",
            "1.50",
            "0.050",
            "-0.5",
            "123456789012345678",
            "200",
        ] {
            let (m, sc) = parse_decimal(s.as_bytes()).unwrap_or_else(|| panic!("{s}"));
            let mut out = Vec::new();
            format_decimal(&mut out, m, sc);
            assert_eq!(out, s.as_bytes());
        }
        for s in [
            "-0",
            "-0.0",
            "01",
            "1.",
            ".5",
            "1e3",
            "+1",
            "1.2.3",
            "",
            "-",
            "1234567890123456789",
            "0x1",
        ] {
            assert!(parse_decimal(s.as_bytes()).is_none(), "{s}");
        }
    }

    #[test]
    fn rfc3339_round_trips() {
        for s in [
            "2026-11-29T00:59:49.854Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59.999999999Z",
            "2000-02-29T12:00:00.1Z",
        ] {
            let (u, w) = parse_rfc3339(s.as_bytes()).unwrap();
            let mut out = Vec::new();
            assert!(format_rfc3339(&mut out, u, w));
            assert_eq!(out, s.as_bytes());
        }
        let (u, w) = parse_rfc3339(b"2026-02-30T00:00:00Z").unwrap();
        let mut out = Vec::new();
        format_rfc3339(&mut out, u, w);
        assert_ne!(out, b"2026-02-30T00:00:00Z");
        assert!(parse_rfc3339(b"2026-11-29T00:59:49.854+01:00").is_none());
    }

    #[test]
    fn ipv4_and_hex() {
        let a = parse_ipv4(b"10.0.255.7").unwrap();
        let mut out = Vec::new();
        format_ipv4(&mut out, a);
        assert_eq!(out, b"10.0.255.7");
        assert!(parse_ipv4(b"10.00.1.1").is_none());
        assert!(parse_ipv4(b"256.1.1.1").is_none());
        let uuid = b"550e8400-e29b-41d4-a716-446655440000";
        let l = HexLayout::of(uuid).unwrap();
        let mut p = Vec::new();
        assert!(l.pack(uuid, &mut p));
        assert_eq!(p.len(), 16);
        let mut t = Vec::new();
        l.unpack(&p, &mut t);
        assert_eq!(t, uuid.to_vec());
        assert!(!l.pack(b"550E8400-e29b-41d4-a716-446655440000", &mut Vec::new()));
        // Dashless values, appended after what the buffer holds.
        for id in [
            &b"47427f18eca769601347c34f1e0dc5fd"[..],
            b"0A1B2C3D4E5F",
            b"00",
        ] {
            let l = HexLayout::of(id).unwrap();
            let mut p = Vec::new();
            assert!(l.pack(id, &mut p));
            assert_eq!(p.len() * 2, id.len());
            let mut t = b"x=".to_vec();
            l.unpack(&p, &mut t);
            assert_eq!(&t[2..], id);
            assert_eq!(&t[..2], b"x=");
        }
    }

    #[test]
    fn equal_values_compare_packed_digits_like_their_text() {
        let values: [&[u8]; 4] = [
            b"550e8400-e29b-41d4-a716-446655440000",
            b"123e4567-e89b-12d3-a456-426614174000",
            b"550e8400-e29b-41d4-a716-446655440000",
            b"00000000-0000-0000-0000-000000000000",
        ];
        let l = HexLayout::of(values[0]).unwrap();
        let mut packed = Vec::new();
        for v in values {
            assert!(l.pack(v, &mut packed));
        }
        let texts: [&[u8]; 6] = [
            values[0],
            values[3],
            // Upper case, dashes moved, a digit short or long, not hex.
            b"550E8400-E29B-41D4-A716-446655440000",
            b"550e8400e-29b-41d4-a716-446655440000",
            b"550e8400-e29b-41d4-a716-44665544000",
            b"550e8400-e29b-41d4-a716-44665544000g",
        ];
        for text in texts {
            let mut out = vec![true];
            l.equal_values(&packed, text, &mut out);
            let want: Vec<bool> = std::iter::once(true)
                .chain(values.iter().map(|v| *v == text))
                .collect();
            assert_eq!(out, want, "{}", String::from_utf8_lossy(text));
        }
    }
}
