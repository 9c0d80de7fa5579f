//! Crash safety: a child process appends in a loop and reports every
//! acknowledged batch; the parent SIGKILLs it at an arbitrary moment (while
//! flushes and merges run), reopens the store and checks that every
//! acknowledged entry is there. Repeated over several crash rounds.
//!
//! The child is this test binary re-invoked with `CRASH_CHILD_DIR` set, running
//! only `crash_child_process`.

use runakefli_model::{
    Backend, Direction, Entry, Labels, MatchOp, Matcher, PushRequest, PushStream, ScanControl,
    ScanRequest, TenantId,
};
use runakefli_storage::{Storage, StorageConfig};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ENV_DIR: &str = "CRASH_CHILD_DIR";
const ENV_ROUND: &str = "CRASH_CHILD_ROUND";
const BATCH: usize = 50;

fn batch_lines(round: u64, thread: u64, i: u64) -> Vec<String> {
    (0..BATCH)
        .map(|j| format!("r{round} t{thread} b{i} j{j} {}", "payload ".repeat(10)))
        .collect()
}

/// Child half of the crash test: does nothing unless started by the parent.
#[test]
fn crash_child_process() {
    let Ok(dir) = std::env::var(ENV_DIR) else {
        return;
    };
    let round: u64 = std::env::var(ENV_ROUND).unwrap().parse().unwrap();
    let mut c = StorageConfig::new(dir);
    c.memtable_flush_bytes = 128 << 10;
    c.flush_interval = Duration::from_millis(100);
    c.merge_min_parts = 3;
    c.merge_idle_after = Duration::from_millis(50);
    let s = Storage::open(c).unwrap();
    let workers: Vec<_> = (0..2u64)
        .map(|th| {
            let s: Arc<Storage> = s.clone();
            std::thread::spawn(move || {
                for i in 0.. {
                    let entries = batch_lines(round, th, i)
                        .into_iter()
                        .enumerate()
                        .map(|(j, line)| Entry {
                            ts: (round as i64) * 1_000_000_000 + (i as i64) * 64 + j as i64,
                            line,
                            metadata: vec![],
                        })
                        .collect();
                    let labels = Labels::new(vec![("app".into(), format!("s{}", i % 13))]);
                    let req = PushRequest {
                        streams: vec![PushStream { labels, entries }],
                    };
                    s.append(&TenantId::new("crash"), &req).unwrap();
                    println!("ack {round} {th} {i}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

#[test]
fn kill_9_loses_nothing_acknowledged() {
    let d = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<(u64, u64, u64)> = Vec::new();
    for round in 0..3u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_child_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV_DIR, d.path())
            .env(ENV_ROUND, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let start = Instant::now();
        // Kill at a different point each round.
        let target = 150 + 120 * round as usize;
        let mut n = 0;
        for line in out.lines() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("ack ") {
                let v: Vec<u64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
                acked.push((v[0], v[1], v[2]));
                n += 1;
                if n >= target || start.elapsed() > Duration::from_secs(20) {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(n > 0, "child acknowledged nothing");
    }
    let mut c = StorageConfig::new(d.path());
    c.background = false;
    let s = Storage::open(c).unwrap();
    let req = ScanRequest {
        tenant: TenantId::new("crash"),
        matchers: vec![Matcher::new("app", MatchOp::Re, ".+").unwrap()],
        start: i64::MIN,
        end: i64::MAX,
        direction: Direction::Forward,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let mut found = HashSet::new();
    let mut total = 0usize;
    s.scan(&req, &mut |_, b| {
        total += b.entries.len();
        found.extend(b.entries.into_iter().map(|e| e.line));
        ScanControl::Continue
    })
    .unwrap();
    eprintln!(
        "acked batches {} found {} stats {:?}",
        acked.len(),
        found.len(),
        s.stats()
    );
    assert_eq!(total, found.len(), "no entry is returned twice");
    for (r, th, i) in &acked {
        for line in batch_lines(*r, *th, *i) {
            assert!(found.contains(&line), "acknowledged entry lost: {line}");
        }
    }
    assert!(found.len() >= acked.len() * BATCH);
    // The store stays usable: flush and reopen once more.
    s.flush().unwrap();
    drop(s);
    let mut c = StorageConfig::new(d.path());
    c.background = false;
    Storage::open(c).unwrap();
}
