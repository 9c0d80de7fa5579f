//! Mapping tests and parser robustness for [`super`].

use super::*;
use proptest::prelude::*;

#[test]
fn rfc5424_maps_to_labels_and_metadata() {
    let m = parse(
        br#"<190>1 2026-11-30T01:02:03.5Z web-1 nginx 4242 ACCESS [origin@123 ip="10.0.0.1"] GET / 200"#,
        0,
    )
    .unwrap();
    let (labels, e) = to_entry(m, 7, &PushLimits::default()).unwrap();
    assert_eq!(
        labels.to_string(),
        r#"{facility="local7", hostname="web-1", service_name="nginx"}"#
    );
    assert_eq!(e.line, "GET / 200");
    assert_eq!(e.ts, 1_796_000_523_500_000_000);
    let md: Vec<(&str, &str)> = e
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        md,
        vec![
            ("severity", "info"),
            ("proc_id", "4242"),
            ("msg_id", "ACCESS"),
            ("origin_123_ip", "10.0.0.1"),
            ("detected_level", "info"),
        ]
    );
}

#[test]
fn defaults_without_header_fields() {
    let (labels, e) = to_entry(
        parse(b"<11>1 - - - - - - \xef\xbb\xbfboom", 0).unwrap(),
        99,
        &PushLimits::default(),
    )
    .unwrap();
    assert_eq!(
        labels.to_string(),
        r#"{facility="user", service_name="unknown_service"}"#
    );
    assert_eq!(e.ts, 99);
    assert_eq!(e.line, "boom");
    assert_eq!(e.metadata.last().unwrap().1, "error");
}

#[test]
fn limits_apply() {
    let limits = PushLimits {
        max_line_bytes: 3,
        ..PushLimits::default()
    };
    let m = parse(b"<13>1 - h a - - - too long", 0).unwrap();
    assert!(matches!(
        to_entry(m, 0, &limits),
        Err(PushError::LineTooLong { .. })
    ));
}

#[test]
fn bad_priorities() {
    assert_eq!(parse(b"", 0), Err(SyslogError::Empty));
    assert!(matches!(parse(b"<192>x", 0), Err(SyslogError::Priority(_))));
    assert!(matches!(parse(b"<1a>x", 0), Err(SyslogError::Priority(_))));
    assert!(matches!(
        parse(b"<12345678", 0),
        Err(SyslogError::Priority(_))
    ));
}

proptest! {
    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(m) = parse(&bytes, 0) {
            let _ = to_entry(m, 0, &PushLimits::default());
        }
    }

    #[test]
    fn header_prefixes_never_panic(tail in "[ -~]{0,80}") {
        for head in ["<13>1 ", "<13>Nov 30 01:02:03 ", "<13>1 - h a p m [x "] {
            let s = format!("{head}{tail}");
            let _ = parse(s.as_bytes(), 0);
        }
    }
}
