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
        IpAddr::V6(v6) => (true, u128::from(v6)),
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
            let mask: u128 = if host_bits >= 128 {
                u128::MAX
            } else {
                (1u128 << host_bits) - 1
            };
            return Ok(IpMatcher {
                lo: (v6, v & !mask),
                hi: (v6, v | mask),
            });
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
        text.parse::<IpAddr>()
            .map(|ip| self.contains(ip))
            .unwrap_or(false)
    }

    /// True when an address found in `line` is in range. Addresses are found
    /// as Loki does: at an IPv4 or IPv6 "hint" the longest run of address
    /// characters is parsed; a failed run is skipped as a whole.
    pub fn matches_line(&self, line: &str) -> bool {
        const V4: &[u8] = b"0123456789.";
        const V6: &[u8] = b"0123456789abcdefABCDEF:.";
        let b = line.as_bytes();
        let n = b.len();
        let hex = |c: u8| c.is_ascii_hexdigit();
        let mut i = 0;
        while i < n {
            let charset = if i + 3 < n
                && b[i].is_ascii_digit()
                && (b[i + 1] == b'.' || b[i + 2] == b'.' || b[i + 3] == b'.')
            {
                Some(V4)
            } else if i + 4 < n
                && ((b[i] == b':' && b[i + 1] == b':' && hex(b[i + 2]))
                    || (hex(b[i]) && b[i + 1] == b':')
                    || (hex(b[i]) && hex(b[i + 1]) && b[i + 2] == b':')
                    || (hex(b[i]) && hex(b[i + 1]) && hex(b[i + 2]) && b[i + 3] == b':')
                    || (hex(b[i])
                        && hex(b[i + 1])
                        && hex(b[i + 2])
                        && hex(b[i + 3])
                        && b[i + 4] == b':'))
            {
                Some(V6)
            } else {
                None
            };
            if let Some(cs) = charset {
                let len = b[i..].iter().take_while(|c| cs.contains(c)).count();
                if self.matches_str(&line[i..i + len]) {
                    return true;
                }
                i += len;
            }
            i += 1;
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
