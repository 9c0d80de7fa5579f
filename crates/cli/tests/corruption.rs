//! Random damage through the real server: each round fills a fresh data
//! directory (six day partitions of one flushed part each, then WAL-only
//! pushes), SIGKILLs the server, then flips or truncates bytes at random in
//! a random choice of part files, the WAL segment, a partition MANIFEST and
//! the stream index, and starts the server again. It must start; report
//! what it found (`quarantined_files`, `damaged_blocks`) whenever a damaged
//! file lost lines; serve every line of every file left intact (all parts
//! not touched, every WAL record the damage did not touch); and return no
//! line twice and none that was never acknowledged.
//!
//! `RUNAKEFLI_CORRUPTION_ROUNDS` (default 6) and `RUNAKEFLI_CORRUPTION_SEED`.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

const T0: i64 = 1_795_910_400_000_000_000;
const DAY: i64 = 86_400_000_000_000;
const DAYS: i64 = 6;
const PART_LINES: i64 = 150;
const WAL_PUSHES: i64 = 40;
const WAL_LINES: i64 = 8;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn push(server: &TestServer, lines: &[(i64, String)]) {
    let values: Vec<_> = lines
        .iter()
        .map(|(ts, l)| json!([ts.to_string(), l]))
        .collect();
    server.push_json(&json!({"streams": [{"stream": {"app": "dmg"}, "values": values}]}));
}

/// The only WAL segment with records.
fn wal_segment(data: &Path) -> PathBuf {
    std::fs::read_dir(data.join("wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wal"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("a WAL segment")
}

fn part_of_day(data: &Path, day: i64) -> PathBuf {
    let dir = data
        .join("tenants/fake")
        .join(runakefli_storage::names::day_name(day));
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "part"))
        .unwrap_or_else(|| panic!("a part in {}", dir.display()))
}

/// What was done to a file: bytes `[at, at+len)` flipped, or cut at `at`.
#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { at: u64, len: u64 },
    Truncate { at: u64 },
}

fn damage(rng: &mut Rng, path: &Path) -> Damage {
    let mut bytes = std::fs::read(path).unwrap();
    let n = bytes.len() as u64;
    let d = if rng.below(4) == 0 {
        Damage::Truncate { at: rng.below(n) }
    } else {
        Damage::Flip {
            at: rng.below(n),
            len: 1 + rng.below(4),
        }
    };
    match d {
        Damage::Flip { at, len } => {
            for i in at..(at + len).min(n) {
                bytes[i as usize] ^= 1 + rng.below(255) as u8;
            }
        }
        Damage::Truncate { at } => bytes.truncate(at as usize),
    }
    std::fs::write(path, &bytes).unwrap();
    d
}

fn stored(server: &TestServer) -> Vec<String> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="dmg"}"#),
            ("start", &(T0 - 1).to_string()),
            ("end", &(T0 + (DAYS + 1) * DAY).to_string()),
            ("limit", "100000"),
        ],
    );
    streams_of(&v)
        .into_iter()
        .flat_map(|(_, e)| e.into_iter().map(|(_, l)| l))
        .collect()
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn random_damage_is_reported_and_everything_intact_is_served() {
    let rounds = env_u64("RUNAKEFLI_CORRUPTION_ROUNDS").unwrap_or(6);
    let seed = env_u64("RUNAKEFLI_CORRUPTION_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1
    });
    eprintln!(
        "corruption test: {rounds} rounds, seed {seed} (RUNAKEFLI_CORRUPTION_SEED to repeat)"
    );
    let mut rng = Rng(seed);
    let (mut damaged_files, mut lost_total, mut served_total) = (0, 0, 0);
    for round in 0..rounds {
        let mut server = TestServer::start_with(&[
            "--max-entries-per-query",
            "100000",
            "--flush-interval",
            "1h",
        ]);
        let data = server.data_dir().to_path_buf();
        // Where each acknowledged line lives.
        let mut home: HashMap<String, String> = HashMap::new();
        for d in 0..DAYS {
            let lines: Vec<(i64, String)> = (0..PART_LINES)
                .map(|i| {
                    (
                        T0 + d * DAY + i * 1_000,
                        format!(r#"{{"round":{round},"day":{d},"i":{i},"msg":"part line"}}"#),
                    )
                })
                .collect();
            push(&server, &lines);
            assert_eq!(server.post("/flush", "text/plain", None, b"").0, 204);
            for (_, l) in lines {
                home.insert(l, format!("part{d}"));
            }
        }
        // WAL-only pushes, one record each; the segment's size after each
        // acknowledgement gives the records' byte ranges.
        let mut records: Vec<(u64, u64, Vec<String>)> = Vec::new();
        let mut end = std::fs::metadata(wal_segment(&data)).unwrap().len();
        for p in 0..WAL_PUSHES {
            let lines: Vec<(i64, String)> = (0..WAL_LINES)
                .map(|i| {
                    (
                        T0 + DAYS * DAY + p * 1_000 + i,
                        format!("round {round} wal push {p} line {i}"),
                    )
                })
                .collect();
            push(&server, &lines);
            let now = std::fs::metadata(wal_segment(&data)).unwrap().len();
            records.push((end, now, lines.iter().map(|(_, l)| l.clone()).collect()));
            for (_, l) in &lines {
                home.insert(l.clone(), format!("wal{p}"));
            }
            end = now;
        }
        server.kill9();

        // Damage 1–3 files among: six parts, the WAL segment, day 0's
        // MANIFEST, the stream index.
        let seg = wal_segment(&data);
        let manifest = part_of_day(&data, T0 / DAY)
            .parent()
            .unwrap()
            .join("MANIFEST");
        let index = data.join("tenants/fake/streams.idx");
        let mut candidates: Vec<(String, PathBuf)> = (0..DAYS)
            .map(|d| (format!("part{d}"), part_of_day(&data, T0 / DAY + d)))
            .collect();
        candidates.push(("wal".into(), seg.clone()));
        candidates.push(("manifest0".into(), manifest));
        candidates.push(("index".into(), index));
        let mut hit: HashMap<String, Damage> = HashMap::new();
        for _ in 0..1 + rng.below(3) {
            let (name, path) = &candidates[rng.below(candidates.len() as u64) as usize];
            if !hit.contains_key(name) {
                hit.insert(name.clone(), damage(&mut rng, path));
            }
        }
        damaged_files += hit.len();

        server.start_again();
        let found = stored(&server);
        let stats = server.get_json("/admin/storage/stats", &[]);
        // A truncated WAL segment ends in a record cut short: the replay
        // cuts it as a crash's torn tail and reports the cut.
        let reported = stats["quarantined_files"].as_u64().unwrap()
            + stats["damaged_blocks"].as_u64().unwrap()
            + stats["wal_torn_tails"].as_u64().unwrap();
        let set: HashSet<&String> = found.iter().collect();
        assert_eq!(
            set.len(),
            found.len(),
            "round {round} {hit:?}: a line returned twice"
        );
        for l in &found {
            assert!(
                home.contains_key(l),
                "round {round} {hit:?}: never acknowledged: {l}"
            );
        }
        // What must still be served: the WAL records the damage did not
        // touch, unless the header or the index was hit.
        let wal_intact = |start: u64, stop: u64| match hit.get("wal") {
            None => true,
            Some(Damage::Flip { at, len }) => *at >= 16 && (stop <= *at || start >= at + len),
            Some(Damage::Truncate { at }) => stop <= *at && *at >= 16,
        };
        let index_hit = hit.contains_key("index");
        let mut lost = 0;
        for (l, h) in &home {
            if set.contains(l) {
                continue;
            }
            lost += 1;
            let excused = index_hit
                || match h.strip_prefix("wal") {
                    Some(p) => {
                        let (s, e, _) = &records[p.parse::<usize>().unwrap()];
                        !wal_intact(*s, *e)
                    }
                    None => hit.contains_key(h) || (h == "part0" && hit.contains_key("manifest0")),
                };
            assert!(
                excused,
                "round {round} {hit:?}: line {l} ({h}) lost though its file is intact"
            );
        }
        // A WAL cut exactly between two records leaves a well-formed,
        // shorter log: nothing on disk tells it from one never written.
        let cut_between_records = matches!(
            hit.get("wal"),
            Some(Damage::Truncate { at }) if records.iter().any(|(s, _, _)| s == at)
        );
        let lost_only_wal = home
            .iter()
            .all(|(l, h)| set.contains(l) || h.starts_with("wal"));
        if lost > 0 && !(cut_between_records && lost_only_wal) {
            assert!(
                reported > 0,
                "round {round} {hit:?}: {lost} lines lost without a quarantined file or damaged block"
            );
        }
        eprintln!(
            "round {round}: {hit:?}: {} served, {lost} lost, {reported} reported",
            found.len()
        );
        lost_total += lost;
        served_total += found.len();
        // The damage is dealt with once: the next start is clean and serves the same.
        server.kill9();
        server.start_again();
        let again = stored(&server);
        assert_eq!(
            again.len(),
            found.len(),
            "round {round} {hit:?}: same answer after a restart"
        );
    }
    eprintln!(
        "corruption test: {rounds} rounds, {damaged_files} files damaged, {served_total} lines served, \
         {lost_total} lost (all in damaged files)"
    );
}
