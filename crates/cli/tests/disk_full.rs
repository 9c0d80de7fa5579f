//! A full disk, for real: the data directory lives on a tmpfs of a few MiB
//! that the test mounts itself. While the file system is full, pushes answer
//! 507 with a message naming the failure, `/ready` answers 503 and queries keep
//! working; once space frees (a ballast file removed, then the file system
//! grown with a remount) the write-ahead log heals by itself, without a
//! restart, and pushes are acknowledged again. Every acknowledged line is read
//! back exactly once, before and after a SIGKILL and restart, and nothing
//! refused shows up.
//!
//! Mounting needs root (or `CAP_SYS_ADMIN`), which CI has; without it the
//! test fails saying so rather than passing without testing anything.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use common::{streams_of, TestServer};
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const T0: i64 = 1_795_910_400_000_000_000;
/// Size of the file system: small enough to fill in a second.
const FS_SIZE: &str = "12m";
/// Lines per push and bytes per line (random, so zstd cannot shrink them).
const LINES: usize = 16;
const LINE_BYTES: usize = 2048;

/// A tmpfs mounted for the test, unmounted (lazily) on drop.
struct Tmpfs {
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fs");
        std::fs::create_dir(&dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "the disk-full test needs to mount a size-capped tmpfs (`mount -t tmpfs -o size={size}`), \
             which requires root or CAP_SYS_ADMIN; mount said: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Tmpfs { dir, _tmp: tmp }
    }

    fn grow(&self, size: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "remount: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Fills the file system with `path` until `ENOSPC`, then gives `leave` bytes back.
fn fill(path: &Path, leave: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0xa5u8; 64 << 10];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(leave)).unwrap();
}

/// Pushes and keeps the ledger: acknowledged lines by push number, and the
/// lines of refused pushes.
struct Writer {
    next: i64,
    rng: u64,
    acked: Vec<String>,
    refused: Vec<String>,
}

impl Writer {
    fn line(&mut self, n: i64) -> String {
        let mut s = format!("push {n} ");
        while s.len() < LINE_BYTES {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            s.push_str(&format!("{:016x}", self.rng));
        }
        s
    }

    /// One push of `LINES` lines; returns the status and body.
    fn push(&mut self, server: &TestServer) -> (u16, String) {
        let n = self.next;
        self.next += 1;
        let lines: Vec<String> = (0..LINES).map(|_| self.line(n)).collect();
        let values: Vec<_> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| json!([(T0 + n * 1_000 + i as i64).to_string(), l]))
            .collect();
        let body = json!({"streams": [{"stream": {"app": "full"}, "values": values}]});
        let (status, text) = server.post(
            "/loki/api/v1/push",
            "application/json",
            None,
            body.to_string().as_bytes(),
        );
        if status == 204 {
            self.acked.extend(lines);
        } else {
            self.refused.extend(lines);
        }
        (status, text)
    }

    /// Pushes until the server refuses with 507; panics on anything else.
    fn push_until_full(&mut self, server: &TestServer) -> String {
        for _ in 0..10_000 {
            match self.push(server) {
                (204, _) => {}
                (507, body) => return body,
                (s, body) => panic!("push answered {s} before 507: {body}"),
            }
        }
        panic!("the file system never filled up");
    }
}

fn wait_ready(server: &TestServer) -> Duration {
    let t0 = Instant::now();
    loop {
        let (status, body) = server.get("/ready", &[]);
        if status == 200 {
            return t0.elapsed();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the store did not heal after space freed: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every line stored, with how often it occurs.
fn stored(server: &TestServer) -> HashMap<String, usize> {
    let v = server.get_json(
        "/loki/api/v1/query_range",
        &[
            ("query", r#"{app="full"}"#),
            ("start", &T0.to_string()),
            ("end", &(T0 + 3_600_000_000_000).to_string()),
            ("limit", "100000"),
        ],
    );
    let mut out = HashMap::new();
    for (_, entries) in streams_of(&v) {
        for (_, l) in entries {
            *out.entry(l).or_insert(0) += 1;
        }
    }
    out
}

fn check_everything_acknowledged(server: &TestServer, w: &Writer, when: &str) {
    let found = stored(server);
    let dups = found.values().filter(|&&n| n > 1).count();
    assert_eq!(dups, 0, "{when}: {dups} lines stored twice");
    let lost = w.acked.iter().filter(|l| !found.contains_key(*l)).count();
    assert_eq!(
        lost,
        0,
        "{when}: {lost} of {} acknowledged lines lost",
        w.acked.len()
    );
    let ghosts = w.refused.iter().filter(|l| found.contains_key(*l)).count();
    assert_eq!(ghosts, 0, "{when}: {ghosts} refused lines stored");
    assert_eq!(found.len(), w.acked.len(), "{when}");
}

fn quarantined(server: &TestServer) -> u64 {
    let v = server.get_json("/admin/storage/stats", &[]);
    v["quarantined_files"].as_u64().unwrap_or(0)
}

#[test]
fn a_full_disk_refuses_with_507_and_ingest_resumes_by_itself_when_space_frees() {
    let t0 = Instant::now();
    let fs = Tmpfs::mount(FS_SIZE);
    let data = fs.dir.join("data");
    let mut server = TestServer::start_on(
        &data,
        &[
            "--memtable-bytes",
            "1MiB",
            "--wal-segment-bytes",
            "256KiB",
            "--max-entries-per-query",
            "100000",
            // This test is about the disk filling up; the readiness
            // threshold below it has its own test.
            "--ready-min-free-disk",
            "0",
        ],
    );
    let mut w = Writer {
        next: 0,
        rng: 0x9e37_79b9_7f4a_7c15,
        acked: Vec::new(),
        refused: Vec::new(),
    };
    for _ in 0..4 {
        assert_eq!(w.push(&server).0, 204);
    }

    // 1. Fill with a ballast file, leaving about 1 MiB.
    let ballast = fs.dir.join("ballast");
    fill(&ballast, 1 << 20);
    let body = w.push_until_full(&server);
    assert!(body.contains("write-ahead log"), "{body}");
    assert!(body.contains("No space left on device"), "{body}");
    assert!(body.contains("resume by themselves"), "{body}");
    let (status, body) = server.get("/ready", &[]);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("No space left on device"), "{body}");
    // Still full: refused again, and reads keep working meanwhile.
    assert_eq!(w.push(&server).0, 507);
    check_everything_acknowledged(&server, &w, "while the disk is full");
    let acked_before = w.acked.len();

    // 2. Space frees: the log heals without a restart or a push.
    std::fs::remove_file(&ballast).unwrap();
    let healed = wait_ready(&server);
    eprintln!("healed {healed:?} after the ballast was removed");
    for _ in 0..8 {
        let (status, body) = w.push(&server);
        assert_eq!(status, 204, "after space freed: {body}");
    }

    // 3. Full again (pushes alone fill it, flushes failing too), then the
    //    file system grows.
    let body = w.push_until_full(&server);
    assert!(body.contains("No space left on device"), "{body}");
    check_everything_acknowledged(&server, &w, "full a second time");
    fs.grow("64m");
    let healed = wait_ready(&server);
    eprintln!("healed {healed:?} after the remount");
    for _ in 0..8 {
        let (status, body) = w.push(&server);
        assert_eq!(status, 204, "after the file system grew: {body}");
    }
    assert!(w.acked.len() > acked_before);
    check_everything_acknowledged(&server, &w, "after healing");
    let v = server.get_json("/admin/storage/stats", &[]);
    assert!(v["wal_recoveries"].as_u64().unwrap() >= 2, "{v}");

    // 4. Nothing acknowledged is only in memory: a SIGKILL and a restart
    //    replay it, and no WAL segment was left damaged by the failed writes.
    server.kill9();
    server.start_again();
    check_everything_acknowledged(&server, &w, "after SIGKILL and restart");
    assert_eq!(quarantined(&server), 0, "no file was left damaged");
    // And from parts alone, after a flush of everything.
    let (status, body) = server.post("/flush", "text/plain", None, b"");
    assert!(status == 200 || status == 204, "{status} {body}");
    server.kill9();
    server.start_again();
    check_everything_acknowledged(&server, &w, "after flush and restart");
    eprintln!(
        "acknowledged {} lines, refused {} (in {} pushes)",
        w.acked.len(),
        w.refused.len(),
        w.next
    );
    eprintln!("disk-full test took {:?}", t0.elapsed());
    drop(server);
}

#[test]
fn ready_turns_503_below_the_free_space_threshold_and_back_when_space_frees() {
    let fs = Tmpfs::mount(FS_SIZE);
    let data = fs.dir.join("data");
    let server = TestServer::start_on(&data, &["--ready-min-free-disk", "4MiB"]);
    assert_eq!(server.get("/ready", &[]).0, 200);
    // Leave 1 MiB free: below the threshold, not yet full.
    let ballast = fs.dir.join("ballast");
    fill(&ballast, 1 << 20);
    let (status, body) = server.get("/ready", &[]);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("below --ready-min-free-disk (4194304 bytes)") && body.contains("bytes free"),
        "{body}"
    );
    // Unready is advice to load balancers: pushes are still taken while
    // there is room.
    let now = T0.to_string();
    server.push_json(
        &json!({"streams": [{"stream": {"app": "low"}, "values": [[now, "still taken"]]}]}),
    );
    std::fs::remove_file(&ballast).unwrap();
    let (status, body) = server.get("/ready", &[]);
    assert_eq!((status, body.as_str()), (200, "ready\n"));
}
