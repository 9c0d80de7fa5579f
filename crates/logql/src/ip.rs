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
}
