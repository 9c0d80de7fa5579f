//! The id texts of the [`Shape::Varied`](super::Shape::Varied) lines, each derived
//! from a population index by a fixed hash (the same index always gives the same
//! text; two indices may, rarely, give the same text).

use std::fmt::Write as _;

use super::varied_vocab as vv;

/// The splitmix64 finalizer: spreads population indices over 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The user id of population index `i`: letter, digit, letter, digit, letter, digit, letter.
pub fn uid_text(i: u64) -> String {
    let mut x = mix(i ^ 0x75_6964) % (26 * 10 * 26 * 10 * 26 * 10 * 26);
    let mut s = String::with_capacity(7);
    for k in 0..7 {
        if k % 2 == 0 {
            s.push((b'a' + (x % 26) as u8) as char);
            x /= 26;
        } else {
            s.push((b'0' + (x % 10) as u8) as char);
            x /= 10;
        }
    }
    s
}

/// The session id of population index `i`: 10 lowercase hex digits.
pub fn session_text(i: u64) -> String {
    format!("{:010x}", mix(i ^ 0x7365_7373) & ((1 << 40) - 1))
}

/// The peer address of population index `i`.
pub fn ip_text(i: u64) -> String {
    let x = mix(i ^ 0x6970);
    let a = vv::IP_FIRST_OCTETS[(x % vv::IP_FIRST_OCTETS.len() as u64) as usize];
    format!(
        "{a}.{}.{}.{}",
        (x >> 8) & 255,
        (x >> 16) & 255,
        1 + (x >> 24) % 254
    )
}

/// The order number of population index `i`: 13 to 16 digits.
pub fn order_no(i: u64) -> u64 {
    let x = mix(i ^ 0x006f_7264_6572);
    let low = 10u64.pow(12 + (x % 4) as u32);
    low + (x >> 2) % (9 * low)
}

/// The SKU of population index `i`: two letters, five digits, two letters.
pub fn sku_text(i: u64) -> String {
    let mut x = mix(i ^ 0x0073_6b75);
    let mut letter = || {
        let c = (b'A' + (x % 26) as u8) as char;
        x /= 26;
        c
    };
    let (a, b, c, d) = (letter(), letter(), letter(), letter());
    format!("{a}{b}-{}-{c}{d}", 10_000 + x % 90_000)
}

/// Appends a UUID v4 built from two random words.
pub(super) fn push_uuid(out: &mut String, (hi, lo): (u64, u64)) {
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let _ = write!(
        out,
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::varied::UIDS;

    #[test]
    fn id_texts_have_their_formats() {
        for i in [0, 1, 17, UIDS - 1] {
            let u = uid_text(i);
            assert_eq!(u.len(), 7);
            assert!(u.bytes().step_by(2).all(|b| b.is_ascii_lowercase()), "{u}");
            assert!(
                u.bytes().skip(1).step_by(2).all(|b| b.is_ascii_digit()),
                "{u}"
            );
            let s = session_text(i);
            assert_eq!(s.len(), 10);
            assert!(s
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            let o = order_no(i).to_string();
            assert!((13..=16).contains(&o.len()), "{o}");
            let k = sku_text(i);
            assert_eq!(k.len(), 11, "{k}");
            assert!(k.as_bytes()[2] == b'-' && k.as_bytes()[8] == b'-', "{k}");
            let ip: std::net::Ipv4Addr = ip_text(i).parse().unwrap();
            assert_ne!(ip.octets()[3], 0);
        }
        assert_ne!(uid_text(1), uid_text(2));
    }
}
