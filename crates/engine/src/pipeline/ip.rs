//! IP matching for `|= ip("…")` line filters and `label = ip("…")` label
//! filters: a single address, a CIDR range or an `a-b` range.

use std::net::IpAddr;

/// A compiled `ip("…")` operand.
#[derive(Clone, Debug)]
pub struct IpMatcher {
    lo: (bool, u128),
    hi: (bool, u128),
}

fn key(ip: IpAddr) -> (bool, u128) {
    match ip {
        IpAddr::V4(v4) => (false, u32::from(v4) as u128),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => (false, u32::from(v4) as u128),
            None => (true, u128::from(v6)),
        },
    }
}

impl IpMatcher {
    /// Parses `addr`, `addr/prefix` or `addr-addr`.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let p = pattern.trim();
        let bad = || format!("invalid ip pattern {p:?}");
        if let Some((a, b)) = p.split_once('-') {
            let lo = key(a.trim().parse::<IpAddr>().map_err(|_| bad())?);
            let hi = key(b.trim().parse::<IpAddr>().map_err(|_| bad())?);
            if lo.0 != hi.0 || lo.1 > hi.1 {
                return Err(bad());
            }
            return Ok(IpMatcher { lo, hi });
        }
        if let Some((a, bits)) = p.split_once('/') {
            let ip = a.parse::<IpAddr>().map_err(|_| bad())?;
            let bits: u32 = bits.parse().map_err(|_| bad())?;
            let (v6, v) = key(ip);
            let width = if matches!(ip, IpAddr::V4(_)) { 32 } else { 128 };
            if bits > width {
                return Err(bad());
            }
            let width = if v6 { 128 } else { 32 };
            let host_bits = width - bits.min(width);
            let mask: u128 = if host_bits >= 128 { u128::MAX } else { (1u128 << host_bits) - 1 };
            return Ok(IpMatcher { lo: (v6, v & !mask), hi: (v6, v | mask) });
        }
        let k = key(p.parse::<IpAddr>().map_err(|_| bad())?);
        Ok(IpMatcher { lo: k, hi: k })
    }

    /// True when `ip` is in range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let k = key(ip);
        k.0 == self.lo.0 && k.1 >= self.lo.1 && k.1 <= self.hi.1
    }

    /// True when `text` is an address in range.
    pub fn matches_str(&self, text: &str) -> bool {
        text.parse::<IpAddr>().map(|ip| self.contains(ip)).unwrap_or(false)
    }

    /// True when any address-looking token of `line` is in range.
    pub fn matches_line(&self, line: &str) -> bool {
        let b = line.as_bytes();
        let is_ip_char = |c: u8| c.is_ascii_hexdigit() || c == b'.' || c == b':';
        let mut i = 0;
        while i < b.len() {
            if !is_ip_char(b[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && is_ip_char(b[i]) {
                i += 1;
            }
            let tok = &line[start..i];
            if (tok.contains('.') || tok.contains(':')) && self.matches_str(tok.trim_end_matches(['.', ':'])) {
                return true;
            }
            if self.matches_str(tok) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let c = IpMatcher::new("10.0.0.0/8").unwrap();
        assert!(c.matches_str("10.1.2.3"));
        assert!(!c.matches_str("11.1.2.3"));
        let r = IpMatcher::new("10.0.0.12-10.12.0.200").unwrap();
        assert!(r.matches_line("from 10.5.0.1 ok"));
        assert!(!r.matches_line("from 10.0.0.11 ok"));
        let v6 = IpMatcher::new("2001:db8::/32").unwrap();
        assert!(v6.matches_line("client 2001:db8::1 said"));
        assert!(IpMatcher::new("nope").is_err());
    }
}
