//! RFC 5424 headers and structured data, after `<PRI>1 `.

use super::{text, Format, SdElement, SyslogError, SyslogMessage};
use crate::jsondoc::time::{parse_time_str, DocTime};

/// Parses `TIMESTAMP HOST APP PROCID MSGID SD [MSG]`.
pub(super) fn parse(rest: &[u8], facility: u8, severity: u8) -> Result<SyslogMessage, SyslogError> {
    let mut cur = rest;
    let mut field = |what: &str| -> Result<Option<String>, SyslogError> {
        let end = cur
            .iter()
            .position(|b| *b == b' ')
            .ok_or_else(|| SyslogError::Header(format!("missing {what} and what follows it")))?;
        let value = &cur[..end];
        cur = &cur[end + 1..];
        if value.is_empty() {
            return Err(SyslogError::Header(format!("empty {what}")));
        }
        Ok((value != b"-").then(|| text(value)))
    };
    let ts = field("timestamp")?;
    let hostname = field("hostname")?;
    let app_name = field("app-name")?;
    let proc_id = field("procid")?;
    let msg_id = field("msgid")?;
    let timestamp = match ts {
        None => None,
        Some(t) => match parse_time_str(&t) {
            Ok(DocTime::Nanos(ns)) => Some(ns),
            Ok(DocTime::Now) => None,
            Err(e) => return Err(SyslogError::Header(e)),
        },
    };
    let (structured_data, msg) = structured_data(cur)?;
    let msg = msg.strip_prefix(b" ").unwrap_or(msg);
    Ok(SyslogMessage {
        format: Format::Rfc5424,
        facility,
        severity,
        timestamp,
        hostname,
        app_name,
        proc_id,
        msg_id,
        structured_data,
        message: text(msg),
    })
}

/// Parses `-` or `[id p="v" ...]...`; returns the elements and the rest.
fn structured_data(b: &[u8]) -> Result<(Vec<SdElement>, &[u8]), SyslogError> {
    if b.is_empty() {
        return Ok((Vec::new(), b));
    }
    if b[0] == b'-' {
        return Ok((Vec::new(), &b[1..]));
    }
    let bad = |m: &str| SyslogError::StructuredData(m.to_string());
    let mut out = Vec::new();
    let mut i = 0;
    while b.get(i) == Some(&b'[') {
        i += 1;
        let id_end = i + b[i..]
            .iter()
            .position(|c| *c == b' ' || *c == b']')
            .ok_or_else(|| bad("unterminated element"))?;
        if id_end == i {
            return Err(bad("empty sd-id"));
        }
        let mut el = SdElement {
            id: text(&b[i..id_end]),
            params: Vec::new(),
        };
        i = id_end;
        loop {
            match b.get(i) {
                Some(b']') => {
                    i += 1;
                    break;
                }
                Some(b' ') => i += 1,
                None => return Err(bad("unterminated element")),
                Some(_) => {
                    let eq = i + b[i..]
                        .iter()
                        .position(|c| *c == b'=')
                        .ok_or_else(|| bad("parameter without '='"))?;
                    let name = text(&b[i..eq]);
                    if name.is_empty() || name.contains([' ', ']', '"']) {
                        return Err(bad("invalid parameter name"));
                    }
                    if b.get(eq + 1) != Some(&b'"') {
                        return Err(bad("parameter value not quoted"));
                    }
                    let (value, next) =
                        quoted(b, eq + 2).ok_or_else(|| bad("unterminated value"))?;
                    el.params.push((name, value));
                    i = next;
                }
            }
        }
        out.push(el);
    }
    Ok((out, &b[i..]))
}

/// Reads a value from `start` to the closing quote, unescaping `\"`, `\\`
/// and `\]`; returns it and the index after the quote.
fn quoted(b: &[u8], start: usize) -> Option<(String, usize)> {
    let mut v = Vec::new();
    let mut i = start;
    loop {
        match *b.get(i)? {
            b'"' => return Some((text(&v), i + 1)),
            b'\\' if matches!(b.get(i + 1), Some(b'"' | b'\\' | b']')) => {
                v.push(b[i + 1]);
                i += 2;
            }
            c => {
                v.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse as parse_msg;
    use super::*;

    #[test]
    fn full_header_with_structured_data() {
        let m = parse_msg(
            br#"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="App\"lication" eventID="1011"][examplePriority@32473 class="high"] An application event"#,
            0,
        )
        .unwrap();
        assert_eq!(m.format, Format::Rfc5424);
        assert_eq!((m.facility, m.severity), (20, 5));
        assert_eq!(m.timestamp, Some(1_065_910_455_003_000_000));
        assert_eq!(m.hostname.as_deref(), Some("mymachine.example.com"));
        assert_eq!(m.app_name.as_deref(), Some("evntslog"));
        assert_eq!(m.proc_id, None);
        assert_eq!(m.msg_id.as_deref(), Some("ID47"));
        assert_eq!(m.structured_data.len(), 2);
        assert_eq!(
            m.structured_data[0].params[1],
            ("eventSource".into(), "App\"lication".into())
        );
        assert_eq!(m.structured_data[1].id, "examplePriority@32473");
        assert_eq!(m.message, "An application event");
    }

    #[test]
    fn nil_fields_and_no_message() {
        let m = parse_msg(b"<34>1 - - - - - -", 0).unwrap();
        assert_eq!(m.timestamp, None);
        assert_eq!(m.hostname, None);
        assert_eq!(m.message, "");
        let m = parse_msg(
            b"<34>1 2003-08-24T05:14:15.000003-07:00 h su 77 - - hi there",
            0,
        )
        .unwrap();
        assert_eq!(m.timestamp, Some(1_061_727_255_000_003_000));
        assert_eq!(m.proc_id.as_deref(), Some("77"));
        assert_eq!(m.message, "hi there");
    }

    #[test]
    fn malformed_headers_are_errors() {
        for bad in [
            &b"<34>1 2003-10-11T22:14:15Z host"[..],
            b"<34>1 yesterday h a p m - x",
            b"<34>1 - h a p m [id a=\"1\" x",
            b"<34>1 - h a p m [id a=1] x",
            b"<34>1 - h a p m [] x",
        ] {
            assert!(
                parse_msg(bad, 0).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
