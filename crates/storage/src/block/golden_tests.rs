//! Golden blocks: files written once by an older build, committed, and read
//! back by every later one. A reader that stops understanding an old block,
//! or reads it differently, fails here. `testdata/block_v1.bin` is a version 1
//! block; `testdata/block_v2.bin` a version 2 block with every optional
//! field of that version (grams, template short grams, per column token
//! feature lengths) and every column encoding a standalone block can pick.
//!
//! `testdata/block_v2_text.bin` holds the same rows written after text
//! lines were first split into text templates (column kind 2, `boundaries`
//! bits 8–13) and long numbers and hex ids got stride grams (column flag
//! bit 5), both in issue 44.
//!
//! The rows are drawn here, by a generator of this file's own, so a change
//! to the test workload generator cannot change what a golden file must
//! hold. Regenerate a file only when its format version is new (and keep the
//! old file for the old version).

use super::layout::{BlockHeader, TOKEN_LEN_UNKNOWN};
use super::tokens::FEATURES;
use super::*;

/// A row as the golden files hold it: time, line, structured metadata.
type OwnedRow = (i64, String, Vec<(String, String)>);

/// splitmix64: fixed here forever, like the file it generates.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn hex(&mut self, digits: usize) -> String {
        (0..digits)
            .map(|_| char::from(b"0123456789abcdef"[self.below(16) as usize]))
            .collect()
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

const LEVELS: &[&str] = &["info", "info", "info", "warn", "error", "debug"];
const PATHS: &[&str] = &["/api/v1/orders", "/api/v1/cart", "/healthz", "/login"];
const WORDS: &[&str] = &["checkout", "payment", "declined", "retrying", "upstream"];

/// The rows of `testdata/block_v2.bin`: JSON lines whose fields take every
/// typed encoding (packed hex trace ids, uuids, decimals, timestamps, IPv4,
/// integers, small dictionaries, nested objects), log4j-style text lines,
/// and structured metadata on some rows.
fn golden_v2_rows() -> Vec<OwnedRow> {
    let mut d = Draw(0x5eed_0002);
    (0..600i64)
        .map(|i| {
            let ts = 1_796_000_000_000_000_000 + i * 1_000_003 + d.below(1000) as i64;
            let trace = d.hex(32);
            let line = if i % 5 == 4 {
                format!(
                    "2026-12-06 10:{:02}:{:02},{:03} {} [worker-{}] {} order {} for user u{}x{} from 10.{}.{}.{}",
                    i / 60 % 60,
                    i % 60,
                    d.below(1000),
                    d.pick(LEVELS).to_uppercase(),
                    d.below(8),
                    d.pick(WORDS),
                    1_000_000_000_000 + d.below(9_000_000_000_000),
                    d.below(100),
                    d.hex(3),
                    d.below(256),
                    d.below(256),
                    d.below(256)
                )
            } else {
                format!(
                    concat!(
                        r#"{{"ts":"2026-12-06T10:{:02}:{:02}.{:03}Z","level":"{}","msg":"{} {}","#,
                        r#""trace_id":"{}","request_id":"{}-{}-4{}-a{}-{}","client_ip":"10.{}.{}.{}","#,
                        r#""status":{},"duration":{}.{:03},"bytes":{},"path":"{}","#,
                        r#""k8s":{{"pod":"api-{}","node":"node-{}"}}}}"#
                    ),
                    i / 60 % 60,
                    i % 60,
                    d.below(1000),
                    d.pick(LEVELS),
                    d.pick(WORDS),
                    d.pick(WORDS),
                    trace,
                    d.hex(8),
                    d.hex(4),
                    d.hex(3),
                    d.hex(3),
                    d.hex(12),
                    d.below(256),
                    d.below(256),
                    d.below(256),
                    [200, 200, 201, 404, 500][d.below(5) as usize],
                    d.below(3),
                    d.below(1000),
                    d.below(100_000),
                    d.pick(PATHS),
                    d.hex(5),
                    d.below(4)
                )
            };
            let metadata = if i % 3 == 0 {
                vec![("trace_id".to_string(), trace)]
            } else {
                Vec::new()
            };
            (ts, line, metadata)
        })
        .collect()
}

fn encode_rows(rows: &[OwnedRow]) -> Vec<u8> {
    let mut b = BlockBuilder::new();
    for (ts, line, md) in rows {
        b.push(*ts, line, md);
    }
    let mut out = Vec::new();
    b.finish(9, &mut out);
    out
}

/// Regenerates `testdata/block_v2.bin`; run only when block version 2's
/// golden file must be written anew (never for a new version: add a file).
#[test]
#[ignore]
fn write_golden_v2_block() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/block/testdata/block_v2.bin"
    );
    std::fs::write(path, encode_rows(&golden_v2_rows())).expect("write the golden block");
}

#[test]
fn golden_v2_block_still_decodes_to_its_rows() {
    let buf: &[u8] = include_bytes!("testdata/block_v2.bin");
    let rows = golden_v2_rows();
    let d = decode_block(buf).expect("the golden v2 block decodes");
    assert_eq!(d.ts, rows.iter().map(|r| r.0).collect::<Vec<_>>());
    assert_eq!(
        d.lines,
        rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>()
    );
    assert_eq!(
        d.metadata,
        rows.iter().map(|r| r.2.clone()).collect::<Vec<_>>()
    );
}

#[test]
fn golden_v2_block_keeps_every_optional_field_of_its_version() {
    let buf: &[u8] = include_bytes!("testdata/block_v2.bin");
    let h = BlockHeader::decode(buf).expect("the golden v2 header decodes");
    assert_eq!(h.version, 2);
    assert!(h.has_grams, "header flag bit 0: grams");
    assert!(h.has_short_grams, "header flag bit 1: template short grams");
    assert!(
        h.columns
            .iter()
            .any(|c| c.feature_token_lens != [TOKEN_LEN_UNKNOWN; FEATURES]),
        "column flag bit 4: token feature lengths"
    );
    let encodings: std::collections::BTreeSet<String> = h
        .columns
        .iter()
        .map(|c| format!("{:?}", c.encoding))
        .collect();
    for want in ["Hex", "Decimal", "Timestamp", "Ipv4", "Plain"] {
        assert!(
            encodings.iter().any(|e| e.starts_with(want)),
            "a {want} column in {encodings:?}"
        );
    }
}

#[test]
fn golden_v2_block_answers_needles_as_when_it_was_written() {
    let buf: &[u8] = include_bytes!("testdata/block_v2.bin");
    let rows = golden_v2_rows();
    // Needles held by the block (whole ids, id fragments, numbers, phrases,
    // addresses) must never be ruled out: that would lose lines.
    let held: Vec<String> = vec![
        rows[7].1[120..150].to_string(),
        "declined".into(),
        "payment declined".into(),
        rows[3]
            .2
            .first()
            .map(|m| m.1.clone())
            .unwrap_or_else(|| "info".into()),
    ];
    for n in &held {
        assert!(
            rows.iter().any(|r| r.1.contains(n.as_str())),
            "{n:?} is a line fragment"
        );
        assert!(block_may_contain(buf, std::slice::from_ref(n)), "{n:?}");
    }
    for (i, row) in rows.iter().enumerate().filter(|(i, _)| i % 37 == 0) {
        for token in row.1.split(|c: char| !c.is_ascii_alphanumeric()) {
            if token.len() >= 3 {
                assert!(
                    block_may_contain(buf, &[token.to_string()]),
                    "row {i}: {token:?}"
                );
            }
        }
    }
    // Needles no row holds are ruled out by the header and bloom.
    for absent in [
        "zebra",
        "a_never_seen_token_42",
        "0123456789abcdef0123456789abcdef0",
    ] {
        assert!(rows.iter().all(|r| !r.1.contains(absent)));
        assert!(!block_may_contain(buf, &[absent.to_string()]), "{absent:?}");
    }
}

/// Writes `testdata/block_v2_text.bin` (the golden rows with text templates);
/// run only to write that file anew for a new format, never to make a test pass.
#[test]
#[ignore]
fn write_golden_v2_text_block() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/block/testdata/block_v2_text.bin"
    );
    std::fs::write(path, encode_rows(&golden_v2_rows())).expect("write the golden block");
}

#[test]
fn golden_v2_text_block_decodes_and_keeps_its_text_templates() {
    let buf: &[u8] = include_bytes!("testdata/block_v2_text.bin");
    let rows = golden_v2_rows();
    let d = decode_block(buf).expect("the golden text block decodes");
    assert_eq!(
        d.lines,
        rows.iter().map(|r| r.1.clone()).collect::<Vec<_>>()
    );
    assert_eq!(d.ts, rows.iter().map(|r| r.0).collect::<Vec<_>>());
    let h = BlockHeader::decode(buf).expect("the golden text header decodes");
    let text: Vec<String> = h
        .columns
        .iter()
        .filter(|c| c.kind == super::layout::ColumnKind::Text)
        .map(|c| String::from_utf8_lossy(&c.name).into_owned())
        .collect();
    assert!(text.iter().any(|n| n.starts_with('#')), "{text:?}");
    assert!(text.iter().any(|n| n.starts_with('~')), "{text:?}");
    assert_eq!(h.boundaries & (1 << 15), 0);
    assert_ne!(h.boundaries & (0x3f << 8), 0, "text template bytes");
    assert!(
        h.columns.iter().any(|c| c.has_stride_grams),
        "column flag bit 5: stride grams"
    );
    for (i, row) in rows.iter().enumerate().filter(|(i, _)| i % 5 == 4) {
        for token in row.1.split(' ').filter(|t| t.len() >= 3) {
            assert!(
                block_may_contain(buf, &[token.to_string()]),
                "row {i}: {token:?}"
            );
        }
    }
    for absent in ["zebra", "a_never_seen_token_42", "fedcba9876543"] {
        assert!(rows.iter().all(|r| !r.1.contains(absent)));
        assert!(!block_may_contain(buf, &[absent.to_string()]), "{absent:?}");
    }
}
