//! Damage inside a part's blocks, past what opening a part verifies (header,
//! footer, index), is found when the block is read. The store then keeps a
//! copy of the part in the quarantine with a reason naming the block, logs it,
//! counts it (`damaged_blocks`, `quarantined_files`), and serves every other
//! block; a merge of the part leaves the damaged block out while the
//! quarantined copy keeps its bytes.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId,
};
use runakefli_storage::manifest::Manifest;
use runakefli_storage::part::Part;
use runakefli_storage::{names, StorageConfig};
use runakefli_storage_query::EmbeddedBackend;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 2026-11-29 00:00 UTC.
const T0: i64 = 1_795_910_400_000_000_000;
const STREAMS: usize = 3;
const ROWS: usize = 300;

fn open(dir: &Path) -> Arc<EmbeddedBackend> {
    let mut c = StorageConfig::new(dir);
    c.background = false;
    EmbeddedBackend::open(c).unwrap()
}

fn push_all(s: &EmbeddedBackend, round: usize) {
    for st in 0..STREAMS {
        let entries = (0..ROWS)
            .map(|i| Entry {
                ts: T0 + (round * ROWS + i) as i64 * 1_000,
                line: format!(
                    r#"{{"round":{round},"stream":{st},"i":{i},"msg":"request {} done","ms":{}}}"#,
                    i * 7919 % 1000,
                    i % 97
                ),
                metadata: vec![],
            })
            .collect();
        let req = PushRequest {
            streams: vec![PushStream {
                labels: Labels::new(vec![("app".into(), format!("s{st}"))]),
                entries,
            }],
        };
        s.storage().append(&TenantId::new("t"), &req).unwrap();
    }
}

/// Lines per stream label; an error if the scan fails.
fn lines(s: &EmbeddedBackend) -> Result<BTreeMap<String, Vec<String>>, String> {
    let req = ScanRequest {
        tenant: TenantId::new("t"),
        matchers: vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()],
        start: i64::MIN,
        end: i64::MAX,
        direction: Direction::Forward,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    s.scan(&req, &mut |info, b| {
        let k = info.labels.get("app").unwrap().to_string();
        out.entry(k)
            .or_default()
            .extend(b.entries.into_iter().map(|e| e.line));
        ScanControl::Continue
    })
    .map_err(|e| e.to_string())?;
    Ok(out)
}

fn partition(dir: &Path) -> PathBuf {
    names::partition_dir(&names::tenant_dir(dir, "t"), names::day_of(T0))
}

/// The partition's parts with their block offsets and lengths.
fn parts(dir: &Path) -> Vec<(PathBuf, Vec<(u64, u32)>)> {
    let m = Manifest::load(&partition(dir)).unwrap().unwrap();
    m.parts
        .iter()
        .map(|info| {
            let path = partition(dir).join(names::part_file(info.id));
            let p = Part::open(&path, info.clone()).unwrap();
            let mut blocks: Vec<(u64, u32)> = p
                .stream_ids()
                .iter()
                .flat_map(|sid| p.stream_blocks(*sid).iter().map(|b| (b.offset, b.len)))
                .collect();
            blocks.sort();
            (path, blocks)
        })
        .collect()
}

/// Pushes two rounds, flushes, merges them into one part, closes the store,
/// and flips 8 bytes three quarters into block `pick(blocks)` of that part.
fn merged_part_with_a_damaged_block(dir: &Path, pick: impl Fn(usize) -> usize) {
    let s = open(dir);
    for round in 0..2 {
        push_all(&s, round);
        s.storage().flush().unwrap();
    }
    assert!(s.storage().merge_now(true).unwrap() >= 1);
    drop(s);
    let ps = parts(dir);
    assert_eq!(ps.len(), 1, "one merged part");
    let (path, blocks) = &ps[0];
    let (off, len) = blocks[pick(blocks.len())];
    let mut bytes = std::fs::read(path).unwrap();
    for k in 0..8 {
        bytes[off as usize + len as usize * 3 / 4 + k] ^= 0xff;
    }
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn a_damaged_block_is_quarantined_logged_counted_and_the_rest_served() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    push_all(&s, 0);
    s.storage().flush().unwrap();
    let before = lines(&s).unwrap();
    drop(s);
    let ps = parts(d.path());
    assert_eq!(ps.len(), 1);
    let (path, blocks) = &ps[0];
    assert_eq!(blocks.len(), STREAMS, "one block per stream");
    // Flip bytes in the middle of the second block (past its header).
    let (off, len) = blocks[1];
    let mut bytes = std::fs::read(path).unwrap();
    for k in 0..4 {
        bytes[off as usize + len as usize / 2 + k] ^= 0x5a;
    }
    std::fs::write(path, &bytes).unwrap();

    let s = open(d.path());
    assert_eq!(
        s.storage().stats().quarantined_files,
        0,
        "opening does not read blocks"
    );
    let got = lines(&s).expect("the scan serves the other blocks");
    let lost: Vec<&String> = before.keys().filter(|k| !got.contains_key(*k)).collect();
    assert_eq!(lost.len(), 1, "exactly one stream's block lost: {got:?}");
    for (k, v) in &got {
        assert_eq!(v, &before[k], "stream {k} served whole");
    }
    let st = s.storage().stats();
    assert_eq!(st.damaged_blocks, 1);
    assert_eq!(st.quarantined_files, 1);
    let q = d
        .path()
        .join("quarantine")
        .join(path.strip_prefix(d.path()).unwrap());
    assert_eq!(
        std::fs::read(&q).unwrap(),
        bytes,
        "a copy of the part as found"
    );
    let reason = std::fs::read_to_string(format!("{}.reason", q.display())).unwrap();
    assert!(reason.contains(&format!("block at {off}")), "{reason}");
    // Reading again: same answer, reported once.
    assert_eq!(lines(&s).unwrap(), got);
    assert_eq!(s.storage().stats().damaged_blocks, 1);
    assert_eq!(s.storage().stats().quarantined_files, 1);

    // A merge with a second part keeps everything readable and leaves the
    // damaged block out; the quarantined copy keeps the original bytes.
    push_all(&s, 1);
    s.storage().flush().unwrap();
    assert!(s.storage().merge_now(true).unwrap() >= 1);
    let merged = lines(&s).unwrap();
    assert_eq!(parts(d.path()).len(), 1);
    for (k, v) in &got {
        assert!(
            merged[k].starts_with(v),
            "stream {k} kept through the merge"
        );
    }
    assert_eq!(
        merged.values().map(Vec::len).sum::<usize>(),
        got.values().map(Vec::len).sum::<usize>() + STREAMS * ROWS
    );
    assert_eq!(std::fs::read(&q).unwrap(), bytes);
    drop(s);
    let s = open(d.path());
    assert_eq!(lines(&s).unwrap(), merged);
    assert_eq!(s.storage().stats().damaged_blocks, 0);
}

/// The same for a merged part, whose columnar blocks carry their own frame
/// checksums: a flipped byte in a block body is reported and skipped.
#[test]
fn a_damaged_columnar_block_is_reported_and_skipped() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    for round in 0..2 {
        push_all(&s, round);
        s.storage().flush().unwrap();
    }
    assert!(s.storage().merge_now(true).unwrap() >= 1);
    let before = lines(&s).unwrap();
    drop(s);
    let ps = parts(d.path());
    assert_eq!(ps.len(), 1, "one merged part");
    let (path, blocks) = &ps[0];
    let (off, len) = blocks[blocks.len() / 2];
    let mut bytes = std::fs::read(path).unwrap();
    for k in 0..8 {
        bytes[off as usize + len as usize * 3 / 4 + k] ^= 0xff;
    }
    std::fs::write(path, &bytes).unwrap();

    let s = open(d.path());
    let got = lines(&s).expect("the scan serves the other blocks");
    let total = |m: &BTreeMap<String, Vec<String>>| m.values().map(Vec::len).sum::<usize>();
    assert!(
        total(&got) < total(&before),
        "the damaged block's rows are left out"
    );
    assert!(
        total(&got) >= total(&before) - ROWS * 2,
        "only that block's rows"
    );
    assert_eq!(s.storage().stats().damaged_blocks, 1);
    assert_eq!(s.storage().stats().quarantined_files, 1);
    assert_eq!(lines(&s).unwrap(), got);
}

/// The column scan (the columnar metric path) skips and reports a damaged
/// block the same way instead of failing.
#[test]
fn the_column_scan_skips_and_reports_a_damaged_block() {
    let d = tempfile::tempdir().unwrap();
    merged_part_with_a_damaged_block(d.path(), |_| 0);
    let s = open(d.path());
    let req = ScanRequest {
        tenant: TenantId::new("t"),
        matchers: vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()],
        start: i64::MIN,
        end: i64::MAX,
        direction: Direction::Forward,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let cols = runakefli_model::ColumnRequest {
        json_labels: vec!["ms".into()],
        json_keys: vec![],
    };
    let mut rows = 0;
    s.scan_columns(&req, &cols, &mut |_, b| {
        rows += b.rows.len();
        ScanControl::Continue
    })
    .expect("the column scan serves the other blocks");
    assert!(rows > 0 && rows < 2 * STREAMS * ROWS, "{rows} rows");
    assert_eq!(s.storage().stats().damaged_blocks, 1);
    assert_eq!(s.storage().stats().quarantined_files, 1);
}

/// A query plan that meets a damaged columnar block reports it and is
/// declined, so the engine's scan answers without the block; later plans
/// leave the block out themselves and give the scan's answer.
#[test]
fn a_query_plan_reports_a_damaged_block_and_later_plans_skip_it() {
    use runakefli_model::plan::{AnswerData, PlanOutput, QueryPlan};
    let d = tempfile::tempdir().unwrap();
    merged_part_with_a_damaged_block(d.path(), |n| n / 2);
    let s = open(d.path());
    let plan = QueryPlan {
        tenant: TenantId::new("t"),
        selector: vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()],
        start: i64::MIN,
        end: i64::MAX,
        line_filters: vec![],
        fields: None,
        output: PlanOutput::Lines {
            limit: 100_000,
            direction: Direction::Forward,
        },
        deadline: None,
        cancel: None,
    };
    let first = s.execute(&plan).expect("no failure");
    assert!(first.is_none(), "declined once the damage is reported");
    assert_eq!(s.storage().stats().damaged_blocks, 1);
    let scanned: usize = lines(&s).unwrap().values().map(Vec::len).sum();
    let again = s.execute(&plan).expect("no failure").expect("answered");
    let AnswerData::Lines(rows) = again.data else {
        panic!("lines expected")
    };
    let answered = rows.len();
    assert_eq!(answered, scanned, "the plan leaves out the same block");
    assert!(scanned < 2 * STREAMS * ROWS);
    assert_eq!(s.storage().stats().damaged_blocks, 1);
}
