//! Syslog: RFC 5424 and RFC 3164 (BSD) messages, and the two TCP framings of
//! RFC 6587 (octet counting and newline-delimited) in [`framing`].
//!
//! [`parse`] recognises the format by the version digit after `<PRI>`
//! (`<34>1 ...` is RFC 5424) and is lenient like common receivers: a message
//! without `<PRI>` is kept whole as the text of a `user.notice` message; a
//! BSD header that does not parse is kept as part of the text.
//!
//! Mapping to an entry ([`to_entry`], a decision of this project):
//! - Stream labels (few, low-cardinality): `service_name` = APP-NAME / TAG
//!   (`unknown_service` without one), `hostname` = HOSTNAME (when present),
//!   `facility` = the facility keyword (`kern`, `user`, `daemon`, `local0` ...).
//!   Severity, process id and message id vary per message, so they are not labels.
//! - Line: MSG (a leading UTF-8 BOM removed); invalid UTF-8 is replaced.
//! - Time: the header's timestamp; RFC 3164 has no year or zone, so it is
//!   read as UTC in the year that puts it closest to the time of receipt;
//!   without a timestamp (`-`), the time of receipt.
//! - Structured metadata: `severity` (keyword: `emerg` ... `debug`),
//!   `proc_id`, `msg_id`, each structured-data parameter as
//!   `<SD-ID>_<name>` (sanitised as a label name: `origin@123_ip` ->
//!   `origin_123_ip`), then `detected_level` derived from the severity
//!   (`emerg`/`alert`/`crit` -> `critical`, `err` -> `error`,
//!   `warning` -> `warn`, `notice`/`info` -> `info`, `debug`).

pub mod framing;
mod rfc3164;
mod rfc5424;
pub mod time;

use crate::discover::{SERVICE_NAME, UNKNOWN_SERVICE};
use crate::level::DETECTED_LEVEL;
use crate::validate::{check_entry, check_label_pairs, sanitize_label_name};
use crate::{PushError, PushLimits};
use runakefli_model::{Entry, Labels};
use thiserror::Error;

/// Which header format a message used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG`).
    Rfc5424,
    /// RFC 3164 / BSD (`<PRI>Mmm dd hh:mm:ss HOST TAG[PID]: MSG`).
    Rfc3164,
    /// No recognisable header: the whole message is the text.
    Raw,
}

/// One structured-data element of RFC 5424: `[id name="value" ...]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SdElement {
    /// SD-ID, e.g. `timeQuality` or `origin@32473`.
    pub id: String,
    /// Parameters in order, values unescaped.
    pub params: Vec<(String, String)>,
}

/// A parsed syslog message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyslogMessage {
    /// Header format.
    pub format: Format,
    /// Facility code, 0..=23.
    pub facility: u8,
    /// Severity code, 0 (emerg) ..= 7 (debug).
    pub severity: u8,
    /// Time in nanoseconds since the epoch, when the header has one.
    pub timestamp: Option<i64>,
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// APP-NAME (RFC 5424) or TAG (RFC 3164).
    pub app_name: Option<String>,
    /// PROCID, or the `[pid]` of a BSD tag.
    pub proc_id: Option<String>,
    /// MSGID (RFC 5424 only).
    pub msg_id: Option<String>,
    /// Structured data (RFC 5424 only).
    pub structured_data: Vec<SdElement>,
    /// MSG.
    pub message: String,
}

/// Why a syslog message could not be parsed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SyslogError {
    /// The message is empty.
    #[error("empty syslog message")]
    Empty,
    /// `<PRI>` is malformed or out of range.
    #[error("invalid syslog priority: {0}")]
    Priority(String),
    /// An RFC 5424 header field is malformed.
    #[error("invalid rfc 5424 header: {0}")]
    Header(String),
    /// RFC 5424 structured data is malformed.
    #[error("invalid rfc 5424 structured data: {0}")]
    StructuredData(String),
}

/// Facility keywords, by code.
pub const FACILITIES: [&str; 24] = [
    "kern",
    "user",
    "mail",
    "daemon",
    "auth",
    "syslog",
    "lpr",
    "news",
    "uucp",
    "cron",
    "authpriv",
    "ftp",
    "ntp",
    "security",
    "console",
    "solaris-cron",
    "local0",
    "local1",
    "local2",
    "local3",
    "local4",
    "local5",
    "local6",
    "local7",
];

/// Severity keywords, by code.
pub const SEVERITIES: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
];

/// Loki's `detected_level` for a severity code.
pub fn detected_level(severity: u8) -> &'static str {
    match severity {
        0..=2 => "critical",
        3 => "error",
        4 => "warn",
        5 | 6 => "info",
        _ => "debug",
    }
}

/// Parses one message (one frame). `now_ns` resolves RFC 3164's missing year.
pub fn parse(raw: &[u8], now_ns: i64) -> Result<SyslogMessage, SyslogError> {
    let raw = trim_trailing_newlines(raw);
    if raw.is_empty() {
        return Err(SyslogError::Empty);
    }
    let Some((pri, rest)) = split_priority(raw)? else {
        return Ok(SyslogMessage {
            format: Format::Raw,
            facility: 1,
            severity: 5,
            timestamp: None,
            hostname: None,
            app_name: None,
            proc_id: None,
            msg_id: None,
            structured_data: Vec::new(),
            message: text(raw),
        });
    };
    let (facility, severity) = ((pri / 8) as u8, (pri % 8) as u8);
    if rest.starts_with(b"1 ") {
        rfc5424::parse(&rest[2..], facility, severity)
    } else {
        Ok(rfc3164::parse(rest, facility, severity, now_ns))
    }
}

fn trim_trailing_newlines(mut b: &[u8]) -> &[u8] {
    while let [head @ .., b'\n' | b'\r' | b'\0'] = b {
        b = head;
    }
    b
}

/// `<PRI>` and the rest, `None` when the message does not start with `<`.
fn split_priority(raw: &[u8]) -> Result<Option<(u16, &[u8])>, SyslogError> {
    if raw.first() != Some(&b'<') {
        return Ok(None);
    }
    let close = raw
        .iter()
        .take(6)
        .position(|b| *b == b'>')
        .ok_or_else(|| SyslogError::Priority("missing '>'".into()))?;
    let digits = &raw[1..close];
    if digits.is_empty() || digits.len() > 3 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(SyslogError::Priority(text(&raw[..=close])));
    }
    let pri: u16 = digits.iter().fold(0, |a, d| a * 10 + u16::from(d - b'0'));
    if pri > 191 {
        return Err(SyslogError::Priority(format!("{pri} is out of range")));
    }
    Ok(Some((pri, &raw[close + 1..])))
}

/// Bytes as text, invalid UTF-8 replaced.
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Maps a message to its stream labels and entry (see the module header),
/// checked against `limits`.
pub fn to_entry(
    msg: SyslogMessage,
    now_ns: i64,
    limits: &PushLimits,
) -> Result<(Labels, Entry), PushError> {
    let mut pairs = vec![(
        SERVICE_NAME.to_string(),
        msg.app_name
            .clone()
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| UNKNOWN_SERVICE.to_string()),
    )];
    if let Some(h) = msg.hostname.clone().filter(|h| !h.is_empty()) {
        pairs.push(("hostname".into(), h));
    }
    pairs.push((
        "facility".into(),
        FACILITIES[usize::from(msg.facility.min(23))].to_string(),
    ));
    let labels = check_label_pairs(pairs, limits)?;
    let mut metadata = vec![(
        "severity".to_string(),
        SEVERITIES[usize::from(msg.severity.min(7))].to_string(),
    )];
    if let Some(p) = msg.proc_id {
        metadata.push(("proc_id".into(), p));
    }
    if let Some(m) = msg.msg_id {
        metadata.push(("msg_id".into(), m));
    }
    for sd in msg.structured_data {
        for (name, value) in sd.params {
            metadata.push((sanitize_label_name(&format!("{}_{}", sd.id, name)), value));
        }
    }
    metadata.push((
        DETECTED_LEVEL.to_string(),
        detected_level(msg.severity).to_string(),
    ));
    let line = match msg.message.strip_prefix('\u{feff}') {
        Some(s) => s.to_string(),
        None => msg.message,
    };
    check_entry(&labels, line.len(), &metadata, limits)?;
    Ok((
        labels,
        Entry {
            ts: msg.timestamp.unwrap_or(now_ns),
            line,
            metadata,
        },
    ))
}

#[cfg(test)]
mod tests;
