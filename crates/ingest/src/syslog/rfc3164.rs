//! RFC 3164 (BSD) headers, after `<PRI>`: `Mmm dd hh:mm:ss HOST TAG[PID]: MSG`.
//! Parsed leniently: what does not fit the pattern stays in the text.

use super::time::year_of;
use super::{text, Format, SyslogMessage};
use runakefli_model::civil::days_from_civil;

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];
const NS_PER_SEC: i64 = 1_000_000_000;

/// Parses the rest of a BSD message; never fails.
pub(super) fn parse(rest: &[u8], facility: u8, severity: u8, now_ns: i64) -> SyslogMessage {
    let mut msg = SyslogMessage {
        format: Format::Rfc3164,
        facility,
        severity,
        timestamp: None,
        hostname: None,
        app_name: None,
        proc_id: None,
        msg_id: None,
        structured_data: Vec::new(),
        message: String::new(),
    };
    let Some((ts, after)) = timestamp(rest, now_ns) else {
        msg.message = text(rest);
        return msg;
    };
    msg.timestamp = Some(ts);
    let after = after.strip_prefix(b" ").unwrap_or(after);
    // HOSTNAME, then TAG; a lone word followed by ':' is a tag without a host.
    let (first, tail) = split_word(after);
    let (host, body) = if first.ends_with(b":") || first.contains(&b'[') || tail.is_empty() {
        (None, after)
    } else {
        (Some(first), tail)
    };
    msg.hostname = host.map(text);
    let (tag_word, tail) = split_word(body);
    let tag_end = tag_word
        .iter()
        .position(|c| *c == b'[' || *c == b':')
        .unwrap_or(tag_word.len());
    let tag = &tag_word[..tag_end];
    let mut suffix = &tag_word[tag_end..];
    let mut pid = None;
    if let Some(s) = suffix.strip_prefix(b"[") {
        if let Some(close) = s.iter().position(|c| *c == b']') {
            pid = Some(&s[..close]);
            suffix = &s[close + 1..];
        }
    }
    let is_tag = !tag.is_empty()
        && tag.len() <= 48
        && (suffix == b":" || (suffix.is_empty() && pid.is_some()));
    if is_tag {
        msg.app_name = Some(text(tag));
        msg.proc_id = pid.filter(|p| !p.is_empty()).map(text);
        msg.message = text(tail);
    } else {
        msg.message = text(body);
    }
    msg
}

/// The first space-separated word and what follows the space.
fn split_word(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|c| *c == b' ') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &[]),
    }
}

/// `Mmm dd hh:mm:ss` (day space-padded or not), as UTC in the year closest
/// to `now_ns`; returns the time and the rest.
fn timestamp(b: &[u8], now_ns: i64) -> Option<(i64, &[u8])> {
    let month = MONTHS.iter().position(|m| b.get(..3) == Some(&m[..]))? as u32 + 1;
    let mut i = 3;
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    let day_len = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&day_len) {
        return None;
    }
    let day: u32 = std::str::from_utf8(&b[i..i + day_len]).ok()?.parse().ok()?;
    i += day_len;
    if b.get(i) != Some(&b' ') {
        return None;
    }
    i += 1;
    let clock = b.get(i..i + 8)?;
    if clock[2] != b':' || clock[5] != b':' {
        return None;
    }
    let num = |s: &[u8]| -> Option<i64> {
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| i64::from(s[0] - b'0') * 10 + i64::from(s[1] - b'0'))
    };
    let (h, m, s) = (num(&clock[..2])?, num(&clock[3..5])?, num(&clock[6..8])?);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    i += 8;
    let at = |year: i64| {
        (days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s) * NS_PER_SEC
    };
    let now_year = year_of(now_ns);
    let ts = [now_year - 1, now_year, now_year + 1]
        .into_iter()
        .map(at)
        .min_by_key(|t| (t - now_ns).unsigned_abs())?;
    Some((ts, &b[i..]))
}

#[cfg(test)]
mod tests {
    use super::super::parse as parse_msg;
    use super::*;

    const NOW: i64 = 1_795_999_000 * NS_PER_SEC; // 2026-11-30

    #[test]
    fn classic_bsd_message() {
        let m = parse_msg(
            b"<34>Oct 11 22:14:15 mymachine su[230]: 'su root' failed on /dev/pts/8",
            NOW,
        )
        .unwrap();
        assert_eq!(m.format, Format::Rfc3164);
        assert_eq!((m.facility, m.severity), (4, 2));
        let want = (days_from_civil(2026, 10, 11) * 86_400 + 22 * 3600 + 14 * 60 + 15) * NS_PER_SEC;
        assert_eq!(m.timestamp, Some(want));
        assert_eq!(m.hostname.as_deref(), Some("mymachine"));
        assert_eq!(m.app_name.as_deref(), Some("su"));
        assert_eq!(m.proc_id.as_deref(), Some("230"));
        assert_eq!(m.message, "'su root' failed on /dev/pts/8");
    }

    #[test]
    fn year_is_the_closest_to_now() {
        let m = parse_msg(b"<13>Jan  2 00:00:00 h app: x", NOW).unwrap();
        assert_eq!(
            m.timestamp,
            Some(days_from_civil(2027, 1, 2) * 86_400 * NS_PER_SEC)
        );
    }

    #[test]
    fn without_host_or_tag_or_header() {
        let m = parse_msg(b"<13>Nov 30 01:02:03 app: hello", NOW).unwrap();
        assert_eq!(m.hostname, None);
        assert_eq!(m.app_name.as_deref(), Some("app"));
        assert_eq!(m.message, "hello");
        let m = parse_msg(b"<13>Nov 30 01:02:03 host just words", NOW).unwrap();
        assert_eq!(m.hostname.as_deref(), Some("host"));
        assert_eq!(m.app_name, None);
        assert_eq!(m.message, "just words");
        let m = parse_msg(b"<13>not a header at all", NOW).unwrap();
        assert_eq!(m.timestamp, None);
        assert_eq!(m.message, "not a header at all");
        let m = parse_msg(b"no priority", NOW).unwrap();
        assert_eq!(m.format, Format::Raw);
        assert_eq!((m.facility, m.severity), (1, 5));
    }
}
