//! The operand of `ip("…")` filters, read as Loki reads it with Go's
//! `netip.ParseAddr`, `netip.ParsePrefix` and `netipx.ParseIPRange` (tried in
//! that order): a single address, a CIDR range or an `a-b` range. Matching
//! addresses inside a line is the engine's job.

use std::net::IpAddr;

/// A parsed `ip("…")` operand: an inclusive range of one address family.
#[derive(Clone, Debug)]
pub struct IpPattern {
    lo: (bool, u128),
    hi: (bool, u128),
    /// A single address with an IPv6 zone (`fe80::1%eth0`): Go's `netip`
    /// accepts it, but it compares unequal to every zone-less address found
    /// in a line, so it matches nothing.
    never: bool,
}

fn key(ip: IpAddr) -> (bool, u128) {
    match ip {
        IpAddr::V4(v4) => (false, u32::from(v4) as u128),
        IpAddr::V6(v6) => (true, u128::from(v6)),
    }
}

/// Go's `netip.ParseAddr`: no surrounding spaces, no leading zeros in IPv4
/// fields, an optional non-empty zone after `%` on IPv6 addresses. Returns
/// the address and whether it had a zone.
fn parse_go_addr(s: &str) -> Option<(IpAddr, bool)> {
    if let Some((addr, zone)) = s.split_once('%') {
        let ip = addr.parse::<std::net::Ipv6Addr>().ok()?;
        return (!zone.is_empty()).then_some((IpAddr::V6(ip), true));
    }
    s.parse::<IpAddr>().ok().map(|ip| (ip, false))
}

/// Go's `netip.ParsePrefix`: the address before the last `/` (no zone), then
/// decimal bits without sign or leading zeros, at most the family's width.
fn parse_go_prefix(s: &str) -> Option<IpPattern> {
    let (addr, bits) = s.rsplit_once('/')?;
    let (ip, zoned) = parse_go_addr(addr)?;
    if zoned || bits.is_empty() || !bits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if bits.len() > 1 && bits.starts_with('0') {
        return None;
    }
    let bits: u32 = bits.parse().ok()?;
    let width = if ip.is_ipv4() { 32 } else { 128 };
    if bits > width {
        return None;
    }
    let (v6, v) = key(ip);
    let host_bits = width - bits;
    let mask: u128 = if host_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    };
    Some(IpPattern {
        lo: (v6, v & !mask),
        hi: (v6, v | mask),
        never: false,
    })
}

/// `netipx.ParseIPRange`: two addresses around the first `-`, zones dropped,
/// of one family, the first not above the second.
fn parse_go_range(s: &str) -> Option<IpPattern> {
    let (a, b) = s.split_once('-')?;
    let lo = key(parse_go_addr(a)?.0);
    let hi = key(parse_go_addr(b)?.0);
    (lo.0 == hi.0 && lo.1 <= hi.1).then_some(IpPattern {
        lo,
        hi,
        never: false,
    })
}

impl IpPattern {
    /// Parses `addr`, `addr/prefix` or `addr-addr`, tried in that order as
    /// Loki tries them; the error is Loki's text
    /// (`ip: invalid pattern: "…"`).
    pub fn parse(pattern: &str) -> Result<Self, String> {
        if let Some((ip, zoned)) = parse_go_addr(pattern) {
            let k = key(ip);
            return Ok(IpPattern {
                lo: k,
                hi: k,
                never: zoned,
            });
        }
        parse_go_prefix(pattern)
            .or_else(|| parse_go_range(pattern))
            .ok_or_else(|| format!("ip: invalid pattern: {}", crate::printer::quote(pattern)))
    }

    /// True when `ip` is in range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let k = key(ip);
        !self.never && k.0 == self.lo.0 && k.1 >= self.lo.1 && k.1 <= self.hi.1
    }

    /// The first and last address of an IPv4 pattern as numbers (an IPv4
    /// address is in the pattern exactly when its number is within them);
    /// `None` for an IPv6 pattern.
    pub fn ipv4_range(&self) -> Option<(u32, u32)> {
        let v4 = |k: (bool, u128)| (!k.0).then(|| u32::try_from(k.1).ok()).flatten();
        match (v4(self.lo), v4(self.hi)) {
            (Some(lo), Some(hi)) if !self.never => Some((lo, hi)),
            _ => None,
        }
    }

    /// The first and last address of an IPv6 pattern as numbers (an IPv6
    /// address is in the pattern exactly when its number is within them);
    /// `None` for an IPv4 pattern and for a zoned address (which matches
    /// nothing).
    pub fn ipv6_range(&self) -> Option<(u128, u128)> {
        (self.lo.0 && self.hi.0 && !self.never).then_some((self.lo.1, self.hi.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_patterns_give_their_range() {
        let r = |p: &str| IpPattern::parse(p).unwrap().ipv4_range();
        assert_eq!(r("10.0.0.1"), Some((0x0a00_0001, 0x0a00_0001)));
        assert_eq!(r("10.0.0.0/8"), Some((0x0a00_0000, 0x0aff_ffff)));
        assert_eq!(
            r("192.168.1.10-192.168.1.20"),
            Some((0xc0a8_010a, 0xc0a8_0114))
        );
        assert_eq!(r("0.0.0.0/0"), Some((0, u32::MAX)));
        assert_eq!(r("::1"), None);
        assert_eq!(r("2001:db8::/32"), None);
        for p in ["10.0.0.0/8", "192.168.1.10-192.168.1.20", "10.0.0.1"] {
            assert_eq!(IpPattern::parse(p).unwrap().ipv6_range(), None);
            let pat = IpPattern::parse(p).unwrap();
            let (lo, hi) = pat.ipv4_range().unwrap();
            for n in [lo.wrapping_sub(1), lo, hi, hi.wrapping_add(1)] {
                let ip = IpAddr::V4(n.into());
                assert_eq!(pat.contains(ip), (lo..=hi).contains(&n), "{p} {ip}");
            }
        }
    }

    #[test]
    fn ipv6_patterns_give_their_range() {
        let r = |p: &str| IpPattern::parse(p).unwrap().ipv6_range();
        assert_eq!(r("::1"), Some((1, 1)));
        assert_eq!(
            r("2001:db8::/32"),
            Some((
                0x2001_0db8u128 << 96,
                (0x2001_0db8u128 << 96) | ((1u128 << 96) - 1)
            ))
        );
        assert_eq!(r("::/0"), Some((0, u128::MAX)));
        assert_eq!(
            r("fe80::1-fe80::9"),
            Some(((0xfe80u128 << 112) | 1, (0xfe80u128 << 112) | 9))
        );
        // A zoned address matches nothing: no range.
        assert_eq!(r("fe80::1%eth0"), None);
        for p in ["2001:db8::/32", "fe80::1-fe80::9", "::1"] {
            let pat = IpPattern::parse(p).unwrap();
            let (lo, hi) = pat.ipv6_range().unwrap();
            for n in [lo.wrapping_sub(1), lo, hi, hi.wrapping_add(1)] {
                let ip = IpAddr::V6(n.into());
                assert_eq!(pat.contains(ip), (lo..=hi).contains(&n), "{p} {ip}");
            }
        }
    }
}
