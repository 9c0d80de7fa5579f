//! IP matching for `|= ip("…")` line filters and `label = ip("…")` label
//! filters: a single address, a CIDR range or an `a-b` range.

use runakefli_logql::ip::IpPattern;
use std::net::IpAddr;

/// A compiled `ip("…")` operand.
#[derive(Clone, Debug)]
pub struct IpMatcher {
    pattern: IpPattern,
}

impl IpMatcher {
    /// Parses `addr`, `addr/prefix` or `addr-addr`; the error is Loki's text
    /// (`ip: invalid pattern: "…"`).
    pub fn new(pattern: &str) -> Result<Self, String> {
        Ok(IpMatcher {
            pattern: IpPattern::parse(pattern)?,
        })
    }

    /// True when `ip` is in range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.pattern.contains(ip)
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
        // Bytes past the end read as 0, so the IPv6 hint is still evaluated
        // for short addresses at the end of the line (`::1`), as in Loki.
        let at = |i: usize| b.get(i).copied().unwrap_or(0);
        let mut i = 0;
        while i < n {
            let charset = if i + 3 < n
                && b[i].is_ascii_digit()
                && (b[i + 1] == b'.' || b[i + 2] == b'.' || b[i + 3] == b'.')
            {
                Some(V4)
            } else if (at(i) == b':' && at(i + 1) == b':' && hex(at(i + 2)))
                || (hex(at(i)) && at(i + 1) == b':')
                || (hex(at(i)) && hex(at(i + 1)) && at(i + 2) == b':')
                || (hex(at(i)) && hex(at(i + 1)) && hex(at(i + 2)) && at(i + 3) == b':')
                || (hex(at(i))
                    && hex(at(i + 1))
                    && hex(at(i + 2))
                    && hex(at(i + 3))
                    && at(i + 4) == b':')
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

    /// Loki evaluates the IPv6 hint past the end of the text too, so a
    /// label value of just `::1` (or a line ending in it) is found.
    #[test]
    fn short_ipv6_at_the_end_is_found() {
        let m = IpMatcher::new("::1").unwrap();
        assert!(m.matches_line("::1"));
        assert!(m.matches_line("client ::1"));
        assert!(!m.matches_line("::2"));
    }

    /// Patterns are read as Go's `netip`/`netipx` read them; anything else
    /// is Loki's error text.
    #[test]
    fn patterns_as_go_reads_them() {
        let err = |p: &str| IpMatcher::new(p).unwrap_err();
        assert_eq!(err("foo"), r#"ip: invalid pattern: "foo""#);
        assert_eq!(err("300.0.0.1"), r#"ip: invalid pattern: "300.0.0.1""#);
        // no trimming, no leading zeros, no signs
        assert_eq!(
            err("10.0.0.1 - 10.0.0.5"),
            r#"ip: invalid pattern: "10.0.0.1 - 10.0.0.5""#
        );
        assert!(IpMatcher::new(" 10.0.0.1").is_err());
        assert!(IpMatcher::new("010.0.0.1").is_err());
        assert!(IpMatcher::new("10.0.0.0/08").is_err());
        assert!(IpMatcher::new("10.0.0.0/+8").is_err());
        assert!(IpMatcher::new("10.0.0.0/33").is_err());
        assert!(IpMatcher::new("10.0.0.5-10.0.0.1").is_err());
        assert!(IpMatcher::new("10.0.0.1-::1").is_err());
        // a host address with a prefix is accepted and masked
        assert!(IpMatcher::new("10.1.2.3/8")
            .unwrap()
            .matches_str("10.9.9.9"));
        assert!(IpMatcher::new("::/0").unwrap().matches_str("::1"));
        // a zone is accepted on a single address, which then matches nothing
        let zoned = IpMatcher::new("fe80::1%eth0").unwrap();
        assert!(!zoned.matches_line("fe80::1"));
        assert!(IpMatcher::new("fe80::1%").is_err());
        assert!(IpMatcher::new("fe80::/10%eth0").is_err());
        // a zone is dropped from range ends; one on the first end makes the
        // whole text a zoned address, as in Go
        let r = IpMatcher::new("fe80::1-fe80::9%b").unwrap();
        assert!(r.matches_line("x fe80::5 y"));
        assert!(!IpMatcher::new("fe80::1%a-fe80::9")
            .unwrap()
            .matches_line("fe80::5"));
    }
}
