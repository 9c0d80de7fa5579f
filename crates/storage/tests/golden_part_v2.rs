//! A golden part: a version 2 part file (columnar blocks of block version 2
//! against the part's shared dictionaries), written once and committed under
//! `tests/golden/`. Every later build must open it, list its streams and
//! blocks as written, decode every row byte for byte, and never rule out a
//! needle its blocks hold. Regenerate only when part version 2's golden file
//! must be written anew (`cargo test -p runakefli-storage --test
//! golden_part_v2 -- --ignored`); a new part version gets a new file.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::Entry;
use runakefli_storage::names;
use runakefli_storage::part::{BlockFormat, Part, PartInfo, PartWriter};
use std::path::PathBuf;

/// The part's id (its file name) and order.
const PART_ID: u64 = 0x2a;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// What the manifest recorded about the golden part when it was written.
fn golden_info() -> PartInfo {
    PartInfo {
        id: PART_ID,
        order: PART_ID,
        level: 1,
        rows: ROWS_PER_STREAM as u64 * STREAMS.len() as u64,
        bytes: std::fs::metadata(golden_dir().join(names::part_file(PART_ID)))
            .map(|m| m.len())
            .unwrap_or(0),
    }
}

/// Stream ids of the part, ascending; the last one writes text lines.
const STREAMS: [u64; 3] = [3, 17, 40];
/// Rows per stream: more than one block's worth, so streams span blocks and
/// the shared dictionaries serve several blocks.
const ROWS_PER_STREAM: usize = 8_500;

/// A counter-based mix (fixed here forever, like the file it describes).
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x0dd5_eed0_0002;
    z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 29)
}

/// The rows of stream `sid`, in time order.
fn rows(sid: u64) -> Vec<Entry> {
    let base = 1_796_000_000_000_000_000i64 + sid as i64;
    (0..ROWS_PER_STREAM as u64)
        .map(|i| {
            // Values repeat with a prime period, so the file stays small.
            let r = mix((sid << 32) | (i % 251));
            let line = if sid == STREAMS[2] {
                format!(
                    "2026-12-06 11:{:02}:{:02} {} [pool-{}] order {} shipped to 10.1.{}.{} session {:010x}",
                    i / 60 % 60,
                    i % 60,
                    ["INFO", "WARN", "ERROR"][(r % 3) as usize],
                    r >> 60,
                    (r >> 20) & 0xfff,
                    (r >> 8) & 0xff,
                    (r >> 16) & 0xff,
                    mix(r % 97) & 0xff_ffff_ffff
                )
            } else {
                format!(
                    r#"{{"level":"{}","msg":"request {}","trace_id":"{:016x}{:016x}","status":{},"took":"{}.{:03}s","user":"u{}","ip":"192.168.{}.{}"}}"#,
                    ["info", "info", "warn", "error"][(r % 4) as usize],
                    ["done", "started", "failed"][(r >> 2) as usize % 3],
                    mix(r % 61),
                    mix(r % 67),
                    [200, 404, 500][(r >> 4) as usize % 3],
                    (r >> 6) & 3,
                    (r >> 9) & 0x3ff,
                    (r >> 20) & 0xfff,
                    (r >> 32) & 0xff,
                    (r >> 40) & 0xff
                )
            };
            let metadata = if i % 4 == 0 {
                vec![("pod".to_string(), format!("api-{}", sid))]
            } else {
                Vec::new()
            };
            Entry {
                ts: base + i as i64 * 1_000_000,
                line,
                metadata,
            }
        })
        .collect()
}

/// Writes the golden part into `tests/golden/`.
#[test]
#[ignore]
fn write_golden_part_v2() {
    let dir = golden_dir();
    std::fs::create_dir_all(&dir).expect("create tests/golden");
    let mut w =
        PartWriter::create(&dir, PART_ID, BlockFormat::Columnar, 9).expect("create the part");
    for sid in STREAMS {
        w.write_stream(sid, rows(sid).into_iter().map(Ok))
            .expect("write a stream");
    }
    let info = w.finish(PART_ID, 1).expect("finish the part");
    assert_eq!(info, golden_info());
}

fn open_golden() -> Part {
    let path = golden_dir().join(names::part_file(PART_ID));
    Part::open(&path, golden_info()).expect("the golden v2 part opens")
}

#[test]
fn golden_v2_part_lists_its_streams_and_blocks() {
    let part = open_golden();
    assert_eq!(part.format(), BlockFormat::Columnar);
    assert_eq!(part.stream_ids(), &STREAMS);
    assert!(
        !part.dicts().is_empty(),
        "the part keeps shared dictionaries its blocks refer to"
    );
    for sid in STREAMS {
        let blocks = part.stream_blocks(sid);
        assert!(blocks.len() > 1, "stream {sid} spans blocks");
        let rows: u64 = blocks.iter().map(|b| u64::from(b.meta.rows)).sum();
        assert_eq!(rows, ROWS_PER_STREAM as u64, "stream {sid}");
        for b in blocks {
            assert_eq!(part.block_version(b), Some(2));
        }
    }
}

#[test]
fn golden_v2_part_decodes_every_row_as_written() {
    let part = open_golden();
    for sid in STREAMS {
        let want = rows(sid);
        let mut got = Vec::with_capacity(want.len());
        for b in part.stream_blocks(sid) {
            let d = part.decode(b).expect("a golden block decodes");
            assert_eq!(
                (b.meta.min_ts, b.meta.max_ts),
                (d.ts[0], d.ts[d.ts.len() - 1])
            );
            got.extend(
                d.ts.into_iter()
                    .zip(d.lines)
                    .zip(d.metadata)
                    .map(|((ts, line), metadata)| Entry { ts, line, metadata }),
            );
        }
        assert_eq!(got, want, "stream {sid}");
    }
}

#[test]
fn golden_v2_part_never_rules_out_a_needle_its_blocks_hold() {
    let part = open_golden();
    for sid in STREAMS {
        let want = rows(sid);
        let mut at = 0;
        for b in part.stream_blocks(sid) {
            let block_rows = &want[at..at + b.meta.rows as usize];
            at += b.meta.rows as usize;
            let line = &block_rows[block_rows.len() / 2].line;
            for token in line.split(|c: char| !c.is_ascii_alphanumeric()) {
                if token.len() >= 4 {
                    assert!(
                        part.may_contain(b, &[token.to_string()]).expect("probe"),
                        "stream {sid}: {token:?}"
                    );
                }
            }
            let absent = "no_such_token_in_any_golden_row";
            assert!(block_rows.iter().all(|r| !r.line.contains(absent)));
            assert!(!part.may_contain(b, &[absent.to_string()]).expect("probe"));
        }
    }
}
