//! A bounded fuzz run on the stable toolchain, as part of `cargo test`: the
//! body of every cargo-fuzz target (`fuzz/src/targets.rs`, included here by
//! path) gets its seeds, then random mutations of them (bit flips, byte
//! overwrites with boundary values, inserts, deletes, duplicated ranges,
//! splices of two seeds) until its run or time budget is spent. Not
//! coverage-guided (libFuzzer runs are, see fuzz/README.md); a cheap guard
//! that no seed-shaped input panics.
//!
//! `RUNAKEFLI_FUZZ_SMOKE_SECS` sets the time budget per target (default 6 s),
//! `RUNAKEFLI_FUZZ_SMOKE_SEED` the seed (default: random, printed). A panic
//! writes the input to `target/fuzz-smoke-<target>-<seed>.bin` and fails
//! naming it; replay it with `cargo fuzz run <target> FILE` or this test's
//! seed.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

#[path = "../../../fuzz/src/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Most executions per target in one run (WAL replay writes a file each time
/// and gets a tenth).
const MAX_RUNS: u64 = 200_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const BOUNDARY: &[u8] = &[
    0, 1, 0x7f, 0x80, 0xff, b'{', b'}', b'"', b'\\', b'\n', b'(', b'|',
];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        let len = d.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                d[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                d[i] = BOUNDARY[rng.below(BOUNDARY.len())];
            }
            2 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                d.splice(i..i, bytes);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                d.drain(i..i + n);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                let copy = d[i..i + n].to_vec();
                let at = rng.below(len + 1);
                d.splice(at..at, copy);
            }
            5 => {
                let other = &seeds[rng.below(seeds.len())];
                let cut = rng.below(d.len() + 1);
                let from = rng.below(other.len() + 1);
                d.truncate(cut);
                d.extend_from_slice(&other[from..]);
            }
            _ if len > 0 => {
                d.truncate(rng.below(len));
            }
            _ => d.push(rng.next() as u8),
        }
    }
    d.truncate(8192);
    d
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn seed_number() -> u64 {
    std::env::var("RUNAKEFLI_FUZZ_SMOKE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

/// Runs `target` over its seeds and mutations; returns the executions.
fn run(name: &str, target: fn(&[u8]), seeds: Vec<Vec<u8>>, max_runs: u64) -> u64 {
    assert!(!seeds.is_empty(), "{name}: no seeds");
    let secs: u64 = std::env::var("RUNAKEFLI_FUZZ_SMOKE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let seed = seed_number();
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut runs = 0u64;
    let check = |input: &[u8]| {
        if std::panic::catch_unwind(|| target(input)).is_err() {
            let path = repo().join(format!("target/fuzz-smoke-{name}-{seed}.bin"));
            std::fs::write(&path, input).unwrap();
            panic!(
                "{name} panicked on an input of {} bytes (seed {seed}), written to {}",
                input.len(),
                path.display()
            );
        }
    };
    for s in &seeds {
        check(s);
        runs += 1;
    }
    while runs < max_runs && Instant::now() < deadline {
        let input = mutate(&mut rng, &seeds);
        check(&input);
        runs += 1;
    }
    eprintln!(
        "{name}: {runs} executions, {} seeds, seed {seed}",
        seeds.len()
    );
    runs
}

fn jsonl_field(path: &Path, field: &str) -> Vec<Vec<u8>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v[field].as_str().map(|s| s.as_bytes().to_vec()))
        .collect()
}

fn prefixed(sel: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![sel];
    v.extend_from_slice(body);
    v
}

#[test]
fn parse_expr() {
    let seeds = jsonl_field(
        &repo().join("crates/logql/tests/data/conformance_queries.jsonl"),
        "query",
    );
    assert!(run("parse_expr", targets::parse_expr, seeds, MAX_RUNS) > 0);
}

#[test]
fn loki_push() {
    let json = br#"{"streams":[{"stream":{"app":"a","env":"prod"},"values":[["1700000000000000000","{\"level\":\"info\",\"msg\":\"ok\"}",{"trace_id":"abc"}],["1700000000000000001","plain line"]]}]}"#;
    let proto = common::proto_push_body(&[(
        r#"{app="a", env="prod"}"#,
        vec![
            (1_700_000_000_000_000_000, "line one".into(), vec![]),
            (
                1_700_000_000_000_000_001,
                r#"{"level":"error"}"#.into(),
                vec![("trace_id".into(), "abc".into())],
            ),
        ],
    )]);
    let raw_proto = snap::raw::Decoder::new()
        .decompress_vec(&proto)
        .unwrap_or_default();
    // Selector bytes: JSON plain (1), protobuf snappy (6), protobuf plain (0).
    let seeds = vec![
        prefixed(1, json),
        prefixed(6, &proto),
        prefixed(0, &raw_proto),
    ];
    assert!(run("loki_push", targets::loki_push, seeds, MAX_RUNS) > 0);
}

#[test]
fn otlp_logs() {
    let dir = repo().join("testdata/conformance-otlp/requests");
    let mut seeds = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let body = std::fs::read(&p).unwrap();
        let sel = if p.extension().is_some_and(|x| x == "json") {
            1
        } else {
            0
        };
        seeds.push(prefixed(sel, &body));
    }
    assert!(run("otlp_logs", targets::otlp_logs, seeds, MAX_RUNS) > 0);
}

#[test]
fn es_bulk() {
    let seeds = vec![
        b"{\"index\":{\"_index\":\"logs\"}}\n{\"message\":\"hello\",\"@timestamp\":\"2024-01-01T00:00:00Z\",\"host\":{\"name\":\"h1\"}}\n{\"create\":{}}\n{\"msg\":\"x\",\"level\":\"warn\"}\n".to_vec(),
        b"{\"delete\":{\"_id\":\"1\"}}\n{\"update\":{\"_id\":\"2\"}}\n{\"doc\":{}}\n".to_vec(),
    ];
    assert!(run("es_bulk", targets::es_bulk, seeds, MAX_RUNS) > 0);
}

#[test]
fn jsonline() {
    let seeds = vec![
        b"{\"_msg\":\"hello\",\"_time\":\"2024-01-01T00:00:00Z\",\"app\":\"a\"}\n{\"_msg\":\"two\",\"n\":2,\"nested\":{\"k\":[1,2]}}\n".to_vec(),
        b"{\"message\":\"no time\"}\r\n\n{}\n".to_vec(),
    ];
    assert!(run("jsonline", targets::jsonline, seeds, MAX_RUNS) > 0);
}

#[test]
fn syslog() {
    let seeds = vec![
        b"<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"Application\"] 'su root' failed\n".to_vec(),
        b"<13>Oct 11 22:14:15 host app[123]: message text\n".to_vec(),
        b"85 <165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.".to_vec(),
    ];
    assert!(run("syslog", targets::syslog, seeds, MAX_RUNS) > 0);
}

#[test]
fn block_decode() {
    let block =
        std::fs::read(repo().join("crates/storage/src/block/testdata/block_v1.bin")).unwrap();
    let seeds = vec![block.clone(), block[..block.len() / 2].to_vec()];
    assert!(run("block_decode", targets::block_decode, seeds, MAX_RUNS) > 0);
}

#[test]
fn wal_replay() {
    let seeds = vec![
        vec![0],
        prefixed(0, &[0x10, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef]),
        prefixed(3, &[0xff; 32]),
    ];
    assert!(run("wal_replay", targets::wal_replay, seeds, MAX_RUNS / 10) > 0);
}
